"""CSTC vs ASTC on Spambase (with its descriptor groups): training time at
matched node budgets (Kusner et al. 2014, "Training time speed-up": ASTC's
per-node budgets read off each CSTC tree), accuracy and mean cost from the
exported IR on the reference runtime; then the tree against a single node
(thesis §3.7.2): best depth-3 vs best depth-1 accuracy at the same cost bound.

    python benchmarks/bench_trees.py [--lambdas N] [--bound COST]

Prints one row per lambda and the median speed-up.  Timings are CPU time
(``time.process_time``; both trainers run BLAS on one thread), so a busy
shared machine slows the wall clock but not the ratio much.
"""
from __future__ import annotations

import argparse
import time

import numpy as np

from skinflint.datasets import load_spambase
from skinflint.runtimes.reference import predict
from skinflint.trainers.astc import ASTCClassifier, node_budgets_from
from skinflint.trainers.cstc import CSTCClassifier


def costs_of(d):
    return dict(feature_costs=d.feature_costs, feature_groups=d.feature_groups,
                group_costs=d.group_costs)


def evaluate(model, X, y):
    p = predict(model, X)
    return float(np.mean(p.output == y)), float(p.cost.mean())


def timed_fit(est, X, y):
    t = time.process_time()
    est.fit(X, y)
    return est, time.process_time() - t


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--lambdas", type=int, default=8, help="points of the lambda grid to run")
    ap.add_argument("--bound", type=float, default=62.0, help="cost bound of the depth comparison")
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args(argv)
    d = load_spambase()
    tr, te = d.split(0.25, seed=args.seed)
    kw = dict(costs_of(d), rho=1e-4)
    grid = CSTCClassifier(**kw).lambda_grid(tr.X, tr.y)
    lams = grid[4:4 + 2 * args.lambdas:2]
    ASTCClassifier(budget=1.0, max_depth=1, **costs_of(d)).fit(tr.X[:50], tr.y[:50])  # compile
    print(f"Spambase {tr.X.shape[0]} train / {te.X.shape[0]} test rows, {d.X.shape[1]} features, "
          f"{len(d.group_costs)} groups; depth 3; static cost {d.feature_costs.sum() + d.group_costs.sum():.0f}")
    print(f"{'lambda':>9} {'CSTC acc':>9} {'cost':>7} {'fit s':>7} | {'ASTC acc':>9} {'cost':>7} "
          f"{'fit s':>7} | {'speed-up':>8} {'d acc':>7} {'cost ratio':>10}")
    ratios, depth = [], {1: [], 3: []}
    for lam in lams:
        cs, t_c = timed_fit(CSTCClassifier(cost_tradeoff=lam, max_depth=3, **kw), tr.X, tr.y)
        a_c, c_c = evaluate(cs.model_, te.X, te.y)
        depth[3].append((a_c, c_c))
        one = CSTCClassifier(cost_tradeoff=lam, max_depth=1, **kw).fit(tr.X, tr.y)
        depth[1].append(evaluate(one.model_, te.X, te.y))
        if not 0 < c_c:
            print(f"{lam:9.3g} {a_c:9.4f} {c_c:7.1f} {t_c:7.2f} | trivial tree (cost 0): skipped")
            continue
        asx, t_a = timed_fit(ASTCClassifier(budget=node_budgets_from(cs), max_depth=3,
                                            **costs_of(d)), tr.X, tr.y)
        a_a, c_a = evaluate(asx.model_, te.X, te.y)
        ratios.append(t_c / t_a)
        print(f"{lam:9.3g} {a_c:9.4f} {c_c:7.1f} {t_c:7.2f} | {a_a:9.4f} {c_a:7.1f} {t_a:7.3f} | "
              f"{t_c / t_a:7.1f}x {a_a - a_c:+7.4f} {c_a / c_c:10.3f}")
    if ratios:
        print(f"median ASTC speed-up over CSTC at matched node budgets: {np.median(ratios):.1f}x "
              f"(min {min(ratios):.1f}x, max {max(ratios):.1f}x)")
    best = {k: max([a for a, c in v if c <= args.bound], default=float("nan")) for k, v in depth.items()}
    print("depth 1 (single node) points:", ", ".join(f"{a:.4f}@{c:.1f}" for a, c in depth[1]))
    print(f"best accuracy at cost <= {args.bound:g}: depth 3 {best[3]:.4f}, depth 1 {best[1]:.4f}, "
          f"difference {100 * (best[3] - best[1]):+.2f} points")


if __name__ == "__main__":
    main()
