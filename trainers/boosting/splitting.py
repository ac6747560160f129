"""Best split per node: second-order gain minus Greedy Miser's cost penalty.

For a split of a node with sums (G, H) into (G_L, H_L) and (G_R, H_R):

    gain = 1/2 [G_L^2/(H_L+l2) + G_R^2/(H_R+l2) - G^2/(H+l2)] - penalty[f]

With mean leaves (H = row counts) the bracket is the decrease of
1/2 sum_i (s_i - h(x_i))^2, the first term of Eq. (2.5) of the thesis; the
penalty is lambda * (cost of the feature and its group not yet paid), the
second term (see trainers/boosting/greedy_miser.py for the units).

The bracket does not depend on the penalty, so a whole tree level's nodes
are searched in one parallel call (``level_splits``) and the grower
subtracts each node's penalty when it visits the node: with immediate
refunds the penalty changes between the nodes of a level.
"""
import numpy as np
from numba import njit, prange

_CHUNK = 16   # (node, feature) pairs per parallel task of the split search


@njit(cache=True)
def _score(G, H, l2):
    # H + l2 is 0 only when every row has zero hessian (e.g. all beyond the
    # squared-hinge margin), and then G is 0 too: no loss to reduce
    d = H + l2
    return G * G / d if d > 0 else 0.0


@njit(cache=True, inline="always")
def _candidates(cg, ch, cn, gm, hm, nm, nb, G, H, N, l2, min_samples_leaf, parent, out):
    """``out[b]``: the bracket of "bins <= b left" with (gm, hm, nm) added
    to the left sums, -inf where a child has fewer than
    ``min_samples_leaf`` rows.  No loop-carried state: the divisions run
    in SIMD lanes, each lane the same IEEE operations as ``_score``."""
    for b in range(nb):
        GL = cg[b] + gm
        HL = ch[b] + hm
        NL = cn[b] + nm
        NR = N - NL
        d1 = HL + l2
        d2 = (H - HL) + l2
        GR = G - GL
        s1 = GL * GL / d1 if d1 > 0 else 0.0
        s2 = GR * GR / d2 if d2 > 0 else 0.0
        s = 0.5 * (s1 + s2 - parent)
        out[b] = s if NL >= min_samples_leaf and NR >= min_samples_leaf else -np.inf


@njit(cache=True, inline="always")
def _feature_split(hg, hh, hc, n_bins, G, H, N, l2, min_samples_leaf, parent, buf):
    """The best bracket of one feature's histograms (-inf when no valid
    split), its bin, NaN direction and left sums.  Candidates are tried bin
    by bin, "missing right" first, and the first of equal brackets wins.
    The missing bin is the last slot (MISSING_BIN of uint8 data).

    Three passes over the bins, with ``buf`` [5, >= n_bins] as scratch: the
    prefix sums (the same additions in the same order as one running sum),
    every candidate's bracket (``_candidates``, vectorised: 1.40 -> 1.07 ms
    for 16 nodes x 100 features, one thread), then the first best.  A
    bracket is the same number whichever pass computes it."""
    ms = hg.shape[0] - 1
    gm, hm, nm = hg[ms], hh[ms], float(hc[ms])
    # with no missing rows in the node both NaN directions give the same
    # gain: try only "missing right", and send NaN to the larger child
    two = nm > 0
    nb = n_bins - 1
    cg, ch, cn, s0, s1 = buf[0], buf[1], buf[2], buf[3], buf[4]
    gl, hl, nl = 0.0, 0.0, 0.0
    for b in range(nb):
        gl += hg[b]
        hl += hh[b]
        nl += hc[b]
        cg[b] = gl
        ch[b] = hl
        cn[b] = nl
    _candidates(cg, ch, cn, 0.0, 0.0, 0.0, nb, G, H, N, l2, min_samples_leaf, parent, s0)
    if two:   # d = 1: missing left
        _candidates(cg, ch, cn, gm, hm, nm, nb, G, H, N, l2, min_samples_leaf, parent, s1)
    best, bb, bd = -np.inf, 0, 0
    for b in range(nb):
        if s0[b] > best:
            best, bb, bd = s0[b], b, 0
        if two and s1[b] > best:
            best, bb, bd = s1[b], b, 1
    if best == -np.inf:
        return best, 0, True, 0.0, 0.0, 0.0
    bG = cg[bb] + gm if bd else cg[bb]
    bH = ch[bb] + hm if bd else ch[bb]
    bN = cn[bb] + nm if bd else cn[bb]
    return best, bb, bd == 1 if two else bN >= N - bN, bG, bH, bN


