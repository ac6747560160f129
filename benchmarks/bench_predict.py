"""Prediction speed, build time and code size of generated C, against
tl2cgen-generated C for the same trees, in one run.

    python benchmarks/bench_predict.py [--rows 20000] [--only c|onnx] [--onnx-cpu]
    python benchmarks/bench_predict.py --save DIR       # before a compiler change
    python benchmarks/bench_predict.py --against DIR    # after it: old vs new
    python benchmarks/bench_predict.py --latency-parts [--rounds 101]   # where a single row's time goes

``--save`` / ``--against`` need no anchors: synthetic depth-6 trees (100
and 1000, seeded) are compiled to the exact ONNX graph and to C; ``--save``
writes those artifacts to DIR (and the latency schedule's graph,
``batch_hint=1``), and ``--against`` times DIR's artifacts and the current
compilers' side by side in CPU time on one thread (``--only onnx``: the
graphs only; the latency graph on single rows), rounds interleaved, best
round kept (the shared machine's slow spells hit both
alike).

The trees come from LightGBM (depth 6, 63 leaves); they are converted to
the skinflint IR (thresholds rounded down to float32, which is exact for
float32 inputs) and to tl2cgen through treelite.  One C harness times both
per row, so no FFI overhead is measured.  Also reported: codegen + compile
time at 100 and 1000 trees, Cortex-M4 object size and flash bytes per tree
node, and the Python-level reference (numba) throughput.  C is timed three ways: the
blocked batch walk (``sfm_predict_batch``), the per-row dense API and the
on-demand API.

``--latency-parts``: the 100-tree latency graph (``batch_hint=1``, budget
input) on single rows against the converted model and a copy of itself
(the copy's difference is the noise floor), medians of paired rounds; then
what each part of the graph costs: the graph with that part's ops removed
(their outputs held as constants, onnxruntime's optimizations off on both
so nothing downstream folds) against the whole graph, and the outputs'
Python cost (all six fetched against two).

ONNX: the same trees through onnxruntime as skinflint's exact graph (scores,
per-row cost, stage, features used, budget input) and fast graph (one summed
ensemble), against the onnxmltools conversion of the LightGBM model and
LightGBM's own predict: batch throughput (rows/s) and single-row latency.
Needs: lightgbm, treelite, tl2cgen, onnxmltools (pip; ``pip install -e
'.[bench]'``), gcc; arm-none-eabi-gcc for sizes.
"""
import argparse
import shutil
import subprocess
import tempfile

import numpy as np
from common import timed  # benchmarks/common.py, beside this script

# the C timing harness: skinflint's three C entry points on the same rows (ns per row, CPU time),
# and, in the comparison with tl2cgen, tl2cgen's predict on the same rows too
_HARNESS_HEAD = r"""
#define _POSIX_C_SOURCE 199309L
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include "sfm.h"
/* CPU time of this process: a busy shared machine slows it far less than wall time */
static double now(void) {
    struct timespec t;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t);
    return t.tv_sec + 1e-9 * t.tv_nsec;
}
typedef struct { const float *row; } src;
static float fetch(void *ctx, int32_t j) { return ((src *)ctx)->row[j]; }
"""
_TL2CGEN_DECLARATIONS = r"""
union Entry { int missing; double fvalue; int qvalue; };
void predict(union Entry* data, int pred_margin, double* result);
"""
_HARNESS_MAIN = r"""
int main(int argc, char **argv) {
    long n = atol(argv[2]), F = SFM_N_FEATURES, i, reps = atol(argv[3]), r;
    float *X = malloc(sizeof(float) * n * F);
    FILE *fh = fopen(argv[1], "rb");
    sfm_result res, *outs = malloc(sizeof(sfm_result) * n); sfm_workspace ws; src s; double t0, chk = 0;
    if (fread(X, sizeof(float), n * F, fh) != (size_t)(n * F)) return 1;
    fclose(fh);
    t0 = now();
    for (r = 0; r < reps; ++r) for (i = 0; i < n; ++i) { sfm_predict(X + i * F, &res); chk += res.scores[0]; }
    printf("dense %.3f\n", (now() - t0) / (n * reps) * 1e9);
    t0 = now();
    for (r = 0; r < reps; ++r) {
        sfm_predict_batch(X, (int32_t)n, 0, outs);
        for (i = 0; i < n; ++i) chk += outs[i].scores[0];
    }
    printf("batch %.3f\n", (now() - t0) / (n * reps) * 1e9);
    t0 = now();
    for (r = 0; r < reps; ++r)
        for (i = 0; i < n; ++i) {
            s.row = X + i * F;
            sfm_predict_lazy(fetch, &s, 1e300, &ws, &res);
            chk += res.scores[0];
        }
    printf("lazy %.3f\n", (now() - t0) / (n * reps) * 1e9);
"""
_TL2CGEN_TIMING = r"""
    {
        union Entry *e = malloc(sizeof(union Entry) * F);
        double out[1];
        long j;
        t0 = now();
        for (r = 0; r < reps; ++r) for (i = 0; i < n; ++i) {
            for (j = 0; j < F; ++j) e[j].fvalue = X[i * F + j];
            predict(e, 1, out); chk += out[0];
        }
        printf("tl2cgen %.3f\n", (now() - t0) / (n * reps) * 1e9);
    }
"""
_HARNESS_TAIL = r"""
    fprintf(stderr, "checksum %g\n", chk);
    return 0;
}
"""


