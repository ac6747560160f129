"""The portable float32 expf (ir/numerics.py) as numba kernels."""
import numpy as np
from numba import njit

from ..ir import numerics as N

LOG2E, LN2_HI, LN2_LO = N.LOG2E, N.LN2_HI, N.LN2_LO
EXP_HI, EXP_LO = N.EXP_HI, N.EXP_LO
C7, C6, C5, C4, C3, C2, C1, C0 = N.EXP_POLY
TWO_M64, HALF, ONE, TWO = N.TWO_M64, N.HALF, N.ONE, N.TWO
ZERO = np.float32(0.0)
INF = np.float32(np.inf)
# 2^n for n in [-126, 127], all exact normal float32 values.
POW2 = np.array([2.0 ** n for n in range(-126, 128)], dtype=np.float32)


@njit(cache=True)
def expf(x):
    if x != x:
        return x
    if x > EXP_HI:
        return INF
    if x < EXP_LO:
        return ZERO
    t = x * LOG2E + HALF
    n = int(t)
    if np.float32(n) > t:
        n -= 1
    fn = np.float32(n)
    r = x - fn * LN2_HI
    r = r - fn * LN2_LO
    p = C7
    p = p * r + C6
    p = p * r + C5
    p = p * r + C4
    p = p * r + C3
    p = p * r + C2
    p = p * r + C1
    p = p * r + C0
    if n < -126:
        p = p * TWO_M64
        n += 64
    if n > 127:
        p = p * TWO
        n -= 1
    return p * POW2[n + 126]


@njit(cache=True)
def expf_array(x):
    out = np.empty_like(x)
    flat_in = x.ravel()
    flat_out = out.ravel()
    for i in range(flat_in.shape[0]):
        flat_out[i] = expf(flat_in[i])
    return out


@njit(cache=True)
def logistic(scores):
    """p = 1 / (1 + expf(-s)) per element, float32."""
    out = np.empty_like(scores)
    for i in range(scores.shape[0]):
        for k in range(scores.shape[1]):
            out[i, k] = ONE / (ONE + expf(-scores[i, k]))
    return out


@njit(cache=True)
def softmax(scores):
    """Row-wise: e_k = expf(s_k - max), summed in index order, p_k = e_k / sum."""
    out = np.empty_like(scores)
    for i in range(scores.shape[0]):
        m = scores[i, 0]
        for k in range(1, scores.shape[1]):
            if scores[i, k] > m:
                m = scores[i, k]
        s = ZERO
        for k in range(scores.shape[1]):
            out[i, k] = expf(scores[i, k] - m)
            s = s + out[i, k]
        for k in range(scores.shape[1]):
            out[i, k] = out[i, k] / s
    return out
