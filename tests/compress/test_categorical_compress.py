"""BudgetPrune and retrofitted exits on banks with category-set splits
(issue 34): compress routes a row through a categorical node exactly as the
reference runtime does (NaN, codes under each rule, values that are not
codes), and a pruned model keeps the sets of the nodes that still split."""
import numpy as np
import pytest

from skinflint import ir
from skinflint.compress import budget_prune, retrofit_exits
from skinflint.compress._routing import category_arrays, leaf_index, path_errors, route_bank
from skinflint.ir import FeatureCosts, builders
from skinflint.runtimes.reference import ReferenceRuntime
from skinflint.verify import verify

RULES = ("truncate", "truncate_nonnegative", "integer")
F, CAT = 4, (0, 1)                 # features 0 and 1 are categorical, 2 and 3 numeric
COSTS = FeatureCosts.from_arrays([1.0, 2.0, 0.5, 3.0], groups=[0, 0, -1, -1], group_costs=[4.0])


def _tree(rng, depth, leaf_values):
    """One full tree of ``depth`` (local indices, preorder): categorical
    nodes on features 0-1 with random sets of codes < 64 (one or two words)
    and random other_left, numeric ones on 2-3."""
    feature, threshold, left, right, value, ml, sets, other = [], [], [], [], [], [], [], []

    def node(d):
        h = len(feature)
        for a in (feature, threshold, left, right, ml, sets, other):
            a.append(None)
        value.append(0.0)
        if d == depth:
            feature[h], threshold[h], left[h], right[h], ml[h], sets[h], other[h] = -1, 0.0, -1, -1, True, None, \
                False
            value[h] = float(leaf_values.pop())
            return h
        f = int(rng.integers(F))
        feature[h], ml[h] = f, bool(rng.random() < 0.5)
        if f in CAT:
            codes = rng.choice(int(rng.choice([20, 64])), size=int(rng.integers(1, 12)), replace=False)
            threshold[h], sets[h], other[h] = 0.0, builders.category_set(codes), bool(rng.random() < 0.5)
        else:
            threshold[h], sets[h], other[h] = float(rng.normal()), None, False
        left[h] = node(d + 1)
        right[h] = node(d + 1)
        return h

    node(0)
    return {"feature": feature, "threshold": threshold, "left": left, "right": right, "value": value,
            "missing_left": ml, "category_sets": sets, "other_left": other}


def _rows(rng, n):
    """Values that exercise every branch of the rule: NaN, negative codes,
    -0.5 (code 0 under "truncate" only), -0.0, non-integers, codes inside
    and past a node's words, huge values and infinities."""
    special = np.array([np.nan, -2.0, -1.0, -0.5, -0.0, 0.0, 0.5, 1.0, 3.7, 19.0, 19.99, 31.0, 32.0, 33.5, 63.0,
                        64.0, 70.0, 1e9, np.inf, -np.inf], np.float32)
    X = rng.normal(size=(n, F)).astype(np.float32)
    for f in CAT:
        X[:, f] = np.where(rng.random(n) < 0.5, rng.integers(0, 66, n).astype(np.float32),
                           rng.choice(special, n))
    X[rng.random(X.shape) < 0.03] = np.nan
    return X


def _forest(rule, n_trees=12, depth=4, seed=0, task=None, divisor=None):
    rng = np.random.default_rng(seed)
    trees = [_tree(rng, depth, list(rng.normal(size=2 ** depth).round(3))) for _ in range(n_trees)]
    divisor = n_trees if divisor is None else divisor           # a forest's mean, or a booster's sum
    bank = builders.concat_trees(trees, tree_cost=np.ones(n_trees), divisor=divisor, category_rule=rule,
                                 precision="float64" if divisor != 1 else "float32")
    assert bank.categories is not None and bank.categories.rule == rule
    return builders.model(COSTS.features(), [bank], 0, task=task or builders.regression_task(),
                          groups=COSTS.ir_groups())


