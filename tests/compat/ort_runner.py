"""Run saved skinflint graphs in one onnxruntime and save their raw outputs.

Standalone on purpose: it imports only numpy and onnxruntime (never
skinflint), so it runs in a throwaway environment holding an old onnxruntime
and the numpy it was built for (numpy < 2 before onnxruntime 1.19).
``tests/compat/ort_matrix.py`` writes the cases and compares the outputs
with the reference in the main environment.

    python -I ort_runner.py CASES OUT [--path DIR ...] [--expect-version V]

CASES holds ``cases.json`` (a list of {"graph": file, "feeds": [file, ...]})
with the graphs and the feeds (.npz with "X" and, where the graph takes
one, "budget").  Each feed's outputs go to OUT/<feed>.out.npz (string
labels as a unicode array: no pickle).  A line "RUN <graph> <feed>" is
printed, flushed, before each run, so a crash (SIGFPE) names the case; a
graph the runtime refuses to load is reported as "REFUSED <graph> <reason>"
and skipped.
"""
import argparse
import json
import os
import sys


def main(argv=None):
    ap = argparse.ArgumentParser()
    ap.add_argument("cases")
    ap.add_argument("out")
    ap.add_argument("--path", action="append", default=[], help="put DIR first on sys.path (repeatable)")
    ap.add_argument("--expect-version", help="fail unless this onnxruntime version is the one imported")
    args = ap.parse_args(argv)
    sys.path[:0] = args.path
    import numpy as np
    import onnxruntime as ort

    if args.expect_version and ort.__version__ != args.expect_version:
        raise SystemExit(f"imported onnxruntime {ort.__version__} from {ort.__file__}, "
                         f"expected {args.expect_version}")
    print(f"VERSION onnxruntime {ort.__version__} numpy {np.__version__}", flush=True)
    with open(os.path.join(args.cases, "cases.json")) as f:
        cases = json.load(f)
    opts = ort.SessionOptions()
    opts.intra_op_num_threads = 1      # the matrix runs versions side by side
    for case in cases:
        path = os.path.join(args.cases, case["graph"])
        try:
            sess = ort.InferenceSession(path, opts, providers=["CPUExecutionProvider"])
        except Exception as e:  # noqa: BLE001 - any refusal to load is reported, the caller judges it
            print(f"REFUSED {case['graph']} {type(e).__name__}: {str(e).splitlines()[0][:300]}", flush=True)
            continue
        names = [o.name for o in sess.get_outputs()]
        inputs = {i.name for i in sess.get_inputs()}
        for feed_file in case["feeds"]:
            print(f"RUN {case['graph']} {feed_file}", flush=True)
            with np.load(os.path.join(args.cases, feed_file)) as z:
                feed = {k: z[k] for k in z.files if k in inputs}
            try:
                got = sess.run(names, feed)
            except Exception as e:  # noqa: BLE001 - reported as this case's failure, the others still run
                print(f"ERROR {feed_file} {type(e).__name__}: {str(e).splitlines()[0][:300]}", flush=True)
                continue
            out = {n: (np.asarray(v.tolist(), dtype=str).reshape(v.shape) if v.dtype == object else v)
                   for n, v in zip(names, got, strict=True)}
            np.savez(os.path.join(args.out, feed_file[:-len(".npz")] + ".out.npz"), **out)
    print("DONE", flush=True)


if __name__ == "__main__":
    main()
