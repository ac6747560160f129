"""The batch entry points of generated C (issue 30): a model whose output is
a tree bank walks blocks of rows through each tree without branching on the
data, and must equal the per-row evaluator (``CRuntime(api="rows")``, the
same sources built with ``<PREFIX>_ROW_BY_ROW``) and the reference bit for
bit: scores, probabilities, labels, cost, stage and features used, with
budgets that halt rows inside a block."""
import ctypes

import numpy as np
import pytest

from skinflint import ir
from skinflint.ir.random_model import random_model, with_float64_banks
from skinflint.runtimes.c import CRuntime
from skinflint.runtimes.reference import predict
from skinflint.verify import verify
from tests.conftest import load_example

TREE_TOPS = ["trees", "groups", "multiclass"]


def _same(a, b):
    """Bit-for-bit equality of two Predictions (NaN equal to NaN)."""
    for name in ("scores", "proba", "cost", "stage", "features_used"):
        x, y = getattr(a, name), getattr(b, name)
        if x is None or y is None:
            assert x is None and y is None, name
            continue
        x, y = np.asarray(x), np.asarray(y)
        assert x.dtype == y.dtype and x.shape == y.shape, name
        assert np.array_equal(x.view(np.uint8), y.view(np.uint8)) if x.dtype.kind == "f" else \
            np.array_equal(x, y), name


def _rows_and_budgets(model, n=53, seed=0):
    """n rows (not a multiple of a block) with NaNs, values on thresholds,
    and budgets that stop rows at every point: none, negative, zero, and
    fractions of each row's own cost."""
    rng = np.random.default_rng(seed)
    F = model.n_features
    X = rng.normal(size=(n, F)).astype(np.float32)
    X[rng.random((n, F)) < 0.1] = np.nan
    thr = np.concatenate([nd.threshold[nd.feature >= 0] for nd in model.nodes if nd.kind == "trees"])
    if thr.size:
        on = rng.random((n, F)) < 0.2
        X[on] = rng.choice(thr, on.sum())
    full = predict(model, X).cost
    b = full * rng.choice([0.0, 0.3, 0.6, 0.99, 1.0, 2.0], n)
    b[rng.random(n) < 0.2] = np.inf
    b[:3] = [-1.0, 0.0, np.inf]
    return X, b


def _models():
    out = {name: load_example(name) for name in TREE_TOPS}
    seeds = range(12)
    out.update({f"random{s}": random_model(s, kinds=("trees",)) for s in seeds})
    out.update({f"random{s}-f64": with_float64_banks(random_model(s, kinds=("trees",))) for s in seeds[:4]})
    return out


MODELS = _models()


@pytest.mark.parametrize("name", sorted(MODELS))
def test_batch_walk_equals_the_per_row_evaluator_and_the_reference(name):
    m = MODELS[name]
    assert m.nodes[m.output].kind == "trees"
    X, b = _rows_and_budgets(m)
    batch, rows = CRuntime(m), CRuntime(m, api="rows")
    assert "ROW_BY_ROW" in " ".join(rows.flags) and "ROW_BY_ROW" not in " ".join(batch.flags)
    got = batch.predict(X, budget=b)
    _same(got, rows.predict(X, budget=b))
    _same(got, predict(m, X, b))
    assert (got.stage < m.nodes[m.output].n_trees - 1).any(), "some budget must halt a row"
    # blocks with no missing value take the walk without the NaN test (x > threshold alone)
    clean = np.where(np.isnan(X), np.float32(0.5), X)
    got = batch.predict(clean, budget=b)
    _same(got, rows.predict(clean, budget=b))
    _same(got, predict(m, clean, b))
    # and the adversarial rows with budgets around each row's cost
    report = verify(m, runtimes=[batch, rows], max_rows=600)
    assert report.ok, report.table()


