"""Compile a Model to an ONNX graph that returns what the reference returns.

``compile_onnx(model)`` builds, from standard ai.onnx / ai.onnx.ml operators
only (no custom ops, no per-row Loop or If):

* **values**: one SUM-aggregated tree-ensemble operator gives, per row, the
  leaf each tree reaches (several trees' leaf numbers packed into one
  integer-valued target, exact in float32); leaf values are then exact
  table lookups.  Every sum whose order matters (trees in bank order,
  linear terms and support vectors in IR order, kernel features) is a
  ``CumSum``, which onnxruntime evaluates left to right: the bits match the
  reference.  exp is the portable expf built from the same basic operations
  (onnx_graph.expf), so it matches too; there is no ulp bound to document.
* **lazy cost**: the static schedule (onnx_schedule.py) numbers every place
  a unit can be touched.  Per row, bit sets of the features on each reached
  leaf's path (a table lookup by leaf), searched for each feature's first
  tree (a segment tree of BitwiseOr), give each unit the slot of its first
  touch in an active region, TopK sorts the paid units into acquisition
  order, and CumSum adds their costs in float64 in that order, as the
  reference does.  The budget
  halts the row at the first unit whose running sum exceeds it; checkpoints
  completed before that give ``stage`` and the returned scores.
* **routing** (cascade exits, classifier-tree branches) is a per-row boolean
  mask over regions, computed from the scorers' margins.

Outputs: ``label`` and ``probabilities`` (classifiers; probabilities only
with a logistic / softmax transform) or ``variable`` (regression), then
``scores`` [N, K] float32, ``cost`` [N] float64, ``stage`` [N] int64 and
``features_used`` [N, F] bool.  Inputs: ``X`` [N, F] float32 and, unless
``budget=False``, ``budget`` [N] float64 (+inf for no limit).

``mode="fast"`` emits one summed tree ensemble instead (tree-bank outputs
only): predictions and scores, no cost, stage or features_used, and scores
summed in onnxruntime's order, which may differ from the reference's in the
last bits (docs/numerics.md).
"""
from __future__ import annotations

import json
from dataclasses import dataclass
from fractions import Fraction

import numpy as np
import onnx
from onnx import TensorProto, helper

from ..ir.codes import (EXIT_ABS_GE, EXIT_GE, EXIT_LE, KERNEL_LINEAR, KERNEL_RBF, KIND_ANYTIME,
                        KIND_CASCADE, KIND_CTREE, KIND_KERNEL, KIND_LINEAR, KIND_TREES, TERM_FEATURE,
                        TERM_NODE, TERM_TREE)
from ..ir.lowering import Tables, lower
from .onnx_graph import (Graph, bit_layout, canonical_nan, expand_rows, expf, filled,
                         first_argmax, first_set_bits, logistic, match_constant_ranks, rows_like,
                         softmax)
from .onnx_schedule import TreePaths, UnitLayout, schedule, tree_paths
from .onnx_trees import (MAX_EXACT, ML_OPSET, Forest, ir_forest,
                         supported_tree_op, tree_ensemble)

DEFAULT_OPSET = 18      # ScatterElements(reduction="min") needs 18
WORDS_PER_STEP = 4      # bit-set words searched together (4 x 31 features)
F32, F64, I64, BOOL = TensorProto.FLOAT, TensorProto.DOUBLE, TensorProto.INT64, TensorProto.BOOL
I32 = TensorProto.INT32


