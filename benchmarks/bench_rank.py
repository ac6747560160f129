"""Learning to rank with feature costs (issue 26): every seed algorithm on a Yahoo-shaped ranking set against
LightGBM ``lambdarank`` with and without its CEGB penalties, measured side by side in one run.

Per model: test NDCG@5 (thesis Eq. 2.20) on graded labels, P@5 of relevance >= 3, mean per-document cost
and fit time.  Every number comes from the model's IR on the reference runtime (LightGBM models imported with
``skinflint.importers.from_lightgbm``; one cost unit per tree evaluated is added to every model, Yahoo's unit).
The number of trees of every boosted model is its best validation NDCG@5 (thesis §2.1.4).  Headline: the
cheapest model within 0.01 NDCG@5 of the full-cost LambdaMART GBRT, its cost as a fraction of that model's
(the thesis reports 1/10 on Yahoo), against CEGB's cheapest at the same NDCG@5; and the fit time of a
LambdaMART Greedy Miser against LightGBM with the same trees (rounds, depth, leaves) and threads.

    python benchmarks/bench_rank.py                                 # tiny synthetic set (~15 min on 2 cores)
    python benchmarks/bench_rank.py --size small                    # 1,000 queries x 136 features (see docs)
    python benchmarks/bench_rank.py --size yahoo                    # ~470k documents x 519 features (~10 CPU-h)
    python benchmarks/bench_rank.py --size yahoo --rounds 100 --threads 1 --only gbrt,greedy-miser,lightgbm,cegb \
        --gm-grid 1e-5,3e-5 --cegb-lazy 1e-5,1e-4 --cegb-coupled 0.03,0.1 --results yahoo100.jsonl  # the boosters
    python benchmarks/bench_rank.py --plot docs/img/ranking_tiny.png
    python benchmarks/bench_rank.py --only gbrt,greedy-miser,lightgbm
    python benchmarks/bench_rank.py --only gbrt,early-exit,cascade      # the exit rules and ranking cascades
    python benchmarks/bench_rank.py --only cascade --ee-gm squared:2e-5,lambdarank:5e-6   # on chosen GM banks
    python benchmarks/bench_rank.py --c-rank-overhead    # C rank_query against per-row C (issue 27: <= 1.3x)
    python benchmarks/bench_rank.py --train train.svm --valid valid.svm --test test.svm --costs costs.csv
    python benchmarks/bench_rank.py --size small --results small.jsonl          # each row written when measured
    python benchmarks/bench_rank.py --size small --results small.jsonl --resume # refit only what is missing
    python benchmarks/bench_rank.py --from-results small.jsonl --plot p.png     # tables, headline, plot; no fit
    python benchmarks/bench_rank.py --size yahoo --timing --timing-threads 1,2  # only the fit-time comparison

A long run is best given ``--results``: every model's row (and every fit-time line) is appended to that JSON
lines file as soon as it is measured, so a run stopped by a time limit loses nothing; ``--resume`` keeps the rows
already there and fits only the models that are missing; ``--from-results`` prints everything from the file.
"""
from __future__ import annotations

import argparse
import dataclasses
import json
import math
import os
import resource
import sys
import time
import warnings

import numba
import numpy as np

from skinflint import datasets
from skinflint.metrics import ndcg, precision_at_k
from skinflint.runtimes.reference import predict
from skinflint.trainers.boosting.cascade_ranker import choose_cutoffs, stage_checkpoints, with_cutoffs
from skinflint.trainers.boosting.ranker import (
    GreedyMiserRanker,
    kth_best_reference,
    per_row_exit,
    proximity_exit,
    rank_queries,
)
from skinflint.trainers.registry import TRAINERS

SIZES = {  # queries, features, rounds
    "tiny": (300, 60, 60),
    "small": (1000, 136, 300),
    "yahoo": (19944, 519, 1000),
}
# the papers' baselines past the tiny size: grid points per method and trees per bank.  Cronus and CSCC are what
# made the small run take hours: each fit grows its tiered bank (3 boosts) twice and searches 12 initialisations
# (~45 s CPU per fit at 1,000 queries x 136 features, 200 trees), 4 grid points each
BASELINE_POINTS = {"tiny": None, "small": 2, "yahoo": 2}      # None: every other point of the registry's grid
BASELINE_TREES = {"tiny": 200, "small": 100, "yahoo": 100}
GM_GRID = (5e-6, 1e-5, 2e-5, 3e-5, 5e-5, 1e-4, 3e-4)   # lambda per row, in Yahoo cost units (mean cost ~36)
EE_GRID = (0.0, 0.25, 0.5, 1.0, 2.0, 4.0, 8.0)
CASCADE_TOLERANCES = (0.0, 0.005, 0.01, 0.02, 0.05)   # validation NDCG@5 a ranking cascade may give up
CASCADE_GM_LAMBDA = 2e-5      # the Greedy Miser bank the "cascade" part cuts (the tiny set's best LambdaMART lambda)
CEGB_GRID = (1e-5, 3e-5, 1e-4, 3e-4, 1e-3, 3e-3, 1e-2, 3e-2, 0.1, 0.3)
OBJECTIVES = ("lambdarank", "squared")     # the rankers' objectives run (--objectives)
CEGB_GRIDS = {}     # per kind ("lazy", "coupled"), where it differs from CEGB_GRID (--cegb-lazy, --cegb-coupled)


def _plain(v):
    """A JSON value for ``v``: numpy scalars as Python numbers, NaN as null."""
    if isinstance(v, np.generic):
        v = v.item()
    return None if isinstance(v, float) and math.isnan(v) else v


