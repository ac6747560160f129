"""Ranking losses for the shared booster: LambdaMART (LightGBM's ``lambdarank``) and pointwise squared loss on
the relevance label, both validated by NDCG@k over query groups.

LambdaMART (Burges 2010) fits each tree to the lambdas of every pair of documents of one query with different
labels, i above j when y_i > y_j:

    rho_ij = 1 / (1 + exp(sigma (s_i - s_j))),
    lambda_ij = -sigma |dNDCG_ij| rho_ij,    hessian_ij = sigma^2 |dNDCG_ij| rho_ij (1 - rho_ij),

where |dNDCG_ij| = (2^{y_i} - 2^{y_j}) |1/log2(2 + r_i) - 1/log2(2 + r_j)| / maxDCG@truncation is the change of
NDCG (thesis Eq. 2.20) when i and j swap ranks r_i, r_j in the current ordering.  As LightGBM does (its
``lambdarank_truncation_level`` 30, ``lambdarank_norm`` true, ``sigmoid`` 1): only pairs with at least one
document in the current top ``truncation`` take part; |dNDCG| is divided by 0.01 + |s_i - s_j| when the query's
scores are not all equal; a query's lambdas and hessians are scaled by log2(1 + S) / S, S = sum of |lambda_ij|.
The current ordering sorts by score with ties broken by position (stable), so the gradients are deterministic
and every query writes only its own rows (queries run in parallel with no shared state).

With these gradients the booster's split rule is unchanged, so Greedy Miser's cost penalty (Eq. 2.5,
``cost_tradeoff`` lambda per training row) applies to LambdaMART as it does to the pointwise losses.
"""
from __future__ import annotations

from typing import NamedTuple

import numpy as np
from numba import njit, prange

from ...metrics import QueryGroups, ndcg
from .losses import Loss


class RankTarget(NamedTuple):
    """Relevance labels (float64) of rows grouped by query (``offsets``, query q is ``offsets[q]:offsets[q+1]``)."""

    labels: np.ndarray
    offsets: np.ndarray

    def groups(self) -> QueryGroups:
        return QueryGroups(self.offsets, None, np.arange(len(self.offsets) - 1))


# queries up to this size are ordered by insertion sort in place (no allocation); larger ones by mergesort
_INSERTION_MAX = 64


@njit(cache=True)
def _discounts(n):
    """1 / log2(2 + r) for ranks r = 0..n-1 (thesis Eq. 2.20's discount)."""
    d = np.empty(max(n, 1))
    for r in range(n):
        d[r] = 1.0 / np.log2(r + 2.0)
    return d


@njit(cache=True, parallel=True)
def query_constants(y, offsets, truncation, gain, inv_max_dcg):
    """What the gradients need of the labels alone, once per fit: ``gain`` = 2^y - 1 per row and, per query,
    1 / maxDCG@truncation (0.0 where the ideal DCG is 0: nothing relevant, no gradient)."""
    for q in prange(offsets.shape[0] - 1):
        a, b = offsets[q], offsets[q + 1]
        for d in range(a, b):
            gain[d] = 2.0 ** y[d] - 1.0
        inv_max_dcg[q] = 0.0
        if b - a < 2:
            continue
        ideal = -np.sort(-y[a:b])
        max_dcg = 0.0
        for z in range(min(truncation, b - a)):
            max_dcg += (2.0 ** ideal[z] - 1.0) / np.log2(z + 2.0)
        if max_dcg > 0.0:
            inv_max_dcg[q] = 1.0 / max_dcg


@njit(cache=True, parallel=True)
def _lambdarank_kernel(y, gain, inv_max_dcg, disc, raw, offsets, sigma, truncation, norm, g, h, order, s_y, s_gain,
                       s_raw, acc_g, acc_h):
    """The module docstring's lambdas, one query per iteration; ``order`` .. ``acc_h`` are length-N scratch,
    query q using its own rows ``offsets[q]:offsets[q+1]`` (no allocation, no shared state).  Documents are
    visited in rank order through copies of their label, gain and score; each document's gradient and hessian
    receive the same additions in the same order as a direct scatter would, so the result is bit for bit that
    of the straightforward loop (``tests/ranking/test_lambdarank_kernel.py``)."""
    for q in prange(offsets.shape[0] - 1):
        a, b = offsets[q], offsets[q + 1]
        n = b - a
        inv = inv_max_dcg[q]
        if n < 2 or inv == 0.0:               # no pair, or nothing relevant (every ordering is ideal)
            for d in range(a, b):
                g[d] = 0.0
                h[d] = 0.0
            continue
        # the current ordering: by score, descending, ties by position (stable)
        if n <= _INSERTION_MAX:
            for i in range(n):
                v = raw[a + i]
                k = i
                while k > 0 and raw[a + order[a + k - 1]] < v:
                    order[a + k] = order[a + k - 1]
                    k -= 1
                order[a + k] = i
        else:
            order[a:b] = np.argsort(-raw[a:b], kind="mergesort")
        for i in range(n):
            d = a + order[a + i]
            s_y[a + i] = y[d]
            s_gain[a + i] = gain[d]
            s_raw[a + i] = raw[d]
            acc_g[a + i] = 0.0
            acc_h[a + i] = 0.0
        scaled = norm and s_raw[a] != s_raw[b - 1]
        total = 0.0
        for i in range(min(n - 1, truncation)):
            yi = s_y[a + i]
            for j in range(i + 1, n):
                yj = s_y[a + j]
                if yi == yj:
                    continue
                hi, lo = (i, j) if yi > yj else (j, i)
                diff = s_raw[a + hi] - s_raw[a + lo]
                delta = (s_gain[a + hi] - s_gain[a + lo]) * inv * abs(disc[hi] - disc[lo])
                if scaled:
                    delta /= 0.01 + abs(diff)
                rho = 1.0 / (1.0 + np.exp(sigma * diff))
                lam = -sigma * delta * rho
                hess = sigma * sigma * delta * rho * (1.0 - rho)
                acc_g[a + lo] -= lam
                acc_h[a + lo] += hess
                acc_g[a + hi] += lam
                acc_h[a + hi] += hess
                total -= 2.0 * lam
        if norm and total > 0.0:
            f = np.log2(1.0 + total) / total
            for i in range(n):
                d = a + order[a + i]
                g[d] = acc_g[a + i] * f
                h[d] = acc_h[a + i] * f
        else:
            for i in range(n):
                d = a + order[a + i]
                g[d] = acc_g[a + i]
                h[d] = acc_h[a + i]


