"""Flat histograms (uint16 data: each feature only n_bins[f] + 1 slots wide)
against the [nodes, F, n_slots] kernels, which trained uint16 data before
and still train uint8 data: the same sums in every slot, bit for bit, the
same splits and category sets, and a high-cardinality model pinned from
the [F, n_slots] layout."""
import hashlib

import numpy as np

from skinflint import ir
from skinflint.trainers import GreedyMiserRegressor
from skinflint.trainers.boosting.grower import CategoryOptions, grow
from skinflint.trainers.boosting.histogram import (
    build_flat_level,
    build_level,
    flat_offsets,
    new_flat_level,
    new_level,
    subtract_flat_level,
    subtract_level,
)
from skinflint.trainers.boosting.splitting import (
    level_category_splits,
    level_flat_category_splits,
    level_flat_splits,
    level_splits,
)


def _wide_data(n=6000, seed=0):
    """uint16 bins as ``binning.widen`` stores them: a 700-bin feature sets
    the width (701 slots, NaN in slot 700), the others have few bins and
    their NaN in that same shared missing bin."""
    rng = np.random.default_rng(seed)
    n_bins = np.array([700, 20, 3, 256, 1, 40], np.int64)
    W = int(n_bins.max()) + 1
    binned = np.stack([rng.integers(0, b, n) for b in n_bins]).astype(np.uint16)
    binned[rng.random(binned.shape) < 0.05] = W - 1
    return rng, binned, n_bins, W, rng.normal(size=n), rng.random(n) + 0.5


def _flat_equals_wide(flat, wide, offsets, n_bins):
    """Every flat slot equals the wide slot it stands for (bit for bit),
    and the wide slots with no flat one (between a feature's last value bin
    and the shared missing bin) are empty."""
    for a, b in zip(flat, wide):
        for f in range(len(n_bins)):
            s = a[..., offsets[f]:offsets[f + 1]]
            np.testing.assert_array_equal(s[..., :-1], b[..., f, :n_bins[f]])
            np.testing.assert_array_equal(s[..., -1], b[..., f, -1])
            assert not b[..., f, n_bins[f]:-1].any()


def test_flat_levels_sum_what_the_wide_levels_sum():
    rng, binned, n_bins, W, g, h = _wide_data()
    F, N = binned.shape
    active = np.array([True, True, False, True, True, True])
    offsets = flat_offsets(n_bins)
    assert offsets[-1] == (n_bins + 1).sum() < F * W
    order = np.arange(N, dtype=np.int32)
    order[:2500] = np.sort(rng.permutation(N)[:2500])     # a node of gathered rows, then one of the rest
    order[2500:] = np.setdiff1d(np.arange(N), order[:2500])
    hot = np.full(F, -1, np.int64)
    root = np.zeros(1, np.int64)
    wide_p, flat_p = new_level(1, F, width=W), new_flat_level(1, int(offsets[-1]))
    build_level(binned, order, root, np.array([N]), root, g, h, active, hot, *wide_p)        # dense root
    build_flat_level(binned, order, root, np.array([N]), root, g, h, active, offsets, *flat_p)
    _flat_equals_wide(flat_p, wide_p, offsets, n_bins)
    starts, stops, slots = np.array([0]), np.array([2500]), np.array([1])
    wide_c, flat_c = new_level(2, F, width=W), new_flat_level(2, int(offsets[-1]))
    build_level(binned, order, starts, stops, slots, g, h, active, hot, *wide_c)
    build_flat_level(binned, order, starts, stops, slots, g, h, active, offsets, *flat_c)
    subtract_level(*wide_p, np.array([0]), *wide_c, slots, np.array([0]))
    subtract_flat_level(*flat_p, np.array([0]), *flat_c, slots, np.array([0]), offsets)
    _flat_equals_wide(flat_c, wide_c, offsets, n_bins)
    assert not flat_c[2][:, offsets[2]:offsets[3]].any()          # the inactive feature stays empty
    # the split searches read the same sums: the same brackets, bins, NaN sides, left sums and sets
    sums = np.array([[g[order[:2500]].sum(), h[order[:2500]].sum(), 2500.0],
                     [g[order[2500:]].sum(), h[order[2500:]].sum(), N - 2500.0]])
    for a, b in zip(level_flat_splits(*flat_c, offsets, n_bins, sums, 1.0, 20, active),
                    level_splits(*wide_c, n_bins, sums, 1.0, 20, active)):
        np.testing.assert_array_equal(a, b)
    cat = np.array([0, 1, 3], np.int64)
    opts = (10.0, 10.0, 32, 5.0, 4)
    flat_sets = level_flat_category_splits(*flat_c, offsets, W, n_bins, sums, 1.0, 20, cat, *opts)
    wide_sets = level_category_splits(*wide_c, n_bins, sums, 1.0, 20, cat, *opts)
    for a, b in zip(flat_sets, wide_sets):
        np.testing.assert_array_equal(a, b)
    assert flat_sets[1].shape[2] == W and flat_sets[1].any()   # sets are indexed by bin, NaN's included


def test_the_grower_keeps_flat_buffers_for_wide_data():
    """The workspace of a uint16 fit holds sum(n_bins + 1) slots per node,
    not F x n_slots: the memory the reviewer's 4,000-category case lost."""
    rng, binned, n_bins, W, g, h = _wide_data()
    F, N = binned.shape
    ws: dict = {}
    opts = CategoryOptions(np.array([True, False, False, False, False, False]), min_data_per_group=5)
    tree = grow(binned, n_bins, np.arange(N, dtype=np.int32), g, h, max_depth=3, min_samples_leaf=20, l2=1.0,
                penalty=np.zeros(F), active=np.ones(F, bool), workspace=ws, categories=opts)
    assert len(tree.feature) > 1
    for key in (0, 1):
        assert ws[key][0].shape[1] == flat_offsets(n_bins)[-1]


def _mixed(seed=3, N=6000):
    rng = np.random.default_rng(seed)
    Xn = rng.normal(size=(N, 12))
    Xn[rng.random(Xn.shape) < 0.05] = np.nan
    c = rng.integers(0, 700, N).astype(float)
    c[rng.random(N) < 0.03] = np.nan
    X = np.c_[Xn[:, :5], c, Xn[:, 5:]]
    y = np.nan_to_num(Xn[:, 0]) + (np.nan_to_num(c) % 5 == 0) + 0.1 * rng.normal(size=N)
    return X, y


def test_a_high_cardinality_model_is_the_one_the_wide_histograms_grew():
    """Pinned from 83a797f's [F, n_slots] histograms (before the flat ones):
    12 numeric features with NaN around one 700-category column."""
    X, y = _mixed()
    est = GreedyMiserRegressor(n_estimators=12, max_depth=6, categorical_features=[5], verbose=0,
                               random_state=0).fit(X, y)
    assert hashlib.sha256(ir.to_json(est.to_ir()).encode()).hexdigest()[:16] == "0e50f064d9a67a9c"
