"""Cost-accuracy curves of BudgetPrune over a sweep of lambda."""
from __future__ import annotations

import numpy as np

from .budget_prune import _Problem, budget_prune


def prune_curve(model, X, y, lambdas, *, X_test=None, y_test=None, node_values="auto", loss="error",
                ensemble="auto", **kw):
    """One row per lambda: the pruned model and its mean validation cost and
    per-tree error; with ``X_test``/``y_test`` also the pruned model's own
    accuracy (or mean squared error) and mean lazy cost on them (reference
    runtime).  The routing of the validation rows is done once.

    Returns
    -------
    list of dict
        ``lambda``, ``result`` (a ``PruneResult``), ``val_cost``,
        ``val_tree_error``, ``n_nodes``, ``n_trees`` and, with test rows,
        ``test_cost`` and ``test_score``.
    """
    from ..runtimes.reference import ReferenceRuntime
    problem = _Problem(model, X, y, node_values, loss, ensemble)
    rows = []
    for lam in lambdas:
        r = budget_prune(model, X, y, lam, _problem=problem, **kw)
        row = {"lambda": float(lam), "result": r, "val_cost": r.cost, "val_tree_error": r.error,
               "n_nodes": r.n_nodes, "n_trees": r.n_trees}
        if X_test is not None:
            pred = ReferenceRuntime(r.model).predict(X_test)
            row["test_cost"] = float(np.mean(pred.cost))
            row["test_score"] = score(r.model, pred, y_test)
        rows.append(row)
    return rows


def score(model, pred, y):
    """Accuracy for a classifier, mean squared error for a regression."""
    if model.task.kind == "regression":
        return float(np.mean((np.asarray(pred.scores, np.float64)[:, 0] - np.asarray(y, np.float64)) ** 2))
    return float(np.mean(np.asarray(pred.output) == np.asarray(y)))
