"""Lower a Model to flat, typed tables: the form every evaluator runs.

Both the numba reference VM and the generated C walk these tables with the
same small loops, so the tables are the one place where node kinds become
integers and offsets.  Field names match the C template's arrays.

``lower`` is for evaluators that score rows one at a time, so it refuses a
model whose output is a query-level exit (``query_exit``): such a model
ranks whole queries, and scoring its rows independently would silently
drop the exit rule.  ``lower_query`` lowers it for a query evaluator: the
tables of its tree bank plus the ``QueryTables`` of its checkpoints.
"""
from __future__ import annotations

from dataclasses import dataclass, fields

import numpy as np

from .codes import KIND_ANYTIME, KIND_CASCADE, KIND_CTREE, KIND_KERNEL, KIND_LINEAR, KIND_TREES  # noqa: F401 (re-exported)
from .codes import NODE_KIND_CODES as _KIND
from .errors import IRError
from .nodes import (
    INPUT_NODE,
    INPUT_TREE,
    AnytimeNode,
    CascadeNode,
    ClassifierTreeNode,
    KernelNode,
    LinearNode,
    QueryExitNode,
    TreesNode,
)

_CONTROL = (CascadeNode, AnytimeNode, ClassifierTreeNode, QueryExitNode)


@dataclass
class Tables:
    # features and groups
    feat_cost: np.ndarray        # f64 [F]
    feat_group: np.ndarray       # i32 [F], -1 = none
    group_cost: np.ndarray       # f64 [max(G,1)]
    # nodes
    node_kind: np.ndarray        # i32 [N]
    node_width: np.ndarray       # i32 [N]
    node_acc: np.ndarray         # i32 [N] offset of the node's value in the accumulator
    node_first: np.ndarray       # i32 [N] first tree / term / support vector
    node_count: np.ndarray       # i32 [N] number of trees / terms / support vectors
    node_bias: np.ndarray        # i32 [N] offset into bias (base score / bias)
    node_kernel: np.ndarray      # i32 [N] kernel index, -1 if not a kernel
    node_f64: np.ndarray         # u8 [N] 1: a float64 tree bank (sums in acc64)
    node_div: np.ndarray         # f64 [N] a float64 bank's divisor (1 elsewhere)
    bias: np.ndarray             # f32 pool (a float64 bank: float32(base / divisor))
    bias64: np.ndarray           # f64 pool aligned with bias (one 0 when no float64 bank)
    # trees (all banks, global indices)
    tree_root: np.ndarray        # i32 [T]
    tree_cost: np.ndarray        # f64 [T]
    tn_feature: np.ndarray       # i32 [M]
    tn_threshold: np.ndarray     # f32 [M]
    tn_left: np.ndarray          # i32 [M]
    tn_right: np.ndarray         # i32 [M]
    tn_missing_left: np.ndarray  # u8 [M]
    tn_value: np.ndarray         # i32 [M] offset into leaf_value (leaves only)
    leaf_value: np.ndarray       # f32 pool (a float64 bank's leaves rounded: what other nodes read)
    leaf_value64: np.ndarray     # f64 pool aligned with leaf_value (one 0 when no float64 bank)
    # category-set splits (ir.nodes.CategorySplits); all -1 / 0 when every split is numeric
    tn_cat: np.ndarray           # i32 [M] offset of the node's set in cat_bits, -1 = a numeric split
    tn_cat_words: np.ndarray     # i32 [M] words of the node's set (0 = numeric)
    tn_cat_rule: np.ndarray      # u8 [M] CAT_TRUNCATE / CAT_TRUNCATE_NONNEGATIVE / CAT_INTEGER (ir/codes.py)
    tn_other_left: np.ndarray    # u8 [M] where a value that is not a code of the set goes
    cat_bits: np.ndarray         # u32 pool, least significant bit first (one 0 when no set)
    # linear terms
    term_kind: np.ndarray        # i32 [P] TERM_FEATURE / TERM_TREE / TERM_NODE (ir/codes.py)
    term_index: np.ndarray       # i32 [P] feature / global tree / node
    term_output: np.ndarray      # i32 [P]
    term_live: np.ndarray        # u8 [P] some weight nonzero
    term_weight: np.ndarray      # i32 [P] offset into weight
    weight: np.ndarray           # f32 pool
    # kernels
    k_type: np.ndarray           # i32 [Q]
    k_gamma: np.ndarray          # f32 [Q]
    k_coef0: np.ndarray          # f32 [Q]
    k_degree: np.ndarray         # i32 [Q]
    k_feat_first: np.ndarray     # i32 [Q]
    k_n_feat: np.ndarray         # i32 [Q]
    k_sv_first: np.ndarray       # i32 [Q] offset into sv (floats)
    k_alpha_first: np.ndarray    # i32 [Q]
    k_svcost_first: np.ndarray   # i32 [Q]
    k_xform: np.ndarray          # i32 [Q] 1 if the kernel has shift/scale (x - shift) * scale
    k_feat: np.ndarray           # i32 pool
    k_shift: np.ndarray          # f32 pool, aligned with k_feat (0 where no transform)
    k_scale: np.ndarray          # f32 pool, aligned with k_feat (1 where no transform)
    sv: np.ndarray               # f32 pool
    alpha: np.ndarray            # f32 pool
    sv_cost: np.ndarray          # f64 pool
    # the output node and its control structure
    top: int
    top_kind: int
    top_f64: int                 # 1: the output is a float64 bank, so scores are float64
    n_outputs: int
    prior: np.ndarray            # f32 [K] value before any checkpoint completes
    ctl_scorer: np.ndarray       # i32 [C] stages / checkpoints / tree nodes
    ctl_rule: np.ndarray         # i32 [C]
    ctl_threshold: np.ndarray    # f32 [C]
    ctl_output: np.ndarray       # i32 [C]
    ctl_left: np.ndarray         # i32 [C]
    ctl_right: np.ndarray        # i32 [C]
    acc_size: int
    stack_depth: int             # deepest chain of node -> node inputs, + 1

    def arrays(self):
        return {f.name: getattr(self, f.name) for f in fields(self)}


