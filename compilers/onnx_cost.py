"""The exact ONNX graph's lazy cost: when each unit is first touched, what a
row pays, and where its budget halts it (docs/onnx.md).

* ``touch/…``: the static schedule (onnx_schedule.py) numbers every place a
  unit can be touched.  Per row, bit sets of the features on each reached
  leaf's path (a table lookup by leaf), searched for each feature's first
  tree (a segment tree of BitwiseOr), give each feature the slot of its
  first touch in an active region; groups take their first member's slot.
* ``pay/…``: TopK sorts the paid units into acquisition order and CumSum
  adds their costs in float64 in that order, as the reference does; the
  budget halts the row at the first unit whose running sum exceeds it.
"""
from __future__ import annotations

import copy
from fractions import Fraction

import numpy as np
from onnx import TensorProto

from .onnx_graph import bit_layout, expand_rows, filled, first_set_bits, rows_like
from .onnx_values import Part, Setup, Values

WORDS_PER_STEP = 4      # bit-set words searched together (4 x 31 features)
DENSE_TABLE_BYTES = 1 << 26     # Costs._dense: the latency schedule's slot table, at most 64 MiB
PAIRWISE_UNITS = 64         # Costs._pay_pairwise: [N, U, U] comparisons for at most this many paid units
TOUCH_VOTES_PER_LEAF = 2.0   # Costs.touch_votes: below this many votes per leaf, votes beat the gather
F32, F64, I64, BOOL = TensorProto.FLOAT, TensorProto.DOUBLE, TensorProto.INT64, TensorProto.BOOL


