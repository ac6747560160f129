"""Issue 19: float64 tree banks ("precision": "float64", format version 2)
through every backend.  Random models of every node kind, their banks made
float64 (leaves that are no float32, a divisor), must match the reference
bit for bit on ONNX and host C (dense and on-demand), on adversarial rows
with and without budgets; and the reference must be the float64 sum."""
import numpy as np
import pytest

from skinflint import ir
from skinflint.ir import builders
from skinflint.ir.codes import FORMAT_VERSIONS
from skinflint.ir.random_model import random_model, with_float64_banks
from skinflint.runtimes.reference import ReferenceRuntime
from skinflint.verify import adversarial_rows, verify

# the first 30 seeds whose random model has a tree bank (of every output kind)
SEEDS = [s for s in range(300) if any(n.kind == "trees" for n in random_model(s).nodes)][:30]


@pytest.mark.parametrize("seed", SEEDS)
def test_random_float64_models_match_reference_on_every_backend(seed):
    m = with_float64_banks(random_model(seed))
    report = verify(m, runtimes=("onnx", "c", "c-lazy"))
    assert report.ok, f"seed {seed}\n{report.table()}"


def _bank(precision, divisor=1.0):
    rng = np.random.default_rng(1)
    trees = [{"feature": [t % 3, -1, -1], "threshold": [rng.normal(), 0, 0], "left": [1, -1, -1],
              "right": [2, -1, -1], "value": np.r_[0.0, 1 / 3 + rng.normal(size=2) * 1e-3]}
             for t in range(40)]
    bank = builders.concat_trees(trees, base_score=0.1, precision=precision, divisor=divisor)
    return trees, builders.model(builders.features_from_costs([1.0, 2.0, 3.0]), [bank], 0,
                                 task=builders.binary_task())


def test_reference_is_the_sequential_float64_sum_over_the_divisor():
    trees, m = _bank("float64", divisor=7.0)
    X = np.random.default_rng(2).normal(size=(300, 3)).astype(np.float32)
    X = np.concatenate([X, adversarial_rows(m, X)])
    want = np.full(len(X), 0.1)
    for t in trees:                                 # base first, then trees in bank order, in double
        x = X[:, t["feature"][0]]
        want = want + np.where(np.isnan(x) | (x <= np.float32(t["threshold"][0])), t["value"][1], t["value"][2])
    want = want / 7.0
    pred = ReferenceRuntime(m).predict(X)
    assert pred.scores.dtype == np.float64 and np.array_equal(pred.scores[:, 0], want)
    # labels read the float64 margin; probabilities are the float32 logistic
    # of the margin rounded once to float32
    assert np.array_equal(pred.output, (want > 0).astype(int))
    from skinflint.runtimes._expf import expf_array
    p = np.float32(1) / (np.float32(1) + expf_array(-want.astype(np.float32)))
    assert pred.proba.dtype == np.float32
    assert np.array_equal(pred.proba[:, 1], p) and np.array_equal(pred.proba[:, 0], np.float32(1) - p)


def test_float32_models_keep_version_1_and_their_bytes():
    _, m = _bank("float32")
    d = ir.to_dict(m)
    assert d["version"] == 1 and "precision" not in d["nodes"][0]
    _, m64 = _bank("float64", divisor=4.0)
    d64 = ir.to_dict(m64)
    assert d64["version"] == 2 and d64["nodes"][0]["precision"] == "float64"
    back = ir.from_json(ir.to_json(m64))
    assert back.nodes[0].value.dtype == np.float64 and back.nodes[0].divisor == 4.0
    assert np.array_equal(back.nodes[0].value, m64.nodes[0].value) and ir.to_json(back) == ir.to_json(m64)


@pytest.mark.parametrize("seed", SEEDS[:10])
def test_float64_models_round_trip_bit_for_bit(seed):
    m = with_float64_banks(random_model(seed))
    back = ir.from_json(ir.to_json(m))
    assert ir.to_json(back) == ir.to_json(m) and back.hash() == m.hash()
    for a, b in zip(m.nodes, back.nodes):
        if a.kind == "trees":
            assert b.value.dtype == np.float64 and np.array_equal(a.value.view(np.uint64), b.value.view(np.uint64))


