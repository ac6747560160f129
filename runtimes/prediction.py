"""What every runtime returns, and the input contract they share."""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Protocol

import numpy as np
from numba import njit

from ..ir.numerics import CANONICAL_NAN64_BITS, CANONICAL_NAN_BITS
from ._expf import logistic, softmax


@dataclass
class Prediction:
    """Per-row results of one runtime.

    output: class label or regression value [N] (or [N, K] for multi-output
    regression); scores: raw margins [N, K], float32, or float64 when the
    model's output is a float64 tree bank (docs/numerics.md); proba: probabilities
    [N, n_classes] for classifiers with a probabilistic transform, else None;
    cost: lazy cost [N] float64; stage: last checkpoint completed [N] int64
    (tree / input / support vector for a scoring output, stage / checkpoint /
    tree node for a control output; -1 if none); features_used: [N, F] bool;
    fetches: [N] int64, how many times the row's features were fetched, for
    a runtime that fetches on demand (else None).
    """

    output: np.ndarray
    scores: np.ndarray
    proba: np.ndarray | None
    cost: np.ndarray
    stage: np.ndarray
    features_used: np.ndarray
    fetches: np.ndarray | None = None


def _no_rows(dtype):
    return lambda: np.zeros(0, dtype)


@dataclass
class Ranking(Prediction):
    """Per-document results of scoring whole queries (a model with a
    query-level exit, docs/ranking.md), rows in the caller's order, plus
    the ranking.

    stage: the last checkpoint the document completed (j for one dropped at
    checkpoint j; J, the number of checkpoints, for one that ran every tree;
    -1 when its budget stopped it before the first); order: [N] int64 row
    indices, query by query in the queries' order, each query best first
    (more trees done first, then score, then position); n_trees: [N] int64,
    trees the document completed; dropped: [N] bool, the exit rule dropped it
    (not its budget).
    """

    order: np.ndarray = field(default_factory=_no_rows(np.int64))
    n_trees: np.ndarray = field(default_factory=_no_rows(np.int64))
    dropped: np.ndarray = field(default_factory=_no_rows(np.bool_))


class Runtime(Protocol):
    """Built once from a model; ``name`` labels it in a parity report."""

    name: str

    def predict(self, X, budget=None) -> Prediction: ...


def as_features(X, n_features: int, names=None) -> np.ndarray:
    """Rows as C-contiguous float32 [N, F].  float64 input is rounded to the
    nearest float32 (docs/numerics.md); NaN means missing.

    A table with column names (a pandas DataFrame) is read by name when the
    model's feature ``names`` are given: its columns are put in the model's
    order, and a missing or extra name is an error naming it (a model whose
    names are the defaults ``x0``, ``x1``, ... reads columns by position)."""
    if names is not None and hasattr(X, "columns"):
        from ..ir.feature_costs import column_order
        columns = [str(c) for c in X.columns]
        if len(columns) != n_features:
            missing = [n for n in names if n not in set(columns)]
            extra = [c for c in columns if c not in set(names)]
            raise ValueError(f"X: {len(columns)} columns for a model of {n_features} features "
                             f"(missing {missing[:10]}, not in the model {extra[:10]})")
        X = np.asarray(X.to_numpy())[:, column_order(names, columns, what="X")]
    elif hasattr(X, "to_numpy"):
        X = X.to_numpy()
    try:
        X = np.asarray(X)
    except (TypeError, ValueError) as e:
        raise ValueError(f"X: cannot be read as a numeric matrix ({e})") from None
    if X.ndim == 1:
        X = X[None, :]
    if X.ndim != 2:
        raise ValueError(f"X: expected a 2-d array [rows, features], got shape {X.shape}")
    if X.shape[1] != n_features:
        raise ValueError(f"X: the model has {n_features} features but X has {X.shape[1]} columns")
    if X.dtype.kind not in "fiub":
        raise ValueError(f"X: expected numbers, got dtype {X.dtype}")
    return np.ascontiguousarray(X, dtype=np.float32)


