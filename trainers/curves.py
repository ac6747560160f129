"""Cost/accuracy trade-off curves for any trainer.

``cost_accuracy_curve`` fits one model per point of a parameter grid (lambda
for Greedy Miser, the exit threshold for Early Exit, ...), chooses what the
validation rows say (for boosted ensembles the number of rounds, as the
thesis does: the red circles of Fig. 2.2), and reports test accuracy, mean
lazy cost per row and static cost of the exported IR model on the reference
runtime.
"""
from __future__ import annotations

import inspect
import time

import numpy as np
from sklearn.base import clone, is_regressor
from sklearn.model_selection import ParameterGrid
from tqdm.auto import tqdm

from ..metrics import parse_metric
from ..runtimes.reference import predict


def _score(y, pred, regression):
    if regression:
        return -float(np.mean((pred - np.asarray(y, np.float64)) ** 2))
    return float(np.mean(pred == y))


def _value(metric, y, pred, scores, group, regression):
    """The curve's score of one prediction: accuracy / negative MSE (``metric`` None, "accuracy", "neg_mse"),
    or a ranking metric ("ndcg@5", "p@5", "err@k", ...) of the raw scores over the queries ``group``."""
    fn, k, ranking = parse_metric(metric or ("neg_mse" if regression else "accuracy"))
    if not ranking:
        return _score(y, pred, regression)
    s = np.asarray(scores)
    if s.ndim == 2:
        if s.shape[1] != 1:
            raise ValueError(f"metric {metric!r}: ranking needs one score per row, the model has {s.shape[1]}")
        s = s[:, 0]
    return float(fn(y, s, group, k))


def _takes_groups(est) -> bool:
    return "group" in inspect.signature(est.fit).parameters


def _label(estimator, params, label):
    name = label or type(estimator).__name__.replace("Classifier", "").replace("Regressor", "")
    if not params:
        return name
    shown = (f"{_short(k)}={v:.3g}" if isinstance(v, (int, float)) else f"{_short(k)}={v}" for k, v in params.items())
    return f"{name} ({', '.join(shown)})"


def _short(param):
    return {"cost_tradeoff": "lambda", "threshold": "s"}.get(param, param)


def _best_rounds(est, X_val, y_val, regression, metric=None, group_val=None):
    """The number of rounds with the best validation score, from the staged
    float32 scores (bit-equal to the IR's prefix sums: tested)."""
    staged = getattr(est, "staged_predict", None)
    if staged is None or not hasattr(est, "n_estimators_"):
        return None
    if metric is not None and parse_metric(metric)[2]:
        val = [_value(metric, y_val, None, s, group_val, regression) for s in est.staged_decision_function(X_val)]
    else:
        val = [_score(y_val, p, regression) for p in staged(X_val)]
    return int(np.argmax(val)) + 1


def cost_accuracy_curve(estimator, param_grid, X_train, y_train, X_val, y_val, X_test, y_test, *,
                        label=None, choose_rounds=True, verbose=1, metric=None, groups=None) -> list[dict]:
    """One row per point of ``param_grid``.

    Parameters
    ----------
    estimator : a skinflint estimator (unfitted)
        The prototype; each point fits a clone with the point's parameters.
    param_grid : dict or list of dicts
        As scikit-learn's ``ParameterGrid``, e.g. ``{"cost_tradeoff": [0, 1e-3]}``.
    X_train, y_train, X_val, y_val, X_test, y_test : arrays
        Fit on train, choose on validation, report on test.
    label : str, optional
        Name of the method in the rows (default: the estimator's class name).
    choose_rounds : bool, default True
        For boosted estimators (with ``staged_predict``), keep the number of
        rounds with the best validation accuracy (negative MSE for
        regressors).
    verbose : int, default 1
        A progress bar over the grid.
    metric : str, optional
        What ``accuracy`` in the rows measures, on validation (choosing rounds)
        and test: "accuracy" / "neg_mse" (the default for classifiers /
        regressors), or a ranking metric of the model's raw scores over query
        groups (``skinflint.metrics.parse_metric``: "ndcg@5", "p@5" with
        relevance threshold 1, "err@10", ...).
    groups : tuple (group_train, group_val, group_test), optional
        Query groups of the three parts (per-row query ids or group sizes;
        ``skinflint.metrics.query_groups``).  A ranker (an estimator whose
        ``fit`` takes ``group``) is fitted with ``group_train``; the others
        ignore it and are ranked by their score (a classifier's margin, a
        regressor's output).

    Returns
    -------
    list of dict
        ``method`` (label and parameters), ``estimator`` (class name),
        ``params``, ``lam`` (``cost_tradeoff`` where the grid sets it),
        ``n_iterations`` (rounds kept, or None), ``accuracy`` (test; negative
        MSE for regression; ``metric`` when given), ``metric`` (its name),
        ``mean_cost`` (lazy, per row), ``static_cost``,
        ``n_features``, ``fit_time`` (seconds) and ``model``, the IR model
        all of them come from.
    """
    regression = is_regressor(estimator)
    if metric is not None:
        parse_metric(metric)                      # a bad name fails before any fit
    g_train, g_val, g_test = (None, None, None) if groups is None else groups
    rows = []
    for params in tqdm(list(ParameterGrid(param_grid)), disable=not verbose, desc="cost/accuracy curve",
                       leave=False):
        est = clone(estimator).set_params(**params)
        if "verbose" in est.get_params():
            est.set_params(verbose=0)
        t0 = time.perf_counter()
        if _takes_groups(est):
            est.fit(X_train, y_train, g_train)
        elif getattr(est, "_selects_on_validation", False):
            est.fit(X_train, y_train, eval_set=(X_val, y_val))    # its model selection uses the rows
        else:
            est.fit(X_train, y_train)
        fit_time = time.perf_counter() - t0
        rounds = _best_rounds(est, X_val, y_val, regression, metric, g_val) if choose_rounds else None
        model = est.to_ir(rounds) if rounds is not None else est.to_ir()
        rows.append(model_row(model, X_test, y_test, est, params, fit_time, label=label,
                              n_iterations=rounds if rounds is not None else getattr(est, "n_estimators_", None),
                              metric=metric, group_test=g_test))
    return rows


