"""Category-set splits against LightGBM's ``categorical_feature`` and
against skinflint's numeric encodings (issue 34), in one run.

    python benchmarks/bench_categorical.py [--rows 50000] [--cardinalities 200,1000] [--trees 100] [--repeat 1]
                                           [--threads N]

Data (synthetic, no network): per cardinality K, one categorical feature
with K categories of Zipf-like frequencies (weight 1/(rank+10)) whose hidden
effect is a N(0, 1) draw per category, plus 4 Gaussian numeric features with
linear effects; y ~ Bernoulli(sigmoid(effect + 0.5 x0 - 0.5 x1 + 0.3 x2)).
``--rows`` training rows and 20,000 test rows from the same law.

Trainers, all 100 trees of depth 6 (LightGBM: 63 leaves, max_depth 6),
learning rate 0.1, at least 20 rows per leaf, 255 bins, all threads (``--threads``: that many, for
LightGBM and numba alike; one thread times the work itself on a loaded machine, where every parallel
region waits for its threads to be scheduled):
LightGBM with ``categorical_feature=[0]`` (its defaults: cat_l2 10,
cat_smooth 10, max_cat_threshold 32, min_data_per_group 100,
max_cat_to_onehot 4), skinflint GBRT with ``categorical_features=[0]``
(the same defaults), skinflint GBRT on the code as a number (ordinal) and
on a one-hot encoding of the code.  Skinflint's numbers are the exported
model's on the reference runtime.  Prints test AUC, log-loss, training
seconds (the fastest of ``--repeat`` fits, after warm-up fits: numba's
compile or cache load is not timed) and the ratios to LightGBM's.
"""
import argparse
import os
import time

import numpy as np

TEST_ROWS = 20_000


def make_data(n, K, seed):
    """(X [n, 5] float32 with the category code in column 0, y) and the
    same law's test rows; the category effects are shared by both."""
    rng = np.random.default_rng(seed)
    weight = 1.0 / (np.arange(K) + 10.0)
    perm = rng.permutation(K)                 # frequent categories are not the small codes
    p = np.empty(K)
    p[perm] = weight / weight.sum()
    effect = rng.normal(size=K)

    def draw(m):
        c = rng.choice(K, m, p=p)
        x = rng.normal(size=(m, 4))
        logit = effect[c] + 0.5 * x[:, 0] - 0.5 * x[:, 1] + 0.3 * x[:, 2]
        y = (rng.random(m) < 1 / (1 + np.exp(-logit))).astype(np.int64)
        return np.c_[c, x].astype(np.float32), y
    return draw(n), draw(TEST_ROWS)


def one_hot(X, K):
    out = np.zeros((X.shape[0], K + X.shape[1] - 1), np.float32)
    out[np.arange(X.shape[0]), X[:, 0].astype(np.int64)] = 1.0
    out[:, K:] = X[:, 1:]
    return out


def scores(y, p):
    from sklearn.metrics import log_loss, roc_auc_score
    return roc_auc_score(y, p), log_loss(y, np.clip(p, 1e-15, 1 - 1e-15))


def run(K, args):
    import lightgbm as lgb

    from skinflint.trainers import GreedyMiserClassifier
    (X, y), (Xt, yt) = make_data(args.rows, K, seed=K)
    common = dict(n_estimators=args.trees, max_depth=6, learning_rate=0.1, min_samples_leaf=20,
                  random_state=0, verbose=0)
    rows = {}

    def timed_fit(make, *fit_args, **fit_kw):
        """(the last fitted model, the fastest of ``--repeat`` fits' seconds)."""
        best = np.inf
        for _ in range(args.repeat):
            est = make()
            t = time.perf_counter()
            est.fit(*fit_args, **fit_kw)
            best = min(best, time.perf_counter() - t)
        return est, best

    def fit_skinflint(label, Xtr, Xte, **kw):
        est, sec = timed_fit(lambda: GreedyMiserClassifier(**common, **kw), Xtr, y)
        rows[label] = (*scores(yt, est.predict_proba(Xte)[:, 1]), sec)

    booster, sec = timed_fit(lambda: lgb.LGBMClassifier(
        n_estimators=args.trees, num_leaves=63, max_depth=6, learning_rate=0.1, min_child_samples=20,
        min_child_weight=0.0, subsample=1.0, colsample_bytree=1.0, max_bin=255, n_jobs=args.threads,
        verbose=-1), X, y, categorical_feature=[0])
    rows["LightGBM categorical_feature"] = (*scores(yt, booster.predict_proba(Xt)[:, 1]), sec)
    fit_skinflint("skinflint categorical_features", X, Xt, categorical_features=[0])
    fit_skinflint("skinflint ordinal (code as a number)", X, Xt)
    if not args.no_onehot:
        fit_skinflint(f"skinflint one-hot ({K} columns)", one_hot(X, K), one_hot(Xt, K))
    ref_auc, ref_ll, ref_s = rows["LightGBM categorical_feature"]
    from skinflint.trainers.boosting.booster import BinnedData
    bins = BinnedData.from_X(X, categorical=np.array([True, False, False, False, False]))
    print(f"\n{K} categories, {int(bins.n_bins[0]) - 1} with a bin ({bins.binned.dtype} bins): "
          f"{args.rows} training rows, {TEST_ROWS} test rows, {args.trees} trees of depth 6, "
          f"{args.threads} threads")
    print("| trainer | test AUC | / LightGBM's | test log-loss | / LightGBM's | train s | / LightGBM's |")
    print("|---|---|---|---|---|---|---|")
    for label, (auc, ll, s) in rows.items():
        print(f"| {label} | {auc:.4f} | {auc / ref_auc:.4f} | {ll:.4f} | {ll / ref_ll:.3f} | {s:.2f} | "
              f"{s / ref_s:.2f} |")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--rows", type=int, default=50_000)
    ap.add_argument("--cardinalities", default="200,1000")
    ap.add_argument("--trees", type=int, default=100)
    ap.add_argument("--repeat", type=int, default=1, help="fits per trainer; the fastest is quoted")
    ap.add_argument("--no-onehot", action="store_true", help="skip the one-hot fits (the slowest)")
    ap.add_argument("--threads", type=int, default=os.cpu_count(), help="threads for LightGBM and numba")
    args = ap.parse_args()
    import numba
    numba.set_num_threads(min(args.threads, numba.config.NUMBA_NUM_THREADS))
    from skinflint.trainers import GreedyMiserClassifier
    # warm-up, not timed: numba's compile or cache load of every kernel (40,000 rows: the parallel partitions
    # too), for uint8 bins (50 categories) and uint16 bins (1000 categories: more than 255 bins)
    for K in (50, 1000):
        (Xw, yw), _ = make_data(40_000, K, seed=0)
        for kw in (dict(categorical_features=[0]), dict(categorical_features=[0], subsample=0.5), {}):
            GreedyMiserClassifier(n_estimators=2, max_depth=2, verbose=0, random_state=0, **kw).fit(Xw, yw)
    for K in (int(k) for k in args.cardinalities.split(",")):
        run(K, args)


if __name__ == "__main__":
    main()
