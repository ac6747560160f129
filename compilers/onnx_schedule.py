"""When does each unit get paid?  The static schedule behind the ONNX graph.

An ONNX graph cannot walk one row at a time, so it cannot replay the
reference's acquisition order directly.  Instead this pass unrolls the
evaluation order of docs/costs.md once, at compile time, into numbered
*slots*: every place where a row may touch a unit (a tree's evaluation, each
depth of its path, a linear feature input, a support vector, a kernel's
features) gets a slot, in the order the reference would visit it.

Events live in *regions*: one per checkpoint of a control node (a cascade
stage, an anytime checkpoint, a classifier-tree node), or a single region
for a scoring output.  A row is *active* in a region when its routing
reaches it.  Within a region the reference's order is fixed; across the
active regions of one row it is slot order too (cascade stages run in
order; a classifier-tree path visits ancestors first, and the regions are
numbered so that ancestors come first).

Per row, a unit's slot is then the smallest slot among its events in active
regions: that is exactly when the reference first touches it (its later
touches are memoised).  Sorting a row's units by slot recovers its
acquisition order, so the graph can sum costs in that order in float64 and
stop at the first unit that does not fit the budget, as the reference does.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..ir.codes import KIND_CTREE, KIND_KERNEL, KIND_LINEAR, KIND_TREES, TERM_FEATURE, TERM_TREE
from ..ir.lowering import Tables


@dataclass
class TreePaths:
    """Per global tree node: its depth, its tree and its parent (-1 at
    roots).  ``tree_depth[t]`` is tree t's deepest path, so tree t reserves
    1 + tree_depth[t] slots."""

    depth: np.ndarray        # [M]
    tree_of: np.ndarray      # [M] global tree of each node
    parent: np.ndarray       # [M]
    tree_depth: np.ndarray   # [T]
    levels: list             # levels[d]: the nodes at depth d

    def path_features(self, feature, nodes):
        """[len(nodes), D] int32: the split features on the way to each node,
        root first, -1 past its depth (D: the largest depth, at least 1)."""
        out = np.full((nodes.size, max(1, int(self.depth[nodes].max(initial=0)))), -1, np.int32)
        row, up = np.arange(nodes.size), self.parent[nodes]
        while up.size:
            keep = up >= 0
            row, up = row[keep], up[keep]
            out[row, self.depth[up]] = feature[up]
            up = self.parent[up]
        return out


def tree_paths(tab: Tables, n_trees: int) -> TreePaths:
    """Level by level from the roots, vectorised over nodes.  (With no
    trees, the lowered tables hold one placeholder node: ignore it.)"""
    if n_trees == 0:
        z = np.zeros(0, np.int64)
        return TreePaths(z, z, z, z, [])
    M, T = tab.tn_feature.shape[0], tab.tree_root.shape[0]
    feature = tab.tn_feature
    depth = np.zeros(M, np.int64)
    tree_of = np.zeros(M, np.int64)
    parent = np.full(M, -1, np.int64)
    frontier = tab.tree_root.astype(np.int64)
    tree_of[frontier] = np.arange(T)
    levels = []
    while frontier.size:
        levels.append(frontier)
        inner = frontier[feature[frontier] >= 0]
        for child in (tab.tn_left[inner], tab.tn_right[inner]):
            depth[child] = depth[inner] + 1
            tree_of[child] = tree_of[inner]
            parent[child] = inner
        frontier = np.concatenate([tab.tn_left[inner], tab.tn_right[inner]]).astype(np.int64)
    tree_depth = np.zeros(T, np.int64)
    np.maximum.at(tree_depth, tree_of, depth)
    return TreePaths(depth, tree_of, parent, tree_depth, levels)


@dataclass
class Schedule:
    n_regions: int
    # tree evaluations: their path features take slots slot+1 ... slot+depth
    occ_region: np.ndarray
    occ_tree: np.ndarray
    occ_slot: np.ndarray
    # static events: (region, unit, slot); units are numbered by ``UnitLayout``
    ev_region: np.ndarray
    ev_unit: np.ndarray
    ev_slot: np.ndarray
    # checkpoints of the output, in the output's order
    cp_region: np.ndarray
    cp_end: np.ndarray       # a checkpoint is complete iff halting slot >= cp_end
    cp_order: np.ndarray     # position along a row's route (depth for classifier trees)
    n_slots: int             # every slot is below this: it stands for "never"


@dataclass(frozen=True)
class UnitLayout:
    """Cost units as columns: features, trees, then support vectors."""

    n_features: int
    n_trees: int
    n_sv: int

    @property
    def tree0(self):
        return self.n_features

    @property
    def sv0(self):
        return self.n_features + self.n_trees


class _Unroller:
    def __init__(self, tab: Tables, layout: UnitLayout, tree_depth):
        self.t, self.L, self.tree_depth = tab, layout, tree_depth
        self.slot = 0
        self.occ: list = []
        self.ev: list = []

    def tree(self, r, t, seen):
        if ("t", t) in seen:
            return
        seen.add(("t", t))
        self.occ.append((r, t, self.slot))
        self.ev.append((r, self.L.tree0 + t, self.slot))
        self.slot += 1 + int(self.tree_depth[t])

    def feature(self, r, j, seen):
        if ("f", j) in seen:
            return
        seen.add(("f", j))
        self.ev.append((r, j, self.slot))
        self.slot += 1

    def step(self, r, n, p, seen):
        """Step p of node n (a tree, a linear input, a support vector); returns
        a node to expand first, or None."""
        tab = self.t
        kind = tab.node_kind[n]
        if kind == KIND_TREES:
            self.tree(r, int(tab.node_first[n]) + p, seen)
        elif kind == KIND_LINEAR:
            term = tab.node_first[n] + p
            if tab.term_live[term]:
                tk, idx = tab.term_kind[term], int(tab.term_index[term])
                if tk == TERM_FEATURE:
                    self.feature(r, idx, seen)
                elif tk == TERM_TREE:
                    self.tree(r, idx, seen)
                elif ("n", idx) not in seen:
                    return idx
        else:
            q = tab.node_kernel[n]
            self.ev.append((r, self.L.sv0 + int(tab.k_svcost_first[q]) + p, self.slot))
            self.slot += 1
            if p == 0:
                f0 = tab.k_feat_first[q]
                for j in tab.k_feat[f0:f0 + tab.k_n_feat[q]]:
                    self.feature(r, int(j), seen)
        return None

    def node(self, r, n0, seen, ends=None):
        """Unroll node n0 depth first, as the reference evaluates it; with
        ``ends``, record the end slot of each of n0's own steps."""
        if ("n", n0) in seen:
            return
        stack = [[n0, 0]]
        while stack:
            n, p = stack[-1]
            if p == self.t.node_count[n]:
                seen.add(("n", n))
                stack.pop()
                continue
            first = self.step(r, n, p, seen)
            if first is not None:
                stack.append([first, 0])   # revisit this step once ``first`` is done
                continue
            stack[-1][1] = p + 1
            if ends is not None and len(stack) == 1:
                ends.append(self.slot)


