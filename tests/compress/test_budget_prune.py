"""BudgetPrune (issue 31): the solver against brute force on a tiny forest,
costs as the IR charges them (features and groups once per row, tree
evaluation costs), and pruned models that verify like any other."""
import itertools

import numpy as np
import pytest

pytest.importorskip("sklearn")
from sklearn.ensemble import RandomForestClassifier, RandomForestRegressor  # noqa: E402

from skinflint.compress import budget_prune, prune_curve, prune_to_budget  # noqa: E402
from skinflint.importers import from_sklearn  # noqa: E402
from skinflint.ir import FeatureCosts  # noqa: E402
from skinflint.runtimes.reference import ReferenceRuntime  # noqa: E402
from skinflint.verify import verify  # noqa: E402

RNG = np.random.default_rng(3)
X = RNG.normal(size=(600, 6)).astype(np.float32)
Y = ((X[:, 0] + X[:, 1] * X[:, 2] + 0.3 * RNG.normal(size=600)) > 0).astype(int)
# features 0-2 share a group (paid once per row with the first of them)
COSTS = FeatureCosts.from_arrays([1.0, 2.0, 0.5, 4.0, 3.0, 1.5], groups=[0, 0, 0, -1, -1, -1],
                                 group_costs=[5.0])


def _forest(n_trees, depth, seed=0):
    rf = RandomForestClassifier(n_trees, max_depth=depth, random_state=seed).fit(X[:300], Y[:300])
    return from_sklearn(rf, COSTS)


def _walk(bank, t, x, kept=None):
    """(end node, features read) of one row in tree t; ``kept`` None: the
    bank as it is, else only the internal nodes in ``kept`` split."""
    h, read = int(bank.roots[t]), []
    while bank.feature[h] >= 0 and (kept is None or h in kept):
        read.append(int(bank.feature[h]))
        h = int(bank.left[h] if x[bank.feature[h]] <= bank.threshold[h] else bank.right[h])
    return h, read


def _objective(bank, model, Xv, yv, lam, kept_per_tree, T):
    """The BudgetPrune objective written out directly: mean per-tree
    misclassification + lam * the mean cost a row pays (features and
    groups once per row, tree costs for trees that split at all)."""
    fc, fg, gc = model.feature_costs, model.feature_groups, model.group_costs
    err, cost = 0.0, 0.0
    for x, yy in zip(Xv, yv, strict=True):
        feats = set()
        for t in range(bank.n_trees):
            end, read = _walk(bank, t, x, kept_per_tree[t])
            err += float(np.argmax(bank.value[end]) != yy)
            feats |= set(read)
        cost += sum(fc[f] for f in feats) + sum(gc[g] for g in {fg[f] for f in feats if fg[f] >= 0})
    cost = cost / len(Xv) + sum(bank.tree_cost[t] for t in range(bank.n_trees) if bank.roots[t] in
                                kept_per_tree[t])
    return err / (len(Xv) * T) + lam * cost


def _prunings(bank, t):
    """Every pruning of tree t: sets of internal nodes closed under parents."""
    internal = [h for h in range(bank.feature.shape[0]) if bank.feature[h] >= 0
                and _owner(bank)[h] == t]
    parent = {int(c): h for h in internal for c in (bank.left[h], bank.right[h])}
    out = []
    for r in range(len(internal) + 1):
        for s in itertools.combinations(internal, r):
            s = set(s)
            if all(h == bank.roots[t] or parent.get(h) in s for h in s):
                out.append(s)
    return out


def _owner(bank):
    return bank.tree_ranges()


