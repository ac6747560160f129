"""Every onnxruntime minor from 1.16 to the newest against the reference
(``make onnx-compat``; issue 33).

Each minor's newest release is installed once into a throwaway folder under
the cache (``pip install --target``, with numpy < 2, which onnxruntime
before 1.19 needs), and a standalone runner (``ort_runner.py``, numpy and
onnxruntime only) runs the graphs there.  The graphs, rows and budgets are
written here, in the main environment, and the outputs are compared here,
with the parity harness's own comparison (``skinflint.verify.compare``):

* graphs: every example model, the golden models of
  tests/compilers/golden (every node kind, groups, tree costs, kernels,
  classifier trees) and the category-set models of
  tests/parity/test_onnx_categorical.py (every rule), exact, for each target ("onnxruntime-1.16", the
  default, and "no-ml-ops" must run everywhere; "onnxruntime-1.24" from
  1.24), the same in the latency schedule (``batch_hint=1``), and fast
  mode for tree-bank outputs;
* rows: adversarial rows (every threshold exactly and one ulp either side,
  NaN, +-inf; for category sets every code, negatives, non-integers, codes
  past the sets' words), then one row, then zero rows;
* budgets: +inf (no budget binds: the case that crashed 1.16-1.30), at and
  around each row's cost (``budgets_around``), and 0;
* query-level graphs (issue 27, compilers/onnx_query.py: one query per run),
  for each target: the proximity rule on the papers' gap schedule, rank
  cutoffs with costs whose sums depend on their order, both rules mixed
  over free trees, category sets, and scores that overflow to +-inf (the
  gap test's inf - inf is NaN); queries of 1, 2, 5, 40 and 252 documents with copies (ties), each
  under budgets +inf, around each document's cost and 0, and zero
  documents.  Their rank outputs (scores, cost, stage, features used,
  order, trees done, drops) must be the reference ``rank``'s bit for bit.

Exact graphs must match bit for bit (outputs, scores, probabilities, cost,
stage, features used); fast graphs' scores within the bound of
docs/numerics.md.  A crash, a refusal of a graph the version must run, or a
mismatch fails the run, naming the version and the case.

    python -m tests.compat.ort_matrix [--versions 1.16.3,1.32.0] [--cache DIR] [--jobs 2] [--only query]

The cache (default ``$SKINFLINT_COMPAT_CACHE`` or ~/.cache/skinflint-compat)
keeps wheels and installed folders between runs.
"""
from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor

import numpy as np

RUNNER = os.path.join(os.path.dirname(os.path.abspath(__file__)), "ort_runner.py")
OLDEST = (1, 16)
# what the runner's folders hold besides onnxruntime: the numpy every
# onnxruntime from 1.16 was built against runs them all (1.16-1.18 need < 2)
DEPS = ["numpy<2", "packaging", "flatbuffers"]
# graphs a version must run: the targets' names and the oldest minor of each
MUST_RUN = {"onnxruntime-1.16": (1, 16), "no-ml-ops": (1, 16), "onnxruntime-1.24": (1, 24)}
ROWS = 256


def minor(v):
    return tuple(int(x) for x in v.split(".")[:2])


def registry_versions():
    """The newest release of every onnxruntime minor from 1.16 that the
    package registry has for this Python."""
    out = subprocess.run([sys.executable, "-m", "pip", "index", "versions", "onnxruntime"],
                         capture_output=True, text=True, timeout=300)
    m = re.search(r"Available versions: (.*)", out.stdout)
    if not m:
        raise SystemExit(f"could not list onnxruntime versions from the registry:\n{out.stdout}{out.stderr}")
    newest = {}
    for v in (s.strip() for s in m.group(1).split(",")):
        if re.fullmatch(r"\d+\.\d+\.\d+", v) and minor(v) >= OLDEST:
            newest[minor(v)] = max(newest.get(minor(v), v), v, key=lambda s: tuple(map(int, s.split("."))))
    return [newest[k] for k in sorted(newest)]


