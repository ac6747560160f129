"""skinflint.distributed on a local Dask cluster: batch scoring rows/s on 1
and 2 worker processes, and a lambda sweep serial against on the cluster.

    python benchmarks/bench_dask.py [--rows 2000000] [--trees 200] [--points 6]
                                    [--numba-threads 1] [--runtimes reference,c,onnx]

Scoring: a Greedy Miser model of ``--trees`` depth-4 trees over 20 features;
rows are generated on the workers (``dask.array.random``, float32, chunks of
``--chunk`` rows), so the client ships only the model (JSON text, once).  Each
run computes the cost sum and the positive count in one pass; the first run
builds the runtime on every worker and is reported apart ("warm-up").  The
in-process row is the same runtime's ``predict`` on the rows in memory.

Sweep: ``--points`` values of lambda, 200 depth-4 trees on ``--sweep-rows``
training rows, serial in this
process (``trainers.cost_accuracy_curve``) against one task per point on the
2-worker cluster (``distributed.cost_accuracy_curve``), with a check that the
tables and models are identical.

``--numba-threads`` (default 1) is each process's numba thread count (the
reference runtime and the trainers run rows in parallel with numba): with 1,
"2 workers" against "1 worker" measures what Dask adds; raise it to use
every core inside each worker.
"""
import argparse
import os
import sys


def parse():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rows", type=int, default=2_000_000)
    ap.add_argument("--chunk", type=int, default=100_000)
    ap.add_argument("--trees", type=int, default=200)
    ap.add_argument("--points", type=int, default=6)
    ap.add_argument("--sweep-rows", type=int, default=30_000)
    ap.add_argument("--numba-threads", type=int, default=1)
    ap.add_argument("--runtimes", default="reference,c,onnx")
    ap.add_argument("--skip-scoring", action="store_true")
    ap.add_argument("--malloc-trim", action="store_true",
                    help="keep Dask's MALLOC_TRIM_THRESHOLD_=65536 in the workers (default: drop it)")
    return ap.parse_args()


ARGS = parse() if __name__ == "__main__" else None
if ARGS is not None:       # before numba is imported here or in the spawned workers
    os.environ["NUMBA_NUM_THREADS"] = str(ARGS.numba_threads)
    os.environ.setdefault("OMP_NUM_THREADS", str(ARGS.numba_threads))

import numpy as np  # noqa: E402

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from common import timed  # noqa: E402  benchmarks/common.py, beside this script


def make_data(n, f=20, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, f)).astype(np.float32)
    y = ((X[:, 0] + X[:, 1] * X[:, 2] + 0.5 * X[:, 3] + rng.logistic(size=n) * 0.5) > 0).astype(np.int64)
    costs = np.round(np.linspace(1, 40, f))
    return X, y, costs


def scoring_model(trees):
    from skinflint.trainers import GreedyMiserClassifier
    X, y, costs = make_data(20_000)
    return GreedyMiserClassifier(n_estimators=trees, max_depth=4, cost_tradeoff=1e-4, feature_costs=costs,
                                 random_state=0, verbose=0).fit(X, y).model_


def bench_scoring(client, model, runtimes, rows, chunk):
    """rows/s per runtime on this client's cluster (after one warm-up run)."""
    import dask
    import dask.array as da

    from skinflint import distributed as sfd
    X = da.random.default_rng(1).standard_normal((rows, model.n_features), chunks=(chunk, -1), dtype=np.float32)
    out = {}
    for rt in runtimes:
        def run(rt=rt):
            p = sfd.predict(model, X, runtime=rt)
            return dask.compute(p.cost.sum(), (p.output == 1).sum())
        first, t_warm = timed(run)
        again, t = timed(run)
        assert first == again
        out[rt] = (rows / t, t_warm, t, float(again[0]) / rows)
    return out


def bench_local(model, runtimes, rows):
    """rows/s of each runtime's predict in this process, rows in memory."""
    from skinflint.verify import runtime as build
    X = np.random.default_rng(1).standard_normal((rows, model.n_features), dtype=np.float32)
    out = {}
    for rt in runtimes:
        r = build(rt, model)
        r.predict(X[:1000])
        _, t = timed(lambda r=r: r.predict(X))
        out[rt] = rows / t
    return out


