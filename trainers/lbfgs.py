"""L-BFGS (and Polak-Ribiere CG) with skinflint's own reduction order (no BLAS inside).

scipy's L-BFGS-B (and BFGS) call BLAS (``ddot``, ``daxpy``, ``dscal``; BFGS
a matrix-vector product) inside their loops, so the iterates, and the models
the trainers build from them, depended on the CPU's OpenBLAS kernel
(measured: Cronus, CSCC and CVM gave other model bytes under
``OPENBLAS_CORETYPE=Prescott``).  This is the textbook method (Nocedal &
Wright 2006, Alg. 7.4 two-loop recursion, Alg. 7.5 with H0 = (s'y / y'y) I)
with a backtracking Armijo line search, every vector operation a numba loop
in ascending index order (``trainers/linalg.py``).  ``method="cg"`` is
nonlinear conjugate gradient with the Polak-Ribiere+ coefficient (Nocedal &
Wright Eq. 5.45; CVM's thesis optimiser) on the same line search, restarted
along -g whenever its direction is not a descent direction.

Stopping, as scipy's L-BFGS-B: ``max|g| <= gtol``, or a relative decrease
``(f_k - f_{k+1}) / max(|f_k|, |f_{k+1}|, 1) <= ftol``, or ``maxiter``
iterations, or a line search that finds no decrease.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numba import njit

from .linalg import dot as _dot


@dataclass
class LBFGSResult:
    """``x``, ``fun``, ``jac`` at the best point, iterations ``nit``,
    evaluations ``nfev`` and why it stopped (``message``)."""

    x: np.ndarray
    fun: float
    jac: np.ndarray
    nit: int
    nfev: int
    message: str


@njit(cache=True)
def _direction(g, S, Y, rho, head, count):
    """-H g by the two-loop recursion over the ``count`` stored pairs,
    newest first (ring buffer, newest at ``head``); each dot product over
    the coordinates in ascending order."""
    m, n = S.shape
    q = g.copy()
    alpha = np.zeros(m)
    for t in range(count):
        j = (head - t) % m
        a = 0.0
        for i in range(n):
            a += S[j, i] * q[i]
        a *= rho[j]
        alpha[j] = a
        for i in range(n):
            q[i] -= a * Y[j, i]
    if count > 0:
        sy = 0.0
        yy = 0.0
        for i in range(n):
            sy += S[head, i] * Y[head, i]
            yy += Y[head, i] * Y[head, i]
        gam = sy / yy
        for i in range(n):
            q[i] *= gam
    for t in range(count - 1, -1, -1):
        j = (head - t) % m
        b = 0.0
        for i in range(n):
            b += Y[j, i] * q[i]
        b *= rho[j]
        for i in range(n):
            q[i] += (alpha[j] - b) * S[j, i]
    for i in range(n):
        q[i] = -q[i]
    return q


@njit(cache=True)
def _max_abs(g):
    m = 0.0
    for i in range(g.shape[0]):
        a = abs(g[i])
        if a > m:
            m = a
    return m


@njit(cache=True)
def _step(x, d, t):
    out = np.empty_like(x)
    for i in range(x.shape[0]):
        out[i] = x[i] + t * d[i]
    return out


def minimize(fun, x0, *, maxiter=100, m=10, gtol=1e-5, ftol=2.220446049250313e-09, c1=1e-4,
             max_backtracks=40, method="lbfgs", callback=None) -> LBFGSResult:
    """Minimise a smooth ``fun(x) -> (f, g)`` from ``x0``.

    Parameters
    ----------
    fun : callable
        Returns the value and the gradient (float64 [n]).
    x0 : array [n]
    maxiter : int
        Iterations (accepted steps) at most.
    m : int
        Stored correction pairs.
    gtol, ftol : float
        Stopping tolerances (see the module docstring).
    c1 : float
        Armijo constant: a step t is taken when f(x + t d) <= f + c1 t g'd.
    max_backtracks : int
        Halvings of t before the search gives up.
    method : {"lbfgs", "cg"}
    callback : callable, optional
        Called with no argument after each accepted step (a progress bar's
        ``update``); it sees nothing and changes nothing.

    Returns
    -------
    LBFGSResult
    """
    if method not in ("lbfgs", "cg"):
        raise ValueError(f"method must be 'lbfgs' or 'cg', got {method!r}")
    cg = method == "cg"
    x = np.array(x0, np.float64)
    n = x.shape[0]
    f, g = fun(x)
    f, g = float(f), np.asarray(g, np.float64)
    nfev = 1
    S = np.zeros((m, n))
    Y = np.zeros((m, n))
    rho = np.zeros(m)
    head, count = m - 1, 0
    d_prev, t_prev, gd_prev, g_prev = None, 1.0, 0.0, g
    it = 0
    message = "maximum iterations"
    if not np.isfinite(f):
        return LBFGSResult(x, f, g, 0, nfev, "non-finite objective at the start")
    while it < maxiter:
        if _max_abs(g) <= gtol:
            message = "gradient below gtol"
            break
        if cg:
            d = -g
            if d_prev is not None:       # PR+: beta = max(0, g'(g - g_prev) / g_prev'g_prev)
                beta = max(0.0, _dot(g, g - g_prev) / _dot(g_prev, g_prev))
                d = _step(d, d_prev, beta)
        else:
            d = _direction(g, S, Y, rho, head, count)
        gd = _dot(g, d)
        if not gd < 0.0:                 # not a descent direction (curvature lost): restart
            head, count = m - 1, 0
            d = -g
            gd = _dot(g, d)
        if cg and d_prev is not None:    # NW Eq. 3.60: the last step's first-order change
            t = min(1.0, 1.01 * t_prev * gd_prev / gd)
        else:                            # length 1 in x with no curvature yet, as scipy's first step
            t = 1.0 if count else min(1.0, 1.0 / np.sqrt(_dot(g, g)))
        for _ in range(max_backtracks):
            xn = _step(x, d, t)
            fn, gn = fun(xn)
            fn = float(fn)
            nfev += 1
            if np.isfinite(fn) and fn <= f + c1 * t * gd:
                break
            t *= 0.5
        else:
            message = "line search found no decrease"
            break
        gn = np.asarray(gn, np.float64)
        d_prev, t_prev, gd_prev, g_prev = d, t, gd, g
        s = xn - x
        yv = gn - g
        sy = _dot(s, yv)
        if sy > 1e-10 * _dot(yv, yv):    # keep H positive definite: skip pairs without curvature
            head = (head + 1) % m
            S[head], Y[head], rho[head] = s, yv, 1.0 / sy
            count = min(count + 1, m)
        it += 1
        if callback is not None:
            callback()
        decrease = (f - fn) / max(abs(f), abs(fn), 1.0)
        x, f, g = xn, fn, gn
        if decrease <= ftol:
            message = "relative decrease below ftol"
            break
    return LBFGSResult(x, f, g, it, nfev, message)
