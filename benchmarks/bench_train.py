"""Training time and accuracy: skinflint GBRT / Greedy Miser against
scikit-learn's HistGradientBoostingClassifier, LightGBM (with and without
its CEGB cost penalties) and XGBoost hist, on the same data, in one run.

    python benchmarks/bench_train.py [--rows 200000] [--features 50]

Settings (issue 4): 100 trees, depth 6 (sklearn/LightGBM: 63 leaves), 255
bins, learning rate 0.1, binary log-loss, float32 data.  The first skinflint
fit is timed separately: it includes numba's compile (cached on disk after).
"""
import argparse
import os

import numpy as np

from common import timed  # benchmarks/common.py, beside this script


def make_data(n, f, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, f)).astype(np.float32)
    w = rng.normal(size=f) * (rng.random(f) < 0.3)
    logit = X @ w + np.sin(2 * X[:, 0]) * 2 + X[:, 1] * X[:, 2]
    y = (logit + rng.logistic(size=n) > 0).astype(np.int64)
    costs = np.round(rng.uniform(1, 20, size=f))
    return X, y, costs


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--rows", type=int, default=200_000)
    ap.add_argument("--features", type=int, default=50)
    ap.add_argument("--trees", type=int, default=100)
    args = ap.parse_args()
    X, y, costs = make_data(args.rows + 50_000, args.features)
    Xtr, ytr, Xte, yte = X[:args.rows], y[:args.rows], X[args.rows:], y[args.rows:]
    T = args.trees
    rows = []

    from skinflint.trainers import GreedyMiserClassifier
    def sk(lam):
        return GreedyMiserClassifier(n_estimators=T, max_depth=6, min_samples_leaf=20, learning_rate=0.1,
                                     cost_tradeoff=lam, feature_costs=costs, random_state=0, verbose=0)
    _, t_first = timed(lambda: sk(0.0).set_params(n_estimators=2).fit(Xtr[:2000], ytr[:2000]))
    m0, t0 = timed(lambda: sk(0.0).fit(Xtr, ytr))
    rows.append(("skinflint GBRT (lambda=0)", t0, m0.score(Xte, yte), m0.static_cost_))
    m1, t1 = timed(lambda: sk(1e-3).fit(Xtr, ytr))
    rows.append(("skinflint Greedy Miser (lambda=1e-3)", t1, m1.score(Xte, yte), m1.static_cost_))

    from sklearn.ensemble import HistGradientBoostingClassifier
    hgb, th = timed(lambda: HistGradientBoostingClassifier(max_iter=T, max_leaf_nodes=63, max_depth=6,
                                                           learning_rate=0.1, max_bins=255,
                                                           early_stopping=False, random_state=0).fit(Xtr, ytr))
    rows.append(("sklearn HistGradientBoosting", th, hgb.score(Xte, yte), float(costs.sum())))

    try:
        import lightgbm as lgb
        base = dict(n_estimators=T, num_leaves=63, max_depth=6, learning_rate=0.1, max_bin=255,
                    min_child_samples=20, verbose=-1, random_state=0)
        lg, tl = timed(lambda: lgb.LGBMClassifier(**base).fit(Xtr, ytr))
        rows.append(("LightGBM", tl, lg.score(Xte, yte), float(costs.sum())))
        lc, tc = timed(lambda: lgb.LGBMClassifier(**base, cegb_tradeoff=1.0,
                                                   cegb_penalty_feature_coupled=list(costs)).fit(Xtr, ytr))
        used = np.flatnonzero(lc.booster_.feature_importance("split") > 0)
        rows.append(("LightGBM CEGB (tradeoff 1)", tc, lc.score(Xte, yte), float(costs[used].sum())))
    except ImportError:
        print("(LightGBM not installed: pip install lightgbm)")
    try:
        import xgboost as xgb
        xg, tx = timed(lambda: xgb.XGBClassifier(n_estimators=T, max_depth=6, learning_rate=0.1,
                                                 tree_method="hist", max_bin=255, random_state=0).fit(Xtr, ytr))
        rows.append(("XGBoost hist", tx, xg.score(Xte, yte), float(costs.sum())))
    except ImportError:
        print("(XGBoost not installed: pip install xgboost)")

    print(f"{args.rows} rows x {args.features} features, {T} trees, {os.cpu_count()} cores")
    print(f"skinflint first fit on 2000 rows (numba compile or cache load): {t_first:.2f} s")
    print(f"{'trainer':<38} {'time s':>8} {'x sklearn':>10} {'accuracy':>9} {'static cost':>12}")
    for name, t, acc, cost in rows:
        print(f"{name:<38} {t:>8.2f} {t / th:>10.2f} {acc:>9.4f} {cost:>12.1f}")


if __name__ == "__main__":
    main()
