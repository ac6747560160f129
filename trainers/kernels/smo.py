"""The C-SVC dual solved by skinflint's own SMO (libsvm's algorithm), so
that the full kernel SVM is the same model on every machine.

libsvm (scikit-learn's ``SVC``) is compiled C++ whose floating-point
arithmetic depends on the compiler's choices for the target (GCC contracts
``a * b + c`` to one fused multiply-add on aarch64 by default, not on x86-64),
so its dual coefficients differed in the last bits across instruction sets,
and the kernel models built on them (the full SVM, CVM, LARS-SVM,
Reduced-SVM) with them.  This module solves the same problem in numba
(compiled without fast-math: no contraction, no reassociation), every sum
serial in ascending row order.

The problem (Chang & Lin 2011, LIBSVM, eq. 2; Cortes & Vapnik 1995)::

    min_a  1/2 a' Q a - e' a    s.t.  y' a = 0,  0 <= a_i <= C_i,
    Q_ij = y_i y_j K(x_i, x_j)

by sequential minimal optimisation on two variables at a time, the pair
chosen by libsvm's second-order working-set selection (Fan, Chen & Lin 2005,
"Working set selection using second order information", WSS 2 / Algorithm 2
with eq. 3 for ``tau``): ``i`` maximises ``-y_t G_t`` over the rows that may
move up, ``j`` minimises ``-b_ij^2 / a_ij`` (the objective decrease of the
two-variable step) over the rows that may move down with ``-y_j G_j <
-y_i G_i``.  It stops when the maximal violation ``m(a) - M(a)`` is below
``tol`` (libsvm's ``eps``, scikit-learn's ``tol``, same meaning and default
1e-3), and the bias is libsvm's: ``rho`` the mean of ``y_i G_i`` over the
free vectors, or the midpoint of the feasible interval when none is free
(Chang & Lin 2011, §4.1.5), decision ``sum_i y_i a_i K(x_i, x) - rho``.

Differences from libsvm, none of which changes the problem or its optimum:
the kernel matrix is precomputed in float64 by ``kernel_math`` (libsvm caches
float32 rows), and the shrunk rows are kept in ascending order (libsvm swaps
them to the end).  The result therefore matches libsvm's to the solver
tolerance, not to the bit.
"""
from __future__ import annotations

import numpy as np
from numba import njit

TAU = 1e-12     # libsvm's: the curvature used where a_ij = K_ii + K_jj - 2 K_ij <= 0 (eq. 3)


@njit(cache=True)
def _is_upper(alpha, C, t):
    return alpha[t] >= C[t]


@njit(cache=True)
def _is_lower(alpha, C, t):
    return alpha[t] <= 0.0 and alpha[t] < C[t]


@njit(cache=True)
def _select(K, QD, y, alpha, C, G, act, m, tol):
    """The working set, libsvm's ``select_working_set`` over the active rows ``act[:m]``
    (ascending): i maximises -y_t G_t over I_up, j minimises the second-order
    decrease -b^2 / a over I_low (Fan, Chen & Lin 2005, WSS 2; ties: the
    last).  Returns (i, j), j = -1 when m(a) - M(a) < tol (optimal)."""
    gmax = -np.inf
    i = -1
    for p in range(m):
        t = act[p]
        if y[t] > 0:
            if not _is_upper(alpha, C, t):
                if -G[t] >= gmax:
                    gmax = -G[t]
                    i = t
        elif not _is_lower(alpha, C, t):
            if G[t] >= gmax:
                gmax = G[t]
                i = t
    gmax2 = -np.inf
    j = -1
    obj_min = np.inf
    if i >= 0:
        Kii = QD[i]
        for p in range(m):
            t = act[p]
            if y[t] > 0:
                if not _is_lower(alpha, C, t):
                    gd = gmax + G[t]
                    if G[t] >= gmax2:
                        gmax2 = G[t]
                    if gd > 0.0:
                        q = Kii + QD[t] - 2.0 * K[i, t]        # a_it = K_ii + K_tt - 2 K_it (y_i Q_it = y_t K_it)
                        ob = -(gd * gd) / (q if q > 0.0 else TAU)
                        if ob <= obj_min:
                            j = t
                            obj_min = ob
            elif not _is_upper(alpha, C, t):
                gd = gmax - G[t]
                if -G[t] >= gmax2:
                    gmax2 = -G[t]
                if gd > 0.0:
                    q = Kii + QD[t] - 2.0 * K[i, t]
                    ob = -(gd * gd) / (q if q > 0.0 else TAU)
                    if ob <= obj_min:
                        j = t
                        obj_min = ob
    if gmax + gmax2 < tol:
        j = -1
    return i, j


