"""The ``skinflint`` command line.  Errors are one line, never a traceback."""
from __future__ import annotations

import argparse
import contextlib
import os
import signal
import sys
import threading
import time

import numpy as np

from .compilers.onnx_trees import DEFAULT_TARGET as ONNX_DEFAULT_TARGET
from .compilers.onnx_trees import TARGETS as ONNX_TARGETS
from .compress import cli as compress_cli
from .runtimes.registry import DEFAULT_CHECKED, RUNTIMES

EXIT_USAGE = 2


class CLIError(Exception):
    """A user-facing error: printed as one line."""


def _load_model(path):
    from . import ir
    return ir.load(path)


def _read_csv(path):
    from .datasets import read_csv_matrix
    try:
        return read_csv_matrix(path)
    except FileNotFoundError as e:
        raise CLIError(f"{e.filename or path}: no such file") from None
    except IsADirectoryError:
        raise CLIError(f"{path}: is a folder, not a CSV file") from None


def _load_rows(path, model):
    """A model's feature rows from a CSV.  With a header, columns are taken
    by name in the model's order (one extra column, last, is a label and
    dropped; any other extra or missing name is an error naming them).
    Without one, by position: a file with one column more than the model
    has features carries a label last, which is dropped."""
    from .ir.feature_costs import column_order
    M, header = _read_csv(path)
    n_features = model.n_features
    if header is not None:
        return M[:, column_order(model.feature_names, header, what=path)].astype(np.float32)
    if M.shape[1] == n_features + 1:
        M = M[:, :-1]
    if M.shape[1] != n_features:
        raise CLIError(f"{path}: {M.shape[1]} columns, but the model has {n_features} features")
    return M.astype(np.float32)


def _load_costs(path):
    from .ir import FeatureCosts
    if path is None:
        return None
    try:
        return FeatureCosts.from_csv(path)
    except FileNotFoundError:
        raise CLIError(f"{path}: no such file") from None


def _load_training(path, fmt, costs_path, group=None):
    """A ``Dataset`` whose costs follow the data's columns: a cost file is
    matched to a CSV header by name, to data without names by position
    (``ir.feature_costs.match_columns``, the rule of the Python API).
    Ranking data keep their query ids: svmlight's ``qid:`` or a ``.query``
    file of group sizes (``group``: its path; ``<data>.query`` is read when
    it exists), a CSV's query column (``group``: its header name or index)."""
    from .datasets import Dataset, load_svmlight
    from .ir.feature_costs import match_columns
    fmt = fmt or ("svmlight" if path.endswith((".svm", ".svmlight", ".libsvm", ".txt")) else "csv")
    costs = _load_costs(costs_path)
    if fmt == "csv":
        M, header = _read_csv(path)
        if M.shape[1] < 2:
            raise CLIError(f"{path}: expected feature columns and the label last, got one column")
        qid = None
        if group is not None:
            qcol = _query_column(group, header, M.shape[1], path)
            qid = M[:, qcol]
            M = np.delete(M, qcol, axis=1)
            header = [h for j, h in enumerate(header) if j != qcol] if header else None
        X, y, names = M[:, :-1], M[:, -1], (header[:-1] if header else None)
        y = y.astype(np.int64) if np.all(y == np.round(y)) else y
    else:
        try:
            ds = load_svmlight(path, query=group)
        except FileNotFoundError as e:
            raise CLIError(f"{e.filename or path}: no such file") from None
        X, y, names, qid = ds.X, ds.y, None, ds.qid
    try:
        fc = match_columns(costs, names, X.shape[1], what=f"the columns of {path}")
    except ValueError as e:
        raise CLIError(f"{costs_path}: {e}") from None
    return Dataset(X.astype(np.float32), y, list(fc.names), np.array(fc.costs), fc.groups.astype(np.int32),
                   list(fc.group_names), np.array(fc.group_costs), description=os.path.basename(path), qid=qid)


