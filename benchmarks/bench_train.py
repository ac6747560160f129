"""Training time: skinflint GBRT and Greedy Miser against scikit-learn's
HistGradientBoostingClassifier, LightGBM and XGBoost hist, side by side in
one run, at given thread counts (issue 29).

    python benchmarks/bench_train.py --scale 200k --threads 1,2,all [--repeat 3] [--only gbrt,lightgbm]
    python benchmarks/bench_train.py --scale yahoo --objective squared ...


Scales: ``small`` (20,000 x 100, a quick check), ``200k`` (200,000 x 100,
dense Gaussian features) and ``yahoo`` (473,134 x 519 Yahoo-LTR-shaped rows,
sparse: each feature is zero below a random quantile between 20 % and 95 %,
as LTR features are, and the task is relevance >= 3).  Settings: 100 trees,
depth 6 (63 leaves), 255 bins, learning rate 0.1, binary log-loss, float32
dense X, at least 20 rows per leaf; Greedy Miser with cost_tradeoff 1e-3
(lambda > 0: the cost penalty is in its split search).  ``--objective
squared`` fits regressors with squared loss instead (skinflint's
GreedyMiserRegressor, HistGradientBoostingRegressor, LGBMRegressor,
XGBRegressor): on the relevance grade 0-4 at Yahoo size, as the seeds
trained, and on the dense target's logit at the other scales; the held-out
score is then R^2.  (The LambdaMART objective is timed against LightGBM's
lambdarank by ``benchmarks/bench_rank.py --timing``: it needs query groups.)

Every round fits every trainer once, in an order that rotates by round, so a
slow spell of a shared machine does not land on one trainer; the table
quotes each trainer's median wall time over the rounds and the ratio of
skinflint's to the fastest anchor's.  The first skinflint fit (numba's
compile or cache load) happens before any timing.
"""
import argparse
import os
import time

import numpy as np

SCALES = {"small": (20_000, 100), "200k": (200_000, 100), "yahoo": (473_134, 519)}
HOLDOUT = 20_000


def make_dense(n, f, seed=0):
    """Gaussian features, a logistic target with interactions, costs 1-20;
    (X, binary label, regression target: the noisy logit, costs)."""
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, f)).astype(np.float32)
    w = rng.normal(size=f) * (rng.random(f) < 0.3)
    logit = X @ w + np.sin(2 * X[:, 0]) * 2 + X[:, 1] * X[:, 2]
    noisy = logit + rng.logistic(size=n)
    return X, (noisy > 0).astype(np.int64), noisy, np.round(rng.uniform(1, 20, size=f))


def make_yahoo(n, f, seed=0):
    """Yahoo-LTR-shaped rows (skinflint.datasets.make_yahoo_like, its costs)
    made sparse: feature j keeps its values above its q_j quantile and is an
    exact zero below, q_j ~ U(0.2, 0.95).  (X, relevance >= 3, the relevance
    grade 0-4, costs)."""
    from skinflint.datasets import make_yahoo_like
    ds = make_yahoo_like(int(n / 23.0) + 1, f, seed=seed)
    X, grade = ds.X[:n], ds.y[:n].astype(np.float64)
    rng = np.random.default_rng(seed + 1)
    q = rng.uniform(0.2, 0.95, f)
    for a in range(0, f, 64):     # column blocks keep the temporaries small
        b = min(a + 64, f)
        cut = np.quantile(X[:20_000, a:b], q[a:b], axis=0).diagonal().astype(np.float32)
        X[:, a:b][X[:, a:b] <= cut] = 0.0
    return np.ascontiguousarray(X), (grade >= 3).astype(np.int64), grade, np.asarray(ds.feature_costs[:f], np.float64)


