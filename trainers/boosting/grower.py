"""Grow one regression tree level by level (as the seeds do), to max_depth.

Orchestration only: histograms, split search and partitioning are numba
kernels; this loop visits nodes, not rows.  The rows live in one index
array, partitioned in place, in which every node is a range [start, stop).
Nodes that cannot split (at max_depth, or too few rows) get no histograms.
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from .binning import n_slots
from .histogram import (
    build_flat_level,
    build_level,
    flat_offsets,
    hot_bins,
    new_flat_level,
    new_level,
    node_sums,
    row_major,
    subtract_flat_level,
    subtract_level,
)
from .partition import partition, partition_set
from .splitting import level_category_splits, level_flat_category_splits, level_flat_splits, level_splits


@dataclass(frozen=True)
class CategoryOptions:
    """Which features are categorical (their bins are categories,
    ``binning.category_bins``) and LightGBM's regularisation of set splits
    (``splitting._categorical_split``)."""

    is_cat: np.ndarray            # bool [F]
    cat_l2: float = 10.0
    cat_smooth: float = 10.0
    max_cat_threshold: int = 32
    min_data_per_group: int = 100
    max_cat_to_onehot: int = 4


@dataclass
class Tree:
    feature: list = field(default_factory=lambda: [-1])
    split_bin: list = field(default_factory=lambda: [0])
    left: list = field(default_factory=lambda: [-1])
    right: list = field(default_factory=lambda: [-1])
    missing_left: list = field(default_factory=lambda: [True])
    sums: list = field(default_factory=list)          # (G, H, N) per node
    split_gain: list = field(default_factory=list)    # (feature, gain) per split
    order: np.ndarray = None  # type: ignore[assignment]  # the rows, grouped by leaf (set by grow)
    leaves: list = field(default_factory=list)        # (node, start, stop) into order
    sets: dict = field(default_factory=dict)          # node -> uint8 [slots]: bins that go left (set splits)

    def add_children(self, parent, f, b, miss_left):
        self.feature[parent], self.split_bin[parent], self.missing_left[parent] = f, b, miss_left
        ids = []
        for side in (self.left, self.right):
            side[parent] = len(self.feature)
            ids.append(len(self.feature))
            self.feature.append(-1), self.split_bin.append(0), self.left.append(-1)
            self.right.append(-1), self.missing_left.append(True)
        return ids

    def arrays(self, leaf_values):
        return (np.array(self.feature, np.int32), np.array(self.split_bin, np.int64),
                np.array(self.left, np.int32), np.array(self.right, np.int32),
                np.array(self.missing_left, np.bool_), np.asarray(leaf_values, np.float64))

    def leaf_ranges(self):
        """(node, start, stop) of every leaf, as int64 arrays."""
        return tuple(np.array(c, np.int64) for c in zip(*self.leaves))


def grow(binned, n_bins, rows, g, h, *, max_depth, min_samples_leaf, l2, penalty, active,
         on_split=None, workspace=None, categories: CategoryOptions | None = None) -> Tree:
    """One tree.  ``penalty[f]`` is subtracted from every split's gain on f;
    ``on_split(f)`` may return a new penalty vector (immediate refunds).
    ``workspace``: a dict the caller keeps across the trees of a fit, where
    the histogram buffers are reused (``histogram.new_level``).
    ``categories``: the categorical features and their options; their
    splits are category sets (``tree.sets``), found by
    ``level_category_splits``.  None: every split numeric (the same calls
    as before categorical splits existed).

    Level by level: one call builds the histograms of all the level's nodes
    that need building, one computes their siblings by subtraction, one
    searches all their splits; then the nodes are visited in order, each
    paying the penalty of the moment, and partitioned."""
    tree = Tree()
    order = rows.copy()
    buffers = (np.empty_like(order), np.empty_like(order))
    tree.order = order
    F = binned.shape[0]
    width = n_slots(binned, n_bins)      # 256 for uint8 data: the histograms and kernels as before
    if binned.dtype == np.uint8:     # [nodes, F, 256] histograms
        def level(n, key):
            return new_level(n, F, workspace, key, width)

        def build(starts, stops, slots, out):
            build_level(binned, order, starts, stops, slots, g, h, active, hot, *out, rowmajor)

        def subtract(parents, out, smalls, bigs):
            subtract_level(*hist, parents, *out, smalls, bigs)  # type: ignore[call-arg]  # numba's stubs cannot count *-args

        def num_splits(sums, act):
            return level_splits(*hist, n_bins, sums, l2, min_samples_leaf, act)  # type: ignore[call-arg]  # numba's stubs cannot count *-args

        def cat_splits(sums):
            return level_category_splits(*hist, n_bins, sums, l2, min_samples_leaf, cat_f, *cat_args)  # type: ignore[call-arg]  # numba's stubs cannot count *-args
    else:   # uint16 data: flat histograms, each feature n_bins[f] + 1 slots wide (histogram.flat_offsets)
        offsets = flat_offsets(n_bins)

        def level(n, key):
            return new_flat_level(n, int(offsets[-1]), workspace, key)

        def build(starts, stops, slots, out):
            build_flat_level(binned, order, starts, stops, slots, g, h, active, offsets, *out)

        def subtract(parents, out, smalls, bigs):
            subtract_flat_level(*hist, parents, *out, smalls, bigs, offsets)  # type: ignore[call-arg]  # numba's stubs cannot count *-args

        def num_splits(sums, act):
            return level_flat_splits(*hist, offsets, n_bins, sums, l2, min_samples_leaf, act)  # type: ignore[call-arg]  # numba's stubs cannot count *-args

        def cat_splits(sums):
            return level_flat_category_splits(*hist, offsets, width, n_bins, sums, l2, min_samples_leaf, cat_f,  # type: ignore[call-arg]  # numba's stubs cannot count *-args
                                              *cat_args)
    cat_f = None
    if categories is not None and np.any(categories.is_cat & active):
        cat_f = np.flatnonzero(categories.is_cat & active).astype(np.int64)
        num_active = active & ~categories.is_cat
        cat_args = (float(categories.cat_l2), float(categories.cat_smooth), int(categories.max_cat_threshold),
                    float(categories.min_data_per_group), int(categories.max_cat_to_onehot))

    def splittable(depth, n):
        return depth < max_depth and n >= 2 * min_samples_leaf

    tree.sums.append(node_sums(order, g, h))
    if not splittable(0, order.shape[0]):
        tree.leaves.append((0, 0, order.shape[0]))
        return tree
    frontier = [(0, 0, order.shape[0])]
    hist = level(1, 0)
    hot = rowmajor = None
    if binned.dtype == np.uint8:   # per binned array, once per fit when the caller keeps a workspace
        cached = None if workspace is None else workspace.get("hot")
        if cached is not None and cached[0] is binned:
            hot, rowmajor = cached[1], cached[2]
        else:
            hot = hot_bins(binned)
            if workspace is not None:   # a row-major copy for deep nodes, when the bins outgrow the cache
                rowmajor = row_major(binned)
                workspace["hot"] = (binned, hot, rowmajor)
    first = np.zeros(1, np.int64)
    build(first, np.array([order.shape[0]], np.int64), first, hist)
    for depth in range(max_depth):
        sums = np.array([tree.sums[nid] for nid, _, _ in frontier], np.float64)
        if cat_f is None:
            brackets, bins, mleft, left_sums = num_splits(sums, active)
        else:
            brackets, bins, mleft, left_sums = num_splits(sums, num_active)
            cgain, csets, csums = cat_splits(sums)
            brackets[:, cat_f] = cgain
            left_sums[:, cat_f] = csums
            mleft[:, cat_f] = False     # NaN goes right at a set split (LightGBM)
        nxt: list = []
        small = []   # (start, stop, index in nxt or None) of each child to build
        pairs = []   # (parent j, index of its small child in ``small``, big child's index in nxt)
        for j, (nid, start, stop) in enumerate(frontier):
            G, H, N = sums[j]
            gains = brackets[j] - penalty
            f = int(np.argmax(gains))
            if not gains[f] > 1e-12:
                tree.leaves.append((nid, start, stop))
                continue
            if cat_f is not None and categories is not None and categories.is_cat[f]:
                goes = csets[j, int(np.searchsorted(cat_f, f))]
                tree.sets[nid] = goes.copy()
                mid = partition_set(binned, order, start, stop, f, goes, buffers)
            else:
                mid = partition(binned, order, start, stop, f, bins[j, f], mleft[j, f], buffers, width - 1)
            lid, rid = tree.add_children(nid, f, int(bins[j, f]), bool(mleft[j, f]))
            GL, HL, NL = left_sums[j, f]
            tree.sums.append((GL, HL, NL))
            tree.sums.append((G - GL, H - HL, N - NL))
            tree.split_gain.append((f, float(gains[f] + penalty[f])))
            if on_split is not None:
                new = on_split(f)
                if new is not None:
                    penalty = new
            children = [(lid, start, mid), (rid, mid, stop)]
            at: list[int | None] = [None, None]
            for c, (cid, c_start, c_stop) in enumerate(children):
                if splittable(depth + 1, c_stop - c_start):
                    at[c] = len(nxt)
                    nxt.append((cid, c_start, c_stop))
                else:
                    tree.leaves.append((cid, c_start, c_stop))
            if at != [None, None]:
                # build the smaller child; the larger is parent minus smaller
                s = 0 if mid - start <= stop - mid else 1
                small.append((children[s][1], children[s][2], at[s]))
                if at[1 - s] is not None:
                    pairs.append((j, len(small) - 1, at[1 - s]))
        frontier = nxt
        if not frontier:   # children at max_depth are never on it
            break
        # slots: the next frontier's nodes in order, then small children
        # that are only built for their sibling's subtraction
        extra = iter(range(len(nxt), len(nxt) + len(small)))
        slots = np.array([a if a is not None else next(extra) for _, _, a in small], np.int64)
        new = level(len(nxt) + sum(a is None for _, _, a in small), (depth + 1) % 2)
        build(np.array([s for s, _, _ in small], np.int64), np.array([e for _, e, _ in small], np.int64), slots, new)
        if pairs:
            p = np.array(pairs, np.int64).reshape(-1, 3)
            subtract(p[:, 0], new, slots[p[:, 1]], p[:, 2])
        hist = new
    return tree