class Rows(list):
    """The measured rows, each appended to ``path`` (JSON lines, one object per row) the moment it is measured.
    Lines with a ``kind`` ("run": one per start, its set-up; "timing": one fit-time measurement) are kept apart
    from the model rows in ``runs`` and ``timings``.  ``resume`` keeps what ``path`` holds already; otherwise
    the file is started afresh."""

    def __init__(self, path=None, resume=False):
        super().__init__()
        self.path, self.runs, self.timings = path, [], []
        if path and resume and os.path.exists(path):
            last = {}                       # a row written twice (a part redone after a stop): the later one
            for r in read_results(path):
                if r.get("kind") == "run":
                    self.runs.append(r)
                elif r.get("kind") == "timing":
                    self.timings.append(r)
                else:
                    last.pop(r["method"], None)
                    last[r["method"]] = r
            self.extend(last.values())
        elif path:
            open(path, "w").close()

    def _write(self, row):
        if self.path:
            with open(self.path, "a") as f:
                f.write(json.dumps({k: _plain(v) for k, v in row.items()}) + "\n")

    def append(self, row):
        super().append(row)
        self._write(row)

    def note(self, kind, **fields):
        """A set-up or fit-time line, written beside the rows."""
        row = dict(kind=kind, **fields)
        (self.runs if kind == "run" else self.timings).append(row)
        self._write(row)

    def has(self, method):
        return any(r["method"] == method for r in self)

    def count(self, family):
        return sum(r["family"] == family for r in self)


def read_results(path):
    """The rows of a results file (``Rows``); null read back as NaN, so tables print as when measured."""
    out = []
    with open(path) as f:
        for line in f:
            if line.strip():
                r = json.loads(line)
                out.append({k: (np.nan if v is None and k in ("fit_time", "val_ndcg5", "s") else v)
                            for k, v in r.items()})
    return out


def load(args):
    if args.train:
        parts = [datasets.load_svmlight(p, costs=args.costs) for p in (args.train, args.valid, args.test)]
        F = max(p.X.shape[1] for p in parts)
        parts = [datasets.load_svmlight(p, costs=args.costs, n_features=F) for p in (args.train, args.valid,
                                                                                  args.test)]
        return parts, f"{args.train} (+ validation, test)"
    n_queries, n_features, _ = SIZES[args.size]
    ds = datasets.make_yahoo_like(n_queries, n_features, seed=args.seed)
    return ds.split_queries(0.2, 0.2, seed=args.seed), ds.description


def measured(method, family, model, te, fit_time, **extra):
    """One table row: the IR model on the reference runtime over the test queries."""
    p = predict(model, te.X)
    s = p.scores[:, 0]
    return dict(method=method, family=family, ndcg5=ndcg(te.y, s, te.qid, 5),
                p5=precision_at_k(te.y, s, te.qid, 5, threshold=3), cost=float(p.cost.mean()),
                fit_time=fit_time, **extra)


def with_tree_cost(model, cost=1.0):
    """An imported model with ``cost`` per tree evaluated, as skinflint's models carry it."""
    bank = model.nodes[model.output]
    nodes = list(model.nodes)
    nodes[model.output] = dataclasses.replace(bank, tree_cost=np.full(bank.n_trees, cost))
    return dataclasses.replace(model, nodes=nodes)


def run_rankers(tr, va, te, costs, tree, rows, only):
    common = dict(feature_costs=costs, tree_eval_cost=1.0, verbose=0, random_state=0, n_iter_no_change=50, **tree)
    ev = (va.X, va.y, va.qid)
    for objective, tag in (("lambdarank", "LambdaMART"), ("squared", "pointwise")):
        if objective not in OBJECTIVES:
            continue
        for lam in (0.0,) + (GM_GRID if "greedy-miser" in only else ()):
            if lam == 0.0 and "gbrt" not in only:
                continue
            name = f"GBRT {tag}" if lam == 0 else f"Greedy Miser {tag} (lambda={lam:g})"
            exits = lam == 0 and objective == "lambdarank" and "early-exit" in only
            if rows.has(name) and (not exits or rows.count("Ranking cascade") == len(CASCADE_TOLERANCES)):
                continue                                        # measured already (--resume)
            t0 = time.perf_counter()
            m = GreedyMiserRanker(objective=objective, cost_tradeoff=lam, **common).fit(tr.X, tr.y, tr.qid,
                                                                                        eval_set=ev)
            fit = time.perf_counter() - t0
            if not rows.has(name):
                rows.append(measured(name, f"GBRT {tag}" if lam == 0 else f"Greedy Miser {tag}", m.model_, te,
                                     fit, trees=m.n_estimators_))
            if exits:
                run_exit_rules(m, tr, va, te, rows)


def _exit_row(method, family, r, te, thr, val):
    return dict(method=method, family=family, ndcg5=ndcg(te.y, r.scores, te.qid, order=r.order),
                p5=precision_at_k(te.y, r.scores, te.qid, 5, threshold=3, order=r.order),
                cost=float(r.cost.mean()), fit_time=np.nan, trees=float(r.n_trees.mean()), s=thr, val_ndcg5=val)


def run_exit_rules(m, tr, va, te, rows):
    """Early Exit over this GBRT (training unchanged), every 10 trees, s swept: the per-query proximity rule
    (the IR's query_exit, on the reference runtime's rank) and the per-row rule (a cascade against the training
    queries' mean 5th best); each s also scored on the validation queries (where s would be chosen)."""
    if rows.count("Ranking cascade") == len(CASCADE_TOLERANCES):
        return
    rows[:] = [r for r in rows if not r["family"].startswith(("Early Exit (per", "Ranking cascade"))]
    reference = kth_best_reference(m.model_, tr.X, tr.qid, 5)
    for thr in EE_GRID:
        rq = proximity_exit(m.model_, te.X, te.qid, thr, exit_every=10)
        vq = proximity_exit(m.model_, va.X, va.qid, thr, exit_every=10)
        rows.append(_exit_row(f"Early Exit per query (s={thr:g})", "Early Exit (per query)", rq, te, thr,
                              ndcg(va.y, vq.scores, va.qid, order=vq.order)))
        row_model = per_row_exit(m.model_, reference, thr, exit_every=10)
        rr, vr = rank_queries(row_model, te.X, te.qid), rank_queries(row_model, va.X, va.qid)
        rows.append(_exit_row(f"Early Exit per row (s={thr:g})", "Early Exit (per row)", rr, te, thr,
                              ndcg(va.y, vr.scores, va.qid, order=vr.order)))
    run_cascades(m, va, te, rows, "Ranking cascade")


