"""Tree banks as one ai.onnx.ml tree-ensemble operator.

Two emitters of the same forest:

* ``TreeEnsemble`` (ai.onnx.ml opset 5), used when the installed
  onnxruntime runs it;
* ``TreeEnsembleRegressor`` (ai.onnx.ml opset 3), the fallback.

Each leaf carries (target, weight) votes chosen by the caller: in exact mode
the weight is the leaf's own global node index, one target per tree, so the
graph learns *which* leaf each tree reached and looks up everything else
(value, path features) exactly; in fast mode the weights are the leaf values
summed by the operator.
"""
from __future__ import annotations

import functools

import numpy as np
from onnx import helper, numpy_helper

from ..ir.lowering import Tables
from .onnx_graph import Graph
from .onnx_schedule import TreePaths

ML_OPSET = {"TreeEnsemble": 5, "TreeEnsembleRegressor": 3}
MAX_EXACT_ID = 1 << 24     # leaf ids travel as float32 weights: exact below 2^24


@functools.lru_cache(maxsize=None)
def supported_tree_op() -> str:
    """The newest tree operator the installed onnxruntime can run."""
    import onnxruntime as ort
    from onnx import TensorProto
    node = helper.make_node(
        "TreeEnsemble", ["X"], ["Y"], domain="ai.onnx.ml", nodes_featureids=[0],
        nodes_splits=numpy_helper.from_array(np.zeros(1, np.float32)),
        nodes_modes=numpy_helper.from_array(np.zeros(1, np.uint8)), nodes_truenodeids=[0],
        nodes_trueleafs=[1], nodes_falsenodeids=[1], nodes_falseleafs=[1],
        leaf_targetids=[0, 0], leaf_weights=numpy_helper.from_array(np.ones(2, np.float32)),
        tree_roots=[0], n_targets=1, aggregate_function=1, post_transform=0)
    graph = helper.make_graph([node], "probe", [helper.make_tensor_value_info("X", TensorProto.FLOAT, ["N", 1])],
                              [helper.make_tensor_value_info("Y", TensorProto.FLOAT, ["N", 1])])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 18),
                                                    helper.make_opsetid("ai.onnx.ml", 5)])
    try:
        ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
        return "TreeEnsemble"
    except Exception:  # noqa: BLE001 - any refusal means: not supported here
        return "TreeEnsembleRegressor"


def _forest(tab: Tables, paths: TreePaths, trees):
    """The nodes of ``trees`` (global indices), in (tree, depth, index) order."""
    keep = np.isin(paths.tree_of, trees)
    nodes = np.flatnonzero(keep)
    order = np.lexsort((nodes, paths.depth[nodes], np.searchsorted(trees, paths.tree_of[nodes])))
    return nodes[order]


def tree_ensemble(g: Graph, X, tab: Tables, paths: TreePaths, trees, leaf_votes, n_targets,
                  op: str, base_values=None):
    """Emit one ensemble over global ``trees`` (sorted).  ``leaf_votes(leaves)``
    returns (leaf position, target, weight) arrays: the votes of each leaf
    (positions index ``leaves``).  Returns the output name ([N, n_targets])."""
    trees = np.asarray(trees, np.int64)
    nodes = _forest(tab, paths, trees)
    is_leaf = tab.tn_feature[nodes] < 0
    leaves, inner = nodes[is_leaf], nodes[~is_leaf]
    pos, target, weight = leaf_votes(leaves)
    base = {} if base_values is None else {"base_values": [float(v) for v in base_values]}
    if op == "TreeEnsemble":
        return _ensemble_v5(g, X, tab, trees, leaves, inner, pos, target, weight, n_targets, base)
    return _ensemble_v3(g, X, tab, paths, trees, nodes, pos, target, weight, n_targets, base,
                        leaves)


