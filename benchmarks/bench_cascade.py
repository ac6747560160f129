"""Cronus and CSCC against GBRT, Greedy Miser and Early Exit (issue 15).

Prints, per data set, test accuracy and mean lazy cost per row of every
model (the exported IR on the reference runtime), the fit time of each
cascade per lambda (the tree bank is grown once, timed apart and excluded),
and the ratios the acceptance checks use: the cheapest cascade within 1
point of GBRT's accuracy against GBRT's and Early Exit's cost.

    python benchmarks/bench_cascade.py                    # synthetic, spambase, letter
    python benchmarks/bench_cascade.py --data synthetic
    python benchmarks/bench_cascade.py --data spambase --plot docs/img/cascades_spambase.png
"""
from __future__ import annotations

import argparse
import time

import numpy as np

from skinflint import datasets
from skinflint.runtimes.reference import predict
from skinflint.trainers.boosting.early_exit import EarlyExitClassifier
from skinflint.trainers.boosting.greedy_miser import GreedyMiserClassifier
from skinflint.trainers.cascades.cronus import CronusClassifier, CSCCClassifier


def _setup(name):
    """(splits, cost params, tree params, label) as the tests and docs use them."""
    if name == "synthetic":
        ds = datasets.make_cheap_rejects(16000, 3)
        X, y = ds.X, ds.y
        splits = (X[:8000], y[:8000], X[8000:10000], y[8000:10000], X[10000:], y[10000:])
        return splits, dict(feature_costs=ds.feature_costs, tree_eval_cost=1.0), \
            dict(max_depth=3, n_estimators=150), dict(n_estimators=200, max_depth=3), 5, ()
    if name == "letter":
        ds = datasets.yahoo_like_costs(datasets.load_letter(), seed=0)
        idx = np.random.default_rng(0).permutation(len(ds.y))
        X, y = ds.X[idx], ds.y[idx]
        splits = (X[:12000], y[:12000], X[12000:15000], y[12000:15000], X[15000:], y[15000:])
        return splits, dict(feature_costs=ds.feature_costs, tree_eval_cost=1.0), \
            dict(max_depth=4, n_estimators=300), dict(n_estimators=300, max_depth=4), 10, ()
    ds = datasets.load_spambase()
    train, test = ds.split(0.3, seed=0)          # the demo's split
    train, val = train.split(0.25, seed=1)
    splits = (train.X, train.y, val.X, val.y, test.X, test.y)
    costs = dict(feature_costs=ds.feature_costs, feature_groups=ds.feature_groups,
                 group_costs=ds.group_costs)
    return splits, costs, dict(max_depth=4, n_estimators=150), dict(n_estimators=150, max_depth=4), 10, \
        (1e-3, 3e-3, 1e-2, 3e-2)


def _row(method, model, X, y, fit_time=None):
    p = predict(model, X)
    return dict(method=method, accuracy=float(np.mean(p.output == y)), cost=float(p.cost.mean()),
                fit_time=fit_time, stage=p.stage, used=p.features_used)


