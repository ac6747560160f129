"""Grow one regression tree level by level (as the seeds do), to max_depth.

Orchestration only: histograms, split search and partitioning are numba
kernels; this loop visits nodes, not rows.  The rows live in one index
array, partitioned in place, in which every node is a range [start, stop).
Nodes that cannot split (at max_depth, or too few rows) get no histograms.
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from .histogram import build_histograms, node_sums, subtract_into
from .partition import partition
from .splitting import best_splits


@dataclass
class Tree:
    feature: list = field(default_factory=lambda: [-1])
    split_bin: list = field(default_factory=lambda: [0])
    left: list = field(default_factory=lambda: [-1])
    right: list = field(default_factory=lambda: [-1])
    missing_left: list = field(default_factory=lambda: [True])
    sums: list = field(default_factory=list)          # (G, H, N) per node
    split_gain: list = field(default_factory=list)    # (feature, gain) per split
    order: np.ndarray = None                          # the rows, grouped by leaf
    leaves: list = field(default_factory=list)        # (node, start, stop) into order

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
         on_split=None) -> Tree:
    """One tree.  ``penalty[f]`` is subtracted from every split's gain on f;
    ``on_split(f)`` may return a new penalty vector (immediate refunds)."""
    tree = Tree()
    order = rows.copy()
    buffers = (np.empty_like(order), np.empty_like(order))
    tree.order = order

    def splittable(depth, n):
        return depth < max_depth and n >= 2 * min_samples_leaf

    tree.sums.append(node_sums(order, g, h))
    frontier = []
    if splittable(0, order.shape[0]):
        frontier.append((0, 0, order.shape[0], build_histograms(binned, order, g, h, active)))
    else:
        tree.leaves.append((0, 0, order.shape[0]))
    for depth in range(max_depth):
        nxt = []
        for nid, start, stop, hist in frontier:
            G, H, N = tree.sums[nid]
            gains, bins, mleft, left_sums = best_splits(*hist, n_bins, G, H, N, l2, min_samples_leaf,
                                                        penalty, active)
            f = int(np.argmax(gains))
            if not gains[f] > 1e-12:
                tree.leaves.append((nid, start, stop))
                continue
            mid = partition(binned, order, start, stop, f, bins[f], mleft[f], buffers)
            lid, rid = tree.add_children(nid, f, int(bins[f]), bool(mleft[f]))
            GL, HL, NL = left_sums[f]
            tree.sums.append((GL, HL, NL))
            tree.sums.append((G - GL, H - HL, N - NL))
            tree.split_gain.append((f, float(gains[f] + penalty[f])))
            if on_split is not None:
                new = on_split(f)
                if new is not None:
                    penalty = new
            children = [(lid, start, mid), (rid, mid, stop)]
            grows = [splittable(depth + 1, c_stop - c_start) for _, c_start, c_stop in children]
            hists = [None, None]
            if any(grows):
                # build the smaller child; the larger is parent minus smaller
                small = 0 if mid - start <= stop - mid else 1
                _, s0, s1 = children[small]
                hists[small] = build_histograms(binned, order[s0:s1], g, h, active)
                hists[1 - small] = subtract_into(hist, hists[small])
            for (cid, c_start, c_stop), grow_it, c_hist in zip(children, grows, hists):
                if grow_it:
                    nxt.append((cid, c_start, c_stop, c_hist))
                else:
                    tree.leaves.append((cid, c_start, c_stop))
        frontier = nxt
    return tree