@pytest.mark.parametrize("name", ["groups", "random0", "random0-f64"])
def test_batch_walk_at_Os_equals_the_per_row_evaluator(name):
    """-Os builds the compact walk (one row at a time, the NaN-aware step)."""
    m = MODELS[name]
    X, b = _rows_and_budgets(m)
    clean = np.where(np.isnan(X), np.float32(0.5), X)
    small, rows = CRuntime(m, opt="-Os"), CRuntime(m, api="rows")
    for rows_in in (X, clean):
        got = small.predict(rows_in, budget=b)
        _same(got, rows.predict(rows_in, budget=b))
        _same(got, predict(m, rows_in, b))


def test_predict_batch_fills_result_structs_across_blocks():
    """The struct entry point, NULL budgets and a batch spanning blocks."""
    m = load_example("multiclass")
    X, _ = _rows_and_budgets(m, n=41)
    rt = CRuntime(m)
    res = (rt._Result * len(X))()
    rt._lib.sfm_predict_batch.argtypes = [ctypes.c_void_p, ctypes.c_int32, ctypes.c_void_p, ctypes.c_void_p]
    rt._lib.sfm_predict_batch(X.ctypes.data, len(X), None, ctypes.addressof(res))
    ref = predict(m, X)
    scores = np.array([list(r.scores) for r in res], np.float32)
    assert np.array_equal(scores.view(np.uint32), ref.scores.view(np.uint32))
    assert [r.cost for r in res] == ref.cost.tolist()
    assert [r.stage for r in res] == ref.stage.tolist()
    assert [m.task.classes[r.label] for r in res] == list(ref.output)


def test_a_trained_ensemble_on_rows_past_one_block():
    from skinflint import datasets
    from skinflint.trainers import GreedyMiserClassifier
    ds = datasets.load_breast_cancer()
    m = GreedyMiserClassifier(n_estimators=30, max_depth=3, cost_tradeoff=1e-3, verbose=0,
                              feature_costs=ds.feature_costs, feature_groups=ds.feature_groups,
                              group_costs=ds.group_costs, random_state=0).fit(ds.X, ds.y).model_
    X = ds.X[:300].astype(np.float32)
    full = predict(m, X).cost
    b = full * np.linspace(0, 1.2, len(X))
    got = CRuntime(m).predict(X, budget=b)
    _same(got, CRuntime(m, api="rows").predict(X, budget=b))
    _same(got, predict(m, X, b))


def test_rows_api_refuses_a_target():
    with pytest.raises(ValueError, match="host only"):
        CRuntime(load_example("trees"), api="rows", target="aarch64")


def _complete_trees(rng, n_trees, depth, n_features):
    n_inner, n = 2 ** depth - 1, 2 ** (depth + 1) - 1
    i = np.arange(n)
    inner = i < n_inner
    return [dict(feature=np.where(inner, rng.integers(0, n_features, n), -1),
                 threshold=np.where(inner, rng.normal(size=n), 0.0).astype(np.float32),
                 left=np.where(inner, 2 * i + 1, -1), right=np.where(inner, 2 * i + 2, -1),
                 value=rng.normal(size=n).astype(np.float32), missing_left=rng.random(n) < 0.5)
            for _ in range(n_trees)]


@pytest.mark.slow     # two builds of a 66,000-node model: about half a minute
def test_table_widths_past_8_and_16_bits():
    """Past 65,536 nodes (32-bit tail starts; the roots, slots of the nodes
    above each tree's last level, stay 16-bit), a tree whose child offsets
    pass 255 (16-bit offsets) and 200 features (16-bit feature fields): the
    narrow types are chosen per table and model and the results stay exact."""
    from skinflint.compilers.c import render
    rng = np.random.default_rng(5)
    F = 200
    trees = _complete_trees(rng, 1, 9, F) + _complete_trees(rng, 520, 6, F)
    m = ir.model(ir.features_from_costs(rng.choice([0.5, 1.0, 3.0], F)), [ir.concat_trees(trees)], 0,
                 task=ir.regression_task())
    assert m.nodes[0].feature.shape[0] > 65536
    src = render(m, "sfm")["sfm.c"]
    for table, ctype in (("tree_tail", "uint32_t"), ("tree_root", "uint16_t"), ("tn_off", "uint16_t"),
                         ("tn_fm", "uint16_t")):
        assert f"static const {ctype} {table}[]" in src, table
    X, b = _rows_and_budgets(m, n=40)
    got = CRuntime(m).predict(X, budget=b)
    _same(got, predict(m, X, b))
    _same(got, CRuntime(m, api="rows").predict(X, budget=b))


