"""numba kernel of the cost-weighted l1 linear model: l1-regularised logistic
regression by coordinate descent with one-variable Newton steps (CDN; Yuan,
Chang, Hsieh & Lin 2010, "A comparison of optimization methods and software
for large-scale L1-regularized linear classification", JMLR 11, §4.1.2,
Eqs. 24-27), the method of liblinear's L1R_LR solver before version 1.8.

    min_w  sum_j |w_j| + C sum_i log(1 + exp(-y_i w'x_i))

It replaces scikit-learn's liblinear, whose results changed with the BLAS
kernel and even the number of BLAS threads (measured: four hashes for one
fit).  Here coordinates are visited in ascending order every sweep and every
sum runs over the rows in ascending order, so the weights are the same on
every machine.
"""
from __future__ import annotations

import numpy as np
from numba import njit


@njit(cache=True)
def _log1pexp_neg(z):
    """log(1 + exp(-z)) without overflow."""
    if z > 0:
        return np.log1p(np.exp(-z))
    return -z + np.log1p(np.exp(z))


@njit(cache=True)
def _violation(w, g):
    """The minimum-norm subgradient of the objective in coordinate j."""
    if w > 0:
        return abs(g + 1.0)
    if w < 0:
        return abs(g - 1.0)
    return max(0.0, abs(g) - 1.0)


@njit(cache=True)
def l1_logistic_cdn(Xt, y, C, max_sweeps, tol, sigma=0.01, beta=0.5, max_steps=60):
    """Minimise the objective above.

    Parameters
    ----------
    Xt : float64 [P, n]
        The inputs, one row per coordinate (a constant row for a bias that is
        penalised like liblinear's).
    y : float64 [n], +-1
    C : float
    max_sweeps : int
        Passes over the coordinates at most.
    tol : float
        Stop when the largest violation of a sweep is at most ``tol`` times
        that of the first sweep (liblinear's rule).
    sigma, beta : float
        Armijo constant and step shrink of the line search (Yuan et al.
        Eq. 27: 0.01 and 0.5).
    max_steps : int
        Shrinks at most per line search.

    Returns
    -------
    w : float64 [P]; sweeps : int
    """
    P, n = Xt.shape
    w = np.zeros(P)
    e = np.zeros(n)                 # margins w'x_i
    first = -1.0
    sweeps = 0
    for sweep in range(max_sweeps):
        sweeps = sweep + 1
        worst = 0.0
        for j in range(P):
            g = 0.0
            h = 0.0
            for i in range(n):
                x = Xt[j, i]
                if x == 0.0:
                    continue
                z = y[i] * e[i]
                if z >= 0:
                    t = np.exp(-z)
                    s = 1.0 / (1.0 + t)          # sigma(y_i w'x_i)
                else:
                    t = np.exp(z)
                    s = t / (1.0 + t)
                g += (s - 1.0) * y[i] * x
                h += s * (1.0 - s) * x * x
            g *= C
            h = C * h + 1e-12                    # Yuan et al.: a tiny ridge keeps h > 0
            v = _violation(w[j], g)
            if v > worst:
                worst = v
            wj = w[j]
            if g + 1.0 <= h * wj:
                d = -(g + 1.0) / h
            elif g - 1.0 >= h * wj:
                d = -(g - 1.0) / h
            else:
                d = -wj
            if d == 0.0:
                continue
            # Armijo on the one-variable objective (Eq. 27)
            delta = g * d + abs(wj + d) - abs(wj)
            lam = 1.0
            for _ in range(max_steps):
                df = abs(wj + lam * d) - abs(wj)
                for i in range(n):
                    x = Xt[j, i]
                    if x == 0.0:
                        continue
                    df += C * (_log1pexp_neg(y[i] * (e[i] + lam * d * x)) - _log1pexp_neg(y[i] * e[i]))
                if df <= sigma * lam * delta:
                    break
                lam *= beta
            else:
                continue                         # no decrease along this coordinate this sweep
            step = lam * d
            w[j] = wj + step
            for i in range(n):
                e[i] += step * Xt[j, i]
        if first < 0.0:
            first = worst
        if worst <= tol * first:
            break
    return w, sweeps