def _pool(parts, dtype):
    return np.concatenate([np.asarray(p, dtype).ravel() for p in parts]) if parts else np.zeros(0, dtype)


def _nonempty(a, dtype):
    a = np.asarray(a, dtype)
    return a if a.size else np.zeros(1, dtype)


@dataclass
class QueryTables:
    """A query-level exit's checkpoints (docs/ir.md), for a query evaluator."""

    after: np.ndarray            # i64 [J] trees done at checkpoint j (strictly increasing, < T)
    keep: np.ndarray             # i64 [J]
    rule: np.ndarray             # i32 [J] QX_PROXIMITY / QX_CUTOFF (ir/codes.py)
    gap: np.ndarray              # f64 [J] (0 for a cutoff)
    n_trees: int                 # T, the bank's trees

    def arrays(self):
        return {f.name: getattr(self, f.name) for f in fields(self)}


def lower(model) -> Tables:
    """The tables of a model whose rows are scored independently; a
    query-level exit is refused (module docstring)."""
    out = model.nodes[model.output]
    if isinstance(out, QueryExitNode):
        raise IRError(f"nodes[{model.output}]: a query_exit node ranks whole queries (docs/ranking.md); this "
                      "backend scores rows one at a time and cannot run it (the reference runtime's rank() can)")
    return _lower(model, model.output)


def lower_query(model) -> tuple[Tables, QueryTables]:
    """A query-level model as the tables of its tree bank (the bank is the
    output: what each document runs) and the checkpoints of its exit."""
    q = model.nodes[model.output]
    if not isinstance(q, QueryExitNode):
        raise IRError(f"nodes[{model.output}]: the output is a {q.kind} node, not a query_exit")
    bank = model.nodes[q.scorer]
    qt = QueryTables(after=q.after.astype(np.int64), keep=q.keep.astype(np.int64), rule=q.rule.astype(np.int32),
                     gap=q.gap.astype(np.float64), n_trees=int(bank.n_trees))
    return _lower(model, int(q.scorer)), qt