def c_harness(tl2cgen=False):
    """The C timing harness (``argv``: rows file, row count, repetitions):
    prints ``dense``, ``batch`` and ``lazy`` ns per row, and with ``tl2cgen``
    also tl2cgen's ``predict`` on the same rows (linked from its own C)."""
    return "".join([_HARNESS_HEAD, _TL2CGEN_DECLARATIONS if tl2cgen else "", _HARNESS_MAIN,
                    _TL2CGEN_TIMING if tl2cgen else "", _HARNESS_TAIL])


def _cpu_timed(fn):
    """(result, CPU seconds of this process) of fn()."""
    import time
    t = time.process_time()
    out = fn()
    return out, time.process_time() - t


def _throughput_and_latency(run, X, reps=3, singles=300, batch=True, clock=timed):
    """(rows/s on the whole batch, microseconds per single-row call): the
    best of ``reps`` batch runs, so one slow spell of a shared machine does
    not decide a ratio.  ``batch=False``: single rows only (rows/s nan).
    ``clock``: ``timed`` (wall) or ``_cpu_timed``."""
    run(X[:16])
    t = min(clock(lambda: run(X))[1] for _ in range(reps)) if batch else np.nan
    _, t1 = clock(lambda: [run(X[i:i + 1]) for i in range(singles)])
    return len(X) / t, t1 / singles * 1e6


