"""Least angle regression (LAR, Efron et al. 2004) over a lazily computed Gram
matrix, the selection step of CVM (thesis §4.3 "LARS", eqs. 4.6-4.9).

Only the Gram columns of the regressors that enter are ever computed, so
CVM's ``G = K K + rho K`` costs ``O(m n^2)`` for ``m`` selected support
vectors instead of the ``O(n^3)`` of forming it (and ``8 n^2`` bytes less).
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .. import linalg


@dataclass
class LarsResult:
    """``active``: regressor indices in the order they entered; ``coef``:
    their LAR path coefficients after the last step (same order)."""

    active: np.ndarray
    coef: np.ndarray


def lars_path_lazy(Xy, gram_column, gram_diag, n_nonzero, *, collinear_tol=1e-10) -> LarsResult:
    """Run LAR until ``n_nonzero`` regressors are active.

    Correlations ``c = Xy - G beta``; the active set moves along the
    equiangular direction ``w_A = A_A G_AA^-1 s_A`` by the largest step that
    keeps every inactive correlation at most the active ones (Efron et al.
    2004, eqs. 2.13-2.15).  This is the optimiser of the thesis' ℓ1-relaxed
    problem (4.9): each step activates exactly one coefficient.

    Parameters
    ----------
    Xy : array [n] float64
        Correlations of the regressors with the target at beta = 0.
    gram_column : callable j -> array [n] float64
        Column j of the Gram matrix G (called once per entering regressor).
    gram_diag : array [n] float64
        diag(G), used to detect regressors collinear with the active set.
    n_nonzero : int
        Stop when this many regressors are active (or none is left).
    collinear_tol : float, default 1e-10
        A candidate whose Cholesky pivot is below ``tol * G_jj`` is
        numerically in the span of the active set; it is skipped (never
        entered) rather than dropped later as scikit-learn does.

    Returns
    -------
    LarsResult
    """
    c = np.array(Xy, np.float64)
    n = c.shape[0]
    diag = np.asarray(gram_diag, np.float64)
    m = min(int(n_nonzero), n)
    active: list[int] = []
    cols: list = []
    L = np.zeros((m, m))
    beta = np.zeros(0)
    excluded = np.zeros(n, bool)
    if m <= 0:
        return LarsResult(np.zeros(0, np.int64), beta)
    j = int(np.argmax(np.abs(c)))
    while True:
        # enter j (Cholesky update of G_AA), unless it is collinear
        g = np.asarray(gram_column(j), np.float64)
        k = len(active)
        if k:
            l = linalg.solve_lower(L[:k, :k], g[active][:, None])[:, 0]
            piv = g[j] - linalg.dot(l, l)
        else:
            l, piv = np.zeros(0), g[j]
        if piv <= collinear_tol * max(diag[j], np.finfo(float).tiny):
            excluded[j] = True
        else:
            L[k, :k] = l
            L[k, k] = np.sqrt(piv)
            active.append(j)
            cols.append(g)
            beta = np.append(beta, 0.0)
        if len(active) >= m:
            break
        free = np.ones(n, bool)
        free[active] = False
        free &= ~excluded
        if not free.any():
            break
        k = len(active)
        if k == 0:   # every regressor so far was degenerate: restart at the largest left
            cand = np.flatnonzero(free)
            j = int(cand[np.argmax(np.abs(c[cand]))])
            continue
        A = np.asarray(active)
        s = np.sign(c[A])
        s[s == 0] = 1.0
        Cmax = float(np.max(np.abs(c[A])))
        w = linalg.cho_solve(np.ascontiguousarray(L[:k, :k]), s)
        AA = 1.0 / np.sqrt(max(linalg.dot(s, w), np.finfo(float).tiny))
        w *= AA
        a = linalg.matvec(np.column_stack(cols), w)   # G[:, A] w: correlation change per unit step
        cf, af = c[free], a[free]
        with np.errstate(divide="ignore", invalid="ignore"):
            g1 = (Cmax - cf) / (AA - af)
            g2 = (Cmax + cf) / (AA + af)
        g1[~(g1 > 1e-15)] = np.inf
        g2[~(g2 > 1e-15)] = np.inf
        gm = np.minimum(g1, g2)
        i = int(np.argmin(gm))
        step = float(gm[i])
        if not np.isfinite(step):  # no inactive regressor can catch up: least squares reached
            step = Cmax / AA
            beta += step * w
            c -= step * a
            break
        beta += step * w
        c -= step * a
        j = int(np.flatnonzero(free)[i])
    return LarsResult(np.asarray(active, np.int64), beta)
