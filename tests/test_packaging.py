"""A built wheel works outside the checkout; static tools resolve the layout;
the top-level API is complete."""
import os
import shutil
import subprocess
import sys

import pytest

from tests.conftest import REPO

_OUTSIDE = """
import os, sys, tempfile
import numpy as np
import skinflint
from skinflint import ir
from skinflint.runtimes import c_targets
assert not skinflint.__file__.startswith(sys.argv[1]), skinflint.__file__
model = ir.random_model(3)
X = np.random.default_rng(0).normal(size=(20, model.n_features)).astype(np.float32)
for name, target in c_targets.TARGETS.items():
    ok, why = c_targets.target_available(name)
    if not ok:
        print(f"target {name}: skipped ({why})")
        continue
    with tempfile.TemporaryDirectory() as work:
        exe = c_targets.build_program(model, X, np.full(len(X), np.inf), target, work)
        print(f"target {name}: built {os.path.basename(exe)}")
assert not c_targets.embedded_dir().startswith(sys.argv[1]), c_targets.embedded_dir()
for board in ("mps2-an386", "microbit"):
    files = c_targets.bare_metal_files(board)
    assert all(os.path.isfile(p) for p in files.values()), files
    print(f"board {board}: support files installed")
if c_targets.target_available("cortex-m4f")[0]:
    from skinflint.runtimes.c import CRuntime
    from skinflint.verify import verify
    report = verify(model, X, runtimes=[CRuntime(model, target="cortex-m4f"),
                                        CRuntime(model, api="lazy", target="cortex-m4f")])
    assert report.ok, report.table()
    print("cortex-m4f: parity OK")
"""


@pytest.mark.slow
def test_a_wheel_installed_outside_the_checkout_runs_the_demo_and_builds_every_target(tmp_path):
    """The wheel carries everything (templates, bare-metal support files):
    in a fresh venv, run from elsewhere, the demo runs, C builds for every
    installed toolchain and the embedded example builds (issue 13, point 7)."""
    dist = tmp_path / "dist"
    r = subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "-q",
                        "-w", str(dist), REPO], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr[-2000:]
    wheel, = dist.glob("skinflint-*.whl")
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True)
    py = venv / "bin" / "python"
    purelib = subprocess.run([str(py), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                             capture_output=True, text=True, check=True).stdout.strip()
    # the dependencies come from this test's environment (no network); a
    # path line in a .pth does not run that environment's own .pth files, so
    # the checkout's editable install stays invisible
    import sysconfig
    with open(os.path.join(purelib, "deps.pth"), "w") as fh:
        fh.write(sysconfig.get_paths()["purelib"] + "\n")
    r = subprocess.run([sys.executable, "-m", "pip", "--python", str(py), "install", "--no-deps", "-q",
                        str(wheel)], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr[-2000:]
    home = tmp_path / "elsewhere"
    home.mkdir()
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    r = subprocess.run([str(venv / "bin" / "skinflint"), "demo", "--quick", "--out", "demo"],
                       capture_output=True, text=True, cwd=str(home), env=env, timeout=900)
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-3000:]
    assert "parity OK" in r.stdout
    r = subprocess.run([str(py), "-c", _OUTSIDE, REPO], capture_output=True, text=True, cwd=str(home),
                       env=env, timeout=900)
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-3000:]
    assert "target host-gcc-O2: built" in r.stdout   # gcc is always there
    assert r.stdout.count("support files installed") == 2
    if shutil.which("arm-none-eabi-gcc") and shutil.which("make"):
        work = tmp_path / "embedded"
        shutil.copytree(os.path.join(REPO, "examples", "embedded"), work,
                        ignore=shutil.ignore_patterns("build"))
        model = os.path.join(REPO, "examples", "models", "groups.json")
        r = subprocess.run(["make", "-s", "build/mps2-an386/app.elf", f"PYTHON={py}",
                            f"SKINFLINT={venv / 'bin' / 'skinflint'}", f"MODEL={model}"],
                           cwd=work, capture_output=True, text=True, env=env, timeout=300)
        assert r.returncode == 0, r.stdout[-2000:] + r.stderr[-2000:]
        assert (work / "build" / "mps2-an386" / "app.elf").exists()


def test_top_level_exports_the_public_api():
    import skinflint
    from skinflint.compilers.onnx import compile_onnx
    from skinflint.trainers import GreedyMiserClassifier
    assert skinflint.compile_onnx is compile_onnx
    assert skinflint.GreedyMiserClassifier is GreedyMiserClassifier
    for name in skinflint.__all__:
        assert getattr(skinflint, name) is not None
    import pytest
    with pytest.raises(AttributeError):
        _ = skinflint.no_such_thing


def test_a_type_checker_resolves_the_subpackages(tmp_path):
    """skinflint.ir lives in ir/: the link tree `make` writes lets mypy (and
    pyright, via pyproject.toml) see the installed layout."""
    from skinflint._static_tree import write_tree
    write_tree(tmp_path / "static", REPO)
    probe = tmp_path / "probe.py"
    probe.write_text("from skinflint.ir import FeatureCosts\n"
                     "from skinflint.trainers.boosting.booster import boost\n"
                     "reveal_type(FeatureCosts.from_csv)\nreveal_type(boost)\n")
    env = {**os.environ, "MYPYPATH": str(tmp_path / "static")}
    r = subprocess.run([sys.executable, "-m", "mypy", "--config-file=", "--follow-imports=silent",
                        "--no-incremental", str(probe)], capture_output=True, text=True, env=env,
                       cwd=str(tmp_path))
    assert r.returncode == 0, r.stdout + r.stderr
    assert "-> skinflint.ir.feature_costs.FeatureCosts" in r.stdout, r.stdout
    assert "skinflint.trainers.boosting.booster.BoostResult" in r.stdout, r.stdout
    # and the example the Makefile's typecheck target runs
    r = subprocess.run([sys.executable, "-m", "mypy", "--config-file=", "--follow-imports=silent",
                        "--no-incremental", os.path.join(REPO, "examples", "typecheck_imports.py")],
                       capture_output=True, text=True, env=env, cwd=str(tmp_path))
    assert r.returncode == 0, r.stdout + r.stderr