def _query_column(group, header, width, path):
    """``--group`` on a CSV: the query column's index, by header name or number."""
    if header and group in header:
        return header.index(group)
    try:
        j = int(group)
    except ValueError:
        raise CLIError(f"{path}: --group {group!r} names no column of the header") from None
    if not 0 <= j < width - 1:
        raise CLIError(f"{path}: --group {j}: expected a column index 0..{width - 2} (the label is last)")
    return j


def cmd_train(args):
    from . import ir
    from .ir.json_io import check_writable
    from .trainers import TRAINERS
    check_writable(args.output)   # before training, not after it
    ds = _load_training(args.data, args.format, args.costs, args.group)
    ranking = args.objective is not None or args.task == "ranking"
    task = "ranking" if ranking else args.task or (
        "classification" if ds.y.dtype.kind in "iu" and len(np.unique(ds.y)) <= 50 else "regression")
    if ranking and ds.qid is None:
        raise CLIError(f"{args.data}: ranking needs query groups: svmlight qid:, a .query file or a CSV "
                       "query column (--group)")
    spec = TRAINERS[args.trainer]
    extra = {"objective": args.objective} if args.objective else {}
    if args.categorical:
        extra["categorical_features"] = _categorical_mask(args.categorical, ds.feature_names)
    try:
        # options a trainer has no parameter for are dropped by the registry
        given = dict(n_estimators=args.trees, max_depth=args.depth, learning_rate=args.learning_rate,
                     threshold=args.exit_threshold)
        extra.update({k: v for k, v in given.items() if v is not None})
        est = spec.estimator(task, cost_tradeoff=args.cost_tradeoff, exit_rule=args.exit_rule,
                             feature_costs=ds.costs, random_state=args.seed, verbose=1, **extra)
    except ValueError as e:
        raise CLIError(f"{args.trainer}: {e}") from None
    if args.categorical and "categorical_features" not in est.get_params():
        have = sorted(n for n, s in TRAINERS.items()
                      if any(c is not None and "categorical_features" in c._get_param_names()
                             for c in (s.classifier, s.regressor, s.ranker)))
        raise CLIError(f"--categorical: {args.trainer} has no category-set splits; {', '.join(have)} have, "
                       "or one-hot encode the columns")
    eval_set = None
    if args.valid:
        v = _load_training(args.valid, args.format, args.costs, args.valid_group)
        eval_set = (v.X, v.y, v.qid) if ranking else (v.X, v.y)
    if ranking:
        est.fit(ds.X, ds.y, group=ds.qid, eval_set=eval_set)
        what, score = "NDCG@5", est.score(ds.X, ds.y, ds.qid)
    else:
        est.fit(ds.X, ds.y, eval_set=eval_set)
        what, score = "training score", est.score(ds.X, ds.y)
    model = est.to_ir()
    ir.save(model, args.output)
    rounds = getattr(est, "n_estimators_", None)
    print(f"trained {args.trainer} ({task}): " + (f"{rounds} rounds, " if rounds is not None else "")
          + f"static cost {model.static_cost():g}, {what} {score:.4f}")
    print(f"wrote {args.output}")
    if model.scores_queries:
        print("note: a query-level exit: the reference runtime (ReferenceRuntime(model).rank(X, group)) and "
              "the generated C (<prefix>_rank_query) and ONNX (OnnxRuntime(graph).rank, one query per run) rank "
              "it; per-row predict refuses it. --exit-rule row trains a per-row model.")


def _categorical_mask(spec: str, names) -> np.ndarray:
    """--categorical's columns (names, or 0-based positions) as a bool mask
    over the data's columns."""
    mask = np.zeros(len(names), bool)
    for item in (c.strip() for c in spec.split(",")):
        if item in names:
            mask[list(names).index(item)] = True
        elif item.isdigit() and int(item) < len(names):
            mask[int(item)] = True
        else:
            raise CLIError(f"--categorical: no column {item!r}; the data's columns are "
                           f"{', '.join(map(str, names[:12]))}{', ...' if len(names) > 12 else ''}")
    return mask