def level_splits(hg, hh, hc, n_bins, sums, l2, min_samples_leaf, active):
    """Per node j (histograms ``hg[j]`` etc., sums ``sums[j] = (G, H, N)``)
    and feature f: (bracket, bin, missing_left, G_L, H_L, N_L) of its best
    split, before any penalty; bracket -inf when f has no valid split.  The
    left sums give the children's (G, H, N) without another pass over their
    rows."""
    # histograms [nodes, F, slots] are flat histograms whose feature f owns
    # slots f*slots:(f+1)*slots, so one kernel serves both layouts
    J, F, W = hg.shape
    return level_flat_splits(hg.reshape(J, F * W), hh.reshape(J, F * W), hc.reshape(J, F * W),
                             np.arange(F + 1, dtype=np.int64) * W, n_bins, sums, l2, min_samples_leaf, active)


def best_splits(hg, hh, hc, n_bins, G, H, N, l2, min_samples_leaf, penalty, active):
    """One node (histograms [F, slots]): per feature (gain, bin, missing_left,
    left sums) with ``penalty[f]`` subtracted; gain -inf when no valid split."""
    gain, bins, mleft, left_sums = level_splits(hg[None], hh[None], hc[None], n_bins,
                                                np.array([[G, H, N]], np.float64), l2, min_samples_leaf, active)
    return gain[0] - penalty, bins[0], mleft[0], left_sums[0]


