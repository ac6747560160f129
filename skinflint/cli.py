"""The ``skinflint`` command line.  Errors are one line, never a traceback."""
from __future__ import annotations

import argparse
import sys

import numpy as np

EXIT_USAGE = 2


class CLIError(Exception):
    """A user-facing error: printed as one line."""


def _load_model(path):
    from . import ir
    return ir.load(path)


def _load_rows(path, n_features):
    """Feature rows from a CSV (header optional).  A file with one column more
    than the model has features carries a label last, which is dropped."""
    from .datasets import read_csv_matrix
    M, _ = read_csv_matrix(path)
    if M.shape[1] == n_features + 1:
        M = M[:, :-1]
    if M.shape[1] != n_features:
        raise CLIError(f"{path}: {M.shape[1]} columns, but the model has {n_features} features")
    return M.astype(np.float32)


def cmd_inspect(args):
    m = _load_model(args.model)
    print(m.inspect())


def cmd_predict(args):
    from .runtimes.reference import predict
    m = _load_model(args.model)
    X = _load_rows(args.data, m.n_features)
    p = predict(m, X, args.budget)
    print("row,output,cost,stage")
    for i in range(len(p.cost)):
        print(f"{i},{p.output[i]},{p.cost[i]:.6g},{p.stage[i]}")


def cmd_demo(args):
    from .demo import run_demo
    run_demo(out_dir=args.out, quick=args.quick)


def build_parser():
    p = argparse.ArgumentParser(
        prog="skinflint",
        description="Learn models that are cheap to run, and ship them with exact per-row cost.")
    sub = p.add_subparsers(dest="command", metavar="COMMAND")
    s = sub.add_parser("inspect", help="summarise a model: nodes, features, static cost",
                       description="Print a model's task, nodes, the features each tree or stage "
                                   "reads, and its static cost.")
    s.add_argument("model", help="model JSON file")
    s.set_defaults(func=cmd_inspect)
    s = sub.add_parser("predict", help="predict rows with the reference runtime",
                       description="Print output, lazy cost and stage for each row of a CSV.")
    s.add_argument("model")
    s.add_argument("--data", required=True, help="CSV of feature rows (a trailing label column is ignored)")
    s.add_argument("--budget", type=float, default=None, help="per-row cost budget")
    s.set_defaults(func=cmd_predict)
    s = sub.add_parser("demo", help="train, compile and verify on bundled data",
                       description="The quick start: train on bundled real data, compile, verify "
                                   "parity, and print the cost/accuracy table.")
    s.add_argument("--out", default="skinflint-demo", help="folder for the artifacts")
    s.add_argument("--quick", action="store_true", help="a smaller run, for tests")
    s.set_defaults(func=cmd_demo)
    return p


def main(argv=None):
    from .ir import IRError
    parser = build_parser()
    args = parser.parse_args(argv)
    if not getattr(args, "func", None):
        parser.print_help()
        return EXIT_USAGE
    try:
        args.func(args)
    except (CLIError, IRError, ValueError, FileNotFoundError, ImportError) as e:
        print(f"skinflint: error: {e}", file=sys.stderr)
        return 1
    except OSError as e:
        print(f"skinflint: error: {e.strerror or e}: {getattr(e, 'filename', '')}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        return 130
    return 0


if __name__ == "__main__":
    sys.exit(main())
