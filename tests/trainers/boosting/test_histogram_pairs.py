"""``build_level`` adds two features per pass over a node's rows
(``histogram._accumulate4_pair``, ``simd.add4x2``): every slot must still
hold the bits of that feature's row-order sum (a hot bin: the eight
interleaved parts of ``histogram_oracle``), whichever features pair up.
The rule is stated in plain Python here, not by the kernel."""
import numba
import numpy as np
import pytest

from skinflint.trainers.boosting.histogram import N_SLOTS, _n_groups, build_level, hot_bins, new_level
from tests.trainers.boosting.histogram_oracle import fill_hot_bins


def _row_order(binned, rows, g, h, active):
    """Per feature and bin: sum g, sum h (float64, one row at a time in the
    order of ``rows``) and the count; inactive features all zero."""
    F = binned.shape[0]
    hg, hh, hc = np.zeros((F, N_SLOTS)), np.zeros((F, N_SLOTS)), np.zeros((F, N_SLOTS), np.int64)
    for f in range(F):
        if not active[f]:
            continue
        for r in rows:
            b = int(binned[f, r])
            hg[f, b] = float(hg[f, b]) + float(g[r])
            hh[f, b] = float(hh[f, b]) + float(h[r])
            hc[f, b] += 1
    return hg, hh, hc


@pytest.mark.parametrize("threads", [1, 2])
def test_paired_features_keep_each_features_row_order_bits(threads):
    if threads > numba.config.NUMBA_NUM_THREADS:
        pytest.skip("numba has fewer threads here")
    rng = np.random.default_rng(11)
    F, N = 41, 2003   # 41 features: groups of 2-3 (an odd one leaves a feature alone), odd row counts
    assert max(-(-F // _n_groups(F, t)) for t in (1, 2)) >= 2   # the groups hold pairs
    binned = rng.integers(0, 60, size=(F, N)).astype(np.uint8)
    for f in range(0, F, 3):   # hot bins (sparse columns) next to features without one
        binned[f, rng.random(N) < 0.6] = f % 7
    binned[5, rng.random(N) < 0.2] = 255    # missing values
    g = rng.normal(size=N)
    g[rng.random(N) < 0.05] = -0.0
    h = rng.random(N)
    active = np.ones(F, np.bool_)
    active[[2, 9, 10, 40]] = False          # pairs broken by an inactive feature, and the last one
    hot = hot_bins(binned)
    assert (hot >= 0).sum() >= 10 and (hot < 0).sum() >= 10
    # the dense root and three gathered nodes (sorted row subsets) in one call, as a level builds them
    subs = [np.sort(rng.choice(N, m, replace=False)).astype(np.int32) for m in (700, 333, 1)]
    order = np.concatenate([np.arange(N)] + subs).astype(np.int32)
    sizes = [N] + [len(s) for s in subs]
    stops = np.cumsum(sizes)
    starts = stops - sizes
    slots = np.array([2, 0, 3, 1])
    numba.set_num_threads(threads)
    try:
        hist = new_level(4, F)
        build_level(binned, order, starts, stops, slots, g, h, active, hot, *hist)
    finally:
        numba.set_num_threads(numba.config.NUMBA_NUM_THREADS)
    for slot, rows in zip(slots, [np.arange(N)] + subs):
        want = _row_order(binned, rows, g, h, active)
        fill_hot_bins(*want, binned, rows, g, h, hot, active)
        for got, exp in zip((a[slot] for a in hist), want):
            # exact: bits of g and h sums (-0.0 included), counts as integers
            assert np.array_equal(np.asarray(got, exp.dtype).view(np.uint8), exp.view(np.uint8))
