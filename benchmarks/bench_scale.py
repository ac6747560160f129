"""Training time of the budgeted trainers against rows (issue 29, item 2):
Cronus, CSCC, CSTC, ASTC and AFR on Yahoo-LTR-shaped rows
(``bench_train.make_yahoo``: sparse features, Yahoo's cost histogram, the
task relevance >= 3), CVM on a subsample.

    python benchmarks/bench_scale.py --rows 10000,50000 [--trainers cronus,cscc,cstc,astc,afr,cvm]
        [--features 519] [--trees 300] [--cvm-rows 3000]

Every (trainer, rows) fit runs in a child process of its own, so the peak
resident memory is that fit's (``os.wait4``'s ``ru_maxrss`` of the child: the
data, the bank and the fit together; the data alone is rows x features x 4
bytes).  The child builds the data, then the tree bank the trainer builds on,
then fits the trainer on that bank, each timed (wall and process CPU):

* Cronus, CSCC, CSTC, ASTC: the cost-tiered GBRT bank of ``--trees`` trees,
  depth 4 (``tree_bank.tiered_bank`` with the automatic tiers: Cronus' and
  CSCC's own default bank), passed to the trainer as ``bank``; the ratio is
  the trainer's fit over that bank's.  The bank is built once per row count
  in a child of its own (the table's ``bank`` line, with its own peak
  memory), saved to a temporary folder, and loaded by those four.
* AFR grows its own trees; its ratio is over a GBRT bank with as many trees
  as AFR grew, at AFR's depth, on the same rows (timed after the fit).
* CVM compresses a full rbf SVM fitted on ``--cvm-rows`` rows (at most);
  its ratio is the compression over that SVM's fit (CVM has no tree bank).
* ``--raw``: CSTC and ASTC read the raw features (no ``bank``), as
  docs/ranking.md's Yahoo run fitted them; their ratio is still over the
  tiered bank of the same rows, for scale.

Trainers run with their defaults otherwise (no ``eval_set``: a trainer that
chooses on validation holds rows out and refits), ``random_state=0``,
``verbose=0``.  The printed table has one line per fit; under it, per
trainer, the log-log slope of fit wall and CPU time against rows (least
squares over the row counts run): 1 is linear, 2 quadratic; with one row
count there is no slope, and the line says so.  The peak memory is the
child's ``ru_maxrss``, the figure ``/usr/bin/time -v`` prints as "Maximum
resident set size".
"""
from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile

import numpy as np
from common import timed_wall_cpu  # benchmarks/common.py, beside this script

TRAINERS = ("cronus", "cscc", "cstc", "astc", "afr", "cvm")
ON_BANK = ("cronus", "cscc", "cstc", "astc")
BANK_DEPTH = 4


def _data(n, f):
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    from bench_train import make_yahoo
    X, y, _, costs = make_yahoo(n, f, seed=0)     # (X, relevance >= 3, the grade, costs)
    return X, y, costs


def _bank(X, y, costs, trees, depth=BANK_DEPTH, tiers=None):
    from skinflint.trainers.boosting.tree_bank import tiered_bank
    from skinflint.trainers.cascades.cronus import CronusClassifier
    spec = CronusClassifier(feature_costs=costs)._cost_spec(X.shape[1])
    return tiered_bank(X, 2.0 * y - 1.0, spec, tiers=tiers, n_estimators=trees, max_depth=depth, random_state=0)


def _save_bank(path, bank, wall, cpu):
    np.savez(path, wall=wall, cpu=cpu, **{k: getattr(bank, k) for k in BANK_FIELDS})


def _load_bank(path):
    from skinflint.ir.nodes import TreesNode
    z = np.load(path)
    return TreesNode(**{k: z[k] for k in BANK_FIELDS}), float(z["wall"]), float(z["cpu"])


BANK_FIELDS = ("roots", "feature", "threshold", "left", "right", "missing_left", "value", "tree_cost", "base_score")