def control_depths(left, right) -> np.ndarray:
    depth = np.zeros(len(left), np.int64)
    frontier = np.array([0])
    while frontier.size:
        inner = frontier[left[frontier] >= 0]
        for child in (left[inner], right[inner]):
            depth[child] = depth[inner] + 1
        frontier = np.concatenate([left[inner], right[inner]])
    return depth


def schedule(tab: Tables, layout: UnitLayout, tree_depth) -> Schedule:
    u = _Unroller(tab, layout, tree_depth)
    top, kind = tab.top, tab.top_kind
    if kind <= KIND_KERNEL:
        ends: list = []
        u.node(0, top, set(), ends)
        C = len(ends)
        cp_region, cp_end, cp_order = np.zeros(C, np.int64), np.array(ends, np.int64), np.arange(C)
        n_regions = 1
    else:
        scorers = tab.ctl_scorer
        C = scorers.shape[0]
        if kind == KIND_CTREE:
            cp_order = control_depths(tab.ctl_left, tab.ctl_right)
            # regions in pre-order, so that every ancestor's slots come first
            order, stack = [], [0]
            while stack:
                c = stack.pop()
                order.append(c)
                if tab.ctl_left[c] >= 0:
                    stack.extend([int(tab.ctl_right[c]), int(tab.ctl_left[c])])
        else:  # cascade stages and anytime checkpoints run in their order
            cp_order, order = np.arange(C), list(range(C))
        cp_end = np.zeros(C, np.int64)
        for c in order:
            u.node(c, int(scorers[c]), set())
            cp_end[c] = u.slot
        cp_region, n_regions = np.arange(C), C

    def cols(rows, k):
        return np.array([x[k] for x in rows], np.int64)

    return Schedule(n_regions, cols(u.occ, 0), cols(u.occ, 1), cols(u.occ, 2),
                    cols(u.ev, 0), cols(u.ev, 1), cols(u.ev, 2),
                    cp_region, cp_end, np.asarray(cp_order, np.int64), u.slot)
