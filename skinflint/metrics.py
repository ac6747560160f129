"""Ranking metrics over query groups: NDCG@k, Precision@k and ERR, and the one parser of query groups.

This module imports nothing from the rest of skinflint, so trainers, curves, the CLI and the data loaders can all
use it (docs/ranking.md).

Queries
-------
``group`` names which rows belong to which query, in one of two forms, both checked:

* per-row query ids (an array of length ``n_rows``; any hashable numbers or strings, NaN refused), or
* LightGBM-style group sizes (an array of positive integers summing to ``n_rows``; a query of size 0 is refused).

An array of length ``n_rows`` is always read as per-row ids (so sizes of N one-document queries must be given as
ids ``arange(N)``).  ``None`` means one query holding every row.  Rows of one query need not be contiguous when ids
are given: they are *regrouped* (stably, queries in order of first appearance, rows in their original order
within a query), and ``QueryGroups.order`` is the permutation that does it; every metric here regroups itself.

Conventions (stated once, tested in tests/test_metrics.py)
----------------------------------------------------------
* Ranking: documents are sorted by score, highest first; equal scores keep their order of position in the query
  (the earlier row ranks higher).  NaN scores are refused.
* NDCG@k (thesis Eq. 2.20): DCG@k = sum_{z=1..k} (2^{y_z} - 1) / log2(z + 1), divided by the DCG@k of the ideal
  ordering.  A query whose ideal DCG is 0 (no document has a label > 0) has no right or wrong ranking: it counts
  ``ideal_zero`` (default 1.0, LightGBM's convention; scikit-learn's ``ndcg_score`` counts 0, pass
  ``ideal_zero=0.0`` to match it).  Labels must be non-negative integers.
* Precision@k: the number of documents with label >= ``threshold`` among the top k, divided by k (TREC's
  convention, also for a query with fewer than k documents).
* ERR@k (Chapelle et al. 2009): sum_r 1/r R_r prod_{i<r} (1 - R_i), R = (2^y - 1) / 2^max_grade.
* A one-document query is a query like any other: its NDCG is 1 if its label is > 0 (no ordering can be
  better) and ``ideal_zero`` otherwise; its P@k is 1/k or 0; its ERR is R of its label.
* The result is the mean over queries (every query weighs the same), or per query with ``per_query=True``.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numba import njit, prange

__all__ = ["QueryGroups", "query_groups", "relevance_labels", "ranking_order", "ndcg", "precision_at_k", "err",
           "parse_metric", "METRICS"]


@dataclass(frozen=True)
class QueryGroups:
    """Rows grouped into queries.

    Attributes
    ----------
    offsets : int64 ndarray of shape (n_queries + 1,)
        Query q holds rows ``order[offsets[q]:offsets[q + 1]]``.
    order : int64 ndarray of shape (n_rows,) or None
        The stable permutation that makes each query's rows contiguous; None when they already are.
    ids : ndarray of shape (n_queries,)
        The query id of each query (its index when group sizes were given).
    """

    offsets: np.ndarray
    order: np.ndarray | None
    ids: np.ndarray

    @property
    def n_queries(self) -> int:
        return len(self.offsets) - 1

    @property
    def n_rows(self) -> int:
        return int(self.offsets[-1])

    @property
    def sizes(self) -> np.ndarray:
        return np.diff(self.offsets)

    def take(self, a):
        """``a`` (rows along axis 0) with each query's rows contiguous."""
        return a if self.order is None else a[self.order]

    def row_query(self) -> np.ndarray:
        """The query index of every row, in the rows' original order."""
        q = np.repeat(np.arange(self.n_queries, dtype=np.int64), self.sizes)
        if self.order is None:
            return q
        out = np.empty_like(q)
        out[self.order] = q
        return out