@pytest.mark.parametrize("lam", [0.0, 0.02, 0.1])
def test_solution_is_the_brute_force_optimum_on_a_tiny_forest(lam):
    m = _forest(3, 2, seed=1)
    bank = m.nodes[0]
    Xv, yv = X[300:360], Y[300:360]
    r = budget_prune(m, Xv, yv, lam, node_values="source")
    options = [_prunings(bank, t) for t in range(bank.n_trees)]
    best = min(_objective(bank, m, Xv, yv, lam, list(k), 3) for k in itertools.product(*options))
    owner = _owner(bank)
    mine = [set(np.flatnonzero(r.kept & (owner == t)).tolist()) for t in range(3)]
    # float sums of the same terms in another order: 1e-12
    assert _objective(bank, m, Xv, yv, lam, mine, 3) == pytest.approx(best, rel=1e-12, abs=1e-15)
    assert r.error + lam * r.cost == pytest.approx(best, rel=1e-12, abs=1e-15)
    # the pruned model predicts, per row, the mean of the values where each
    # pruned tree ends (a tree pruned to its root: its root's value)
    want = np.array([sum(bank.value[_walk(bank, t, x, mine[t])[0]] for t in range(3)) / 3 for x in Xv])
    got = ReferenceRuntime(r.model).predict(Xv).scores
    assert np.allclose(got, want, rtol=1e-12, atol=1e-15)   # the same float64 terms, another order


def test_reported_cost_is_the_runtimes_lazy_cost_and_the_model_verifies():
    m = _forest(30, 5)
    Xv, yv = X[300:], Y[300:]
    for lam in (0.0, 0.005, 0.02, 0.2):
        r = budget_prune(m, Xv, yv, lam)
        pred = ReferenceRuntime(r.model).predict(Xv)
        # the same float64 unit costs added in another order: 1e-12 relative
        assert np.mean(pred.cost) == pytest.approx(r.cost, rel=1e-12)
        assert r.model.metadata["trainer"] == "compress:budget_prune"
    costs = [budget_prune(m, Xv, yv, lam).cost for lam in (0.0, 0.02, 0.2)]
    assert costs[0] > costs[1] > costs[2]
    rep = verify(budget_prune(m, Xv, yv, 0.02).model, Xv[:64])
    assert rep.ok, rep.table()


def test_prune_to_budget_meets_the_mean_cost():
    m = _forest(20, 4)
    Xv, yv = X[300:], Y[300:]
    full = ReferenceRuntime(m).predict(Xv).cost.mean()
    r = prune_to_budget(m, Xv, yv, full / 2)
    assert r.cost <= full / 2
    assert ReferenceRuntime(r.model).predict(Xv).cost.mean() <= full / 2 * (1 + 1e-12)


def test_curve_and_regression_forest_refit():
    rf = RandomForestRegressor(10, max_depth=4, random_state=0).fit(X[:300], X[:300, 0] * 2 + Y[:300])
    m = from_sklearn(rf, COSTS)
    rows = prune_curve(m, X[300:], X[300:, 0] * 2 + Y[300:], [0.0, 0.01, 1.0], node_values="refit",
                       X_test=X[450:], y_test=X[450:, 0] * 2 + Y[450:])
    assert [r["result"].node_values for r in rows] == ["refit"] * 3
    assert rows[0]["test_cost"] >= rows[1]["test_cost"] >= rows[2]["test_cost"]
    assert rows[2]["n_trees"] <= rows[0]["n_trees"]


def test_lightgbm_rf_is_refitted_and_verifies():
    lgb = pytest.importorskip("lightgbm")
    from skinflint.importers.lightgbm import from_lightgbm
    b = lgb.train({"objective": "binary", "boosting": "rf", "bagging_freq": 1, "bagging_fraction": 0.6,
                   "num_leaves": 8, "verbose": -1, "num_threads": 1}, lgb.Dataset(X[:300], Y[:300]), 15)
    m = from_lightgbm(b, COSTS)
    r = budget_prune(m, X[300:], Y[300:], 0.01)
    assert r.node_values == "refit"                 # LightGBM's import keeps no internal values
    assert r.model.nodes[0].divisor == m.nodes[0].divisor
    rep = verify(r.model, X[300:364])
    assert rep.ok, rep.table()


def test_refused_inputs():
    m = _forest(3, 2)
    with pytest.raises(ValueError, match="lambda"):
        budget_prune(m, X[300:], Y[300:], -1.0)
    with pytest.raises(ValueError, match="label 7"):
        budget_prune(m, X[300:302], np.array([0, 7]), 0.1)
    with pytest.raises(ValueError, match="node_values"):
        budget_prune(m, X[300:], Y[300:], 0.1, node_values="median")