def pip_target(folder, *requirements):
    """Install into ``folder`` once (a marker file says it is complete)."""
    if os.path.exists(os.path.join(folder, ".complete")):
        return folder
    cmd = [sys.executable, "-m", "pip", "install", "-q", "--disable-pip-version-check", "--no-deps",
           "--only-binary", ":all:", "--target", folder, *requirements]
    r = subprocess.run(cmd, capture_output=True, text=True, timeout=900)
    if r.returncode:
        raise SystemExit(f"installing {requirements} failed:\n{r.stdout}{r.stderr}")
    open(os.path.join(folder, ".complete"), "w").close()
    return folder


def fast_bound(model):
    """[K]: how far a fast graph's scores may be from the reference's:
    floating-point summation of n terms errs by at most (n - 1) 2^-24
    sum|term| (Higham, Thm 4.4); the terms are the base score and each
    tree's leaf, bounded by its largest |leaf| (tests/parity/test_onnx.py)."""
    bank = model.nodes[model.output]
    owner = bank.tree_ranges()
    biggest = np.zeros((bank.n_trees, bank.value.shape[1]))
    np.maximum.at(biggest, owner, np.abs(bank.value.astype(np.float64)))
    return bank.n_trees * 2.0 ** -24 * (np.abs(np.asarray(bank.base_score, np.float64)) + biggest.sum(0))


def build_cases(folder):
    """Write the graphs and feeds; returns (cases for the runner, checks):
    checks[feed] = (model, X, reference Prediction, kind, target)."""
    import onnx

    from skinflint import ir
    from skinflint.compilers.onnx import compile_onnx
    from skinflint.compilers.onnx_trees import TARGETS
    from skinflint.runtimes.reference import predict
    from skinflint.verify import adversarial_rows, budgets_around
    from tests.conftest import example_paths
    golden = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "compilers", "golden")
    from tests.parity.test_onnx_categorical import categorical_models, categorical_rows
    paths = example_paths() + sorted(os.path.join(golden, n) for n in os.listdir(golden) if n.endswith(".json"))
    models = [(os.path.basename(p)[:-5], ir.load(p), adversarial_rows) for p in paths]
    # category-set splits (issue 34): their decisions are standard ops before the tree operator
    models += [(name, m, categorical_rows) for name, m in categorical_models().items()]
    cases, checks = [], {}
    for name, model, rows_of in models:
        rows = rows_of(model)
        if len(rows) > ROWS:
            rows = rows[np.sort(np.random.default_rng(0).choice(len(rows), ROWS, replace=False))]
        cost = predict(model, rows).cost
        feeds = {"inf": (rows, np.full(len(rows), np.inf)), "around": (rows, budgets_around(cost)),
                 "zero": (rows, np.zeros(len(rows))), "one_row": (rows[:1], np.full(1, np.inf)),
                 "no_rows": (rows[:0], np.zeros(0))}
        trees_out = model.nodes[model.output].kind == "trees"
        has_trees = any(n.kind == "trees" for n in model.nodes)
        graphs = [(t, "exact") for t in TARGETS if has_trees or t == "onnxruntime-1.16"]
        graphs += [(t, "fast") for t in TARGETS if trees_out]
        # the exact graph's latency schedule (compile_onnx's batch_hint), exact too
        graphs += [(t, "latency") for t in TARGETS if has_trees or t == "onnxruntime-1.16"]
        for target, mode in graphs:
            gname = f"{name}.{target}.{mode}"
            proto = (compile_onnx(model, target=target, batch_hint=1) if mode == "latency"
                     else compile_onnx(model, target=target, mode=mode))
            onnx.save(proto, os.path.join(folder, gname + ".onnx"))
            files = []
            for fname, (X, b) in feeds.items():
                if mode == "fast" and fname in ("around", "zero"):
                    continue
                f = f"{gname}.{fname}.npz"
                np.savez(os.path.join(folder, f), X=X, budget=b)
                checks[f] = (model, X, predict(model, X, budget=b), mode, target)
                files.append(f)
            cases.append({"graph": gname + ".onnx", "feeds": files, "target": target, "mode": mode})
    query_cases(folder, cases, checks)
    with open(os.path.join(folder, "cases.json"), "w") as f:
        json.dump(cases, f)
    return cases, checks


