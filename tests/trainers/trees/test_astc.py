"""ASTC (Kusner et al. 2014): the greedy gain against a least-squares refit,
the budget rules, the quadrant optimum, parity, cost accounting,
determinism."""
import numpy as np
import pytest

from skinflint import ir
from skinflint.datasets import make_quadrant
from skinflint.ir.feature_costs import FeatureCosts
from skinflint.ir.json_io import to_json
from skinflint.runtimes.reference import predict
from skinflint.trainers.trees._soft_tree_kernels import f32_margins, greedy_select
from skinflint.trainers.trees.astc import ASTCClassifier, ASTCRegressor, node_budgets, node_budgets_from
from skinflint.trainers.trees.cstc import CSTCClassifier
from skinflint.trainers.trees.tree_ir import CostItems, place_threshold, tie_aware_split
from skinflint.verify import verify


def _weighted_r2(X, y, w, cols):
    """R^2 of a weighted least-squares fit with intercept on ``cols`` (lstsq)."""
    sw = w.sum()
    yc = y - (w @ y) / sw
    tot = float(w @ yc ** 2)
    if not cols:
        return 0.0
    A = np.c_[X[:, cols], np.ones(len(y))] * np.sqrt(w)[:, None]
    coef = np.linalg.lstsq(A, y * np.sqrt(w), rcond=None)[0]
    r = y - np.c_[X[:, cols], np.ones(len(y))] @ coef
    return 1.0 - float(w @ r ** 2) / tot


@pytest.mark.parametrize("seed", range(5))
def test_greedy_gain_equals_r2_increase_of_a_refit(seed):
    rng = np.random.default_rng(seed)
    n, P = 200, 8
    X = rng.normal(size=(n, P)) @ rng.normal(size=(P, P))      # correlated columns
    y = X[:, 1] - 0.5 * X[:, 4] + rng.normal(size=n)
    w = rng.uniform(0.2, 1.0, size=n)
    xm, ym = (w @ X) / w.sum(), (w @ y) / w.sum()
    Xc = np.ascontiguousarray((X - xm) * np.sqrt(w)[:, None])
    yc = (y - ym) * np.sqrt(w)
    items = CostItems(np.ones(P), np.eye(P))
    order, gains, spent = greedy_select(Xc, yc, items.col_ptr, items.col_items, items.cost,
                                        np.zeros(P, bool), np.zeros(P, bool), 5.0, False, P, 1e-10)
    assert len(order) == 5 and spent == 5.0
    prev = 0.0
    for j in range(len(order)):
        r2 = _weighted_r2(X, y, w, list(order[:j + 1]))
        # eq. (11) vs an independent lstsq refit: both double precision on
        # well-conditioned 200 x 8 data; 1e-9 absolute on an R^2 in [0, 1]
        assert abs(gains[j] - (r2 - prev)) <= 1e-9
        # and the greedy choice is the best unit-cost column at that step
        best = max(_weighted_r2(X, y, w, list(order[:j]) + [c]) for c in range(P) if c not in order[:j])
        assert abs(r2 - best) <= 1e-9
        prev = r2


def test_budget_prefix_and_skip_rules():
    rng = np.random.default_rng(0)
    n = 300
    X = rng.normal(size=(n, 3))
    y = 3 * X[:, 0] + X[:, 1] + 0.5 * X[:, 2]
    Xc, yc = np.ascontiguousarray(X - X.mean(0)), y - y.mean()
    items = CostItems(np.array([10.0, 1.0, 1.0]), np.eye(3))
    args = (Xc, yc, items.col_ptr, items.col_items, items.cost)
    # per cost, col 1 then col 2 (gain/1) beat col 0 (gain/10); col 0 does not fit a budget of 5
    pre, _, sp = greedy_select(*args, np.zeros(3, bool), np.zeros(3, bool), 5.0, False, 3, 1e-10)
    ski, _, sk = greedy_select(*args, np.zeros(3, bool), np.zeros(3, bool), 5.0, True, 3, 1e-10)
    assert sp <= 5 and sk <= 5
    assert 0 not in pre and 0 not in ski
    # inherited columns are free and taken first
    inh = np.array([True, False, False])
    got, _, spent = greedy_select(*args, np.zeros(3, bool), inh, 0.0, False, 3, 1e-10)
    assert list(got) == [0] and spent == 0.0