# ---------------------------------------------------------------- category sets
@njit(cache=True)
def _categorical_split(hg, hh, hc, n_cat, G, H, N, l2, min_samples_leaf, cat_l2, cat_smooth,
                       max_cat_threshold, min_data_per_group, max_cat_to_onehot, parent, left_set):
    """The best category-set split of one categorical feature, as LightGBM's
    ``FeatureHistogram::FindBestThresholdCategoricalInner`` finds it (our
    own code): bins 0..n_cat-1 are categories, bin n_cat the "other" bin
    (rare and non-code values), the last slot NaN; those two never join the
    left set (LightGBM sends NaN and unknown categories right).

    * few categories (n_cat + 1 <= max_cat_to_onehot): one category against
      the rest, bracket with ``l2``;
    * else the categories with at least ``cat_smooth`` rows, sorted by
      G_c / (H_c + cat_smooth) (stable), are scanned from both ends: the
      left set is a prefix of at most min(max_cat_threshold, (k+1)//2)
      categories; children's scores use ``l2 + cat_l2`` (the parent's
      ``l2``, as LightGBM without path smoothing), a prefix is tried only
      when it has added ``min_data_per_group`` rows since the last one
      tried, and the scan stops when the right side has fewer than
      ``min_data_per_group`` or ``min_samples_leaf`` rows.

    Returns (bracket, G_L, H_L, N_L) and writes ``left_set[b] = 1`` for the
    bins of the best set (bracket -inf: none valid; first of equal
    brackets wins, the forward direction first)."""
    best = -np.inf
    bG, bH, bN = 0.0, 0.0, 0.0
    left_set[:] = 0
    if n_cat + 1 <= max_cat_to_onehot:
        bt = -1
        for t in range(n_cat):
            nl = float(hc[t])
            if nl < min_samples_leaf or N - nl < min_samples_leaf:
                continue
            s = 0.5 * (_score(hg[t], hh[t], l2) + _score(G - hg[t], H - hh[t], l2) - parent)
            if s > best:
                best, bt = s, t
                bG, bH, bN = hg[t], hh[t], nl
        if bt >= 0:
            left_set[bt] = 1
        return best, bG, bH, bN
    cand = np.empty(n_cat, np.int64)
    used = 0
    for t in range(n_cat):
        if hc[t] >= cat_smooth:
            cand[used] = t
            used += 1
    if used == 0:
        return best, bG, bH, bN
    cand = cand[:used]
    ctr = np.empty(used)
    for i in range(used):
        ctr[i] = hg[cand[i]] / (hh[cand[i]] + cat_smooth)
    idx = cand[np.argsort(ctr, kind="mergesort")]
    max_num = min(max_cat_threshold, (used + 1) // 2)
    l2c = l2 + cat_l2
    best_i, best_dir = -1, 1
    for d in range(2):
        gl, hl, nl = 0.0, 0.0, 0.0
        group = 0.0
        for i in range(min(used, max_num)):
            t = idx[i] if d == 0 else idx[used - 1 - i]
            gl += hg[t]
            hl += hh[t]
            nl += hc[t]
            group += hc[t]
            if nl < min_samples_leaf:
                continue
            nr = N - nl
            if nr < min_samples_leaf or nr < min_data_per_group:
                break
            if group < min_data_per_group:
                continue
            group = 0.0
            s = 0.5 * (_score(gl, hl, l2c) + _score(G - gl, H - hl, l2c) - parent)
            if s > best:
                best, best_i, best_dir = s, i, d
                bG, bH, bN = gl, hl, nl
    for i in range(best_i + 1):
        left_set[idx[i] if best_dir == 0 else idx[used - 1 - i]] = 1
    return best, bG, bH, bN


def level_category_splits(hg, hh, hc, n_bins, sums, l2, min_samples_leaf, cat_features, cat_l2, cat_smooth,
                          max_cat_threshold, min_data_per_group, max_cat_to_onehot):
    """``level_splits`` for the categorical features ``cat_features``
    (indices; their bins are categories, ``binning.category_bins``): per
    node j and listed feature c, (bracket, left set over bins [slots] uint8,
    G_L, H_L, N_L) of the best set split (``_categorical_split``)."""
    J, F, W = hg.shape     # as level_splits: the flat kernel over [nodes, F, slots]
    return level_flat_category_splits(hg.reshape(J, F * W), hh.reshape(J, F * W), hc.reshape(J, F * W),
                                      np.arange(F + 1, dtype=np.int64) * W, W, n_bins, sums, l2, min_samples_leaf,
                                      cat_features, cat_l2, cat_smooth, max_cat_threshold, min_data_per_group,
                                      max_cat_to_onehot)


# ---------------------------------------------------------------- flat histograms (uint16 data)
@njit(cache=True, parallel=True)
def level_flat_splits(hg, hh, hc, offsets, n_bins, sums, l2, min_samples_leaf, active):
    """``level_splits`` over flat histograms (``histogram.flat_offsets``):
    feature f's slots ``offsets[f]:offsets[f + 1]``, its missing slot last."""
    J, F = hg.shape[0], offsets.shape[0] - 1
    gain = np.full((J, F), -np.inf)
    bins = np.zeros((J, F), np.int64)
    mleft = np.zeros((J, F), np.bool_)
    left_sums = np.zeros((J, F, 3))
    W = 0
    for f in range(F):
        W = max(W, offsets[f + 1] - offsets[f])
    n = J * F
    for q in prange((n + _CHUNK - 1) // _CHUNK):   # chunks of (node, feature) pairs, one scratch each
        buf = np.empty((5, W))
        for t in range(q * _CHUNK, min(n, (q + 1) * _CHUNK)):
            j, f = t // F, t % F
            if not active[f]:
                continue
            G, H, N = sums[j, 0], sums[j, 1], sums[j, 2]
            a, b = offsets[f], offsets[f + 1]
            best, bb, bm, bG, bH, bN = _feature_split(hg[j, a:b], hh[j, a:b], hc[j, a:b], n_bins[f], G, H, N, l2,
                                                      min_samples_leaf, _score(G, H, l2), buf)
            if best > -np.inf:
                gain[j, f] = best
                bins[j, f] = bb
                mleft[j, f] = bm
                left_sums[j, f, 0], left_sums[j, f, 1], left_sums[j, f, 2] = bG, bH, bN
    return gain, bins, mleft, left_sums


@njit(cache=True, parallel=True)
def level_flat_category_splits(hg, hh, hc, offsets, width, n_bins, sums, l2, min_samples_leaf, cat_features, cat_l2,
                               cat_smooth, max_cat_threshold, min_data_per_group, max_cat_to_onehot):
    """``level_category_splits`` over flat histograms; the left sets are
    ``width`` (``binning.n_slots``) wide, as the partition reads them."""
    J, C = hg.shape[0], cat_features.shape[0]
    gain = np.full((J, C), -np.inf)
    sets = np.zeros((J, C, width), np.uint8)
    left_sums = np.zeros((J, C, 3))
    for t in prange(J * C):
        j, c = t // C, t % C
        f = cat_features[c]
        a, b = offsets[f], offsets[f + 1]
        G, H, N = sums[j, 0], sums[j, 1], sums[j, 2]
        best, bG, bH, bN = _categorical_split(hg[j, a:b], hh[j, a:b], hc[j, a:b], n_bins[f] - 1, G, H, N, l2,
                                              min_samples_leaf, cat_l2, cat_smooth, max_cat_threshold,
                                              min_data_per_group, max_cat_to_onehot, _score(G, H, l2),
                                              sets[j, c])
        gain[j, c] = best
        left_sums[j, c, 0], left_sums[j, c, 1], left_sums[j, c, 2] = bG, bH, bN
    return gain, sets, left_sums