@pytest.mark.parametrize("rule", RULES)
def test_rows_reach_the_leaves_the_reference_runtime_reaches(rule):
    rng = np.random.default_rng(1)
    X = _rows(rng, 3000)
    for t in range(6):
        # one tree, leaves numbered 1..16: the reference's output names the leaf a row reached
        tree = _tree(rng, 4, list(range(16, 0, -1)))
        bank = builders.concat_trees([tree], category_rule=rule)
        model = builders.model(COSTS.features(), [bank], 0, task=builders.regression_task(),
                               groups=COSTS.ir_groups())
        leaf = leaf_index(bank.feature.astype(np.int64), bank.threshold, bank.left.astype(np.int64),
                          bank.right.astype(np.int64), bank.missing_left, category_arrays(bank),
                          bank.roots.astype(np.int64), X)[0]
        want = ReferenceRuntime(model).predict(X).output.ravel()
        assert np.array_equal(bank.value[leaf, 0], want), (rule, t)
        # BudgetPrune's own walks: the first-touch routing and the per-node squared error
        args = (bank.feature.astype(np.int64), bank.threshold, bank.left.astype(np.int64),
                bank.right.astype(np.int64), bank.missing_left, category_arrays(bank), bank.roots.astype(np.int64), X)
        _, routed, *_ = route_bank(*args, np.arange(F, dtype=np.int64), np.full(F, -1, np.int64), F)
        assert np.array_equal(routed[0], leaf)
        y = rng.normal(size=X.shape[0])
        err = path_errors(*args, np.asarray(bank.value, np.float64), np.zeros(X.shape[0], np.int64), y, 2)
        leaves = bank.feature < 0
        # the same float64 squares summed per leaf, then over leaves: 1e-12 relative
        assert err[leaves].sum() == pytest.approx(float(np.sum((want.astype(np.float64) - y) ** 2)), rel=1e-12)
        # the rows take both sides of categorical nodes through every rule branch
        assert len(np.unique(want)) > 4


@pytest.mark.parametrize("rule", RULES)
def test_pruned_categorical_forest_keeps_its_sets_costs_as_the_runtime_and_verifies(rule):
    m = _forest(rule)
    X = _rows(np.random.default_rng(2), 800)
    y = ReferenceRuntime(m).predict(X).output.ravel() + np.random.default_rng(3).normal(scale=0.1, size=800)
    src = m.nodes[0]
    for lam in (0.0, 0.01, 0.05):
        r = budget_prune(m, X, y, lam)
        bank = r.model.nodes[0]
        pred = ReferenceRuntime(r.model).predict(X)
        # the same float64 unit costs added in another order: 1e-12 relative
        assert np.mean(pred.cost) == pytest.approx(r.cost, rel=1e-12)
        split = bank.feature >= 0
        cat_split = split & np.isin(bank.feature, CAT)
        if cat_split.any():
            c = bank.categories
            assert c is not None and c.rule == rule
            assert np.array_equal(c.words > 0, cat_split)
            # every kept set is one of the source's sets, with its other_left
            src_sets = {(tuple(src.categories.codes(h)), bool(src.categories.other_left[h]))
                        for h in np.flatnonzero(src.categories.words > 0)}
            assert all((tuple(c.codes(h)), bool(c.other_left[h])) in src_sets for h in np.flatnonzero(cat_split))
        assert ir.to_json(ir.from_json(ir.to_json(r.model))) == ir.to_json(r.model)
    assert r.cost < budget_prune(m, X, y, 0.0).cost
    rep = verify(budget_prune(m, X, y, 0.01).model, X[:64])
    assert rep.ok, rep.table()


def test_retrofitted_exits_on_a_categorical_booster_agree_with_the_reference():
    m = _forest("truncate", n_trees=20, divisor=1.0, task=builders.binary_task())
    X = _rows(np.random.default_rng(4), 600)
    r = retrofit_exits(m, X, every=5, tolerance=0.0)
    # tolerance 0: every validation row keeps the label the source gives it
    src = ReferenceRuntime(m).predict(X).output
    got = ReferenceRuntime(r.model).predict(X).output
    assert r.agreement == 1.0 and np.array_equal(got, src)