@pytest.mark.parametrize("edit,field,match", [
    (lambda d: d["nodes"][0].update(precision="float16"), "nodes[0].precision", "unknown precision"),
    (lambda d: d["nodes"][0].update(precision=64), "nodes[0].precision", "unknown precision"),
    (lambda d: d["nodes"][0].update(divisor=0.0), "nodes[0].divisor", "finite number > 0"),
    (lambda d: d["nodes"][0].update(divisor=-2.0), "nodes[0].divisor", "finite number > 0"),
    (lambda d: d["nodes"][0].update(divisor="2"), "nodes[0].divisor", "expected a number"),
    (lambda d: d.update(version=1), "nodes[0].precision", "need format version 2"),
    # one past the newest format the reader knows (format 3 exists since query-level exits)
    (lambda d: d.update(version=max(FORMAT_VERSIONS) + 1), "version", "unknown version"),
    (lambda d: d["nodes"][0]["value"].__setitem__(1, float("inf")), "nodes[0].value", "finite"),
])
def test_bad_float64_banks_refused_naming_the_field(edit, field, match):
    _, m = _bank("float64", divisor=2.0)
    d = ir.to_dict(m)
    edit(d)
    with pytest.raises(ir.IRError, match=match) as e:
        ir.from_dict(d)
    assert str(e.value).startswith(field)


def test_divisor_needs_float64():
    _, m = _bank("float32")
    d = ir.to_dict(m)
    d["nodes"][0]["divisor"] = 2.0
    with pytest.raises(ir.IRError, match="needs \"precision\": \"float64\""):
        ir.from_dict(d)
    with pytest.raises(ir.IRError, match="unknown precision"):
        builders.trees_from_arrays([-1], [0.0], [-1], [-1], [1.0], precision="double")


def test_onnx_fast_mode_on_a_float64_bank_is_near_the_exact_scores():
    """Fast mode votes float32-rounded leaves summed in onnxruntime's order:
    each leaf rounds once (u |v|) and each of the T additions once (u times
    a partial sum <= sum |v|), so |fast - exact| <= (2T + 1) u sum|v| / d
    with u = 2^-24 (the float64 base and division add far less)."""
    import onnxruntime as ort

    from skinflint.compilers.onnx import compile_onnx
    trees, m = _bank("float64", divisor=7.0)
    X = np.random.default_rng(3).normal(size=(200, 3)).astype(np.float32)
    sess = ort.InferenceSession(compile_onnx(m, mode="fast").SerializeToString(),
                                providers=["CPUExecutionProvider"])
    fast = sess.run(["scores"], {"X": X})[0]
    exact = ReferenceRuntime(m).predict(X).scores
    assert fast.dtype == np.float64
    T, total = len(trees), sum(np.abs(t["value"]).max() for t in trees)
    assert np.all(np.abs(fast - exact) <= (2 * T + 1) * 2.0 ** -24 * total / 7.0)


@pytest.mark.parametrize("target", ["host-asan-ubsan", "aarch64", "armhf", "cortex-m4f", "cortex-m0"])
def test_float64_banks_on_every_c_target(target):
    """Double sums on hard-float, single-precision-FPU (Cortex-M4F: doubles in
    software) and soft-float (Cortex-M0) targets equal the reference's."""
    from skinflint.runtimes.c import CRuntime
    from skinflint.runtimes.c_targets import target_available
    ok, why = target_available(target)
    if not ok:
        pytest.skip(why)
    for m in [_bank("float64", divisor=7.0)[1]] + [with_float64_banks(random_model(s)) for s in SEEDS[:4]]:
        report = verify(m, runtimes=[CRuntime(m, target=target), CRuntime(m, api="lazy", target=target)],
                        max_rows=400)
        assert report.ok, report.table()
