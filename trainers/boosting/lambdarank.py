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


@njit(cache=True, parallel=True)
def lambdarank_gradients(y, raw, offsets, sigma, truncation, norm, g, h):
    """Fill g, h (length N) with the LambdaMART gradients and hessians of raw scores (module docstring)."""
    for q in prange(offsets.shape[0] - 1):
        a, b = offsets[q], offsets[q + 1]
        n = b - a
        for d in range(a, b):
            g[d] = 0.0
            h[d] = 0.0
        if n < 2:
            continue                          # a one-document query has no pair: no gradient
        order = np.argsort(-raw[a:b], kind="mergesort")
        ideal = -np.sort(-y[a:b])
        max_dcg = 0.0
        for z in range(min(truncation, n)):
            max_dcg += (2.0 ** ideal[z] - 1.0) / np.log2(z + 2.0)
        if max_dcg <= 0.0:
            continue                          # nothing relevant: every ordering is ideal
        inv = 1.0 / max_dcg
        best, worst = raw[a + order[0]], raw[a + order[n - 1]]
        total = 0.0
        for i in range(min(n - 1, truncation)):
            for j in range(i + 1, n):
                yi, yj = y[a + order[i]], y[a + order[j]]
                if yi == yj:
                    continue
                hi, lo = (i, j) if yi > yj else (j, i)
                high, low = a + order[hi], a + order[lo]
                diff = raw[high] - raw[low]
                delta = ((2.0 ** y[high] - 1.0) - (2.0 ** y[low] - 1.0)) * inv * \
                    abs(1.0 / np.log2(hi + 2.0) - 1.0 / np.log2(lo + 2.0))
                if norm and best != worst:
                    delta /= 0.01 + abs(diff)
                rho = 1.0 / (1.0 + np.exp(sigma * diff))
                lam = -sigma * delta * rho
                hess = sigma * sigma * delta * rho * (1.0 - rho)
                g[low] -= lam
                h[low] += hess
                g[high] += lam
                h[high] += hess
                total -= 2.0 * lam
        if norm and total > 0.0:
            f = np.log2(1.0 + total) / total
            for d in range(a, b):
                g[d] *= f
                h[d] *= f


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
        lambdarank_gradients(t.labels, raw[:, 0].copy(), t.offsets, self.sigma, self.truncation, self.norm, g, h)


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