def cmd_plot(args):
    from .plot import plot_cost_accuracy, plot_feature_costs
    if args.kind == "costs":
        if not args.model or not args.data:
            raise CLIError("plot costs needs MODEL and --data")
        m = _load_model(args.model)
        print(plot_feature_costs(m, _load_rows(args.data, m), args.output))
        return
    from .trainers import GreedyMiserClassifier, cost_accuracy_curve
    ds = _load_training(args.data, args.format, args.costs)
    train, test = ds.split(0.3, seed=0)
    train, val = train.split(0.25, seed=1)
    try:
        lambdas = [float(v) for v in args.lambdas.split(",")]
    except ValueError:
        raise CLIError(f"--lambdas {args.lambdas!r}: expected numbers separated by commas, "
                       "e.g. 0,3e-4,1e-3") from None
    est = GreedyMiserClassifier(n_estimators=args.trees, feature_costs=ds.costs)
    rows = cost_accuracy_curve(est, {"cost_tradeoff": lambdas}, train.X, train.y, val.X, val.y,
                               test.X, test.y, label="Greedy Miser")
    print(plot_cost_accuracy({"Greedy Miser": rows}, args.output))


def cmd_inspect(args):
    m = _load_model(args.model)
    print(m.inspect())


def cmd_predict(args):
    from .runtimes.reference import predict
    m = _load_model(args.model)
    X = _load_rows(args.data, m)
    p = predict(m, X, args.budget)
    out = sys.stdout
    out.write("row,output,cost,stage\n")
    for i in range(len(p.cost)):
        out.write(f"{i},{p.output[i]},{p.cost[i]:.6g},{p.stage[i]}\n")


def cmd_compile(args):
    m = _load_model(args.model)
    if args.target == "c":
        from .compilers.c import compile_c
        paths = compile_c(m, args.output, prefix=args.prefix)
        for name in sorted(paths):
            print(paths[name])
        print(f"build: make -C {args.output}   (or add {args.prefix}.c to your firmware)")
    elif args.target == "onnx":
        import onnx

        from .compilers.onnx import compile_onnx
        out_dir = os.path.dirname(os.path.abspath(args.output))
        if not os.path.isdir(out_dir):
            raise CLIError(f"{args.output}: the folder {out_dir} does not exist")
        try:
            proto = compile_onnx(m, mode=args.mode, target=args.onnx_target, batch_hint=args.batch_hint)
        except ValueError as e:
            raise CLIError(f"{args.model}: {e}") from None
        onnx.save(proto, args.output)
        outs = ", ".join(o.name for o in proto.graph.output)
        print(f"{args.output}: {len(proto.graph.node)} ops; inputs "
              f"{', '.join(i.name for i in proto.graph.input)}; outputs {outs}")
    else:
        raise CLIError(f"unknown target {args.target!r}; expected c or onnx")


def _check_source_kind(path, source):
    """Refuse a file that is plainly another kind than ``--from`` says."""
    from .ir.json_io import FOREIGN_KINDS, sniff_kind
    try:
        with open(path, "rb") as fh:
            kind = sniff_kind(fh.read(4096))
    except OSError:
        return   # the importer says what is missing, in its own words
    if kind == "skinflint":
        raise CLIError(f"{path}: this is a skinflint model already; nothing to import")
    if kind is not None and kind != source:
        what, _ = FOREIGN_KINDS[kind]
        raise CLIError(f"{path}: this is {what}, not a {source} model; use --from {kind}")