def query_groups(group, n_rows: int, *, name="group", kind="auto") -> QueryGroups:
    """Parse ``group`` (per-row query ids, group sizes or None) for ``n_rows`` rows; see the module docstring.
    ``kind="sizes"`` or ``"ids"`` says which form ``group`` is instead of reading it from its length.

    Raises ``ValueError`` with one line naming the problem: no rows, sizes that do not sum to ``n_rows``, an
    empty query, non-integer sizes, NaN ids, a wrong shape.
    """
    n_rows = int(n_rows)
    if n_rows <= 0:
        raise ValueError(f"{name}: no rows to group into queries")
    if group is None:
        return QueryGroups(np.array([0, n_rows], np.int64), None, np.zeros(1, np.int64))
    if hasattr(group, "to_numpy"):
        group = group.to_numpy()
    g = np.asarray(group)
    if g.ndim != 1:
        raise ValueError(f"{name}: expected a 1-d array of per-row query ids or group sizes, got shape {g.shape}")
    if g.dtype.kind == "f" and np.isnan(g).any():
        raise ValueError(f"{name}: query ids contain NaN")
    if kind not in ("auto", "ids", "sizes"):
        raise ValueError(f"kind must be 'auto', 'ids' or 'sizes', got {kind!r}")
    if kind == "ids" and len(g) != n_rows:
        raise ValueError(f"{name}: {len(g)} query ids for {n_rows} rows")
    if kind == "ids" or (kind == "auto" and len(g) == n_rows):
        return _from_ids(g)
    if g.dtype.kind not in "iuf" or (g.dtype.kind == "f" and not np.all(g == np.round(g))):
        raise ValueError(f"{name}: {len(g)} values for {n_rows} rows, so read as group sizes, but they are "
                         "not integers (per-row query ids need one value per row)")
    sizes = g.astype(np.int64)
    if np.any(sizes <= 0):
        q = int(np.flatnonzero(sizes <= 0)[0])
        raise ValueError(f"{name}: query {q} has size {sizes[q]}; an empty query (or negative size) is not a query")
    if sizes.sum() != n_rows:
        raise ValueError(f"{name}: group sizes sum to {int(sizes.sum())} but there are {n_rows} rows")
    return QueryGroups(np.concatenate([[0], np.cumsum(sizes)]).astype(np.int64), None,
                       np.arange(len(sizes), dtype=np.int64))


def _from_ids(g) -> QueryGroups:
    uniq, first, inv = np.unique(g, return_index=True, return_inverse=True)
    by_first = np.argsort(first, kind="stable")            # queries numbered by first appearance
    code = np.empty(len(uniq), np.int64)
    code[by_first] = np.arange(len(uniq))
    q = code[inv.reshape(-1)]
    counts = np.bincount(q, minlength=len(uniq))
    offsets = np.concatenate([[0], np.cumsum(counts)]).astype(np.int64)
    order = None if np.all(q[1:] >= q[:-1]) else np.argsort(q, kind="stable").astype(np.int64)
    return QueryGroups(offsets, order, uniq[by_first])


# ---------------------------------------------------------------- kernels

@njit(cache=True, parallel=True)
def _order_kernel(scores, offsets, out):
    """out[a:b] = a + the stable descending order of scores[a:b], per query."""
    for q in prange(offsets.shape[0] - 1):
        a, b = offsets[q], offsets[q + 1]
        out[a:b] = a + np.argsort(-scores[a:b], kind="mergesort")


@njit(cache=True, parallel=True)
def _ndcg_kernel(y, ranked, offsets, k, ideal_zero, out):
    for q in prange(offsets.shape[0] - 1):
        a, b = offsets[q], offsets[q + 1]
        m = min(k, b - a)
        dcg = 0.0
        for z in range(m):
            dcg += (2.0 ** y[ranked[a + z]] - 1.0) / np.log2(z + 2.0)
        ideal = -np.sort(-y[a:b])
        idcg = 0.0
        for z in range(m):
            idcg += (2.0 ** ideal[z] - 1.0) / np.log2(z + 2.0)
        out[q] = dcg / idcg if idcg > 0 else ideal_zero


@njit(cache=True, parallel=True)
def _precision_kernel(y, ranked, offsets, k, threshold, out):
    for q in prange(offsets.shape[0] - 1):
        a, b = offsets[q], offsets[q + 1]
        hits = 0
        for z in range(min(k, b - a)):
            if y[ranked[a + z]] >= threshold:
                hits += 1
        out[q] = hits / k


