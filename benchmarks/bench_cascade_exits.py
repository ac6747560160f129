"""Cronus and CSCC with and without the exits retrofitted on validation
(``retrofit_exits``, issue 28 item 3), on compare.py's data, splits, costs,
trees and lambda grid.

Each model is fitted as compare.py fits it (``eval_set`` = its validation
split), with ``retrofit_exits`` as given (``--retrofit False`` is the model of
before).  Per data set: GBRT's test accuracy and mean cost (compare.py's
GBRT), every model's test accuracy and mean cost, and the summary compare.py
prints: the cheapest model within 1 point of GBRT's accuracy, as a fraction
of GBRT's cost, and the best accuracy at mean cost <= 5 % of all features.

    python benchmarks/bench_cascade_exits.py --data magic --trainers cronus,cscc [--lambdas 0,1,2]
    python benchmarks/bench_cascade_exits.py --data magic --retrofit False
"""
from __future__ import annotations

import argparse
import os
import sys
import time

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import compare  # noqa: E402

from skinflint import datasets  # noqa: E402
from skinflint.runtimes.reference import predict  # noqa: E402
from skinflint.trainers import TRAINERS, cost_accuracy_curve  # noqa: E402


def _test(model, test):
    p = predict(model, test.X)
    return float(np.mean(p.output == test.y)), float(p.cost.mean())


def run(name, trainers, which=None, slack=0.01, retrofit=True):
    ds = datasets.yahoo_like_costs(compare.LOADERS[name](), seed=0)
    train, val, test = compare._splits(ds, False)
    common = dict(n_estimators=150, max_depth=4, feature_costs=ds.costs, tree_eval_cost=1.0, random_state=0,
                  verbose=0)
    mean_cost = float(ds.feature_costs.mean())
    g = TRAINERS["gbrt"]
    gr = cost_accuracy_curve(g.estimator("classification", **common), compare._grid(g, False, mean_cost),
                             train.X, train.y, val.X, val.y, test.X, test.y, choose_rounds=g.choose_rounds,
                             verbose=0)[0]
    ref_acc, ref_cost = gr["accuracy"], gr["mean_cost"]
    print(f"== {name}: GBRT {ref_acc:.4f} @ {ref_cost:.1f}; target accuracy >= {ref_acc - slack:.4f}", flush=True)
    for t in trainers:
        spec = TRAINERS[t]
        grid = compare._grid(spec, False, mean_cost)[spec.sweep]
        idx = range(len(grid)) if which is None else which
        rows = []
        for i in idx:
            t0 = time.perf_counter()
            est = spec.estimator("classification", **common).set_params(**{spec.sweep: grid[i]},
                                                                         retrofit_exits=retrofit)
            est.fit(train.X, train.y, eval_set=(val.X, val.y))
            acc, cost = _test(est.model_, test)
            rows.append((acc, cost))
            print(f"  {spec.label} lambda={grid[i]:.3g}: {acc:.4f} @ {cost:.1f} ({est.best_params_}, "
                  f"{time.perf_counter() - t0:.0f} s)", flush=True)
        ok = [r for r in rows if r[0] >= ref_acc - slack]
        best = min(ok, key=lambda p: p[1]) if ok else None
        print(f"  {spec.label}: " + (f"never (best {max(r[0] for r in rows):.4f})" if best is None
              else f"{best[0]:.4f} @ {best[1]:.1f} = {best[1] / ref_cost:.2f} of GBRT's cost"), flush=True)
        cap = 0.05 * float(ds.feature_costs.sum())
        cheap = [r[0] for r in rows if r[1] <= cap]
        print(f"  {spec.label}: best accuracy at cost <= {cap:.0f}: " + (f"{max(cheap):.4f}" if cheap else "-"),
              flush=True)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--data", default="spambase,magic,letter")
    ap.add_argument("--trainers", default="cronus,cscc")
    ap.add_argument("--lambdas", default=None, help="indices into the grid (default: all)")
    ap.add_argument("--retrofit", default="True", help="retrofit_exits: True, False or a level")
    args = ap.parse_args(argv)
    which = None if args.lambdas is None else [int(i) for i in args.lambdas.split(",")]
    retrofit = {"True": True, "False": False}.get(args.retrofit) if args.retrofit in ("True", "False") \
        else float(args.retrofit)
    for name in args.data.split(","):
        run(name, args.trainers.split(","), which, retrofit=retrofit)


if __name__ == "__main__":
    main()