class Costs(Part):
    """First touches, payments and the halting slot (reads ``Values`` for
    the leaves the trees reach)."""

    def __init__(self, setup: Setup, values: Values, routes=None):
        super().__init__(setup)
        self.values = values
        # classifier trees: (regions of each route, [N] route of each row);
        # per-region constants then reduce per route at compile time, and a
        # row gathers its route's row ([N, units], never [N, regions, units])
        self.routes = routes
        self._start = None      # [rows, T] leaf starts, set by ``on_rows`` for a subset of rows
        self.h_col = None       # [N, 1] halting slots, when ``halt`` has them in that shape too
        # ``_pay_sorted``: halting slots minus this (slots - never, <= 0),
        # and their int64 [N, 1] form for lookups (negative indices)
        self.h_shift = 0
        self.h_index = None
        self.used = None        # features_used [N, F], when the halt computed it (_pay_sorted)

    # -- touch: the slot of each unit's first touch -------------------------
    def first_touches(self, flat=False):
        """[N, R, F] int64, or None: per region, the first slot at which a
        tree path touches each feature, ``never`` if no path does.

        No per-path work in a second tree operator: the leaf numbers of
        ``leaf`` say which path each tree took.  A table gives each leaf the
        set of features on its path as a bit set (``bit_layout``: int32
        words of up to 31 features), so a region's trees give [W N, trees]
        bit sets, words stacked as rows.
        ``first_set_bits`` finds, per feature, the first tree whose set has
        it (a segment tree of BitwiseOr, then a descent: log2(trees) steps);
        the depth of the feature on that tree's path comes from a second
        table, and the slot is that tree's slot + 1 + depth.  ``flat``: one
        region and a dense search (``_dense``) give [N, F] instead."""
        sc, g = self.sched, self.g
        F, R, T = self.F, sc.n_regions, self.layout.n_trees
        flat = flat and R == 1 and self._dense()
        if T == 0:
            return None
        # first touches voted by the tree operator read no leaf starts
        start = None if self.values.first_slots is not None else self._leaf_start()
        sets, by_start, n_starts, W, B = self._path_bits()
        if self.routes is not None:
            return self._route_touches(start, sets, by_start, n_starts, W, B)
        regions = []
        for r in range(R):
            with g.scope(f"touch/region{r}", root=True):
                occ = np.flatnonzero(sc.occ_region == r)
                if not occ.size:
                    regions.append(rows_like(g, self.X, self.never, np.int64, (1, F)))
                    continue
                # no leaf starts when the tree operator votes the first touches: nothing to gather
                # (a region whose trees are not in layout order gathered from None)
                cols = None if start is None else self._region_starts(start, sc.occ_tree[occ])
                if self._dense():
                    y = self._first_slots_dense(cols, sc.occ_tree[occ], sc.occ_slot[occ])
                    regions.append(y if flat else g.unsqueeze(y, [1]))
                    continue
                # a few words at a time: [words N, trees] and [N, features, depth]
                # intermediates stay bounded however many features there are
                steps = []
                for w0 in range(0, W, WORDS_PER_STEP):
                    with g.scope(f"features{w0 * B}"):
                        steps.append(self._first_slots(cols, sc.occ_slot[occ], sets[w0:w0 + WORDS_PER_STEP], B,
                                                       np.arange(w0 * B, min(F, (w0 + WORDS_PER_STEP) * B)),
                                                       by_start))
                regions.append(g.unsqueeze(g.concat(steps, 1), [1]))
        with g.scope("touch/features", root=True):
            y = g.concat(regions, 1)
            static = self._static_features()
            if flat and y is regions[0] and static.shape[0] == 1:
                static = static[0]       # [N, F] already (the latency schedule's one region)
            return g.op("Min", y, g.const(static[None])) if np.any(static < self.never) else y

    def _leaf_start(self):
        """[rows, T] int32: where the values of each tree's leaf start."""
        return self.values.leaf()[0] if self._start is None else self._start

    def _path_bits(self):
        """(sets [W, leaf starts] int32, by_start [leaf starts, D] int32,
        number of leaf starts, W, B): per leaf start, the features on its
        path as bit sets (``bit_layout``) and by depth (-1 past the leaf)."""
        t, lay = self.t, self.values.leaf_layout()
        on_path = self.paths.path_features(t.tn_feature, lay.leaves)       # [leaves, D]
        by_start = np.full((len(lay.vals), on_path.shape[1]), -1, np.int32)
        by_start[lay.start] = on_path
        W, B = bit_layout(self.F)
        sets = np.zeros((W, len(lay.vals)), np.int32)
        row, d = np.nonzero(by_start >= 0)
        f = by_start[row, d]
        np.bitwise_or.at(sets, (f // B, row), np.int32(1) << (f % B))
        return sets, by_start, len(lay.vals), W, B

    def _region_starts(self, start, trees):
        """[rows, len(trees)]: the leaf starts of a region's trees."""
        T = self.layout.n_trees
        return start if np.array_equal(trees, np.arange(T)) else self.g.gather(start, trees, 1)

    def _route_touches(self, start, sets, by_start, n_starts, W, B):
        """Classifier trees: [N, F] int64, per row the first slot at which a
        tree path on its route touches each feature.  A row is in one region
        per depth of the classifier tree, so the search runs once per depth
        over that region's trees, gathered per row ([N, most trees of a
        region at that depth]), and the smallest slot over depths wins.
        Padding points at an appended leaf start with no features."""
        g, sc, F, T = self.g, self.sched, self.F, self.layout.n_trees
        regions, which = self.routes
        if not np.isin(sc.occ_region, np.concatenate(regions)).any():
            return None       # no tree on any route: static touches only
        sets = np.concatenate([sets, np.zeros((W, 1), np.int32)], 1)
        by_start = np.concatenate([by_start, np.full((1, by_start.shape[1]), -1, np.int32)], 0)
        with g.scope("touch/routes", root=True):
            start = g.concat([start, rows_like(g, self.X, n_starts, np.int32, (1,))], 1)   # [N, T + 1]
        depths = []
        for d in range(max(len(r) for r in regions)):
            at = sorted({int(r[d]) for r in regions if len(r) > d})
            occ = [np.flatnonzero(sc.occ_region == r) for r in at]
            n = max(o.size for o in occ)
            if n == 0:
                continue
            trees = np.full((len(at) + 1, n), T, np.int64)               # last row: no region
            slots = np.full((len(at) + 1, n + 1), self.never, np.int64)
            for k, o in enumerate(occ):
                trees[k, :o.size], slots[k, :o.size] = sc.occ_tree[o], sc.occ_slot[o] + 1
            pick = np.array([at.index(int(r[d])) if len(r) > d else len(at) for r in regions], np.int64)
            with g.scope(f"touch/depth{d}", root=True):
                k = g.op("Gather", g.const(pick), which)
                cols = g.op("GatherElements", start, g.op("Gather", g.const(trees), k), axis=1)
                slot_rows = g.op("Gather", g.const(slots), k)
                steps = []
                for w0 in range(0, W, WORDS_PER_STEP):
                    with g.scope(f"features{w0 * B}"):
                        steps.append(self._first_slots(cols, np.zeros(n, np.int64), sets[w0:w0 + WORDS_PER_STEP], B,
                                                       np.arange(w0 * B, min(F, (w0 + WORDS_PER_STEP) * B)),
                                                       by_start, slot_rows))
                depths.append(g.concat(steps, 1))
        with g.scope("touch/features", root=True):
            y = depths[0]
            for z in depths[1:]:
                y = g.op("Min", y, z)
            return g.op("Min", y, self.static_active(self._static_features(), None))

    def _dense(self):
        """The latency schedule's first-touch search: per region, a table of
        the slot at which each leaf's path first touches each feature, so
        that a row's first touches are one lookup and one ``ReduceMin`` over
        [rows, trees, F] (4 ops instead of a segment tree's 8 per level of
        it, at the price of a [leaf starts, F] table: int16 when the slots
        allow, int32 otherwise), while that table stays within
        ``DENSE_TABLE_BYTES``; past it, the segment-tree search."""
        if not (self.small and self.never < (1 << 30)):
            return False
        if not self.layout.n_trees:
            return True          # no path to search: static touches only
        return self._slot_table_fits(2 if self.never < np.iinfo(np.int16).max else 4)

    def _depth_table(self):
        """[leaf starts, F] int64: the depth at which each leaf's path first
        splits on each feature, -1 where it does not."""
        _, by_start, n_starts, _, _ = self._path_bits()
        table = np.full((n_starts, self.F + 1), -1, np.int64)
        for d in range(by_start.shape[1] - 1, -1, -1):       # the shallowest depth last: it wins
            table[np.arange(n_starts), by_start[:, d]] = d      # -1 lands in the last column
        return table[:, :self.F]

    def _first_slots_dense(self, cols, trees, slots):
        """[N, F] int64: the first slot at which ``trees`` (evaluated at
        ``slots``), whose leaf starts are ``cols`` [N, n], touch each
        feature: the smallest of a table's slot + 1 + depth, 'never' where
        no path has it."""
        g = self.g
        if self.values.first_slots is not None:       # voted by the tree operator (``first_slot_votes``)
            if self.sorted_halt():
                return self.values.ensemble()["first_slots"]      # slot - never, int64 (``_pay_sorted``)
            with g.scope("first_tree"):
                y = g.op("Add", self.values.ensemble()["first_slots"], g.const(np.float32(self.never)))
                return g.cast(y, I64)
        table = self._first_slot_table(trees, slots)
        small = self.never < np.iinfo(np.int16).max
        with g.scope("first_tree"):
            at = g.op("Gather", g.const(table.astype(np.int16 if small else np.int32)), cols)     # [N, n, F]
            if small:
                at = g.cast(at, TensorProto.INT32)
            return g.cast(g.op("ReduceMin", at, g.const([1], np.int64), keepdims=0), I64)

    def _first_slot_table(self, trees, slots):
        """[leaf starts, F] int64: the slot at which each leaf's path (of
        ``trees``, evaluated at ``slots``) first touches each feature,
        'never' where it does not."""
        lay = self.values.leaf_layout()
        tree_slot = np.full(self.layout.n_trees, -1, np.int64)
        tree_slot[trees] = slots
        # per leaf start: its tree's slot (-1: a tree not in this region, never read)
        start_slot = np.full(len(lay.vals), -1, np.int64)
        start_slot[lay.start] = tree_slot[self.paths.tree_of[lay.leaves]]
        depth = self._depth_table()
        return np.where((depth >= 0) & (start_slot[:, None] >= 0), start_slot[:, None] + 1 + depth, self.never)

    def first_slot_votes(self, mask, with_budget):
        """The ``first_slots`` table for the tree operator to vote (``Values.first_slots``),
        or None: with a budget, one region of every tree and one route (the
        first touches then need no search), with the TreeEnsembleRegressor
        (a leaf votes for several targets) and each tree's leaf start (in
        the batch schedule, its leaf number, or a float32 bank's leaf
        value) voted on its own target.
        The latency schedule: against the ``Gather`` of [rows, trees, F]
        slots and its ``ReduceMin`` (and the int16 table's ``Cast``), a few
        more votes per reached leaf.  The batch schedule, when the features
        are the only paid units and cost the same (``voted_halt``): against
        the segment-tree search of every row over its budget, whose bit-set
        gathers cost more than the operator it follows (docs/onnx.md)."""
        sc, T = self.sched, self.layout.n_trees
        if not (with_budget and self.op == "TreeEnsembleRegressor" and mask is None
                and self.routes is None and sc.n_regions == 1 and T and self.values._starts_fit()):
            return None
        if not (self._dense() and not self.lazy(mask, with_budget) if self.small else self.voted_halt()):
            return None
        occ = np.flatnonzero(sc.occ_region == 0)
        if not np.array_equal(np.sort(sc.occ_tree[occ]), np.arange(T)):
            return None
        return self._first_slot_table(sc.occ_tree[occ], sc.occ_slot[occ])

    def _first_slots(self, cols, slots, sets, B, features, by_start, slot_rows=None):
        """[N, len(features)] int64: the first slot at which the trees whose
        leaf starts are ``cols`` [N, n] (evaluated at ``slots``, or per row
        at ``slot_rows`` [N, n + 1] - 1, 'never' last) touch ``features``,
        whose bits ``sets`` [words, leaf starts] hold."""
        g, n = self.g, slots.size
        per_word = g.op("Reshape", g.op("Gather", g.const(sets), cols, axis=1),
                        g.const([-1, n], np.int64))                          # [words N, trees]
        with g.scope("first_tree"):
            first = first_set_bits(g, per_word, n, B, sets.shape[0])
        if sets.shape[0] * B > features.size:
            first = g.slice(first, 0, features.size, 1)                     # [N, f]: which tree
        leaf_at = g.op("GatherElements", cols, g.op("Min", first, g.const(np.int32(n - 1))), axis=1)
        path = g.op("Gather", g.const(by_start), leaf_at)                  # [N, f, D]
        # tiled to [1, f, D]: onnxruntime broadcasts along the outer axis only quickly
        ids = np.repeat(features.astype(np.int32)[None, :, None], by_start.shape[1], 2)
        depth = g.op("ArgMax", g.cast(g.op("Equal", path, g.const(ids)), TensorProto.UINT8),
                     axis=2, keepdims=0)
        # "none" looks up 'never'; its depth lookup adds 0, since the
        # feature is on no path of these trees, so on none of leaf_at's
        if slot_rows is not None:
            return g.op("Add", g.op("GatherElements", slot_rows, g.cast(first, I64), axis=1), depth)
        return g.op("Add", g.op("Gather", g.const(np.r_[slots + 1, self.never]), first), depth)

    def static(self, units):
        """[R, len(units)] int64: per region, the first static event of each unit."""
        sc = self.sched
        col = np.full(self.layout.n_features + self.layout.n_trees + self.layout.n_sv, -1, np.int64)
        col[units] = np.arange(len(units))
        out = np.full((sc.n_regions, len(units)), self.never, np.int64)
        keep = col[sc.ev_unit] >= 0
        np.minimum.at(out, (sc.ev_region[keep], col[sc.ev_unit[keep]]), sc.ev_slot[keep])
        return out

    def _static_features(self):
        """[R, F]: per region, the first static event (a linear input, a
        kernel) of each feature."""
        return self.static(np.arange(self.F))

    def first_active(self, per_region, mask, per_row):
        """Slots per region, [N, R, U] (or a constant [1, R, U] when not
        ``per_row``) -> [N, U]: the smallest among the row's active regions."""
        g = self.g
        if mask is None:
            one = g.squeeze(per_region, [1])
            return one if per_row else expand_rows(g, self.X, one)
        hidden = g.where(g.unsqueeze(mask, [2]), per_region, g.const(self.never))
        return g.op("ReduceMin", hidden, g.const([1], np.int64), keepdims=0)

    def static_active(self, per_region, mask):
        """Constant slots per region, [R, U] -> [N, U]: the smallest among
        the row's active regions (per route at compile time when the regions
        are a classifier tree's)."""
        if self.routes is None:
            return self.first_active(self.g.const(per_region[None]), mask, per_row=False)
        regions, which = self.routes
        table = np.stack([per_region[r].min(0) for r in regions])
        return self.g.op("Gather", self.g.const(table), which, axis=0)

    def feature_slots(self, mask):
        """[N, F] int64: per row, the slot of each feature's first touch."""
        flat = (mask is None and self.routes is None and self.sched.n_regions == 1 and self._dense()
                and bool(np.any(self.sched.occ_region == 0)))
        paths = self.first_touches(flat)
        with self.g.scope("touch/features", root=True):
            if paths is None:
                return self.static_active(self._static_features(), mask)
            if self.routes is not None or flat:
                return paths          # already [N, F]: the row's route, or the one region
            return self.first_active(paths, mask, per_row=True)

    # -- pay: the acquisition order, the running cost, the halt -------------
    def _paid_units(self):
        """(groups, features, trees, support vectors) with a cost, and their
        costs (float64) in the order ``_unit_slots`` lays their slots out."""
        t, L = self.t, self.layout
        fc, gc = self.m.feature_costs, self.m.group_costs
        feats = np.flatnonzero(fc > 0)
        trees = np.flatnonzero(t.tree_cost[:L.n_trees] > 0)
        svs = np.flatnonzero(t.sv_cost[:L.n_sv] > 0)
        groups = np.flatnonzero(gc > 0) if len(self.m.groups) else np.zeros(0, np.int64)
        costs = np.concatenate([gc[groups], fc[feats], t.tree_cost[trees], t.sv_cost[svs]]).astype(np.float64)
        return (groups, feats, trees, svs), costs

    def _unit_slots(self, feat_slots, mask):
        """[[N, units] int64, ...] (empty if no unit has a cost): per row,
        the slot of each paid unit, in ``_paid_units``' order, in parts."""
        g, L = self.g, self.layout
        (groups, feats, trees, svs), _ = self._paid_units()
        # groups: paid at the first touch of any member, together with it
        fg = self.m.feature_groups
        G = len(self.m.groups)
        group_slots = None
        if groups.size:
            with g.scope("touch/groups", root=True):
                idx = expand_rows(g, self.X, g.const(np.where(fg >= 0, fg, G).astype(np.int64)[None]))
                group_slots = g.op("ScatterElements", rows_like(g, self.X, self.never, np.int64, (G + 1,)),
                                   idx, feat_slots, axis=1, reduction="min")
        # A group shares its slot with the member that pays it and must be
        # paid just before it: groups come first, and TopK breaks ties by
        # position (the ONNX spec; tested)
        parts = []
        with g.scope("pay/units", root=True):
            if groups.size:
                parts.append(g.gather(group_slots, groups, 1))
            if feats.size:
                parts.append(feat_slots if feats.size == self.F else g.gather(feat_slots, feats, 1))
            others = np.concatenate([L.tree0 + trees, L.sv0 + svs])
            if others.size:
                parts.append(self.static_active(self.static(others), mask))
            return parts

    def halt(self, feat_slots, mask, with_budget, in_order=False):
        """(halting slot [N] int64, cost [N] float64): per row, the slot of
        the first unit its budget cannot pay (``never`` if none) and what
        it paid before it.  ``mask`` [N, R] marks the regions on the row's
        route (None: one route).  ``in_order``: sort every row (the rows
        are already the ones over their budget)."""
        g, L = self.g, self.layout
        parts = self._unit_slots(feat_slots, mask)
        _, costs = self._paid_units()
        budget = self.budget if with_budget else None
        never = None
        self.h_col = None
        # a negative budget halts at the very first unit, even a free one
        first_static = self.static(np.arange(L.n_features + L.n_trees + L.n_sv)).min(1, keepdims=True)
        slot0 = mask is None and self.routes is None and first_static[0, 0] == 0
        if self.sorted_halt():
            # first_touches gave the tree operator's float32 votes, which only
            # _pay_sorted reads: it sorts [rows, features + 1], so it takes
            # any number of features (the pairwise limit is not its own)
            if budget is None or not slot0 or in_order or not parts:
                raise AssertionError("sorted halt without a budget, a static slot 0 or paid features")
            with g.scope("pay/guarded", root=True):
                h, cost, self.h_col, self.h_index = self._pay_sorted(feat_slots, costs, budget)
                self.h_shift = int(self.never)
                return h, cost
        pairwise = (self.small and budget is not None and costs.size <= PAIRWISE_UNITS and parts
                    and exact_in_any_order(costs) and not in_order)
        if not pairwise:     # _pay_pairwise needs none
            with g.scope("pay/units", root=True):
                never = rows_like(g, self.X, self.never, np.int64)
        with g.scope("pay", root=True):
            if not parts:
                h, cost = never, rows_like(g, self.X, 0.0, np.float64)
            elif in_order:
                h, cost = self._pay_in_order(g.concat(parts, 1), costs, budget, never)
            elif pairwise:
                # slot 0 is static: the negative budget's halt is the pairwise search's
                h, cost, self.h_col = self._pay_pairwise(g.concat(parts, 1), costs, budget, slot0=slot0)
                if slot0:
                    return h, cost
            else:
                h, cost = self._pay(g.concat(parts, 1), costs, budget, never)
        if budget is not None:
            self.h_col = None
            with g.scope("pay/negative_budget", root=True):
                if slot0:
                    first = g.const(np.int64(0))      # slot 0 is static: the first unit of every row
                else:
                    first = g.op("Min", g.op("ReduceMin", feat_slots, g.const([1], np.int64), keepdims=0),
                                 g.squeeze(self.static_active(first_static, mask), [1]))
                h = g.where(g.op("Less", budget, g.const(np.float64(0))), first, h)
        return h, cost

    # -- the same, searching only the rows over their budget -----------------
    def lazy(self, mask, with_budget=True):
        """Whether ``halt_lazy`` applies: one route through the trees, and
        costs that add exactly in any order (``exact_in_any_order``); in
        the latency schedule only without a budget (no subset of rows)."""
        _, costs = self._paid_units()
        sc = self.sched
        return ((not self.small or not with_budget) and self.routes is None and mask is None and sc.n_regions == 1
                and np.any(sc.occ_region == 0)
                and costs.size > 0 and exact_in_any_order(costs))

    def touched_features(self):
        """[N, F] bool: the features a row touches at all (on a reached
        leaf's path, or a static event), without the first-touch search:
        the BitwiseOr of the region's path bit sets, halving the trees."""
        g, sc, F = self.g, self.sched, self.F
        if self.values.touch_votes is not None:
            with g.scope("touch/union", root=True):
                touched = g.op("Greater", self.values.touch_counts(), g.const(np.float32(0)))
                always = self.always_touched()
                if np.any(always):
                    touched = g.op("Or", touched, g.const(always[None]))
                return self._or_static(touched)
        sets, _, _, W, B = self._path_bits()
        with g.scope("touch/union", root=True):
            occ = np.flatnonzero(sc.occ_region == 0)
            trees = sc.occ_tree[occ]
            # tree-major in the batch schedule; [N, T] in the latency one (``Values.leaf``)
            ax = 1 if self.small else 0
            major = self.values.leaf()[0] if self.small else self.values.leaf_major()[0]
            cols = major if np.array_equal(trees, np.arange(self.layout.n_trees)) else g.gather(major, trees, ax)
            n = occ.size
            # tree-major leaf starts ([starts, W], Gather on axis 0 runs about
            # twice as fast as on axis 1 of [W, starts]): [n, N, W], so that
            # the halves below are contiguous blocks
            u = g.op("Gather", g.const(np.ascontiguousarray(sets.T)), cols, axis=0)
            while n > 1:
                # the first and the last ceil(n / 2) trees: a union does not
                # mind the order, nor the middle tree twice when n is odd
                c = (n + 1) // 2
                u = g.op("BitwiseOr", g.slice(u, 0, c, ax), g.slice(u, n - c, n, ax))   # [c, N, W]
                n = c
            bits = np.int32(1) << np.arange(B, dtype=np.int32)
            cols = g.op("Reshape", g.op("BitwiseAnd", g.op("Reshape", u, g.const([-1, W, 1], np.int64)),
                                        g.const(np.tile(bits, (W, 1))[None])),
                        g.const([-1, W * B], np.int64))                          # [N, W B]
            if W * B > F:
                cols = g.slice(cols, 0, F, 1)
            touched = g.op("Not", g.op("Equal", cols, g.const(np.int32(0))))
            return self._or_static(touched)

    def _or_static(self, touched):
        """``touched`` [N, F], or the features a static event touches."""
        static = self._static_features()[0]
        if np.any(static < self.never):
            touched = self.g.op("Or", touched, self.g.const(static[None] < self.never))
        return touched

    def _on_path(self):
        """([leaves, F] bool, [leaves] tree): per reached leaf, the features
        on its path."""
        lay = self.values.leaf_layout()
        on_path = self.paths.path_features(self.t.tn_feature, lay.leaves)     # [leaves, D], -1 past the leaf
        has = np.zeros((lay.leaves.size, self.F + 1), bool)
        has[np.arange(lay.leaves.size)[:, None], on_path] = True               # -1 lands in the last column
        return has[:, :self.F], self.paths.tree_of[lay.leaves]

    def always_touched(self):
        """[F] bool: features on every path of some tree of the one region,
        which every row evaluates: every row touches them."""
        has, tree = self._on_path()
        starts = np.r_[0, np.flatnonzero(np.diff(tree)) + 1]     # leaves come tree by tree
        every = np.logical_and.reduceat(has, starts, axis=0)
        occ = self.sched.occ_tree[self.sched.occ_region == 0]
        return every[np.isin(tree[starts], occ)].any(0)

    def touch_votes(self):
        """The features whose path counts the tree operator should give
        (``Values.touch_votes``), or None when gathering each tree's path
        bit set and OR-ing them costs less.  A vote adds one number per
        reached leaf and row in the operator; the gather copies one bit set
        per tree and row (measured, 1000 LightGBM trees, 20,000 rows, one
        thread: a Gather of [trees, rows] 165 ms, about 2.3 votes per leaf
        as much).  Features every row touches (``always_touched``) need no
        vote; so the votes win when the leaves' paths hold fewer than
        ``TOUCH_VOTES_PER_LEAF`` others on average."""
        if not self.count_touches():
            return None
        has, _ = self._on_path()
        rest = ~self.always_touched()
        if has[:, rest].sum() > TOUCH_VOTES_PER_LEAF * has.shape[0]:
            return None
        return np.flatnonzero(rest & has.any(0))

    def count_touches(self):
        """Whether every tree of the ensemble is evaluated in the one region
        (a tree the model never reads must not count)."""
        sc = self.sched
        occ = sc.occ_tree[sc.occ_region == 0]
        return np.array_equal(np.unique(occ), np.arange(self.layout.n_trees))

    def on_rows(self, rows):
        """These costs over the rows ``rows`` [M, 1] only."""
        sub = copy.copy(self)
        g = self.g
        sub.X = g.op("GatherND", self.X, rows)
        if self.layout.n_trees and not self.values.need_starts:
            sub._start = self.values.leaf_rows(sub.X)       # a tree operator over these rows only
        elif self.layout.n_trees:
            # the rows' columns of the tree-major starts, then [M, T]
            flat = g.op("Reshape", rows, g.const([-1], np.int64))
            local = self.values.leaf_major_local()
            if local is None or self.values.has_major():
                cols = g.op("Gather", self.values.leaf_major()[0], flat, axis=1)
            else:       # the tables' offsets on these rows only, not on [T, N]
                cols = self.values.global_starts(g.op("Gather", local, flat, axis=1), 0)
            sub._start = g.op("Transpose", cols, perm=[1, 0])
        if self.budget is not None:
            sub.budget = g.op("GatherND", self.budget, rows)
        return sub

    def halt_lazy(self, with_budget, with_used):
        """(halting slot [N], cost [N], features_used [N, F] or None), as
        ``feature_slots`` and ``halt`` give them, when ``lazy`` holds.  A
        row within its budget halts nowhere, pays every unit it touches and
        used every feature it touched: the union of its paths' features says
        that, and the first-touch search, the sort and the halt run only on
        the rows over their budget (a negative budget is one: every cost is
        >= 0), gathered and scattered back.  The padding row (budget -1) is
        always among them, so no op sees an empty batch."""
        g = self.g
        touched = self.touched_features()
        _, costs = self._paid_units()
        (groups, feats, trees, svs), _ = self._paid_units()
        with g.scope("pay/total", root=True):
            if groups.size:
                proxy = g.where(touched, g.const(np.int64(0)), g.const(self.never))
                paid = g.cast(g.op("Less", g.concat(self._unit_slots(proxy, None), 1), g.const(self.never)), F64)
                total = g.op("ReduceSum", g.op("Mul", paid, g.const(costs[None])), g.const([1], np.int64),
                             keepdims=0)
            else:
                # no group: the touched features' costs, plus the trees and
                # support vectors of the one region (every row evaluates them),
                # exact in any order
                fc = self.m.feature_costs
                if feats.size:
                    total = self._mask_cost(touched if feats.size == self.F else g.gather(touched, feats, 1),
                                            fc[feats].astype(np.float64))
                else:
                    total = rows_like(g, self.X, 0.0, np.float64)
                others = np.concatenate([self.layout.tree0 + trees, self.layout.sv0 + svs])
                at = self.static(others)[0] if others.size else np.zeros(0, np.int64)
                fixed = float(np.sum(costs[feats.size:][at < self.never]))
                if fixed:
                    total = g.op("Add", total, g.const(np.float64(fixed)))
            # the latency schedule: 2 ops from the row count of the total
            # instead of rows_like's 6 (a constant [1] expanded to X's rows)
            never = filled(g, total, self.never, np.int64) if self.small else rows_like(g, self.X, self.never, np.int64)
        if not with_budget:
            return never, total, (touched if with_used else None)
        with g.scope("pay/over_budget", root=True):
            rows = g.op("Reshape", g.op("NonZero", g.op("Greater", total, self.budget)),
                        g.const([-1, 1], np.int64))                               # [M, 1]
            sub = self.on_rows(rows)
        with g.scope("pay/over_budget", root=True):
            slots = sub.feature_slots(None)
            h, cost = sub.halt(slots, None, True, in_order=True)
        with g.scope("pay/over_budget/back", root=True):
            used = None
            if with_used:
                used = g.op("ScatterND", touched, rows, g.op("Less", slots, g.unsqueeze(h, [1])))
            return g.op("ScatterND", never, rows, h), g.op("ScatterND", total, rows, cost), used

    def _pay(self, slots, costs, budget, never):
        """Per row: the halting slot ('never' if none) and the cost paid
        before it, as the reference's acquisition order gives them.

        When every partial sum of the costs is exact in float64
        (``exact_in_any_order``: e.g. integer costs), the order of the
        additions cannot change the bits, so the whole cost of a row is one
        reduction, and only the rows whose whole cost exceeds their budget
        need the sort that finds where they halt."""
        if not exact_in_any_order(costs):
            return self._pay_in_order(slots, costs, budget, never)
        g = self.g
        with g.scope("total"):
            total = self._mask_cost(g.op("Less", slots, g.const(self.never)), costs)
        if budget is None:
            return never, total
        if self.small:
            return self._pay_in_order(slots, costs, budget, never)
        with g.scope("over_budget"):
            rows = g.op("Reshape", g.op("NonZero", g.op("Greater", total, budget)),
                        g.const([-1, 1], np.int64))                               # [M, 1]

            def some(x):
                return g.op("GatherND", x, rows)
            slots, budget, never_some = some(slots), some(budget), some(never)
            h, cost = self._pay_in_order(slots, costs, budget, never_some)
            return g.op("ScatterND", never, rows, h), g.op("ScatterND", total, rows, cost)

    def _mask_cost(self, mask, costs):
        """[N] float64: per row, the sum of ``costs`` [U] where ``mask``
        [N, U] (bool) holds, for costs whose every subset sum is exact in
        float64 (``exact_in_any_order``), so that the order of the additions
        does not matter.  Equal costs c: c times a count (a float32 sum of
        ones, exact below 2^24; c * k is itself a subset sum, so the product
        is exact); equal costs not exact in any order (``halt_voted`` only):
        the sum of k units paid one after another, the running sums of the
        costs read by the count.  Costs exact in float32 in any order
        (``exact_in_any_order(costs, 24)``): a float32 ``MatMul`` with the
        costs (every product is 0 or a cost).  Otherwise float64 ``Mul``
        and ``ReduceSum`` (a float64 ``MatMul`` took 3x as long).  Measured,
        4096 rows x 50 units, one thread: 49 / 91 / 204 us."""
        g = self.g
        if costs.size and np.all(costs == costs[0]) and costs.size < 2 ** 24:
            n = g.op("ReduceSum", g.cast(mask, F32), g.const([1], np.int64), keepdims=0)
            if not exact_in_any_order(costs):
                # one cost, not exact in every order (``halt_voted``): the
                # marked units paid one after another, c added k times in
                # order, a table of the running sums read by the count
                return g.op("Gather", g.const(np.r_[0.0, np.cumsum(costs)]), g.cast(n, I64))
            n = g.cast(n, F64)
            return n if costs[0] == 1 else g.op("Mul", n, g.const(np.float64(costs[0])))
        if exact_in_any_order(costs, 24):
            s = g.op("MatMul", g.cast(mask, F32), g.const(costs.astype(np.float32)[:, None]))
            return g.cast(g.op("Reshape", s, g.const([-1], np.int64)), F64)
        return g.op("ReduceSum", g.op("Mul", g.cast(mask, F64), g.const(costs[None])), g.const([1], np.int64),
                    keepdims=0)

    def _pay_pairwise(self, slots, costs, budget, slot0=False):
        """(h [N], cost [N], h [N, 1]): ``_pay`` without a sort, for costs
        exact in any order and a few units (the latency schedule: no subset
        of rows, whose gather and scatter cost more ops than they save on a
        few rows): a unit's running cost is the sum of the costs of the
        units with a slot up to its own ([N, U, U] comparisons of slots,
        then a MatMul with the costs: exact, whatever order it adds in).  A
        group and the member that pays it share a slot, so they fit the
        budget or halt together, as in ``_pay_in_order`` (which pays the
        slots before the halting one).  The row halts at the first slot
        whose running cost exceeds the budget; the running cost only grows,
        so the units paid are the touched ones within it, and the cost is
        the largest running cost among them (0 if none).

        ``slot0``: slot 0 is static, where a negative budget halts (``halt``);
        a free unit at slot 0 put in front is over exactly such a budget
        (its running cost, 0 plus the costs of any unit at slot 0, exceeds
        a budget below 0, or one that unit's own slot 0 exceeds too), so the
        search gives that halt, and the unit adds 0 to every running cost.
        Units stay on axis 1 of [N, U, 1] (the MatMul's shape) to the end:
        no Squeeze of the running costs."""
        g = self.g
        with g.scope("pairwise"):
            if slot0:
                slots = g.op("Pad", slots, g.const(np.array([0, 1, 0, 0], np.int64)), g.const(np.int64(0)))
                costs = np.r_[0.0, costs]
            col = g.unsqueeze(slots, [2])                                                            # [N, U, 1]
            # [N, u, v]: unit v comes no later than unit u
            before = g.op("LessOrEqual", g.unsqueeze(slots, [1]), col)
            # costs as [U, 1]: a 1-D right operand fails on zero rows in onnxruntime < 1.32
            run = g.op("MatMul", g.cast(before, F64), g.const(costs[:, None]))                      # [N, U, 1]
            over = g.op("Greater", run, g.unsqueeze(budget, [1, 2]))
            h = g.op("ReduceMin", g.where(over, col, g.const(self.never)), g.const([1], np.int64), keepdims=1)
            # paid: touched and not over, which is a slot before h (running
            # costs grow with the slot, as costs are >= 0: a unit at or
            # after h runs at least h's, over the budget; 'never' is no
            # slot before h)
            paid = g.op("Less", col, h)                                                             # [N, U, 1]
            cost = g.op("ReduceMax", g.where(paid, run, g.const(np.float64(0))), g.const([1, 2], np.int64),
                        keepdims=0)
        return g.squeeze(h, [1, 2]), cost, g.squeeze(h, [2])

    def sorted_halt(self):
        """Whether ``_pay_sorted`` gives the latency schedule's halt: the
        tree operator votes the first touches (``first_slot_votes``), the
        features alone are paid, at one cost, exact in any order
        (``_equal_feature_costs``)."""
        _, costs = self._paid_units()
        return bool(self.small and self.values.first_slots is not None and self._equal_feature_costs()
                    and exact_in_any_order(costs))

    def voted_halt(self):
        """Whether the batch schedule takes ``halt_voted``: the features
        alone are paid, at one cost (``_equal_feature_costs``; any cost:
        the j-th unit paid in acquisition order then always brings the
        running cost to the same constant, the cost added j times in that
        order, whichever feature it is)."""
        return not self.small and self._equal_feature_costs() and self._slot_table_fits(8)

    def _slot_table_fits(self, width):
        """Whether a [leaf starts, F] table of ``width``-byte slots stays
        within ``DENSE_TABLE_BYTES`` (the compiler builds it in numpy: wide
        models keep the search instead of gigabytes at compile time)."""
        return len(self.values.leaf_layout().vals) * self.F * width <= DENSE_TABLE_BYTES

    def _equal_feature_costs(self):
        """The features are the only paid units and all cost the same, no
        feature has a static event, and slot 0 is static (where a negative
        budget halts)."""
        (groups, feats, trees, svs), costs = self._paid_units()
        L = self.layout
        return bool(costs.size and not (groups.size or trees.size or svs.size) and feats.size == self.F
                    and np.all(costs == costs[0]) and np.all(self._static_features() >= self.never)
                    and self.static(np.arange(L.n_features + L.n_trees + L.n_sv)).min() == 0)

    def _pay_sorted(self, shifted, costs, budget):
        """(None, cost [N], h [N, 1], h [N, 1] int64), halting
        slots minus 'never' (<= 0; ``h_shift``): the pairwise halt for
        costs all equal, c, over [F + 1, N] instead of [N, F, F].  The
        tree operator's votes ``shifted`` (first touch - never, 0 where
        none) sorted ascending put the touched features in acquisition
        order (distinct slots: one feature per place), a free unit at slot
        0 first and the untouched ones last; the j-th unit's running cost
        is then j c, a constant column: the row halts at the first sorted
        slot whose running cost exceeds the budget (a negative budget: the
        free unit's, slot 0), and its cost is the largest running cost
        before that slot (0 if none).

        Rows on axis 1 (one ``Transpose`` of the votes): ``TopK`` sorts
        along axis 0, which onnxruntime 1.16-1.30 also runs on zero rows
        (along axis 1 it dies with SIGFPE there: no padding row, no
        ``Slice``), and the [N] budget compares with the [F + 1, 1]
        running costs without an ``Unsqueeze``.  The halt is the smallest
        sorted slot times (running cost > budget) as 0 or 1 (a ``Cast``
        and a ``Mul``: onnxruntime's ``Where`` costs more than both;
        the votes are int64 wherever this halt is built, ``Values.int_votes``).
        The free unit
        is left out (``_free_unit``) when a halt at slot 0 and one at any
        row's first touch complete the same checkpoints: without it a
        negative budget halts at the row's first touch, with the same
        stage, scores, cost (0) and features used (none)."""
        g = self.g
        srt, run, h, h_col = self._sorted_halt_slots(shifted, costs, budget, I64)
        if np.all(costs == 1.0):
            # unit costs: the cost is the number of features touched before
            # h (exact in float64), counted on features_used itself (the
            # touch Less, ``self.used``), one op fewer than the running
            # costs' Less, Where, ReduceMax
            self.used = g.op("Less", shifted, h_col)
            cost = g.op("ReduceSum", g.cast(self.used, F64), g.const([1], np.int64), keepdims=0)
        else:
            paid = g.op("Less", srt, h)
            cost = g.op("ReduceMax", g.where(paid, g.const(run), g.const(np.float64(0))), g.const([0], np.int64),
                        keepdims=0)
        # no [N] halt: the stage is looked up by GatherND from [N, 1] (Routing.stage)
        return None, cost, h_col, h_col

    def _sorted_halt_slots(self, shifted, costs, budget, dtype, over_only=False):
        """(sorted slots [units, N], running costs [units, 1] float64, h
        [1, N], h [N, 1]): ``_pay_sorted``'s sort and halt of the votes
        ``shifted`` [N, F] (first touch - never, 0 where none; ``dtype``
        int64 or float32, exact integers either way), as that method
        describes.

        ``over_only``: every row is over its budget (``halt_voted``'s
        subset), so each halts at a sorted place j (its first unit over
        the budget, units - the number over), and only the first
        max(j) + 1 places need sorting: ``TopK`` takes that K, read from
        the rows (a tight budget halts early and sorts little; sorting
        every place took 38 ms for 20,000 rows x 51 units, 27 ms for the
        first 26, one thread)."""
        g, F = self.g, self.F
        free = self._free_unit()
        s = g.op("Transpose", shifted, perm=[1, 0])                                             # [F, N]
        if free:
            s = g.op("Pad", s, g.const(np.array([1, 0, 0, 0], np.int64)),
                     g.const(np.array(-self.never, np.int64 if dtype == I64 else np.float32)))
        units = F + int(free)
        run = np.cumsum(np.r_[0.0, costs] if free else costs).astype(np.float64)[:, None]        # [units, 1]
        if over_only:
            over = g.cast(g.op("Greater", g.const(run), budget), dtype)                         # [units, N]
            n_over = g.op("ReduceMin", g.op("ReduceSum", over, g.const([0], np.int64), keepdims=0),
                          g.const([0], np.int64), keepdims=1)                                   # [1]
            k = g.op("Sub", g.const([units + 1], np.int64), g.cast(n_over, I64))
            over = g.op("Slice", over, g.const([0], np.int64), k, g.const([0], np.int64))       # [k, N]
            srt, _ = g.op("TopK", s, k, axis=0, largest=0, sorted=1, n_out=2)                   # [k, N]
        else:       # the latency graph's ops in their order before over_only existed (its bytes)
            srt, _ = g.op("TopK", s, g.const([units], np.int64), axis=0, largest=0, sorted=1, n_out=2)
            over = g.cast(g.op("Greater", g.const(run), budget), dtype)                         # [units, N]
        h = g.op("ReduceMin", g.op("Mul", srt, over), g.const([0], np.int64), keepdims=1)        # [1, N]
        return srt, run, h, g.op("Reshape", h, g.const([-1, 1], np.int64))                     # [N, 1]

    def halt_voted(self, with_used):
        """(None, cost [N], features_used [N, F] or None) of the batch
        schedule when the tree operator votes every row's first touches
        (``voted_halt``); the halting slots minus 'never' go to ``h_col``
        and ``h_index`` ([N, 1] int64, 0 where a row halts nowhere), with
        ``h_shift`` 'never', as ``_pay_sorted`` leaves them.

        A row pays for the features it touches before its halt, each the
        same cost c, so its cost is c added once per paid feature, in
        order (``_mask_cost``: the count times c where that is exact in any
        order, else a table of the running sums read by the count).
        A row whose touched features all fit its budget halts nowhere; only
        the rows over it (a negative budget is one, and so is the padding
        row: the subset is never empty) are gathered for the sort and
        halt of ``_pay_sorted``, over [F + 1, rows over budget] ([F, ...]
        without the free unit, ``_free_unit``), and their halting slots
        scattered back.  Features used are those touched
        before the halt, for every row at once."""
        g = self.g
        _, costs = self._paid_units()
        shifted = self.values.ensemble()["first_slots"]                                       # [N, F] float32
        with g.scope("pay/total", root=True):
            total = self._mask_cost(g.op("Less", shifted, g.const(np.float32(0))), costs)
            h_all = rows_like(g, self.X, 0.0, np.float32, (1,))                                # [N, 1]
        with g.scope("pay/over_budget", root=True):
            rows = g.op("Reshape", g.op("NonZero", g.op("Greater", total, self.budget)),
                        g.const([-1, 1], np.int64))                                           # [M, 1]
            some = g.op("GatherND", shifted, rows)
            _, _, _, h_some = self._sorted_halt_slots(some, costs, g.op("GatherND", self.budget, rows), F32,
                                                      over_only=True)
        with g.scope("pay/over_budget/back", root=True):
            h_col = g.op("ScatterND", h_all, rows, h_some)                                    # [N, 1] float32
            self.h_col = self.h_index = g.cast(h_col, I64)
            self.h_shift = int(self.never)
        with g.scope("pay/paid", root=True):
            used = g.op("Less", shifted, h_col)
            cost = self._mask_cost(used, costs)
        return None, cost, (used if with_used else None)

    def _free_unit(self):
        """Whether ``_pay_sorted`` needs its free unit at slot 0: unless
        every leaf of the tree at slot 0 splits on a feature at slot 1
        (so slot 1 is every row's first touch, and a negative budget halts
        there without the unit) and a halt at slot 1 completes the same
        checkpoints as one at slot 0 (then the stage and the scores, read
        by halting slot, are the same)."""
        sc = self.sched
        occ = np.flatnonzero((sc.occ_region == 0) & (sc.occ_slot == 0))
        if occ.size != 1:
            return True
        lay = self.values.leaf_layout()
        starts = lay.start[self.paths.tree_of[lay.leaves] == sc.occ_tree[occ[0]]]
        if not starts.size or np.any(self.values.first_slots[starts].min(1) != 1):
            return True
        done = np.searchsorted(np.sort(sc.cp_end), [0, 1], side="right")
        return bool(done[0] != done[1])

    def _pay_in_order(self, slots, costs, budget, never):
        """Sort a row's paid units by slot, add their costs in that order
        (float64), and halt at the first unit over the budget.  Returns the
        halting slot ('never' if none) and the cost paid before it.

        Units never touched (slot ``never``) sort last; their costs enter
        the running sum only after every touched unit, where they can halt
        nothing (their slot is never) and are never paid."""
        g = self.g
        U = costs.size
        with g.scope("sort"):
            sslot, order = g.op("TopK", slots, g.const([U], np.int64), axis=1, largest=0, sorted=1, n_out=2)
            run = g.cumsum(g.op("Gather", g.const(costs), order), 1)
        h = never
        if budget is not None:
            with g.scope("halt"):
                over = g.cast(g.op("Greater", run, g.unsqueeze(budget, [1])), TensorProto.INT32)
                first = g.op("ArgMax", over, axis=1, keepdims=1)
                hit = g.op("GatherElements", sslot, first, axis=1)
                any_over = g.cast(g.op("ReduceMax", over, g.const([1], np.int64), keepdims=0), BOOL)
                h = g.where(any_over, g.squeeze(hit, [1]), never)
        with g.scope("paid"):
            n_paid = g.op("ReduceSum", g.cast(g.op("Less", sslot, g.unsqueeze(h, [1])), I64),
                          g.const([1], np.int64), keepdims=1)
            at = g.op("Max", g.op("Sub", n_paid, g.const(np.int64(1))), g.const(np.int64(0)))
            paid = g.squeeze(g.op("GatherElements", run, at, axis=1), [1])
            cost = g.where(g.op("Greater", g.squeeze(n_paid, [1]), g.const(np.int64(0))), paid,
                           g.const(np.float64(0)))
        return h, cost


def exact_in_any_order(costs, digits=53) -> bool:
    """Whether every sum of a subset of ``costs`` (float64, >= 0) is exact
    in float64 (``digits`` 53; float32: 24), whatever the order of the
    additions: all are multiples of the smallest power of two among their
    denominators, and their total is below 2^digits of those units (and,
    for float32, within its range: units from 2^-149, a total below 2^127)."""
    parts = [Fraction(float(c)) for c in costs if c != 0]
    if not parts:
        return True
    unit = max(p.denominator for p in parts)      # a power of two: floats are dyadic
    if digits < 53 and (unit > 2 ** 149 or sum(parts) >= 2 ** 127):
        return False
    return sum(parts) * unit < 2 ** digits