def cmd_import(args):
    from .importers import from_lightgbm, from_sklearn_json, from_xgboost
    from .ir import save
    if args.source == "sklearn":
        raise CLIError("scikit-learn saves estimators only with pickle, which skinflint never loads (it "
                       "runs code); in Python, write a pickle-free file with "
                       "skinflint.importers.sklearn_json.to_json(estimator, path) and import it with "
                       "--from sklearn-json, or call skinflint.importers.from_sklearn(estimator, costs) "
                       "and skinflint.ir.save the model")
    if args.source == "sklearn-json" and args.raw_margin:
        raise CLIError("--raw-margin: scikit-learn tree models need no raw-margin import")
    _check_source_kind(args.model, args.source)
    costs = _load_costs(args.costs)
    try:
        if args.source == "sklearn-json":
            m = from_sklearn_json(args.model, costs, by_position=args.by_position)
        else:
            importer = {"lightgbm": from_lightgbm, "xgboost": from_xgboost}[args.source]
            m = importer(args.model, costs, raw_margin=args.raw_margin, by_position=args.by_position)
    except Exception as e:
        # LightGBM's and XGBoost's own errors carry C++ backtraces: one line of them
        if _from_source_library(e):
            raise CLIError(f"{args.model}: {args.source} could not read it: {_first_line(e)}") from None
        if isinstance(e, ValueError) and not str(e).startswith(args.model):
            raise CLIError(f"{args.model}: {_first_line(e)}") from None
        raise
    save(m, args.output)
    n = m.nodes[0]
    print(f"{args.output}: {n.n_trees} trees, {m.n_features} features, static cost {m.static_cost():.6g}; "
          f"{m.metadata['source']['exact']}")


def _first_line(e) -> str:
    """The first non-empty line of an error (a C++ library's message goes
    on with a backtrace)."""
    lines = [ln.strip() for ln in str(e).splitlines() if ln.strip()]
    return lines[0] if lines else type(e).__name__


def _from_source_library(e) -> bool:
    return type(e).__module__.split(".")[0] in ("lightgbm", "xgboost")


def _runtime_list(text):
    """``--runtimes``: comma-separated names from the runtime registry."""
    names = tuple(n.strip() for n in text.split(",") if n.strip())
    unknown = [n for n in names if n not in RUNTIMES]
    if unknown or not names:
        raise argparse.ArgumentTypeError(f"unknown runtime {', '.join(unknown) or repr(text)}; expected names "
                                         f"from {', '.join(RUNTIMES)}")
    return names


def cmd_verify(args):
    from .verify import verify
    m = _load_model(args.model)
    X = _load_rows(args.data, m) if args.data else None
    if args.backends is not None:
        raise CLIError("--backends was renamed: write --runtimes " + args.backends)
    budget, budgets = (None, "around") if args.budget is None else (args.budget, None)
    report = verify(m, X, runtimes=args.runtimes, budget=budget, budgets=budgets,
                    adversarial=not args.no_adversarial)
    print(report.table())
    if args.json:
        with open(args.json, "w") as fh:
            fh.write(report.to_json())
    return 0 if report.ok else 1


def cmd_demo(args):
    from .demo import run_demo
    run_demo(out_dir=args.out, quick=args.quick)


