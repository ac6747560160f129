"""BudgetPrune on imported forests against retraining (issue 31).

    python benchmarks/bench_compress.py [--quick] [--out compress-results] [--data spambase,magic,letter]
    python benchmarks/bench_compress.py --timing [--trees 500 --rows 50000]
    python benchmarks/bench_compress.py --replot --out compress-results

For each data set: compare.py's seeded train / validation / test split and
Yahoo-like feature costs, tree evaluation cost e_t = 1 for every model (the
seeds' cost unit).  Two source forests (scikit-learn RandomForest, LightGBM
``boosting="rf"``) are imported, then pruned with BudgetPrune at several
lambda on the validation rows (the seconds given are per lambda: the mean
of one sweep, whose validation routing is shared); against them Greedy Miser (skinflint) and
LightGBM CEGB (``cegb_penalty_feature_coupled`` = the costs) are retrained
over their trade-off grids.  A LightGBM booster (the same parameters as
CEGB's, without the penalty) is pruned too (boosted BudgetPrune, leaves
refitted to its loss) and gets retrofitted Early Exit checkpoints.  Every number is the exported model's on the
test rows (reference runtime): accuracy and mean lazy cost per row, plus
the seconds to compress or to train.  Prints, per data set, the cheapest
model of each method within 1 point of the source forest's accuracy, and
writes ``<data>.md`` and one plot ``compress.png`` to ``--out``.

``--timing``: issue 31's case, one BudgetPrune run on a ``--trees``-tree
scikit-learn RandomForest over ``--rows`` validation rows (synthetic data,
500 and 50,000 by default), its wall and CPU seconds printed with the ratio
to the one-minute target (``taskset -c 0,1`` emulates the 2-core machine).
"""
from __future__ import annotations

import argparse
import os
import sys
import time

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from compare import LOADERS, _splits  # noqa: E402

from skinflint import datasets  # noqa: E402
from skinflint.compress import prune_curve, retrofit_exits  # noqa: E402
from skinflint.importers import from_lightgbm, from_sklearn  # noqa: E402
from skinflint.ir import builders  # noqa: E402
from skinflint.runtimes.reference import ReferenceRuntime  # noqa: E402

# lambda x (the source's mean cost): the error a whole source's cost is worth
FRACTIONS = (0.0, 0.01, 0.03, 0.1, 0.2, 0.4, 0.7, 1.0, 2.0)
TOLERANCES = (0.0, 0.005, 0.01, 0.02)   # retrofitted exits: fraction of validation labels allowed to change
TARGET_S = 60.0         # issue 31: one BudgetPrune run, 500-tree sklearn forest, 50k rows, under a minute on 2 cores
GBDT = {"objective": "binary", "num_leaves": 15, "learning_rate": 0.1, "verbose": -1, "num_threads": 2, "seed": 0}


def with_tree_cost(model, e_t=1.0):
    """The same model with every tree of its bank costing ``e_t``."""
    b = model.nodes[model.output]
    bank = builders.trees_from_arrays(b.feature, b.threshold, b.left, b.right, b.value, roots=b.roots,
                                      missing_left=b.missing_left, tree_cost=np.full(b.n_trees, e_t),
                                      base_score=b.base_score, name=b.name, precision=b.precision,
                                      divisor=b.divisor)
    return builders.model(list(model.features), [bank], 0, task=model.task, groups=list(model.groups),
                          metadata=model.metadata)


def _row(method, model, test, seconds):
    p = ReferenceRuntime(model).predict(test.X)
    return {"method": method, "accuracy": float(np.mean(p.output == test.y)), "mean_cost": float(p.cost.mean()),
            "seconds": seconds, "trees": int(model.nodes[0].n_trees)}   # node 0: the bank, in every model here