def test_plain_gain_greedy_fills_the_budget_where_the_ratio_prefix_stops():
    """Eq. (7) takes the cheap weak column first and then cannot afford the
    strong one (G<T> stops at 1 of 5.5); the plain-gain greedy takes the strong
    one, and greedy="both" keeps the set with the larger R^2 (eq. (8))."""
    rng = np.random.default_rng(1)
    n = 400
    X = rng.normal(size=(n, 2))
    y = X[:, 0] + 0.7 * X[:, 1]                  # R^2 shares about 0.67 / 0.33
    Xc, yc = np.ascontiguousarray(X - X.mean(0)), y - y.mean()
    items = CostItems(np.array([5.0, 1.0]), np.eye(2))
    args = (Xc, yc, items.col_ptr, items.col_items, items.cost)
    by_ratio, _, spent_r = greedy_select(*args, np.zeros(2, bool), np.zeros(2, bool), 5.5, False, 2,
                                         1e-10, True)
    by_gain, _, spent_g = greedy_select(*args, np.zeros(2, bool), np.zeros(2, bool), 5.5, False, 2,
                                        1e-10, False)       # fresh "paid": the kernel updates it
    assert list(by_ratio) == [1] and spent_r == 1.0       # 0.33 / 1 beats 0.67 / 5; then 6 > 5.5
    assert list(by_gain) == [0] and spent_g == 5.0        # 0.67 fits; then 6 > 5.5, passed over
    w = np.ones(n)
    assert _weighted_r2(X, y, w, [0]) > _weighted_r2(X, y, w, [1])
    for greedy, want in (("ratio", [1]), ("both", [0])):
        est = ASTCRegressor(budget=5.5, max_depth=1, greedy=greedy, feature_costs=[5.0, 1.0]).fit(X, y)
        assert est.tree_.scorer[0].cols.tolist() == want


@pytest.mark.parametrize("seed", range(10))
def test_greedy_both_keeps_the_better_feasible_set(seed):
    """On random grouped problems, greedy="both" picks a set within budget
    whose R^2 (an independent lstsq refit) is the larger of the two greedy
    runs' sets."""
    rng = np.random.default_rng(seed)
    n, F = 150, 7
    X = rng.normal(size=(n, F)) @ rng.normal(size=(F, F))
    y = X @ rng.normal(size=F) + rng.normal(size=n)
    fc = rng.choice([0.5, 1.0, 3.0, 6.0], size=F)
    fg = np.array([-1, 0, 0, 0, 1, 1, -1])
    gc = np.array([4.0, 2.0])
    budget = float(rng.uniform(2, 12))
    sets = {}
    for greedy in ("ratio", "both"):
        est = ASTCRegressor(budget=budget, max_depth=1, greedy=greedy, feature_costs=fc,
                            feature_groups=fg, group_costs=gc).fit(X, y)
        cols = est.tree_.scorer[0].cols
        used = np.zeros(F, bool)
        used[cols] = True
        cost = fc[used].sum() + gc[np.unique(fg[used][fg[used] >= 0])].sum()
        assert cost <= budget
        sets[greedy] = _weighted_r2(X, y, np.ones(n), list(cols))
    items = CostItems.from_features(FeatureCosts.from_arrays(fc, fg, gc))
    Xc, yc = np.ascontiguousarray(X - X.mean(0)), y - y.mean()
    by_gain, _, _ = greedy_select(Xc, yc, items.col_ptr, items.col_items, items.cost,
                                  np.zeros(items.cost.size, bool), np.zeros(F, bool), budget, True,
                                  F, 1e-10, False)
    gain_r2 = _weighted_r2(X, y, np.ones(n), list(by_gain))
    # both refits are double-precision lstsq on the same well-conditioned data
    assert sets["both"] >= max(sets["ratio"], gain_r2) - 1e-9


def test_greedy_parameter_checked():
    X, y, costs = _grouped()
    with pytest.raises(ValueError, match="greedy must be one of"):
        ASTCClassifier(budget=3, greedy="lasso", **costs).fit(X, y)


def test_node_budgets_shapes():
    assert node_budgets(4, 3).tolist() == [4] * 7
    assert node_budgets([1, 2, 10], 3).tolist() == [1, 2, 2, 10, 10, 10, 10]
    assert node_budgets(np.arange(7), 3).tolist() == list(range(7))
    with pytest.raises(ValueError, match="per-depth"):
        node_budgets([1, 2], 3)


def test_tie_aware_split_never_inside_a_tie_block():
    s = np.array([0.0] * 5 + [1.0] * 40 + [2.0] * 5)      # the weighted median is inside the 1.0 block
    t = tie_aware_split(s, np.ones_like(s))
    assert t in (0.5, 1.5)
    m = np.array([1, 1, 2, 3], np.float32)
    th = place_threshold(m, 1.7)
    assert np.float32(1) <= th < np.float32(2) and th != np.float32(1)


