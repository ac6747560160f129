"""Grow one regression tree level by level (as the seeds do), to max_depth.

Orchestration only: histograms, split search and partitioning are numba
kernels; this loop visits nodes, not rows.
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from .histogram import build_histograms, subtract
from .predictor import partition
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


def _sums(hist, f):
    """(G, H, N) of a node from any one active feature's histograms."""
    hg, hh, hc = hist
    return hg[f].sum(), hh[f].sum(), float(hc[f].sum())


def grow(binned, n_bins, rows, g, h, *, max_depth, min_samples_leaf, l2, penalty, active,
         on_split=None) -> Tree:
    """One tree.  ``penalty[f]`` is subtracted from every split's gain on f;
    ``on_split(f)`` may return a new penalty vector (immediate refunds)."""
    tree = Tree()
    f0 = int(np.flatnonzero(active)[0])
    hist = build_histograms(binned, rows, g, h, active)
    tree.sums.append(_sums(hist, f0))
    frontier = [(0, rows, hist)]
    for _ in range(max_depth):
        nxt = []
        for nid, node_rows, node_hist in frontier:
            G, H, N = tree.sums[nid]
            if N < 2 * min_samples_leaf:
                continue
            gains, bins, mleft = best_splits(*node_hist, n_bins, G, H, N, l2, min_samples_leaf,
                                             penalty, active)
            f = int(np.argmax(gains))
            if not gains[f] > 1e-12:
                continue
            lrows, rrows = partition(binned, node_rows, f, bins[f], mleft[f])
            small_is_left = lrows.shape[0] <= rrows.shape[0]
            h_small = build_histograms(binned, lrows if small_is_left else rrows, g, h, active)
            h_large = subtract(node_hist, h_small)
            hl, hr = (h_small, h_large) if small_is_left else (h_large, h_small)
            lid, rid = tree.add_children(nid, f, int(bins[f]), bool(mleft[f]))
            tree.sums.append(_sums(hl, f0))
            tree.sums.append(_sums(hr, f0))
            tree.split_gain.append((f, float(gains[f] + penalty[f])))
            if on_split is not None:
                new = on_split(f)
                if new is not None:
                    penalty = new
            nxt += [(lid, lrows, hl), (rid, rrows, hr)]
        frontier = nxt
    return tree