def sources(train, costs, quick):
    """(name, imported model with e_t = 1, seconds to train) of each source:
    two forests and a LightGBM booster (the CEGB grid's tradeoff 0 model)."""
    import lightgbm as lgb
    from sklearn.ensemble import RandomForestClassifier
    n = 30 if quick else 100
    t0 = time.perf_counter()
    rf = RandomForestClassifier(n, min_samples_leaf=3, random_state=0, n_jobs=2).fit(train.X, train.y)
    t_rf = time.perf_counter() - t0
    t0 = time.perf_counter()
    b = lgb.train({"objective": "binary", "boosting": "rf", "bagging_freq": 1, "bagging_fraction": 0.7,
                   "feature_fraction": 0.7, "num_leaves": 63, "verbose": -1, "num_threads": 2, "seed": 0},
                  lgb.Dataset(train.X, train.y), n)
    t_lgb = time.perf_counter() - t0
    t0 = time.perf_counter()
    g = lgb.train(GBDT, lgb.Dataset(train.X, train.y), 30 if quick else 150)
    t_gbdt = time.perf_counter() - t0
    return [("sklearn RF", with_tree_cost(from_sklearn(rf, costs)), t_rf),
            ("LightGBM rf", with_tree_cost(from_lightgbm(b, costs)), t_lgb),
            ("LightGBM", with_tree_cost(from_lightgbm(g, costs)), t_gbdt)]


def compressed(name, model, val, test):
    """BudgetPrune over the lambda grid; for a booster also retrofitted exits."""
    full = float(ReferenceRuntime(model).predict(val.X).cost.mean())
    lambdas = [f / full for f in FRACTIONS]
    t0 = time.perf_counter()
    curve = prune_curve(model, val.X, val.y, lambdas)
    per = (time.perf_counter() - t0) / len(lambdas)   # routing is shared: the mean per lambda
    rows = [_row(f"{name} BudgetPrune (lambda={r['lambda']:.3g})", r["result"].model, test, per) for r in curve]
    if model.nodes[0].divisor == 1.0:
        for tol in TOLERANCES:
            t0 = time.perf_counter()
            r = retrofit_exits(model, val.X, every=10, tolerance=tol)
            rows.append(_row(f"{name} exits (tolerance={tol:g}, {r.order})", r.model, test,
                             time.perf_counter() - t0))
    return rows


def retrained(ds, train, val, test, quick):
    import lightgbm as lgb

    from skinflint.trainers import TRAINERS
    rows = []
    spec = TRAINERS["greedy-miser"]
    n = 30 if quick else 150
    grid = spec.scaled_grid(float(ds.feature_costs.mean()))
    for lam in (grid[::2] if quick else grid):
        est = spec.estimator("classification", n_estimators=n, max_depth=4, feature_costs=ds.costs,
                             tree_eval_cost=1.0, random_state=0, verbose=0, cost_tradeoff=lam)
        t0 = time.perf_counter()
        est.fit(train.X, train.y, eval_set=(val.X, val.y)) if _takes_eval_set(est) else est.fit(train.X, train.y)
        rows.append(_row(f"Greedy Miser (lambda={lam:.3g})", est.to_ir(), test, time.perf_counter() - t0))
    for tradeoff in ((0.1, 1.0) if quick else (0.1, 0.3, 1.0, 3.0, 10.0)):
        t0 = time.perf_counter()
        b = lgb.train({**GBDT, "cegb_tradeoff": tradeoff, "cegb_penalty_feature_coupled": list(ds.feature_costs)},
                      lgb.Dataset(train.X, train.y), n)
        rows.append(_row(f"LightGBM CEGB (tradeoff={tradeoff:g})", with_tree_cost(from_lightgbm(b, ds.costs)),
                         test, time.perf_counter() - t0))
    return rows


def _takes_eval_set(est):
    import inspect
    return "eval_set" in inspect.signature(est.fit).parameters


def cheapest_within(rows, target):
    """Per method, its cheapest row at accuracy >= target, or None (never)."""
    out = {}
    for r in rows:
        m = r["method"].split(" (")[0]
        out.setdefault(m, None)
        if r["accuracy"] >= target and (out[m] is None or r["mean_cost"] < out[m]["mean_cost"]):
            out[m] = r
    return out


