"""The Model: features, groups, task, a DAG of nodes and an output node."""
from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from .arrays import scalar_cost, scalar_int
from .canonical import model_hash
from .costs import reachable_units, static_cost
from .errors import IRError
from .inspect import inspect as inspect_model
from .nodes import INPUT_TREE, CascadeNode, LinearNode, QueryExitNode, TreesNode, is_control

TASK_KINDS = ("regression", "binary", "multiclass")
TRANSFORMS = {"regression": ("identity",), "binary": ("logistic", "identity"),
              "multiclass": ("softmax", "identity")}
MAX_NODES = 1 << 20
MAX_NAME = 1000


@dataclass(frozen=True)
class Feature:
    name: str
    cost: float = 0.0
    group: int | None = None


@dataclass(frozen=True)
class Group:
    """A descriptor: touching any of its features pays ``cost`` once per row."""

    name: str
    cost: float = 0.0


@dataclass(frozen=True)
class Task:
    kind: str = "regression"
    n_outputs: int = 1
    classes: tuple = ()
    transform: str = "identity"

    @property
    def n_proba(self) -> int:
        """Probabilities per row: 2 for logistic binary, K for softmax, else 0."""
        if self.kind == "binary" and self.transform == "logistic":
            return 2
        return self.n_outputs if self.kind == "multiclass" and self.transform == "softmax" else 0


@dataclass(frozen=True, eq=False)
class Model:
    # sequences in, tuples kept (__post_init__): a model never changes
    features: Sequence[Feature]
    groups: Sequence[Group]
    task: Task
    nodes: Sequence[Any]
    output: int
    metadata: dict = field(default_factory=dict)

    def __post_init__(self):
        object.__setattr__(self, "features", tuple(self.features))
        object.__setattr__(self, "groups", tuple(self.groups))
        object.__setattr__(self, "nodes", tuple(self.nodes))
        validate_model(self)

    @property
    def n_features(self) -> int:
        return len(self.features)

    @property
    def feature_names(self) -> list[str]:
        return [f.name for f in self.features]

    @property
    def feature_costs(self) -> np.ndarray:
        return np.array([f.cost for f in self.features], np.float64)

    @property
    def feature_groups(self) -> np.ndarray:
        """Group index per feature, -1 for none."""
        return np.array([-1 if f.group is None else f.group for f in self.features], np.int32)

    @property
    def group_costs(self) -> np.ndarray:
        return np.array([g.cost for g in self.groups], np.float64)

    @property
    def has_float64_banks(self) -> bool:
        """Some tree bank is float64 (format version 2)."""
        return any(isinstance(n, TreesNode) and n.is_float64 for n in self.nodes)

    @property
    def output_is_float64(self) -> bool:
        """The output is a float64 tree bank: its scores are float64
        (docs/numerics.md)."""
        n = self.nodes[self.output]
        return isinstance(n, TreesNode) and n.is_float64

    @property
    def scores_queries(self) -> bool:
        """The output is a query-level exit (a ``query_exit`` node): the model
        scores whole queries, and only a runtime with ``rank`` runs it."""
        return isinstance(self.nodes[self.output], QueryExitNode)

    def static_cost(self) -> float:
        """The cost of every unit the model can touch: all features extracted up front."""
        return static_cost(self)

    def features_used(self):
        """Indices of features any evaluation path can touch."""
        return np.flatnonzero(reachable_units(self).features)

    def hash(self) -> str:
        """``canonical.model_hash``: SHA-256 of the canonical JSON, without metadata."""
        return model_hash(self)

    def inspect(self) -> str:
        return inspect_model(self)


def node_width(model_nodes, i) -> int:
    n = model_nodes[i]
    if is_control(n):
        return node_width(model_nodes, n.children()[0])
    return n.n_outputs