def run_cascades(m, va, te, rows, family):
    """Ranking cascades on ``m``'s bank: 3 equal stages, top-k cutoffs chosen on validation (CascadeRanker)."""
    after = stage_checkpoints(m.n_estimators_, 3)
    for tol in CASCADE_TOLERANCES:
        keep, _, _ = choose_cutoffs(m.model_, after, va.X, va.y, va.qid, tolerance=tol)
        r = rank_queries(with_cutoffs(m.model_, after, keep), te.X, te.qid)
        cut = ", ".join(f"{k} after {a}" for a, k in zip(after, keep, strict=True) if k) or "none"
        rows.append(_exit_row(f"{family} (tol {tol:g}: top {cut})", family, r, te, tol, np.nan))


def run_gm_cascades(tr, va, te, costs, tree, rows, objective="lambdarank", lam=CASCADE_GM_LAMBDA):
    """The cascade the method is meant for: cutoffs on a cost-sensitive (Greedy Miser, LambdaMART by default)
    bank, and the per-query Early Exit rule on the same bank (``--ee-gm`` picks the objective and lambda)."""
    tag = "" if objective == "lambdarank" else "pointwise "
    family = f"Early Exit per query on Greedy Miser {tag}lambda={lam:g}"
    if rows.count(family) == 5:                  # the last rows this part writes: measured already (--resume)
        return
    common = dict(feature_costs=costs, tree_eval_cost=1.0, verbose=0, random_state=0, n_iter_no_change=50, **tree)
    t0 = time.perf_counter()
    m = GreedyMiserRanker(objective=objective, cost_tradeoff=lam, **common).fit(
        tr.X, tr.y, tr.qid, eval_set=(va.X, va.y, va.qid))
    name = f"Greedy Miser {'LambdaMART' if objective == 'lambdarank' else 'pointwise'} (lambda={lam:g})"
    cut = f"Cascade on Greedy Miser {tag}lambda={lam:g}"
    rows[:] = [r for r in rows if r["family"] not in (cut, family)]      # a part stopped half way: redone
    if not rows.has(name):
        rows.append(measured(name, name.split(" (")[0], m.model_, te, time.perf_counter() - t0,
                             trees=m.n_estimators_))
    run_cascades(m, va, te, rows, cut)
    for thr in EE_GRID[:5]:                     # the per-query proximity rule on the same cost-sensitive bank
        r = proximity_exit(m.model_, te.X, te.qid, thr, exit_every=10)
        v = proximity_exit(m.model_, va.X, va.qid, thr, exit_every=10)
        rows.append(_exit_row(f"{family} (s={thr:g})", family, r, te, thr,
                              ndcg(va.y, v.scores, va.qid, order=v.order)))


def exit_summary(rows):
    """What the per-query rule buys over the per-row rule: for each per-query point, the cheapest per-row point
    with at least its test NDCG@5 (cost ratio), and the s each rule would take: the cheapest within 0.01 of the
    rule's best validation NDCG@5 over the grid."""
    q = [r for r in rows if r["family"] == "Early Exit (per query)"]
    w = [r for r in rows if r["family"] == "Early Exit (per row)"]
    if not q or not w:
        return ""
    lines = ["per-query vs per-row exit rule (test NDCG@5, cost per document):"]
    for r in q:
        match = [x for x in w if x["ndcg5"] >= r["ndcg5"]]
        if match:
            b = min(match, key=lambda x: x["cost"])
            lines.append(f"  per query s={r['s']:g}: NDCG@5 {r['ndcg5']:.4f} at {r['cost']:.1f}; cheapest per-row "
                         f"point as good: s={b['s']:g}, {b['ndcg5']:.4f} at {b['cost']:.1f}; cost ratio per query / "
                         f"per row = {r['cost'] / b['cost']:.3f}")
        else:
            lines.append(f"  per query s={r['s']:g}: NDCG@5 {r['ndcg5']:.4f} at {r['cost']:.1f}; no per-row point "
                         "is as good")
    for fam, pts in (("per query", q), ("per row", w)):
        top = max(x["val_ndcg5"] for x in pts)
        pick = min((x for x in pts if x["val_ndcg5"] >= top - 0.01), key=lambda x: x["cost"])
        lines.append(f"  chosen on validation ({fam}): s={pick['s']:g}, validation NDCG@5 {pick['val_ndcg5']:.4f}, "
                     f"test NDCG@5 {pick['ndcg5']:.4f} at {pick['cost']:.1f} per document")
    return "\n".join(lines)


def grid_points(grid, points):
    """Every other point of ``grid`` (all of a grid of <= 3), thinned to ``points`` evenly spread ones."""
    pts = list(grid[::2] if len(grid) > 3 else grid)
    if points is None or points >= len(pts):
        return pts
    return [pts[i] for i in sorted(set(np.linspace(0, len(pts) - 1, points).round().astype(int)))]