@njit(cache=True)
def _be_shrunk(y, alpha, C, G, t, gmax1, gmax2):
    if _is_upper(alpha, C, t):
        return -G[t] > (gmax1 if y[t] > 0 else gmax2)
    if _is_lower(alpha, C, t):
        return G[t] > (gmax2 if y[t] > 0 else gmax1)
    return False


@njit(cache=True)
def _reconstruct(K, y, alpha, C, G, G_bar, act, m):
    """The gradient rebuilt, libsvm's ``reconstruct_gradient``: G_t = G_bar_t - 1 + sum over the
    free active rows s (ascending) of a_s Q_ts, for every inactive row t."""
    n = y.shape[0]
    active = np.zeros(n, np.bool_)
    for p in range(m):
        active[act[p]] = True
    free = np.empty(m, np.int64)
    nf = 0
    for p in range(m):
        s = act[p]
        if not _is_upper(alpha, C, s) and not _is_lower(alpha, C, s):
            free[nf] = s
            nf += 1
    for t in range(n):
        if active[t]:
            continue
        g = G_bar[t] - 1.0
        for q in range(nf):
            s = free[q]
            g += alpha[s] * (y[s] * y[t] * K[t, s])
        G[t] = g


@njit(cache=True)
def smo_solve(K, y, C, tol, max_iter):
    """Solve the C-SVC dual over the kernel matrix ``K`` (libsvm's
    ``Solver::Solve`` with shrinking: every min(n, 1000) iterations the
    bounded rows that cannot re-enter are set aside, and the gradient of the
    set-aside rows is rebuilt from ``G_bar`` before optimality is declared).

    Parameters
    ----------
    K : float64 [n, n], symmetric kernel matrix (read by rows)
    y : float64 [n], +1 / -1
    C : float64 [n], > 0, each row's upper bound (C times its weight)
    tol : float, the stopping tolerance on m(a) - M(a)
    max_iter : int, the iteration limit (libsvm: max(1e7, 100 n))

    Returns
    -------
    alpha : float64 [n], the dual variables (unsigned, in [0, C_i])
    rho : float, the decision is ``sum_i y_i alpha_i K_i(x) - rho``
    n_iter : int
    """
    n = y.shape[0]
    QD = np.empty(n)                   # the diagonal, contiguous (K[t, t] strides a row per read)
    for t in range(n):
        QD[t] = K[t, t]
    alpha = np.zeros(n)
    G = np.full(n, -1.0)               # gradient Q a - e at a = 0
    G_bar = np.zeros(n)                # sum over upper-bounded s of C_s Q_ts
    act = np.arange(n)
    m = n
    unshrink = False
    counter = min(n, 1000) + 1
    it = 0
    while it < max_iter:
        counter -= 1
        if counter == 0:               # libsvm's do_shrinking
            counter = min(n, 1000)
            gmax1 = -np.inf
            gmax2 = -np.inf
            for p in range(m):
                t = act[p]
                if y[t] > 0:
                    if not _is_upper(alpha, C, t):
                        gmax1 = max(gmax1, -G[t])
                    if not _is_lower(alpha, C, t):
                        gmax2 = max(gmax2, G[t])
                else:
                    if not _is_upper(alpha, C, t):
                        gmax2 = max(gmax2, -G[t])
                    if not _is_lower(alpha, C, t):
                        gmax1 = max(gmax1, G[t])
            if not unshrink and gmax1 + gmax2 <= tol * 10.0:
                unshrink = True
                _reconstruct(K, y, alpha, C, G, G_bar, act, m)
                m = n
                for t in range(n):
                    act[t] = t
            k = 0
            for p in range(m):         # keep the rows that stay, in ascending order
                t = act[p]
                if not _be_shrunk(y, alpha, C, G, t, gmax1, gmax2):
                    act[k] = t
                    k += 1
            m = k
        i, j = _select(K, QD, y, alpha, C, G, act, m, tol)
        if j == -1:
            _reconstruct(K, y, alpha, C, G, G_bar, act, m)
            m = n
            for t in range(n):
                act[t] = t
            i, j = _select(K, QD, y, alpha, C, G, act, m, tol)
            if j == -1:
                break
            counter = 1                # shrink again at the next iteration
        it += 1
        # ---- the two-variable step, clipped to the box (libsvm's Solver::Solve)
        Ci = C[i]
        Cj = C[j]
        ai0 = alpha[i]
        aj0 = alpha[j]
        ui = _is_upper(alpha, C, i)
        uj = _is_upper(alpha, C, j)
        Qij = y[i] * y[j] * K[i, j]
        if y[i] != y[j]:
            q = QD[i] + QD[j] + 2.0 * Qij
            if q <= 0.0:
                q = TAU
            delta = (-G[i] - G[j]) / q
            diff = ai0 - aj0
            ai = ai0 + delta
            aj = aj0 + delta
            if diff > 0.0:
                if aj < 0.0:
                    aj = 0.0
                    ai = diff
            else:
                if ai < 0.0:
                    ai = 0.0
                    aj = -diff
            if diff > Ci - Cj:
                if ai > Ci:
                    ai = Ci
                    aj = Ci - diff
            else:
                if aj > Cj:
                    aj = Cj
                    ai = Cj + diff
        else:
            q = QD[i] + QD[j] - 2.0 * Qij
            if q <= 0.0:
                q = TAU
            delta = (G[i] - G[j]) / q
            s = ai0 + aj0
            ai = ai0 - delta
            aj = aj0 + delta
            if s > Ci:
                if ai > Ci:
                    ai = Ci
                    aj = s - Ci
            else:
                if aj < 0.0:
                    aj = 0.0
                    ai = s
            if s > Cj:
                if aj > Cj:
                    aj = Cj
                    ai = s - Cj
            else:
                if ai < 0.0:
                    ai = 0.0
                    aj = s
        alpha[i] = ai
        alpha[j] = aj
        # ---- G_t += Q_ti da_i + Q_tj da_j over the active rows
        di = y[i] * (ai - ai0)
        dj = y[j] * (aj - aj0)
        for p in range(m):
            t = act[p]
            G[t] += y[t] * (K[i, t] * di + K[j, t] * dj)
        # ---- G_bar follows the rows that reach or leave their upper bound
        for r, was in ((i, ui), (j, uj)):
            if was != _is_upper(alpha, C, r):
                w = y[r] * C[r] if not was else -(y[r] * C[r])
                for t in range(n):
                    G_bar[t] += y[t] * (K[r, t] * w)
    # ---- rho (libsvm's Solver::calculate_rho), over every row
    ub = np.inf
    lb = -np.inf
    n_free = 0
    sum_free = 0.0
    for t in range(n):
        yg = y[t] * G[t]
        if _is_upper(alpha, C, t):
            if y[t] < 0:
                ub = min(ub, yg)
            else:
                lb = max(lb, yg)
        elif _is_lower(alpha, C, t):
            if y[t] > 0:
                ub = min(ub, yg)
            else:
                lb = max(lb, yg)
        else:
            n_free += 1
            sum_free += yg
    rho = sum_free / n_free if n_free > 0 else (ub + lb) / 2.0
    return alpha, rho, it