def bench_sweep(client, points, n_train):
    from skinflint import distributed as sfd
    from skinflint import ir
    from skinflint.trainers import GreedyMiserClassifier, cost_accuracy_curve, format_table
    X, y, costs = make_data(n_train + 4000, seed=2)
    tr, va, te = slice(0, n_train), slice(n_train, n_train + 2000), slice(n_train + 2000, None)
    est = GreedyMiserClassifier(n_estimators=200, max_depth=4, feature_costs=costs, random_state=0, verbose=0)
    grid = {"cost_tradeoff": list(np.r_[0.0, np.logspace(-4, -1, points - 1)])}
    args = (est, grid, X[tr], y[tr], X[va], y[va], X[te], y[te])
    cost_accuracy_curve(est, {"cost_tradeoff": [0.0]}, *args[2:], verbose=0)      # numba compile/cache load
    serial, t_serial = timed(lambda: cost_accuracy_curve(*args, verbose=0))
    # numba cache loads on both workers: one point each
    sfd.cost_accuracy_curve(est, {"cost_tradeoff": [0.0, 1.0]}, *args[2:], client=client, verbose=0)
    dist, t_dist = timed(lambda: sfd.cost_accuracy_curve(*args, client=client, verbose=0))
    same = format_table(serial) == format_table(dist) and all(
        ir.to_json(a["model"]) == ir.to_json(b["model"]) for a, b in zip(serial, dist))
    fits = (sum(r["fit_time"] for r in serial), sum(r["fit_time"] for r in dist))
    return t_serial, t_dist, same, format_table(dist), fits


def main():
    import dask
    from distributed import Client, LocalCluster
    a = ARGS
    if not a.malloc_trim:
        # Dask's nanny sets MALLOC_TRIM_THRESHOLD_ in every worker, which makes
        # glibc mmap every large array afresh: the fits take 30-80% more CPU
        env = dict(dask.config.get("distributed.nanny.pre-spawn-environ"))
        env.pop("MALLOC_TRIM_THRESHOLD_", None)
        dask.config.set({"distributed.nanny.pre-spawn-environ": env})
    runtimes = [r for r in a.runtimes.split(",") if r]
    print(f"cpus: {os.cpu_count()}, numba threads per process: {a.numba_threads}, load average "
          f"{os.getloadavg()[0]:.1f}")
    model = scoring_model(a.trees)
    print(f"scoring model: {a.trees} trees, {model.n_features} features; {a.rows:,} rows in chunks of {a.chunk:,}")
    local_rows = min(a.rows, 500_000)
    local = {} if a.skip_scoring else bench_local(model, runtimes, local_rows)
    results = {}
    for n in (1, 2):
        if a.skip_scoring and n == 1:
            continue
        with LocalCluster(n_workers=n, processes=True, threads_per_worker=1, dashboard_address=None) as cl, \
                Client(cl) as client:
            if not a.skip_scoring:
                results[n] = bench_scoring(client, model, runtimes, a.rows, a.chunk)
            if n == 2:
                sweep = bench_sweep(client, a.points, a.sweep_rows)
    print(f"workers' MALLOC_TRIM_THRESHOLD_: {'kept (65536)' if a.malloc_trim else 'dropped'}")
    if not a.skip_scoring:
        print_scoring(runtimes, local, results, local_rows)
    t_serial, t_dist, same, table, fits = sweep
    print(f"\nlambda sweep, {a.points} points x 200 trees on {a.sweep_rows:,} rows: serial {t_serial:.2f} s, "
          f"2 workers {t_dist:.2f} s, speed-up {t_serial / t_dist:.2f}x; tables and models identical: {same}")
    print(f"sum of the points' fit times: serial {fits[0]:.2f} s, on the workers {fits[1]:.2f} s")
    print(table)


def print_scoring(runtimes, local, results, local_rows):
    print(f"\n{'runtime':<10} {'in-process rows/s':>18} {'1 worker rows/s':>16} {'2 workers rows/s':>17} "
          f"{'2w / 1w':>8} {'warm-up 1w s':>13} {'warm-up 2w s':>13}")
    for rt in runtimes:
        r1, r2 = results[1][rt], results[2][rt]
        assert r1[3] == r2[3], "the mean cost differs between 1 and 2 workers"
        print(f"{rt:<10} {local[rt]:>18,.0f} {r1[0]:>16,.0f} {r2[0]:>17,.0f} {r2[0] / r1[0]:>8.2f} "
              f"{r1[1]:>13.2f} {r2[1]:>13.2f}")
    print(f"(in-process: {local_rows:,} rows in memory; mean cost per row {results[2][runtimes[0]][3]:.4f}, "
          "equal on 1 and 2 workers)")


if __name__ == "__main__":
    main()
