"""``skinflint compress``: BudgetPrune a forest from the command line.

    skinflint compress model.json --data val.csv --costs costs.csv --lambda 1e-3 -o small.json
    skinflint compress model.txt --from lightgbm --data val.csv --budget 50 -o small.json

Prints the model's mean cost per row and accuracy (or mean squared error)
before and after, on the validation rows and on ``--test`` rows when given,
then writes the pruned model atomically: a temporary file in the output's
folder, renamed over the output once complete, removed on any failure.
"""
from __future__ import annotations

import os
import tempfile

import numpy as np

SOURCES = ("lightgbm", "xgboost", "sklearn-json")


def add_parser(subparsers):
    """Add the ``compress`` command to an argparse subparsers object."""
    s = subparsers.add_parser(
        "compress", help="prune a trained forest for a cost budget (BudgetPrune), no retraining",
        description="Prune a forest (scikit-learn random forest / extra trees, LightGBM rf, a skinflint "
                    "bank) to minimise per-tree validation error + lambda x mean cost per row, "
                    "features and groups paid once per row (BudgetPrune, Nan et al. 2016). Prints "
                    "cost and accuracy before and after and writes an ordinary skinflint model "
                    "(docs/compress.md).")
    s.add_argument("model", help="a skinflint model (JSON), or a source model file with --from")
    s.add_argument("--from", dest="source", choices=SOURCES, help="import the model from this format first")
    s.add_argument("--data", required=True, help="validation rows, label in the last column (CSV)")
    s.add_argument("--test", help="held-out rows (CSV, label last) for the table")
    s.add_argument("--costs", help="cost CSV (name,cost,group); replaces the model's costs")
    g = s.add_mutually_exclusive_group(required=True)
    g.add_argument("--lambda", dest="lam", type=float, help="error per unit of mean cost per row")
    g.add_argument("--budget", type=float, help="target mean cost per validation row (searches lambda)")
    s.add_argument("--node-values", choices=["auto", "source", "refit"], default="auto",
                   help="what a pruned node predicts (default: the source's stored value where it keeps "
                        "one, else a refit on the validation rows)")
    s.add_argument("--loss", choices=["error", "brier"], default="error",
                   help="a classifier's per-tree surrogate: misclassification (the paper's) or Brier score")
    s.add_argument("--ensemble", choices=["auto", "forest", "boosted"], default="auto",
                   help="forest: the paper's per-tree error; boosted: pruned nodes refitted to the "
                        "ensemble's loss (default: a forest when the trees are averaged)")
    s.add_argument("-o", "--output", required=True, help="the pruned model (.json) to write")
    s.set_defaults(func=run)
    return s


def _model(args):
    from .. import ir
    from ..importers import from_lightgbm, from_sklearn_json, from_xgboost
    from ..importers._common import resolve_costs
    if args.source:
        importer = {"lightgbm": from_lightgbm, "xgboost": from_xgboost,
                    "sklearn-json": from_sklearn_json}[args.source]
        return importer(args.model, args.costs)
    m = ir.load(args.model)
    if not args.costs:
        return m
    fc = resolve_costs(args.costs, m.n_features, m.feature_names)
    return ir.builders.model(fc.features(), list(m.nodes), m.output, task=m.task, groups=fc.ir_groups(),
                             metadata=m.metadata)


def _rows(path, model):
    """(features in the model's order, labels) from a CSV with the label last.
    With a header, feature columns are taken by name (``column_order``, the
    rule of ``skinflint predict``); without one, by position."""
    from ..datasets import read_csv_matrix
    from ..ir.feature_costs import column_order
    M, header = read_csv_matrix(path)
    F = model.n_features
    if M.shape[1] != F + 1:
        raise ValueError(f"{path}: {M.shape[1]} columns, but the model has {F} features and the label comes last")
    if header is None:
        X, y = M[:, :-1], M[:, -1]
    else:
        order = column_order(model.feature_names, header, what=path)
        X, y = M[:, order], M[:, sorted(set(range(F + 1)) - set(order.tolist()))[0]]
    y = y.astype(np.int64) if np.all(y == np.round(y)) else y
    return np.ascontiguousarray(X, np.float32), y


def _measure(model, X, y):
    from ..runtimes.reference import ReferenceRuntime
    from .curve import score
    pred = ReferenceRuntime(model).predict(X)
    return float(np.mean(pred.cost)), score(model, pred, y)


def _table(before, after, sets, regression):
    what = "mse" if regression else "accuracy"
    lines = [f"{'':18}{'mean cost':>12}{what:>12}{'trees':>8}{'nodes':>9}{'static cost':>13}"]
    for name, m in (("before", before), ("after", after)):
        bank = m.nodes[m.output]
        for label, (X, y) in sets:
            cost, sc = _measure(m, X, y)
            lines.append(f"{name + ' (' + label + ')':18}{cost:12.6g}{sc:12.4f}{bank.n_trees:8d}"
                         f"{bank.feature.shape[0]:9d}{m.static_cost():13.6g}")
    return "\n".join(lines)


def write_atomically(model, path):
    """The model's JSON at ``path``, complete or not at all."""
    from ..ir import to_json
    text = to_json(model)
    folder = os.path.dirname(os.path.abspath(path))
    fd, tmp = tempfile.mkstemp(prefix=".skinflint-", suffix=".json.tmp", dir=folder)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            fh.write(text)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise


def run(args):
    """The ``compress`` command; returns the exit status."""
    from .budget_prune import budget_prune, prune_to_budget
    model = _model(args)
    Xv, yv = _rows(args.data, model)
    sets = [("val", (Xv, yv))]
    if args.test:
        sets.append(("test", _rows(args.test, model)))
    kw = {"node_values": args.node_values, "loss": args.loss, "ensemble": args.ensemble}
    if args.budget is not None:
        res = prune_to_budget(model, Xv, yv, args.budget, **kw)
    else:
        res = budget_prune(model, Xv, yv, args.lam, **kw)
    print(f"BudgetPrune lambda={res.lam:.6g} (node values: {res.node_values}, loss: {args.loss})")
    print(_table(model, res.model, sets, model.task.kind == "regression"))
    write_atomically(res.model, args.output)
    print(f"{args.output}: written")
    return 0
