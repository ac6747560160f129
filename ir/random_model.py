"""Random valid models of every node kind, for property tests and for users
who want to fuzz their own backends: ``random_model(seed, kinds=...)``.

Thresholds and parameters come from a small grid of dyadic values (plus
random ones) so that adversarial rows land exactly on them.
"""
from __future__ import annotations

import zlib

import numpy as np

from .builders import (
    anytime,
    binary_task,
    cascade,
    classifier_tree,
    feature_input,
    features_from_costs,
    groups_from_costs,
    kernel,
    linear,
    model,
    multiclass_task,
    node_input,
    regression_task,
    tree_input,
    trees_from_arrays,
)

ALL_KINDS = ("trees", "linear", "kernel", "cascade", "anytime", "classifier_tree")
GRID = np.array([-2.0, -1.0, -0.5, -0.25, 0.0, 0.25, 0.5, 1.0, 2.0])


def _value(rng, size=None):
    grid = rng.choice(GRID, size=size)
    noise = np.float32(rng.normal(size=size))
    pick = rng.random(size=size) < 0.6
    return np.where(pick, grid, noise).astype(np.float64)


def _bank(rng, F, K, scale=1.0):
    n_trees = int(rng.integers(1, 5))
    feat, thr, left, right, val, ml, roots = [], [], [], [], [], [], []
    for _ in range(n_trees):
        roots.append(len(feat))
        depth = int(rng.integers(0, 4))
        # grow a random binary tree breadth first
        frontier = [(len(feat), 0)]
        feat.append(-1), thr.append(0.0), left.append(-1), right.append(-1)
        val.append(_value(rng, K)), ml.append(bool(rng.integers(2)))
        while frontier:
            node, d = frontier.pop(0)
            if d < depth and rng.random() < 0.8:
                feat[node] = int(rng.integers(F))
                thr[node] = float(_value(rng))
                for side in (left, right):
                    side[node] = len(feat)
                    frontier.append((len(feat), d + 1))
                    feat.append(-1), thr.append(0.0), left.append(-1), right.append(-1)
                    val.append(_value(rng, K)), ml.append(bool(rng.integers(2)))
    costs = np.where(rng.random(n_trees) < 0.5, 0.0, rng.choice([0.25, 0.5, 1.0], n_trees)) * scale
    return trees_from_arrays(feat, thr, left, right, np.array(val), roots=roots, missing_left=ml,
                             tree_cost=costs, base_score=_value(rng, K))


def _linear(rng, F, K, pool):
    n = int(rng.integers(1, 5))
    inputs = []
    for _ in range(n):
        r = rng.random()
        banks = [i for i, (kind, node) in enumerate(pool) if kind == "trees"]
        if r < 0.4 or not pool:
            inputs.append(feature_input(int(rng.integers(F))))
        elif r < 0.7 and banks:
            b = banks[rng.integers(len(banks))]
            bank = pool[b][1]
            inputs.append(tree_input(b, int(rng.integers(bank.n_trees)), int(rng.integers(bank.n_outputs))))
        else:
            j = int(rng.integers(len(pool)))
            inputs.append(node_input(j, int(rng.integers(pool[j][1].n_outputs))))
    w = _value(rng, (n, K))
    w[rng.random((n, K)) < 0.15] = 0.0
    return linear(inputs, w, bias=_value(rng, K))


def _kernel(rng, F, K, scale=1.0):
    d = int(rng.integers(1, min(F, 3) + 1))
    feats = rng.choice(F, size=d, replace=False)
    S = int(rng.integers(1, 4))
    kind = ["rbf", "linear", "poly"][rng.integers(3)]
    sv, alpha = _value(rng, (S, d)), _value(rng, (S, K))     # draws in the order they always had
    node = dict(kernel=kind, gamma=float(rng.choice([0.25, 0.5, 1.0])), coef0=float(rng.choice([0.0, 1.0])),
                degree=int(rng.integers(0, 4)))
    bias, sv_cost = _value(rng, K), rng.choice([0.0, 0.5, 1.0], S) * scale
    # half the kernels read (x - shift) * scale; drawn from a generator of
    # their own (seeded by the vectors) so the main stream, and every other
    # part of the model, stays what it was before transforms existed
    sub = np.random.default_rng(zlib.crc32(sv.tobytes()))
    if sub.random() < 0.5:
        node.update(shift=_value(sub, d), scale=_value(sub, d))
    return kernel(sv, alpha, feats, bias=bias, sv_cost=sv_cost, **node)