@njit(cache=True, parallel=True)
def _err_kernel(y, ranked, offsets, k, max_grade, out):
    for q in prange(offsets.shape[0] - 1):
        a, b = offsets[q], offsets[q + 1]
        p_continue, e = 1.0, 0.0
        for z in range(min(k, b - a)):
            r = (2.0 ** y[ranked[a + z]] - 1.0) / 2.0 ** max_grade
            e += p_continue * r / (z + 1.0)
            p_continue *= 1.0 - r
        out[q] = e


# ---------------------------------------------------------------- checks

def relevance_labels(y, n_rows, *, integer=True) -> np.ndarray:
    """``y`` as float64 relevance labels, checked: one per row, finite, not NaN, and (``integer``) non-negative
    integers."""
    y = np.asarray(y)
    if y.ndim != 1 or len(y) != n_rows:
        raise ValueError(f"y: expected {n_rows} labels (one per row), got shape {y.shape}")
    if y.dtype.kind not in "iufb":
        raise ValueError(f"y: expected numeric relevance labels, got dtype {y.dtype}")
    y = y.astype(np.float64)
    if np.isnan(y).any():
        raise ValueError(f"y: {int(np.isnan(y).sum())} relevance labels are NaN")
    if not np.all(np.isfinite(y)):
        raise ValueError("y: relevance labels must be finite")
    if integer and (np.any(y < 0) or np.any(y != np.round(y))):
        bad = y[(y < 0) | (y != np.round(y))][0]
        raise ValueError(f"y: graded relevance must be non-negative integers (found {bad!r})")
    return y


def _k(k):
    if not (isinstance(k, (int, np.integer)) and k >= 1):
        raise ValueError(f"k must be a positive integer, got {k!r}")
    return int(k)


def _prepared(y, scores, group, *, integer, order=None):
    """(labels, ranked row index, offsets), each query's rows contiguous."""
    s = np.asarray(scores)
    if s.ndim == 2 and s.shape[1] == 1:
        s = s[:, 0]
    if s.ndim != 1:
        raise ValueError(f"scores: expected one score per row, got shape {s.shape}")
    n = len(s)
    qg = group if isinstance(group, QueryGroups) else query_groups(group, n)
    if qg.n_rows != n:
        raise ValueError(f"group: describes {qg.n_rows} rows but there are {n} scores")
    y = qg.take(relevance_labels(y, n, integer=integer))
    if order is not None:
        return y, _checked_order(order, qg), qg.offsets
    s = _scores_without_nan(qg.take(s.astype(np.float64)))
    ranked = np.empty(n, np.int64)
    _order_kernel(s, qg.offsets, ranked)
    return y, ranked, qg.offsets


def _checked_order(order, qg):
    """A given ranking (``ranking_order``'s form) mapped into regrouped positions."""
    order = np.asarray(order, np.int64)
    if order.shape != (qg.n_rows,):
        raise ValueError(f"order: expected {qg.n_rows} row indices, got shape {order.shape}")
    pos = np.empty(qg.n_rows, np.int64)           # original row -> regrouped position
    pos[np.arange(qg.n_rows) if qg.order is None else qg.order] = np.arange(qg.n_rows)
    ranked = pos[order]
    q = np.repeat(np.arange(qg.n_queries), qg.sizes)
    if not np.array_equal(np.sort(ranked), np.arange(qg.n_rows)) or np.any(q[ranked] != q):
        raise ValueError("order: not a permutation that keeps every query's documents in the query's slots")
    return ranked


def _scores_without_nan(s):
    if np.isnan(s).any():
        raise ValueError(f"scores: {int(np.isnan(s).sum())} scores are NaN; a ranking needs every score")
    return s


