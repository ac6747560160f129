"""LightGBM's cost-efficient boosting (CEGB), deployed lazily.

LightGBM's ``cegb_penalty_feature_lazy`` trains trees that use fewer costly
features per row, but LightGBM itself fetches every feature of every row
before predicting, so the saving never happens.  Here the same data and
feature costs train LightGBM with and without the lazy penalty; both import
into skinflint with their costs and compile to on-demand C, which fetches a
feature only when a row's path first needs it.  The table shows features
fetched and cost paid per row (the C's fetch counts equal the reference's
features used on every row) and the accuracy of each.

Run: ``python examples/cegb_lazy.py`` (``--quick`` for a smaller run).
"""
from __future__ import annotations

import argparse

import numpy as np


def make_data(n_rows, seed=0):
    """Ten features: five cheap noisy views (cost 1) and five expensive
    sharp views (cost 10) of the same three latent factors."""
    rng = np.random.default_rng(seed)
    z = rng.normal(size=(n_rows, 3))
    y = (z[:, 0] + z[:, 1] * z[:, 2] > 0).astype(int)
    mix = rng.normal(size=(3, 5))
    cheap = z @ mix + 0.6 * rng.normal(size=(n_rows, 5))
    sharp = z @ mix + 0.1 * rng.normal(size=(n_rows, 5))
    X = np.hstack([cheap, sharp]).astype(np.float32)
    costs = np.array([1.0] * 5 + [10.0] * 5)
    return X, y, costs


def train(X, y, costs, *, lazy_penalty, n_trees, seed=0):
    import lightgbm as lgb
    params = {"objective": "binary", "num_leaves": 15, "learning_rate": 0.1, "verbose": -1,
              "num_threads": 1, "seed": seed, "deterministic": True}
    if lazy_penalty:
        params.update(cegb_tradeoff=1.0, cegb_penalty_feature_lazy=list(lazy_penalty * costs))
    return lgb.train(params, lgb.Dataset(X, y), n_trees)


def main(quick=False):
    """Train, import, compile and measure; returns one dict per model."""
    from skinflint.importers import from_lightgbm
    from skinflint.ir import FeatureCosts
    from skinflint.runtimes.c import CRuntime
    from skinflint.runtimes.reference import ReferenceRuntime

    n = 2000 if quick else 10000
    X, y, c = make_data(2 * n)
    Xtr, ytr, Xte, yte = X[:n], y[:n], X[n:], y[n:]
    costs = FeatureCosts.from_arrays(c, names=[f"cheap{i}" for i in range(5)] +
                                     [f"sharp{i}" for i in range(5)])
    rows = {}
    for name, penalty in (("LightGBM", 0.0), ("LightGBM + CEGB lazy", 0.005)):
        booster = train(Xtr, ytr, c, lazy_penalty=penalty, n_trees=50 if quick else 200)
        model = from_lightgbm(booster, costs)
        ref = ReferenceRuntime(model).predict(Xte)
        lazy = CRuntime(model, api="lazy").predict(Xte)
        rows[name] = {
            "accuracy": float(np.mean(ref.output == yte)),
            "lightgbm_accuracy": float(np.mean((booster.predict(Xte, raw_score=True) > 0) == yte)),
            "fetched_per_row": float(lazy.fetches.mean()),
            "cost_per_row": float(lazy.cost.mean()),
            "static_cost": float(model.static_cost()),
            "fetches_equal_reference": bool(np.array_equal(lazy.fetches, ref.features_used.sum(1))),
            "cost_equal_reference": bool(np.array_equal(lazy.cost, ref.cost)),
        }
    return rows


if __name__ == "__main__":
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true")
    res = main(ap.parse_args().quick)
    print(f"{'model':<22} {'accuracy':>8} {'fetched/row':>11} {'cost/row':>9} {'all features':>12}  C == reference")
    for name, r in res.items():
        print(f"{name:<22} {r['accuracy']:>8.4f} {r['fetched_per_row']:>11.2f} {r['cost_per_row']:>9.2f} "
              f"{r['static_cost']:>12.0f}  {r['fetches_equal_reference'] and r['cost_equal_reference']}")
