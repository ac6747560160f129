"""numba kernels of the soft-cascade engine (``soft_cascade.py``).

* ``stage_pass`` / ``stage_route_grad``: the per-row part of one stage's
  objective and gradient in the cyclic optimisation (Chen Eq. 9, the
  decomposition of Eq. 8's loss with the other stages fixed).
* ``bias_design``: the normal equations of [1, H] (Alg. 2's per-stage
  ridge systems, Chen Eq. 14) without building [1, H], the bits of
  ``relaxation.design`` over every column.

Every reduction is a serial loop in row order, so results do not depend on
the thread count.
"""
import numpy as np
from numba import njit

from .. import linalg


@njit(cache=True)
def _sigmoid(z):
    """Stable logistic: never overflows exp (pyproject turns RuntimeWarnings
    into errors)."""
    if z >= 0:
        e = np.exp(-z)
        return 1.0 / (1.0 + e), e / (1.0 + e)
    e = np.exp(z)
    return e / (1.0 + e), 1.0 / (1.0 + e)


@njit(cache=True)
def stage_pass(s, y, w, pk, a, theta, gamma, last, Z, I, dI, gs):
    """Loss of stage k and everything downstream of it, with its gradient.

    With the other stages fixed (Chen Eq. 9), the loss terms that depend on
    stage k are  1/2 sum_i w_i p_i^k [(1 - I_i) L_i + I_i a_i]  with
    L_i = (y_i - s_i)^2, I_i = sigma(gamma (s_i - theta)) the probability of
    passing, and a_i the downstream loss of a passing row (suffix sums, no
    division by I).  For the last stage the loss is 1/2 sum_i w_i p_i L_i.

    Parameters
    ----------
    s : float64 [n] stage scores b + H beta; y : +-1 [n]; w : row weights [n]
    (class weight / n); pk : reach probabilities of stage k [n]; a : [n]
    downstream loss; theta, gamma : threshold and steepness; last : bool;
    Z : [n, J] downstream mass weights (a mass m_j = mean_i I_i Z_ij);
    I, dI, gs : [n] written: pass probability, d I / d s (= gamma I (1-I)),
    d loss / d s.

    Returns
    -------
    loss : float, dloss/dtheta : float, masses : [J] (mean_i I_i Z_ij),
    own_mass : mean_i p_i (1 - I_i) (the exit mass P_k).
    """
    n = s.shape[0]
    J = Z.shape[1]
    masses = np.zeros(J)
    loss = 0.0
    gth = 0.0
    own = 0.0
    for i in range(n):
        r = y[i] - s[i]
        L = r * r
        if last:
            I[i] = 1.0
            dI[i] = 0.0
            loss += 0.5 * w[i] * pk[i] * L
            gs[i] = -w[i] * pk[i] * r
            continue
        Ii, Ib = _sigmoid(gamma * (s[i] - theta))
        I[i] = Ii
        d = gamma * Ii * Ib
        dI[i] = d
        wp = w[i] * pk[i]
        loss += 0.5 * wp * (Ib * L + Ii * a[i])
        h = 0.5 * wp * d * (a[i] - L)
        gs[i] = -wp * Ib * r + h
        gth -= h
        own += pk[i] * Ib
        for j in range(J):
            masses[j] += Ii * Z[i, j]
    return loss, gth, masses / n, own / n


@njit(cache=True)
def stage_route_grad(dI, pk, Z, coef, own_coef, gs):
    """Add the routing part of the cost gradient to gs and return its theta
    derivative.  A downstream mass m_j = mean_i I_i Z_ij has
    d m_j / d s_i = dI_i Z_ij / n, the own exit mass P_k = mean p_i (1 - I_i)
    has d P_k / d s_i = -dI_i p_i / n; ``coef`` [J] and ``own_coef`` are
    d cost / d m_j and d cost / d P_k (Chen §3.3.1: this term is what makes a
    rejection *save* cost; thesis Eq. 3.25 through p^l)."""
    n = dI.shape[0]
    J = Z.shape[1]
    gth = 0.0
    for i in range(n):
        v = -own_coef * pk[i]
        for j in range(J):
            v += coef[j] * Z[i, j]
        g = dI[i] * v / n
        gs[i] += g
        gth -= g
    return gth


@njit(cache=True)
def bias_design(H, w, y):
    """(X1' diag(w) X1, X1' (w y)) for X1 = [1, H]: ``relaxation.design(H,
    all columns, w, y)``'s Gram and right-hand side, bit for bit, without the
    n x (T + 1) copy X1.

    Every entry is the same chain as ``linalg.weighted_gram``'s and
    ``linalg.rmatvec``'s: G_jl = sum_i (w_i X1_ij) X1_il with i ascending
    (w_i * 1.0 = w_i exactly, so the bias row adds w_i and w_i H_il); the
    H block is ``linalg.gram_upper_add``'s row blocks and tiles, at
    offset 1.  The triangle is mirrored, so G is exactly symmetric."""
    H = np.ascontiguousarray(H)    # gram_upper_add's vector loads read four adjacent doubles of a row
    n, T = H.shape
    p = T + 1
    G = np.zeros((p, p))
    rhs = np.zeros(p)
    rows = np.arange(n)
    for i0 in range(0, n, linalg.GRAM_ROWS):
        i1 = min(i0 + linalg.GRAM_ROWS, n)
        for i in range(i0, i1):             # the bias row and the right-hand side
            wi = w[i]
            v = wi * y[i]
            G[0, 0] += wi
            rhs[0] += v
            for l in range(T):
                G[0, l + 1] += wi * H[i, l]
                rhs[l + 1] += H[i, l] * v
        linalg.gram_upper_add(H, rows, w, G, 1, i0, i1)
    return linalg.mirror_upper(G), rhs
