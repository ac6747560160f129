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
def softmax_class(Y, raw, k, g, h):
    """Multiclass log-loss, gradient of class k; raw is [N, K], Y one-hot."""
    N, K = raw.shape
    for i in prange(N):
        m = raw[i, 0]
        for j in range(1, K):
            m = max(m, raw[i, j])
        s = 0.0
        for j in range(K):
            s += np.exp(raw[i, j] - m)
        p = np.exp(raw[i, k] - m) / s
        g[i] = p - Y[i, k]
        h[i] = max(p * (1.0 - p), 1e-16)


LOSSES = ("squared", "logistic", "multiclass", "squared_hinge")