def contenders(T, costs, threads, objective="binary"):
    """(name, is an anchor, make an estimator) per trainer: classifiers with
    binary log-loss, or regressors with squared loss (``objective``)."""
    from skinflint.trainers import GreedyMiserClassifier, GreedyMiserRegressor
    squared = objective == "squared"
    ours = GreedyMiserRegressor if squared else GreedyMiserClassifier

    def sk(lam):
        return lambda: ours(n_estimators=T, max_depth=6, min_samples_leaf=20, learning_rate=0.1,
                                             max_bins=255, cost_tradeoff=lam, feature_costs=costs,
                                             random_state=0, verbose=0)
    out = [("skinflint GBRT", False, sk(0.0)), ("skinflint Greedy Miser (lambda 1e-3)", False, sk(1e-3))]
    from sklearn.ensemble import HistGradientBoostingClassifier, HistGradientBoostingRegressor
    hgb = HistGradientBoostingRegressor if squared else HistGradientBoostingClassifier
    out.append(("sklearn HGB", True, lambda: hgb(
        max_iter=T, max_leaf_nodes=63, max_depth=6, learning_rate=0.1, max_bins=255, min_samples_leaf=20,
        early_stopping=False, random_state=0)))
    try:
        import lightgbm as lgb
        lgbm = lgb.LGBMRegressor if squared else lgb.LGBMClassifier
        out.append(("LightGBM", True, lambda: lgbm(
            n_estimators=T, num_leaves=63, max_depth=6, learning_rate=0.1, max_bin=255, min_child_samples=20,
            n_jobs=threads, verbose=-1, random_state=0)))
    except ImportError:
        print("(LightGBM not installed: pip install lightgbm)")
    try:
        import xgboost as xgb
        xgbm = xgb.XGBRegressor if squared else xgb.XGBClassifier
        out.append(("XGBoost hist", True, lambda: xgbm(
            n_estimators=T, max_depth=6, learning_rate=0.1, tree_method="hist", max_bin=255, n_jobs=threads,
            random_state=0)))
    except ImportError:
        print("(XGBoost not installed: pip install xgboost)")
    return out


