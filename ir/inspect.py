"""A human-readable summary of a model (``skinflint inspect``)."""
from __future__ import annotations

import numpy as np

from .costs import features_per_tree, reachable_units, static_cost
from .nodes import (
    EXIT_RULES,
    KERNELS,
    QUERY_EXIT_RULES,
    AnytimeNode,
    CascadeNode,
    ClassifierTreeNode,
    KernelNode,
    LinearNode,
    QueryExitNode,
    TreesNode,
    _name_of,
)


def tree_depths(bank: TreesNode) -> np.ndarray:
    depth = np.zeros(bank.feature.shape[0], np.int64)
    frontier = bank.roots.astype(np.int64)
    d = 0
    while frontier.size:
        depth[frontier] = d
        inner = frontier[bank.feature[frontier] >= 0]
        frontier = np.concatenate([bank.left[inner], bank.right[inner]])
        d += 1
    owner = bank.tree_ranges()
    out = np.zeros(bank.n_trees, np.int64)
    np.maximum.at(out, owner, depth)
    return out


def _names(model, idx, limit=8):
    names = [model.features[i].name for i in idx]
    return ", ".join(names[:limit]) + (f", ... (+{len(names) - limit})" if len(names) > limit else "")


def describe_node(model, i) -> str:
    n = model.nodes[i]
    head = f"[{i}] {n.kind}" + (f" {n.name!r}" if n.name else "")
    if isinstance(n, TreesNode):
        depth = tree_depths(n)
        per = features_per_tree(n)
        lines = [f"{head}: {n.n_trees} trees, {n.feature.shape[0]} tree nodes, "
                 f"max depth {depth.max()}, K={n.n_outputs}, tree cost {n.tree_cost.sum():g}"
                 + (f", float64 sum / {n.divisor:g}" if n.is_float64 else "")]
        if n.categories is not None:
            cat = n.categories.is_categorical
            lines.append(f"      {int(cat.sum())} category-set splits ({n.categories.rule} rule) on "
                         f"{{{_names(model, np.unique(n.feature[cat]))}}}, sets of up to "
                         f"{32 * int(n.categories.words.max())} codes")
        show = range(n.n_trees) if n.n_trees <= 10 else list(range(5)) + [n.n_trees - 1]
        for t in show:
            if t == n.n_trees - 1 and n.n_trees > 10:
                lines.append(f"      ... trees 5-{n.n_trees - 2} not shown")
            lines.append(f"      tree {t}: depth {depth[t]}, features {{{_names(model, per[t])}}}")
        return "\n".join(lines)
    if isinstance(n, LinearNode):
        kinds = np.bincount(n.input_kind, minlength=3)
        return (f"{head}: {n.n_inputs} inputs ({kinds[0]} features, {kinds[1]} trees, "
                f"{kinds[2]} nodes), K={n.n_outputs}")
    if isinstance(n, KernelNode):
        return (f"{head}: {_name_of(KERNELS, n.kernel)} kernel, {n.n_support} support vectors over "
                f"{{{_names(model, n.features)}}}, SV cost {n.sv_cost.sum():g}")
    if isinstance(n, CascadeNode):
        st = [f"      stage {s}: node {int(c)}, exit {_name_of(EXIT_RULES, int(r))} {float(t):g}"
              for s, (c, r, t) in enumerate(zip(n.scorer, n.exit_rule, n.threshold))]
        return "\n".join([f"{head}: {len(n.scorer)} stages"] + st)
    if isinstance(n, AnytimeNode):
        return f"{head}: checkpoints {n.checkpoints.tolist()}"
    if isinstance(n, QueryExitNode):
        cps = [f"      checkpoint {j}: after {int(a)} trees, {_name_of(QUERY_EXIT_RULES, int(r))} keep {int(k)}"
               + (f" gap {float(g):g}" if _name_of(QUERY_EXIT_RULES, int(r)) == "proximity" else "")
               for j, (a, k, r, g) in enumerate(zip(n.after, n.keep, n.rule, n.gap))]
        return "\n".join([f"{head}: bank node {n.scorer} scored a query at a time, "
                          f"{n.n_checkpoints} checkpoints"] + cps)
    if isinstance(n, ClassifierTreeNode):
        leaves = int(np.sum(n.left < 0))
        return f"{head}: {len(n.scorer)} nodes ({leaves} leaves)"
    return head


def inspect(model) -> str:
    u = reachable_units(model)
    t = model.task
    lines = [
        f"task: {t.kind}, {t.n_outputs} output(s), transform {t.transform}"
        + (f", classes {list(t.classes)}" if t.classes else ""),
        f"features: {model.n_features} ({int(u.features.sum())} used), groups: {len(model.groups)}"
        f" ({int(u.groups.sum())} used)",
        f"static cost: {static_cost(model):g} (all features extracted up front: "
        f"{float(model.feature_costs.sum() + model.group_costs.sum()):g})",
        f"nodes: {len(model.nodes)}, output: node {model.output}",
    ]
    lines += [describe_node(model, i) for i in range(len(model.nodes))]
    used = np.flatnonzero(u.features)
    if used.size:
        lines.append("features used (cost):")
        for j in used:
            f = model.features[j]
            g = f" [group {model.groups[f.group].name}]" if f.group is not None else ""
            lines.append(f"  {f.name}: {f.cost:g}{g}")
    return "\n".join(lines)
