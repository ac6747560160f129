"""Retrofitted Early Exit: checkpoints on a trained boosted ensemble.

Early Exit (Cambazoglu et al. 2010, thesis §2.1.4) stops adding trees for a
row once its partial margin is confidently far from 0.  Here the
checkpoints are placed on an ensemble that was trained without them (an
imported LightGBM / XGBoost / scikit-learn booster, a skinflint GBRT): one
``cascade`` whose stage k is the partial sum of the first ``k * every``
trees (a ``linear`` node over the bank's trees, exit rule ``abs_ge``:
|margin| >= theta_k) and whose last stage is the source bank itself, so a
row that reaches the end gets the source's margin (a float64 bank's rounded
once to float32, as a cascade stage reads it: the same sign, hence the same
label, unless |margin| is below float32's smallest subnormal).  Nothing is
retrained.

Thresholds are chosen on validation rows, stage by stage: theta_k is the
smallest value at which the rows that would exit at stage k disagree with
the full model's label on at most ``tolerance * N / (stages - 1)`` rows, so
at most ``tolerance`` of the validation rows get another label than the
source model gives them.

Tree order (``order``): ``"source"`` keeps the trees' order; ``"cheap-first"``
orders them greedily by the cost of the features each adds to those of the
trees before it (static costs: features, groups once, e_t), so early
checkpoints read cheap features; ``"auto"`` builds both and keeps the one
with the lower mean validation cost.  A partial sum in another order is
another float32 sum (rounding differs, so a checkpoint's margin is not a
prefix of the source's sum); the last stage is the source bank in its own
order, so the full margin does not change with the order.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import cast

import numpy as np

from ..ir import builders
from ..ir.costs import features_per_tree
from ._routing import category_arrays, leaf_index
from .budget_prune import _bank, refused_booster

F32_MAX = float(np.finfo(np.float32).max)


@dataclass
class ExitResult:
    """A model with retrofitted exits and what it measured on validation."""

    model: object
    order: str
    thresholds: list
    cost: float                # mean lazy cost per validation row (reference runtime)
    agreement: float           # fraction of validation rows labelled as the source labels them
    source_cost: float


def _contributions(model, bank, X):
    """[N, T] each tree's value per row, as the float32 a ``linear`` node reads."""
    leaf_of = leaf_index(bank.feature.astype(np.int64), bank.threshold, bank.left.astype(np.int64),
                         bank.right.astype(np.int64), bank.missing_left, category_arrays(bank),
                         bank.roots.astype(np.int64), X)
    return np.asarray(bank.value[:, 0], np.float64)[leaf_of].T.astype(np.float32)


def cheap_first_order(model, bank):
    """Trees ordered greedily by the static cost each adds to the features
    (and groups) of the trees before it; ties keep the source order."""
    feats = features_per_tree(bank)
    fc, fg, gc = model.feature_costs, model.feature_groups, model.group_costs
    have_f = np.zeros(model.n_features, bool)
    have_g = np.zeros(len(gc), bool)
    left = list(range(bank.n_trees))
    order = []
    while left:
        def added(t):
            f = feats[t][~have_f[feats[t]]]
            g = np.unique(fg[f][fg[f] >= 0])
            return float(fc[f].sum() + gc[g[~have_g[g]]].sum() + bank.tree_cost[t])
        t = min(left, key=lambda t: (added(t), t))
        left.remove(t)
        order.append(t)
        have_f[feats[t]] = True
        g = fg[feats[t]]
        have_g[g[g >= 0]] = True
    return np.array(order, np.int64)


def _thresholds(partial, full_label, ends, tolerance):
    """Theta per checkpoint (all but the last stage), stage by stage."""
    N = partial.shape[0]
    allowed = tolerance * N / max(len(ends) - 1, 1)
    remaining = np.ones(N, bool)
    out = []
    for k in range(len(ends) - 1):
        m = partial[:, k]
        idx = np.flatnonzero(remaining)
        a = np.abs(m[idx])                           # float32: every candidate theta is one of them
        wrong = (m[idx] > 0) != full_label[idx]
        order = np.argsort(-a, kind="stable")
        a, wrong = a[order], wrong[order]
        bad = np.cumsum(wrong)
        # a cut after row j lets every row with |m| >= a[j] exit: ties go together
        last_of_tie = np.r_[a[1:] != a[:-1], True] if a.size else np.zeros(0, bool)
        ok = np.flatnonzero(last_of_tie & (bad <= allowed) & (a > 0))
        theta = float(a[ok[-1]]) if ok.size else F32_MAX
        out.append(theta)
        remaining &= ~(np.abs(m) >= np.float32(theta))
    return out