def fit_timed(make, threads, X, y):
    """(model, wall s, process CPU s) of one fit on ``threads`` threads."""
    import numba
    from threadpoolctl import threadpool_limits
    numba.set_num_threads(threads)
    with threadpool_limits(limits=threads):   # OpenMP (scikit-learn) and BLAS
        w, c = time.perf_counter(), time.process_time()
        model = make().fit(X, y)
        return model, time.perf_counter() - w, time.process_time() - c


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--scale", choices=sorted(SCALES), default="200k")
    ap.add_argument("--threads", default="1,2,all", help="comma-separated thread counts; 'all' is every core")
    ap.add_argument("--trees", type=int, default=100)
    ap.add_argument("--repeat", type=int, default=3, help="rounds; each fits every trainer once")
    ap.add_argument("--omp-wait", choices=["default", "passive"], default="default",
                    help="OMP_WAIT_POLICY for every OpenMP library here (numba's omp layer, scikit-learn, LightGBM, "
                         "XGBoost); 'passive' stops idle threads spinning, which on a loaded machine costs them all "
                         "several times their CPU")
    ap.add_argument("--only", default="",
                    help="comma-separated parts of trainer names (case-insensitive, e.g. 'gbrt,lightgbm'): fit only "
                         "those; the ratios then take the fastest of the anchors fitted")
    ap.add_argument("--objective", choices=["binary", "squared"], default="binary",
                    help="binary log-loss (classifiers) or squared loss (regressors; at Yahoo size on the relevance "
                         "grade 0-4, as the seeds trained)")
    args = ap.parse_args()
    if args.omp_wait == "passive":   # read once, when each OpenMP runtime loads: before any import below
        os.environ["OMP_WAIT_POLICY"] = "PASSIVE"
    import numba
    cores = os.cpu_count()
    threads = sorted({min(cores, numba.config.NUMBA_NUM_THREADS) if t == "all" else int(t)
                      for t in args.threads.split(",")})
    n, f = SCALES[args.scale]
    X, label, target, costs = (make_yahoo if args.scale == "yahoo" else make_dense)(n + HOLDOUT, f)
    y = target if args.objective == "squared" else label
    Xtr, ytr, Xte, yte = X[:-HOLDOUT], y[:-HOLDOUT], X[-HOLDOUT:], y[-HOLDOUT:]
    zeros = float((Xtr[:50_000] == 0).mean())
    from skinflint.trainers import GreedyMiserClassifier, GreedyMiserRegressor
    warm = GreedyMiserRegressor if args.objective == "squared" else GreedyMiserClassifier
    _, t_first, _ = fit_timed(lambda: warm(n_estimators=2, verbose=0), 1, Xtr[:2000], ytr[:2000])
    load0 = os.getloadavg()[0]
    rows = []
    for t in threads:
        entries = contenders(args.trees, costs, t, args.objective)
        if args.only:
            keys = [k.strip().lower() for k in args.only.split(",") if k.strip()]
            entries = [e for e in entries if any(k in e[0].lower() for k in keys)]
            if not any(anchor for _, anchor, _ in entries) or all(anchor for _, anchor, _ in entries):
                raise SystemExit(f"--only {args.only!r}: name at least one skinflint trainer and one anchor")
        wall = {name: [] for name, _, _ in entries}
        cpu = {name: [] for name, _, _ in entries}
        acc = {}
        for r in range(args.repeat):
            for name, _, make in entries[r % len(entries):] + entries[:r % len(entries)]:
                model, w, c = fit_timed(make, t, Xtr, ytr)
                wall[name].append(w)
                cpu[name].append(c)
                acc[name] = model.score(Xte, yte)
                print(f"  threads {t} round {r + 1}: {name:<38} {w:7.2f} s wall {c:7.2f} s CPU", flush=True)
        rows.append((t, entries, {k: np.median(v) for k, v in wall.items()},
                     {k: np.median(v) for k, v in cpu.items()}, acc))
    load1 = os.getloadavg()[0]
    loss = "squared loss" if args.objective == "squared" else "binary log-loss"
    print(f"\n{Xtr.shape[0]:,} x {f} ({args.scale}; {zeros:.0%} exact zeros), {args.trees} trees, depth 6 / 63 leaves, "
          f"255 bins, lr 0.1, {loss}; {cores} cores, load average {load0:.1f} at start, {load1:.1f} at end; "
          f"median of {args.repeat} interleaved rounds; OMP_WAIT_POLICY {os.environ.get('OMP_WAIT_POLICY', 'unset')}, "
          f"numba threading layer {numba.threading_layer()}; skinflint first fit (compile/cache load) {t_first:.1f} s")
    names = [name for name, _, _ in rows[0][1]]
    anchors = [name for name, anchor, _ in rows[0][1] if anchor]
    ours = [(name, "GBRT" if "GBRT" in name else "Greedy Miser") for name, anchor, _ in rows[0][1] if not anchor]
    print("| threads | " + " | ".join(names) + " | " + " | ".join(f"{short} / fastest" for _, short in ours) + " |")
    print("|---" * (len(names) + 1 + len(ours)) + "|")
    for t, _, w, _, _ in rows:
        fastest = min(w[a] for a in anchors)
        print(f"| {t} | " + " | ".join(f"{w[k]:.1f} s" for k in names) + " | "
              + " | ".join(f"{w[k] / fastest:.2f}x" for k, _ in ours) + " |")
    print(f"\nprocess CPU seconds (median), and held-out {'R^2' if args.objective == 'squared' else 'accuracy'}:")
    for t, _, _, c, a in rows:
        fastest = min(c[k] for k in anchors)   # the anchor with the least CPU time, which may not be the wall's
        print(f"  threads {t}: " + "; ".join(f"{k} {c[k]:.1f} s / {a[k]:.4f}" for k in names)
              + "; CPU / fastest anchor's: " + ", ".join(f"{short} {c[k] / fastest:.2f}x" for k, short in ours))
    if cores < 8:
        print(f"\n(only {cores} cores here: no many-core figures in this run)")


if __name__ == "__main__":
    main()
