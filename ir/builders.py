"""Construct IR nodes and models without hand-writing raw arrays.

Example::

    from skinflint import ir
    feats = ir.features_from_costs([1.0, 10.0], names=["cheap", "exact"])
    bank = ir.trees_from_arrays(feature=[0, -1, -1], threshold=[0.5, 0, 0],
                                left=[1, -1, -1], right=[2, -1, -1],
                                value=[[0.0], [-1.0], [1.0]])
    model = ir.model(feats, [bank], output=0, task=ir.binary_task())
"""
from __future__ import annotations

import numpy as np

from .arrays import bool_array, cost_array, float32_array, float64_array, frozen, int_array, uint32_array
from .errors import IRError
from .model import Feature, Group, Model, Task
from .nodes import (
    INPUT_FEATURE,
    INPUT_NODE,
    INPUT_TREE,
    KERNELS,
    MAX_CATEGORY_WORDS,
    AnytimeNode,
    CascadeNode,
    CategorySplits,
    ClassifierTreeNode,
    KernelNode,
    LinearNode,
    QueryExitNode,
    TreesNode,
)


def features_from_costs(costs, names=None, groups=None) -> list[Feature]:
    """Features from a cost vector; ``groups`` gives each feature's group
    index (or None/-1 for none)."""
    costs = cost_array(np.asarray(costs, np.float64), "feature costs")
    names = names if names is not None else [f"f{i}" for i in range(len(costs))]
    if len(names) != len(costs):
        raise IRError(f"features: {len(names)} names for {len(costs)} costs")
    gs = [None] * len(costs) if groups is None else [
        None if g is None or int(g) < 0 else int(g) for g in groups]
    if len(gs) != len(costs):
        raise IRError(f"features: {len(gs)} groups for {len(costs)} costs")
    return [Feature(str(n), float(c), g) for n, c, g in zip(names, costs, gs)]


def groups_from_costs(costs, names=None) -> list[Group]:
    costs = cost_array(np.asarray(costs, np.float64), "group costs")
    names = names if names is not None else [f"g{i}" for i in range(len(costs))]
    return [Group(str(n), float(c)) for n, c in zip(names, costs)]


def regression_task(n_outputs=1) -> Task:
    return Task("regression", n_outputs, (), "identity")


def binary_task(classes=(0, 1), transform="logistic") -> Task:
    return Task("binary", 1, tuple(_py(c) for c in classes), transform)


def multiclass_task(classes, transform="softmax") -> Task:
    return Task("multiclass", len(classes), tuple(_py(c) for c in classes), transform)


def _py(c):
    return c.item() if isinstance(c, np.generic) else c


