"""The training kernels against plain numpy: histograms (dense root and
gathered rows), the subtraction trick, in-place partitioning on both of its
paths, split sums, and the leaf-range score update against a tree walk."""
import numpy as np
import pytest

from skinflint.trainers.boosting import partition as partition_mod
from skinflint.trainers.boosting.binning import MISSING_BIN
from skinflint.trainers.boosting.histogram import build_histograms, node_sums, subtract_into
from skinflint.trainers.boosting.partition import partition
from skinflint.trainers.boosting.predictor import add_leaf_values, predict_binned
from skinflint.trainers.boosting.splitting import best_splits


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


def test_subtraction_gives_the_sibling():
    rng, binned, g, h = _data()
    active = np.ones(4, bool)
    rows = np.arange(5000, dtype=np.int32)
    left = np.sort(rng.choice(5000, 1700, replace=False)).astype(np.int32)
    right = np.setdiff1d(rows, left).astype(np.int32)
    sib = subtract_into(build_histograms(binned, rows, g, h, active), build_histograms(binned, left, g, h, active))
    for a, b in zip(sib, build_histograms(binned, right, g, h, active)):
        np.testing.assert_allclose(a, b, atol=1e-9)   # parent - child: cancellation rounding only
    np.testing.assert_array_equal(sib[2], _numpy_hist(binned, right, g, h)[2])  # counts exact


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
