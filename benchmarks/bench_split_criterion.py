"""Greedy Miser's two split criteria side by side (issue 28 item 4).

    python benchmarks/bench_split_criterion.py [--data spambase,magic,letter] [--quick]

``split_criterion="newton"`` scores a split by the second-order gain with the
loss's hessians (XGBoost, LightGBM); ``"least_squares"`` is the thesis'
Eq. (2.5) for every loss: each tree is the least-squares fit of the negative
gradient.  Same data, splits, Yahoo-like costs, 150 trees of depth 4 and
rounds chosen on validation as ``benchmarks/compare.py``; Greedy Miser sweeps
its registry grid widened by 1/4 below (the least-squares bracket of the
log-loss is about 4x the Newton one, so the same lambda buys less), and
every number is the exported model's on the reference runtime.  Prints, per
data set and criterion: GBRT's test accuracy (lambda = 0), the cheapest
model within 1 point of the Newton GBRT's accuracy (its mean cost per row
and the fraction of that GBRT's), and the best accuracy of the sweep.
"""
from __future__ import annotations

import argparse
import time

from compare import LOADERS, _splits

from skinflint import datasets
from skinflint.trainers import TRAINERS, GreedyMiserClassifier, cost_accuracy_curve

CRITERIA = ("newton", "least_squares")


def sweep(name, quick):
    """{criterion: rows of cost_accuracy_curve} for data set ``name``."""
    ds = datasets.yahoo_like_costs(LOADERS[name](), seed=0)
    train, val, test = _splits(ds, quick)
    mean_cost = float(ds.feature_costs.mean())
    grid = TRAINERS["greedy-miser"].scaled_grid(mean_cost)
    lams = sorted({0.0, *grid, *(g / 4 for g in grid)})
    if quick:
        lams = lams[::3]
    out = {}
    for criterion in CRITERIA:
        est = GreedyMiserClassifier(n_estimators=30 if quick else 150, max_depth=3 if quick else 4,
                                    feature_costs=ds.costs, tree_eval_cost=1.0, random_state=0, verbose=0,
                                    split_criterion=criterion)
        t0 = time.perf_counter()
        out[criterion] = cost_accuracy_curve(est, {"cost_tradeoff": lams}, train.X, train.y, val.X, val.y,
                                             test.X, test.y, label=criterion, verbose=0)
        out[criterion + " s"] = time.perf_counter() - t0
    return out


def report(name, res, slack=0.01):
    gbrt = {c: next(r for r in res[c] if r["lam"] == 0.0) for c in CRITERIA}
    ref = gbrt["newton"]
    target = ref["accuracy"] - slack
    print(f"\n{name}: Newton GBRT {ref['accuracy']:.4f} at mean cost {ref['mean_cost']:.1f}; "
          f"cheapest within {100 * slack:g} point of it")
    print("| criterion | GBRT accuracy | cheapest within 1 pt: lambda, accuracy, mean cost, / Newton GBRT's "
          "| best accuracy | sweep s |")
    print("|---|---|---|---|---|")
    for c in CRITERIA:
        ok = [r for r in res[c] if r["accuracy"] >= target]
        best = max(r["accuracy"] for r in res[c])
        if ok:
            r = min(ok, key=lambda r: r["mean_cost"])
            cheap = (f"{r['lam']:.3g}, {r['accuracy']:.4f}, {r['mean_cost']:.1f}, "
                     f"{r['mean_cost'] / ref['mean_cost']:.3f}")
        else:
            cheap = "never"
        print(f"| {c} | {gbrt[c]['accuracy']:.4f} | {cheap} | {best:.4f} | {res[c + ' s']:.0f} |")


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--data", default="spambase,magic,letter")
    ap.add_argument("--quick", action="store_true", help="subsampled data, short grids")
    args = ap.parse_args(argv)
    for name in args.data.split(","):
        report(name, sweep(name, args.quick))


if __name__ == "__main__":
    main()