def _ensemble_v5(g, X, tab, trees, leaves, inner, pos, target, weight, n_targets, base):
    M = tab.tn_feature.shape[0]
    # opset 5 has no single-leaf trees: such a tree gets a split whose both
    # branches reach its leaf
    single = tab.tn_feature[tab.tree_root[trees]] < 0
    lone = tab.tree_root[trees][single]
    imap = np.full(M, -1, np.int64)
    imap[inner] = np.arange(inner.size)
    lmap = np.full(M, -1, np.int64)
    lmap[leaves] = np.arange(leaves.size)

    def branch(child):
        leaf = tab.tn_feature[child] < 0
        return np.where(leaf, lmap[child], imap[child]), leaf.astype(np.int64)

    t_ids, t_leaf = branch(tab.tn_left[inner])
    f_ids, f_leaf = branch(tab.tn_right[inner])
    feat = tab.tn_feature[inner].astype(np.int64)
    split = tab.tn_threshold[inner]
    miss = tab.tn_missing_left[inner].astype(np.int64)
    n_inner = inner.size
    roots = np.where(single, 0, imap[tab.tree_root[trees]])
    roots[single] = n_inner + np.arange(lone.size)
    feat = np.concatenate([feat, np.zeros(lone.size, np.int64)])
    split = np.concatenate([split, np.zeros(lone.size, np.float32)])
    miss = np.concatenate([miss, np.zeros(lone.size, np.int64)])
    t_ids = np.concatenate([t_ids, lmap[lone]])
    f_ids = np.concatenate([f_ids, lmap[lone]])
    t_leaf = np.concatenate([t_leaf, np.ones(lone.size, np.int64)])
    f_leaf = np.concatenate([f_leaf, np.ones(lone.size, np.int64)])
    # opset 5 gives each leaf a single vote: with K votes per leaf (fast
    # mode, one per output) the forest is emitted K times, copy k voting k
    per_leaf = np.bincount(pos, minlength=leaves.size)
    K = int(per_leaf.max()) if per_leaf.size else 1
    if np.any(per_leaf != K):
        raise ValueError("every leaf needs the same number of votes")
    order = np.lexsort((target, pos))
    tgt = target[order].reshape(leaves.size, K)
    wts = weight[order].reshape(leaves.size, K)
    ni, nl = feat.size, leaves.size

    def copies(ids, leaf):
        return np.concatenate([ids + np.where(leaf == 1, k * nl, k * ni) for k in range(K)])

    return g.op("TreeEnsemble", X, domain="ai.onnx.ml", nodes_featureids=np.tile(feat, K).tolist(),
                nodes_splits=numpy_helper.from_array(np.tile(split, K).astype(np.float32)),
                nodes_modes=numpy_helper.from_array(np.zeros(ni * K, np.uint8)),
                nodes_truenodeids=copies(t_ids, t_leaf).tolist(),
                nodes_trueleafs=np.tile(t_leaf, K).tolist(),
                nodes_falsenodeids=copies(f_ids, f_leaf).tolist(),
                nodes_falseleafs=np.tile(f_leaf, K).tolist(),
                nodes_missing_value_tracks_true=np.tile(miss, K).tolist(),
                leaf_targetids=tgt.T.ravel().tolist(),
                leaf_weights=numpy_helper.from_array(wts.T.ravel().astype(np.float32)),
                tree_roots=copies(roots, np.zeros_like(roots)).tolist(), n_targets=int(n_targets),
                aggregate_function=1, post_transform=0, **base)


def _ensemble_v3(g, X, tab, paths, trees, nodes, pos, target, weight, n_targets, base, leaves):
    tree_of = paths.tree_of[nodes]
    # local ids: rank within the tree in (depth, index) order, so the root is 0
    first = np.zeros(nodes.size, np.int64)
    change = np.r_[True, tree_of[1:] != tree_of[:-1]]
    first[change] = np.flatnonzero(change)
    first = np.maximum.accumulate(first)
    local = np.arange(nodes.size) - first
    lid = np.zeros(tab.tn_feature.shape[0], np.int64)
    lid[nodes] = local
    tree_id = np.searchsorted(trees, tree_of)
    feat = tab.tn_feature[nodes]
    leaf = feat < 0
    left = np.where(leaf, 0, lid[np.maximum(tab.tn_left[nodes], 0)])
    right = np.where(leaf, 0, lid[np.maximum(tab.tn_right[nodes], 0)])
    vleaf = leaves[pos]
    return g.op("TreeEnsembleRegressor", X, domain="ai.onnx.ml",
                nodes_treeids=tree_id.tolist(), nodes_nodeids=local.tolist(),
                nodes_featureids=np.maximum(feat, 0).tolist(),
                nodes_values=tab.tn_threshold[nodes].astype(np.float32).tolist(),
                nodes_modes=["LEAF" if x else "BRANCH_LEQ" for x in leaf],
                nodes_truenodeids=left.tolist(), nodes_falsenodeids=right.tolist(),
                nodes_missing_value_tracks_true=tab.tn_missing_left[nodes].astype(np.int64).tolist(),
                target_treeids=np.searchsorted(trees, paths.tree_of[vleaf]).tolist(),
                target_nodeids=lid[vleaf].tolist(), target_ids=np.asarray(target).tolist(),
                target_weights=np.asarray(weight, np.float32).tolist(), n_targets=int(n_targets),
                aggregate_function="SUM", post_transform="NONE", **base)
