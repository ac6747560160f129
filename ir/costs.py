"""Data-free cost queries (docs/costs.md).

*Static* cost is the cost of every unit the model can touch: what a runtime
pays when all features are extracted up front.  Lazy per-row cost needs data
and lives in the runtimes.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .nodes import INPUT_FEATURE, INPUT_TREE, KernelNode, LinearNode, TreesNode, is_control


@dataclass
class Units:
    """Boolean masks of the units reachable from the output."""

    features: np.ndarray          # [F]
    groups: np.ndarray            # [G]
    trees: dict                   # node index -> bool mask over that bank's trees
    kernels: set                  # kernel node indices (all their SVs count)


def reachable_units(model) -> Units:
    nodes = model.nodes
    feats = np.zeros(model.n_features, bool)
    trees: dict[int, np.ndarray] = {}
    kernels: set[int] = set()
    whole = set()
    stack = [model.output]
    while stack:
        i = stack.pop()
        if i in whole:
            continue
        whole.add(i)
        n = nodes[i]
        if is_control(n):
            stack.extend(n.children())
        elif isinstance(n, TreesNode):
            trees.setdefault(i, np.zeros(n.n_trees, bool))[:] = True
        elif isinstance(n, KernelNode):
            kernels.add(i)
            feats[n.features] = True
        elif isinstance(n, LinearNode):
            live = np.any(n.weights != 0, axis=1)
            for j in np.flatnonzero(live):
                k, tgt = n.input_kind[j], int(n.input_index[j])
                if k == INPUT_FEATURE:
                    feats[tgt] = True
                elif k == INPUT_TREE:
                    trees.setdefault(tgt, np.zeros(nodes[tgt].n_trees, bool))[n.input_tree[j]] = True
                else:
                    stack.append(tgt)
    for i, mask in trees.items():
        bank = nodes[i]
        owner = bank.tree_ranges()
        inner = bank.feature >= 0
        feats[bank.feature[inner & mask[owner]]] = True
    fg = model.feature_groups
    groups = np.zeros(len(model.groups), bool)
    groups[fg[feats & (fg >= 0)]] = True
    return Units(features=feats, groups=groups, trees=trees, kernels=kernels)


def static_cost(model) -> float:
    """Sum of the costs of all reachable units, accumulated in float64 in the
    order features, groups, trees, support vectors."""
    u = reachable_units(model)
    total = float(np.sum(model.feature_costs[u.features]))
    total += float(np.sum(model.group_costs[u.groups]))
    for i, mask in sorted(u.trees.items()):
        total += float(np.sum(model.nodes[i].tree_cost[mask]))
    for i in sorted(u.kernels):
        total += float(np.sum(model.nodes[i].sv_cost))
    return total


def features_per_tree(bank: TreesNode) -> list[np.ndarray]:
    """Sorted feature indices each tree of a bank can touch."""
    owner = bank.tree_ranges()
    inner = bank.feature >= 0
    return [np.unique(bank.feature[inner & (owner == t)]) for t in range(bank.n_trees)]