def run_papers_baselines(tr, va, te, costs, tree, rows, only, points=None, trees=200):
    """Cronus, CSCC and AFR on the skewed binary task (relevance >= 3), CSTC and ASTC as regressors on the
    relevance label, each ranked by its score; grids as the registry's, scaled to the mean cost (``points`` of
    them, ``grid_points``), banks of at most ``trees`` trees (Cronus, CSCC, AFR; CSTC and ASTC fit over the raw
    features and take no bank: the registry passes them no tree count)."""
    mean_cost = float(np.mean(costs))
    binary = lambda d: (d.y >= 3).astype(np.int64)   # noqa: E731
    small = dict(n_estimators=min(tree["n_estimators"], trees), max_depth=tree["max_depth"])
    for name in ("cronus", "cscc", "cstc", "astc", "afr"):
        if name not in only:
            continue
        spec = TRAINERS[name]
        task = "regression" if spec.on_ranking == "regression" else "classification"
        ytr = tr.y.astype(np.float64) if task == "regression" else binary(tr)
        grid = spec.scaled_grid(mean_cost)
        if spec.anytime:
            grid = grid[:1]
        for v in grid_points(grid, points):
            last = f"{spec.label} (budget 1 x static)" if spec.anytime else f"{spec.label} ({spec.sweep}={v:g})"
            if rows.has(last):
                continue                                        # measured already (--resume)
            est = spec.estimator(task, feature_costs=costs, tree_eval_cost=1.0, random_state=0, verbose=0,
                                 **small, **{spec.sweep: v})
            t0 = time.perf_counter()
            try:
                est.fit(tr.X, ytr)
            except Exception as e:                      # report, do not hide, a trainer that fails here
                print(f"  {spec.label} ({spec.sweep}={v:g}) failed: {type(e).__name__}: {e}")
                continue
            fit = time.perf_counter() - t0
            model = est.to_ir()
            if spec.anytime:
                full = model.static_cost()
                for frac in (1 / 16, 1 / 8, 1 / 4, 1 / 2, 1.0):
                    p = predict(model, te.X, budget=frac * full)
                    s = p.scores[:, 0]
                    rows.append(dict(method=f"{spec.label} (budget {frac:g} x static)", family=spec.label,
                                     ndcg5=ndcg(te.y, s, te.qid), p5=precision_at_k(te.y, s, te.qid, 5,
                                                                                   threshold=3),
                                     cost=float(p.cost.mean()), fit_time=fit))
            else:
                rows.append(measured(f"{spec.label} ({spec.sweep}={v:g})", spec.label, model, te, fit))


def run_lightgbm(tr, va, te, costs, tree, rows, only, threads):
    import lightgbm as lgb

    from skinflint.importers import from_lightgbm
    base = dict(objective="lambdarank", n_estimators=tree["n_estimators"], learning_rate=0.1,
                max_depth=tree["max_depth"], num_leaves=2 ** tree["max_depth"], min_child_samples=20,
                min_child_weight=1e-3, reg_lambda=0.0, max_bin=255, n_jobs=threads, verbose=-1,
                random_state=0)
    sizes = lambda d: d.groups_of_queries.sizes   # noqa: E731
    settings = [("LightGBM lambdarank", "LightGBM", {})]
    if "cegb" in only:
        for kind in ("coupled", "lazy"):
            settings += [(f"LightGBM CEGB {kind} (tradeoff={t:g})", f"LightGBM CEGB {kind}",
                          {"cegb_tradeoff": t, f"cegb_penalty_feature_{kind}": list(costs)})
                         for t in CEGB_GRIDS.get(kind, CEGB_GRID)]
    for name, family, extra in settings:
        if rows.has(name):
            continue                                            # measured already (--resume)
        m = lgb.LGBMRanker(**base, **extra)
        t0 = time.perf_counter()
        with warnings.catch_warnings():    # eval_set: renamed in LightGBM 4.7, the form every 4.x reads
            warnings.simplefilter("ignore", FutureWarning)
            warnings.filterwarnings("ignore", message=".*eval_set.*")
            m.fit(tr.X, tr.y, group=sizes(tr), eval_set=[(va.X, va.y)], eval_group=[sizes(va)], eval_at=[5])
        fit = time.perf_counter() - t0
        curve = m.evals_result_["valid_0"]["ndcg@5"]
        best = int(np.argmax(curve)) + 1
        model = with_tree_cost(from_lightgbm(m, costs, num_iteration=best))   # one-leaf trees (CEGB) included
        rows.append(measured(name, family, model, te, fit, trees=best))


def timing(tr, costs, tree, thread_counts=(None,), repeats=1, rows=None):
    """Fit time of a LambdaMART Greedy Miser and of LightGBM lambdarank: same rounds, depth, leaves
    (2^depth), bins (255), ``min_samples_leaf`` / ``min_child_samples`` 20, threads, no validation; after one
    warm-up fit each (numba compilation is not training).  Per thread count (None: numba's current), the two
    fits alternate ``repeats`` times; wall and process CPU seconds, the minimum of the repeats.  Each
    measurement is noted in ``rows`` (``Rows.note``) as soon as it is taken."""
    import lightgbm as lgb
    from common import timed_wall_cpu  # benchmarks/common.py, beside this script
    gm = dict(objective="lambdarank", cost_tradeoff=2e-5, feature_costs=costs, verbose=0, random_state=0,
              n_estimators=tree["n_estimators"], max_depth=tree["max_depth"], min_samples_leaf=20, max_bins=255)
    lg = dict(objective="lambdarank", n_estimators=tree["n_estimators"], max_depth=tree["max_depth"],
              num_leaves=2 ** tree["max_depth"], min_child_samples=20, max_bin=255, verbose=-1,
              random_state=0, min_child_weight=1e-3)
    sizes = tr.groups_of_queries.sizes
    GreedyMiserRanker(**dict(gm, n_estimators=2)).fit(tr.X[:2000], tr.y[:2000], tr.qid[:2000])
    out = []
    for threads in thread_counts:
        threads = threads or numba.get_num_threads()
        numba.set_num_threads(threads)
        lgb.LGBMRanker(**dict(lg, n_estimators=2, n_jobs=threads)).fit(tr.X, tr.y, group=sizes)
        fits = (("Greedy Miser LambdaMART", lambda: GreedyMiserRanker(**gm).fit(tr.X, tr.y, tr.qid)),
                ("LightGBM lambdarank",
                 lambda t=threads: lgb.LGBMRanker(**lg, n_jobs=t).fit(tr.X, tr.y, group=sizes)))
        best = {}
        for _ in range(repeats):
            for name, fit in fits:
                _, wall, cpu = timed_wall_cpu(fit)
                w0, c0 = best.get(name, (np.inf, np.inf))
                best[name] = (min(w0, wall), min(c0, cpu))
        (gw, gc), (lw, lc) = best["Greedy Miser LambdaMART"], best["LightGBM lambdarank"]
        t = dict(rounds=tree["n_estimators"], depth=tree["max_depth"], threads=threads, repeats=repeats,
                 n_docs=len(tr.y), n_features=tr.X.shape[1], gm_wall=gw, gm_cpu=gc, lgb_wall=lw, lgb_cpu=lc,
                 load=os.getloadavg()[0])
        if rows is not None:
            rows.note("timing", **t)
        out.append(t)
        print(timing_line(t), flush=True)
    return out