def validate_model(m: Model) -> None:
    """Checks that involve more than one part of the model (each part has
    already checked itself on construction)."""
    F, G = len(m.features), len(m.groups)
    names = set()
    for i, f in enumerate(m.features):
        if not isinstance(f, Feature):
            raise IRError(f"features[{i}]: expected a Feature")
        if not isinstance(f.name, str) or not f.name or len(f.name) > MAX_NAME:
            raise IRError(f"features[{i}].name: expected a non-empty string")
        if f.name in names:
            raise IRError(f"features[{i}].name: duplicate feature name {f.name!r}")
        names.add(f.name)
        scalar_cost(f.cost, f"features[{i}].cost")
        if f.group is not None:
            scalar_int(f.group, f"features[{i}].group", low=0, high=G)
    gnames = set()
    for i, g in enumerate(m.groups):
        if not isinstance(g, Group) or not isinstance(g.name, str) or not g.name:
            raise IRError(f"groups[{i}].name: expected a non-empty string")
        if g.name in gnames:
            raise IRError(f"groups[{i}].name: duplicate group name {g.name!r}")
        gnames.add(g.name)
        scalar_cost(g.cost, f"groups[{i}].cost")
    validate_task(m.task)
    N = len(m.nodes)
    if N == 0:
        raise IRError("nodes: a model needs at least one node")
    if N > MAX_NODES:
        raise IRError(f"nodes: {N} nodes exceeds the limit {MAX_NODES}")
    if isinstance(m.output, bool) or not isinstance(m.output, (int, np.integer)):
        raise IRError("output: missing or not a node index")
    if not 0 <= m.output < N:
        raise IRError(f"output: node {m.output} is out of range [0, {N})")
    for i, n in enumerate(m.nodes):
        if is_control(n) and i != m.output:
            raise IRError(f"nodes[{i}]: a {n.kind} node may only be the model's output")
        if isinstance(n, TreesNode) and n.feature.size and n.feature.max() >= F:
            raise IRError(f"nodes[{i}].feature: feature index {n.feature.max()} is out of range [0, {F})")
    _check_edges_and_cycles(m)
    if isinstance(m.nodes[m.output], QueryExitNode):
        _check_query_exit(m.nodes, m.output)
    K = node_width(m.nodes, m.output)
    if K != m.task.n_outputs:
        raise IRError(f"output: node {m.output} has {K} outputs but task.n_outputs is {m.task.n_outputs}")


def validate_task(t: Task):
    """Raise IRError naming the field when ``t`` is not a valid task."""
    if t.kind not in TASK_KINDS:
        raise IRError(f"task.kind: unknown task {t.kind!r}; expected one of {list(TASK_KINDS)}")
    if t.transform not in TRANSFORMS[t.kind]:
        raise IRError(f"task.transform: {t.transform!r} is not valid for a {t.kind} task; "
                      f"expected one of {list(TRANSFORMS[t.kind])}")
    if t.kind == "binary":
        if t.n_outputs != 1:
            raise IRError("task.n_outputs: a binary task has 1 output (the margin of classes[1])")
        if len(t.classes) != 2:
            raise IRError(f"task.classes: a binary task needs 2 classes, got {len(t.classes)}")
    elif t.kind == "multiclass":
        if len(t.classes) != t.n_outputs or t.n_outputs < 2:
            raise IRError(f"task.classes: a multiclass task needs n_outputs (= {t.n_outputs}) >= 2 classes, "
                          f"got {len(t.classes)}")
    elif t.classes:
        raise IRError("task.classes: a regression task has no classes")
    if len(set(t.classes)) != len(t.classes):
        raise IRError("task.classes: duplicate class labels")