def child(trainer, n, f, trees, cvm_rows, cache, raw=False):
    """One fit, after a warm-up fit on 1,500 rows in the same process (numba's
    cache loads, imports); prints one JSON line.  ``trainer == "bank"`` builds
    the bank and saves it under ``cache`` for the trainers on it."""
    X, y, costs = _data(n, f)
    path = os.path.join(cache, f"bank_{n}_{f}_{trees}.npz")
    if trainer == "bank":
        _bank(X[:1500], y[:1500], costs, 10)
        bank, w, c = timed_wall_cpu(lambda: _bank(X, y, costs, trees))
        _save_bank(path, bank, w, c)
        print(json.dumps(dict(trainer="bank", rows=n, features=f, bank_wall=w, bank_cpu=c, fit_wall=w, fit_cpu=c,
                              note=f"{bank.n_trees} trees")), flush=True)
        return
    _fit(trainer, X[:1500], y[:1500], costs, 10, 500, None, raw)
    pre = _load_bank(path) if trainer in ON_BANK and os.path.exists(path) else None
    print(json.dumps(dict(_fit(trainer, X, y, costs, trees, cvm_rows, pre, raw), rows=n, features=f)), flush=True)


def _fit(trainer, X, y, costs, trees, cvm_rows, pre, raw=False):
    out = dict(trainer=trainer, rows=X.shape[0])
    if trainer == "cvm":
        from skinflint.trainers.kernels.cvm import CVMClassifier
        from skinflint.trainers.kernels.kernel_svm import KernelSVMClassifier
        m = min(X.shape[0], cvm_rows)
        Xs, ys = X[:m], y[:m]
        svm, bw, bc = timed_wall_cpu(lambda: KernelSVMClassifier(kernel="rbf", random_state=0, verbose=0).fit(Xs, ys))
        est = CVMClassifier(svm=svm, feature_costs=costs, random_state=0, verbose=0)
        _, fw, fc = timed_wall_cpu(lambda: est.fit(Xs, ys))
        return dict(out, bank_wall=bw, bank_cpu=bc, fit_wall=fw, fit_cpu=fc, note=f"full SVM {svm.n_support_} SVs",
                    cvm_rows=m)
    if trainer == "afr":
        from skinflint.trainers.anytime.afr import AFRClassifier
        est = AFRClassifier(feature_costs=costs, random_state=0, verbose=0)
        _, fw, fc = timed_wall_cpu(lambda: est.fit(X, y))
        k = len(est.trees_)
        _, bw, bc = timed_wall_cpu(lambda: _bank(X, y, costs, k, depth=int(est.max_depth), tiers=[]))
        return dict(out, bank_wall=bw, bank_cpu=bc, fit_wall=fw, fit_cpu=fc, note=f"{k} trees, depth {est.max_depth}")
    bank, bw, bc = pre if pre is not None else timed_wall_cpu(lambda: _bank(X, y, costs, trees))
    basis = None if raw and trainer in ("cstc", "astc") else bank
    if trainer in ("cronus", "cscc"):
        from skinflint.trainers.cascades.cronus import CronusClassifier, CSCCClassifier
        cls = CronusClassifier if trainer == "cronus" else CSCCClassifier
        est = cls(bank=bank, feature_costs=costs, random_state=0, verbose=0)
    elif trainer == "cstc":
        from skinflint.trainers.trees.cstc import CSTCClassifier
        est = CSTCClassifier(bank=basis, feature_costs=costs, random_state=0, verbose=0)
    elif trainer == "astc":
        from skinflint.trainers.trees.astc import ASTCClassifier
        est = ASTCClassifier(bank=basis, feature_costs=costs, random_state=0, verbose=0)
    else:
        raise SystemExit(f"bench_scale: unknown trainer {trainer!r}; one of {TRAINERS}")
    _, fw, fc = timed_wall_cpu(lambda: est.fit(X, y))
    note = "raw features" if basis is None else f"bank {bank.n_trees} trees"
    return dict(out, bank_wall=bw, bank_cpu=bc, fit_wall=fw, fit_cpu=fc, note=note)


