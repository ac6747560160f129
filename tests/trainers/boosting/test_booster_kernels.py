"""The training kernels against plain numpy: binning, histograms (dense root
and gathered rows, one node and a level of nodes), the subtraction trick,
in-place partitioning on both of its paths, split sums, a level's split
search against one node's, and the leaf-range score update against a tree
walk."""
import numpy as np
import pytest

from skinflint.trainers.boosting import partition as partition_mod
from skinflint.trainers.boosting.binning import MISSING_BIN, bin_data, find_thresholds, pack_thresholds
from skinflint.trainers.boosting.histogram import (
    build_histograms,
    build_level,
    hot_bins,
    new_level,
    node_sums,
    subtract_level,
)
from skinflint.trainers.boosting.partition import partition
from skinflint.trainers.boosting.predictor import add_leaf_values, predict_binned
from skinflint.trainers.boosting.splitting import best_splits, level_splits
from tests.trainers.boosting.histogram_oracle import fill_hot_bins


def _data(n=5000, f=4, seed=0):
    rng = np.random.default_rng(seed)
    binned = rng.integers(0, 20, size=(f, n)).astype(np.uint8)
    binned[rng.random((f, n)) < 0.05] = MISSING_BIN
    return rng, binned, rng.normal(size=n), rng.random(n)


def _numpy_hist(binned, rows, g, h):
    F = binned.shape[0]
    hg, hh, hc = np.zeros((F, 256)), np.zeros((F, 256)), np.zeros((F, 256), np.int64)
    for f in range(F):
        b = binned[f, rows]
        hg[f] = np.bincount(b, g[rows], 256)
        hh[f] = np.bincount(b, h[rows], 256)
        hc[f] = np.bincount(b, minlength=256)
    return hg, hh, hc


@pytest.mark.parametrize("n_rows", [5000, 4999, 1, 0])  # all rows (dense path), odd and tiny
def test_histograms_equal_bincount(n_rows):
    rng, binned, g, h = _data()
    rows = np.sort(rng.choice(5000, n_rows, replace=False)).astype(np.int32)
    active = np.array([True, False, True, True])
    got = build_histograms(binned, rows, g, h, active)
    want = _numpy_hist(binned, rows, g, h)
    for a, b in zip(got, want):
        # sums of the same doubles in a different order: allow rounding only
        np.testing.assert_allclose(a[active], b[active], rtol=1e-12, atol=1e-12)
        assert not a[~active].any()
    G, H, N = node_sums(rows, g, h)
    assert N == n_rows and np.isclose(G, g[rows].sum()) and np.isclose(H, h[rows].sum())


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_bins_are_the_lower_bound_of_the_thresholds(dtype):
    rng = np.random.default_rng(1)
    X = rng.normal(size=(1000, 6)).astype(dtype)     # 1000 rows: blocks of 256 and a partial one
    X[::5, 2] = np.nan
    X[:, 3] = 1.0                                     # constant: no thresholds
    X[:, 4] = np.round(X[:, 4])                       # few values: every value a threshold
    X[:7, 5] = [-9, 9, 0, 0, 0, 0, 0]                 # beyond the ends, and on a threshold
    thr = find_thresholds(X.astype(np.float32))
    got = bin_data(X, *pack_thresholds(thr))
    for f in range(6):
        want = np.where(np.isnan(X[:, f]), MISSING_BIN, np.searchsorted(thr[f], X[:, f], "left"))
        np.testing.assert_array_equal(got[f], want)


def test_a_level_builds_each_node_and_subtracts_each_sibling():
    rng, binned, g, h = _data()
    active = np.array([True, True, False, True])
    order = rng.permutation(5000).astype(np.int32)
    bounds = [0, 1700, 1701, 3000, 5000]   # four nodes, one of a single row
    for a, b in zip(bounds[:-1], bounds[1:]):
        order[a:b].sort()
    no_hot = np.full(4, -1)
    parent = new_level(2, 4)
    build_level(binned, order, np.array([0, 1701]), np.array([1701, 5000]), np.array([1, 0]), g, h, active,
                no_hot, *parent)
    level = new_level(4, 4)
    # nodes 0 and 3 built into slots 2 and 0; their siblings 1 and 2 subtracted into slots 3 and 1
    build_level(binned, order, np.array([0, 3000]), np.array([1700, 5000]), np.array([2, 0]), g, h, active,
                no_hot, *level)
    subtract_level(*parent, np.array([1, 0]), *level, np.array([2, 0]), np.array([3, 1]))
    for slot, (a, b) in zip([2, 3, 1, 0], zip(bounds[:-1], bounds[1:])):
        want = _numpy_hist(binned, order[a:b], g, h)
        for got, w in zip((x[slot] for x in level), want):
            # built: the same doubles summed in another order; subtracted: cancellation rounding too
            np.testing.assert_allclose(got[active], w[active], rtol=1e-12, atol=1e-9)
            assert not got[~active].any()
        np.testing.assert_array_equal(level[2][slot][active], want[2][active])   # counts exact


