"""Gradient histograms per node: sums of g, h and counts per (feature, bin)."""
import numpy as np
from numba import njit, prange

N_SLOTS = 256  # 255 value bins + the missing bin


@njit(cache=True, parallel=True)
def build_histograms(binned, rows, g, h, active):
    """hist[f, b] = (sum g, sum h, count) over ``rows``; inactive features skipped."""
    F = binned.shape[0]
    hist = np.zeros((F, N_SLOTS, 3), np.float64)
    for f in prange(F):
        if not active[f]:
            continue
        col = binned[f]
        for r in rows:
            b = col[r]
            hist[f, b, 0] += g[r]
            hist[f, b, 1] += h[r]
            hist[f, b, 2] += 1.0
    return hist


@njit(cache=True)
def subtract(parent, child):
    """The sibling's histograms: parent minus child (the subtraction trick)."""
    return parent - child
