"""The faster kernels of issue 29 give the bytes of the code they replaced:
the radix threshold sort against ``np.sort``, the three-pass split search
against the one-pass scan it replaced (kept here as the reference)."""
import numpy as np
import pytest
from numba import njit

from skinflint.trainers.boosting.binning import _column_thresholds, _sort_float32
from skinflint.trainers.boosting.splitting import _score, level_flat_splits
from tests.trainers.boosting.binning_oracle import reference_thresholds
from tests.trainers.boosting.histogram_oracle import fill_hot_bins


def _bits(a):
    return np.asarray(a, np.float32).view(np.uint32)


def _columns():
    rng = np.random.default_rng(0)
    sparse = rng.normal(size=5000).astype(np.float32)
    sparse[rng.random(5000) < 0.6] = 0.0
    odd = np.array([np.inf, -np.inf, 1, np.nan, -2, 0.0, 1e-45, -1e-45, 3.4e38, -3.4e38, 1, 1], np.float32)
    return {"gaussian": rng.normal(size=20_000).astype(np.float32), "few values": rng.integers(0, 5, 999)
            .astype(np.float32), "sparse": sparse, "inf, subnormal, NaN": odd, "empty": np.zeros(0, np.float32),
            "all NaN": np.full(4, np.nan, np.float32), "wide": (rng.standard_cauchy(3000) * 1e20).astype(np.float32)}


@pytest.mark.parametrize("name", sorted(_columns()))
def test_radix_sort_gives_np_sort_bytes(name):
    col = _columns()[name]
    got, ok = _sort_float32(col.view(np.uint32))
    assert ok
    assert np.array_equal(got, _bits(np.sort(col[~np.isnan(col)])))


def test_negative_zero_is_left_to_numpy():
    # np.sort may order -0.0 and +0.0 either way; the radix keys would not
    _, ok = _sort_float32(np.array([1.0, -0.0, 0.0], np.float32).view(np.uint32))
    assert not ok




@pytest.mark.parametrize("max_bins", [2, 16, 255])
def test_thresholds_are_the_np_sort_ones(max_bins):
    cols = dict(_columns(), signed_zeros=np.array([0.0, -0.0, 2.0, -0.0, 1.0] * 50, np.float32))
    for name, col in cols.items():
        assert np.array_equal(_bits(_column_thresholds(col, max_bins)),
                              _bits(reference_thresholds(col, max_bins))), name


@njit(cache=False)
def _reference_feature_split(hg, hh, hc, n_bins, G, H, N, l2, min_samples_leaf, parent):
    # the one-pass scan that _feature_split replaced
    ms = hg.shape[0] - 1
    gm, hm, nm = hg[ms], hh[ms], float(hc[ms])
    n_dirs = 2 if nm > 0 else 1
    gl, hl, nl = 0.0, 0.0, 0.0
    best, bb, bm = -np.inf, 0, True
    bG, bH, bN = 0.0, 0.0, 0.0
    for b in range(n_bins - 1):
        gl += hg[b]
        hl += hh[b]
        nl += hc[b]
        for d in range(n_dirs):
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
    return best, bb, bm, bG, bH, bN


@pytest.mark.parametrize("l2, msl", [(0.0, 20), (1.0, 1), (0.0, 400), (0.5, 1500)])
def test_split_search_is_the_one_pass_scan(l2, msl):
    rng = np.random.default_rng(3)
    J, W = 6, 256
    n_bins = np.array([255, 255, 2, 1, 40, 255, 255, 100], np.int64)
    F = n_bins.shape[0]
    hc = rng.integers(0, 30, size=(J, F, W)).astype(np.int32)
    hc[:, :, 120:] *= rng.random((J, F, 1)) < 0.5          # some features with empty upper bins
    hc[:, 1, -1] = 0                                        # no missing rows: one direction only
    hg = rng.normal(size=(J, F, W)) * hc
    hh = rng.random((J, F, W)) * 0.25 * hc
    hh[:, 5] = 0.0                                          # zero hessians: _score's guard
    hg[:, 6, :10] = -0.0
    for f in range(F):                                       # slots past a feature's bins stay empty
        hg[:, f, n_bins[f]:W - 1] = hh[:, f, n_bins[f]:W - 1] = hc[:, f, n_bins[f]:W - 1] = 0
    sums = np.stack([hg[:, 0].sum(1), hh[:, 0].sum(1), hc[:, 0].sum(1).astype(float)], 1)
    active = np.ones(F, np.bool_)
    active[4] = False
    offsets = np.arange(F + 1, dtype=np.int64) * W
    gain, bins, mleft, left = level_flat_splits(hg.reshape(J, -1), hh.reshape(J, -1), hc.reshape(J, -1), offsets,
                                                n_bins, sums, l2, msl, active)
    n_valid = 0
    for j in range(J):
        G, H, N = sums[j]
        for f in range(F):
            best, bb, bm, bG, bH, bN = _reference_feature_split(hg[j, f], hh[j, f], hc[j, f], n_bins[f], G, H, N,
                                                                l2, msl, _score(G, H, l2))
            if not active[f] or best == -np.inf:
                assert gain[j, f] == -np.inf
                continue
            n_valid += 1
            assert (gain[j, f], bins[j, f], mleft[j, f]) == (best, bb, bm)
            assert np.array_equal(np.array([bG, bH, bN]).view(np.uint64), left[j, f].view(np.uint64))
    assert n_valid > 0