def random_model(seed, kinds=ALL_KINDS, n_features=None, gap_exits=False):
    """A random valid Model whose output node is one of ``kinds``.  Half of
    the seeds get costs scaled by 0.1, which float64 cannot add exactly in
    every order, so backends must follow the acquisition order; the others
    keep dyadic costs, whose sums are exact in any order.

    ``gap_exits``: a cascade with scorers at least 2 wide turns about half
    of its stages into ``gap_ge`` exits (format version 5; output 0, the
    threshold's magnitude), drawn from a generator of their own: the model
    is otherwise the one the seed always gave, and without the flag every
    seed's model is unchanged."""
    rng = np.random.default_rng(seed)
    scale = 0.1 if np.random.default_rng([seed, 1]).random() < 0.5 else 1.0
    F = int(n_features or rng.integers(1, 7))
    G = int(rng.integers(0, 3))
    groups = groups_from_costs(rng.choice([0.0, 2.0, 5.0], G) * scale) if G else []
    fgroups = [int(rng.integers(G)) if G and rng.random() < 0.5 else None for _ in range(F)]
    feats = features_from_costs(rng.choice([0.0, 0.5, 1.0, 3.0, 10.0], F) * scale, groups=fgroups)
    task_kind = ["regression", "binary", "multiclass"][rng.integers(3)]
    K = {"regression": int(rng.integers(1, 3)), "binary": 1, "multiclass": 3}[task_kind]
    task = {"regression": regression_task(K), "binary": binary_task(),
            "multiclass": multiclass_task(["a", "b", "c"])}[task_kind]
    top = kinds[rng.integers(len(kinds))]
    pool: list = []

    def scorer(kind=None):
        kind = kind or ["trees", "linear", "kernel"][rng.integers(3)]
        node = {"trees": lambda: _bank(rng, F, K, scale), "linear": lambda: _linear(rng, F, K, pool),
                "kernel": lambda: _kernel(rng, F, K, scale)}[kind]()
        pool.append((kind, node))
        return len(pool) - 1

    # a few helper nodes that later linear nodes may read
    for _ in range(int(rng.integers(0, 3))):
        scorer()
    if top in ("trees", "linear", "kernel"):
        out = scorer(top)
    elif top == "cascade":
        stages = [scorer() for _ in range(int(rng.integers(1, 4)))]
        rules = ["le", "ge", "abs_ge", "none"]
        spec = [(s, rules[rng.integers(4)], float(_value(rng)), int(rng.integers(K))) for s in stages]
        if gap_exits and K >= 2:
            sub = np.random.default_rng([seed, 5])
            spec = [(s, "gap_ge", abs(t), 0) if sub.random() < 0.5 else (s, r, t, o) for s, r, t, o in spec]
        pool.append(("cascade", cascade(spec)))
        out = len(pool) - 1
    elif top == "anytime":
        cps = [scorer() for _ in range(int(rng.integers(1, 4)))]
        pool.append(("anytime", anytime(cps)))
        out = len(pool) - 1
    else:
        n_internal = int(rng.integers(0, 3))
        nodes = [dict(scorer=scorer(), threshold=float(_value(rng)), output=int(rng.integers(K)))]
        leaves = [0]
        for _ in range(n_internal):
            at = leaves.pop(int(rng.integers(len(leaves))))
            for side in ("left", "right"):
                nodes[at][side] = len(nodes)
                leaves.append(len(nodes))
                nodes.append(dict(scorer=scorer(), threshold=float(_value(rng)), output=int(rng.integers(K))))
        pool.append(("classifier_tree", classifier_tree(nodes)))
        out = len(pool) - 1
    return model(feats, [node for _, node in pool], out, task=task, groups=groups,
                 metadata={"random_model_seed": int(seed)})


def with_float64_banks(m, divisor=3.0):
    """``m`` with every tree bank made float64 (format version 2): each leaf
    and base score v becomes v + v * 2^-30 (no longer a float32, so a
    backend that rounds to float32 anywhere differs) and the sum is divided
    by ``divisor``.  No random numbers are drawn: the models of
    ``random_model`` keep their seeds' structure."""
    from dataclasses import replace

    from .arrays import frozen
    from .nodes import TreesNode

    def widen(a):
        a = np.asarray(a, np.float64)
        return frozen(a + a * 2.0 ** -30)

    nodes = [replace(n, value=widen(n.value), base_score=widen(n.base_score), precision="float64",
                     divisor=float(divisor)) if isinstance(n, TreesNode) else n for n in m.nodes]
    return model(m.features, nodes, m.output, task=m.task, groups=m.groups, metadata=dict(m.metadata))


def with_category_splits(m, fraction=0.5):
    """``m`` with about ``fraction`` of each tree bank's splits turned into
    category-set splits (format version 4): a random set over one to three
    words, a random rule per bank and a random ``other_left``, thresholds
    0.  Drawn from a generator seeded by the bank's own arrays, so the
    models of ``random_model`` keep their seeds' structure."""
    from dataclasses import replace

    from .arrays import frozen
    from .builders import category_set, category_splits
    from .codes import CATEGORY_RULES
    from .nodes import TreesNode

    def convert(n):
        sub = np.random.default_rng(zlib.crc32(n.feature.tobytes() + n.threshold.tobytes()))
        rule = list(CATEGORY_RULES)[sub.integers(len(CATEGORY_RULES))]
        pick = (n.feature >= 0) & (sub.random(n.feature.shape[0]) < fraction)
        if not np.any(pick):
            return n
        sets = [None] * n.feature.shape[0]
        for i in np.flatnonzero(pick):
            span = 32 * int(sub.integers(1, 4))
            size = int(sub.integers(0, min(span, 12) + 1))
            sets[i] = category_set(sub.choice(span, size, replace=False))
            if sets[i].shape[0] * 32 < span:        # keep the drawn range: a set may end in empty words
                sets[i] = np.concatenate([sets[i], np.zeros(span // 32 - sets[i].shape[0], np.uint32)])
        other = pick & (sub.random(n.feature.shape[0]) < 0.5)
        return replace(n, threshold=frozen(np.where(pick, np.float32(0), n.threshold)),
                       categories=category_splits(sets, other, rule=rule))

    nodes = [convert(n) if isinstance(n, TreesNode) else n for n in m.nodes]
    return model(m.features, nodes, m.output, task=m.task, groups=m.groups, metadata=dict(m.metadata))