def compile_onnx(model, *, opset=None, mode="exact", budget=True, features_used=True,
                 tree_op=None) -> onnx.ModelProto:
    """The ONNX graph of ``model``.  ``opset`` is the ai.onnx opset (>= 18);
    ``tree_op`` forces "TreeEnsemble" or "TreeEnsembleRegressor" (default:
    the newest the installed onnxruntime runs)."""
    opset = DEFAULT_OPSET if opset is None else int(opset)
    if opset < DEFAULT_OPSET:
        raise ValueError(f"opset {opset}: the exact graph needs ai.onnx opset >= {DEFAULT_OPSET}")
    if mode not in ("exact", "fast"):
        raise ValueError(f"mode must be 'exact' or 'fast', got {mode!r}")
    tree_op = tree_op or supported_tree_op()
    if tree_op not in ML_OPSET:
        raise ValueError(f"tree_op must be one of {sorted(ML_OPSET)}, got {tree_op!r}")
    tab = lower(model)
    g = Graph()
    inputs = [helper.make_tensor_value_info("X", F32, ["N", model.n_features])]
    if mode == "fast":
        outputs = _finish(g, model, _fast_scores(tab, g, tree_op), None)
    else:
        scores, cost, stage, used = _Exact(model, tab, g, tree_op).run(with_budget=budget)
        outputs = _finish(g, model, scores, (cost, stage, used if features_used else None))
        if budget:
            inputs.append(helper.make_tensor_value_info("budget", F64, ["N"]))
    graph = helper.make_graph(g.nodes, "skinflint", inputs, outputs, g.inits)
    proto = helper.make_model(graph, opset_imports=[
        helper.make_opsetid("", opset), helper.make_opsetid("ai.onnx.ml", ML_OPSET[tree_op])],
        producer_name="skinflint", producer_version=_version())
    proto.ir_version = 9   # readable by onnxruntime >= 1.16
    helper.set_model_props(proto, _metadata(model, mode, tree_op))
    match_constant_ranks(proto)
    onnx.checker.check_model(proto, full_check=True)
    return proto


def _version():
    from skinflint import __version__
    return __version__


def _metadata(model, mode, tree_op):
    feats = [{"name": f.name, "cost": f.cost, "group": None if f.group is None else
              model.groups[f.group].name} for f in model.features]
    return {"skinflint.version": _version(), "skinflint.model_hash": model.hash(),
            "skinflint.mode": mode, "skinflint.tree_op": tree_op,
            "skinflint.features": json.dumps(feats),
            "skinflint.groups": json.dumps([{"name": g.name, "cost": g.cost} for g in model.groups]),
            "skinflint.task": json.dumps({"kind": model.task.kind, "classes": list(model.task.classes),
                                          "transform": model.task.transform})}


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