def timing_line(t):
    return (f"fit time, {t['n_docs']} documents x {t['n_features']} features, {t['rounds']} rounds of depth "
            f"{t['depth']}, {t['threads']} thread(s), best of {t['repeats']}, load {t['load']:.1f}: Greedy Miser "
            f"LambdaMART {t['gm_cpu']:.1f} s CPU ({t['gm_wall']:.1f} s wall), LightGBM lambdarank "
            f"{t['lgb_cpu']:.1f} s CPU ({t['lgb_wall']:.1f} s wall): ratio {t['gm_cpu'] / t['lgb_cpu']:.2f} CPU, "
            f"{t['gm_wall'] / t['lgb_wall']:.2f} wall (target <= 1.0)")


def _random_bank(rng, n_trees, depth, n_features, tree_cost=None):
    """``n_trees`` full random trees of ``depth`` over ``n_features``, grown depth first from ``rng``
    (thresholds standard normal, leaves 0.01 x normal): the bank both overhead timings score."""
    from skinflint import ir
    f, t, lft, rgt, v = [], [], [], [], []

    def grow(d):
        i = len(f)
        f.append(-1), t.append(0.0), lft.append(-1), rgt.append(-1), v.append([float(rng.normal()) * 0.01])
        if d < depth:
            f[i], t[i] = int(rng.integers(n_features)), float(rng.normal())
            lft[i] = grow(d + 1)
            rgt[i] = grow(d + 1)
        return i

    roots = [grow(0) for _ in range(n_trees)]
    return ir.trees_from_arrays(f, t, lft, rgt, v, roots=roots, tree_cost=tree_cost)


def rank_overhead(n_docs=100, n_queries=20, n_trees=1000, depth=6, n_features=50, repeats=7):
    """The reference runtime's query scoring against its per-row scoring of the same rows when nobody is
    dropped (checkpoints every 10 trees, gap too large to drop): what the query bookkeeping costs.  Medians."""
    from skinflint import ir
    from skinflint.runtimes.reference import ReferenceRuntime
    rng = np.random.default_rng(0)
    bank = _random_bank(rng, n_trees, depth, n_features)
    feats = ir.features_from_costs(rng.choice([1.0, 5.0, 20.0], n_features))
    after = ir.every(10, n_trees)
    plain = ReferenceRuntime(ir.model(feats, [bank], 0))
    query = ReferenceRuntime(ir.model(feats, [bank, ir.query_exit(0, after, keep=5, gap=[1e30] * len(after))], 1))
    X = rng.normal(size=(n_docs * n_queries, n_features)).astype(np.float32)
    sizes = [n_docs] * n_queries
    plain.predict(X[:n_docs]), query.rank(X[:n_docs], [n_docs])        # compile
    tp, tq = [], []
    for _ in range(repeats):
        t0 = time.perf_counter()
        p = plain.predict(X)
        tp.append(time.perf_counter() - t0)
        t0 = time.perf_counter()
        r = query.rank(X, sizes)
        tq.append(time.perf_counter() - t0)
    assert np.array_equal(p.scores, r.scores) and np.array_equal(p.cost, r.cost)
    a, b = float(np.median(tp)), float(np.median(tq))
    return (f"reference rank vs predict, {n_queries} queries x {n_docs} documents x {n_trees} depth-{depth} trees, "
            f"nobody dropped, {numba.get_num_threads()} threads: predict {a * 1e3:.1f} ms, rank {b * 1e3:.1f} ms "
            f"(medians of {repeats}), ratio {b / a:.2f}")


