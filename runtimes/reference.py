"""The reference runtime: the definition of truth for predictions and cost.

``predict(model, X, budget=None)`` or ``ReferenceRuntime(model).predict(...)``.
"""
from __future__ import annotations

from collections import namedtuple

import numpy as np

from ..ir.codes import KIND_TREES
from ..ir.lowering import Tables, lower
from ._vm import _evaluate_bank as evaluate_bank
from ._vm import evaluate
from .prediction import Prediction, as_budget, as_features, canonical_nan, finish

_FIELDS = [f for f in Tables.__dataclass_fields__]
# numba takes a namedtuple of arrays; its fields are the Tables dataclass's, defined once there
_VMTables = namedtuple("_VMTables", _FIELDS)  # type: ignore[misc]


def vm_tables(tables: Tables):
    return _VMTables(**tables.arrays())


class ReferenceRuntime:
    """Evaluates a Model with numba; rows in parallel."""

    name = "reference"

    def __init__(self, model, *, tables=None):
        """``tables``: ``ir.lowering.lower(model)`` when the caller has it."""
        self.model = model
        self._tables = vm_tables(lower(model) if tables is None else tables)

    def predict(self, X, budget=None) -> Prediction:
        m = self.model
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