def _trainer_names():
    from .trainers import TRAINERS
    return sorted(TRAINERS)


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
    s.add_argument("--data", required=True,
                   help="CSV of feature rows: with a header, columns are taken by name in the model's "
                        "order; without one, by position (a trailing label column is ignored)")
    s.add_argument("--budget", type=float, default=None, help="per-row cost budget")
    s.set_defaults(func=cmd_predict)
    s = sub.add_parser("train", help="train a cost-sensitive model from CSV/svmlight and a cost file",
                       description="Train a cost-sensitive model (--trainer; options a trainer "
                                   "has no parameter for are ignored) and write it as JSON. Costs come "
                                   "from a CSV 'name,cost,group' (rows named 'group:G' give group costs), "
                                   "matched to the data's header by name; without one every feature "
                                   "costs 1.")
    s.add_argument("--data", required=True, help="training rows, label in the last column (CSV) or svmlight")
    s.add_argument("--format", choices=["csv", "svmlight"], help="default: by file extension")
    s.add_argument("--costs", help="feature-cost CSV (name,cost,group), matched to the data's header by "
                                   "name (without a header: by position)")
    s.add_argument("--trainer", choices=_trainer_names(), default="greedy-miser")
    s.add_argument("--task", choices=["classification", "regression", "ranking"],
                   help="default: from the labels (ranking with --objective)")
    s.add_argument("--group", help="ranking: a LightGBM .query file of group sizes (svmlight; default "
                                   "<data>.query when it exists, or the file's qid:), or the CSV's query column")
    s.add_argument("--valid-group", help="--group for the --valid rows")
    s.add_argument("--objective", choices=["lambdarank", "squared"],
                   help="train a ranker (docs/ranking.md): LambdaMART or squared loss on the relevance label")
    s.add_argument("--lambda", dest="cost_tradeoff", type=float, default=1e-3,
                   help="cost trade-off: mean per-row loss reduction one unit of cost must buy")
    # no default of the command's own: an option left out is the trainer's own default (CSTC's depth
    # "auto", chosen on validation; Cronus' 300 trees), never one value forced on every trainer
    s.add_argument("--trees", type=int, help="boosting rounds (default: the trainer's, 100 for the boosters)")
    s.add_argument("--depth", type=int, help="tree depth (default: the trainer's, 4 for the boosters)")
    s.add_argument("--learning-rate", type=float, help="shrinkage (default: the trainer's, 0.1)")
    s.add_argument("--exit-threshold", type=float,
                   help="early-exit margin s (default: the trainer's, 2.0; 1.0 for the Early Exit ranker)")
    s.add_argument("--exit-rule", choices=["query", "row"], default="query",
                   help="early-exit ranker: the papers' per-query rule (a query-level model: the reference "
                        "runtime, the generated C and ONNX rank it one query at a time) or the per-row rule, "
                        "scored row by row")
    s.add_argument("--valid", help="validation rows for early stopping")
    s.add_argument("--categorical", metavar="COLUMNS",
                   help="comma-separated columns (header names or 0-based positions) holding category codes "
                        "(integers >= 0): the booster splits them on category sets (docs/boosting.md)")
    s.add_argument("--seed", type=int, default=0)
    s.add_argument("-o", "--output", required=True, help="model JSON to write")
    s.set_defaults(func=cmd_train)
    s = sub.add_parser("plot", help="PNG plots: per-feature cost breakdown, or a cost/accuracy curve",
                       description="'plot costs MODEL --data X.csv -o out.png': where a model's cost goes. "
                                   "'plot curve --data train.csv --costs c.csv -o out.png': trains a "
                                   "lambda sweep and draws accuracy against mean cost per row.")
    s.add_argument("kind", choices=["costs", "curve"],
                   help="costs: a model's mean cost per row by feature; curve: accuracy against cost")
    s.add_argument("model", nargs="?", help="costs only: the model JSON file")
    s.add_argument("--data", required=True,
                   help="costs: CSV of feature rows (by header names when it has a header); curve: "
                        "training rows, label in the last column (CSV) or svmlight")
    s.add_argument("--format", choices=["csv", "svmlight"], help="curve only; default: by file extension")
    s.add_argument("--costs", help="curve only: feature-cost CSV (name,cost,group)")
    s.add_argument("--lambdas", default="0,3e-4,1e-3,3e-3", metavar="L[,L...]",
                   help="curve only: Greedy Miser cost trade-offs, separated by commas "
                        "(default: %(default)s)")
    s.add_argument("--trees", type=int, default=100, help="curve only: boosting rounds (default: %(default)s)")
    s.add_argument("-o", "--output", required=True, help="the PNG file to write")
    s.set_defaults(func=cmd_plot)
    s = sub.add_parser("compile", help="compile a model to C or ONNX",
                       description="Write the model as standalone C99 sources (model.c/.h, an "
                                   "example main.c and a Makefile) or as an ONNX graph.")
    s.add_argument("model")
    s.add_argument("--target", required=True, choices=["c", "onnx"], help="what to write")
    s.add_argument("-o", "--output", required=True, help="output folder (c) or file (onnx)")
    s.add_argument("--prefix", default="model", help="C identifier prefix of the generated API")
    s.add_argument("--mode", choices=["exact", "fast"], default="exact",
                   help="onnx only: exact (bit-exact scores, per-row cost, stage, budget input; "
                        "the default) or fast (one summed tree ensemble: predictions only)")
    s.add_argument("--onnx-target", choices=list(ONNX_TARGETS), default=ONNX_DEFAULT_TARGET,
                   help="onnx only: the oldest runtime the graph must run on, which picks the tree operator "
                        "and opsets (docs/onnx.md); no-ml-ops walks trees in standard operators for "
                        f"engines without ai.onnx.ml (default: {ONNX_DEFAULT_TARGET})")
    s.add_argument("--batch-hint", type=int, default=None,
                   help="onnx only: the rows per call the graph will mostly see; 16 or fewer builds the "
                        "fewer-op latency graph for single rows and small batches (docs/onnx.md)")
    s.set_defaults(func=cmd_compile)
    s = sub.add_parser("import", help="import a LightGBM, XGBoost or scikit-learn model with feature costs",
                       description="Convert a LightGBM text model, an XGBoost JSON/UBJSON model or a "
                                   "scikit-learn tree model written as sklearn-json "
                                   "(skinflint.importers.sklearn_json.to_json; never a pickle) into a "
                                   "skinflint model (JSON) with the given feature costs, ready for "
                                   "compile and verify (docs/importers.md).")
    s.add_argument("model", help="the source model file")
    s.add_argument("--from", dest="source", required=True,
                   choices=["lightgbm", "xgboost", "sklearn-json", "sklearn"],
                   help="the source format ('sklearn' only explains why pickles are refused)")
    s.add_argument("--costs", help="cost CSV (name,cost,group); default: every feature costs 1")
    s.add_argument("--raw-margin", action="store_true",
                   help="import an objective whose output transform the IR lacks as its raw margin")
    s.add_argument("--by-position", action="store_true",
                   help="pair the cost file's rows with the model's features by position even though "
                        "their names differ (by default names must match)")
    s.add_argument("-o", "--output", required=True, help="the skinflint model (.json) to write")
    s.set_defaults(func=cmd_import)
    s = sub.add_parser("verify", help="check every backend against the reference, bit for bit",
                       description="Run rows through every backend and compare outputs, scores, "
                                   "probabilities, cost, stage and features used with the reference. "
                                   "By default adds adversarial rows (every threshold exactly, one ulp "
                                   "either side, NaN, +-inf) and budgets around each row's cost. Exits "
                                   "1 on any mismatch.")
    s.add_argument("model")
    s.add_argument("--data", help="CSV of rows to add: by header names when it has a header, else by "
                                  "position (a trailing label column is ignored)")
    s.add_argument("--budget", type=float, help="one budget for all rows (default: around each row's cost)")
    s.add_argument("--runtimes", type=_runtime_list, default=DEFAULT_CHECKED, metavar="NAME[,NAME...]",
                   help="comma-separated runtimes to check against the reference, from: "
                        f"{', '.join(n for n in RUNTIMES if n != 'reference')} (default: "
                        f"{','.join(DEFAULT_CHECKED)})")
    s.add_argument("--backends", help=argparse.SUPPRESS)   # the former name: refused, saying the new one
    s.add_argument("--no-adversarial", action="store_true", help="only the rows of --data")
    s.add_argument("--json", help="also write the report as JSON (for CI)")
    s.set_defaults(func=cmd_verify)
    compress_cli.add_parser(sub)
    s = sub.add_parser("demo", help="train, compile and verify on bundled data",
                       description="The quick start: train on bundled real data, compile, verify "
                                   "parity, and print the cost/accuracy table.")
    s.add_argument("--out", default="skinflint-demo", help="folder for the artifacts")
    s.add_argument("--quick", action="store_true", help="a smaller run, for tests")
    s.set_defaults(func=cmd_demo)
    return p