def c_rank_overhead(n_docs=100, n_queries=20, n_trees=1000, depth=6, n_features=50, every=10, repeats=15):
    """The generated C's ``sfm_rank_query`` against its per-row batch entry point (``sfm_predict_flat``) on
    the same queries when nobody is dropped (checkpoints every ``every`` trees, gap too large to drop, keep 5,
    so every checkpoint still ranks the query): the query bookkeeping's cost, issue 27's target <= 1.3x.
    Both called through ctypes once per query, alternately, with buffers made beforehand; one thread."""
    import ctypes

    from skinflint import ir
    from skinflint.runtimes.c import CRuntime
    rng = np.random.default_rng(0)
    bank = _random_bank(rng, n_trees, depth, n_features, tree_cost=np.ones(n_trees))
    feats = ir.features_from_costs(rng.choice([1.0, 5.0, 20.0], n_features))
    after = ir.every(every, n_trees)
    plain = CRuntime(ir.model(feats, [bank], 0))
    query_model = ir.model(feats, [bank, ir.query_exit(0, after, keep=5, gap=[1e30] * len(after))], 1)
    query = CRuntime(query_model)
    X = rng.normal(size=(n_docs * n_queries, n_features)).astype(np.float32)
    sizes = [n_docs] * n_queries
    ref = query.rank(X, sizes)
    assert not ref.dropped.any()
    p = (lambda a: a.ctypes.data_as(ctypes.c_void_p))  # noqa: E731
    scores, cost = np.zeros(n_docs, np.float32), np.zeros(n_docs)
    stage, trees, order = (np.zeros(n_docs, np.int32) for _ in range(3))
    dropped, used = np.zeros(n_docs, np.uint8), np.zeros((n_docs, n_features), np.uint8)
    proba, label = np.zeros(n_docs, np.float32), np.zeros(n_docs, np.int32)
    nbytes = query._lib.sfm_rank_query_workspace_bytes(n_docs)
    ws = ctypes.create_string_buffer(nbytes)
    rows = [p(X[q * n_docs:]) for q in range(n_queries)]
    out_rank = [p(a) for a in (scores, cost, stage, trees, dropped, order, used)]
    out_flat = [p(a) for a in (scores, proba, label, cost, stage, used)]
    tp, tq = [], []
    for _ in range(repeats):   # interleaved, query by query, so load on the machine hits both alike
        for x in rows:
            t0 = time.perf_counter()
            plain._lib.sfm_predict_flat(x, n_docs, None, *out_flat)
            t1 = time.perf_counter()
            if query._lib.sfm_rank_query(x, n_docs, None, *out_rank, ws, nbytes) != 0:
                raise RuntimeError("sfm_rank_query failed")
            tq.append(time.perf_counter() - t1)
            tp.append(t1 - t0)
    flat = plain.predict(X)
    assert np.array_equal(flat.scores, ref.scores) and np.array_equal(flat.cost, ref.cost)
    # the minimum: the time with the least interference from other processes; the median beside it
    a, b = float(np.min(tp)), float(np.min(tq))
    am, bm = float(np.median(tp)), float(np.median(tq))
    return (f"C rank_query vs per-row C (predict_flat), {n_docs} documents x {n_trees} depth-{depth} trees, "
            f"checkpoints every {every} trees, nobody dropped, {repeats * n_queries} calls each: per-row "
            f"{a * 1e3:.3f} ms/query, rank_query {b * 1e3:.3f} ms (minimum; medians {am * 1e3:.3f} and "
            f"{bm * 1e3:.3f}), ratio {b / a:.3f} (median {bm / am:.3f}; target <= 1.3)")


def headline(rows):
    ref = next(r for r in rows if r["method"] == "GBRT LambdaMART")
    ours = [r for r in rows if not r["family"].startswith("LightGBM")]
    ok = [r for r in ours if r["ndcg5"] >= ref["ndcg5"] - 0.01]
    best = min(ok, key=lambda r: r["cost"])
    lines = [f"full-cost LambdaMART (GBRT): NDCG@5 {ref['ndcg5']:.4f}, cost {ref['cost']:.1f} per document",
             f"cheapest skinflint model within 0.01 NDCG@5: {best['method']}: NDCG@5 {best['ndcg5']:.4f}, cost "
             f"{best['cost']:.1f} = {best['cost'] / ref['cost']:.3f} of the full model's (thesis on Yahoo: ~1/10)"]
    # LightGBM's (with or without CEGB) cheapest past the same bar: full-cost NDCG@5 - 0.01
    cegb = [r for r in rows if r["family"].startswith("LightGBM") and r["ndcg5"] >= ref["ndcg5"] - 0.01]
    if cegb:
        c = min(cegb, key=lambda r: r["cost"])
        lines.append(f"LightGBM's cheapest within 0.01 NDCG@5 of the full model: {c['method']}: NDCG@5 "
                     f"{c['ndcg5']:.4f}, cost {c['cost']:.1f}; skinflint / LightGBM cost = "
                     f"{best['cost'] / c['cost']:.3f} (target <= 0.8)")
        # at equal NDCG@5 both ways: each side's cheapest model at least as good as the other's chosen one
        for a, b_rows, b_name in ((best, cegb, "LightGBM"), (c, ok, "skinflint")):
            match = [r for r in b_rows if r["ndcg5"] >= a["ndcg5"]]
            if match:
                m = min(match, key=lambda r: r["cost"])
                s, lg = (m, a) if b_name == "skinflint" else (a, m)
                lines.append(f"  at NDCG@5 >= {a['ndcg5']:.4f}: {b_name}'s cheapest is {m['method']} ({m['ndcg5']:.4f}"
                             f", cost {m['cost']:.1f}); skinflint / LightGBM cost = {s['cost'] / lg['cost']:.3f}")
    else:
        lines.append(f"no LightGBM model is within 0.01 of NDCG@5 {ref['ndcg5']:.4f}")
    lines += frontier_ratios(ok, [r for r in rows if r["family"].startswith("LightGBM")])
    return "\n".join(lines)


def pareto(rows):
    """The rows no other row beats on both cost and NDCG@5, by cost."""
    out = []
    for r in sorted(rows, key=lambda r: (r["cost"], -r["ndcg5"])):
        if not out or r["ndcg5"] > out[-1]["ndcg5"]:
            out.append(r)
    return out


def frontier_ratios(ours, theirs):
    """At equal NDCG@5 along the frontiers: for each of ``ours``' Pareto points, ``theirs``' cost at that NDCG@5,
    interpolated linearly in log cost between the two Pareto points of ``theirs`` that bracket it (none where
    none do), and the cost ratio.  Two points 0.0001 NDCG@5 apart on either side of a bar are not compared."""
    front = pareto(theirs)
    lines = []
    for r in pareto(ours):
        for a, b in zip(front, front[1:], strict=False):
            if a["ndcg5"] <= r["ndcg5"] <= b["ndcg5"]:
                t = (r["ndcg5"] - a["ndcg5"]) / (b["ndcg5"] - a["ndcg5"])
                c = math.exp(math.log(a["cost"]) + t * (math.log(b["cost"]) - math.log(a["cost"])))
                lines.append(f"  frontier at NDCG@5 {r['ndcg5']:.4f}: {r['method']} {r['cost']:.1f}, LightGBM "
                             f"{c:.1f} (between {a['method']} and {b['method']}): ratio {r['cost'] / c:.3f}")
                break
    return (["at equal NDCG@5 along the frontiers (LightGBM's cost interpolated in log cost):"] + lines) if lines \
        else []