class _Exact:
    """Builds the exact graph for one model (state: the lowered tables, the
    tree paths, and the node values already emitted)."""

    def __init__(self, model, tab: Tables, g: Graph, tree_op):
        self.m, self.t, self.g, self.op = model, tab, g, tree_op
        self.X = "X"
        self.F = model.n_features
        self.layout = UnitLayout(self.F, tab.tree_root.shape[0] if _has_trees(tab) else 0,
                                 tab.sv_cost.shape[0] if _has_kernels(tab) else 0)
        self.paths: TreePaths = tree_paths(tab, self.layout.n_trees)
        self.sched = schedule(tab, self.layout, self.paths.tree_depth)
        if self.sched.n_slots >= MAX_EXACT:
            raise ValueError("the model has too many evaluation steps for the exact ONNX graph")
        # "never touched" is a slot after every slot: comparisons stay plain
        self.never = np.int64(self.sched.n_slots)
        self._values, self._leaf, self._layout = {}, None, None

    # -- trees ------------------------------------------------------------
    def _leaf_layout(self) -> LeafLayout:
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
            vals = t.leaf_value[np.repeat(t.tn_value[leaves], w) + within].astype(np.float32)
            base = np.r_[0, np.cumsum(n_leaves * width)[:-1]]
            start = base[p.tree_of[leaves]] + local[leaves] * w
            self._layout = LeafLayout(leaves, start, local, n_leaves, base, width, vals)
        return self._layout

    def _tree_widths(self):
        """[T]: the output width of the bank each tree belongs to."""
        t = self.t
        width = np.ones(self.layout.n_trees, np.int64)
        for n in np.flatnonzero(t.node_kind == KIND_TREES):
            first, count = int(t.node_first[n]), int(t.node_count[n])
            width[first:first + count] = t.node_width[n]
        return width

    def leaf(self):
        """([N, T] int32, values table): per tree, where the values of the
        leaf it reaches start in the table.

        One SUM-aggregated ensemble of the trees, P trees to a target: the
        j-th tree on a target votes (its leaf number) * 2^(b j), with 2^b
        above every tree's leaf count and b P <= 24, so every partial sum is
        an integer float32 holds exactly, whatever order onnxruntime adds
        in.  Fewer targets cost less (measured, 1000 trees, 20,000 rows:
        536 ms with one target per 4 trees, 640 ms with one per tree).  The
        digits come back as exact integer shifts and masks, in int32 (int64
        ops run ~4x slower in onnxruntime)."""
        if self._leaf is None:
            g, t, p = self.g, self.t, self.paths
            T = self.layout.n_trees
            lay = self._leaf_layout()
            local = lay.local
            b = max(1, int(np.ceil(np.log2(max(2, lay.n_leaves.max())))))
            P = max(1, 24 // b)
            n_targets = -(-T // P)
            # tree i is digit i // targets of target i % targets: the digits
            # then come out target by target within a digit, in tree order
            tree_of = p.tree_of
            forest = ir_forest(t, p, np.arange(T), vote=lambda nodes: (
                tree_of[nodes] % n_targets,
                (local[nodes] * 2.0 ** (b * (tree_of[nodes] // n_targets))).astype(np.float32)))
            y = g.cast(tree_ensemble(g, self.X, forest, n_targets, self.op), TensorProto.UINT32)
            digits = -(-T // n_targets)       # <= P: the last digit may be partly empty
            if digits > 1:
                mask = g.const(np.uint32((1 << b) - 1))
                y = g.concat([g.op("BitwiseAnd", g.op("BitShift", y, g.const(np.uint32(b * j)),
                                                      direction="RIGHT") if j else y, mask)
                              for j in range(digits)], 1)
                if n_targets * digits > T:
                    y = g.slice(y, 0, T, 1)
            q = g.cast(y, I32)
            if np.any(lay.width != 1):
                q = g.op("Mul", q, g.const(lay.width[None].astype(np.int32)))
            self._leaf = g.op("Add", q, g.const(lay.base[None].astype(np.int32))), lay.vals
        return self._leaf

    def first_touches(self):
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
        table, and the slot is that tree's slot + 1 + depth."""
        t, p, sc, g = self.t, self.paths, self.sched, self.g
        F, R, T = self.F, sc.n_regions, self.layout.n_trees
        if T == 0:
            return None
        start, _ = self.leaf()
        lay = self._leaf_layout()
        on_path = p.path_features(t.tn_feature, lay.leaves)            # [leaves, D]
        by_start = np.full((len(lay.vals), on_path.shape[1]), -1, np.int32)
        by_start[lay.start] = on_path
        W, B = bit_layout(F)
        sets = np.zeros((W, len(lay.vals)), np.int32)
        row, d = np.nonzero(by_start >= 0)
        f = by_start[row, d]
        np.bitwise_or.at(sets, (f // B, row), np.int32(1) << (f % B))
        regions = []
        for r in range(R):
            occ = np.flatnonzero(sc.occ_region == r)
            if not occ.size:
                regions.append(rows_like(g, self.X, self.never, np.int64, (1, F)))
                continue
            trees = sc.occ_tree[occ]
            cols = start if np.array_equal(trees, np.arange(T)) else g.gather(start, trees, 1)
            # a few words at a time: [words N, trees] and [N, features, depth]
            # intermediates stay bounded however many features there are
            steps = [self._first_slots(cols, sc.occ_slot[occ], sets[w0:w0 + WORDS_PER_STEP], B,
                                       np.arange(w0 * B, min(F, (w0 + WORDS_PER_STEP) * B)), by_start)
                     for w0 in range(0, W, WORDS_PER_STEP)]
            regions.append(g.unsqueeze(g.concat(steps, 1), [1]))
        y = g.concat(regions, 1)
        static = self._static_features()
        return g.op("Min", y, g.const(static[None])) if np.any(static < self.never) else y

    def _first_slots(self, cols, slots, sets, B, features, by_start):
        """[N, len(features)] int64: the first slot at which the trees whose
        leaf starts are ``cols`` [N, n] (evaluated at ``slots``) touch
        ``features``, whose bits ``sets`` [words, leaf starts] hold."""
        g, n = self.g, slots.size
        per_word = g.op("Reshape", g.op("Gather", g.const(sets), cols, axis=1),
                        g.const([-1, n], np.int64))                          # [words N, trees]
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
        return g.op("Add", g.op("Gather", g.const(np.r_[slots + 1, self.never]), first), depth)

    def leaf_values(self, trees, outputs):
        """Leaf values of global ``trees`` at ``outputs``, by lookup: outputs
        [P] (one per tree) give [N, P]; outputs [1, 1, K] give [N, P, K]."""
        g = self.g
        start, vals = self.leaf()
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
        init = expand_rows(g, self.X, g.const(t.bias[t.node_bias[n]: t.node_bias[n] + K][None, None, :]))
        kind = t.node_kind[n]
        if kind == KIND_TREES:
            steps = self.leaf_values(np.arange(first, first + count), np.arange(K)[None, None, :])
            return g.cumsum(g.concat([init, steps], 1), 1)
        if kind == KIND_LINEAR:
            terms = np.arange(first, first + count)
            live = terms[t.term_live[terms] != 0]
            if not live.size:
                return g.gather(init, np.zeros(count + 1, np.int64), 1)
            x = self.term_inputs(live)
            w = t.weight[t.term_weight[live][:, None] + np.arange(K)]
            contrib = g.op("Mul", g.unsqueeze(x, [2]), g.const(w[None]))
            run = g.cumsum(g.concat([init, contrib], 1), 1)
            steps = np.concatenate([[0], np.cumsum(t.term_live[terms] != 0)])
            return run if live.size == count else g.gather(run, steps, 1)
        q = t.node_kernel[n]
        kv = self.kernel_values(q, count)
        a0 = t.k_alpha_first[q]
        alpha = t.alpha[a0: a0 + count * K].reshape(count, K)
        contrib = g.op("Mul", g.unsqueeze(kv, [2]), g.const(alpha[None]))
        return g.cumsum(g.concat([init, contrib], 1), 1)

    def value(self, n):
        """[N, K] float32 value of scoring node n, fully evaluated."""
        if n not in self._values:
            self._values[n] = self.g.take_last(self.prefix(n), 1)
        return self._values[n]

    def term_inputs(self, live):
        """[N, len(live)] float32 inputs of linear terms, in term order."""
        g, t = self.g, self.t
        kinds, idx, out = t.term_kind[live], t.term_index[live], t.term_output[live]
        blocks, order = [], []
        fe = np.flatnonzero(kinds == TERM_FEATURE)
        if fe.size:
            blocks.append(g.gather(self.X, idx[fe], 1))
            order.append(fe)
        tr = np.flatnonzero(kinds == TERM_TREE)
        if tr.size:
            blocks.append(self.leaf_values(idx[tr], out[tr]))
            order.append(tr)
        for p in np.flatnonzero(kinds == TERM_NODE):
            blocks.append(g.gather(self.value(int(idx[p])), [int(out[p])], 1))
            order.append([p])
        x = g.concat(blocks, 1)
        pos = np.concatenate([np.asarray(o, np.int64) for o in order])
        if np.array_equal(pos, np.arange(live.size)):
            return x
        return g.gather(x, np.argsort(pos), 1)

    def kernel_values(self, q, S):
        """[N, S] float32 k(sv_s, x) for kernel q's S support vectors,
        features in IR order (reference _kernel_value)."""
        g, t = self.g, self.t
        nf, f0 = int(t.k_n_feat[q]), int(t.k_feat_first[q])
        sv = t.sv[t.k_sv_first[q]: t.k_sv_first[q] + S * nf].reshape(S, nf)
        xs = g.unsqueeze(g.gather(self.X, t.k_feat[f0: f0 + nf].astype(np.int64), 1), [1])  # [N,1,nf]
        kt = t.k_type[q]
        if kt == KERNEL_RBF:
            d = g.op("Sub", xs, g.const(sv[None]))
            acc = g.take_last(g.cumsum(g.op("Mul", d, d), 2), 2)   # 0 + d0^2 == d0^2 exactly
            return expf(g, g.op("Mul", g.const(np.float32(-t.k_gamma[q])), acc))
        prod = g.op("Mul", xs, g.const(sv[None]))
        zero = filled(g, g.gather(prod, [0], 2), 0.0, np.float32)   # the sum starts at +0
        acc = g.take_last(g.cumsum(g.concat([zero, prod], 2), 2), 2)
        if kt == KERNEL_LINEAR:
            return acc
        b = g.op("Add", g.op("Mul", g.const(t.k_gamma[q]), acc), g.const(t.k_coef0[q]))
        v = filled(g, b, 1.0, np.float32)
        for _ in range(int(t.k_degree[q])):
            v = g.op("Mul", v, b)
        return v

    # -- control ----------------------------------------------------------
    def margin(self, c):
        t = self.t
        return self.g.squeeze(self.g.gather(self.value(int(t.ctl_scorer[c])), [int(t.ctl_output[c])], 1), [1])

    def active_regions(self):
        """[N, C] bool: rows whose route reaches each control checkpoint."""
        g, t = self.g, self.t
        C = t.ctl_scorer.shape[0]
        true = rows_like(g, self.X, True, np.bool_)
        act = [None] * C
        act[0] = true
        if t.top_kind == KIND_CASCADE:
            for i in range(C - 1):
                m, thr, rule = self.margin(i), t.ctl_threshold[i], t.ctl_rule[i]
                if rule == EXIT_LE:
                    ex = g.op("LessOrEqual", m, g.const(thr))
                elif rule == EXIT_GE:
                    ex = g.op("GreaterOrEqual", m, g.const(thr))
                elif rule == EXIT_ABS_GE:
                    ex = g.op("Or", g.op("GreaterOrEqual", m, g.const(thr)),
                              g.op("LessOrEqual", m, g.const(np.float32(-thr))))
                else:
                    act[i + 1] = act[i]
                    continue
                act[i + 1] = g.op("And", act[i], g.op("Not", ex))
        elif t.top_kind == KIND_ANYTIME:
            act = [true] * C
        else:
            order = [0]
            for c in order:       # breadth first: parents before children
                if t.ctl_left[c] < 0:
                    continue
                go_left = g.op("LessOrEqual", self.margin(c), g.const(t.ctl_threshold[c]))
                act[t.ctl_left[c]] = g.op("And", act[c], go_left)
                act[t.ctl_right[c]] = g.op("And", act[c], g.op("Not", go_left))
                order += [int(t.ctl_left[c]), int(t.ctl_right[c])]
            # nodes off every route never run
            act = [a if a is not None else rows_like(g, self.X, False, np.bool_) for a in act]
        return g.concat([g.unsqueeze(a, [1]) for a in act], 1)

    def checkpoint_values(self):
        """[N, C + 1, K]: the value before any checkpoint, then each one's."""
        g, t = self.g, self.t
        if t.top_kind <= KIND_KERNEL:
            return self.prefix(t.top)
        prior = expand_rows(g, self.X, g.const(t.prior[None, None, :]))
        vals = [g.unsqueeze(self.value(int(s)), [1]) for s in t.ctl_scorer]
        return g.concat([prior] + vals, 1)

    # -- cost, halting, stage ---------------------------------------------
    def _static(self, units):
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
        return self._static(np.arange(self.F))

    def _first_active(self, per_region, mask, per_row):
        """Slots per region, [N, R, U] (or a constant [1, R, U] when not
        ``per_row``) -> [N, U]: the smallest among the row's active regions."""
        g = self.g
        if mask is None:
            one = g.squeeze(per_region, [1])
            return one if per_row else expand_rows(g, self.X, one)
        hidden = g.where(g.unsqueeze(mask, [2]), per_region, g.const(self.never))
        return g.op("ReduceMin", hidden, g.const([1], np.int64), keepdims=0)

    def feature_slots(self, mask):
        """[N, F] int64: per row, the slot of each feature's first touch."""
        paths = self.first_touches()
        if paths is None:
            return self._first_active(self.g.const(self._static_features()[None]), mask, per_row=False)
        return self._first_active(paths, mask, per_row=True)

    def run(self, with_budget):
        g, t, L, sched = self.g, self.t, self.layout, self.sched
        mask = None if t.top_kind <= KIND_KERNEL else self.active_regions()
        feat_slots = self.feature_slots(mask)
        # groups: paid at the first touch of any member, together with it
        fg = self.m.feature_groups
        G = len(self.m.groups)
        group_slots = None
        if G:
            idx = expand_rows(g, self.X, g.const(np.where(fg >= 0, fg, G).astype(np.int64)[None]))
            group_slots = g.op("ScatterElements", rows_like(g, self.X, self.never, np.int64, (G + 1,)),
                               idx, feat_slots, axis=1, reduction="min")
        # the units with a cost.  A group shares its slot with the member
        # that pays it and must be paid just before it: groups come first,
        # and TopK breaks ties by position (the ONNX spec; tested)
        fc, gc = self.m.feature_costs, self.m.group_costs
        feats = np.flatnonzero(fc > 0)
        trees = np.flatnonzero(t.tree_cost[:L.n_trees] > 0)
        svs = np.flatnonzero(t.sv_cost[:L.n_sv] > 0)
        groups = np.flatnonzero(gc > 0) if G else np.zeros(0, np.int64)
        parts = []
        if groups.size:
            parts.append(g.gather(group_slots, groups, 1))
        if feats.size:
            parts.append(feat_slots if feats.size == self.F else g.gather(feat_slots, feats, 1))
        others = np.concatenate([L.tree0 + trees, L.sv0 + svs])
        if others.size:
            parts.append(self._first_active(g.const(self._static(others)[None]), mask, per_row=False))
        costs = np.concatenate([gc[groups], fc[feats], t.tree_cost[trees], t.sv_cost[svs]])
        budget = "budget" if with_budget else None
        never = rows_like(g, self.X, self.never, np.int64)
        if parts:
            h, cost = self._pay(g.concat(parts, 1), costs.astype(np.float64), budget, never)
        else:
            h, cost = never, rows_like(g, self.X, 0.0, np.float64)
        if budget is not None:
            # a negative budget halts at the very first unit, even a free one
            first_static = self._static(np.arange(L.n_features + L.n_trees + L.n_sv)).min(1, keepdims=True)
            first = g.op("Min", g.op("ReduceMin", feat_slots, g.const([1], np.int64), keepdims=0),
                         g.squeeze(self._first_active(g.const(first_static[None]), mask, per_row=False), [1]))
            h = g.where(g.op("Less", budget, g.const(np.float64(0))), first, h)
        h_col = g.unsqueeze(h, [1])
        used = g.op("Less", feat_slots, h_col)
        # checkpoints done before the halt; stage = the furthest along the route
        if mask is None:
            # one route, checkpoints in slot order: look the count up by slot
            done_by = np.searchsorted(np.sort(sched.cp_end), np.arange(self.never + 1), side="right")
            stage = g.op("Gather", g.const(done_by - 1), h)
        else:
            done = g.op("And", g.op("GreaterOrEqual", h_col, g.const(sched.cp_end[None])),
                        g.gather(mask, sched.cp_region, 1))
            if t.top_kind == KIND_CTREE:
                key = g.where(done, g.const(sched.cp_order.astype(np.int32)[None]), g.const(np.int32(-1)))
                best = g.op("ArgMax", key, axis=1, keepdims=0)
                any_done = g.op("GreaterOrEqual", g.op("ReduceMax", key, g.const([1], np.int64), keepdims=0),
                                g.const(np.int32(0)))
                stage = g.where(any_done, best, g.const(np.int64(-1)))
            else:   # checkpoints complete in order: count them
                n_done = g.op("ReduceSum", g.cast(done, I64), g.const([1], np.int64), keepdims=0)
                stage = g.op("Sub", n_done, g.const(np.int64(1)))
        vals = self.checkpoint_values()
        K = int(self.m.task.n_outputs)
        pick = g.op("Expand", g.unsqueeze(g.op("Add", stage, g.const(np.int64(1))), [1, 2]),
                    g.concat([g.op("Shape", stage), g.const([1, K], np.int64)], 0))
        scores = g.squeeze(g.op("GatherElements", vals, pick, axis=1), [1])
        return scores, cost, stage, used

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
        touched = g.cast(g.op("Less", slots, g.const(self.never)), F64)
        total = g.op("ReduceSum", g.op("Mul", touched, g.const(costs[None])), g.const([1], np.int64),
                     keepdims=0)     # a MatMul with the cost vector took 3x as long
        if budget is None:
            return never, total
        rows = g.op("Reshape", g.op("NonZero", g.op("Greater", total, budget)),
                    g.const([-1, 1], np.int64))                               # [M, 1]

        def some(x):
            return g.op("GatherND", x, rows)
        h, cost = self._pay_in_order(some(slots), costs, some(budget), some(never))
        return g.op("ScatterND", never, rows, h), g.op("ScatterND", total, rows, cost)

    def _pay_in_order(self, slots, costs, budget, never):
        """Sort a row's paid units by slot, add their costs in that order
        (float64), and halt at the first unit over the budget.  Returns the
        halting slot ('never' if none) and the cost paid before it.

        Units never touched (slot ``never``) sort last; their costs enter
        the running sum only after every touched unit, where they can halt
        nothing (their slot is never) and are never paid."""
        g = self.g
        U = costs.size
        sslot, order = g.op("TopK", slots, g.const([U], np.int64), axis=1, largest=0, sorted=1, n_out=2)
        run = g.cumsum(g.op("Gather", g.const(costs), order), 1)
        h = never
        if budget is not None:
            over = g.cast(g.op("Greater", run, g.unsqueeze(budget, [1])), TensorProto.INT32)
            first = g.op("ArgMax", over, axis=1, keepdims=1)
            hit = g.op("GatherElements", sslot, first, axis=1)
            any_over = g.cast(g.op("ReduceMax", over, g.const([1], np.int64), keepdims=0), BOOL)
            h = g.where(any_over, g.squeeze(hit, [1]), never)
        n_paid = g.op("ReduceSum", g.cast(g.op("Less", sslot, g.unsqueeze(h, [1])), I64),
                      g.const([1], np.int64), keepdims=1)
        at = g.op("Max", g.op("Sub", n_paid, g.const(np.int64(1))), g.const(np.int64(0)))
        paid = g.squeeze(g.op("GatherElements", run, at, axis=1), [1])
        cost = g.where(g.op("Greater", g.squeeze(n_paid, [1]), g.const(np.int64(0))), paid,
                       g.const(np.float64(0)))
        return h, cost


def exact_in_any_order(costs) -> bool:
    """Whether every sum of a subset of ``costs`` (float64, >= 0) is exact
    in float64, whatever the order of the additions: all are multiples of
    the smallest power of two among their denominators, and their total is
    below 2^53 of those units."""
    parts = [Fraction(float(c)) for c in costs if c != 0]
    if not parts:
        return True
    unit = max(p.denominator for p in parts)      # a power of two: floats are dyadic
    return sum(parts) * unit < 2 ** 53


def _fast_scores(tab: Tables, g: Graph, tree_op):
    """Fast mode: the output bank as one summed ensemble, one copy of the
    forest per output (a leaf casts one vote), plus the base score."""
    if tab.top_kind != KIND_TREES:
        raise ValueError("mode='fast' needs a model whose output is a tree bank")
    n = tab.top
    K = int(tab.node_width[n])
    trees = np.arange(tab.node_first[n], tab.node_first[n] + tab.node_count[n])
    paths = tree_paths(tab, tab.tree_root.shape[0])
    forest = Forest.concat([ir_forest(tab, paths, trees, vote=lambda nodes, k=k: (
        np.full(nodes.size, k), tab.leaf_value[tab.tn_value[nodes] + k])) for k in range(K)])
    total = tree_ensemble(g, "X", forest, K, tree_op)
    return g.op("Add", total, g.const(tab.bias[tab.node_bias[n]: tab.node_bias[n] + K][None]))


def _has_trees(tab):
    return bool(np.any(tab.node_kind == KIND_TREES))


def _has_kernels(tab):
    return bool(np.any(tab.node_kind == KIND_KERNEL))


def _finish(g: Graph, model, scores, extra):
    """Canonical NaNs, the ONNX-ML prediction outputs, then scores and cost."""
    task = model.task
    K = task.n_outputs
    scores = canonical_nan(g, scores)
    outs = []

    def out(src, name, elem, shape):
        g.rename(src, name)
        outs.append(helper.make_tensor_value_info(name, elem, shape))

    if task.kind == "regression":
        out(scores, "variable", F32, ["N", K])
    else:
        classes = list(task.classes)
        is_int = all(isinstance(c, (int, np.integer)) and not isinstance(c, bool) for c in classes)
        table = g.const(np.array(classes, np.int64 if is_int else str))
        if task.kind == "binary":
            s0 = g.squeeze(g.gather(scores, [0], 1), [1])
            idx = g.cast(g.op("Greater", s0, g.const(np.float32(0))), I64)
            proba = None
            if task.transform == "logistic":
                p = canonical_nan(g, logistic(g, g.gather(scores, [0], 1)))
                proba = canonical_nan(g, g.concat([g.op("Sub", g.const(np.float32(1)), p), p], 1))
        else:
            idx, best = first_argmax(g, scores, K)
            proba = canonical_nan(g, softmax(g, scores, best)) if task.transform == "softmax" else None
        out(g.op("Gather", table, idx), "label", I64 if is_int else TensorProto.STRING, ["N"])
        if proba is not None:
            out(proba, "probabilities", F32, ["N", task.n_proba])
    out(scores, "scores", F32, ["N", K])
    if extra is not None:
        cost, stage, used = extra
        out(cost, "cost", F64, ["N"])
        out(stage, "stage", I64, ["N"])
        if used is not None:
            out(used, "features_used", BOOL, ["N", model.n_features])
    return outs