def main(argv=None):
    """Run one command; returns the exit status.  Ctrl-C anywhere (loading,
    training, writing) ends with one line and status 130; a model being
    written is never left half-written (``ir.save``)."""
    try:
        with _interrupts_outside_llvmlite():
            return _main(argv)
    except KeyboardInterrupt:
        return _interrupted()


_LLVMLITE_FRAME = os.sep + "llvmlite" + os.sep
_REDELIVER_S = 0.02
_RESEND_S = 0.1     # a re-sent interrupt the handler has not taken within this is sent again
_RESENDS = 50       # ... at most this many times (5 s: then the pending one is taken when the call ends)


def _on_interrupt(signum, frame):
    """SIGINT's handler while a command runs: Python's own, except inside
    llvmlite.  numba loads and compiles kernels through llvmlite, whose ctypes
    callbacks swallow an exception ("Exception ignored on calling ctypes
    callback", a traceback, and the run goes on) and whose objects, left half
    built, raise again at exit.  An interrupt that lands there is sent again a
    moment later; llvmlite's calls are short, so it ends the run as soon as
    they return."""
    if _ENDING[0]:
        return       # the command is ending: a re-sent copy still on its way is not a new request
    _TAKEN.set()
    f = frame
    while f is not None:
        if _LLVMLITE_FRAME in f.f_code.co_filename:
            if not _REDELIVERY:   # a second Ctrl-C before the re-sent one is the same request
                _STOPPED.clear()
                timer = threading.Timer(_REDELIVER_S, _send_interrupt_again)
                timer.daemon = True
                _REDELIVERY.append(timer)
                timer.start()
            return
        f = f.f_back
    if time.monotonic() - _RAISED_AT[0] < _RESEND_S:
        return       # a re-sent copy that crossed the interrupt just raised: the same request
    _STOPPED.set()   # no re-sent interrupt after this one
    _RAISED_AT[0] = time.monotonic()
    raise KeyboardInterrupt