def bench_onnx(clf, model, X, cpu=False):
    """``cpu``: every session on one onnxruntime thread (LightGBM on one
    thread), timed in CPU seconds of this process: on a busy shared machine
    the wall clock of a many-op graph on 2 threads moves with the other
    work (each op's parallel section waits for a descheduled thread), CPU
    time much less."""
    import onnxmltools
    import onnxruntime as ort
    from onnxmltools.convert.common.data_types import FloatTensorType

    from skinflint import ir
    from skinflint.compilers.onnx import compile_onnx
    F = X.shape[1]
    # the same trees with every feature costing 0.1
    model_decimal = ir.model(ir.features_from_costs(np.full(F, 0.1)), list(model.nodes), model.output,
                             task=model.task)

    exact_proto, t_compile = timed(lambda: compile_onnx(model))
    inf = np.full(len(X), np.inf)
    free = ort.InferenceSession(exact_proto.SerializeToString(), providers=["CPUExecutionProvider"])
    half = free.run(["cost"], {"X": X, "budget": inf})[0] / 2
    del free
    # (name, proto, budget or None): unit costs add exactly in any order, so
    # only rows over their budget are sorted (half its own cost stops every
    # row early); costs of 0.1 do not, and every row is sorted
    runs = [("onnxmltools + onnxruntime", onnxmltools.convert_lightgbm(
                clf, initial_types=[("X", FloatTensorType([None, F]))], zipmap=False, target_opset=15), None),
            ("skinflint fast", compile_onnx(model, mode="fast"), None),
            ("skinflint exact, costs 1", exact_proto, inf),
            ("  same, budget = cost / 2", exact_proto, half),
            ("skinflint exact, costs 0.1", compile_onnx(model_decimal), inf),
            # the latency schedule: single rows only (its first-touch search
            # holds [rows, trees, features] slots: not for 20,000-row batches)
            ("exact, batch_hint=1", compile_onnx(model, batch_hint=1), inf),
            ("  same, no budget input", compile_onnx(model, batch_hint=1, budget=False), None)]
    rows = {}
    opts, clock = (_one_thread_options(), _cpu_timed) if cpu else (ort.SessionOptions(), timed)

    def keep(name, got):
        rows[name] = got if name not in rows else (max(rows[name][0], got[0]), min(rows[name][1], got[1]))
    # one session alive at a time, as deployed: an idle session's threads
    # spin for a while and would steal the 2 cores from the one measured.
    # Rounds interleave the models; each keeps its best round.
    for _ in range(3):
        for name, proto, budget in runs:
            sess = ort.InferenceSession(proto.SerializeToString(), opts, providers=["CPUExecutionProvider"])
            feeds = (lambda x: {"X": x}) if budget is None else \
                (lambda x, b=budget: {"X": x, "budget": b[:len(x)]})
            keep(name, _throughput_and_latency(lambda x, sess=sess, feeds=feeds: sess.run(None, feeds(x)), X,
                                               batch="batch_hint" not in name and "same, no budget" not in name,
                                               clock=clock))
            del sess
        keep("LightGBM predict", _throughput_and_latency(
            lambda x: clf.booster_.predict(x, raw_score=True, **({"num_threads": 1} if cpu else {})), X, clock=clock))
    base, base_lat = rows["onnxmltools + onnxruntime"]
    print(f"  ONNX{' (one thread, CPU time)' if cpu else ''} (exact graph: {len(exact_proto.graph.node)} ops, "
          f"compiled in {t_compile:.2f} s; "
          f"batch_hint=1: {len(runs[5][1].graph.node)} ops):")
    for name, (tp, lat) in rows.items():
        batch = "(single rows only)".rjust(57) if np.isnan(tp) else \
            f"{tp:>12,.0f} rows/s  ({base / tp:5.2f}x the converted model's time)"
        print(f"    {name:<28} {batch}  single row {lat:7.1f} us ({lat / base_lat:5.2f}x)")




# the latency graph's parts (``--latency-parts``), told apart by node name and op
LATENCY_PARTS = ("tree operator, its Cast and Split", "halt: sort, budget test, min", "features_used and cost",
                 "stage", "score: values, CumSum, pick", "label", "probabilities (exact logistic)")


def _latency_part(node):
    """The index in LATENCY_PARTS of a latency graph's node."""
    name, op = node.name, node.op_type
    if name.startswith("leaf/ensemble/"):
        return 0
    if name.startswith("pay/guarded/"):
        return 2 if op in ("Less", "ReduceSum") or (op == "Cast" and node.input[0] == "features_used") else 1
    if name.startswith("route/stage/"):
        return 3
    if name.startswith(("leaf/values/", "value/", "route/scores/")):
        return 4
    if name.startswith(("out/Mul", "out/ArgMax")):
        return 5
    if name.startswith(("out/Cast", "out/proba/")):
        return 6
    raise ValueError(f"latency graph node {name} belongs to no part")


def _one_thread_options(optimize=True):
    """onnxruntime session options on one thread (intra- and inter-op), warnings only;
    ``optimize=False`` turns the graph optimizations off."""
    import onnxruntime as ort
    opts = ort.SessionOptions()
    opts.intra_op_num_threads = opts.inter_op_num_threads = 1
    opts.log_severity_level = 3
    if not optimize:
        opts.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    return opts