def run(name, quick):
    ds = datasets.yahoo_like_costs(LOADERS[name](), seed=0)
    train, val, test = _splits(ds, quick)
    rows, refs = [], []
    for src, model, fit_s in sources(train, ds.costs, quick):
        ref = _row(f"{src} (source)", model, test, fit_s)
        refs.append(ref)
        rows += [ref] + compressed(src, model, val, test)
    rows += retrained(ds, train, val, test, quick)
    lines = [f"### {name}: {len(ds.y)} rows x {ds.X.shape[1]} features, Yahoo-like costs, e_t = 1", "",
             "| model | accuracy | mean cost/row | trees | seconds |", "|---|---|---|---|---|"]
    lines += [f"| {r['method']} | {r['accuracy']:.4f} | {r['mean_cost']:.1f} | {r['trees']} | {r['seconds']:.2f} |"
              for r in rows]
    for ref in refs:
        best = cheapest_within(rows, ref["accuracy"] - 0.01)
        lines += ["", f"#### {name}: cheapest within 1 point of {ref['method']} ({ref['accuracy']:.4f}, "
                      f"cost {ref['mean_cost']:.1f})", "",
                  "| method | model | accuracy | mean cost/row | cost / source's | seconds |",
                  "|---|---|---|---|---|---|"]
        for m, r in best.items():
            if r is None:
                top = max(x["accuracy"] for x in rows if x["method"].split(" (")[0] == m)
                lines.append(f"| {m} | never (best {top:.4f}) | | | | |")
                continue
            lines.append(f"| {m} | {r['method']} | {r['accuracy']:.4f} | {r['mean_cost']:.1f} | "
                         f"{r['mean_cost'] / ref['mean_cost']:.2f} | {r['seconds']:.2f} |")
    return rows, "\n".join(lines)


def plot(results, path):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    fig, axes = plt.subplots(1, len(results), figsize=(5 * len(results), 4), squeeze=False)
    for ax, (name, rows) in zip(axes[0], results.items(), strict=True):
        # the region that matters: from 0.1 below the least accurate source up; the constant models
        # that high lambdas leave (the majority class's accuracy, cost 0) lie below it and are left out
        lo = min(r["accuracy"] for r in rows if r["method"].endswith("(source)")) - 0.1
        shown = [r for r in rows if r["accuracy"] >= lo and r["mean_cost"] > 0]
        groups = {}
        for r in shown:
            groups.setdefault(r["method"].split(" (")[0], []).append(r)
        for m, g in groups.items():
            g = sorted(g, key=lambda r: r["mean_cost"])
            ax.plot([r["mean_cost"] for r in g], [r["accuracy"] for r in g], "o-" if len(g) > 1 else "s",
                    label=m, markersize=4)
        ax.set_xscale("log")
        ax.set_ylim(lo, max(r["accuracy"] for r in rows) + 0.01)
        ax.set_title(f"{name} (models below {lo:.2f} not shown)")
        ax.set_xlabel("mean cost per test row")
        ax.set_ylabel("test accuracy")
        ax.grid(alpha=0.3)
    axes[0][0].legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(path, dpi=110)