_REDELIVERY: list[threading.Timer] = []   # the pending re-sent interrupt, if any
_TAKEN = threading.Event()     # the handler ran since the last re-send
_STOPPED = threading.Event()   # the command ended, or the interrupt was raised: send nothing more
_SEND_LOCK = threading.Lock()  # a re-send's check of _STOPPED and its kill, as one step
_RAISED_AT = [-float("inf")]   # when the handler last raised KeyboardInterrupt (time.monotonic)
_ENDING = [False]              # the command's context is closing: the handler ignores what still arrives


def _send_interrupt_again():
    """Send SIGINT to the main thread until its handler has taken one.  A
    signal that arrives after the main thread's last check for signals but
    before it enters a blocking call (a sleep, a read) is handled only when
    that call ends: CPython's sleep checks for signals when it is
    interrupted, not before it starts, and the signal has already come.  The
    next one interrupts the call."""
    _REDELIVERY.clear()   # first: the handler this sends may have to schedule the next one
    _TAKEN.clear()
    for _ in range(_RESENDS):
        with _SEND_LOCK:   # once the command's context has set _STOPPED under this lock, nothing is sent
            if _STOPPED.is_set() or _TAKEN.is_set():
                return
            _interrupt_main_thread()
        if _TAKEN.wait(_RESEND_S):
            return