def _paired_rounds(sessions, feeds, rounds, reps=300):
    """[rounds, len(sessions)] CPU microseconds per single-row call: each
    round runs every session on ``reps`` rows, in a fresh random order."""
    import time
    rng = np.random.default_rng(0)
    t = np.zeros((rounds, len(sessions)))
    for r in range(rounds + 2):      # two warm-up rounds
        for k in rng.permutation(len(sessions)):
            run, fk = sessions[k], feeds[k]
            t0 = time.process_time()
            for i in range(reps):
                run(fk[i])
            if r >= 2:
                t[r - 2, k] = (time.process_time() - t0) / reps * 1e6
    return t


def latency_parts(clf, model, X, rounds=101):
    """Where a single row's time goes in the 100-tree latency graph (one
    thread, CPU time, paired rounds; docs/onnx.md, issue 30)."""
    import copy

    import onnx
    import onnxmltools
    import onnxruntime as ort
    from onnx import numpy_helper
    from onnxmltools.convert.common.data_types import FloatTensorType

    from skinflint.compilers.onnx import compile_onnx
    F = X.shape[1]
    conv = onnxmltools.convert_lightgbm(clf, initial_types=[("X", FloatTensorType([None, F]))], zipmap=False,
                                        target_opset=15)
    proto = compile_onnx(model, batch_hint=1)
    rows = [X[i:i + 1] for i in range(300)]
    b1 = np.full(1, np.inf)
    opts = _one_thread_options()

    def session(p, o=opts):
        return ort.InferenceSession(p.SerializeToString(), o, providers=["CPUExecutionProvider"])
    s_conv, s_exact, s_copy = session(conv), session(proto), session(proto)
    exact_feeds = [{"X": x, "budget": b1} for x in rows]
    t = _paired_rounds([lambda f: s_conv.run(None, f), lambda f: s_exact.run(None, f),
                        lambda f: s_copy.run(None, f), lambda f: s_exact.run(["label", "probabilities"], f)],
                       [[{"X": x} for x in rows], exact_feeds, exact_feeds, exact_feeds], rounds)
    med = np.median(t, 0)
    print(f"  100 trees, latency graph ({len(proto.graph.node)} ops), single rows, one thread, CPU time, "
          f"median of {rounds} paired rounds:")
    print(f"    converted model {med[0]:6.2f} us; exact {med[1]:6.2f} us "
          f"({np.median(t[:, 1] / t[:, 0]):.3f}x, per round); a copy of it differs by "
          f"{np.median(t[:, 2] - t[:, 1]):+.2f} us (the noise floor)")
    print(f"    four outputs (scores, cost, stage, features_used) in Python: {np.median(t[:, 1] - t[:, 3]):.2f} us")
    # per part: the graph without its ops, their outputs held as one row's
    # values; onnxruntime's optimizations off on both graphs
    values = copy.deepcopy(proto)
    named = {o.name for o in values.graph.output}
    for n in values.graph.node:
        values.graph.output.extend(onnx.ValueInfoProto(name=o) for o in n.output if o not in named)
    plain = _one_thread_options(optimize=False)
    sv = session(values, plain)
    held = dict(zip([o.name for o in sv.get_outputs()], sv.run(None, exact_feeds[0])))
    cut = []
    for k in range(len(LATENCY_PARTS)):
        part = copy.deepcopy(proto)
        gone = [n for n in part.graph.node if _latency_part(n) == k]
        kept = [n for n in part.graph.node if _latency_part(n) != k]
        needed = {i for n in kept for i in n.input} | named
        del part.graph.node[:]
        part.graph.node.extend(kept)
        part.graph.initializer.extend(numpy_helper.from_array(held[o], o) for n in gone for o in n.output
                                      if o in needed)
        cut.append((len(gone), session(part, plain)))
    whole = session(proto, plain)
    runs = [lambda f: whole.run(None, f)] + [lambda f, s=s: s.run(None, f) for _, s in cut]
    t = _paired_rounds(runs, [exact_feeds] * len(runs), rounds)
    print(f"    parts (the graph without them against the whole, {np.median(t[:, 0]):.2f} us with "
          f"optimizations off):")
    for k, (name, (n_ops, _)) in enumerate(zip(LATENCY_PARTS, cut)):
        print(f"      {name:<36} {n_ops:3d} ops  {np.median(t[:, 0] - t[:, k + 1]):6.2f} us")


