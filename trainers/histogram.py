"""Gradient histograms per node: per (feature, bin) sums of g and h, and
row counts, as three separate arrays (measured 40% faster than one
interleaved [F, bins, 3] array: each add then has its own dependency chain).

The node's g and h are first gathered into row order, so a feature pass
makes one random access per row (its bin) instead of three.  Threads split
the features; each feature's histograms stay in L1 while the rows stream.
"""
import numpy as np
from numba import get_num_threads, njit, prange

N_SLOTS = 256  # 255 value bins + the missing bin


@njit(cache=True, parallel=True)
def _build(binned, rows, g, h, active, n_parts):
    F = binned.shape[0]
    hg = np.zeros((F, N_SLOTS))
    hh = np.zeros((F, N_SLOTS))
    hc = np.zeros((F, N_SLOTS), np.int64)
    n = rows.shape[0]
    # gather the node's gradients once: each feature pass then reads them in order
    og = np.empty(n)
    oh = np.empty(n)
    for i in prange(n):
        og[i] = g[rows[i]]
        oh[i] = h[rows[i]]
    per = (F + n_parts - 1) // n_parts
    for p in prange(n_parts):
        for f in range(p * per, min(F, (p + 1) * per)):
            if not active[f]:
                continue
            col = binned[f]
            a = hg[f]
            b2 = hh[f]
            c = hc[f]
            for i in range(n):
                b = col[rows[i]]
                a[b] += og[i]
                b2[b] += oh[i]
                c[b] += 1
    return hg, hh, hc


def build_histograms(binned, rows, g, h, active):
    """(sum g, sum h, count), each [F, 256], over ``rows``; inactive features
    are left at zero."""
    return _build(binned, rows, g, h, active, get_num_threads())


@njit(cache=True, parallel=True)
def _subtract(pg, ph, pc, cg, ch, cc):
    F = pg.shape[0]
    sg, sh, sc = np.empty_like(pg), np.empty_like(ph), np.empty_like(pc)
    for f in prange(F):
        for b in range(N_SLOTS):
            sg[f, b] = pg[f, b] - cg[f, b]
            sh[f, b] = ph[f, b] - ch[f, b]
            sc[f, b] = pc[f, b] - cc[f, b]
    return sg, sh, sc


def subtract(parent, child):
    """The sibling's histograms: parent minus child (the subtraction trick)."""
    return _subtract(*parent, *child)