def _exit_model(model, bank, order, ends, thresholds):
    nodes = [bank]
    stages = []
    bias = float(bank.base_score[0])
    for end, theta in zip(ends[:-1], thresholds, strict=True):
        trees = order[:end]
        nodes.append(builders.linear([builders.tree_input(0, int(t)) for t in trees], np.ones(end), bias=bias,
                                     name=f"first {end} trees"))
        stages.append((len(nodes) - 1, "abs_ge", theta))
    stages.append((0, "none", 0.0))                 # the source bank, in its own order
    nodes.append(builders.cascade(stages, name="retrofitted early exit"))
    meta = {"trainer": "compress:retrofit_exits", "order": [int(t) for t in order],
            "checkpoints": [int(e) for e in ends], "thresholds": list(thresholds),
            "source": dict(model.metadata)}
    return builders.model(list(model.features), nodes, len(nodes) - 1, task=model.task,
                          groups=list(model.groups), metadata=meta)


def retrofit_exits(model, X, *, every=10, tolerance=0.005, order="auto") -> ExitResult:
    """Early Exit checkpoints every ``every`` trees on the binary boosted
    ensemble ``model``, thresholds chosen on validation rows ``X`` so that
    at most ``tolerance`` of them change label (module docstring)."""
    from ..runtimes.reference import ReferenceRuntime
    bank = _bank(model)
    if bank.divisor != 1.0:
        raise ValueError(f"retrofit_exits: Early Exit checkpoints need a boosted ensemble (trees summed); "
                         f"this model's trees are averaged (divisor {bank.divisor})")
    if model.task.kind != "binary" or bank.n_outputs != 1:
        raise ValueError(refused_booster("retrofit_exits", "a binary task (one margin)", model, bank))
    if every < 1 or every >= bank.n_trees:
        raise ValueError(f"every: {every!r} must be between 1 and the number of trees - 1 ({bank.n_trees - 1})")
    if order not in ("auto", "source", "cheap-first"):
        raise ValueError(f"order: {order!r}; expected 'auto', 'source' or 'cheap-first'")
    X = np.ascontiguousarray(np.asarray(X, np.float64).astype(np.float32))
    ref = ReferenceRuntime(model).predict(X)
    full_label = np.asarray(ref.scores, np.float64)[:, 0] > 0
    c = _contributions(model, bank, X)
    ends = list(range(every, bank.n_trees, every)) + [bank.n_trees]
    best = None
    for name in (("source", "cheap-first") if order == "auto" else (order,)):
        perm = np.arange(bank.n_trees) if name == "source" else cheap_first_order(model, bank)
        acc = np.full(X.shape[0], np.float32(bank.base_score[0]), np.float32)
        partial = np.empty((X.shape[0], len(ends)), np.float32)
        k = 0
        for j, t in enumerate(perm):               # float32, in IR order, as the linear node adds
            acc = acc + c[:, t]
            if k < len(ends) and j + 1 == ends[k]:
                partial[:, k] = acc
                k += 1
        thetas = _thresholds(partial, full_label, ends, tolerance)
        m = _exit_model(model, bank, perm, ends, thetas)
        pred = ReferenceRuntime(m).predict(X)
        res = ExitResult(model=m, order=name, thresholds=thetas, cost=float(np.mean(pred.cost)),
                         agreement=float(np.mean((np.asarray(pred.scores, np.float64)[:, 0] > 0) == full_label)),
                         source_cost=float(np.mean(ref.cost)))
        if best is None or res.cost < best.cost:
            best = res
    return cast(ExitResult, best)      # the loop runs at least once: one order or both
