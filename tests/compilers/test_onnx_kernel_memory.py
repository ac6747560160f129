"""A full SVM over 784 features with thousands of vectors runs in the exact
ONNX graph within 1 GB (issue 18, point 6): the kernel sum is a Scan over
features carrying [rows, vectors], never a [rows, vectors, features] block
(which would be 1.6 GB for the 256 rows below)."""
import subprocess
import sys
import textwrap

SCRIPT = textwrap.dedent("""
    import resource
    import numpy as np
    from skinflint import ir
    from skinflint.runtimes.onnx import OnnxRuntime
    from skinflint.runtimes.reference import predict
    rng = np.random.default_rng(0)
    S, D = 2000, 784
    node = ir.kernel(rng.normal(size=(S, D)), rng.normal(size=S), list(range(D)), kernel="rbf",
                     gamma=1.0 / D, sv_cost=np.ones(S), shift=np.zeros(D), scale=np.full(D, 0.5))
    model = ir.model([ir.Feature(f"f{i}", 1.0) for i in range(D)], [node], 0,
                     task=ir.binary_task((0, 1), "identity"))
    X = rng.normal(size=(256, D)).astype(np.float32)
    ref = predict(model, X)
    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    got = OnnxRuntime(model).predict(X)
    after = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    assert np.array_equal(got.scores.view(np.uint32), ref.scores.view(np.uint32))
    assert np.array_equal(got.cost, ref.cost)
    print((after - before) / 1024)
""")


def test_784_feature_svm_runs_within_1gb():
    out = subprocess.run([sys.executable, "-c", SCRIPT], capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr[-2000:]
    grown_mb = float(out.stdout.strip().splitlines()[-1])
    # measured: 179 MB (the session's constants and buffers); a [256, 2000,
    # 784] float32 block alone is 1.6 GB
    assert grown_mb < 1024, grown_mb
