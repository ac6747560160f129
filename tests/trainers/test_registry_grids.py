"""The registry's grids scale with the feature costs (``TrainerSpec.cost_power``)
and anytime models get a budget curve (``benchmarks/compare.py`` relies on
both)."""

import pytest

from skinflint import datasets
from skinflint.ir.json_io import to_dict
from skinflint.runtimes.reference import predict
from skinflint.trainers import TRAINERS, cost_accuracy_curve
from skinflint.trainers.curves import budget_curve

# a power of two: costs * M and lambda / M (or budget * M) round exactly, so
# the scaled problem is the same problem bit for bit, not just in exact arithmetic
M = 8.0


def _scaled_pair(name, point=0, **params):
    # (not the l1 model: liblinear also penalises the intercept, a penalty
    # that does not scale with the costs, and stops at a tolerance, so its
    # scaled problem is only close, and near-tied features flip)
    """The same trainer fitted at a grid value with costs c, and at the
    scaled value with costs c * M."""
    ds = datasets.make_cheap_vs_exact(800, seed=3)
    spec = TRAINERS[name]
    out = []
    for m in (1.0, M):
        value = spec.scaled_grid(m)[point]
        kw = {"random_state": 0, "verbose": 0, **spec.test_params}
        est = spec.estimator("classification", **{**kw, **params, "feature_costs": ds.feature_costs * m,
                                                  spec.sweep: value})
        out.append(est.fit(ds.X, ds.y).to_ir())
    return out


@pytest.mark.parametrize("name", ["greedy-miser", "astc"])
def test_scaled_grid_is_the_same_trade_off_at_scaled_costs(name):
    small, big = _scaled_pair(name)
    a, b = to_dict(small), to_dict(big)
    # everything but the costs (and the parameters that record them) is equal
    for doc in (a, b):
        doc.pop("features"), doc.pop("groups", None), doc.pop("metadata", None)
    assert a == b
    assert big.static_cost() == M * small.static_cost()     # exact: M is a power of two


def test_scaled_grid_directions():
    assert TRAINERS["greedy-miser"].scaled_grid(10.0)[0] == pytest.approx(TRAINERS["greedy-miser"].grid[0] / 10)
    assert TRAINERS["astc"].scaled_grid(10.0)[0] == pytest.approx(TRAINERS["astc"].grid[0] * 10)
    assert TRAINERS["svm"].scaled_grid(10.0) == TRAINERS["svm"].grid
    assert TRAINERS["svm"].scaled_grid(0.0) == TRAINERS["svm"].grid     # nothing to scale
    with pytest.raises(ValueError, match="mean feature cost"):
        TRAINERS["greedy-miser"].scaled_grid(0.0)


def test_budget_curve_runs_the_model_under_budgets():
    tr, te = datasets.make_cheap_vs_exact(1500, seed=2).split(0.3, seed=0)
    tr, va = tr.split(0.3, seed=1)
    spec = TRAINERS["afr"]
    est = spec.estimator("classification", feature_costs=tr.feature_costs, tree_eval_cost=1.0,
                         **spec.test_params)
    [row] = cost_accuracy_curve(est, {"lambda0": [0.1]}, tr.X, tr.y, va.X, va.y, te.X, te.y,
                                label="AFR", choose_rounds=False, verbose=0)
    rows = budget_curve(row, te.X, te.y, fractions=(0.1, 0.5))
    assert len(rows) == 3 and rows[-1]["budget"] is None and rows[-1]["accuracy"] == row["accuracy"]
    for r in rows[:-1]:
        p = predict(row["model"], te.X, budget=r["budget"])
        assert p.cost.max() <= r["budget"]          # the budget is honoured row by row
    assert rows[0]["mean_cost"] <= rows[1]["mean_cost"] <= row["mean_cost"]