def _row_order_histograms(binned, rows, g, h, active, width):
    """The reference: per feature and bin, sum g, sum h and the count of
    ``rows``, added one row at a time in the order given (plain Python)."""
    F = binned.shape[0]
    hg, hh, hc = np.zeros((F, width)), np.zeros((F, width)), np.zeros((F, width), np.int64)
    for f in np.flatnonzero(active):
        for r in rows:
            b = binned[f, r]
            hg[f, b] += g[r]
            hh[f, b] += h[r]
            hc[f, b] += 1
    return hg, hh, hc


@pytest.mark.parametrize("row_wise", [False, True])
@pytest.mark.parametrize("unit", [False, True])
def test_vector_histograms_are_the_row_order_sums(unit, row_wise, monkeypatch):
    # build_level adds (g, h, 1, 0) as one vector per row (simd.add4); every slot but a hot bin must hold the
    # bits of the scalar sum in row order, a hot bin the sum of eight interleaved parts (histogram_oracle):
    # the root over all rows (read in order), a gathered node, hot bins, missing values, an inactive feature,
    # unit hessians (sum h = count), -0.0;
    # ``row_wise``: the gathered node (1000 of 3001 rows) is added row by row from a row-major copy
    from skinflint.trainers.boosting import histogram
    from skinflint.trainers.boosting.histogram import build_level, hot_bins, new_level
    monkeypatch.setattr(histogram, "_ROW_WISE_SHARE", 2)    # nodes below 1501 rows row-wise
    rng = np.random.default_rng(5)
    F, N = 6, 3001
    binned = rng.integers(0, 40, size=(F, N)).astype(np.uint8)
    binned[1, rng.random(N) < 0.7] = 3              # a hot bin
    binned[5, rng.random(N) < 0.9] = 0              # a hotter one
    binned[2, rng.random(N) < 0.1] = 255            # missing values
    g = rng.normal(size=N)
    g[rng.random(N) < 0.05] = -0.0
    h = np.ones(N) if unit else rng.random(N)
    sub = np.sort(rng.choice(N, 1000, replace=False)).astype(np.int32)
    order = np.concatenate([sub, np.arange(N)]).astype(np.int32)
    starts, stops, slots = np.array([0, 1000]), np.array([1000, 1000 + N]), np.array([1, 0])
    active = np.ones(F, np.bool_)
    active[4] = False
    hot = hot_bins(binned)
    assert hot[1] == 3 and hot[5] == 0
    hist = new_level(2, F)
    build_level(binned, order, starts, stops, slots, g, h, active, hot, *hist,
                np.ascontiguousarray(binned.T) if row_wise else None)
    for slot, rows in ((0, np.arange(N)), (1, sub)):
        want_all = _row_order_histograms(binned, rows, g, h, active, 256)
        fill_hot_bins(*want_all, binned, rows, g, h, hot, active)
        for got, want in zip((a[slot] for a in hist), want_all):
            assert got.dtype == want.dtype or got.dtype == np.int32
            assert np.array_equal(np.asarray(got, want.dtype).view(np.uint8), want.view(np.uint8))
    assert hist[2][0, 0].sum() == N and hist[2][1, 0].sum() == 1000


@pytest.mark.parametrize("subsample", [1.0, 0.5])
def test_row_major_copy_keeps_the_model_bytes_through_a_fit(subsample, monkeypatch):
    # The row-major copy of the bins (grower's cache, build_level's small nodes) only exists past 64 MB, which no
    # other test reaches: force it on for every node (threshold 0 bytes, every node below half the rows) and
    # require the model the column-wise path gives, byte for byte, with NaNs, a hot sparse column and subsampling.
    from skinflint import ir
    from skinflint.trainers.boosting import GreedyMiserClassifier, histogram
    rng = np.random.default_rng(11)
    X = rng.normal(size=(3000, 7)).astype(np.float32)
    X[rng.random(X.shape) < 0.05] = np.nan
    X[rng.random(3000) < 0.8, 3] = 0.0
    y = (np.nan_to_num(X[:, 0]) + np.nan_to_num(X[:, 3]) * 2 + rng.normal(size=3000) > 0).astype(int)

    def fit():
        est = GreedyMiserClassifier(n_estimators=15, cost_tradeoff=1e-3, max_depth=7, min_samples_leaf=3,
                                    subsample=subsample, random_state=0, verbose=0)
        return ir.to_json(est.fit(X, y).to_ir())

    column_wise = fit()
    monkeypatch.setattr(histogram, "_ROW_WISE_BYTES", 0)
    monkeypatch.setattr(histogram, "_ROW_WISE_SHARE", 2)
    assert fit() == column_wise
