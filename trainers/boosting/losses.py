"""Losses: gradients and hessians of the raw scores, and initial scores."""
import numpy as np
from numba import njit, prange


@njit(cache=True, parallel=True)
def squared(y, raw, g, h):
    for i in prange(y.shape[0]):
        g[i] = raw[i] - y[i]
        h[i] = 1.0


@njit(cache=True, parallel=True)
def logistic(y, raw, g, h):
    """Binary log-loss, y in {0, 1}."""
    for i in prange(y.shape[0]):
        p = 1.0 / (1.0 + np.exp(-raw[i]))
        g[i] = p - y[i]
        h[i] = max(p * (1.0 - p), 1e-16)


@njit(cache=True, parallel=True)
def squared_hinge(y, raw, g, h):
    """Un-regularised squared hinge max(0, 1 - y f)^2 with y in {0, 1} -> {-1, +1}."""
    for i in prange(y.shape[0]):
        s = 2.0 * y[i] - 1.0
        m = 1.0 - s * raw[i]
        if m > 0:
            g[i] = -2.0 * s * m
            h[i] = 2.0
        else:
            g[i] = 0.0
            h[i] = 0.0


@njit(cache=True, parallel=True)
def softmax_gradients(Y, raw, G, H):
    """Multiclass log-loss, gradients and hessians of every class, G and H
    [K, N]; raw is [N, K], Y one-hot.  With p = softmax(raw):

        g_ik = p_ik - y_ik,        h_ik = K / (K - 1) * p_ik (1 - p_ik)

    The K / (K - 1) factor is LightGBM's (``multiclass_objective.hpp``):
    p (1 - p) is the diagonal of the softmax hessian, which ignores that
    the K trees of a round all move at once; the factor shrinks every
    Newton step to what the coupled classes can take (XGBoost uses 2).
    Without it, 26-class letter diverged at learning rate 0.3
    (docs/boosting.md, "Multiclass")."""
    N, K = raw.shape
    factor = K / (K - 1.0) if K > 1 else 1.0
    for i in prange(N):
        # a row's max and normaliser once for all K classes (a round's
        # gradients all come from its starting scores)
        m = raw[i, 0]
        for j in range(1, K):
            m = max(m, raw[i, j])
        s = 0.0
        for j in range(K):
            s += np.exp(raw[i, j] - m)
        for k in range(K):
            p = np.exp(raw[i, k] - m) / s
            G[k, i] = p - Y[i, k]
            H[k, i] = max(factor * p * (1.0 - p), 1e-16)


LOSSES = ("squared", "logistic", "multiclass", "squared_hinge")


# ---------------------------------------------------------------- loss objects
class Loss:
    """A boosting loss: per-output gradients and hessians of the raw scores,
    the initial scores, and the mean loss (for validation).  ``n_outputs``
    trees are grown per round, one per output column."""

    name = ""
    n_outputs = 1

    def initial_scores(self, target, weight) -> np.ndarray:
        raise NotImplementedError

    def gradients(self, target, raw, k, g, h):
        """Fill g, h (length N) for output column k of raw [N, K]."""
        raise NotImplementedError

    def round_gradients(self, target, raw, G, H):
        """Fill G, H [K, N] for every output column of raw [N, K]: one
        round's, all at the scores of its start."""
        for k in range(G.shape[0]):
            self.gradients(target, raw, k, G[k], H[k])

    def value(self, target, raw) -> float:
        raise NotImplementedError


class SquaredLoss(Loss):
    """1/2 (y - f)^2: regression."""

    name = "squared"

    def initial_scores(self, y, w):
        return np.array([np.average(y, weights=w)])

    def gradients(self, y, raw, k, g, h):
        squared(y, raw[:, 0].copy(), g, h)

    def value(self, y, raw):
        return float(np.mean((raw[:, 0] - y) ** 2))


class LogisticLoss(Loss):
    """Binary log-loss on y in {0, 1}; scores are log-odds."""

    name = "logistic"

    def initial_scores(self, t, w):
        p = np.clip(np.average(t, weights=w), 1e-6, 1 - 1e-6)
        return np.array([np.log(p / (1 - p))])

    def gradients(self, t, raw, k, g, h):
        logistic(t, raw[:, 0].copy(), g, h)

    def value(self, t, raw):
        z = raw[:, 0]
        return float(np.mean(np.logaddexp(0, z) - t * z))


class SquaredHingeLoss(Loss):
    """max(0, 1 - y f)^2 on y in {0, 1} -> {-1, +1}: the thesis' Greedy
    Miser classification loss."""

    name = "squared_hinge"

    def initial_scores(self, t, w):
        p = np.clip(np.average(t, weights=w), 1e-6, 1 - 1e-6)
        return np.array([2 * p - 1])

    def gradients(self, t, raw, k, g, h):
        squared_hinge(t, raw[:, 0].copy(), g, h)

    def value(self, t, raw):
        return float(np.mean(np.maximum(0, 1 - (2 * t - 1) * raw[:, 0]) ** 2))


class SoftmaxLoss(Loss):
    """Multiclass log-loss on one-hot targets [N, K]: one tree per class per
    round.  The booster computes every class's gradients of a round from
    the scores at the start of that round (as LightGBM and XGBoost do), and
    the hessian carries LightGBM's K / (K - 1) factor (``softmax_gradients``)."""

    name = "multiclass"

    def __init__(self, n_classes):
        self.n_outputs = int(n_classes)

    def initial_scores(self, Y, w):
        p = np.clip(np.average(Y, axis=0, weights=w), 1e-6, None)
        return np.log(p) - np.log(p).mean()

    def round_gradients(self, Y, raw, G, H):
        softmax_gradients(Y, raw, G, H)

    def value(self, Y, raw):
        m = raw.max(axis=1, keepdims=True)
        lse = m[:, 0] + np.log(np.exp(raw - m).sum(axis=1))
        return float(np.mean(lse - (raw * Y).sum(axis=1)))


def make_loss(name, n_classes=None) -> Loss:
    """The loss object for ``name`` ("squared", "logistic", "squared_hinge";
    "multiclass" needs ``n_classes``)."""
    if name == "squared":
        return SquaredLoss()
    if name == "logistic":
        return LogisticLoss()
    if name == "squared_hinge":
        return SquaredHingeLoss()
    if name == "multiclass":
        return SoftmaxLoss(n_classes)
    raise ValueError(f"unknown loss {name!r}; expected one of {', '.join(LOSSES)}")