def synthetic_model(n_trees, n_features=50, depth=6, seed=0):
    """Complete random trees (thresholds N(0, 1), unit feature costs): a
    stand-in for LightGBM's when the anchors are not installed."""
    from skinflint import ir
    rng = np.random.default_rng(seed)
    n_inner, n = 2 ** depth - 1, 2 ** (depth + 1) - 1
    i = np.arange(n)
    inner = i < n_inner
    trees = [dict(feature=np.where(inner, rng.integers(0, n_features, n), -1),
                  threshold=np.where(inner, rng.normal(size=n), 0.0).astype(np.float32),
                  left=np.where(inner, 2 * i + 1, -1), right=np.where(inner, 2 * i + 2, -1),
                  value=(0.1 * rng.normal(size=n)).astype(np.float32), missing_left=rng.random(n) < 0.5)
             for _ in range(n_trees)]
    return ir.model(ir.features_from_costs(np.ones(n_features)), [ir.concat_trees(trees)], 0,
                    task=ir.binary_task())


def save_artifacts(out_dir):
    import os

    import onnx

    from skinflint.compilers.c import render
    from skinflint.compilers.onnx import compile_onnx
    for T in (100, 1000):
        model = synthetic_model(T)
        d = os.path.join(out_dir, str(T))
        os.makedirs(d, exist_ok=True)
        onnx.save(compile_onnx(model), os.path.join(d, "exact.onnx"))
        onnx.save(compile_onnx(model, batch_hint=1), os.path.join(d, "latency.onnx"))
        for name, text in render(model, "sfm").items():
            with open(os.path.join(d, name), "w") as fh:
                fh.write(text)
    print(f"artifacts written to {out_dir}")


