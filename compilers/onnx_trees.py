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
# category sets up to this many bytes unpacked (one byte per code) are read
# with one Gather, larger ones as the IR's uint32 words (CategoryColumns)
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
        decisions, sets = {}, []
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
        keys = list(decisions)
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
        """X [N, F] float32 with the K decision columns after it, [N, F + K]:
        per decision, the rule's range test, the code (Cast to int32
        truncates toward zero, as C), the integer test, the set's bit
        (``_right_of_code``), then Where over the non-code and NaN
        directions.  Only standard ai.onnx ops: ai.onnx.ml's
        ``BRANCH_MEMBER`` exists only in opset 5 (onnxruntime >= 1.24)."""
        K = self.feature.size
        with g.scope("categories"):
            x = g.op("Gather", X, g.const(self.feature), axis=1)                  # [N, K]
            rules = set(self.rule.tolist())
            above = {}
            if CAT_TRUNCATE in rules:
                above[CAT_TRUNCATE] = g.op("Greater", x, g.const(np.full((1, K), -1, np.float32)))
            if rules - {CAT_TRUNCATE}:
                above[CAT_INTEGER] = g.op("GreaterOrEqual", x, g.const(np.zeros((1, K), np.float32)))
            if len(above) == 1:
                ok = next(iter(above.values()))
            else:           # onnxruntime has no Where over bool: a mix of rules by And / Or
                trunc = self.rule == CAT_TRUNCATE
                ok = g.op("Or", g.op("And", above[CAT_TRUNCATE], g.const(trunc[None])),
                          g.op("And", above[CAT_INTEGER], g.const(~trunc[None])))
            hi = (32 * self.words).astype(np.float32)[None]
            ok = g.op("And", ok, g.op("Less", x, g.const(hi)))                    # NaN: False
            safe = g.where(ok, x, g.const(np.zeros((1, K), np.float32)))         # in (-1, hi): a defined cast
            code = g.cast(safe, TensorProto.INT32)
            if CAT_INTEGER in rules:
                whole = g.op("Equal", g.cast(code, TensorProto.FLOAT), safe)
                if rules != {CAT_INTEGER}:
                    whole = g.op("Or", whole, g.const((self.rule != CAT_INTEGER)[None]))
                ok = g.op("And", ok, whole)
            # 1 where the row goes right: uint8, which Where takes (bool it does not)
            right = g.where(ok, self._right_of_code(g, safe, code), g.const((~self.other_left).astype(np.uint8)[None]))
            right = g.where(g.op("IsNaN", x), g.const((~self.missing_left).astype(np.uint8)[None]), right)
            right = g.cast(right, TensorProto.FLOAT)
            return g.op("Concat", X, right, axis=1)

    def _right_of_code(self, g: Graph, safe, code):
        """[N, K] uint8: 1 where code (int32, < 32 words[k]; ``safe`` is the
        float32 it truncates) is not in decision k's set.  Up to
        ``MEMBER_TABLE_BYTES``, one Gather from the sets unpacked, one byte
        per (decision, code): 32 bytes per word, 8 times the IR's bits, and
        no bit ops on [N, K].  Past it, the IR's words: the word
        trunc(x / 32) (x / 32 is exact: a power of two), then BitShift and
        BitwiseAnd on uint32, as the reference."""
        K = self.feature.size
        if 32 * self.bits.size <= MEMBER_TABLE_BYTES:
            table = 1 - np.unpackbits(self.bits.astype("<u4").view(np.uint8), bitorder="little")
            return g.op("Gather", g.const(table.astype(np.uint8)),
                        g.op("Add", code, g.const((32 * self.begin).astype(np.int32)[None])))
        word_at = g.cast(g.op("Div", safe, g.const(np.full((1, K), 32, np.float32))), TensorProto.INT32)
        word = g.op("Gather", g.const(~self.bits.astype(np.uint32)),
                    g.op("Add", word_at, g.const(self.begin.astype(np.int32)[None])))
        shift = g.op("Sub", code, g.op("Mul", word_at, g.const(np.full((1, K), 32, np.int32))))
        bit = g.op("BitShift", word, g.cast(shift, TensorProto.UINT32), direction="RIGHT")
        return g.cast(g.op("BitwiseAnd", bit, g.const(np.ones((1, K), np.uint32))), TensorProto.UINT8)


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


def tree_ensemble(g: Graph, X, forest: Forest, n_targets: int, op: str):
    """Emit the forest, SUM-aggregated; returns the output name ([N, n_targets] float32).
    Not for ``op="gather"``: its callers read the leaves of ``tree_walk``."""
    X = forest_input(g, X, forest)
    if op == "TreeEnsemble":
        if forest.extra is not None:
            raise ValueError("TreeEnsemble (ai.onnx.ml opset 5) gives a leaf one target")
        return _emit_v5(g, X, forest, n_targets)
    return _emit_v3(g, X, forest, n_targets)


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


def _emit_v3(g, X, f: Forest, n_targets):
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
                n_targets=int(n_targets), aggregate_function="SUM",
                post_transform="NONE")
