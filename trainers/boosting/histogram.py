"""Gradient histograms per node: per (feature, bin) sums of g and h, and
row counts, as three separate arrays (measured 40% faster than one
interleaved [F, bins, 3] array: each add then has its own dependency chain).

The node's g and h are first gathered into row order, so a feature pass
makes one random access per row (its bin) instead of three.  Threads split
the features; each feature's histograms stay in L1 while the rows stream.
"""
import numpy as np
from numba import njit, prange

N_SLOTS = 256  # 255 value bins + the missing bin


@njit(cache=True, inline="always")
def _accumulate(col, rows, og, oh, a, b2, c, dense):
    # two rows per step: their adds are independent, so when the two bins
    # differ (almost always) the CPU overlaps them (measured 15%).  ``dense``
    # (the root over all rows) reads the column in order, no indirection.
    n = og.shape[0]
    i = 0
    while i + 1 < n:
        b = col[i] if dense else col[rows[i]]
        bb = col[i + 1] if dense else col[rows[i + 1]]
        a[b] += og[i]
        b2[b] += oh[i]
        c[b] += 1
        a[bb] += og[i + 1]
        b2[bb] += oh[i + 1]
        c[bb] += 1
        i += 2
    if i < n:
        b = col[i] if dense else col[rows[i]]
        a[b] += og[i]
        b2[b] += oh[i]
        c[b] += 1


@njit(cache=True, parallel=True)
def build_histograms(binned, rows, g, h, active):
    """(sum g, sum h, count), each [F, 256], over ``rows`` (sorted, unique);
    inactive features are left at zero."""
    F, N = binned.shape
    hg = np.zeros((F, N_SLOTS))
    hh = np.zeros((F, N_SLOTS))
    hc = np.zeros((F, N_SLOTS), np.int64)
    n = rows.shape[0]
    dense = n == N    # sorted unique rows, all of them: rows[i] == i
    if dense:
        og, oh = g, h
    else:
        # gather the node's gradients once: each feature pass reads them in order
        og = np.empty(n)
        oh = np.empty(n)
        for i in prange(n):
            og[i] = g[rows[i]]
            oh[i] = h[rows[i]]
    for f in prange(F):
        if active[f]:
            _accumulate(binned[f], rows, og, oh, hg[f], hh[f], hc[f], dense)
    return hg, hh, hc


@njit(cache=True)
def _subtract_into(pg, ph, pc, cg, ch, cc):
    F = pg.shape[0]
    for f in range(F):
        for b in range(N_SLOTS):
            pg[f, b] -= cg[f, b]
            ph[f, b] -= ch[f, b]
            pc[f, b] -= cc[f, b]


def subtract_into(parent, child):
    """Turn the parent's histograms into the sibling's, parent minus child
    (the subtraction trick), in place: the parent's are not needed after."""
    _subtract_into(*parent, *child)
    return parent


@njit(cache=True)
def node_sums(rows, g, h):
    """(G, H, N) of the rows: the root's sums (children get theirs from the
    split).  Serial on purpose: a parallel reduction's rounding depends on
    the thread count, and the model bytes must not (one pass per tree)."""
    G = 0.0
    H = 0.0
    for i in range(rows.shape[0]):
        G += g[rows[i]]
        H += h[rows[i]]
    return G, H, float(rows.shape[0])
