"""The batch schedule's voted halt (issue 30 item 3): a tree bank whose
features are its only paid units, all at one cost, takes its first touches
from the tree operator's MIN-aggregated votes, beside each tree's leaf value
(a float32 bank) or leaf number (float64, multiclass), and sorts only the
rows over their budget, only as far as the furthest halt among them.
Exact against the reference: scores, cost, stage, features used and
probabilities, under budgets that halt rows at every place, negative,
zero and +inf ones, on adversarial and random rows, zero rows and one."""
import numpy as np
import pytest

from skinflint import ir
from skinflint.compilers.onnx import compile_onnx
from skinflint.runtimes.onnx import OnnxRuntime
from skinflint.runtimes.reference import predict
from skinflint.verify import adversarial_rows, verify
from tests.conftest import load_example

FIELDS = ("scores", "cost", "stage", "features_used", "proba")


def _chain_bank(n_features, cost, precision="float32", n_trees=12, seed=0):
    """Depth-3 trees over ``n_features`` features (each tree splits on
    three of them, at thresholds near 0), every feature at ``cost``: rows
    touch features in different orders, so budgets halt them at different
    places; float64 banks get leaves no float32 holds and a divisor."""
    rng = np.random.default_rng(seed)
    trees = []
    for _ in range(n_trees):
        f = rng.choice(n_features, size=7, replace=True)
        feature = np.r_[f[:7], np.full(8, -1)]
        left = np.r_[2 * np.arange(7) + 1, np.full(8, -1)]
        right = np.r_[2 * np.arange(7) + 2, np.full(8, -1)]
        threshold = np.r_[rng.normal(scale=0.5, size=7), np.zeros(8)].astype(np.float32)
        value = np.r_[np.zeros(7), rng.normal(size=8) / 3.0]
        value = value.astype(np.float32) if precision == "float32" else value + 1e-12
        trees.append(dict(feature=feature, threshold=threshold, left=left, right=right, value=value,
                          missing_left=rng.random(15) < 0.5))
    kw = dict(precision="float64", divisor=3.0) if precision == "float64" else {}
    bank = ir.concat_trees(trees, base_score=0.25, **kw)
    return ir.model(ir.features_from_costs(np.full(n_features, cost)), [bank], 0, task=ir.binary_task())


def _voted(proto):
    """Whether the graph took the voted halt: a MIN-aggregated operator, no
    first-touch search, a sort of the rows over their budget."""
    names = [n.name for n in proto.graph.node]
    agg = {a.s for n in proto.graph.node for a in n.attribute if a.name == "aggregate_function"}
    return (agg == {b"MIN"} and not any(n.startswith("touch/") for n in names)
            and any(n.startswith("pay/over_budget/TopK") for n in names))


def _budgets(m, X, cost):
    """Budgets at, just under and around each row's own cost, halfway,
    zero, negative, +inf, and a mix row by row."""
    full = predict(m, X).cost
    rng = np.random.default_rng(7)
    mix = np.where(rng.random(len(X)) < 0.3, np.inf, full * rng.random(len(X)))
    return (full, full - cost / 2, full / 2, full + cost / 2, np.zeros(len(X)), np.full(len(X), -1.0),
            np.full(len(X), np.inf), np.full(len(X), 2.5 * cost), mix)


def _assert_exact(rt, m, X, budget):
    got, ref = rt.predict(X, budget=budget), predict(m, X, budget=budget)
    for field in FIELDS:
        a, b = np.asarray(getattr(got, field)), np.asarray(getattr(ref, field))
        if a.dtype.kind == "f":     # bit for bit: -0.0 and NaN payloads included
            a, b = a.view(f"u{a.itemsize}"), b.view(f"u{b.itemsize}")
        np.testing.assert_array_equal(a, b, err_msg=field)


@pytest.mark.parametrize("precision", ["float32", "float64"])
@pytest.mark.parametrize("cost", [1.0, 0.1, 3.0])
def test_voted_halt_is_exact_under_every_budget(precision, cost):
    # 0.1 is not exact in every order of additions: the j-th paid feature
    # still brings every row to the same running cost, 0.1 added j times
    m = _chain_bank(9, cost, precision)
    proto = compile_onnx(m)
    assert _voted(proto)
    rt = OnnxRuntime(proto)
    rep = verify(m, runtimes=[rt])
    assert rep.ok, rep.table()
    X = np.concatenate([adversarial_rows(m), np.random.default_rng(1).normal(size=(400, 9)).astype(np.float32)])
    for budget in _budgets(m, X, cost):
        _assert_exact(rt, m, X, budget)
    halted = predict(m, X, budget=predict(m, X).cost / 2)
    assert (halted.stage < predict(m, X).stage).any() and (halted.stage >= 0).any()   # halts at many places
    for rows in (X[:0], X[:1]):
        for budget in (np.zeros(len(rows)), np.full(len(rows), np.inf)):
            _assert_exact(rt, m, rows, budget)


def test_voted_halt_on_many_features_and_a_multiclass_bank():
    """70 features (more units than the latency graph's pairwise limit)
    and the multiclass example (one leaf number per tree, K values each)."""
    for m in (_chain_bank(70, 2.0, n_trees=40, seed=3), load_example("multiclass")):
        proto = compile_onnx(m)
        assert _voted(proto)
        rt = OnnxRuntime(proto)
        X = np.concatenate([adversarial_rows(m),
                            np.random.default_rng(2).normal(size=(300, m.n_features)).astype(np.float32)])
        cost = float(m.feature_costs[0])
        for budget in _budgets(m, X, cost):
            _assert_exact(rt, m, X, budget)


def test_unequal_costs_or_no_budget_keep_the_searched_halt():
    """The voted halt needs one cost for every feature and a budget input:
    other costs keep the first-touch search, a graph without a budget the
    summed operator; both exact."""
    m = _chain_bank(9, 1.0)
    unequal = ir.model(ir.features_from_costs(np.arange(1.0, 10.0)), list(m.nodes), m.output, task=m.task)
    for proto in (compile_onnx(unequal), compile_onnx(m, budget=False)):
        assert not _voted(proto)
    rt = OnnxRuntime(compile_onnx(unequal))
    X = adversarial_rows(unequal)
    for budget in _budgets(unequal, X, 1.0):
        _assert_exact(rt, unequal, X, budget)


def test_wide_models_keep_the_search(monkeypatch):
    """The voted halt's [leaf starts, features] slot table is built in numpy
    at compile time: past ``DENSE_TABLE_BYTES`` the graph keeps the
    first-touch search (exact either way) instead of gigabytes of tables."""
    from skinflint.compilers import onnx_cost
    m = _chain_bank(9, 1.0)
    assert _voted(compile_onnx(m))
    monkeypatch.setattr(onnx_cost, "DENSE_TABLE_BYTES", 9 * 8 * 8)      # fewer bytes than 8 leaf starts' rows
    proto = compile_onnx(m)
    assert not _voted(proto)
    rt = OnnxRuntime(proto)
    X = adversarial_rows(m)
    for budget in _budgets(m, X, 1.0):
        _assert_exact(rt, m, X, budget)