def as_budget(budget, n_rows: int) -> np.ndarray:
    """Per-row budgets as float64 [N]; None means unlimited."""
    if budget is None:
        return np.full(n_rows, np.inf)
    b = np.asarray(budget, dtype=np.float64)
    if b.ndim == 0:
        b = np.full(n_rows, float(b))
    if b.shape != (n_rows,):
        raise ValueError(f"budget: expected a scalar or {n_rows} values, got shape {b.shape}")
    if np.any(np.isnan(b)):
        raise ValueError("budget: NaN is not a budget; use None (or inf) for no limit")
    return np.ascontiguousarray(b)


def as_group_sizes(group, n_rows: int) -> np.ndarray:
    """Query sizes (LightGBM-style: each query's rows contiguous, in order) as
    int64 offsets [Q + 1].  An empty query, sizes that are not positive
    integers, or sizes whose sum is not the number of rows: one clear
    error."""
    if group is None:
        raise ValueError("group: query sizes are needed to rank (one positive integer per query, "
                         "summing to the rows)")
    g = np.asarray(group)
    if g.ndim != 1:
        raise ValueError(f"group: expected a 1-d list of query sizes, got shape {g.shape}")
    if g.size == 0:
        if n_rows:
            raise ValueError(f"group: no queries for {n_rows} rows")
        return np.zeros(1, np.int64)
    if g.dtype.kind == "f":
        if not np.all(np.isfinite(g)) or np.any(g != np.round(g)):
            raise ValueError("group: query sizes must be whole numbers")
    elif g.dtype.kind not in "iu":
        raise ValueError(f"group: expected integer query sizes, got dtype {g.dtype}")
    g = g.astype(np.int64)
    if np.any(g <= 0):
        i = int(np.flatnonzero(g <= 0)[0])
        raise ValueError(f"group: query {i} has {int(g[i])} documents; every query needs at least one")
    total = int(g.sum())
    if total != n_rows:
        raise ValueError(f"group: the query sizes sum to {total} but X has {n_rows} rows")
    return np.concatenate([[0], np.cumsum(g)]).astype(np.int64)


@njit(cache=True)
def argmax_first(scores):
    """Index of the first maximum per row, comparing with '>' from index 0 (a
    NaN never displaces an earlier value), as the C backend does."""
    out = np.zeros(scores.shape[0], np.int64)
    for i in range(scores.shape[0]):
        best = 0
        for k in range(1, scores.shape[1]):
            if scores[i, k] > scores[i, best]:
                best = k
        out[i] = best
    return out


def canonical_nan(a: np.ndarray) -> np.ndarray:
    """Replace every NaN with the canonical quiet NaN (docs/numerics.md):
    float32 0x7fc00000, float64 0x7ff8000000000000."""
    bad = np.isnan(a)
    if bad.any():
        a = a.copy()
        if a.dtype == np.float64:
            a.view(np.uint64)[bad] = CANONICAL_NAN64_BITS
        else:
            a.view(np.uint32)[bad] = CANONICAL_NAN_BITS
    return a


def finish(task, scores: np.ndarray):
    """(output, proba) from raw margins, by the task's rules: binary label is
    classes[1] iff margin > 0; multiclass is the first argmax.  Labels read
    the margins as they are (float64 ones too); probabilities are the
    float32 transform of the margins rounded to float32 (docs/numerics.md)."""
    scores = canonical_nan(scores)
    s32 = scores if scores.dtype == np.float32 else scores.astype(np.float32)
    if task.kind == "regression":
        return (scores[:, 0].copy() if scores.shape[1] == 1 else scores.copy()), None
    classes = np.asarray(task.classes)
    if task.kind == "binary":
        idx = (scores[:, 0] > 0).astype(np.int64)
        proba = None
        if task.transform == "logistic":
            p = logistic(s32)[:, 0]
            proba = canonical_nan(np.stack([np.float32(1.0) - p, p], axis=1))
        return classes[idx], proba
    idx = argmax_first(scores)
    proba = canonical_nan(softmax(s32)) if task.transform == "softmax" else None
    return classes[idx], proba