def compare_artifacts(old_dir, n_rows, rounds=6, only=None):
    """Old (saved) and new artifacts, rounds interleaved, best round each:
    the exact graph on the batch, the latency schedule (``batch_hint=1``,
    when DIR has it) on single rows, and the C entry points (not with
    ``only="onnx"``)."""
    import os

    import onnxruntime as ort

    from skinflint.compilers.c import C_FLAGS, render
    from skinflint.compilers.onnx import compile_onnx
    rng = np.random.default_rng(1)
    # CPU time on one thread: old and new graphs do the same work whatever
    # else the shared machine runs (wall time varied 0.7x-1.3x between two
    # copies of one artifact under load)
    one_thread = _one_thread_options()

    def cpu_timed(fn):
        return _cpu_timed(fn)[1]
    with tempfile.TemporaryDirectory() as work:
        for T in (100, 1000):
            model = synthetic_model(T)
            X = rng.normal(size=(n_rows, model.n_features)).astype(np.float32)
            X.tofile(f"{work}/X.bin")
            new_dir = os.path.join(work, f"new{T}")
            os.makedirs(new_dir)
            for name, text in render(model, "sfm").items():
                with open(os.path.join(new_dir, name), "w") as fh:
                    fh.write(text)
            protos = {"old": open(os.path.join(old_dir, str(T), "exact.onnx"), "rb").read(),
                      "new": compile_onnx(model).SerializeToString()}
            latency = os.path.join(old_dir, str(T), "latency.onnx")
            latency = {"old": open(latency, "rb").read(),
                       "new": compile_onnx(model, batch_hint=1).SerializeToString()} if os.path.exists(latency) else {}
            exes = {}
            for tag, d in (("old", os.path.join(old_dir, str(T))), ("new", new_dir)):
                if only == "onnx":
                    break
                with open(f"{work}/h.c", "w") as fh:
                    fh.write(c_harness())
                exes[tag] = f"{work}/bench_{tag}{T}"
                subprocess.run(["gcc", *C_FLAGS, "-O2", f"-I{d}", "-o", exes[tag], f"{work}/h.c",
                                os.path.join(d, "sfm.c")], check=True)
            best = {}
            feed = {"X": X, "budget": np.full(n_rows, np.inf)}
            for r in range(rounds):
                for tag in (("old", "new") if r % 2 == 0 else ("new", "old")):   # neither always first
                    sess = ort.InferenceSession(protos[tag], one_thread, providers=["CPUExecutionProvider"])
                    sess.run(None, {"X": X[:16], "budget": feed["budget"][:16]})
                    t = min(cpu_timed(lambda sess=sess, feed=feed: sess.run(None, feed)) for _ in range(3))
                    del sess
                    best[("onnx", tag)] = min(best.get(("onnx", tag), np.inf), t / n_rows * 1e9)
                    if latency:     # single rows: 300 calls, microseconds per call
                        sess = ort.InferenceSession(latency[tag], one_thread, providers=["CPUExecutionProvider"])
                        ones = [{"X": X[i:i + 1], "budget": feed["budget"][:1]} for i in range(300)]
                        sess.run(None, ones[0])
                        t = cpu_timed(lambda sess=sess, ones=ones: [sess.run(None, f) for f in ones])
                        del sess
                        best[("latency", tag)] = min(best.get(("latency", tag), np.inf), t / 300 * 1e6)
                    if only == "onnx":
                        continue
                    out = subprocess.run([exes[tag], f"{work}/X.bin", str(n_rows), "3" if T == 100 else "1"],
                                         capture_output=True, text=True, check=True).stdout
                    for line in out.strip().splitlines():
                        k, v = line.split()
                        best[(k, tag)] = min(best.get((k, tag), np.inf), float(v))
            print(f"{T} trees, {n_rows} rows, CPU ns per row (single rows: us per call), one thread "
                  f"(best of {rounds} interleaved rounds):")
            for k in ("onnx", "latency", "dense", "lazy", "batch"):
                if (k, "old") not in best:
                    continue
                label = {"onnx": "ONNX exact (batch)", "latency": "ONNX batch_hint=1 (1 row)", "dense": "C dense",
                         "lazy": "C on-demand", "batch": "C batch"}[k]
                o, n = best[(k, "old")], best[(k, "new")]
                print(f"  {label:<26} old {o:9.1f}  new {n:9.1f}  new/old {n / o:5.3f}")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--save", metavar="DIR", help="write this checkout's artifacts to DIR and stop")
    ap.add_argument("--against", metavar="DIR", help="time DIR's artifacts against this checkout's")
    ap.add_argument("--rows", type=int, default=20_000)
    ap.add_argument("--features", type=int, default=50)
    ap.add_argument("--only", choices=["c", "onnx"], help="run one half (tl2cgen takes minutes)")
    ap.add_argument("--onnx-cpu", action="store_true",
                    help="ONNX on one onnxruntime thread, timed in CPU seconds (steadier on a busy machine)")
    ap.add_argument("--latency-parts", action="store_true",
                    help="where a single row's time goes in the 100-tree latency graph, and its ratio")
    ap.add_argument("--rounds", type=int, default=101, help="paired rounds of --latency-parts")
    args = ap.parse_args()
    if args.save:
        return save_artifacts(args.save)
    if args.against:
        return compare_artifacts(args.against, args.rows, only=args.only)
    import lightgbm as lgb

    from skinflint.importers import from_lightgbm
    rng = np.random.default_rng(0)
    F = args.features
    X = rng.normal(size=(args.rows, F)).astype(np.float32)
    y = (X[:, :5].sum(1) + np.sin(3 * X[:, 5]) > 0).astype(int)
    print(f"{args.rows} rows x {F} features, depth-6 trees")
    for T in ((100,) if args.latency_parts else (100, 1000)):
        clf = lgb.LGBMClassifier(n_estimators=T, max_depth=6, num_leaves=63, learning_rate=0.05,
                                 verbose=-1).fit(X, y)
        model = from_lightgbm(clf)   # unit costs; routing exact (docs/importers.md)
        if args.latency_parts:
            return latency_parts(clf, model, X, args.rounds)
        print(f"\n{T} trees ({model.nodes[0].feature.shape[0]} nodes)")
        if args.only != "c":
            bench_onnx(clf, model, X, cpu=args.onnx_cpu)
        if args.only != "onnx":
            bench_c(clf.booster_, model, X, T, args.rows)


