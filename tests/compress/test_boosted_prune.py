"""Pruning a boosted ensemble (issue 31 item 2): pruned nodes take the
hessian-weighted mean of the contributions they replace, the pruned model
adds exactly those values, the cost falls with lambda, and the model
verifies."""
import numpy as np
import pytest

from skinflint.compress import budget_prune
from skinflint.ir import FeatureCosts
from skinflint.runtimes.reference import ReferenceRuntime
from skinflint.verify import verify

lgb = pytest.importorskip("lightgbm")
from skinflint.importers.lightgbm import from_lightgbm  # noqa: E402

RNG = np.random.default_rng(11)
X = RNG.normal(size=(700, 5)).astype(np.float32)
Y = ((X[:, 0] - X[:, 1] + X[:, 2] * X[:, 3] + 0.5 * RNG.normal(size=700)) > 0).astype(int)
COSTS = FeatureCosts.from_arrays([1.0, 4.0, 2.0, 8.0, 0.5])


@pytest.fixture(scope="module")
def boosted():
    b = lgb.train({"objective": "binary", "num_leaves": 6, "verbose": -1, "num_threads": 1, "seed": 0},
                  lgb.Dataset(X[:400], Y[:400]), 25)
    return b, from_lightgbm(b, COSTS)


def _ends(bank, kept, x):
    """Per tree, the node where row x stops when only ``kept`` nodes split."""
    out = []
    for r in bank.roots:
        h = int(r)
        while bank.feature[h] >= 0 and kept[h]:
            h = int(bank.left[h] if x[bank.feature[h]] <= bank.threshold[h] else bank.right[h])
        out.append(h)
    return out


def test_pruned_values_are_hessian_weighted_means_and_the_model_adds_them(boosted):
    _, m = boosted
    bank = m.nodes[0]
    Xv, yv = X[400:], Y[400:]
    r = budget_prune(m, Xv, yv, 0.02)
    assert r.node_values == "loss-refit" and 0 < r.n_trees < bank.n_trees + 1
    assert r.kept.sum() < (bank.feature >= 0).sum()        # something was pruned
    # independently: contributions c[t, i] of the source, margins F, weights p(1 - p)
    full = [_ends(bank, np.ones(len(bank.feature), bool), x) for x in Xv]
    c = np.array([[bank.value[h, 0] for h in row] for row in full])           # [N, T]
    F = bank.base_score[0] + c.sum(1)
    p = 1 / (1 + np.exp(-F))
    w = p * (1 - p)
    ends = [_ends(bank, r.kept, x) for x in Xv]
    want = np.full(len(Xv), bank.base_score[0])
    for t in range(bank.n_trees):
        end = np.array([e[t] for e in ends])
        for h in np.unique(end):
            rows = end == h
            if bank.feature[h] < 0:
                want[rows] += bank.value[h, 0]
            else:                                           # pruned there: the weighted mean of the rows below
                reach = np.array([_reaches(bank, h, t, x) for x in Xv])
                want[rows] += np.sum(w[reach] * c[reach, t]) / np.sum(w[reach])
    got = ReferenceRuntime(r.model).predict(Xv).scores[:, 0]
    # the same float64 terms summed in another order (dropped trees join the base score first)
    assert np.allclose(got, want, rtol=1e-9, atol=1e-12)


def _reaches(bank, h, t, x):
    g = int(bank.roots[t])
    while True:
        if g == h:
            return True
        if bank.feature[g] < 0:
            return False
        g = int(bank.left[g] if x[bank.feature[g]] <= bank.threshold[g] else bank.right[g])


def test_cost_falls_with_lambda_and_the_model_verifies(boosted):
    _, m = boosted
    Xv, yv = X[400:], Y[400:]
    res = [budget_prune(m, Xv, yv, lam) for lam in (0.0, 0.01, 0.05)]
    costs = [r.cost for r in res]
    assert costs[0] > costs[1] > costs[2]
    for r in res:
        assert np.mean(ReferenceRuntime(r.model).predict(Xv).cost) == pytest.approx(r.cost, rel=1e-12)
    rep = verify(res[1].model, Xv[:64])
    assert rep.ok, rep.table()


def test_boosted_refuses_what_it_cannot_refit(boosted):
    _, m = boosted
    with pytest.raises(ValueError, match="refitted"):
        budget_prune(m, X[400:], Y[400:], 0.01, node_values="source")
    b3 = lgb.train({"objective": "multiclass", "num_class": 3, "num_leaves": 4, "verbose": -1, "num_threads": 1},
                   lgb.Dataset(X[:300], Y[:300] + (X[:300, 4] > 1)), 3)
    with pytest.raises(ValueError, match="BudgetPrune: boosted ensembles are supported for a binary logistic or a "
                                         "squared loss only; this model is a multiclass booster with 3 outputs"):
        budget_prune(from_lightgbm(b3), X[400:], Y[400:], 0.01)