def category_set(codes) -> np.ndarray:
    """The uint32 words of a category set (least significant bit first), as
    ``CategorySplits.bits`` holds them: enough words for the largest code,
    at least one."""
    c = np.asarray(codes, np.int64).ravel()
    if c.size and (c.min() < 0 or c.max() >= 32 * MAX_CATEGORY_WORDS):
        raise IRError(f"category_set: codes must lie in [0, {32 * MAX_CATEGORY_WORDS}), "
                      f"got {int(c.min())}..{int(c.max())}")
    words = np.zeros(int(c.max()) // 32 + 1 if c.size else 1, np.uint32)
    np.bitwise_or.at(words, c >> 5, (np.uint32(1) << (c & 31).astype(np.uint32)))
    return words


def category_splits(sets, other_left=None, *, rule="integer") -> CategorySplits | None:
    """``CategorySplits`` from per-node sets: ``sets[m]`` is None (a numeric
    node or a leaf) or the uint32 words of node m's left set
    (``category_set``); ``other_left`` [M] defaults to False.  None when no
    node has a set (the bank keeps its numeric-only form and bytes)."""
    M = len(sets)
    words = np.array([0 if s is None else len(s) for s in sets], np.int64)
    if not np.any(words):
        return None
    begin = np.where(words > 0, np.cumsum(words) - words, -1)
    parts = [np.asarray(s, np.uint32).ravel() for s in sets if s is not None]
    ol = np.zeros(M, bool) if other_left is None else np.asarray(other_left, bool)
    return CategorySplits(rule=rule, begin=int_array(begin, "category_begin", length=M, low=-1),
                          words=int_array(words, "category_words", length=M, low=0),
                          bits=uint32_array(np.concatenate(parts), "category_bits"),
                          other_left=bool_array(ol, "other_left", length=M))


def trees_from_arrays(feature, threshold, left, right, value, *, roots=None,
                      missing_left=None, tree_cost=None, base_score=None, name="",
                      precision="float32", divisor=1.0, categories=None) -> TreesNode:
    """A tree bank from flat arrays.  ``value`` is [M] or [M, K]; ``roots``
    defaults to [0] (one tree).  ``missing_left`` defaults to True.
    ``precision="float64"`` keeps ``value`` and ``base_score`` as float64
    (summed in float64, then divided by ``divisor``); the default rounds
    them to float32.  ``categories``: the bank's ``CategorySplits``
    (``category_splits``), None when every split is numeric."""
    if precision not in ("float32", "float64"):
        raise IRError(f"precision: unknown precision {precision!r}; expected 'float32' or 'float64'")
    floats = float64_array if precision == "float64" else float32_array
    feature = int_array(np.asarray(feature), "feature", low=-1)
    M = feature.shape[0]
    value = np.asarray(value, np.float64)
    if value.ndim == 1:
        value = value[:, None]
    if value.ndim != 2 or value.shape[0] != M:
        raise IRError(f"value: expected shape [{M}, K], got {value.shape}")
    K = value.shape[1]
    roots = int_array(np.asarray([0] if roots is None else roots), "roots", low=0, high=M)
    v = floats(value.ravel(), "value").reshape(M, K)
    v.setflags(write=False)
    node = TreesNode(
        roots=roots, feature=feature,
        threshold=float32_array(np.asarray(threshold, np.float64), "threshold", length=M),
        left=int_array(np.asarray(left), "left", length=M, low=-1, high=M),
        right=int_array(np.asarray(right), "right", length=M, low=-1, high=M),
        missing_left=bool_array(np.ones(M, bool) if missing_left is None else np.asarray(missing_left),
                                "missing_left", length=M),
        value=v,
        tree_cost=cost_array(np.zeros(roots.shape[0]) if tree_cost is None else np.asarray(tree_cost, np.float64),
                             "tree_cost", length=roots.shape[0]),
        base_score=floats(np.zeros(K) if base_score is None else np.atleast_1d(np.asarray(base_score, np.float64)),
                          "base_score", length=K),
        name=name, precision=precision, divisor=float(divisor), categories=categories)
    node.check(name or "trees")
    return node


def concat_trees(trees: list[dict], *, tree_cost=None, base_score=None, name="",
                 precision="float32", divisor=1.0, category_rule="integer") -> TreesNode:
    """A bank from per-tree dicts with local indices (feature, threshold,
    left, right, value[, missing_left]); children are re-based.
    ``precision`` and ``divisor`` as ``trees_from_arrays``.  A tree with
    category-set splits also gives ``category_sets`` (per node None or the
    words of its left set, ``category_set``) and optionally ``other_left``
    [n]; ``category_rule`` names the bank's rule (``CategorySplits``)."""
    f, th, l, r, v, ml, roots = [], [], [], [], [], [], []
    sets: list = []
    other: list = []
    off = 0
    for t in trees:
        n = len(t["feature"])
        roots.append(off)
        f.append(np.asarray(t["feature"]))
        th.append(np.asarray(t["threshold"], np.float64))
        lt, rt = np.asarray(t["left"]), np.asarray(t["right"])
        l.append(np.where(lt >= 0, lt + off, -1))
        r.append(np.where(rt >= 0, rt + off, -1))
        vv = np.asarray(t["value"], np.float64)
        v.append(vv[:, None] if vv.ndim == 1 else vv)
        ml.append(np.asarray(t.get("missing_left", np.ones(n, bool))))
        ts = t.get("category_sets")
        if ts is not None and len(ts) != n:
            raise IRError(f"trees[{len(roots) - 1}].category_sets: expected {n} entries, got {len(ts)}")
        sets.extend([None] * n if ts is None else ts)
        other.append(np.asarray(t.get("other_left", np.zeros(n, bool)), bool))
        off += n
    return trees_from_arrays(np.concatenate(f), np.concatenate(th), np.concatenate(l),
                             np.concatenate(r), np.concatenate(v), roots=roots,
                             missing_left=np.concatenate(ml), tree_cost=tree_cost,
                             base_score=base_score, name=name, precision=precision, divisor=divisor,
                             categories=category_splits(sets, np.concatenate(other), rule=category_rule))


def feature_input(j):
    return ("feature", j)


def tree_input(node, tree, output=0):
    return ("tree", node, tree, output)


def node_input(node, output=0):
    return ("node", node, output)


def linear(inputs, weights, bias=0.0, *, name="") -> LinearNode:
    """``inputs`` are ``feature_input``/``tree_input``/``node_input`` tuples
    (or plain ints for features); ``weights`` is [n] or [n, K]."""
    rows = []          # (kind, index, tree, output) per input
    for inp in inputs:
        if isinstance(inp, (int, np.integer)):
            inp = ("feature", int(inp))
        if inp[0] == "feature":
            rows.append((INPUT_FEATURE, inp[1], 0, 0))
        elif inp[0] == "tree":
            rows.append((INPUT_TREE, inp[1], inp[2], inp[3]))
        elif inp[0] == "node":
            rows.append((INPUT_NODE, inp[1], 0, inp[2]))
        else:
            raise IRError(f"inputs: unknown input {inp!r}")
    table = np.array(rows, np.int64).reshape(len(rows), 4)
    w = np.asarray(weights, np.float64)
    if w.ndim == 1:
        w = w[:, None]
    if w.shape[0] != len(rows):
        raise IRError(f"weights: {w.shape[0]} rows for {len(rows)} inputs")
    b = np.atleast_1d(np.asarray(bias, np.float64))
    if b.shape[0] == 1 and w.shape[1] > 1:
        b = np.repeat(b, w.shape[1])
    K = b.shape[0]
    if w.size and w.shape[1] != K:
        raise IRError(f"weights: width {w.shape[1]} differs from bias width {K}")
    wf = float32_array(w.reshape(-1), "weights").reshape(len(rows), K)
    wf.setflags(write=False)
    return LinearNode(bias=float32_array(b, "bias"),
                      input_kind=frozen(table[:, 0].astype(np.int8)),
                      input_index=int_array(table[:, 1], "inputs.index", low=0),
                      input_tree=int_array(table[:, 2], "inputs.tree", low=0),
                      input_output=int_array(table[:, 3], "inputs.output", low=0),
                      weights=wf, name=name)


def kernel(support_vectors, alpha, features, *, kernel="rbf", gamma=1.0, coef0=0.0,
           degree=1, bias=0.0, sv_cost=None, name="", shift=None, scale=None) -> KernelNode:
    """A kernel node; ``shift`` and ``scale`` (per feature, both or neither)
    make it read ``(x - shift) * scale`` (e.g. a model trained on
    standardised features that runs on raw ones)."""
    if kernel not in KERNELS:
        raise IRError(f"kernel: unknown kernel {kernel!r}; expected one of {sorted(KERNELS)}")
    sv = np.asarray(support_vectors, np.float64)
    feats = int_array(np.asarray(features), "features", low=0)
    if sv.ndim != 2 or sv.shape[1] != feats.shape[0]:
        raise IRError(f"support_vectors: expected shape [S, {feats.shape[0]}], got {sv.shape}")
    a = np.asarray(alpha, np.float64)
    if a.ndim == 1:
        a = a[:, None]
    S, K = a.shape
    if S != sv.shape[0]:
        raise IRError(f"alpha: {S} rows for {sv.shape[0]} support vectors")
    b = np.atleast_1d(np.asarray(bias, np.float64))
    if b.shape[0] == 1 and K > 1:
        b = np.repeat(b, K)
    d = {"n_outputs": K, "kernel": kernel, "gamma": float(gamma), "coef0": float(coef0),
         "degree": int(degree), "features": feats.tolist(),
         "support_vectors": sv.ravel().tolist(), "alpha": a.ravel().tolist(),
         "bias": b.tolist(), "sv_cost": (np.zeros(S) if sv_cost is None else np.asarray(sv_cost, np.float64)).tolist(),
         "name": name}
    if shift is not None or scale is not None:
        d["shift"] = np.asarray(shift if shift is not None else [], np.float64).ravel().tolist()
        d["scale"] = np.asarray(scale if scale is not None else [], np.float64).ravel().tolist()
    return KernelNode.from_dict(d, name or "kernel", int(feats.max()) + 1 if feats.size else 0)


def cascade(stages, *, name="") -> CascadeNode:
    """``stages``: list of (scorer, rule, threshold[, output]) with rule in
    {"le", "ge", "none"}; the last stage always exits."""
    d = {"stages": [{"scorer": s[0], "exit": s[1], "threshold": float(s[2]),
                     "output": int(s[3]) if len(s) > 3 else 0} for s in stages], "name": name}
    return CascadeNode.from_dict(d, name or "cascade", 0)


def anytime(checkpoints, *, name="") -> AnytimeNode:
    return AnytimeNode.from_dict({"checkpoints": [int(c) for c in checkpoints], "name": name},
                                 name or "anytime", 0)


def classifier_tree(nodes, *, name="") -> ClassifierTreeNode:
    """``nodes``: list of dicts with scorer, threshold, left, right[, output];
    node 0 is the root, leaves have left = right = -1."""
    return ClassifierTreeNode.from_dict({"nodes": list(nodes), "name": name},
                                        name or "classifier_tree", 0)


def every(n, n_trees) -> list[int]:
    """Checkpoints every ``n`` trees of a bank of ``n_trees``: n, 2n, ...
    below the last tree (a checkpoint after the last tree saves nothing)."""
    if isinstance(n, bool) or not isinstance(n, (int, np.integer)) or n < 1:
        raise IRError(f"every: expected a positive integer, got {n!r}")
    return list(range(int(n), int(n_trees), int(n)))


def proximity_gaps(s, after, n_trees) -> list[float]:
    """Early Exit's default schedule (Cambazoglu et al. 2010; thesis §2.1.4):
    ``gap(i) = s (T - i) / (T - 1)`` after i of T trees, in float64, the
    gaps a ``query_exit`` stores (so no backend recomputes them)."""
    s = float(s)
    if not (np.isfinite(s) and s >= 0):
        raise IRError(f"s: expected a finite number >= 0, got {s!r}")
    T = int(n_trees)
    return [s * (T - int(i)) / max(T - 1, 1) for i in after]


def _per_checkpoint(value, J, what) -> list:
    """One number for every checkpoint, or one per checkpoint."""
    values = np.ravel(np.asarray(value, np.float64))
    if values.size == 1:
        return [values[0]] * J
    if values.size != J:
        raise IRError(f"{what}: {values.size} values for {J} checkpoints (give one, or one per checkpoint)")
    return list(values)


def query_exit(scorer, after, *, rule="proximity", keep=5, gap=None, name="") -> QueryExitNode:
    """A query-level exit over tree bank node ``scorer`` with checkpoints
    after the tree counts ``after`` (``ir.every(n, T)`` for every n trees).
    ``rule``: "proximity" (``gap`` per checkpoint, or one number for all;
    ``ir.proximity_gaps(s, after, T)`` is the papers' schedule) or "cutoff"
    (no gap); ``keep``: one number, or one per checkpoint."""
    after = [int(a) for a in after]
    J = len(after)
    keeps = [int(k) for k in _per_checkpoint(keep, J, "keep")]
    rules = [rule] * J if isinstance(rule, str) else list(rule)
    if len(rules) != J:
        raise IRError(f"rule: {len(rules)} rules for {J} checkpoints")
    gaps = [0.0] * J if gap is None else [float(g) for g in _per_checkpoint(gap, J, "gap")]
    cps = []
    for a, k, r, g in zip(after, keeps, rules, gaps):
        c: dict = {"after": a, "keep": k, "rule": r}
        if r == "proximity":
            if gap is None:
                raise IRError("gap: a proximity rule needs a gap per checkpoint (ir.proximity_gaps)")
            c["gap"] = g
        cps.append(c)
    return QueryExitNode.from_dict({"scorer": int(scorer), "checkpoints": cps, "name": name},
                                   name or "query_exit", 0)


def model(features, nodes, output, *, task=None, groups=(), metadata=None) -> Model:
    return Model(features=features, groups=list(groups), task=task or regression_task(),
                 nodes=list(nodes), output=int(output), metadata=dict(metadata or {}))
