"""The exact ONNX graph's values: which leaf each tree reaches, and every
scoring node's running value in the reference's order.

* ``leaf/…``: one SUM-aggregated tree ensemble votes packed leaf numbers;
  they are decoded into where each reached leaf's values start in one table.
* ``value/…``: per scoring node, its running value after each step (trees in
  bank order, linear terms and support vectors in IR order), as ``CumSum``
  over exact lookups and products, so the bits match the reference.  A
  float64 bank looks its leaves up in a double table and sums in double
  (``CumSum`` on doubles, left to right), divides by its divisor, and is
  read by other nodes through one ``Cast`` to float32 (round to nearest, as
  the reference's ``np.float32``).

``Part`` is what every concern of the exact graph (values, cost, routing)
shares: the model, its lowered tables, the graph being built and the static
schedule.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from onnx import TensorProto

from ..ir.codes import (
    KERNEL_LINEAR,
    KERNEL_RBF,
    KIND_KERNEL,
    KIND_LINEAR,
    KIND_TREES,
    TERM_FEATURE,
    TERM_NODE,
    TERM_TREE,
)
from ..ir.lowering import Tables
from .onnx_graph import Graph, expand_rows, expf, filled
from .onnx_schedule import TreePaths, UnitLayout, schedule, tree_paths
from .onnx_trees import MAX_EXACT, Forest, ir_forest, tree_ensemble, tree_walk

I32 = TensorProto.INT32
# kernels with more than this many (vector, feature) pairs are summed one
# feature at a time ([N, S] intermediates) instead of as one [N, S, nf] block
KERNEL_3D_LIMIT = 1 << 14


def _kernel_scan_body(rbf, S):
    """Scan body over one feature d: acc [N, S], x_d [N], sv_d [S] ->
    acc + (x_d - sv_d)^2 (rbf) or acc + x_d * sv_d, one rounding per op."""
    from onnx import helper
    F = TensorProto.FLOAT
    nodes = [helper.make_node("Constant", [], ["axes"],
                              value=helper.make_tensor("axes_v", TensorProto.INT64, [1], [1])),
             helper.make_node("Unsqueeze", ["x_d", "axes"], ["x_col"])]
    if rbf:
        nodes += [helper.make_node("Sub", ["x_col", "sv_d"], ["diff"]),
                  helper.make_node("Mul", ["diff", "diff"], ["term"])]
    else:
        nodes += [helper.make_node("Mul", ["x_col", "sv_d"], ["term"])]
    nodes.append(helper.make_node("Add", ["acc_in", "term"], ["acc_out"]))
    return helper.make_graph(
        nodes, "kernel_feature_sum",
        [helper.make_tensor_value_info("acc_in", F, ["N", S]), helper.make_tensor_value_info("x_d", F, ["N"]),
         helper.make_tensor_value_info("sv_d", F, [S])],
        [helper.make_tensor_value_info("acc_out", F, ["N", S])])


class Setup:
    """The state every part of one exact graph reads: the model, its
    lowered tables, the graph, the tree operator, the unit layout, the tree
    paths and the static schedule; ``never`` is a slot after every slot."""

    def __init__(self, model, tab: Tables, g: Graph, tree_op, X="X", budget="budget", small=False):
        self.m, self.t, self.g, self.op = model, tab, g, tree_op
        self.X, self.budget = X, budget
        # the latency schedule (compile_onnx's batch_hint): fewer, larger-per-row ops
        self.small = small
        self.F = model.n_features
        self.layout = UnitLayout(self.F, tab.tree_root.shape[0] if has_trees(tab) else 0,
                                 tab.sv_cost.shape[0] if has_kernels(tab) else 0)
        self.paths: TreePaths = tree_paths(tab, self.layout.n_trees)
        self.sched = schedule(tab, self.layout, self.paths.tree_depth)
        if self.sched.n_slots >= MAX_EXACT:
            raise ValueError("the model has too many evaluation steps for the exact ONNX graph")
        # "never touched" is a slot after every slot: comparisons stay plain
        self.never = np.int64(self.sched.n_slots)


class Part:
    """One concern of the exact graph, reading a shared ``Setup``."""

    def __init__(self, setup: Setup):
        self.m, self.t, self.g, self.op = setup.m, setup.t, setup.g, setup.op
        self.X, self.budget, self.F = setup.X, setup.budget, setup.F
        self.layout, self.paths, self.sched, self.never = setup.layout, setup.paths, setup.sched, setup.never
        self.small = setup.small


def has_trees(tab):
    return bool(np.any(tab.node_kind == KIND_TREES))


def has_kernels(tab):
    return bool(np.any(tab.node_kind == KIND_KERNEL))


@dataclass
class LeafLayout:
    """Tree leaves numbered tree by tree, and their values as one table."""

    leaves: np.ndarray      # [L] global leaf nodes, tree by tree
    start: np.ndarray       # [L] where each leaf's values start in ``vals``
    local: np.ndarray       # [M] per node: its leaf number within its tree
    n_leaves: np.ndarray    # [T]
    base: np.ndarray        # [T] where tree t's values start
    width: np.ndarray       # [T] the output width of tree t's bank
    vals: np.ndarray        # float32, leaf after leaf: base[t] + number * width[t]
    vals64: np.ndarray | None   # float64, the same layout (None when no bank is float64)


class Values(Part):
    """Leaves and node values (state: the leaf layout, the decoded leaf
    starts, and the node values already emitted)."""

    def __init__(self, setup: Setup):
        super().__init__(setup)
        self._values: dict = {}
        self._leaf = None
        self._leaf_bias = None
        # the latency schedule's MIN-aggregated operator also votes the
        # bias's index in front of the leaf starts (``ensemble``)
        self.bias_voted = False
        # the MIN-aggregated votes cast to int64 once, before their Split,
        # when only integer readers follow (``Costs.sorted_halt``): no Cast
        # of the leaf starts nor of the halting slots
        self.int_votes = False
        self._major = None
        self._major_local = None
        self._ensemble: dict | None = None
        self._layout: LeafLayout | None = None
        self.tree_major: set = set()    # nodes whose ``prefix`` is [steps + 1, N] (``_tree_prefix``)
        self.rows_2d: set = set()       # nodes whose ``prefix`` is [N, steps + 1] (``_row_prefix``)
        # what the tree operator's targets carry, set before it is emitted
        # (``ensemble``): packed leaf numbers, leaf values, path-feature counts
        self.need_starts = True
        self.vote_values = False
        self.touch_votes: np.ndarray | None = None
        # [leaf starts, F] int64: the slot at which each leaf's path first
        # touches each feature ('never' if not), voted MIN-aggregated
        # (``Costs.first_slot_votes``): one region's first touches straight
        # from the tree operator (the latency schedule; the batch schedule
        # when the features alone are paid, at one cost)
        self.first_slots: np.ndarray | None = None

    # -- trees ------------------------------------------------------------
    def leaf_layout(self) -> LeafLayout:
        """Leaves numbered tree by tree, and the table of their values laid
        out tree by tree, leaf by leaf (computed once)."""
        if self._layout is None:
            t, p = self.t, self.paths
            T = self.layout.n_trees
            reached = np.zeros(t.tn_feature.size, bool)
            reached[np.concatenate(p.levels)] = True
            leaves = np.flatnonzero((t.tn_feature < 0) & reached)
            leaves = leaves[np.lexsort((leaves, p.tree_of[leaves]))]
            n_leaves = np.bincount(p.tree_of[leaves], minlength=T)
            first = np.r_[0, np.cumsum(n_leaves)[:-1]]
            local = np.zeros(t.tn_feature.size, np.int64)
            local[leaves] = np.arange(leaves.size) - first[p.tree_of[leaves]]
            width = self._tree_widths()
            w = width[p.tree_of[leaves]]
            # each leaf's w values, leaf after leaf: tn_value[leaf] + 0 .. w - 1
            within = np.arange(w.sum()) - np.repeat(np.cumsum(w) - w, w)
            at = np.repeat(t.tn_value[leaves], w) + within
            vals = t.leaf_value[at].astype(np.float32)
            vals64 = t.leaf_value64[at].astype(np.float64) if np.any(t.node_f64) else None
            base = np.r_[0, np.cumsum(n_leaves * width)[:-1]]
            start = base[p.tree_of[leaves]] + local[leaves] * w
            self._layout = LeafLayout(leaves, start, local, n_leaves, base, width, vals, vals64)
        return self._layout

    def _tree_widths(self):
        """[T]: the output width of the bank each tree belongs to."""
        t = self.t
        width = np.ones(self.layout.n_trees, np.int64)
        for n in np.flatnonzero(t.node_kind == KIND_TREES):
            first, count = int(t.node_first[n]), int(t.node_count[n])
            width[first:first + count] = t.node_width[n]
        return width

    def leaf(self, with_bias=False):
        """([N, T] int32, values table): per tree, where the values of the
        leaf it reaches start in the table (``leaf_major`` transposed; in
        the latency schedule, each tree's own target votes it: no decoding).
        ``with_bias``: [N, T + 1] with the bias's index (``len(values)``)
        in front when the tree operator votes it (``bias_voted``), else
        the same as without."""
        if with_bias and self.bias_voted:
            self.ensemble()
            if self._leaf_bias is None:
                y = self._ensemble["each_start"]
                with self.g.scope("leaf/decode", root=True):
                    self._leaf_bias = y if self.int_votes else self.g.cast(y, I32), self.leaf_layout().vals
            return self._leaf_bias
        if self._leaf is None and self.small and self.op != "gather" and self._starts_fit():
            y = self.ensemble()["each_start"]
            with self.g.scope("leaf/decode", root=True):
                if self.bias_voted:
                    start = self.g.slice(self.leaf(with_bias=True)[0], 1, None, 1)
                    self._leaf = self.g.cast(start, I32) if self.int_votes else start, self.leaf_layout().vals
                else:
                    self._leaf = self.g.cast(y, I32), self.leaf_layout().vals
        if self._leaf is None and self.small and self.op == "gather":
            self._leaf = self._walked_leaf(), self.leaf_layout().vals
        if self._leaf is None:
            major, vals = self.leaf_major()
            with self.g.scope("leaf/decode", root=True):
                self._leaf = self.g.op("Transpose", major, perm=[1, 0]), vals
        return self._leaf

    # -- the tree operator and what its targets carry ---------------------
    def _packing(self):
        """(b, n_targets): the j-th tree on a target votes its leaf number
        times 2^(b j), P = 24 // b trees to a target."""
        lay = self.leaf_layout()
        b = max(1, int(np.ceil(np.log2(max(2, lay.n_leaves.max())))))
        return b, -(-self.layout.n_trees // max(1, 24 // b))

    def _forest(self, parts):
        """The forest of all trees, its leaves voting for ``parts`` (a list
        of "starts", "values", "touches", in target order), and where each
        part's targets begin."""
        t, p = self.t, self.paths
        T = self.layout.n_trees
        lay = self.leaf_layout()
        tree_of, local = p.tree_of, lay.local
        b, n_packed = self._packing()
        kinds = {
            # tree i is digit i // targets of target i % targets: the digits
            # then come out target by target within a digit, in tree order
            "starts": (n_packed, lambda nodes: (tree_of[nodes] % n_packed, (
                local[nodes] * 2.0 ** (b * (tree_of[nodes] // n_packed))).astype(np.float32))),
            # one target per tree, its one vote the leaf's value
            "values": (T, lambda nodes: (tree_of[nodes], t.leaf_value[t.tn_value[nodes]].astype(np.float32))),
            # one target per tree, its one vote where the leaf's values start
            # (an integer below 2^24: ``_starts_fit``)
            "each_start": (T, lambda nodes: (tree_of[nodes], self._start_of_node()[nodes])),
            # one target per tree, its one vote the leaf's number within its tree
            "each_local": (T, lambda nodes: (tree_of[nodes], local[nodes].astype(np.float32))),
        }
        first, at = {}, 0
        forest, extra = None, []
        for part in parts:
            first[part] = at
            if part == "bias":      # voted once per row, by the first tree's leaves (below)
                at += 1
                continue
            if part == "touches":
                extra.append(self._touch_votes(forest, at))
                at += self.F
                continue
            if part == "first_slots":
                extra.append(self._first_slot_votes(forest, at))
                at += self.F
                continue
            n, vote = kinds[part]
            if forest is None:
                forest = ir_forest(t, p, np.arange(T), vote=lambda nodes, v=vote, a=at: (v(nodes)[0] + a, v(nodes)[1]))
            else:
                leaf = np.flatnonzero(forest.feature < 0)
                tg, w = vote(forest.node[leaf])
                extra.append((leaf, tg + at, w))
            at += n
        if "bias" in first:
            leaf = np.flatnonzero((forest.feature < 0) & (forest.tree == 0))
            extra.append((leaf, np.full(leaf.size, first["bias"], np.int64),
                          np.full(leaf.size, len(lay.vals), np.float32)))
        if extra:
            forest.extra = tuple(np.concatenate(c) for c in zip(*extra, strict=True))
        return forest, first, at

    def _touch_votes(self, forest, at):
        """(forest leaf, target, weight): each leaf votes 1 for target at + f
        of every feature f in ``touch_votes`` on its path, once.  The
        operator's sum for that target is then how many of the row's
        reached leaves split on f: an integer below 2^24, exact in float32
        in any order of additions."""
        leaf = np.flatnonzero(forest.feature < 0)
        on_path = self.paths.path_features(self.t.tn_feature, forest.node[leaf])   # [leaves, D], -1 past the leaf
        keep = np.isin(on_path, self.touch_votes)
        pairs = np.unique(np.c_[np.nonzero(keep)[0], on_path[keep]], axis=0)      # twice on a path: one vote
        return leaf[pairs[:, 0]], at + pairs[:, 1], np.ones(len(pairs), np.float32)

    def _first_slot_votes(self, forest, at):
        """(forest leaf, target, weight): each leaf votes slot - 'never' (< 0)
        for target at + f of every feature f its path touches, at the slot
        of its first touch (``first_slots``).  MIN-aggregated, a target gets
        the smallest vote among the row's reached leaves, 0 where none
        votes: plus 'never', the row's first touch of f, exact in float32
        (slots stay below 2^24, ``MAX_EXACT``).

        Only votes that can be a row's minimum: when every leaf of some
        tree votes for f, each row gets a vote for f of at most that tree's
        largest, so a vote above the smallest such bound is never the
        minimum and is left out (the same result, bit for bit). LightGBM's
        first trees split on the informative features along every path:
        at 100 trees, 28,270 feature votes become 1,927, and the operator
        runs about 1.9 µs faster per row (docs/onnx.md, seventh pass)."""
        leaf = np.flatnonzero(forest.feature < 0)
        start = self._start_of_node()[forest.node[leaf]].astype(np.int64)
        slot = self.first_slots[start]                                           # [leaves, F]
        tree = forest.tree[leaf]
        n_trees = int(tree.max()) + 1 if tree.size else 0
        worst = np.full((n_trees, slot.shape[1]), np.iinfo(np.int64).min, np.int64)
        np.maximum.at(worst, tree, slot)                       # per tree: its largest slot, 'never' unless all vote
        bound = worst.min(0) if n_trees else np.zeros(slot.shape[1], np.int64)
        li, f = np.nonzero((slot < self.never) & (slot <= bound[None, :]))
        return leaf[li], at + f, (slot[li, f] - self.never).astype(np.float32)

    def _start_of_node(self):
        """[M] float32: per IR node, where its values start if it is a leaf."""
        lay = self.leaf_layout()
        out = np.zeros(self.t.tn_feature.size, np.float32)
        out[lay.leaves] = lay.start
        return out

    def _starts_fit(self):
        return len(self.leaf_layout().vals) < MAX_EXACT

    def ensemble(self):
        """{part: [N, its targets] float32} of the one tree operator over X
        (emitted once): "starts" (packed leaf numbers) when ``need_starts``,
        "values" (each tree's leaf value) when ``vote_values``, "touches"
        (per feature of ``touch_votes``, how many reached leaves split on
        it) when that is set.  With ``first_slots``, MIN-aggregated:
        "first_slots" (per feature, its first touch - 'never') beside
        "each_start" (the latency schedule) or, in the batch schedule,
        "each_local" (each tree's leaf number) or "values" (a float32
        bank's leaf values), one vote per row on each of those targets."""
        if self._ensemble is None:
            parts = (["starts"] if self.need_starts or not self.vote_values else []) + \
                (["values"] if self.vote_values else []) + (["touches"] if self.touch_votes is not None else [])
            if self.small and self._starts_fit() and "starts" in parts:
                parts = ["each_start"] + parts[1:]
            aggregate = "SUM"
            if self.first_slots is not None and not self.small:
                # the batch schedule: each tree's leaf value (a float32
                # bank) or local leaf number on a target of its own, one
                # vote per row, its minimum is that vote (as its sum is)
                parts, aggregate = ["values" if self.vote_values else "each_local", "first_slots"], "MIN"
            elif self.first_slots is not None:
                # one vote per each_start target: its minimum is its sum
                if parts != ["each_start"]:
                    raise ValueError("first-slot votes go with each tree's own leaf start only")
                # and, first, the bias's index for the running sum
                # (``_row_prefix``: no Pad of the leaf starts), voted by the
                # first tree's leaves: one vote per row, its minimum
                # (when the output is a one-column tree bank: ``_row_prefix``)
                self.bias_voted = bool(self.t.top_kind == KIND_TREES and self.t.node_width[self.t.top] == 1)
                parts, aggregate = ["bias"] * self.bias_voted + ["each_start", "first_slots"], "MIN"
            forest, first, total = self._forest(parts)
            g = self.g
            with g.scope("leaf/ensemble", root=True):
                y = tree_ensemble(g, self.X, forest, total, self.op, aggregate)
                if aggregate == "MIN" and self.int_votes:
                    y = g.cast(y, TensorProto.INT64)
                if aggregate == "MIN":      # one Split for both parts: [bias, leaf starts], first slots
                    self._ensemble = dict(zip(parts[-2:], g.op(
                        "Split", y, g.const([first[parts[-1]], total - first[parts[-1]]], np.int64), axis=1,
                        n_out=2), strict=True))
                else:
                    ends = [first[q] for q in parts[1:]] + [total]
                    self._ensemble = {q: y if len(parts) == 1 else g.slice(y, first[q], e, 1)
                                      for q, e in zip(parts, ends, strict=True)}
        return self._ensemble

    def _decode(self, y, axis, local=False):
        """int32 leaf starts from packed sums ``y`` float32, [targets, N]
        (axis 0) or [N, targets] (axis 1), in the same layout with trees
        for targets (``local``: each tree's own leaf numbers instead).  The
        digits come back as exact integer shifts and masks, in int32 (int64
        ops run ~4x slower in onnxruntime)."""
        g, T = self.g, self.layout.n_trees
        b, n_targets = self._packing()
        y = g.cast(y, TensorProto.UINT32)
        digits = -(-T // n_targets)       # <= P: the last digit may be partly empty
        if digits > 1:
            mask = g.const(np.uint32((1 << b) - 1))
            y = g.concat([g.op("BitwiseAnd", g.op("BitShift", y, g.const(np.uint32(b * j)),
                                                  direction="RIGHT") if j else y, mask)
                          for j in range(digits)], axis)
            if n_targets * digits > T:
                y = g.slice(y, 0, T, axis)
        q = g.cast(y, I32)
        return q if local else self.global_starts(q, axis)

    def global_starts(self, q, axis):
        """Where the values of the leaves numbered ``q`` (int32, tree by tree
        along ``axis``) start in the values table."""
        g, lay = self.g, self.leaf_layout()
        shape = (-1, 1) if axis == 0 else (1, -1)
        if np.any(lay.width != 1):
            q = g.op("Mul", q, g.const(lay.width.reshape(shape).astype(np.int32)))
        return g.op("Add", q, g.const(lay.base.reshape(shape).astype(np.int32)))

    def leaf_major(self):
        """([T, N] int32, values table): per tree and row, where the values
        of the leaf the row reaches start in the table, tree-major (the
        layout the ordered sum and the union of path features read fastest).

        One SUM-aggregated ensemble of the trees, P trees to a target: the
        j-th tree on a target votes (its leaf number) * 2^(b j), with 2^b
        above every tree's leaf count and b P <= 24, so every partial sum is
        an integer float32 holds exactly, whatever order onnxruntime adds
        in.  Fewer targets cost less (measured, 1000 trees, 20,000 rows:
        536 ms with one target per 4 trees, 640 ms with one per tree).  The
        sums are decoded transposed, [targets, N]: one Transpose of T / P
        columns instead of T."""
        if self._major is None and self.op == "gather":
            with self.g.scope("leaf/decode", root=True):
                self._major = self.g.op("Transpose", self._walked_leaf(), perm=[1, 0]), self.leaf_layout().vals
        if self._major is None:
            local = self.leaf_major_local()
            with self.g.scope("leaf/decode", root=True):
                self._major = self.global_starts(local, 0), self.leaf_layout().vals
        return self._major

    def has_major(self):
        """Whether ``leaf_major`` (the global starts, [T, N]) is emitted."""
        return self._major is not None

    def leaf_major_local(self):
        """[T, N] int32: per tree and row, the number of the leaf the row
        reaches within its tree (``leaf_major`` before the tables' offsets;
        None without a tree operator)."""
        if self.op == "gather":
            return None
        if self._major_local is None and self.first_slots is not None and not self.small:
            # voted one tree to a target beside the first touches: no digits
            with self.g.scope("leaf/decode", root=True):
                y = self.g.op("Transpose", self.ensemble()["each_local"], perm=[1, 0])
                self._major_local = self.g.cast(y, I32)
        if self._major_local is None:
            g = self.g
            if self._ensemble is not None and "starts" not in self._ensemble:
                y = self.leaf_sums(self.X)            # emitted without them: a second operator
            else:
                self.need_starts = True
                y = self.ensemble()["starts"]
            with g.scope("leaf/decode", root=True):
                self._major_local = self._decode(g.op("Transpose", y, perm=[1, 0]), 0, local=True)
        return self._major_local

    def leaf_sums(self, X):
        """[M, targets] packed leaf numbers of the rows ``X`` [M, F], from a
        tree operator of their own."""
        forest, _, total = self._forest(["starts"])
        with self.g.scope("leaf/ensemble", root=True):
            return tree_ensemble(self.g, X, forest, total, self.op)

    def leaf_rows(self, X):
        """[M, T] int32 leaf starts of the rows ``X`` [M, F] (a subset of
        the rows), from their own tree operator."""
        y = self.leaf_sums(X)
        with self.g.scope("leaf/decode", root=True):
            return self._decode(y, 1)

    def touch_counts(self):
        """[N, F] float32: per row and feature of ``touch_votes``, how many of
        its reached leaves split on it (0 for the others)."""
        return self.ensemble()["touches"]

    def score_bound(self):
        """A bound on |score| of every row and stage when the output is a
        tree bank whose reached leaves and bias are finite (its scores are
        then never NaN), else inf: the bias plus each tree's largest |leaf
        value|, divided by a float64 bank's divisor, widened by a relative
        2^-20 per addition for the roundings of the running sums."""
        t = self.t
        if t.top_kind != KIND_TREES:
            return np.inf
        n = t.top
        lay = self.leaf_layout()
        wide = bool(t.node_f64[n])
        vals = np.abs(np.asarray(lay.vals64 if wide else lay.vals, np.float64))
        K = int(t.node_width[n])
        bias = np.abs(np.asarray((t.bias64 if wide else t.bias)[t.node_bias[n]: t.node_bias[n] + K], np.float64))
        trees = np.arange(t.node_first[n], t.node_first[n] + t.node_count[n])
        total = float(bias.max(initial=0.0))
        for tr in trees:
            tree_vals = vals[lay.base[tr]: lay.base[tr] + lay.n_leaves[tr] * lay.width[tr]]
            total += float(tree_vals.max(initial=0.0))
        if wide:
            total /= abs(float(t.node_div[n]))
        total *= 1 + 2.0 ** -20 * (trees.size + 2)
        return total if np.isfinite(total) and np.all(np.isfinite(bias)) else np.inf

    def can_vote_values(self):
        """Whether the tree operator may give the output bank's leaf values
        directly, one target per tree: a one-output float32 bank of every
        tree, in order, and a sum that starts from a base other than -0.0
        (the operator's sum of one vote is 0 + v, +0 for v = -0.0, and
        b + (+0) differs from b + (-0) only for b = -0.0; MIN-aggregated,
        with the first touches, one vote is returned as it is, so there
        the rule only keeps the two graphs' choices the same)."""
        t = self.t
        if self.op != "TreeEnsembleRegressor" or t.top_kind != KIND_TREES:
            return False
        n = t.top
        if t.node_width[n] != 1 or t.node_f64[n] or t.node_first[n] != 0 or t.node_count[n] != self.layout.n_trees:
            return False
        base = np.float32(t.bias[t.node_bias[n]])
        return not (base == 0 and np.signbit(base))

    def _walked_leaf(self):
        """Without a tree operator: the walk gives each tree's leaf as a
        forest node, and a table its start in the values table."""
        g, t, p = self.g, self.t, self.paths
        lay = self.leaf_layout()
        start = np.zeros(t.tn_feature.size, np.int64)
        start[lay.leaves] = lay.start
        forest = ir_forest(t, p, np.arange(self.layout.n_trees), vote=lambda nodes: (
            np.zeros(nodes.size, np.int64), np.zeros(nodes.size, np.float32)))
        with g.scope("leaf/walk", root=True):
            node = tree_walk(g, self.X, forest)
        with g.scope("leaf/decode", root=True):
            return g.op("Gather", g.const(start[forest.node].astype(np.int32)), node)

    def leaf_values(self, trees, outputs, wide=False):
        """Leaf values of global ``trees`` at ``outputs``, by lookup: outputs
        [P] (one per tree) give [N, P]; outputs [1, 1, K] give [N, P, K].
        ``wide``: the float64 values of a float64 bank (else float32)."""
        g = self.g
        start, vals = self.leaf()
        if wide:
            vals = self.leaf_layout().vals64
        with g.scope("leaf/values"):
            if not np.array_equal(trees, np.arange(self.layout.n_trees)):
                start = g.gather(start, trees, 1)
            if np.ndim(outputs) == 3:
                start = g.unsqueeze(start, [2])
            if np.size(outputs) > 1 or np.any(outputs):
                start = g.op("Add", start, g.const(outputs, np.int32))
            return g.op("Gather", g.const(vals), start)

    # -- node values ------------------------------------------------------
    def prefix(self, n):
        """[N, steps + 1, K] running values of scoring node n: entry 0 is its
        bias / base score, entry i+1 the value after step i (reference order)."""
        g, t = self.g, self.t
        K = int(t.node_width[n])
        first, count = int(t.node_first[n]), int(t.node_count[n])
        kind = t.node_kind[n]
        wide = bool(t.node_f64[n])
        bias = t.bias64 if wide else t.bias
        if kind == KIND_TREES and K == 1 and self.small:
            return self._row_prefix(n, np.arange(first, first + count), wide)
        if kind == KIND_TREES and K == 1:
            return self._tree_prefix(n, np.arange(first, first + count), wide)
        with g.scope(f"value/{self.m.nodes[n].kind}{n}", root=True):
            init = expand_rows(g, self.X, g.const(bias[t.node_bias[n]: t.node_bias[n] + K][None, None, :]))
        if kind == KIND_TREES:
            steps = self.leaf_values(np.arange(first, first + count), np.arange(K)[None, None, :], wide)
            with g.scope(f"value/trees{n}", root=True):
                run = g.cumsum(g.concat([init, steps], 1), 1)
                if wide and t.node_div[n] != 1:
                    run = g.op("Div", run, g.const(np.float64(t.node_div[n])))
                return run
        if kind == KIND_LINEAR:
            terms = np.arange(first, first + count)
            live = terms[t.term_live[terms] != 0]
            if not live.size:
                with g.scope(f"value/linear{n}", root=True):
                    return g.gather(init, np.zeros(count + 1, np.int64), 1)
            x = self.term_inputs(live)
            with g.scope(f"value/linear{n}", root=True):
                w = t.weight[t.term_weight[live][:, None] + np.arange(K)]
                contrib = g.op("Mul", g.unsqueeze(x, [2]), g.const(w[None]))
                run = g.cumsum(g.concat([init, contrib], 1), 1)
                steps = np.concatenate([[0], np.cumsum(t.term_live[terms] != 0)])
                return run if live.size == count else g.gather(run, steps, 1)
        with g.scope(f"value/kernel{n}", root=True):
            q = t.node_kernel[n]
            kv = self.kernel_values(q, count)
            a0 = t.k_alpha_first[q]
            alpha = t.alpha[a0: a0 + count * K].reshape(count, K)
            contrib = g.op("Mul", g.unsqueeze(kv, [2]), g.const(alpha[None]))
            return g.cumsum(g.concat([init, contrib], 1), 1)

    def _row_prefix(self, n, trees, wide):
        """``prefix`` of a one-output tree bank in the latency schedule, as
        [N, T + 1] (node n joins ``rows_2d``): the leaf starts get one more
        column in front (``Pad``) that points at the bias, appended to the
        values table, so one ``Gather`` gives [bias, leaf values] and one
        ``CumSum`` along axis 1 the running values, in the reference's order."""
        g, t = self.g, self.t
        start, vals = self.leaf(with_bias=True)
        if wide:
            vals = self.leaf_layout().vals64
        bias = (t.bias64 if wide else t.bias)[t.node_bias[n]]
        with g.scope("leaf/values"):
            if self.bias_voted:     # the bias's index is column 0 already (``ensemble``)
                if not np.array_equal(trees, np.arange(self.layout.n_trees)):
                    start = g.gather(start, np.r_[0, np.asarray(trees) + 1], 1)
            else:
                if not np.array_equal(trees, np.arange(self.layout.n_trees)):
                    start = g.gather(start, trees, 1)
                start = g.op("Pad", start, g.const(np.array([0, 1, 0, 0], np.int64)), g.const(np.int32(len(vals))))
            steps = g.op("Gather", g.const(np.r_[vals, np.array([bias], vals.dtype)]), start)      # [N, T + 1]
        with g.scope(f"value/trees{n}", root=True):
            run = g.cumsum(steps, 1)
            if wide and t.node_div[n] != 1:
                run = g.op("Div", run, g.const(np.float64(t.node_div[n])))
            self.rows_2d.add(n)
            return run

    def _tree_prefix(self, n, trees, wide):
        """``prefix`` of a one-output tree bank, summed tree-major: the leaf
        values as [T, N] and CumSum along axis 0, the same additions in the
        same order as along axis 1 of [N, T + 1, 1], which onnxruntime runs
        about 100x slower (measured, 20,000 rows x 101: 132 ms vs 0.9 ms).
        The bias comes first by a ``Pad`` of one row: of the bias itself onto
        voted values, or of its index (appended to the values table) onto
        the leaf starts, instead of a ``Concat`` of the whole block.  The
        running values stay [T + 1, N] (node n joins ``tree_major``):
        readers pick one step per row along axis 0 (``pick_steps``), with no
        Transpose of the whole block back."""
        g, t = self.g, self.t
        top = np.array([1, 0, 0, 0], np.int64)
        bias = (t.bias64 if wide else t.bias)[t.node_bias[n]]
        if self.vote_values and n == t.top:
            with g.scope("leaf/values"):      # the operator's own votes (``can_vote_values``)
                steps = g.op("Transpose", self.ensemble()["values"], perm=[1, 0])              # [T, N]
                steps = g.op("Pad", steps, g.const(top), g.const(np.float32(bias)))            # [T + 1, N]
        elif (table := self._local_table(trees, bias, wide)) is not None:
            # each tree's values as a row of a [trees + 1, most leaves] table
            # (the bias at [0, 0]), read by local leaf number: GatherElements
            # along axis 1 copies element by element, about 10x faster than
            # Gather from the flat table (measured, one thread, 1001 x 4096
            # float64: 3.0 ms against 32 ms)
            local = self.leaf_major_local()
            with g.scope("leaf/values"):
                if not np.array_equal(trees, np.arange(self.layout.n_trees)):
                    local = g.gather(local, trees, 0)
                local = g.op("Pad", local, g.const(top), g.const(np.int32(0)))
                steps = g.op("GatherElements", g.const(table), local, axis=1)                     # [T + 1, N]
        else:
            start, vals = self.leaf_major()
            if wide:
                vals = self.leaf_layout().vals64
            with g.scope("leaf/values"):
                if not np.array_equal(trees, np.arange(self.layout.n_trees)):
                    start = g.gather(start, trees, 0)
                start = g.op("Pad", start, g.const(top), g.const(np.int32(len(vals))))
                steps = g.op("Gather", g.const(np.r_[vals, np.array([bias], vals.dtype)]), start)  # [T + 1, N]
        with g.scope(f"value/trees{n}", root=True):
            run = g.cumsum(steps, 0)
            if wide and t.node_div[n] != 1:
                run = g.op("Div", run, g.const(np.float64(t.node_div[n])))
            self.tree_major.add(n)
            return run                                                                         # [T + 1, N]

    def _local_table(self, trees, bias, wide):
        """[len(trees) + 1, most leaves] values of the one-output ``trees``
        by local leaf number, the bias alone in row 0 (zeros past each
        tree's leaves, never read), or None: without a tree operator, or
        when padding would more than double the table."""
        if self.op == "gather" or not len(trees):
            return None
        lay = self.leaf_layout()
        vals = lay.vals64 if wide else lay.vals
        n = lay.n_leaves[trees]
        if (len(trees) + 1) * int(n.max()) > 2 * n.sum() + 64:
            return None
        table = np.zeros((len(trees) + 1, int(n.max())), vals.dtype)
        table[0, 0] = bias
        rows = np.repeat(np.arange(1, len(trees) + 1), n)
        cols = np.arange(n.sum()) - np.repeat(np.cumsum(n) - n, n)
        table[rows, cols] = vals[np.repeat(lay.base[trees], n) + cols]
        return table

    def value(self, n):
        """[N, K] float32 value of scoring node n, fully evaluated (a float64
        bank's rounded to float32: what other nodes read)."""
        if n not in self._values:
            prefix = self.prefix(n)
            with self.g.scope(f"value/{self.m.nodes[n].kind}{n}", root=True):
                if n in self.tree_major:      # [T + 1, N]: its last row is [1, N], i.e. [N, 1] in memory
                    v = self.g.op("Reshape", self.g.slice(prefix, -1, None, 0), self.g.const([-1, 1], np.int64))
                elif n in self.rows_2d:
                    v = self.g.slice(prefix, -1, None, 1)
                else:
                    v = self.g.take_last(prefix, 1)
                self._values[n] = self.g.cast(v, TensorProto.FLOAT) if self.t.node_f64[n] else v
        return self._values[n]

    def term_inputs(self, live):
        """[N, len(live)] float32 inputs of linear terms, in term order."""
        g, t = self.g, self.t
        kinds, idx, out = t.term_kind[live], t.term_index[live], t.term_output[live]
        blocks, order = [], []
        fe = np.flatnonzero(kinds == TERM_FEATURE)
        if fe.size:
            with g.scope("value/inputs", root=True):
                blocks.append(g.gather(self.X, idx[fe], 1))
            order.append(fe)
        tr = np.flatnonzero(kinds == TERM_TREE)
        if tr.size:
            blocks.append(self.leaf_values(idx[tr], out[tr]))
            order.append(tr)
        for p in np.flatnonzero(kinds == TERM_NODE):
            v = self.value(int(idx[p]))
            with g.scope("value/inputs", root=True):
                blocks.append(g.gather(v, [int(out[p])], 1))
            order.append([p])
        with g.scope("value/inputs", root=True):
            x = g.concat(blocks, 1)
            pos = np.concatenate([np.asarray(o, np.int64) for o in order])
            if np.array_equal(pos, np.arange(live.size)):
                return x
            return g.gather(x, np.argsort(pos), 1)

    def kernel_values(self, q, S):
        """[N, S] float32 k(sv_s, x) for kernel q's S support vectors,
        features in IR order (reference _kernel_value).  A kernel with a
        transform reads (x - shift) * scale: one Sub, then one Mul."""
        g, t = self.g, self.t
        nf, f0 = int(t.k_n_feat[q]), int(t.k_feat_first[q])
        sv = t.sv[t.k_sv_first[q]: t.k_sv_first[q] + S * nf].reshape(S, nf)
        x2 = g.gather(self.X, t.k_feat[f0: f0 + nf].astype(np.int64), 1)   # [N,nf]
        if t.k_xform[q]:
            x2 = g.op("Sub", x2, g.const(t.k_shift[None, f0: f0 + nf]))
            x2 = g.op("Mul", x2, g.const(t.k_scale[None, f0: f0 + nf]))
        if S * nf > KERNEL_3D_LIMIT:
            return self.kernel_of_sum(q, self.kernel_sum_by_feature(q, x2, sv))
        xs = g.unsqueeze(x2, [1])  # [N,1,nf]
        if t.k_type[q] == KERNEL_RBF:
            d = g.op("Sub", xs, g.const(sv[None]))
            acc = g.take_last(g.cumsum(g.op("Mul", d, d), 2), 2)   # 0 + d0^2 == d0^2 exactly
        else:
            prod = g.op("Mul", xs, g.const(sv[None]))
            zero = filled(g, g.gather(prod, [0], 2), 0.0, np.float32)   # the sum starts at +0
            acc = g.take_last(g.cumsum(g.concat([zero, prod], 2), 2), 2)
        return self.kernel_of_sum(q, acc)

    def kernel_of_sum(self, q, acc):
        """K from the [N, S] feature sum: rbf expf(-gamma acc), linear acc,
        poly (gamma acc + coef0)^degree by repeated multiplication."""
        g, t = self.g, self.t
        kt = t.k_type[q]
        if kt == KERNEL_RBF:
            return expf(g, g.op("Mul", g.const(np.float32(-t.k_gamma[q])), acc))
        if kt == KERNEL_LINEAR:
            return acc
        b = g.op("Add", g.op("Mul", g.const(t.k_gamma[q]), acc), g.const(t.k_coef0[q]))
        v = filled(g, b, 1.0, np.float32)
        for _ in range(int(t.k_degree[q])):
            v = g.op("Mul", v, b)
        return v

    def kernel_sum_by_feature(self, q, x2, sv):
        """The [N, S] feature sum for large kernels: a ``Scan`` over the features
        carries one [N, S] sum (a full SVM over 784 features with thousands
        of vectors would need gigabytes per 100 rows as one [N, S, nf]
        block, and unrolled per-feature ops let onnxruntime run every
        feature's term before the sums, holding them all).  The same float32
        operations in the same order as the reference: acc = +0 + t_0,
        acc = acc + t_d, ...; the scan runs over features, never over rows."""
        g, t = self.g, self.t
        kt = t.k_type[q]
        S = sv.shape[0]
        shape = g.concat([g.n_rows(self.X), g.const(np.array([S], np.int64))], 0)
        acc0 = g.op("Expand", g.const(np.zeros((1, 1), np.float32)), shape)       # [N,S] of +0
        xT = g.op("Transpose", x2, perm=[1, 0])                                   # [nf,N]
        body = _kernel_scan_body(kt == KERNEL_RBF, S)
        return g.op("Scan", acc0, xT, g.const(np.ascontiguousarray(sv.T)), body=body, num_scan_inputs=2)

    def pick_steps(self, vals, step):
        """[N, K]: per row, checkpoint ``step`` [N] int64 (0: before any) of
        ``vals``, what ``checkpoint_values`` gave."""
        g = self.g
        K = int(self.m.task.n_outputs)
        if self.t.top_kind == KIND_TREES and self.t.top in self.tree_major:
            # [T + 1, N]: one step per column, [1, N] is [N, 1] in memory
            pick = g.op("GatherElements", vals, g.unsqueeze(step, [0]), axis=0)
            return g.op("Reshape", pick, g.const([-1, 1], np.int64))
        if self.t.top_kind == KIND_TREES and self.t.top in self.rows_2d:
            return g.op("GatherElements", vals, g.unsqueeze(step, [1]), axis=1)
        pick = g.op("Expand", g.unsqueeze(step, [1, 2]), g.concat([g.op("Shape", step), g.const([1, K], np.int64)], 0))
        return g.squeeze(g.op("GatherElements", vals, pick, axis=1), [1])

    def checkpoint_values(self):
        """[N, C + 1, K]: the value before any checkpoint, then each one's
        ([T + 1, N] for a one-output tree bank: ``tree_major``)."""
        g, t = self.g, self.t
        if t.top_kind <= KIND_KERNEL:
            return self.prefix(t.top)
        with g.scope("value/checkpoints", root=True):
            prior = expand_rows(g, self.X, g.const(t.prior[None, None, :]))
        vals = [prior]
        for s in t.ctl_scorer:
            v = self.value(int(s))
            with g.scope("value/checkpoints", root=True):
                vals.append(g.unsqueeze(v, [1]))
        with g.scope("value/checkpoints", root=True):
            return g.concat(vals, 1)


def fast_scores(tab: Tables, g: Graph, tree_op, X="X"):
    """Fast mode: the output bank as one summed ensemble, one copy of the
    forest per output (a leaf casts one vote), plus the base score; without
    a tree operator, the walk's leaf values summed over trees."""
    if tab.top_kind != KIND_TREES:
        raise ValueError("mode='fast' needs a model whose output is a tree bank")
    n = tab.top
    K = int(tab.node_width[n])
    trees = np.arange(tab.node_first[n], tab.node_first[n] + tab.node_count[n])
    paths = tree_paths(tab, tab.tree_root.shape[0])
    with g.scope("value/fast", root=True):
        if tree_op == "gather":
            total = _walked_sum(tab, g, X, paths, trees, K)
        else:
            forest = Forest.concat([ir_forest(tab, paths, trees, vote=lambda nodes, k=k: (
                np.full(nodes.size, k), tab.leaf_value[tab.tn_value[nodes] + k])) for k in range(K)])
            total = tree_ensemble(g, X, forest, K, tree_op)
        if not tab.top_f64:
            return g.op("Add", total, g.const(tab.bias[tab.node_bias[n]: tab.node_bias[n] + K][None]))
        # a float64 bank: its leaves voted as float32 (rounded), the sum is
        # widened, the float64 base added and the divisor applied; scores
        # are float64 but only near the exact ones (docs/numerics.md)
        total = g.op("Add", g.cast(total, TensorProto.DOUBLE),
                     g.const(tab.bias64[tab.node_bias[n]: tab.node_bias[n] + K][None]))
        d = float(tab.node_div[n])
        return total if d == 1 else g.op("Div", total, g.const(np.float64(d)))


def _walked_sum(tab: Tables, g: Graph, X, paths, trees, K):
    """[N, K] float32 without a tree operator: the walk's leaves look their
    float32 values up and ReduceSum adds them over trees, in its own order
    as the tree operator does (the fast mode's bound, docs/numerics.md)."""
    forest = ir_forest(tab, paths, trees, vote=lambda nodes: (np.zeros(nodes.size, np.int64),
                                                             np.zeros(nodes.size, np.float32)))
    vals = np.zeros((forest.tree.size, K), np.float32)
    leaf = forest.feature < 0
    vals[leaf] = tab.leaf_value[tab.tn_value[forest.node[leaf]][:, None] + np.arange(K)]
    node = tree_walk(g, X, forest)
    return g.op("ReduceSum", g.op("Gather", g.const(vals), node), g.const([1], np.int64), keepdims=0)