def run(name, plot=None):
    (Xtr, ytr, Xva, yva, Xte, yte), costs, bank_params, gbrt_params, K, gm_grid = _setup(name)
    print(f"\n== {name}: {len(ytr)} train / {len(yva)} validation / {len(yte)} test rows ==")
    rows = []
    gb = GreedyMiserClassifier(**gbrt_params, **costs, verbose=0, random_state=0).fit(Xtr, ytr, eval_set=(Xva, yva))
    rows.append(_row(f"GBRT ({gb.n_estimators_} trees)", gb.model_, Xte, yte))
    for lam in gm_grid:
        gm = GreedyMiserClassifier(**gbrt_params, **costs, cost_tradeoff=lam, verbose=0,
                                   random_state=0).fit(Xtr, ytr, eval_set=(Xva, yva))
        rows.append(_row(f"Greedy Miser (lambda={lam:g})", gm.model_, Xte, yte))
    ee_rows = []
    for s in (0.5, 1.0, 2.0, 4.0):
        ee = EarlyExitClassifier(**gbrt_params, **costs, threshold=s, verbose=0, random_state=0).fit(
            Xtr, ytr, eval_set=(Xva, yva))
        ee_rows.append(_row(f"Early Exit (s={s:g})", ee.model_, Xte, yte))
    rows += ee_rows
    acc0, cost0 = rows[0]["accuracy"], rows[0]["cost"]
    casc = {}
    for cls in (CronusClassifier, CSCCClassifier):
        est = cls(n_stages=K, **bank_params, **costs, random_state=0)
        t0 = time.perf_counter()
        grid = est.lambda_grid(Xtr, ytr)
        t_bank = time.perf_counter() - t0
        est.set_params(bank=est._bank_cache[1])
        print(f"{cls.__name__}: bank {est.bank.n_trees} trees + lambda_grid in {t_bank:.1f} s; "
              f"lambda_max {grid[0]:.3g}")
        casc[cls.__name__] = []
        for lam in grid:
            est.set_params(cost_tradeoff=float(lam))
            t0 = time.perf_counter()
            est.fit(Xtr, ytr)
            dt = time.perf_counter() - t0
            r = _row(f"{cls.__name__[:-10]} (lambda={lam:.3g})", est.model_, Xte, yte, dt)
            r["first_no_b"] = None
            print(f"  lambda {lam:.3g}: fit {dt:5.1f} s, stages {est.n_stages_}, "
                  f"accuracy {r['accuracy']:.4f}, cost {r['cost']:.1f}, "
                  f"cycles {len(est.objective_history_) - 1}", flush=True)
            casc[cls.__name__].append(r)
        rows += casc[cls.__name__]
    print(f"\n{'model':<34} {'accuracy':>9} {'cost/row':>9} {'fit s':>6}")
    for r in rows:
        ft = "" if r["fit_time"] is None else f"{r['fit_time']:.1f}"
        print(f"{r['method']:<34} {r['accuracy']:>9.4f} {r['cost']:>9.1f} {ft:>6}")
    ok_ee = [r for r in ee_rows if r["accuracy"] >= acc0 - 0.01]
    ee_best = min(r["cost"] for r in ok_ee) if ok_ee else float("nan")
    print(f"\nGBRT {acc0:.4f} @ {cost0:.1f}; Early Exit within 1 pt: cheapest {ee_best:.1f}")
    for name_, rs in casc.items():
        ok = [r for r in rs if r["accuracy"] >= acc0 - 0.01]
        if not ok:
            print(f"{name_}: no lambda within 1 pt of GBRT")
            continue
        best = min(ok, key=lambda r: r["cost"])
        times = [r["fit_time"] for r in rs]
        print(f"{name_}: {best['method']} {best['accuracy']:.4f} @ {best['cost']:.1f}: "
              f"{cost0 / best['cost']:.2f}x cheaper than GBRT, {best['cost'] / ee_best:.2f} of Early Exit's "
              f"cost; fit per lambda {min(times):.1f}-{max(times):.1f} s (median {np.median(times):.1f})")
    if plot:
        _plot(rows, casc, ee_rows, name, plot)
    return rows, casc


def _plot(rows, casc, ee_rows, name, path):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    fig, ax = plt.subplots(figsize=(6.4, 4.2))
    gm = [r for r in rows if r["method"].startswith("Greedy Miser")]
    ax.scatter([rows[0]["cost"]], [rows[0]["accuracy"]], marker="*", s=120, color="k", label="GBRT", zorder=3)
    for rs, label, mk in ((gm, "Greedy Miser", "s"), (ee_rows, "Early Exit", "^"),
                          (casc["CronusClassifier"], "Cronus", "o"), (casc["CSCCClassifier"], "CSCC", "D")):
        rs = sorted(rs, key=lambda r: r["cost"])
        if rs:
            ax.plot([r["cost"] for r in rs], [r["accuracy"] for r in rs], marker=mk, label=label)
    lo = rows[0]["accuracy"] - 0.05
    ax.set_ylim(lo, None)
    ax.set_xlabel("mean lazy cost per test row")
    ax.set_ylabel("test accuracy")
    ax.set_title(f"{name}: cascades beside GBRT, Greedy Miser, Early Exit")
    ax.grid(alpha=0.3)
    ax.legend(loc="lower right")
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    print(f"plot written to {path}")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--data", choices=("synthetic", "spambase", "letter", "all"), default="all")
    ap.add_argument("--plot", help="write the cost/accuracy plot of the (single) data set here")
    a = ap.parse_args()
    for name in (("synthetic", "spambase", "letter") if a.data == "all" else (a.data,)):
        run(name, a.plot if a.data != "all" else None)


if __name__ == "__main__":
    main()
