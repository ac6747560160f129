"""Compressed models' bytes are pinned across the solver's speed work
(issue 31 item 1): the hashes were recorded from ``skinflint.compress``
*before* the triple layout, the refit and the pruned-bank assembly moved
into numba kernels; those changes must not move one byte of any model.
They cover a classifier forest with source values (groups, two lambdas),
the same forest refitted, a regression forest, a LightGBM ``rf`` (refitted,
a divisor), a boosted LightGBM (loss refit, four rounds) and retrofitted
exits.  A model that changes here changed for every user; a re-pin must say
why in its commit message."""
import hashlib

import numpy as np
import pytest

pytest.importorskip("sklearn")
lgb = pytest.importorskip("lightgbm")
from sklearn.ensemble import RandomForestClassifier, RandomForestRegressor  # noqa: E402

from skinflint import ir  # noqa: E402
from skinflint.compress import budget_prune, prune_to_budget, retrofit_exits  # noqa: E402
from skinflint.importers import from_lightgbm, from_sklearn  # noqa: E402
from skinflint.ir import FeatureCosts  # noqa: E402

RNG = np.random.default_rng(5)
X = RNG.normal(size=(900, 7)).astype(np.float32)
X[RNG.random(X.shape) < 0.02] = np.nan                  # missing values take the default branch
Y = ((np.nan_to_num(X[:, 0]) + np.nan_to_num(X[:, 1]) * np.nan_to_num(X[:, 2])
      - np.nan_to_num(X[:, 5]) + 0.4 * RNG.normal(size=900)) > 0).astype(int)
COSTS = FeatureCosts.from_arrays([1.0, 2.0, 0.5, 4.0, 3.0, 1.5, 6.0], groups=[0, 0, 0, -1, 1, 1, -1],
                                 group_costs=[5.0, 2.0])


def _hash(model):
    return hashlib.sha256(ir.to_json(model).encode()).hexdigest()[:16]


def test_compressed_models_are_byte_identical_to_the_pinned_ones():
    tr, va = slice(0, 400), slice(400, 900)
    rf = RandomForestClassifier(25, max_depth=6, random_state=0).fit(np.nan_to_num(X[tr]), Y[tr])
    m = from_sklearn(rf, COSTS)
    reg = RandomForestRegressor(12, max_depth=5, random_state=0).fit(np.nan_to_num(X[tr]),
                                                                     np.nan_to_num(X[tr, 3]) + Y[tr])
    mr = from_sklearn(reg, COSTS)
    lrf = lgb.train({"objective": "binary", "boosting": "rf", "bagging_freq": 1, "bagging_fraction": 0.6,
                     "num_leaves": 12, "verbose": -1, "num_threads": 1, "seed": 0},
                    lgb.Dataset(X[tr], Y[tr]), 15)
    gb = lgb.train({"objective": "binary", "num_leaves": 8, "verbose": -1, "num_threads": 1, "seed": 0},
                   lgb.Dataset(X[tr], Y[tr]), 30)
    mg = from_lightgbm(gb, COSTS)
    got = {
        "rf_source_small_lam": budget_prune(m, X[va], Y[va], 0.002).model,
        "rf_source_large_lam": budget_prune(m, X[va], Y[va], 0.0106).model,
        "rf_refit_brier": budget_prune(m, X[va], Y[va], 0.004, node_values="refit", loss="brier").model,
        "rf_budget": prune_to_budget(m, X[va], Y[va], 8.0).model,
        "reg_refit": budget_prune(mr, X[va], np.nan_to_num(X[va, 3]) + Y[va], 0.01, node_values="refit").model,
        "lgb_rf": budget_prune(from_lightgbm(lrf, COSTS), X[va], Y[va], 0.005).model,
        "lgb_boosted": budget_prune(mg, X[va], Y[va], 0.004).model,
        "lgb_exits": retrofit_exits(mg, X[va], every=5, tolerance=0.01).model,
    }
    pinned = {"rf_source_small_lam": "673ddb170c839cdf", "rf_source_large_lam": "8035b2df4427ad3e",
              "rf_refit_brier": "f9148dc732d09ad9", "rf_budget": "356fdd1b28784043",
              "reg_refit": "cd2d9f4ad663f5cc", "lgb_rf": "9811674f105c3544",
              "lgb_boosted": "68413f7e7e5de048", "lgb_exits": "cf546e3e638594cc"}
    assert {k: _hash(v) for k, v in got.items()} == pinned