def _lower(model, top) -> Tables:
    N = len(model.nodes)
    kind = np.array([_KIND[n.kind] for n in model.nodes], np.int32)
    width = np.zeros(N, np.int32)
    acc = np.zeros(N, np.int32)
    first = np.zeros(N, np.int32)
    count = np.zeros(N, np.int32)
    bias_off = np.zeros(N, np.int32)
    node_kernel = np.full(N, -1, np.int32)
    node_f64 = np.zeros(N, np.uint8)
    node_div = np.ones(N, np.float64)
    bias_parts, bias64_parts, acc_size, bias_size = [], [], 0, 0
    # trees
    t_root: list = []
    t_cost: list = []
    tn: dict[str, list] = {k: [] for k in ("f", "t", "l", "r", "m", "v", "cat", "cw", "cr", "ol")}
    cat_parts, n_cb = [], 0
    leaf_parts, n_trees, n_tn, n_leafv = [], 0, 0, 0
    tree_base = np.zeros(N, np.int32)  # first global tree of each bank
    # terms
    tm: dict[str, list] = {k: [] for k in ("kind", "index", "out", "live", "w")}
    w_parts, n_terms, n_w = [], 0, 0
    # kernels
    kq: dict[str, list] = {k: [] for k in ("type", "gamma", "coef0", "deg", "ff", "nf", "sv", "al", "sc", "xf")}
    kf_parts, sv_parts, al_parts, sc_parts, ks_parts, kc_parts = [], [], [], [], [], []
    n_kf = n_sv = n_al = n_sc = 0

    for i, n in enumerate(model.nodes):
        if isinstance(n, _CONTROL):
            continue
        K = n.n_outputs
        width[i], acc[i] = K, acc_size
        acc_size += K
        bias_off[i] = bias_size
        bias_size += K
        if isinstance(n, TreesNode):
            if n.is_float64:
                node_f64[i], node_div[i] = 1, n.divisor
                bias_parts.append((n.base_score / n.divisor).astype(np.float32))
            else:
                bias_parts.append(n.base_score)
            bias64_parts.append(n.base_score)
            first[i], count[i] = n_trees, n.n_trees
            tree_base[i] = n_trees
            t_root.append(n.roots + n_tn)
            t_cost.append(n.tree_cost)
            tn["f"].append(n.feature)
            tn["t"].append(n.threshold)
            tn["l"].append(np.where(n.left >= 0, n.left + n_tn, -1))
            tn["r"].append(np.where(n.right >= 0, n.right + n_tn, -1))
            tn["m"].append(n.missing_left.astype(np.uint8))
            M = n.feature.shape[0]
            tn["v"].append(n_leafv + np.arange(M, dtype=np.int64) * K)
            leaf_parts.append(n.value)
            n_leafv += M * K
            cs = n.categories
            if cs is None:
                tn["cat"].append(np.full(M, -1, np.int32))
                tn["cw"].append(np.zeros(M, np.int32))
                tn["cr"].append(np.zeros(M, np.uint8))
                tn["ol"].append(np.zeros(M, np.uint8))
            else:
                tn["cat"].append(np.where(cs.begin >= 0, cs.begin.astype(np.int64) + n_cb, -1))
                tn["cw"].append(cs.words)
                tn["cr"].append(np.full(M, cs.rule_code, np.uint8))
                tn["ol"].append(cs.other_left.astype(np.uint8))
                cat_parts.append(cs.bits)
                n_cb += cs.bits.shape[0]
            n_tn += M
            n_trees += n.n_trees
        elif isinstance(n, LinearNode):
            bias_parts.append(n.bias)
            bias64_parts.append(n.bias)
            first[i], count[i] = n_terms, n.n_inputs
            tm["kind"].append(n.input_kind.astype(np.int32))
            tm["out"].append(n.input_output)
            tm["live"].append(np.any(n.weights != 0, axis=1).astype(np.uint8))
            tm["w"].append(n_w + np.arange(n.n_inputs, dtype=np.int64) * K)
            w_parts.append(n.weights)
            n_w += n.weights.size
            tm["index"].append(n.input_index)  # tree inputs re-based below
            n_terms += n.n_inputs
        elif isinstance(n, KernelNode):
            bias_parts.append(n.bias)
            bias64_parts.append(n.bias)
            q = len(kq["type"])
            node_kernel[i] = q
            first[i], count[i] = 0, n.n_support
            for key, value in (("type", n.kernel), ("gamma", n.gamma), ("coef0", n.coef0), ("deg", n.degree),
                               ("ff", n_kf), ("nf", n.features.shape[0]), ("sv", n_sv), ("al", n_al),
                               ("sc", n_sc)):
                kq[key].append(value)
            kf_parts.append(n.features)
            sv_parts.append(n.support_vectors)
            kq["xf"].append(0 if n.shift is None else 1)
            D = n.features.shape[0]
            ks_parts.append(np.zeros(D, np.float32) if n.shift is None else n.shift)
            kc_parts.append(np.ones(D, np.float32) if n.scale is None else n.scale)
            al_parts.append(n.alpha)
            sc_parts.append(n.sv_cost)
            n_kf += n.features.shape[0]
            n_sv += n.support_vectors.size
            n_al += n.alpha.size
            n_sc += n.sv_cost.shape[0]

    term_kind = _pool(tm["kind"], np.int32)
    term_index = _pool(tm["index"], np.int32)
    # a tree input names (bank node, tree): store the global tree index instead
    if n_terms:
        tree_of_term = _pool([n.input_tree for n in model.nodes if isinstance(n, LinearNode)], np.int32)
        is_tree = term_kind == INPUT_TREE
        term_index[is_tree] = tree_base[term_index[is_tree]] + tree_of_term[is_tree]

    out_node = model.nodes[top]
    C: dict[str, list | np.ndarray] = {k: [] for k in ("s", "rule", "thr", "out", "l", "r")}
    if isinstance(out_node, CascadeNode):
        C["s"], C["rule"], C["thr"], C["out"] = out_node.scorer, out_node.exit_rule, out_node.threshold, out_node.output
    elif isinstance(out_node, AnytimeNode):
        C["s"] = out_node.checkpoints
    elif isinstance(out_node, ClassifierTreeNode):
        C["s"], C["thr"], C["out"] = out_node.scorer, out_node.threshold, out_node.output
        C["l"], C["r"] = out_node.left, out_node.right
    nC = len(C["s"])
    for k in ("rule", "thr", "out", "l", "r"):
        if len(C[k]) == 0:
            C[k] = np.zeros(nC)

    bias = _pool(bias_parts, np.float32)
    any64 = bool(node_f64.any())
    # float64 pools only when a float64 bank needs them (float32 models keep their tables)
    bias64 = _pool(bias64_parts, np.float64) if any64 else np.zeros(1)
    leaf64 = _pool(leaf_parts, np.float64) if any64 else np.zeros(1)
    first_scorer = top if kind[top] <= KIND_KERNEL else int(C["s"][0])
    prior = bias[bias_off[first_scorer]: bias_off[first_scorer] + width[first_scorer]].copy()

    return Tables(
        feat_cost=_nonempty(model.feature_costs, np.float64),
        feat_group=_nonempty(model.feature_groups, np.int32),
        group_cost=_nonempty(model.group_costs, np.float64),
        node_kind=kind, node_width=width, node_acc=acc, node_first=first, node_count=count,
        node_bias=bias_off, node_kernel=node_kernel, node_f64=node_f64, node_div=node_div,
        bias=_nonempty(bias, np.float32), bias64=_nonempty(bias64, np.float64),
        tree_root=_nonempty(_pool(t_root, np.int32), np.int32),
        tree_cost=_nonempty(_pool(t_cost, np.float64), np.float64),
        tn_feature=_nonempty(_pool(tn["f"], np.int32), np.int32),
        tn_threshold=_nonempty(_pool(tn["t"], np.float32), np.float32),
        tn_left=_nonempty(_pool(tn["l"], np.int32), np.int32),
        tn_right=_nonempty(_pool(tn["r"], np.int32), np.int32),
        tn_missing_left=_nonempty(_pool(tn["m"], np.uint8), np.uint8),
        tn_value=_nonempty(_pool(tn["v"], np.int32), np.int32),
        leaf_value=_nonempty(_pool(leaf_parts, np.float32), np.float32),
        leaf_value64=_nonempty(leaf64, np.float64),
        tn_cat=_nonempty(_pool(tn["cat"], np.int32) if tn["cat"] else np.full(1, -1), np.int32),
        tn_cat_words=_nonempty(_pool(tn["cw"], np.int32), np.int32),
        tn_cat_rule=_nonempty(_pool(tn["cr"], np.uint8), np.uint8),
        tn_other_left=_nonempty(_pool(tn["ol"], np.uint8), np.uint8),
        cat_bits=_nonempty(_pool(cat_parts, np.uint32), np.uint32),
        term_kind=_nonempty(term_kind, np.int32), term_index=_nonempty(term_index, np.int32),
        term_output=_nonempty(_pool(tm["out"], np.int32), np.int32),
        term_live=_nonempty(_pool(tm["live"], np.uint8), np.uint8),
        term_weight=_nonempty(_pool(tm["w"], np.int32), np.int32),
        weight=_nonempty(_pool(w_parts, np.float32), np.float32),
        k_type=_nonempty(kq["type"], np.int32), k_gamma=_nonempty(kq["gamma"], np.float32),
        k_coef0=_nonempty(kq["coef0"], np.float32), k_degree=_nonempty(kq["deg"], np.int32),
        k_feat_first=_nonempty(kq["ff"], np.int32), k_n_feat=_nonempty(kq["nf"], np.int32),
        k_sv_first=_nonempty(kq["sv"], np.int32), k_alpha_first=_nonempty(kq["al"], np.int32),
        k_svcost_first=_nonempty(kq["sc"], np.int32), k_xform=_nonempty(kq["xf"], np.int32),
        k_feat=_nonempty(_pool(kf_parts, np.int32), np.int32),
        k_shift=_nonempty(_pool(ks_parts, np.float32), np.float32),
        k_scale=_nonempty(_pool(kc_parts, np.float32), np.float32),
        sv=_nonempty(_pool(sv_parts, np.float32), np.float32),
        alpha=_nonempty(_pool(al_parts, np.float32), np.float32),
        sv_cost=_nonempty(_pool(sc_parts, np.float64), np.float64),
        top=int(top), top_kind=int(kind[top]), top_f64=int(node_f64[top]),
        n_outputs=int(model.task.n_outputs),
        prior=prior.astype(np.float32),
        ctl_scorer=_nonempty(np.asarray(C["s"], np.int32), np.int32),
        ctl_rule=_nonempty(np.asarray(C["rule"], np.int32), np.int32),
        ctl_threshold=_nonempty(np.asarray(C["thr"], np.float32), np.float32),
        ctl_output=_nonempty(np.asarray(C["out"], np.int32), np.int32),
        ctl_left=_nonempty(np.asarray(C["l"], np.int32), np.int32),
        ctl_right=_nonempty(np.asarray(C["r"], np.int32), np.int32),
        acc_size=max(acc_size, 1), stack_depth=_stack_depth(model, top),
    )


def _stack_depth(model, top) -> int:
    """Longest chain of linear node -> node inputs (the evaluator's stack)."""
    memo: dict[int, int] = {}
    # nodes form a DAG (validated): an explicit post-order walk, no recursion
    def depth(i):
        stack = [(i, False)]
        while stack:
            j, expanded = stack.pop()
            if j in memo:
                continue
            n = model.nodes[j]
            kids = []
            if isinstance(n, LinearNode):
                kids = [int(t) for k, t in zip(n.input_kind, n.input_index) if k == INPUT_NODE]
            elif isinstance(n, _CONTROL):
                kids = n.children()
            if expanded or all(k in memo for k in kids):
                memo[j] = 1 + max((memo[k] for k in kids), default=0)
            else:
                stack.append((j, True))
                stack.extend((k, False) for k in kids if k not in memo)
        return memo[i]
    return depth(top)