@pytest.mark.parametrize("n_rows", [5000, 3001, 1])    # the dense root, gathered rows, a single row
def test_hot_bins_sum_their_rows_in_eight_interleaved_parts(n_rows):
    rng, binned, g, h = _data()
    binned[0, rng.random(5000) < 0.7] = 3                  # sparse columns: one bin holds most rows
    binned[2, rng.random(5000) < 0.4] = MISSING_BIN
    binned[3, rng.random(5000) < 0.9] = 0
    hot = hot_bins(binned)
    assert list(hot) == [3, -1, MISSING_BIN, 0]
    rows = np.sort(rng.choice(5000, n_rows, replace=False)).astype(np.int32)
    active = np.ones(4, bool)
    want = [np.array(a) for a in build_histograms(binned, rows, g, h, active)]   # no hot bins: row-order sums
    fill_hot_bins(*want, binned, rows, g, h, hot, active)
    for a, b in zip(build_histograms(binned, rows, g, h, active, hot), want):
        np.testing.assert_array_equal(a, b)   # the same additions in the same order: no tolerance


@pytest.mark.parametrize("n_rows", [5000, 3001])
def test_a_hot_bin_of_zero_gradient_rows_sums_to_exactly_zero(n_rows):
    # rows with g = h = 0 (zero sample weight, a saturated loss) in the hot bin: a fill from the node's totals
    # minus the other bins left ~1e-7 of g with h = 0 there, a split on it and an infinite leaf
    rng, binned, g, h = _data()
    binned[0, rng.random(5000) < 0.6] = 0
    g[binned[0] == 0] = 0.0
    h[binned[0] == 0] = 0.0
    hot = hot_bins(binned)
    assert hot[0] == 0
    rows = np.sort(rng.choice(5000, n_rows, replace=False)).astype(np.int32)
    hg, hh, hc = build_histograms(binned, rows, g, h, np.ones(4, bool), hot)
    assert hg[0, 0] == 0.0 and hh[0, 0] == 0.0 and hc[0, 0] == np.count_nonzero(binned[0, rows] == 0) > 0


def test_zero_weight_rows_in_a_hot_bin_give_finite_leaves():
    # the regression the test above guards, end to end: 60 % of the rows at x = 0 with weight 0
    from skinflint.trainers import GreedyMiserRegressor
    rng = np.random.default_rng(1)
    x0 = np.where(rng.random(20_000) < 0.6, 0.0, rng.integers(1, 12, 20_000)).astype(np.float32)
    y = np.where(x0 <= 5, 1.4, -0.3)
    m = GreedyMiserRegressor(n_estimators=2, max_depth=2, min_samples_leaf=20, verbose=0)
    m.fit(x0[:, None], y, sample_weight=np.where(x0 == 0, 0.0, 1.0))
    pred = m.predict(x0[:2000, None])
    assert np.isfinite(pred).all() and np.abs(pred).max() < 1.5   # |y| <= 1.4: the leaves move toward it


@pytest.mark.parametrize("parallel", [False, True])
@pytest.mark.parametrize("missing_left", [False, True])
def test_partition_is_stable_and_in_place(monkeypatch, parallel, missing_left):
    rng, binned, _, _ = _data(n=70_000, f=2)
    monkeypatch.setattr(partition_mod, "_PARALLEL_MIN_ROWS", 0 if parallel else 10**9)
    order = rng.permutation(70_000).astype(np.int32)
    before = order.copy()
    start, stop = 1234, 65_432     # a node in the middle of the array
    buffers = (np.empty_like(order), np.empty_like(order))
    mid = partition(binned, order, start, stop, 1, 7, missing_left, buffers)
    b = binned[1, before[start:stop]]
    goes_left = np.where(b == MISSING_BIN, missing_left, b <= 7)
    np.testing.assert_array_equal(order[start:mid], before[start:stop][goes_left])
    np.testing.assert_array_equal(order[mid:stop], before[start:stop][~goes_left])
    np.testing.assert_array_equal(order[:start], before[:start])   # other nodes untouched
    np.testing.assert_array_equal(order[stop:], before[stop:])