def timing(n_trees, n_rows):
    """One BudgetPrune run, wall and CPU seconds of each phase.  The CPU
    seconds (both threads together) tell the work apart from a shared
    machine's load, which the load average printed with them shows."""
    import resource

    from sklearn.datasets import make_classification
    from sklearn.ensemble import RandomForestClassifier

    from skinflint.compress import budget_prune
    from skinflint.compress.budget_prune import _Problem
    X, y = make_classification(2 * n_rows, n_features=20, n_informative=10, random_state=0)
    X = X.astype(np.float32)
    costs = datasets.yahoo_like_costs(datasets.Dataset(X, y, [f"x{i}" for i in range(20)], np.ones(20))).costs
    t0 = time.perf_counter()
    rf = RandomForestClassifier(n_trees, max_depth=10, random_state=0, n_jobs=2).fit(X[:n_rows], y[:n_rows])
    t_fit = time.perf_counter() - t0
    m = from_sklearn(rf, costs)
    budget_prune(m, X[n_rows:n_rows + 200], y[n_rows:n_rows + 200], 1e-3)   # numba compiles (cached) here
    Xv, yv = X[n_rows:], y[n_rows:]
    w0, c0 = time.perf_counter(), time.process_time()
    problem = _Problem(m, Xv, yv)
    w1, c1 = time.perf_counter(), time.process_time()
    r = budget_prune(m, Xv, yv, 1e-3, _problem=problem)
    w2, c2 = time.perf_counter(), time.process_time()
    S = problem.t_node.shape[0]
    print(f"BudgetPrune: {n_trees} trees ({m.nodes[0].feature.shape[0]} nodes, depth <= 10) over {n_rows} "
          f"validation rows, {S} (tree, row, unit) first touches ({S / (n_trees * n_rows):.1f} per tree "
          f"and row): {w2 - w0:.1f} s wall, {c2 - c0:.1f} s CPU (routing and grouping {w1 - w0:.1f} s wall / "
          f"{c1 - c0:.1f} s CPU, the solve at lambda = 1e-3 {w2 - w1:.1f} s / {c2 - c1:.1f} s); "
          f"peak memory of the process {resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2 ** 20:.1f} GiB; "
          f"load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores. The forest trained on {n_rows} "
          f"rows in {t_fit:.1f} s. Kept {r.n_trees} trees, {r.n_nodes} nodes, mean cost {r.cost:.1f}")
    # issue 31's target: under a minute on a 2-core machine (run under `taskset -c 0,1` to emulate one).
    # On a shared machine the wall time carries the others' load; CPU seconds / cores bounds an idle one's.
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    print(f"target < {TARGET_S:.0f} s on 2 cores: wall {w2 - w0:.1f} s = {(w2 - w0) / TARGET_S:.2f} x the target; "
          f"CPU {c2 - c0:.1f} s over {cores} cores = at least {(c2 - c0) / cores:.1f} s wall idle "
          f"({(c2 - c0) / cores / TARGET_S:.2f} x the target)")


def rows_from_md(path):
    """The rows of a ``<data>.md`` this script wrote (its first table), to
    redraw the plot without running again."""
    rows = []
    with open(path) as fh:
        for line in fh:
            if line.startswith("####"):
                break
            cells = [c.strip() for c in line.strip().strip("|").split("|")]
            if len(cells) == 5 and cells[0] not in ("model", "---"):
                rows.append({"method": cells[0], "accuracy": float(cells[1]), "mean_cost": float(cells[2]),
                             "trees": int(cells[3]), "seconds": float(cells[4])})
    return rows


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--out", default="compress-results")
    ap.add_argument("--data", default="spambase,magic,letter")
    ap.add_argument("--timing", action="store_true")
    ap.add_argument("--trees", type=int, default=500)
    ap.add_argument("--rows", type=int, default=50000)
    ap.add_argument("--replot", action="store_true", help="redraw --out's plot from its <data>.md tables")
    args = ap.parse_args(argv)
    if args.timing:
        timing(args.trees, args.rows)
        return
    if args.replot:
        plot({n: rows_from_md(os.path.join(args.out, f"{n}.md")) for n in args.data.split(",")},
             os.path.join(args.out, "compress.png"))
        return
    os.makedirs(args.out, exist_ok=True)
    results = {}
    t0 = time.perf_counter()
    for name in args.data.split(","):
        rows, text = run(name, args.quick)
        results[name] = rows
        print(text, "\n", flush=True)
        with open(os.path.join(args.out, f"{name}.md"), "w") as fh:
            fh.write(text + "\n")
    plot(results, os.path.join(args.out, "compress.png"))
    print(f"total {time.perf_counter() - t0:.0f} s; plot {os.path.join(args.out, 'compress.png')}")


if __name__ == "__main__":
    main()
