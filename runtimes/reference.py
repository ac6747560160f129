"""The reference runtime: the definition of truth for predictions and cost.

``predict(model, X, budget=None)`` or ``ReferenceRuntime(model).predict(...)``;
a model with a query-level exit (``model.scores_queries``) ranks whole
queries: ``rank(model, X, group, budget=None)`` or
``ReferenceRuntime(model).rank(...)`` (docs/ranking.md).
"""
from __future__ import annotations

from collections import namedtuple

import numpy as np

from ..ir.codes import KIND_TREES
from ..ir.lowering import Tables, lower, lower_query
from ._query_vm import rank_queries
from ._vm import _evaluate_bank as evaluate_bank
from ._vm import evaluate
from .prediction import Prediction, Ranking, as_budget, as_features, as_group_sizes, canonical_nan, finish

_FIELDS = [f for f in Tables.__dataclass_fields__]
# numba takes a namedtuple of arrays; its fields are the Tables dataclass's, defined once there
_VMTables = namedtuple("_VMTables", _FIELDS)  # type: ignore[misc]


def vm_tables(tables: Tables):
    return _VMTables(**tables.arrays())


class ReferenceRuntime:
    """Evaluates a Model with numba; rows in parallel."""

    name = "reference"

    def __init__(self, model, *, tables=None):
        """``tables``: ``ir.lowering.lower(model)`` when the caller has it
        (``lower_query(model)`` for a query-level model)."""
        self.model = model
        self._query = None
        if model.scores_queries:
            if tables is not None and not isinstance(tables, tuple):
                raise ValueError("tables: a query-level model takes lower_query(model), not lower(model)")
            tab, q = lower_query(model) if tables is None else tables
            self._tables = vm_tables(tab)
            self._query = q
        else:
            self._tables = vm_tables(lower(model) if tables is None else tables)

    def rank(self, X, group, budget=None) -> Ranking:
        """Score whole queries: ``group`` gives the query sizes (each query's
        rows contiguous, in order; ``skinflint.metrics.query_groups`` regroups
        per-row query ids), ``budget`` is per document as in ``predict``.
        Only a model with a query-level exit ranks (docs/ranking.md)."""
        m = self.model
        q = self._query
        if q is None:
            raise ValueError("rank: this model has no query-level exit; its rows are scored independently: "
                             "use predict(X)")
        X = as_features(X, m.n_features, m.feature_names)
        N = X.shape[0]
        offsets = as_group_sizes(group, N)
        b = as_budget(budget, N)
        scores = np.zeros((N, 1), np.float32)
        cost = np.zeros(N, np.float64)
        stage = np.zeros(N, np.int64)
        used = np.zeros((N, m.n_features), np.bool_)
        trees = np.zeros(N, np.int64)
        dropped = np.zeros(N, np.bool_)
        order = np.zeros(N, np.int64)
        if N:
            rank_queries(self._tables, q.after, q.keep, q.rule, q.gap, X, offsets, b, scores, cost, stage, used,
                         trees, dropped, order)
        scores = canonical_nan(scores)
        output, proba = finish(m.task, scores)
        return Ranking(output=output, scores=scores, proba=proba, cost=cost, stage=stage, features_used=used,
                       order=order, n_trees=trees, dropped=dropped)

    def predict(self, X, budget=None) -> Prediction:
        m = self.model
        if self._query is not None:
            raise ValueError("predict: this model has a query-level exit and ranks whole queries "
                             "(docs/ranking.md); call rank(X, group) instead of scoring rows independently")
        X = as_features(X, m.n_features, m.feature_names)
        N = X.shape[0]
        b = as_budget(budget, N)
        scores = np.zeros((N, m.task.n_outputs), np.float64 if self._tables.top_f64 else np.float32)
        cost = np.zeros(N, np.float64)
        stage = np.zeros(N, np.int64)
        used = np.zeros((N, m.n_features), np.bool_)
        if N:
            run = evaluate_bank if self._tables.top_kind == KIND_TREES else evaluate
            run(self._tables, X, b, scores, cost, stage, used)
        scores = canonical_nan(scores)
        output, proba = finish(m.task, scores)
        return Prediction(output=output, scores=scores, proba=proba, cost=cost, stage=stage,
                          features_used=used)


def predict(model, X, budget=None) -> Prediction:
    return ReferenceRuntime(model).predict(X, budget)


def rank(model, X, group, budget=None) -> Ranking:
    """``ReferenceRuntime(model).rank(X, group, budget)``."""
    return ReferenceRuntime(model).rank(X, group, budget)