def test_split_reports_the_left_sums_of_its_split():
    rng, binned, g, h = _data()
    rows = np.arange(5000, dtype=np.int32)
    active = np.ones(4, bool)
    hist = build_histograms(binned, rows, g, h, active)
    G, H, N = node_sums(rows, g, h)
    gains, bins, mleft, left_sums = best_splits(*hist, np.full(4, 21), G, H, N, 0.0, 20, np.zeros(4), active)
    for f in range(4):
        b = binned[f]
        left = np.where(b == MISSING_BIN, mleft[f], b <= bins[f])
        np.testing.assert_allclose(left_sums[f], [g[left].sum(), h[left].sum(), left.sum()], rtol=1e-12)


def test_a_level_search_equals_each_nodes_search_bit_for_bit():
    rng, binned, g, h = _data()
    active = np.array([True, False, True, True])
    nodes = [np.arange(5000, dtype=np.int32), np.sort(rng.choice(5000, 900, replace=False)).astype(np.int32)]
    hists = [build_histograms(binned, r, g, h, active) for r in nodes]
    sums = np.array([node_sums(r, g, h) for r in nodes])
    penalty = rng.random(4)
    level = level_splits(*(np.stack(x) for x in zip(*hists)), np.full(4, 21), sums, 0.5, 20, active)
    for j, hist in enumerate(hists):
        one = best_splits(*hist, np.full(4, 21), *sums[j], 0.5, 20, penalty, active)
        np.testing.assert_array_equal(one[0], level[0][j] - penalty)
        for a, b in zip(one[1:], level[1:]):
            np.testing.assert_array_equal(a, b[j])
    assert np.isneginf(level[0][:, 1]).all()   # the inactive feature never splits


def test_leaf_ranges_update_scores_as_the_tree_walk_does():
    from skinflint.trainers.boosting.grower import grow
    rng, binned, g, h = _data(n=3000, f=3)
    rows = np.arange(3000, dtype=np.int32)
    tree = grow(binned, np.full(3, 21), rows, g, h, max_depth=4, min_samples_leaf=5, l2=0.0,
                penalty=np.zeros(3), active=np.ones(3, bool))
    value = rng.normal(size=len(tree.feature))
    feat, sbin, left, right, mleft, value = tree.arrays(value)
    walked, ranged = np.zeros(3000), np.zeros(3000)
    predict_binned(binned, feat, sbin, left, right, mleft, value, walked)
    nodes, starts, stops = tree.leaf_ranges()
    assert (stops - starts).sum() == 3000 and len(nodes) == (feat < 0).sum()
    add_leaf_values(tree.order, starts, stops, value[nodes], ranged)
    np.testing.assert_array_equal(ranged, walked)


def test_trees_grown_in_a_shared_workspace_equal_trees_grown_alone():
    from skinflint.trainers.boosting.grower import grow
    rng, binned, g, h = _data(n=3000, f=3)
    workspace = {}
    for depth, n in [(2, 3000), (5, 3000), (4, 1700)]:   # the buffers grow, then are reused smaller
        rows = np.sort(rng.choice(3000, n, replace=False)).astype(np.int32)
        g = rng.normal(size=3000)
        kw = dict(max_depth=depth, min_samples_leaf=5, l2=0.0, penalty=np.zeros(3), active=np.ones(3, bool))
        shared, alone = grow(binned, np.full(3, 21), rows, g, h, workspace=workspace, **kw), \
            grow(binned, np.full(3, 21), rows, g, h, **kw)
        assert shared.sums == alone.sums and len(shared.feature) > 3
        for a, b in zip(shared.arrays(np.zeros(len(shared.feature))), alone.arrays(np.zeros(len(alone.feature)))):
            np.testing.assert_array_equal(a, b)


@pytest.mark.parametrize("n_rows", [20_000, 17_001])   # the dense root, gathered rows: 3 row blocks
def test_row_blocks_and_feature_groups_sum_each_bin_in_row_order(n_rows):
    rng, binned, g, h = _data(n=20_000, f=40)            # 40 features: groups of 2
    binned[::3][:, rng.random(20_000) < 0.6] = 7          # every third feature sparse: hot bin 7
    hot = hot_bins(binned)
    assert (hot[::3] == 7).all() and (hot[1::3] == -1).all()
    rows = np.sort(rng.choice(20_000, n_rows, replace=False)).astype(np.int32)
    active = np.ones(40, bool)
    active[5] = False
    plain = _numpy_hist(binned, rows, g, h)   # bincount adds each bin's weights in index order too
    with_hot = [a.copy() for a in plain]
    fill_hot_bins(*with_hot, binned, rows, g, h, hot, active)   # the hot bins: through eight interleaved parts
    for got, want in ((build_histograms(binned, rows, g, h, active, hot), with_hot),
                      (build_histograms(binned, rows, g, h, active), plain)):
        for a, b in zip(got, want):
            np.testing.assert_array_equal(a[active], b[active])
            assert not a[~active].any()