def m4_flash(c_file, work):
    """Flash bytes (text + data) of the generated C for a Cortex-M4F at -Os,
    or None without arm-none-eabi-gcc."""
    arm = shutil.which("arm-none-eabi-gcc")
    if not arm:
        return None
    from skinflint.compilers.c import C_FLAGS
    flags = ["-Os", "-mcpu=cortex-m4", "-mthumb", "-mfloat-abi=hard", "-mfpu=fpv4-sp-d16"]
    subprocess.run([arm, *C_FLAGS, *flags, "-c", "-o", f"{work}/m4.o", c_file], check=True)
    sz = subprocess.run(["arm-none-eabi-size", f"{work}/m4.o"], capture_output=True, text=True).stdout
    text, data = sz.splitlines()[1].split()[:2]
    return int(text) + int(data)


def float32_twin(model):
    """The model with its (float64, LightGBM's) leaves rounded to float32:
    the size of the same trees when float32 leaves are enough."""
    from dataclasses import replace

    from skinflint import ir
    from skinflint.ir.arrays import frozen
    nodes = [replace(n, value=frozen(np.asarray(n.value, np.float32)),
                     base_score=frozen(np.asarray(n.base_score / n.divisor, np.float32)), precision="float32",
                     divisor=1.0) if n.kind == "trees" else n for n in model.nodes]
    return ir.model(model.features, nodes, model.output, task=model.task, groups=model.groups)


def bench_c(booster, model, X, T, n_rows):
    """Per-row, batch and on-demand C against tl2cgen's C for the same
    trees (one harness, no FFI), the batch through Python against the
    numba reference, and flash per split node on a Cortex-M4."""
    import tl2cgen
    import treelite

    from skinflint.compilers.c import C_FLAGS, compile_c
    from skinflint.runtimes.c import CRuntime
    from skinflint.runtimes.reference import ReferenceRuntime
    bank = model.nodes[0]
    n_nodes, n_splits = bank.feature.shape[0], int((bank.feature >= 0).sum())
    lg = booster.predict(X, raw_score=True)
    ours = ReferenceRuntime(model).predict(X).scores[:, 0]
    agree = np.max(np.abs(lg - ours))
    with tempfile.TemporaryDirectory() as work:
        _, t_gen = timed(lambda: compile_c(model, work, prefix="sfm"))
        _, t_cc = timed(lambda: subprocess.run(["gcc", *C_FLAGS, "-O2", "-c", "-o", f"{work}/sfm.o",
                                                f"{work}/sfm.c"], check=True))
        tl = treelite.frontend.from_lightgbm(booster)
        _, t_tlgen = timed(lambda: tl2cgen.generate_c_code(tl, f"{work}/tl", params={}))
        _, t_tlcc = timed(lambda: subprocess.run(["gcc", "-O2", "-c", "-o", f"{work}/tl.o",
                                                  f"{work}/tl/main.c"], check=True))
        with open(f"{work}/h.c", "w") as fh:
            fh.write(c_harness(tl2cgen=True))
        subprocess.run(["gcc", "-O2", "-o", f"{work}/bench", f"{work}/h.c", f"{work}/sfm.o",
                        f"{work}/tl.o", "-lm", f"-I{work}"], check=True)
        X.tofile(f"{work}/X.bin")
        reps = 5 if T == 100 else 1
        out = subprocess.run([f"{work}/bench", f"{work}/X.bin", str(n_rows), str(reps)],
                             capture_output=True, text=True, check=True).stdout
        ns = {k: float(v) for k, v in (line.split() for line in out.strip().splitlines())}
        flash = m4_flash(f"{work}/sfm.c", work)
        compile_c(float32_twin(model), f"{work}/f32", prefix="sfm")
        flash32 = m4_flash(f"{work}/f32/sfm.c", work)
    rt = CRuntime(model)
    rt.predict(X[:16])
    _, t_batch = timed(lambda: rt.predict(X))
    ref = ReferenceRuntime(model)
    ref.predict(X[:16])
    _, t_ref = timed(lambda: ref.predict(X))
    tl_ns = ns["tl2cgen"]
    print(f"  C, ns per row (per tree and row); |LightGBM - skinflint| max {agree:.2e}")
    for k, label in (("batch", "batch (blocked walk)"), ("dense", "per row"), ("lazy", "on-demand"),
                     ("tl2cgen", "tl2cgen")):
        print(f"    {label:<22} {ns[k]:>10.0f} ns ({ns[k] / T:6.1f} per tree)  {ns[k] / tl_ns:5.2f}x tl2cgen's time")
    print(f"  codegen + compile (gcc -O2): skinflint {t_gen:.2f} + {t_cc:.2f} = {t_gen + t_cc:.2f} s; "
          f"tl2cgen {t_tlgen:.2f} + {t_tlcc:.2f} = {t_tlgen + t_tlcc:.2f} s")
    print(f"  batch through Python: C (ctypes) {n_rows / t_batch:,.0f} rows/s; "
          f"reference (numba) {n_rows / t_ref:,.0f} rows/s  (C / reference = {t_ref / t_batch:.2f}x the speed)")
    if flash is None:
        print("  Cortex-M4 size: arm-none-eabi-gcc not installed")
    else:
        print(f"  Cortex-M4F -Os, text + data of the model's object ({n_splits:,} split nodes, {n_nodes:,} nodes):")
        for label, size in (("float64 leaves (as imported)", flash), ("float32 leaves", flash32)):
            print(f"    {label:<30} {size:>10,} bytes  {size / n_splits:5.1f} per split node, "
                  f"{size / n_nodes:5.1f} per node")