QUERY_SIZES = (1, 2, 5, 40, 252)
RANK_FIELDS = ("scores", "cost", "stage", "features_used", "order", "n_trees", "dropped")


def query_models():
    """{name: (model with a query_exit, rows)}: the rules, cost paths and score extremes of the query graph
    (module docstring); rows with every third one a copy of the one before, so scores tie."""
    from skinflint import ir
    from tests.parity.test_c_rank import categorical_query_model, integer_rows, stumps, zero_tree_costs
    from tests.parity.test_onnx_rank import inexact_costs
    from tests.ranking.test_query_exit import grid_rows, random_bank_model
    n = sum(QUERY_SIZES)

    def with_exit(m, **kw):
        return ir.model(m.features, [m.nodes[0], ir.query_exit(0, m.nodes[1].after, **kw)], 1, groups=m.groups)

    prox = random_bank_model(3, n_trees=16, checkpoints=[2, 5, 9, 13])
    prox = with_exit(prox, keep=[5, 3, 3, 2], gap=ir.proximity_gaps(1.0, [2, 5, 9, 13], 16))
    cut = inexact_costs(with_exit(random_bank_model(4, n_trees=16, checkpoints=[1, 4, 8, 15]), rule="cutoff",
                                  keep=[120, 30, 6, 1]))
    big = 3e38      # leaves whose sums overflow float32: +-inf scores (the gap test then sees inf - inf: NaN)
    inf_bank = stumps([(big, -big), (big, -big), (-big, big), (1.0, 0.0)], features=[0, 1, 2, 0],
                      tree_cost=[1.0, 0.0, 1.0, 0.5])
    infinite = ir.model(ir.features_from_costs([1.0, 2.0, 4.0]),
                        [inf_bank, ir.query_exit(0, [1, 2, 3], rule=["proximity", "cutoff", "proximity"],
                                                 keep=[6, 3, 2], gap=[0.0, 0.0, 1e30])], 1)
    codes = np.array([[(c >> i) & 1 for i in range(3)] for c in range(8)], np.float32)
    out = {"query_proximity": (prox, grid_rows(n, 6, 3)), "query_cutoff": (cut, grid_rows(n, 6, 4)),
           "query_mixed_free_trees": (zero_tree_costs(random_bank_model(1)), grid_rows(n, 6, 1)),
           "query_infinite": (infinite, codes[np.random.default_rng(0).integers(8, size=n)])}
    cat = categorical_query_model(0)
    out["query_categorical"] = (cat, integer_rows(n, cat.n_features, 0))
    for _, X in out.values():
        X[2::3] = X[1::3][:len(X[2::3])]
    return out