def model_row(model, X_test, y_test, est, params, fit_time, *, label=None, n_iterations=None, metric=None,
              group_test=None) -> dict:
    """One row of ``cost_accuracy_curve`` (its Returns section) for
    ``model``, exported from the fitted ``est`` at ``params``: test score
    (``metric``, over the queries ``group_test`` for a ranking metric),
    mean lazy cost and static cost on the reference runtime."""
    regression = is_regressor(est)
    if model.scores_queries:
        # a query-level exit (EarlyExitRanker, CascadeRanker) ranks whole queries: the metric reads
        # the query's order, in which dropped documents follow the survivors (docs/ranking.md)
        from .boosting.ranker import rank_queries
        metric = metric or "ndcg@5"
        fn, k, _ = parse_metric(metric)
        r = rank_queries(model, X_test, group_test)
        accuracy, mean_cost = float(fn(y_test, r.scores, group_test, k, order=r.order)), float(r.cost.mean())
    else:
        p = predict(model, X_test)
        accuracy = _value(metric, y_test, p.output, p.scores, group_test, regression)
        mean_cost = float(p.cost.mean())
    return dict(method=_label(est, params, label), estimator=type(est).__name__, params=params,
                lam=float(est.get_params().get("cost_tradeoff") or 0.0), n_iterations=n_iterations,
                accuracy=accuracy,
                metric=metric or ("neg_mse" if regression else "accuracy"), mean_cost=mean_cost,
                static_cost=model.static_cost(), n_features=int(len(model.features_used())),
                fit_time=fit_time, model=model)


def budget_curve(row, X_test, y_test, fractions=(1 / 32, 1 / 16, 1 / 8, 1 / 4, 1 / 2)) -> list[dict]:
    """An anytime model's curve: ``row`` (one row of ``cost_accuracy_curve``)
    re-run on the reference runtime under per-row budgets of ``fractions``
    of its static cost, one row each (``budget`` set), then ``row`` itself
    (no budget).  A row stopped by its budget answers with what it has
    evaluated so far (the runtime's budget semantics, docs/costs.md)."""
    model = row["model"]
    out = []
    for f in fractions:
        budget = float(f * row["static_cost"])
        p = predict(model, X_test, budget=budget)
        out.append(dict(row, method=f"{row['method']} @ budget {budget:.0f}", budget=budget,
                        accuracy=_score(y_test, p.output, False), mean_cost=float(p.cost.mean())))
    return out + [dict(row, budget=None)]


def format_table(rows) -> str:
    """The rows of one or more curves as an aligned text table."""
    width = max([32] + [len(r["method"]) for r in rows])
    head = f"{'model':<{width}} {'trees':>6} {'accuracy':>9} {'mean cost/row':>14} {'static cost':>12} {'features':>9}"
    lines = [head]
    for r in rows:
        trees = "" if r.get("n_iterations") is None else r["n_iterations"]
        lines.append(f"{r['method']:<{width}} {trees:>6} {r['accuracy']:>9.4f} "
                     f"{r['mean_cost']:>14.2f} {r['static_cost']:>12.2f} {r['n_features']:>9}")
    return "\n".join(lines)