class LambdaRankWork:
    """The label constants (``query_constants``), discount table and scratch of one training set, made once and
    reused every round."""

    def __init__(self, y, offsets, truncation):
        y = np.ascontiguousarray(y, np.float64)
        offsets = np.ascontiguousarray(offsets, np.int64)
        N = y.shape[0]
        self.y, self.offsets = y, offsets
        self.gain, self.inv_max_dcg = np.empty(N), np.empty(offsets.shape[0] - 1)
        query_constants(y, offsets, truncation, self.gain, self.inv_max_dcg)
        self.disc = _discounts(int(np.diff(offsets).max(initial=0)))
        self.order = np.empty(N, np.int64)
        self.scratch = tuple(np.empty(N) for _ in range(5))

    def gradients(self, raw, sigma, truncation, norm, g, h):
        _lambdarank_kernel(self.y, self.gain, self.inv_max_dcg, self.disc, np.ascontiguousarray(raw, np.float64),
                           self.offsets, float(sigma), int(truncation), bool(norm), g, h, self.order, *self.scratch)


def lambdarank_gradients(y, raw, offsets, sigma, truncation, norm, g, h):
    """Fill g, h (length N) with the LambdaMART gradients and hessians of raw scores (module docstring).  A
    booster's loss keeps its ``LambdaRankWork`` across rounds; this one-off form makes it each call."""
    LambdaRankWork(y, offsets, truncation).gradients(raw, sigma, truncation, norm, g, h)


class _RankingValidation(Loss):
    """Validation by NDCG@``eval_at`` over the eval set's queries: ``value`` is -NDCG (lower is better, as the
    booster's early stopping expects)."""

    eval_at = 5

    def value(self, t: RankTarget, raw) -> float:
        return -ndcg(t.labels, raw[:, 0], t.groups(), self.eval_at)


class LambdaRankLoss(_RankingValidation):
    """LambdaMART's pairwise ``|dNDCG|``-weighted objective; initial score 0 (ranking is shift-invariant)."""

    name = "lambdarank"

    def __init__(self, sigma=1.0, truncation=30, norm=True, eval_at=5):
        self.sigma, self.truncation, self.norm, self.eval_at = float(sigma), int(truncation), bool(norm), eval_at

    def initial_scores(self, t: RankTarget, w):
        return np.zeros(1)

    def gradients(self, t: RankTarget, raw, k, g, h):
        work = getattr(self, "_work", None)
        if work is None or work[0] is not t.labels or work[1] is not t.offsets:   # a new training set
            work = self._work = (t.labels, t.offsets, LambdaRankWork(t.labels, t.offsets, self.truncation))
        work[2].gradients(raw[:, 0], self.sigma, self.truncation, self.norm, g, h)


class PointwiseRankLoss(_RankingValidation):
    """1/2 (y - f)^2 on the relevance label (what the thesis' Yahoo experiments trained), validated by NDCG."""

    name = "squared"

    def __init__(self, eval_at=5):
        self.eval_at = eval_at

    def initial_scores(self, t: RankTarget, w):
        return np.array([np.average(t.labels, weights=w)])

    def gradients(self, t: RankTarget, raw, k, g, h):
        np.subtract(raw[:, 0], t.labels, out=g)
        h[:] = 1.0


OBJECTIVES = ("lambdarank", "squared")


def make_rank_loss(objective, *, sigma=1.0, truncation=30, eval_at=5) -> Loss:
    """The ranking loss named ``objective`` ("lambdarank" or "squared")."""
    if objective == "lambdarank":
        return LambdaRankLoss(sigma, truncation, True, eval_at)
    if objective == "squared":
        return PointwiseRankLoss(eval_at)
    raise ValueError(f"objective must be one of {', '.join(OBJECTIVES)}, got {objective!r}")