def query_cases(folder, cases, checks):
    """Add the query-level graphs (one per model and target) and their feeds, one query per feed, with
    the reference's ``Ranking`` of that query as the check."""
    import onnx

    from skinflint.compilers.onnx import compile_onnx
    from skinflint.compilers.onnx_trees import TARGETS
    from skinflint.runtimes.reference import rank
    from skinflint.verify import budgets_around
    for name, (model, X) in query_models().items():
        full = rank(model, X, list(QUERY_SIZES))
        budgets = {"inf": np.full(len(X), np.inf), "around": budgets_around(full.cost), "zero": np.zeros(len(X))}
        feeds = {"no_rows": (X[:0], np.zeros(0), rank(model, X[:0], []))}
        for bname, b in budgets.items():
            a = 0
            for q, size in enumerate(QUERY_SIZES):
                sl = slice(a, a + size)
                feeds[f"{bname}.q{q}"] = (X[sl], b[sl], rank(model, X[sl], [size], b[sl]))
                a += size
        for target in TARGETS:
            # feeds named after the graph: the runner names each output after its feed
            gname = f"{name}.{target}.query"
            onnx.save(compile_onnx(model, target=target), os.path.join(folder, gname + ".onnx"))
            files = []
            for fname, (Xq, b, ref) in feeds.items():
                f = f"{gname}.{fname}.npz"
                np.savez(os.path.join(folder, f), X=Xq, budget=b)
                checks[f] = (model, Xq, ref, "query", target)
                files.append(f)
            cases.append({"graph": gname + ".onnx", "feeds": files, "target": target, "mode": "query"})


def judge_query(got, check):
    """'' when a query graph's outputs are the reference ``rank``'s bit for bit, else what differs."""
    from skinflint.runtimes.onnx import prediction_from_outputs
    model, X, ref, _, _ = check
    if not all(k in got for k in ("order", "n_trees", "dropped")):
        return f"no rank outputs: {sorted(got)}"
    p = prediction_from_outputs({"kind": model.task.kind, "classes": list(model.task.classes)}, got)
    mine = {"scores": p.scores, "cost": p.cost, "stage": p.stage, "features_used": p.features_used,
            "order": got["order"], "n_trees": got["n_trees"], "dropped": got["dropped"]}
    wrong = []
    for k in RANK_FIELDS:
        a, b = np.asarray(getattr(ref, k)), mine[k]
        if b is None or a.shape != np.shape(b) or a.dtype != np.asarray(b).dtype:
            wrong.append(f"{k} {None if b is None else (np.shape(b), np.asarray(b).dtype)} != {a.shape, a.dtype}")
        else:       # bit patterns: -0.0 and NaN included
            diff = (a.view(np.uint8).reshape(len(a), -1) != np.ascontiguousarray(b).view(np.uint8).reshape(
                len(a), -1)).any(1) if len(a) else np.zeros(0, bool)
            if diff.any():
                wrong.append(f"{k}: {int(diff.sum())} of {len(a)} documents differ (first "
                             f"{np.flatnonzero(diff)[:3].tolist()})")
    return "; ".join(wrong)


def judge(feed, got, check):
    """'' when the outputs are right, else what is wrong."""
    from skinflint.runtimes.onnx import prediction_from_outputs
    from skinflint.verify import compare
    model, X, ref, mode, _ = check
    if mode == "query":
        return judge_query(got, check)
    task = {"kind": model.task.kind, "classes": list(model.task.classes)}
    shapes = {k: v.shape[0] for k, v in got.items() if v.shape[0] != len(X)}
    if shapes:
        return f"rows {shapes}, expected {len(X)}"
    p = prediction_from_outputs(task, got)
    if mode == "fast":
        err = np.abs(np.asarray(p.scores, np.float64) - ref.scores)
        bound = fast_bound(model)
        over = ~(err <= bound[None])      # NaN errors count as over
        return f"{int(over.any(1).sum())} rows' scores beyond the bound {bound.tolist()}" if over.any() else ""
    if not len(X):      # compare() reshapes by rows, which an empty batch cannot: shapes and types
        want = {"scores": ref.scores, "cost": ref.cost, "stage": ref.stage, "features_used": ref.features_used,
                "proba": ref.proba}
        wrong = [k for k, v in want.items() if v is not None and (
            getattr(p, k) is None or np.shape(getattr(p, k))[1:] != v.shape[1:] or
            (np.asarray(getattr(p, k)).dtype.kind != v.dtype.kind))]
        return f"zero rows: {wrong} differ in shape or type" if wrong else ""
    rep = compare(model, X, ref, p, feed)
    if rep.ok:
        return ""
    counts = {k: getattr(rep, k) for k in ("output", "scores", "proba", "cost", "stage", "features_used")}
    return f"rows differing {counts}, max ulp {rep.max_ulp}; first: {rep.worst_rows[:1]}"