def max_iterations(n):
    """The iteration limit, libsvm's ``max(10^7, 100 n)``."""
    return max(10_000_000, 100 * int(n))


def fit_binary(K, y, C, tol=1e-3):
    """A binary C-SVC over a precomputed kernel matrix.

    Parameters
    ----------
    K : float64 [n, n] kernel matrix of the fit rows
    y : [n] +1 / -1 targets (+1 is ``classes_[1]``, scikit-learn's sign)
    C : float64 [n] per-row upper bounds (C times the row's weight), > 0
    tol : float, libsvm's stopping tolerance

    Returns
    -------
    (support int64 [S], coef float64 [S], intercept float)
        The rows with ``alpha > 0`` in libsvm's order (the -1 class's rows,
        then the +1 class's, each ascending), their signed coefficients
        ``y_i alpha_i`` and the intercept ``-rho``: the decision is
        ``sum_s coef_s K(x_s, x) + intercept``, as ``SVC.decision_function``.
    """
    y = np.asarray(y, np.float64)
    C = np.asarray(C, np.float64)
    if not np.all(C > 0):
        raise ValueError("C: every row's bound (C times its weight) must be > 0")
    alpha, rho, n_iter = smo_solve(np.ascontiguousarray(K, np.float64), y, C, float(tol), max_iterations(y.size))
    sv = np.flatnonzero(alpha > 0)
    sv = np.concatenate([sv[y[sv] < 0], sv[y[sv] > 0]])
    return sv, y[sv] * alpha[sv], -float(rho), int(n_iter)