def _check_query_exit(nodes, i):
    """A query-level exit reads one float32 one-output tree bank and checks
    after fewer trees than it has (docs/ir.md)."""
    q = nodes[i]
    bank = nodes[q.scorer]
    if not isinstance(bank, TreesNode):
        raise IRError(f"nodes[{i}].scorer: node {q.scorer} is a {bank.kind} node; a query_exit scores a tree bank")
    if bank.n_outputs != 1:
        raise IRError(f"nodes[{i}].scorer: node {q.scorer} has {bank.n_outputs} outputs; a query_exit ranks "
                      "by one score")
    if bank.is_float64:
        raise IRError(f"nodes[{i}].scorer: node {q.scorer} is a float64 bank; a query_exit needs a float32 one")
    last = int(q.after[-1])
    if last >= bank.n_trees:
        raise IRError(f"nodes[{i}].checkpoints[{q.n_checkpoints - 1}].after: {last} must be below the bank's "
                      f"{bank.n_trees} trees (a checkpoint after the last tree saves nothing)")


def _check_edges_and_cycles(m: Model):
    nodes = m.nodes
    N = len(nodes)
    deps: list[list[int]] = []
    for i, n in enumerate(nodes):
        d: list[int] = []
        if isinstance(n, LinearNode):
            for j in np.flatnonzero(n.input_kind != 0).tolist():
                f = f"nodes[{i}].inputs[{j}]"
                tgt = int(n.input_index[j])
                if tgt >= N:
                    raise IRError(f"{f}.node: node {tgt} is out of range [0, {N})")
                if tgt == i:
                    raise IRError(f"{f}.node: a node cannot read its own output (self-loop)")
                t = nodes[tgt]
                if is_control(t):
                    raise IRError(f"{f}.node: node {tgt} is a {t.kind} node; inputs must be scoring nodes")
                if n.input_kind[j] == INPUT_TREE:
                    if not isinstance(t, TreesNode):
                        raise IRError(f"{f}.tree: node {tgt} is a {t.kind} node, not a tree bank")
                    if n.input_tree[j] >= t.n_trees:
                        raise IRError(f"{f}.tree: tree {n.input_tree[j]} is out of range [0, {t.n_trees})")
                if n.input_output[j] >= t.n_outputs:
                    raise IRError(f"{f}.output: output {n.input_output[j]} is out of range [0, {t.n_outputs})")
                d.append(tgt)
        elif is_control(n):
            widths = set()
            for j, c in enumerate(n.children()):
                part = {"anytime": "checkpoints", "cascade": "stages", "query_exit": "scorer"}.get(n.kind, "nodes")
                f = f"nodes[{i}].{part}[{j}]"
                if c >= N:
                    raise IRError(f"{f}: node {c} is out of range [0, {N})")
                if c == i:
                    raise IRError(f"{f}: a node cannot contain itself (self-loop)")
                if is_control(nodes[c]):
                    raise IRError(f"{f}: node {c} is a {nodes[c].kind} node; stages must be scoring nodes")
                widths.add(nodes[c].n_outputs)
                d.append(c)
            if len(widths) != 1:
                raise IRError(f"nodes[{i}]: all scorers of a {n.kind} must have the same n_outputs, "
                              f"got {sorted(widths)}")
            K = widths.pop()
            outs = getattr(n, "output", None)
            if outs is not None and outs.size and outs.max() >= K:
                raise IRError(f"nodes[{i}]: an exit/routing output index {outs.max()} is out of range [0, {K})")
            if isinstance(n, CascadeNode) and n.has_gap_rule and K < 2:
                raise IRError(f"nodes[{i}].stages: the gap_ge exit rule needs scorers at least 2 wide, got {K}")
        deps.append(d)
    # Kahn's algorithm: whatever is left with unmet dependencies lies on a cycle.
    indeg = [0] * N
    users: list[list[int]] = [[] for _ in range(N)]
    for i, d in enumerate(deps):
        for t in set(d):
            indeg[i] += 1
            users[t].append(i)
    ready = [i for i in range(N) if indeg[i] == 0]
    done = 0
    while ready:
        t = ready.pop()
        done += 1
        for u in users[t]:
            indeg[u] -= 1
            if indeg[u] == 0:
                ready.append(u)
    if done != N:
        i = next(i for i in range(N) if indeg[i] > 0)
        raise IRError(f"nodes[{i}]: part of a cycle; node inputs must form a DAG")