def run_version(version, cache, cases_dir, cases, checks):
    """(version, list of failures, list of notes, seconds)."""
    t0 = time.perf_counter()
    ort_dir = pip_target(os.path.join(cache, f"onnxruntime-{version}"), f"onnxruntime=={version}")
    deps = pip_target(os.path.join(cache, "deps"), *DEPS)
    out = tempfile.mkdtemp(prefix=f"ort-{version}-", dir=cases_dir)
    r = subprocess.run([sys.executable, "-I", RUNNER, cases_dir, out, "--path", ort_dir, "--path", deps,
                        "--expect-version", version], capture_output=True, text=True, timeout=900)
    lines = r.stdout.splitlines()
    fails, notes = [], []
    refused = {ln.split()[1]: ln for ln in lines if ln.startswith("REFUSED ")}
    fails += [ln for ln in lines if ln.startswith("ERROR ")]
    if r.returncode:
        last = [ln for ln in lines if ln.startswith("RUN ")][-1:] or ["(before any case)"]
        how = f"signal {-r.returncode}" if r.returncode < 0 else f"exit {r.returncode}"
        fails.append(f"crashed ({how}) at {last[0]}: {r.stderr.strip()[-500:]}")
    for case in cases:
        g = case["graph"]
        if minor(version) < MUST_RUN[case["target"]]:
            notes.append(f"{case['target']} {'refused' if g in refused else 'not claimed'}")
            continue
        if g in refused:
            fails.append(refused[g])
            continue
        for feed in case["feeds"]:
            res = os.path.join(out, feed[:-4] + ".out.npz")
            if not os.path.exists(res):
                continue                      # after a crash: reported above
            with np.load(res) as z:
                got = {k: z[k] for k in z.files}
            why = judge(feed, got, checks[feed])
            if why:
                fails.append(f"{feed}: {why}")
    return version, fails, notes, time.perf_counter() - t0


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--versions", help="comma-separated onnxruntime versions (default: the newest of every "
                                       "minor from 1.16 on the registry)")
    ap.add_argument("--cache", default=os.environ.get("SKINFLINT_COMPAT_CACHE",
                                                      os.path.expanduser("~/.cache/skinflint-compat")))
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--only", help="run only the graphs whose name contains this (e.g. 'query', 'golden')")
    args = ap.parse_args(argv)
    t0 = time.perf_counter()
    versions = args.versions.split(",") if args.versions else registry_versions()
    os.makedirs(args.cache, exist_ok=True)
    pip_target(os.path.join(args.cache, "deps"), *DEPS)
    with tempfile.TemporaryDirectory(prefix="skinflint-compat-") as d:
        cases, checks = build_cases(d)
        if args.only:
            cases = [c for c in cases if args.only in c["graph"]]
            with open(os.path.join(d, "cases.json"), "w") as f:
                json.dump(cases, f)
        print(f"{len(cases)} graphs, {len(checks)} feeds; onnxruntime {', '.join(versions)}", flush=True)
        with ThreadPoolExecutor(args.jobs) as pool:
            results = list(pool.map(lambda v: run_version(v, args.cache, d, cases, checks), versions))
    bad = 0
    for version, fails, notes, secs in results:
        refused = sorted(set(notes))
        print(f"onnxruntime {version:8s} {'ok' if not fails else 'FAILED':6s} {secs:5.1f} s"
              + (f"  (target {', '.join(refused)}, as documented)" if refused else ""))
        for f in fails:
            print(f"    {f}")
        bad += bool(fails)
    print(f"{len(results) - bad} of {len(results)} onnxruntime versions exact "
          f"({time.perf_counter() - t0:.0f} s)")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
