"""AFR against its baselines (paper §5, thesis §2.2.4).

1. The paper's synthetic XOR (Fig. 2): AFR's test accuracy at budgets 5,
   25, 95 and none, seeds 0-2, beside the paper's numbers and a linear SVM
   on all ten features.
2. Spambase with the descriptor costs of ``load_spambase``: AFR's anytime
   curve (one model; accuracy and mean lazy cost at every checkpoint's
   static cost) beside Greedy Miser's lambda sweep (one model per lambda,
   trees chosen on validation: ``cost_accuracy_curve``) and a linear SVM
   (C chosen on validation), and AFR's fit time.
3. ``--letter N``: multiclass AFR (one-vs-all, Platt-scaled, shared feature
   costs; thesis §2.2.4) on 26-class UCI Letter with unit costs, against
   multiclass Greedy Miser's lambda sweep: accuracy and mean cost per row.

    python benchmarks/bench_afr.py [--plot docs/img/afr.png] [--seeds 0 1 2] [--letter N_TRAIN]

Every accuracy and cost is the exported IR model's on the reference runtime.
Spambase: 70/30 train/test split (seed 0), a quarter of train as the
validation rows (Greedy Miser's round choice, the linear SVM's C, AFR's
hold-out O).
"""
from __future__ import annotations

import argparse
import math
import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(__file__))
from common import timed  # noqa: E402

from skinflint.datasets import _keel_file, load_spambase, make_xor10  # noqa: E402
from skinflint.runtimes.reference import predict  # noqa: E402
from skinflint.trainers.anytime.afr import AFRClassifier  # noqa: E402
from skinflint.trainers.boosting.greedy_miser import GreedyMiserClassifier  # noqa: E402
from skinflint.trainers.curves import cost_accuracy_curve  # noqa: E402
from skinflint.trainers.linear.linear_svm import LinearSVMClassifier  # noqa: E402

PAPER_XOR = {5: 0.76, 25: 0.84, 95: 0.98, math.inf: 1.0}    # Fig. 2, test accuracy
LAMBDAS = (1e-4, 3e-4, 1e-3, 1.5e-3, 2e-3, 3e-3, 1e-2)
LETTER_LAMBDAS = (0.0, 1e-2, 3e-2, 0.1)


def acc(model, X, y, budget=None):
    p = predict(model, X, budget=budget)
    return float(np.mean(p.output == y)), float(p.cost.mean())


def xor(seeds):
    print("== XOR (paper §5, Fig. 2): 640 train / 360 test rows, costs 1,1,1,2,5,15,25,70,100,1000")
    print(f"{'seed':>4} {'B=5':>7} {'B=25':>7} {'B=95':>7} {'full':>7} {'static':>7} {'ckpts':>6} "
          f"{'fit s':>6} {'linSVM':>7} {'worst ck>=3':>12}")
    rows, curves = [], []
    for seed in seeds:
        ds = make_xor10(seed=seed)
        tr, te = ds.split(0.36, seed=seed + 100)
        m, t = timed(lambda ds=ds, seed=seed, tr=tr: AFRClassifier(
            dims_per_block=2, append_dims=False, feature_costs=ds.feature_costs, random_state=seed).fit(tr.X, tr.y))
        accs = [acc(m.model_, te.X, te.y, None if math.isinf(b) else b)[0] for b in PAPER_XOR]
        svm = LinearSVMClassifier(feature_costs=ds.feature_costs).fit(tr.X, tr.y).score(te.X, te.y)
        worst = min(acc(m.model_, te.X, te.y, ck["static_cost"])[0]
                    for ck in m.checkpoints_ if ck["static_cost"] >= 3)
        rows.append(accs + [svm, worst])
        curves.append(m.anytime_curve(te.X, te.y))
        print(f"{seed:>4} " + " ".join(f"{a:7.3f}" for a in accs) + f" {m.static_cost_:7.0f} "
              f"{len(m.checkpoints_):6d} {t:6.1f} {svm:7.3f} {worst:12.3f}")
    mean = np.mean(rows, axis=0)
    print("mean " + " ".join(f"{a:7.3f}" for a in mean[:4]) + " " * 29 + f"{mean[4]:7.3f} {mean[5]:12.3f}")
    print("paper" + " ".join(f"{a:7.2f}" for a in PAPER_XOR.values()))
    print(f"gates: B=25 {mean[1]:.3f} >= 0.75 {'OK' if mean[1] >= 0.75 else 'FAIL'}; "
          f"full {mean[3]:.3f} >= 0.85 {'OK' if mean[3] >= 0.85 else 'FAIL'}; "
          f"worst checkpoint - linear SVM {min(r[5] - r[4] for r in rows):+.3f} >= +0.10 "
          f"{'OK' if min(r[5] - r[4] for r in rows) >= 0.10 else 'FAIL'}")
    return curves