if __name__ == "__main__":
    main()


# -- ONNX targets (issue 33): the graph without tree operators beside the tree-operator forms ------------------
def bench_onnx_targets(n_rows, n_features, rounds=3):
    """Rows/s of the exact (budget +inf) and fast graphs of each compile
    target on synthetic_model's trees, best of ``rounds`` interleaved, one
    session alive at a time; in brackets, time relative to the default
    target's (docs/onnx.md)."""
    import time

    import onnxruntime as ort

    from skinflint.compilers.onnx import compile_onnx
    from skinflint.compilers.onnx_trees import DEFAULT_TARGET, TARGETS
    X = np.random.default_rng(1).normal(size=(n_rows, n_features)).astype(np.float32)
    feeds = {"exact": {"X": X, "budget": np.full(n_rows, np.inf)}, "fast": {"X": X}}
    for T in (100, 1000):
        model = synthetic_model(T, n_features)
        protos = {(t, m): compile_onnx(model, target=t, mode=m).SerializeToString()
                  for m in feeds for t in TARGETS}
        best = dict.fromkeys(protos, np.inf)
        for _ in range(rounds):
            for (t, m), proto in protos.items():
                sess = ort.InferenceSession(proto, providers=["CPUExecutionProvider"])
                sess.run(None, {k: v[:16] for k, v in feeds[m].items()})
                t0 = time.perf_counter()
                sess.run(None, feeds[m])
                best[(t, m)] = min(best[(t, m)], time.perf_counter() - t0)
                del sess
        print(f"\nONNX targets, {T} synthetic depth-6 trees, {n_rows} rows: rows/s (time vs {DEFAULT_TARGET})")
        for (t, m), s in best.items():
            print(f"  {m:<5} {t:<17} {n_rows / s:>12,.0f}  ({s / best[(DEFAULT_TARGET, m)]:.2f}x)")


if __name__ == "__main__":
    _args = argparse.ArgumentParser(add_help=False)
    for _opt in ("--save", "--against", "--only"):
        _args.add_argument(_opt)
    _args.add_argument("--onnx-cpu", action="store_true")
    _args.add_argument("--latency-parts", action="store_true")
    _args.add_argument("--rows", type=int, default=20_000)
    _args.add_argument("--features", type=int, default=50)
    _args = _args.parse_known_args()[0]
    if not (_args.save or _args.against or _args.only == "c" or _args.onnx_cpu or _args.latency_parts):
        bench_onnx_targets(_args.rows, _args.features)