@pytest.mark.parametrize("seed", [0, 10, 20, 30, 40])
@pytest.mark.parametrize("budget,mode,mse_max", [((1, 1, 10), "hard", 0.01), ((2, 0, 10), "hard", 0.01),
                                                  ((1, 1, 10), "soft", 0.05)])
def test_quadrant_reaches_the_optimal_tree(seed, budget, mode, mse_max):
    """Thesis §3.7.1's optimum (cost 12) with per-depth budgets; a uniform
    budget cannot express it (the root needs 2, the leaves 10)."""
    tr, te = make_quadrant(1000, seed=seed), make_quadrant(1000, seed=seed + 2)
    est = ASTCRegressor(budget=budget, max_depth=3, mode=mode, feature_costs=tr.feature_costs).fit(tr.X, tr.y)
    p = predict(est.model_, te.X)
    assert p.cost.mean() <= 12.5
    assert np.mean((p.output - te.y) ** 2) <= mse_max


def _grouped(n=700, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, 6)).astype(np.float32)
    y = ((X[:, 0] > 0) & (X[:, 2] + X[:, 4] > 0) | (X[:, 0] <= 0) & (X[:, 3] > 0.3)).astype(int)
    return X, y, dict(feature_costs=[1.0, 2, 4, 3, 6, 8], feature_groups=[-1, 0, 0, 1, 1, -1],
                      group_costs=[2.0, 5.0])


@pytest.mark.parametrize("mode", ["hard", "soft"])
def test_parity_cost_accounting_and_determinism(mode):
    X, y, costs = _grouped()
    est = ASTCClassifier(budget=[3, 6, 9], max_depth=3, mode=mode, **costs).fit(X[:500], y[:500])
    model = est.to_ir()
    p = predict(model, X[500:])
    fc, fg, gc = np.array(costs["feature_costs"]), np.array(costs["feature_groups"]), np.array(costs["group_costs"])
    groups = np.stack([p.features_used[:, fg == g].any(1) for g in range(len(gc))], 1)
    np.testing.assert_array_equal(p.cost, p.features_used @ fc + groups @ gc)
    assert p.cost.max() <= est.static_cost_
    report = verify(model, X[500:])                      # onnx, c, c-lazy, budgets around each row's cost
    assert report.ok, report.table()
    again = ASTCClassifier(budget=[3, 6, 9], max_depth=3, mode=mode, **costs).fit(X[:500], y[:500])
    assert to_json(again.to_ir()) == to_json(model)


def test_hard_routing_in_training_is_the_ir_routing():
    """Each node's training rows are exactly the rows the IR sends there: the
    threshold sits between distinct float32 margins computed like the runtime."""
    X, y, costs = _grouped(seed=3)
    est = ASTCClassifier(budget=4, max_depth=3, **costs).fit(X, y)
    sc = est.tree_.scorer[0]
    m = f32_margins(X, np.arange(len(X)), sc.cols, sc.w32, sc.b32)
    model = est.to_ir()
    root = ir.model(model.features, model.nodes[:1], 0, groups=model.groups)   # node 0 is the root's scorer
    np.testing.assert_array_equal(predict(root, X).scores[:, 0].view(np.int32), m.view(np.int32))
    th = est.tree_.threshold[0]
    assert not np.any(m == th)                           # no training margin on the threshold
    assert 0.3 <= np.mean(m <= th) <= 0.7                # "half the inputs to each child"


def test_node_budgets_from_cstc_reads_new_costs():
    X, y, costs = _grouped(seed=4)
    cs = CSTCClassifier(cost_tradeoff=0.003, **costs).fit(X, y)
    b = node_budgets_from(cs)
    assert b.shape == (7,)
    # the root's new cost is its own static cost (features plus their groups)
    fc, fg, gc = np.array(costs["feature_costs"]), np.array(costs["feature_groups"]), np.array(costs["group_costs"])
    cols = cs.tree_.scorer[0].cols
    want = fc[cols].sum() + gc[np.unique(fg[cols][fg[cols] >= 0])].sum()
    assert b[0] == want
    a = ASTCClassifier(budget=b, max_depth=3, **costs).fit(X, y)
    # every ASTC node pays at most its budget in new items (the prefix rule)
    assert np.all(node_budgets_from(a) <= b)
