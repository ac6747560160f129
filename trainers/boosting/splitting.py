"""Best split per node: second-order gain minus Greedy Miser's cost penalty.

For a split of a node with sums (G, H) into (G_L, H_L) and (G_R, H_R):

    gain = 1/2 [G_L^2/(H_L+l2) + G_R^2/(H_R+l2) - G^2/(H+l2)] - penalty[f]

With mean leaves (H = row counts) the bracket is the decrease of
1/2 sum_i (s_i - h(x_i))^2, the first term of Eq. (2.5) of the thesis; the
penalty is lambda * (cost of the feature and its group not yet paid), the
second term (see trainers/boosting/greedy_miser.py for the units).
"""
import numpy as np
from numba import njit, prange

from .binning import MISSING_BIN


@njit(cache=True)
def _score(G, H, l2):
    # H + l2 is 0 only when every row has zero hessian (e.g. all beyond the
    # squared-hinge margin), and then G is 0 too: no loss to reduce
    d = H + l2
    return G * G / d if d > 0 else 0.0


@njit(cache=True, parallel=True)
def best_splits(hg, hh, hc, n_bins, G, H, N, l2, min_samples_leaf, penalty, active):
    """Per feature: (gain, bin, missing_left, G_L, H_L, N_L); gain -inf when
    no valid split.  The left sums give the children's (G, H, N) without
    another pass over their rows."""
    F = hg.shape[0]
    gain = np.full(F, -np.inf)
    bins = np.zeros(F, np.int64)
    mleft = np.zeros(F, np.bool_)
    left_sums = np.zeros((F, 3))
    parent = _score(G, H, l2)
    for f in prange(F):
        if not active[f]:
            continue
        gm, hm, nm = hg[f, MISSING_BIN], hh[f, MISSING_BIN], float(hc[f, MISSING_BIN])
        # with no missing rows in the node both NaN directions give the same
        # gain: try only "missing right", and send NaN to the larger child
        n_dirs = 2 if nm > 0 else 1
        gl, hl, nl = 0.0, 0.0, 0.0
        best, bb, bm = -np.inf, 0, True
        bG, bH, bN = 0.0, 0.0, 0.0
        for b in range(n_bins[f] - 1):
            gl += hg[f, b]
            hl += hh[f, b]
            nl += hc[f, b]
            for d in range(n_dirs):  # d = 0: missing right, d = 1: missing left
                GL = gl + gm if d else gl
                HL = hl + hm if d else hl
                NL = nl + nm if d else nl
                NR = N - NL
                if NL < min_samples_leaf or NR < min_samples_leaf:
                    continue
                s = 0.5 * (_score(GL, HL, l2) + _score(G - GL, H - HL, l2) - parent)
                if s > best:
                    best, bb = s, b
                    bm = d == 1 if nm > 0 else NL >= NR
                    bG, bH, bN = GL, HL, NL
        if best > -np.inf:
            gain[f] = best - penalty[f]
            bins[f] = bb
            mleft[f] = bm
            left_sums[f, 0], left_sums[f, 1], left_sums[f, 2] = bG, bH, bN
    return gain, bins, mleft, left_sums