def table(rows):
    out = [f"{'model':<46} {'trees':>7} {'NDCG@5':>7} {'P@5':>6} {'cost/doc':>9} {'fit s':>7}"]
    for r in rows:
        trees = r.get("trees")
        trees = "" if trees is None else (f"{trees:.1f}" if isinstance(trees, float) else str(trees))
        out.append(f"{r['method']:<46} {trees:>7} {r['ndcg5']:>7.4f} {r['p5']:>6.3f} {r['cost']:>9.1f} "
                   f"{r['fit_time']:>7.1f}")
    return "\n".join(out)


def plot(rows, path):
    """Two panels: every model (left), and the region near the bar (right):
    skinflint's and LightGBM's Pareto frontiers with the headline's two
    points marked, the comparison the headline reads off."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    fig, (ax, zoom) = plt.subplots(1, 2, figsize=(15, 5.8), gridspec_kw={"width_ratios": [1.25, 1]})
    families = list(dict.fromkeys(r["family"] for r in rows))
    colors = plt.get_cmap("tab20").colors
    for i, fam in enumerate(families):
        pts = sorted((r["cost"], r["ndcg5"]) for r in rows if r["family"] == fam)
        anchor = fam.startswith("LightGBM")          # the anchors dashed, with crosses
        # past 20 families the colours repeat: squares then, so no two curves look alike
        ax.plot(*zip(*pts, strict=True), marker="x" if anchor else "os^"[i // len(colors) % 3], ms=5 if anchor else 4,
                ls="--" if anchor else "-", color=colors[i % len(colors)], label=fam)
    ax.set_xscale("log")
    ref = [r["ndcg5"] for r in rows if r["method"] == "GBRT LambdaMART"]
    if ref:
        ax.axhline(ref[0] - 0.01, color="0.4", lw=0.8, ls=":", label="full-cost LambdaMART - 0.01 (the bar)")
    if ref:             # a degenerate model (CEGB's one-leaf trees, NDCG@5 ~0.46) would squash the rest
        low = ref[0] - 0.2
        if any(r["ndcg5"] < low for r in rows):
            ax.set_ylim(bottom=low)
            ax.set_xlim(left=0.7 * min(r["cost"] for r in rows if r["ndcg5"] >= low))
            ax.set_title(f"every model (points below NDCG@5 {low:.2f} left out of the frame)", fontsize=9)
        else:
            ax.set_title("every model", fontsize=9)
    ax.set_xlabel("mean cost per document (feature costs + 1 per tree)")
    ax.set_ylabel("test NDCG@5")
    ax.grid(alpha=0.3)
    if ref:
        _plot_bar_region(zoom, rows, ref[0])
    else:
        zoom.set_visible(False)
    fig.tight_layout()
    # the left panel's many curves named below both panels, where no curve is hidden
    fig.legend(*ax.get_legend_handles_labels(), fontsize=7, loc="upper center", bbox_to_anchor=(0.5, 0.0), ncol=3,
               frameon=False)
    fig.savefig(path, dpi=120, bbox_inches="tight")
    print(f"plot: {path}")


def _plot_bar_region(ax, rows, full):
    """The right panel of ``plot``: NDCG@5 from 0.015 below the bar up, each
    side's Pareto frontier, and each side's cheapest model past the bar."""
    bar, low = full - 0.01, full - 0.025
    sides = (("skinflint (every model here)", False, "tab:blue", "-", "o"),
             ("LightGBM lambdarank, with or without CEGB", True, "tab:red", "--", "x"))
    for label, lgb, color, ls, marker in sides:
        side = [r for r in rows if r["family"].startswith("LightGBM") == lgb]
        front = [r for r in pareto(side) if r["ndcg5"] >= low]
        if not front:
            continue
        ax.plot([r["cost"] for r in front], [r["ndcg5"] for r in front], ls=ls, marker=marker, color=color,
                drawstyle="steps-post", label=f"{label}: Pareto frontier")
        past = [r for r in side if r["ndcg5"] >= bar]
        if past:
            best = min(past, key=lambda r: r["cost"])
            ax.plot(best["cost"], best["ndcg5"], marker="*", ms=14, color=color, ls="none",
                    label=f"cheapest past the bar: {best['method']} ({best['cost']:.0f}, {best['ndcg5']:.4f})")
    ax.axhline(bar, color="0.4", lw=0.8, ls=":", label="the bar: full-cost LambdaMART - 0.01")
    ax.set_xscale("log")
    ax.set_ylim(bottom=low, top=full + 0.004)
    ax.set_title("near the bar (the headline)", fontsize=9)
    ax.set_xlabel("mean cost per document (feature costs + 1 per tree)")
    ax.legend(fontsize=7, loc="lower right")   # the frontiers rise steeply, then run flat: the lower right stays empty
    ax.grid(alpha=0.3)


def report(rows, plot_path=None, header=True, timings=True):
    """Table, headline, exit summary, fit-time lines and plot of ``rows`` (a ``Rows``)."""
    for r in rows.runs[-1:] if header else ():
        print(f"== {r['description']}: {r['n_train']} / {r['n_valid']} / {r['n_test']} documents (train / "
              f"validation / test), {r['n_features']} features, {r['rounds']} rounds of depth {r['depth']}, "
              f"{r['threads']} threads ==")
    if len(rows):
        print(table(rows))
    if any(r["method"] == "GBRT LambdaMART" for r in rows):
        print(headline(rows))
    if any(r["family"].startswith("Early Exit (per") for r in rows):
        print(exit_summary(rows))
    for t in rows.timings if timings else ():
        print(timing_line(t))
    if plot_path and len(rows):
        plot(rows, plot_path)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--size", choices=sorted(SIZES), default="tiny")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--train"), ap.add_argument("--valid"), ap.add_argument("--test"), ap.add_argument("--costs")
    ap.add_argument("--rounds", type=int, help="boosting rounds (default: by --size)")
    ap.add_argument("--depth", type=int, default=4)
    ap.add_argument("--only",
                    default="gbrt,greedy-miser,early-exit,cascade,cronus,cscc,cstc,astc,afr,lightgbm,cegb,timing",
                    help="comma-separated parts to run")
    ap.add_argument("--gm-grid", help="comma-separated Greedy Miser lambdas (default: the module's GM_GRID)")
    ap.add_argument("--cegb-grid", help="comma-separated CEGB tradeoffs (default: the module's CEGB_GRID)")
    ap.add_argument("--objectives", default="lambdarank,squared",
                    help="the GBRT / Greedy Miser objectives to run: lambdarank (LambdaMART), squared (pointwise)")
    ap.add_argument("--cegb-lazy", help="comma-separated tradeoffs for CEGB lazy only (default: --cegb-grid)")
    ap.add_argument("--cegb-coupled", help="comma-separated tradeoffs for CEGB coupled only (default: --cegb-grid)")
    ap.add_argument("--ee-gm", default=f"lambdarank:{CASCADE_GM_LAMBDA:g}",
                    help="comma-separated objective:lambda of the Greedy Miser banks the cascade part cuts and "
                         "runs the per-query Early Exit on (e.g. squared:2e-5,lambdarank:5e-6)")
    ap.add_argument("--baseline-points", type=int,
                    help="grid points per paper baseline (Cronus, CSCC, CSTC, ASTC, AFR); default by --size")
    ap.add_argument("--baseline-trees", type=int, help="trees per paper baseline's bank; default by --size")
    ap.add_argument("--plot")
    ap.add_argument("--results", help="JSON lines file: each row appended as soon as it is measured")
    ap.add_argument("--resume", action="store_true",
                    help="with --results: keep the rows the file holds, fit only the models that are missing")
    ap.add_argument("--from-results", metavar="PATH",
                    help="only print the tables, headline, fit-time lines (and --plot) of a results file")
    ap.add_argument("--timing", action="store_true", help="only the fit-time comparison (GM LambdaMART vs LightGBM)")
    ap.add_argument("--timing-threads", default="",
                    help="comma-separated thread counts for the fit-time comparison (default: numba's)")
    ap.add_argument("--timing-repeats", type=int, default=1)
    ap.add_argument("--threads", type=int,
                    help="threads for the model rows (numba and LightGBM; default: numba's, NUMBA_NUM_THREADS)")
    ap.add_argument("--rank-overhead", action="store_true",
                    help="only time the reference runtime's query scoring against its per-row scoring")
    ap.add_argument("--c-rank-overhead", action="store_true",
                    help="only time the generated C's sfm_rank_query against its per-row batch scoring")
    args = ap.parse_args(argv)
    if args.rank_overhead:
        print(rank_overhead())
        return
    if args.c_rank_overhead:
        for every in (100, 10, 1):
            print(c_rank_overhead(every=every))
        return
    only = set(args.only.split(","))
    if args.from_results:
        report(Rows(args.from_results, resume=True), args.plot)
        return
    global GM_GRID, CEGB_GRID, OBJECTIVES
    OBJECTIVES = tuple(args.objectives.split(","))
    if args.gm_grid:
        GM_GRID = tuple(float(v) for v in args.gm_grid.split(","))
    if args.cegb_grid:
        CEGB_GRID = tuple(float(v) for v in args.cegb_grid.split(","))
    for kind in ("lazy", "coupled"):
        if getattr(args, f"cegb_{kind}"):
            CEGB_GRIDS[kind] = tuple(float(v) for v in getattr(args, f"cegb_{kind}").split(","))
    (tr, va, te), desc = load(args)
    rounds = args.rounds or SIZES[args.size][2]
    tree = dict(n_estimators=rounds, max_depth=args.depth)
    if args.threads:
        numba.set_num_threads(args.threads)
    threads = numba.get_num_threads()
    costs = np.asarray(tr.feature_costs, np.float64)
    rows = Rows(args.results, resume=args.resume)
    rows.note("run", description=desc, n_train=len(tr.y), n_valid=len(va.y), n_test=len(te.y),
              n_features=tr.X.shape[1], rounds=rounds, depth=args.depth, threads=threads, argv=sys.argv[1:],
              load=os.getloadavg()[0], max_rss_mb=resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024)
    print(f"== {desc}: {len(tr.y)} / {len(va.y)} / {len(te.y)} documents (train / validation / test), "
          f"{tr.X.shape[1]} features, {rounds} rounds of depth {args.depth}, {threads} threads ==", flush=True)
    counts = [int(t) for t in args.timing_threads.split(",") if t] or [None]
    if args.timing:
        timing(tr, costs, tree, counts, args.timing_repeats, rows)
        return
    run_rankers(tr, va, te, costs, tree, rows, only)
    if "cascade" in only:
        for spec in args.ee_gm.split(","):
            objective, lam = spec.split(":")
            run_gm_cascades(tr, va, te, costs, tree, rows, objective, float(lam))
    size = args.size if not args.train else "yahoo"
    run_papers_baselines(tr, va, te, costs, tree, rows, only,
                         points=args.baseline_points or BASELINE_POINTS[size],
                         trees=args.baseline_trees or BASELINE_TREES[size])
    if "lightgbm" in only:
        run_lightgbm(tr, va, te, costs, tree, rows, only, threads)
    report(rows, args.plot, header=False, timings=False)
    if "timing" in only:                             # last: a time limit stops it after everything else is out
        timing(tr, costs, tree, counts, args.timing_repeats, rows)


if __name__ == "__main__":
    main()
