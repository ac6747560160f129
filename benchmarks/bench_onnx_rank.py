"""The ONNX query graph (compilers/onnx_query.py, issue 27) against the plain exact ONNX graph of the same
tree bank on the same rows: one query of ``n_docs`` documents, ``n_trees`` depth-``depth`` random trees
(benchmarks/bench_rank.py's bank), checkpoints every ``every`` trees, keep 5, and a gap too large to drop
(nobody dropped: the bookkeeping's cost) or ``gap`` (documents dropped).  One onnxruntime thread, the two
sessions called alternately; minimum and median of ``repeats`` runs.

    nice python benchmarks/bench_onnx_rank.py [--every 10] [--repeats 30]
"""
from __future__ import annotations

import argparse
import time

import numpy as np


def onnx_rank_overhead(n_docs=100, n_trees=1000, depth=6, n_features=50, every=10, gap=1e30, repeats=30):
    import onnxruntime as ort

    from benchmarks.bench_rank import _random_bank
    from skinflint import ir
    from skinflint.compilers.onnx import compile_onnx
    from skinflint.runtimes.reference import rank
    rng = np.random.default_rng(0)
    bank = _random_bank(rng, n_trees, depth, n_features, tree_cost=np.ones(n_trees))
    feats = ir.features_from_costs(rng.choice([1.0, 5.0, 20.0], n_features))
    after = ir.every(every, n_trees)
    plain_model = ir.model(feats, [bank], 0)
    query_model = ir.model(feats, [bank, ir.query_exit(0, after, keep=5, gap=[gap] * len(after))], 1)
    t0 = time.perf_counter()
    qp = compile_onnx(query_model)
    t_compile = time.perf_counter() - t0
    opts = ort.SessionOptions()
    opts.intra_op_num_threads = 1
    sess = [ort.InferenceSession(p.SerializeToString(), opts, providers=["CPUExecutionProvider"])
            for p in (compile_onnx(plain_model), qp)]
    X = rng.normal(size=(n_docs, n_features)).astype(np.float32)
    feed = {"X": X, "budget": np.full(n_docs, np.inf)}
    ref = rank(query_model, X, [n_docs])
    out = dict(zip([o.name for o in sess[1].get_outputs()], sess[1].run(None, feed), strict=True))
    assert np.array_equal(out["scores"].view(np.uint32), ref.scores.view(np.uint32))
    assert np.array_equal(out["cost"].view(np.uint64), ref.cost.view(np.uint64))
    for name in ("order", "stage", "n_trees", "dropped", "features_used"):     # a wrong graph is not timed
        assert np.array_equal(out[name], getattr(ref, name)), name
    times: list[list[float]] = [[], []]
    for _ in range(repeats):
        for i, s in enumerate(sess):
            t0 = time.perf_counter()
            s.run(None, feed)
            times[i].append(time.perf_counter() - t0)
    a, b = (float(np.min(t)) for t in times)
    am, bm = (float(np.median(t)) for t in times)
    return (f"ONNX rank graph vs plain exact graph, {n_docs} documents x {n_trees} depth-{depth} trees, "
            f"{len(after)} checkpoints, {int(ref.dropped.sum())} dropped, 1 thread: plain {a * 1e3:.2f} ms, "
            f"rank {b * 1e3:.2f} ms (minimum of {repeats}; medians {am * 1e3:.2f} and {bm * 1e3:.2f}), "
            f"ratio {b / a:.2f} (median {bm / am:.2f}); rank graph {len(qp.graph.node)} ops, compiled in "
            f"{t_compile:.1f} s")


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--every", type=int, nargs="+", default=[10, 100])
    ap.add_argument("--repeats", type=int, default=30)
    args = ap.parse_args(argv)
    for every in args.every:
        print(onnx_rank_overhead(every=every, repeats=args.repeats), flush=True)
        print(onnx_rank_overhead(every=every, gap=0.02, repeats=args.repeats), flush=True)


if __name__ == "__main__":
    main()