def spambase():
    ds = load_spambase()
    train, te = ds.split(0.3, seed=0)
    tr, va = train.split(0.25, seed=1)
    costs = dict(feature_costs=ds.feature_costs, feature_groups=ds.feature_groups, group_costs=ds.group_costs)
    print(f"\n== Spambase: {len(tr.y)} train / {len(va.y)} validation / {len(te.y)} test rows, "
          f"all features cost {float(ds.feature_costs.sum() + ds.group_costs.sum()):g}")
    afr, t_afr = timed(lambda: AFRClassifier(random_state=0, **costs).fit(tr.X, tr.y, eval_set=(va.X, va.y)))
    curve = afr.anytime_curve(te.X, te.y)
    gm = cost_accuracy_curve(GreedyMiserClassifier(n_estimators=300, loss="squared_hinge", random_state=0,
                                                   verbose=0, **costs),
                             {"cost_tradeoff": list(LAMBDAS)}, tr.X, tr.y, va.X, va.y, te.X, te.y,
                             label="Greedy Miser", verbose=0)
    svm, t_svm = timed(lambda: LinearSVMClassifier(C=[0.01, 0.1, 1.0, 10.0], **costs).fit(tr.X, tr.y,
                                                                                          eval_set=(va.X, va.y)))
    a_svm, c_svm = acc(svm.model_, te.X, te.y)
    print(f"AFR: {len(afr.trees_)} trees, {afr.n_dims_} dimensions, {len(afr.checkpoints_)} checkpoints, "
          f"C={afr.C_:.3g}, fit {t_afr:.1f} s (T/V/O = {afr.split_sizes_})")
    print(f"{'method':<34} {'budget':>7} {'accuracy':>9} {'mean cost':>10} {'static':>7}")
    for c in curve:
        print(f"{'AFR (one model)':<34} {c['budget']:7.1f} {c['accuracy']:9.4f} {c['mean_cost']:10.2f} "
              f"{min(c['budget'], afr.static_cost_):7.1f}")
    for r in gm:
        print(f"{r['method']:<34} {'-':>7} {r['accuracy']:9.4f} {r['mean_cost']:10.2f} {r['static_cost']:7.1f}")
    print(f"{'linear SVM (C=' + format(svm.C_, 'g') + ')':<34} {'-':>7} {a_svm:9.4f} {c_svm:10.2f} "
          f"{svm.static_cost_:7.1f}")
    # AFR against the GM envelope at GM's costs
    print("AFR at each Greedy Miser model's mean cost (AFR budget = that cost):")
    for r in gm:
        a, c = acc(afr.model_, te.X, te.y, r["mean_cost"])
        print(f"  {r['method']:<32} GM {r['accuracy']:.4f} @ {r['mean_cost']:6.2f}   AFR {a:.4f} @ {c:6.2f}")
    return curve, gm, (a_svm, c_svm)


def load_letter26():
    """UCI Letter with its 26 letters as classes (``load_letter`` is its
    A-M / N-Z binary version), unit feature costs."""
    path = _keel_file("letter")
    X = np.loadtxt(path, delimiter=",", usecols=range(16), dtype=np.float64).astype(np.float32)
    y = np.char.strip(np.loadtxt(path, delimiter=",", usecols=[16], dtype=str))
    return X, y


