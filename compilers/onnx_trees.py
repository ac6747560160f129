"""Forests of (possibly cut) trees as one ai.onnx.ml tree-ensemble op, or
as a walk in standard tensor ops.

Three emitters of the same ``Forest`` (``tree_op``):

* ``TreeEnsembleRegressor`` (ai.onnx.ml opset 3): every onnxruntime from
  1.16 runs it (the default target, ``TARGETS``);
* ``TreeEnsemble`` (ai.onnx.ml opset 5): onnxruntime >= 1.24 (1.21-1.23
  load it but return wrong leaves on some rows: measured by tests/compat);
* ``"gather"``: no ai.onnx.ml operator; ``tree_walk`` descends all trees one
  level at a time with Gather / GatherElements / LessOrEqual / Where, for
  runtimes and execution providers without tree operators.

Every leaf casts one (target, weight) vote.  The exact graph (see
compilers/onnx.py) uses one SUM-aggregated ensemble of the IR trees voting
packed leaf numbers, or the walk's leaves directly; fast mode, one ensemble
voting leaf values, or the walk's leaf values summed.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from onnx import TensorProto, numpy_helper

from ..ir.codes import CAT_INTEGER, CAT_TRUNCATE
from ..ir.lowering import Tables
from .onnx_graph import Graph
from .onnx_schedule import TreePaths

# the ai.onnx.ml opset each tree operator needs (None: no ai.onnx.ml import)
ML_OPSET = {"TreeEnsembleRegressor": 3, "TreeEnsemble": 5, "gather": None}
# compile targets: the tree operator each runs (docs/onnx.md, measured on
# every onnxruntime minor by tests/compat); the first is the default
TARGETS = {"onnxruntime-1.16": "TreeEnsembleRegressor", "onnxruntime-1.24": "TreeEnsemble",
           "no-ml-ops": "gather"}
DEFAULT_TARGET = "onnxruntime-1.16"
MAX_EXACT = 1 << 24     # votes travel as float32: integers below 2^24 are exact
# a (feature, rule)'s decisions are read as one row of a float32 table by
# code up to this size, else one by one on the IR's uint32 words
# (CategoryColumns.append_to)
MEMBER_TABLE_BYTES = 1 << 24


@dataclass
class Forest:
    """Nodes in (tree, depth) order, so each tree's root comes first.
    left/right are forest node ids, -1 at leaves; target/weight at leaves."""

    tree: np.ndarray        # [n] forest tree of each node
    feature: np.ndarray     # [n] -1 at leaves
    threshold: np.ndarray   # [n] float32
    missing_left: np.ndarray
    left: np.ndarray
    right: np.ndarray
    target: np.ndarray      # [n] -1 at internal nodes
    weight: np.ndarray      # [n] float32
    node: np.ndarray        # [n] the IR node each comes from (tn_* index)
    # more votes of leaves, (forest node, target, weight) arrays: a leaf may
    # vote for several targets (TreeEnsembleRegressor only; opset 5 gives a
    # leaf one target)
    extra: tuple | None = None
    # category-set splits: their decisions as columns appended to X
    # (``CategoryColumns``); their nodes read those columns
    cats: CategoryColumns | None = None

    @property
    def n_trees(self):
        return int(self.tree[-1]) + 1 if self.tree.size else 0

    @staticmethod
    def concat(forests):
        forests = [f for f in forests if f.tree.size]
        parts, node0, tree0 = [], 0, 0
        cats = None
        for f in forests:
            left, right = (np.where(a >= 0, a + node0, -1) for a in (f.left, f.right))
            feature = f.feature
            if f.cats is not None:
                if cats is None or cats.same(f.cats):     # copies of one forest share its columns
                    cats = f.cats
                else:
                    feature = np.where(feature >= cats.n_features, feature + cats.feature.size, feature)
                    cats = cats.join(f.cats)
            parts.append((f.tree + tree0, feature, f.threshold, f.missing_left,
                          left, right, f.target, f.weight, f.node))
            node0 += f.tree.size
            tree0 += f.n_trees
        return Forest(*(np.concatenate(cols) for cols in zip(*parts, strict=True)), cats=cats)


@dataclass
class CategoryColumns:
    """The category-set splits of a forest as numeric ones: column k, appended
    to X after its ``n_features`` columns, is 0.0 where decision k sends the
    row left and 1.0 where right, and the nodes that make decision k read
    column ``n_features + k`` with threshold 0.5 (x <= 0.5 goes left; the
    column is never NaN).  Nodes with the same feature, rule, set and
    missing / other directions share a decision.

    Decision k reads X column ``feature[k]`` (x) and goes, as the
    reference's ``category_left`` (runtimes/_vm.py): left iff
    ``missing_left[k]`` when x is NaN; when x is a code of the rule below
    ``32 * words[k]`` (rule 0 "truncate": x > -1, 1 "truncate_nonnegative":
    x >= 0, 2 "integer": x >= 0 and x == trunc(x); code c = trunc(x)), left
    iff c is in its set, the ``words[k]`` uint32 words of ``bits`` from
    ``begin[k]`` (least significant bit first, as the IR's); else left iff
    ``other_left[k]``."""

    n_features: int
    feature: np.ndarray       # [K] int64
    rule: np.ndarray          # [K] int64: CAT_TRUNCATE / CAT_TRUNCATE_NONNEGATIVE / CAT_INTEGER
    words: np.ndarray         # [K] int64
    begin: np.ndarray         # [K] int64: decision k's first word in ``bits``
    bits: np.ndarray          # [sum words] uint32
    missing_left: np.ndarray  # [K] bool
    other_left: np.ndarray    # [K] bool

    FIELDS = ("n_features", "feature", "rule", "words", "begin", "bits", "missing_left", "other_left")

    @staticmethod
    def of_nodes(tab: Tables, nodes, n_features):
        """(columns, column of each node: -1 for numeric nodes and leaves)
        of IR ``nodes``; columns None when none of them is categorical."""
        col = np.full(len(nodes), -1, np.int64)
        begin = getattr(tab, "tn_cat", None)       # None: tables of a model without them
        cat = np.zeros(0, np.int64) if begin is None else np.flatnonzero(begin[nodes] >= 0)
        if not cat.size:
            return None, col
        decisions: dict[tuple, int] = {}
        sets: list[np.ndarray] = []
        for i in cat:
            m = nodes[i]
            b, w = int(tab.tn_cat[m]), int(tab.tn_cat_words[m])
            bits = np.asarray(tab.cat_bits[b:b + w], np.uint32)
            key = (int(tab.tn_feature[m]), int(tab.tn_cat_rule[m]), bool(tab.tn_missing_left[m]),
                   bool(tab.tn_other_left[m]), bits.tobytes())
            if key not in decisions:
                decisions[key] = len(decisions)
                sets.append(bits)
            col[i] = decisions[key]
        # decisions on one (feature, rule) side by side: each such group is
        # one row lookup (``append_to``)
        keys = sorted(decisions, key=lambda k: (k[0], k[1], decisions[k]))
        rank = np.empty(len(keys), np.int64)
        rank[[decisions[k] for k in keys]] = np.arange(len(keys))
        col[cat] = rank[col[cat]]
        sets = [sets[decisions[k]] for k in keys]
        words = np.array([len(a) for a in sets], np.int64)
        return CategoryColumns(
            int(n_features), np.array([k[0] for k in keys], np.int64), np.array([k[1] for k in keys], np.int64),
            words, np.cumsum(words) - words, np.concatenate(sets),
            np.array([k[2] for k in keys], bool), np.array([k[3] for k in keys], bool)), col

    def same(self, other):
        return all(np.array_equal(getattr(self, f), getattr(other, f)) for f in self.FIELDS)

    def join(self, other):
        """These columns, then ``other``'s (its decision k becomes K + k)."""
        if other.n_features != self.n_features:
            raise ValueError("forests over different numbers of features cannot be joined")
        return CategoryColumns(
            self.n_features, np.r_[self.feature, other.feature], np.r_[self.rule, other.rule],
            np.r_[self.words, other.words], np.r_[self.begin, self.bits.size + other.begin],
            np.r_[self.bits, other.bits], np.r_[self.missing_left, other.missing_left],
            np.r_[self.other_left, other.other_left])

    def append_to(self, g: Graph, X):
        """X [N, F] float32 with the K decision columns after it, [N, F + K].

        Decisions on one feature under one rule (a group, side by side) read
        one row each of a float32 table [32 W + 2, decisions] (W: the
        group's most words): row c < 32 W holds every decision's column for
        code c (1 - its bit below its own 32 words, else its other
        direction), row 32 W the other directions (not a code), row 32 W + 1
        the NaN directions.  Per row, ``_slots`` finds each group's row (the
        rule's range test, Cast to int32, the integer test) on [N, groups],
        and one Gather per group copies the row: work per decision is one
        copy, not a chain of elementwise ops over [N, K].  A group whose
        table exceeds ``MEMBER_TABLE_BYTES`` tests its decisions one by one
        on the IR's uint32 words instead (``_by_words``).  Standard ai.onnx
        ops only: ai.onnx.ml's ``BRANCH_MEMBER`` exists only in opset 5
        (onnxruntime >= 1.24)."""
        K = self.feature.size
        cut = np.flatnonzero((self.feature[1:] != self.feature[:-1]) | (self.rule[1:] != self.rule[:-1])) + 1
        runs = list(zip(np.r_[0, cut], np.r_[cut, K], strict=True))
        span = [int(32 * self.words[a:b].max()) for a, b in runs]
        small = [i for i, (a, b) in enumerate(runs) if 4 * (span[i] + 2) * (b - a) <= MEMBER_TABLE_BYTES]
        with g.scope("categories"):
            parts = {}
            if small:
                first = np.array([runs[i][0] for i in small])
                x = g.op("Gather", X, g.const(self.feature[first]), axis=1)                 # [N, groups]
                slot = self._slots(g, x, self.rule[first], np.array([span[i] for i in small]))
                for j, i in enumerate(small):
                    parts[i] = g.op("Gather", g.const(self._table(*runs[i], span[i])),
                                    g.op("Gather", slot, g.const(np.int64(j)), axis=1), axis=0)
            for i, (a, b) in enumerate(runs):
                if i not in parts:
                    parts[i] = self._by_words(g, X, a, b)
            return g.op("Concat", X, *[parts[i] for i in range(len(runs))], axis=1)

    def _table(self, a, b, span):
        """[span + 2, b - a] float32: decisions a..b-1's column by code, for
        a non-code and for NaN (``append_to``)."""
        t = np.repeat((~self.other_left[a:b])[None].astype(np.float32), span + 2, 0)
        t[span + 1] = ~self.missing_left[a:b]
        for k in range(a, b):
            n = 32 * int(self.words[k])
            bits = self.bits[self.begin[k]:self.begin[k] + self.words[k]].astype("<u4")
            t[:n, k - a] = 1 - np.unpackbits(bits.view(np.uint8), bitorder="little")
        return t

    @staticmethod
    def _slots(g: Graph, x, rule, span):
        """[N, groups] int32: the code of x (column g of ``x``) under its
        group's ``rule`` when it is one below ``span``, else span (not a
        code) or span + 1 (NaN).  Cast to int32 truncates toward zero (C's
        cast, the reference's) and only sees values in (-1, span)."""
        G = rule.size
        rules = set(rule.tolist())
        above = {}
        if CAT_TRUNCATE in rules:
            above[CAT_TRUNCATE] = g.op("Greater", x, g.const(np.full((1, G), -1, np.float32)))
        if rules - {CAT_TRUNCATE}:
            above[CAT_INTEGER] = g.op("GreaterOrEqual", x, g.const(np.zeros((1, G), np.float32)))
        if len(above) == 1:
            ok = next(iter(above.values()))
        else:               # onnxruntime has no Where over bool: a mix of rules by And / Or
            trunc = rule == CAT_TRUNCATE
            ok = g.op("Or", g.op("And", above[CAT_TRUNCATE], g.const(trunc[None])),
                      g.op("And", above[CAT_INTEGER], g.const(~trunc[None])))
        ok = g.op("And", ok, g.op("Less", x, g.const(span.astype(np.float32)[None])))      # NaN: False
        safe = g.where(ok, x, g.const(np.zeros((1, G), np.float32)))
        code = g.cast(safe, TensorProto.INT32)
        if CAT_INTEGER in rules:
            whole = g.op("Equal", g.cast(code, TensorProto.FLOAT), safe)
            if rules != {CAT_INTEGER}:
                whole = g.op("Or", whole, g.const((rule != CAT_INTEGER)[None]))
            ok = g.op("And", ok, whole)
        slot = g.where(ok, code, g.const(span.astype(np.int32)[None]))
        return g.where(g.op("IsNaN", x), g.const((span + 1).astype(np.int32)[None]), slot)

    def _by_words(self, g: Graph, X, a, b):
        """[N, b - a] float32: decisions a..b-1 (one feature and rule) one
        by one on the IR's uint32 words, for sets too large to unpack: the
        code's slot under each decision's own 32 words, the word
        trunc(x / 32) (x / 32 is exact, a power of two) of the complemented
        set, BitShift and BitwiseAnd, then Where over the non-code and NaN
        directions (uint8: onnxruntime has no Where over bool)."""
        K = b - a
        x = g.op("Gather", X, g.const(self.feature[a:b]), axis=1)                      # [N, K]
        span = 32 * self.words[a:b]
        slot = self._slots(g, x, self.rule[a:b], span)
        code = g.op("Min", slot, g.const((span - 1).astype(np.int32)[None]))            # in the words
        word_at = g.op("Div", code, g.const(np.full((1, K), 32, np.int32)))
        word = g.op("Gather", g.const(~self.bits.astype(np.uint32)),
                    g.op("Add", word_at, g.const(self.begin[a:b].astype(np.int32)[None])))
        shift = g.op("Sub", code, g.op("Mul", word_at, g.const(np.full((1, K), 32, np.int32))))
        bit = g.op("BitShift", word, g.cast(shift, TensorProto.UINT32), direction="RIGHT")
        right = g.cast(g.op("BitwiseAnd", bit, g.const(np.ones((1, K), np.uint32))), TensorProto.UINT8)
        right = g.where(g.op("Less", slot, g.const(span.astype(np.int32)[None])), right,
                        g.const((~self.other_left[a:b]).astype(np.uint8)[None]))
        right = g.where(g.op("Equal", slot, g.const((span + 1).astype(np.int32)[None])),
                        g.const((~self.missing_left[a:b]).astype(np.uint8)[None]), right)
        return g.cast(right, TensorProto.FLOAT)


def ir_forest(tab: Tables, paths: TreePaths, trees, vote) -> Forest:
    """Global ``trees`` as a forest; ``vote(leaves)`` gives each leaf's
    (target, weight).  Category-set splits become numeric splits of
    columns appended to X (``CategoryColumns``)."""
    trees = np.asarray(trees, np.int64)
    nodes = np.flatnonzero(np.isin(paths.tree_of, trees))
    rank = np.searchsorted(trees, paths.tree_of[nodes])
    order = np.lexsort((nodes, paths.depth[nodes], rank))
    nodes, rank = nodes[order], rank[order]
    local = np.full(tab.tn_feature.shape[0], -1, np.int64)
    local[nodes] = np.arange(nodes.size)
    leaf = tab.tn_feature[nodes] < 0
    left = np.where(leaf, -1, local[np.maximum(tab.tn_left[nodes], 0)])
    right = np.where(leaf, -1, local[np.maximum(tab.tn_right[nodes], 0)])
    target = np.full(nodes.size, -1, np.int64)
    weight = np.zeros(nodes.size, np.float32)
    target[leaf], weight[leaf] = vote(nodes[leaf])
    feature = tab.tn_feature[nodes].astype(np.int64)
    threshold, missing_left = tab.tn_threshold[nodes], tab.tn_missing_left[nodes].astype(np.int64)
    cats, col = CategoryColumns.of_nodes(tab, nodes, tab.feat_cost.shape[0])
    if cats is not None:
        cat = col >= 0
        feature = np.where(cat, cats.n_features + col, feature)
        threshold = np.where(cat, np.float32(0.5), threshold).astype(np.float32)
        missing_left = np.where(cat, 0, missing_left)
    return Forest(rank, feature, threshold, missing_left, left, right, target, weight, nodes, cats=cats)


def forest_input(g: Graph, X, forest: Forest):
    """What the forest's operator reads: X, with its category decisions'
    columns after it when it has category-set splits."""
    return X if forest.cats is None else forest.cats.append_to(g, X)


def tree_walk(g: Graph, X, forest: Forest):
    """[N, trees] int32: the forest node of the leaf each tree reaches, in
    standard ops only.  All trees descend together one level per step
    (``depth`` steps): a leaf points to itself, so a row that reached it
    stays; a split reads its feature (GatherElements on X), goes left when
    x <= threshold or when x is NaN and missing values go left (the
    reference's rule), else right."""
    X = forest_input(g, X, forest)
    n = forest.tree.size
    leaf = forest.feature < 0
    me = np.arange(n, dtype=np.int32)     # int32: onnxruntime's int64 ops run ~4x slower
    left, right = np.where(leaf, me, forest.left), np.where(leaf, me, forest.right)
    depth = np.zeros(n, np.int64)
    for i in me[~leaf]:                 # nodes come in (tree, depth) order: parents first
        depth[left[i]] = depth[right[i]] = depth[i] + 1
    roots = np.r_[0, np.flatnonzero(np.diff(forest.tree)) + 1]
    node = g.op("Expand", g.const(roots[None].astype(np.int32)),
                g.concat([g.n_rows(X), g.const(np.array([roots.size], np.int64))], 0))
    feature = g.const(np.maximum(forest.feature, 0).astype(np.int32))
    threshold = g.const(forest.threshold.astype(np.float32))
    nan_left = g.const(forest.missing_left.astype(bool))
    left_of, right_of = g.const(left.astype(np.int32)), g.const(right.astype(np.int32))
    for _ in range(int(depth.max())):
        x = g.op("GatherElements", X, g.op("Gather", feature, node), axis=1)
        go_left = g.op("Or", g.op("LessOrEqual", x, g.op("Gather", threshold, node)),
                       g.op("And", g.op("IsNaN", x), g.op("Gather", nan_left, node)))
        node = g.where(go_left, g.op("Gather", left_of, node), g.op("Gather", right_of, node))
    return node


def tree_ensemble(g: Graph, X, forest: Forest, n_targets: int, op: str, aggregate="SUM"):
    """Emit the forest, SUM-aggregated (or ``aggregate="MIN"``, TreeEnsembleRegressor
    only: per target the smallest of its votes, 0 for a target no reached
    leaf votes for, on every onnxruntime from 1.16); returns the output
    name ([N, n_targets] float32).  Not for ``op="gather"``: its callers
    read the leaves of ``tree_walk``."""
    X = forest_input(g, X, forest)
    if op == "TreeEnsemble":
        if forest.extra is not None or aggregate != "SUM":
            raise ValueError("TreeEnsemble (ai.onnx.ml opset 5) gives a leaf one target, summed here")
        return _emit_v5(g, X, forest, n_targets)
    return _emit_v3(g, X, forest, n_targets, aggregate)


def _emit_v5(g, X, f: Forest, n_targets):
    # opset 5 has no single-leaf trees: such a tree gets a split on feature 0
    # whose branches reach its leaf and a copy of it (onnxruntime 1.21-1.29
    # misread a split whose both branches reach one leaf: tests/compat)
    is_leaf = f.feature < 0
    roots = np.r_[0, np.flatnonzero(np.diff(f.tree)) + 1]
    lone = roots[is_leaf[roots]]
    inner = np.flatnonzero(~is_leaf)
    leaves = np.flatnonzero(is_leaf)
    imap = np.full(f.tree.size, -1, np.int64)
    imap[inner] = np.arange(inner.size)
    imap[lone] = inner.size + np.arange(lone.size)
    lmap = np.full(f.tree.size, -1, np.int64)
    lmap[leaves] = np.arange(leaves.size)

    def branch(child, lone_leaf):
        leaf = is_leaf[child]
        return (np.r_[np.where(leaf, lmap[child], imap[child]), lone_leaf].tolist(),
                np.r_[leaf.astype(np.int64), np.ones(lone.size, np.int64)].tolist())

    t_ids, t_leaf = branch(f.left[inner], lmap[lone])
    f_ids, f_leaf = branch(f.right[inner], leaves.size + np.arange(lone.size))
    leaves = np.r_[leaves, lone]
    n_splits = inner.size + lone.size
    return g.op("TreeEnsemble", X, domain="ai.onnx.ml",
                nodes_featureids=np.r_[f.feature[inner], np.zeros(lone.size, np.int64)].tolist(),
                nodes_splits=numpy_helper.from_array(
                    np.r_[f.threshold[inner], np.zeros(lone.size, np.float32)].astype(np.float32)),
                nodes_modes=numpy_helper.from_array(np.zeros(n_splits, np.uint8)),
                nodes_truenodeids=t_ids, nodes_trueleafs=t_leaf,
                nodes_falsenodeids=f_ids, nodes_falseleafs=f_leaf,
                nodes_missing_value_tracks_true=np.r_[f.missing_left[inner],
                                                      np.zeros(lone.size, np.int64)].tolist(),
                leaf_targetids=f.target[leaves].tolist(),
                leaf_weights=numpy_helper.from_array(f.weight[leaves].astype(np.float32)),
                tree_roots=imap[roots].tolist(), n_targets=int(n_targets),
                aggregate_function=1, post_transform=0)


def _emit_v3(g, X, f: Forest, n_targets, aggregate="SUM"):
    roots = np.r_[0, np.flatnonzero(np.diff(f.tree)) + 1]
    local = np.arange(f.tree.size) - roots[f.tree]      # root is node 0 of its tree
    leaf = f.feature < 0
    leaves = np.flatnonzero(leaf)
    targets, weights = f.target[leaves], f.weight[leaves].astype(np.float32)
    if f.extra is not None:
        more, more_t, more_w = f.extra
        leaves = np.r_[leaves, more]
        targets, weights = np.r_[targets, more_t], np.r_[weights, np.asarray(more_w, np.float32)]
    return g.op("TreeEnsembleRegressor", X, domain="ai.onnx.ml",
                nodes_treeids=f.tree.tolist(), nodes_nodeids=local.tolist(),
                nodes_featureids=np.maximum(f.feature, 0).tolist(),
                nodes_values=f.threshold.astype(np.float32).tolist(),
                nodes_modes=["LEAF" if x else "BRANCH_LEQ" for x in leaf],
                nodes_truenodeids=np.where(leaf, 0, local[np.maximum(f.left, 0)]).tolist(),
                nodes_falsenodeids=np.where(leaf, 0, local[np.maximum(f.right, 0)]).tolist(),
                nodes_missing_value_tracks_true=f.missing_left.tolist(),
                target_treeids=f.tree[leaves].tolist(), target_nodeids=local[leaves].tolist(),
                target_ids=targets.tolist(), target_weights=weights.tolist(),
                n_targets=int(n_targets), aggregate_function=aggregate,
                post_transform="NONE")
