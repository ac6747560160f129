"""Import speed (issue 19, point 6): a 1000-tree LightGBM model and a
1000-tree XGBoost model into the IR, from the booster and from the file.

Needs lightgbm and xgboost (``pip install -e '.[import]'``).  Prints seconds
per import (best of 3) and the bank size.
"""
from __future__ import annotations

import argparse
import os
import tempfile
import time

import numpy as np


def best_of(fn, reps=3):
    times = []
    for _ in range(reps):
        t = time.perf_counter()
        out = fn()
        times.append(time.perf_counter() - t)
    return min(times), out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--trees", type=int, default=1000)
    ap.add_argument("--rows", type=int, default=20_000)
    args = ap.parse_args()
    import lightgbm as lgb
    import xgboost as xgb

    from skinflint.importers import from_lightgbm, from_xgboost
    rng = np.random.default_rng(0)
    X = rng.normal(size=(args.rows, 50)).astype(np.float32)
    y = (X[:, :5].sum(1) + np.sin(3 * X[:, 5]) > 0).astype(int)
    with tempfile.TemporaryDirectory() as tmp:
        b = lgb.train({"objective": "binary", "num_leaves": 63, "max_depth": 6, "learning_rate": 0.05,
                       "verbose": -1}, lgb.Dataset(X, y), args.trees)
        path = os.path.join(tmp, "lgb.txt")
        b.save_model(path)
        for what, src in (("booster", b), ("file", path)):
            t, m = best_of(lambda src=src: from_lightgbm(src))
            print(f"LightGBM {args.trees} trees from {what}: {t:.3f} s ({m.nodes[0].feature.shape[0]} nodes)")
        x = xgb.train({"objective": "binary:logistic", "max_depth": 6, "eta": 0.05}, xgb.DMatrix(X, label=y),
                      args.trees)
        path = os.path.join(tmp, "xgb.ubj")
        x.save_model(path)
        for what, src in (("booster", x), ("file", path)):
            t, m = best_of(lambda src=src: from_xgboost(src))
            print(f"XGBoost  {args.trees} trees from {what}: {t:.3f} s ({m.nodes[0].feature.shape[0]} nodes)")


if __name__ == "__main__":
    main()