def ranking_order(scores, group) -> np.ndarray:
    """Row indices, query by query (queries in ``query_groups`` order), each query's rows best first (ties: the
    earlier row first).  Metrics accept such an ``order=`` instead of scores when the ranking is not by score
    alone (Early Exit's survivors before dropped documents)."""
    s = _scores_without_nan(np.asarray(scores, np.float64).reshape(-1))
    qg = group if isinstance(group, QueryGroups) else query_groups(group, len(s))
    ranked = np.empty(len(s), np.int64)
    _order_kernel(qg.take(s), qg.offsets, ranked)
    return ranked if qg.order is None else qg.order[ranked]


def _mean(out, per_query):
    return out if per_query else float(out.mean())


# ---------------------------------------------------------------- metrics

def ndcg(y, scores, group=None, k=5, *, ideal_zero=1.0, per_query=False, order=None):
    """NDCG@k with gain 2^y - 1 and discount 1/log2(rank + 1) (thesis Eq. 2.20), averaged over queries.

    Parameters
    ----------
    y : array-like of shape (n_rows,)
        Graded relevance, non-negative integers.
    scores : array-like of shape (n_rows,)
        Model scores, higher ranks first; ties by position.
    group : per-row query ids, group sizes, ``QueryGroups`` or None (one query)
    k : int, default 5
    ideal_zero : float, default 1.0
        What a query with ideal DCG 0 (no relevant document) counts.
    per_query : bool, default False
        Return one value per query (queries in ``query_groups`` order) instead of the mean.
    order : array-like, optional
        A ranking in ``ranking_order``'s form, used instead of sorting ``scores``.
    """
    y, ranked, offsets = _prepared(y, scores, group, integer=True, order=order)
    out = np.empty(len(offsets) - 1)
    _ndcg_kernel(y, ranked, offsets, _k(k), float(ideal_zero), out)
    return _mean(out, per_query)


def precision_at_k(y, scores, group=None, k=5, *, threshold=1.0, per_query=False, order=None):
    """Precision@k: the fraction of the top k that have label >= ``threshold`` (divided by k even when a
    query has fewer documents), averaged over queries.  Chen et al. 2012 (§4) use P@5 with relevance >= 3 on
    the skewed binary Yahoo task: ``threshold=3`` on graded labels, or ``threshold=1`` on 0/1 labels."""
    y, ranked, offsets = _prepared(y, scores, group, integer=False, order=order)
    out = np.empty(len(offsets) - 1)
    _precision_kernel(y, ranked, offsets, _k(k), float(threshold), out)
    return _mean(out, per_query)


def err(y, scores, group=None, k=None, *, max_grade=4, per_query=False, order=None):
    """Expected reciprocal rank (Chapelle et al. 2009), cut at k (None: the whole query), averaged over
    queries; R = (2^y - 1) / 2^max_grade, ``max_grade`` 4 as in the Yahoo challenge."""
    y, ranked, offsets = _prepared(y, scores, group, integer=True, order=order)
    if np.any(y > max_grade):
        raise ValueError(f"y: label {y.max():g} exceeds max_grade={max_grade}")
    kk = int(np.diff(offsets).max()) if k is None else _k(k)
    out = np.empty(len(offsets) - 1)
    _err_kernel(y, ranked, offsets, kk, float(max_grade), out)
    return _mean(out, per_query)


METRICS = ("ndcg@k", "p@k", "err@k", "err", "accuracy", "neg_mse")


def parse_metric(name):
    """``(function, k, needs_groups)`` for a metric name: ``"ndcg@5"``, ``"p@5"`` (relevance threshold 1; use
    ``precision_at_k`` directly for another), ``"err@10"`` or ``"err"``; ``(None, None, False)`` for
    ``"accuracy"`` and ``"neg_mse"``, which are not ranking metrics."""
    name = str(name).lower().strip()
    if name in ("accuracy", "neg_mse"):
        return None, None, False
    base, _, kk = name.partition("@")
    table = {"ndcg": ndcg, "p": precision_at_k, "precision": precision_at_k, "err": err}
    if base not in table or (kk and not kk.isdigit()) or (not kk and base != "err"):
        raise ValueError(f"unknown metric {name!r}; expected one of ndcg@K, p@K, err@K, err, accuracy, neg_mse")
    return table[base], (int(kk) if kk else None), True