def _interrupt_main_thread():
    # to the main thread itself: a process-wide kill may be taken by this timer thread, and then the
    # main thread's blocking call (a sleep, a read) is not interrupted and the handler waits for it
    # to end (a CI run waited out a 10 s sleep).  Without pthread_kill (Windows), raise_signal trips
    # CPython's own flag: os.kill there would terminate the process
    if hasattr(signal, "pthread_kill"):
        signal.pthread_kill(threading.main_thread().ident, signal.SIGINT)
    else:
        signal.raise_signal(signal.SIGINT)


@contextlib.contextmanager
def _interrupts_outside_llvmlite():
    """Install ``_on_interrupt`` for the command, where Ctrl-C would raise
    KeyboardInterrupt anyway (not where SIGINT is ignored, or off the main
    thread), and put the previous handler back afterwards.  The re-send
    state is the main thread's: a command on another thread leaves it alone."""
    try:
        installed = signal.getsignal(signal.SIGINT) is signal.default_int_handler
        if installed:
            _ENDING[0] = False
            _STOPPED.clear()
            _RAISED_AT[0] = -float("inf")
            signal.signal(signal.SIGINT, _on_interrupt)
    except ValueError:   # not the main thread: signals are not ours to handle
        installed = False
    try:
        yield
    finally:
        if installed:
            _ENDING[0] = True   # first, before any call: a copy handled from here on is ignored
            try:
                with _SEND_LOCK:   # a re-send in flight completes first; none after this
                    _STOPPED.set()
                for timer in list(_REDELIVERY):
                    timer.cancel()
                _REDELIVERY.clear()
            finally:
                signal.signal(signal.SIGINT, signal.default_int_handler)


def _main(argv):
    from .ir import IRError
    parser = build_parser()
    args = parser.parse_args(argv)
    if not getattr(args, "func", None):
        parser.print_help()
        return EXIT_USAGE
    try:
        return args.func(args) or 0
    except BrokenPipeError:
        # the reader went away (`skinflint predict ... | head`): stop quietly, and keep Python's
        # final flush of stdout from failing again
        _silence_stdout()
        return 141   # 128 + SIGPIPE, as a shell reports a command ended by a closed pipe
    except (CLIError, IRError, ValueError, FileNotFoundError, ImportError, RuntimeError, SystemError) as e:
        if _caused_by_interrupt(e):
            return _interrupted()
        if isinstance(e, SystemError):
            raise
        print(f"skinflint: error: {_first_line(e)}", file=sys.stderr)
        return 1
    except OSError as e:
        where = f"{e.filename}: " if getattr(e, "filename", None) else ""
        print(f"skinflint: error: {where}{e.strerror or _first_line(e)}", file=sys.stderr)
        return 1


def _caused_by_interrupt(e):
    """Whether a Ctrl-C is behind ``e``: inside a numba kernel it surfaces as a
    SystemError, and during a kernel's compilation as numba's RuntimeError
    "no compiled object yet", each with the interrupt attached."""
    seen = set()
    while e is not None and id(e) not in seen:
        if isinstance(e, KeyboardInterrupt):
            return True
        seen.add(id(e))
        e = e.__cause__ or e.__context__
    return False


def _interrupted():
    # a bar the interrupt left open (it can land while tqdm is still setting the bar up, before
    # any code that would close it holds it) would run into this line: close every live bar first.
    # An interrupt inside tqdm's __init__ after it drew the bar but before it set the bar's clock
    # (last_print_t, start_t) leaves a bar whose close() returns without clearing the line: give
    # such a bar a clock that says "drawn" so that close() clears it.
    from tqdm import tqdm
    for bar in list(getattr(tqdm, "_instances", ())):
        if not hasattr(bar, "start_t"):
            bar.last_print_t = bar.start_t = 0.0
            bar.delay = 0.0
        bar.close()
    print("skinflint: interrupted", file=sys.stderr)
    return 130


def _silence_stdout():
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
    except (AttributeError, ValueError, OSError):
        pass   # stdout is not a file (a test's capture): nothing is flushed at exit


if __name__ == "__main__":
    sys.exit(main())