def letter(n_train, seed=0):
    """Multiclass AFR against multiclass Greedy Miser on 26-class Letter:
    n_train training rows, n_train / 2 validation rows (AFR's O and Platt
    rows; Greedy Miser's round choice), 4000 test rows."""
    X, y = load_letter26()
    p = np.random.default_rng(seed).permutation(len(y))
    tr, va, te = p[:n_train], p[n_train:n_train + n_train // 2], p[-4000:]
    costs = np.ones(16)
    print(f"\n== Letter, 26 classes: {len(tr)} train / {len(va)} validation / {len(te)} test rows, unit costs")
    afr, t_afr = timed(lambda: AFRClassifier(feature_costs=costs, random_state=seed).fit(
        X[tr], y[tr], eval_set=(X[va], y[va])))
    print(f"AFR: {len(afr.trees_)} trees, {sum(afr.n_dims_)} dimensions over 26 classes, "
          f"{len(afr.checkpoints_)} checkpoints, fit {t_afr:.1f} s")
    print(f"{'method':<34} {'budget':>7} {'accuracy':>9} {'mean cost':>10}")
    for c in afr.anytime_curve(X[te], y[te]):
        print(f"{'AFR (one model)':<34} {c['budget']:7.1f} {c['accuracy']:9.4f} {c['mean_cost']:10.2f}", flush=True)
    print("Greedy Miser, one model per lambda (softmax, rounds chosen on validation), and AFR at its mean cost:")
    for lam in LETTER_LAMBDAS:
        [r] = cost_accuracy_curve(GreedyMiserClassifier(n_estimators=100, random_state=0, verbose=0,
                                                        feature_costs=costs),
                                  {"cost_tradeoff": [lam]}, X[tr], y[tr], X[va], y[va], X[te], y[te],
                                  label="Greedy Miser", verbose=0)
        a, c = acc(afr.model_, X[te], y[te], r["mean_cost"])
        print(f"  {r['method']:<32} GM {r['accuracy']:.4f} @ {r['mean_cost']:6.2f} (fit {r['fit_time']:.0f} s)"
              f"   AFR {a:.4f} @ {c:6.2f}", flush=True)


def plot(path, xor_curves, spam):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    fig, (a1, a2) = plt.subplots(1, 2, figsize=(11, 4.2))
    for s, cur in enumerate(xor_curves):
        x = [c["mean_cost"] for c in cur]
        a1.step(np.maximum(x, 0.5), [c["accuracy"] for c in cur], where="post", label=f"AFR, seed {s}")
    a1.plot([5, 25, 95, 1220], list(PAPER_XOR.values()), "k*", ms=9, label="paper (Fig. 2)")
    a1.set_xscale("log")
    a1.set(xlabel="mean cost per row (budget = each checkpoint's static cost)", ylabel="test accuracy",
           title="XOR (paper §5)")
    a1.legend(fontsize=8)
    curve, gm, (a_svm, c_svm) = spam
    a2.step([c["mean_cost"] for c in curve], [c["accuracy"] for c in curve], where="post", color="C3",
            label="AFR (one anytime model)")
    a2.plot([r["mean_cost"] for r in gm], [r["accuracy"] for r in gm], "o", color="C0",
            label="Greedy Miser (one model per lambda)")
    a2.plot([c_svm], [a_svm], "s", color="C2", label="linear SVM")
    a2.set(xlabel="mean cost per row", ylabel="test accuracy", title="Spambase (descriptor costs)",
           ylim=(0.75, 0.97))
    a2.legend(fontsize=8, loc="lower right")
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    print(f"wrote {path}")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    ap.add_argument("--plot", help="write the two panels to this PNG")
    ap.add_argument("--letter", type=int, metavar="N_TRAIN",
                    help="only the 26-class Letter comparison, with this many training rows")
    args = ap.parse_args()
    if args.letter:
        letter(args.letter)
        return
    xor_curves = xor(args.seeds)
    spam = spambase()
    if args.plot:
        plot(args.plot, xor_curves, spam)


if __name__ == "__main__":
    main()
