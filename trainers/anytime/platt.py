"""Platt scaling (Platt 1999; the Newton method of Lin, Lin & Weng 2007).

p(y = 1 | f) = 1 / (1 + exp(A f + B)), fitted by maximum likelihood to
Platt's smoothed targets t+ = (N+ + 1) / (N+ + 2), t- = 1 / (N- + 2), which
keep A and B finite on separable data.  Multiclass AFR (thesis §2.2.4)
calibrates its one-vs-all margins with it before taking the argmax.
"""
from __future__ import annotations

import math

import numpy as np


def _objective(f, t, A, B):
    z = A * f + B
    # the negative log-likelihood with p = 1 / (1 + e^z): sum log(1 + e^z) - (1 - t) z
    return float(np.sum(np.logaddexp(0.0, z) - (1.0 - t) * z))


def platt_fit(f, y01, max_iter=100, tol=1e-10) -> tuple[float, float]:
    """(A, B) of Platt scaling for margins ``f`` and labels ``y01``.

    Margins with no spread cannot rank the rows: A = 0 and B gives the
    smoothed prior."""
    f = np.asarray(f, np.float64)
    y = np.asarray(y01, np.float64)
    n_pos = float(y.sum())
    n_neg = float(y.size - n_pos)
    t = np.where(y > 0, (n_pos + 1.0) / (n_pos + 2.0), 1.0 / (n_neg + 2.0))
    prior = float(t.mean()) if t.size else 0.5
    B = math.log((1.0 - prior) / prior)      # p = 1 / (1 + e^B) = the smoothed prior
    if f.size == 0 or not float(f.max() - f.min()) > 0:
        return 0.0, B
    A = 0.0
    obj = _objective(f, t, A, B)
    for _ in range(max_iter):
        z = A * f + B
        p = 0.5 * (1.0 - np.tanh(0.5 * z))   # 1 / (1 + e^z) without overflow
        d1 = t - p                           # d obj / d z
        w = p * (1.0 - p)                    # d2 obj / d z2
        gA, gB = float(np.dot(d1, f)), float(d1.sum())
        hAA, hAB, hBB = float(np.dot(w, f * f)) + 1e-12, float(np.dot(w, f)), float(w.sum()) + 1e-12
        if abs(gA) < tol and abs(gB) < tol:
            break
        det = hAA * hBB - hAB * hAB
        dA = -(hBB * gA - hAB * gB) / det
        dB = -(hAA * gB - hAB * gA) / det
        step = 1.0
        while step >= 1e-10:                 # backtracking (Lin, Lin & Weng 2007, Alg. 1)
            nA, nB = A + step * dA, B + step * dB
            new = _objective(f, t, nA, nB)
            if new < obj + 1e-4 * step * (gA * dA + gB * dB):
                break
            step /= 2.0
        else:
            break
        A, B, obj = nA, nB, new
    return A, B