def run_child_wait4(args_list):
    """As run_child, the peak RSS from wait4 on this child alone (Linux: ru_maxrss in KiB)."""
    with tempfile.TemporaryFile("w+") as fo, tempfile.TemporaryFile("w+") as fe:
        p = subprocess.Popen([sys.executable, os.path.abspath(__file__), "--child", *args_list],
                             stdout=fo, stderr=fe, text=True)
        _, status, ru = os.wait4(p.pid, 0)
        p.returncode = os.waitstatus_to_exitcode(status)
        fo.seek(0)
        fe.seek(0)
        out, err = fo.read(), fe.read()
    line = [ln for ln in out.splitlines() if ln.startswith("{")]
    return (json.loads(line[-1]) if line else None), ru.ru_maxrss / 1024.0, err.strip().splitlines()[-3:]


def slope(rows, secs):
    """Least-squares slope of log(seconds) on log(rows); None with fewer than
    two distinct row counts (no slope to fit)."""
    if len(set(rows)) < 2:
        return None
    return float(np.polyfit(np.log(rows), np.log(secs), 1)[0])


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--rows", default="10000,50000", help="comma-separated row counts")
    ap.add_argument("--trainers", default=",".join(TRAINERS), help=f"comma-separated, of {TRAINERS}")
    ap.add_argument("--features", type=int, default=519)
    ap.add_argument("--trees", type=int, default=300, help="trees of the bank")
    ap.add_argument("--cvm-rows", type=int, default=3000, help="CVM's subsample (rows, at most)")
    ap.add_argument("--json", default=None, help="append each result as a JSON line to this file")
    ap.add_argument("--raw", action="store_true", help="CSTC and ASTC over the raw features (no bank)")
    ap.add_argument("--child", nargs=7, default=None, help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.child:
        t, n, f, trees, cvm, cache, raw = args.child
        child(t, int(n), int(f), int(trees), int(cvm), cache, raw == "1")
        return
    rows = [int(r) for r in args.rows.split(",")]
    trainers = [t.strip() for t in args.trainers.split(",") if t.strip()]
    for t in trainers:
        if t not in TRAINERS:
            raise SystemExit(f"bench_scale: unknown trainer {t!r}; one of {TRAINERS}")
    print(f"{os.cpu_count()} cores, load {os.getloadavg()[0]:.2f}; {args.features} features, bank "
          f"{args.trees} trees depth {BANK_DEPTH}; CVM on <= {args.cvm_rows} rows")
    head = (f"{'trainer':<7} {'rows':>7} | {'fit wall':>9} {'fit cpu':>9} | {'bank wall':>9} {'bank cpu':>9} | "
            f"{'ratio':>6} | {'peak MiB':>8} | note")
    print(head)
    print("-" * len(head))
    res: dict = {}
    cache = tempfile.mkdtemp(prefix="bench_scale_")
    for n in rows:
        todo = (["bank"] if any(t in ON_BANK for t in trainers) else []) + trainers
        for t in todo:
            r, rss, err = run_child_wait4([t, str(n), str(args.features), str(args.trees), str(args.cvm_rows),
                                           cache, "1" if args.raw else "0"])
            if r is None:
                print(f"{t:<7} {n:>7} | failed: {' / '.join(err)}", flush=True)
                continue
            r["peak_mib"] = rss
            r["ratio"] = r["fit_wall"] / max(r["bank_wall"], 1e-9)
            r["rows"] = r.get("cvm_rows", r["rows"])
            res.setdefault(t, []).append(r)
            print(f"{t:<7} {r['rows']:>7} | {r['fit_wall']:>8.2f}s {r['fit_cpu']:>8.2f}s | {r['bank_wall']:>8.2f}s "
                  f"{r['bank_cpu']:>8.2f}s | {r['ratio']:>5.2f}x | {rss:>8.0f} | {r['note']}", flush=True)
            if args.json:
                with open(args.json, "a") as fh:
                    fh.write(json.dumps(dict(r, trees=args.trees, load=os.getloadavg()[0])) + "\n")
    shutil.rmtree(cache, ignore_errors=True)
    print("\nlog-log slope of fit time against rows (1 = linear), wall and process CPU:")
    for t, rs in res.items():
        n = [r["rows"] for r in rs]
        sw, sc = slope(n, [r["fit_wall"] for r in rs]), slope(n, [r["fit_cpu"] for r in rs])
        if sw is None:
            print(f"  {t:<7} no slope: one row count ({n[0]})")
        else:
            print(f"  {t:<7} wall {sw:.2f}, cpu {sc:.2f}")


if __name__ == "__main__":
    main()