def _grown_tree(rng, n_features, max_depth, p_split):
    """A random tree whose leaves lie on every level (each node splits with
    probability p_split up to max_depth), nodes numbered depth first."""
    nodes = []

    def grow(level):
        i = len(nodes)
        nodes.append(None)
        if level < max_depth and (level == 0 or rng.random() < p_split):
            left = grow(level + 1)
            right = grow(level + 1)
            nodes[i] = (int(rng.integers(0, n_features)), float(rng.normal()), left, right)
        else:
            nodes[i] = (-1, 0.0, -1, -1)
        return i
    grow(0)
    n = len(nodes)
    return dict(feature=[f for f, _, _, _ in nodes], threshold=np.float32([t for _, t, _, _ in nodes]),
                left=[le for _, _, le, _ in nodes], right=[r for _, _, _, r in nodes],
                value=rng.normal(size=n).astype(np.float32), missing_left=rng.random(n) < 0.5)


def _caterpillar(rng, n_features, depth):
    """A split per level with a leaf beside it, on alternate sides."""
    feature, left, right = [], [], []
    for k in range(depth):
        s, leaf = len(feature), len(feature) + 1
        feature += [int(rng.integers(0, n_features)), -1]
        left += [leaf if k % 2 else s + 2, -1]
        right += [s + 2 if k % 2 else leaf, -1]
    feature.append(-1)
    left.append(-1)
    right.append(-1)
    n = len(feature)
    return dict(feature=feature, threshold=rng.normal(size=n).astype(np.float32), left=left, right=right,
                value=rng.normal(size=n).astype(np.float32), missing_left=rng.random(n) < 0.5)


def _leaf_only(value):
    return dict(feature=[-1], threshold=np.float32([0.0]), left=[-1], right=[-1], value=np.float32([value]))


@pytest.mark.parametrize("precision", ["float32", "float64"])
def test_trees_with_leaves_on_every_level(precision):
    """The tables keep no feature or offset entry for a tree's last level
    (docs/c.md, Tables): trees that are one leaf (first, between and last),
    caterpillars of depth 1 to 9 and random trees with leaves on every level
    score as the reference does, in the batch walk (NaN and NaN-free blocks,
    -O2 and -Os), one row at a time and on demand."""
    rng = np.random.default_rng(11)
    F = 7
    trees = ([_leaf_only(0.25)] + [_caterpillar(rng, F, d) for d in range(1, 10)] + [_leaf_only(-0.5)]
             + [_grown_tree(rng, F, 8, 0.7) for _ in range(24)] + [_leaf_only(0.125)])
    m = ir.model(ir.features_from_costs(rng.choice([0.5, 1.0, 2.0], F)), [ir.concat_trees(trees)], 0,
                 task=ir.regression_task())
    if precision == "float64":
        m = with_float64_banks(m)
    X, b = _rows_and_budgets(m, n=77)
    clean = np.where(np.isnan(X), np.float32(0.5), X)
    ref_rt = CRuntime(m, api="rows")
    for rt in (CRuntime(m), CRuntime(m, opt="-Os"), CRuntime(m, api="lazy")):
        for rows_in in (X, clean):
            got = rt.predict(rows_in, budget=b)
            _same(got, predict(m, rows_in, b))
            _same(got, ref_rt.predict(rows_in, budget=b))
