"""BudgetPrune: prune a trained forest for prediction on a budget.

Nan, Wang & Saligrama, "Pruning Random Forests for Prediction on a Budget"
(NIPS 2016).  Given a forest, validation rows and a trade-off lambda, it
picks where each tree ends so as to minimise

    (mean over trees of each tree's validation error)
        + lambda * (mean cost per validation row),

the cost counted as the IR charges it (docs/costs.md): a feature or group
is paid once per row however many trees read it, and a kept tree pays its
evaluation cost.  The error term is the paper's surrogate: each tree's own
error (misclassification, or squared error for a regression), not the
forest's.  The solver (``_prune_kernels``) is the paper's primal-dual
method on the LP relaxation, then an exact coordinate-descent polish; the
best 0-1 solution seen is returned.

What a pruned node predicts (``node_values``):

* ``"source"``: the value the model stores at that node.  scikit-learn's
  trees keep one at every node (the class fractions / mean of the training
  rows that reached it), and ``from_sklearn`` keeps them;
* ``"refit"``: the mean, over the validation rows that reach the node, of
  the leaf values the unpruned subtree gave them (no labels used; a node no
  row reaches takes the plain mean of its children).  LightGBM and XGBoost
  imports keep no internal values, so they are refitted;
* ``"auto"`` (default): ``"source"`` when the bank holds a nonzero value at
  some internal node, else ``"refit"``.

A tree pruned to its root is a constant: it leaves the bank and its value
joins ``base_score`` (it would still pay its evaluation cost otherwise).
The result is an ordinary IR model (same features, groups, task, precision
and divisor) that ``skinflint.verify`` checks like any other.
"""
from __future__ import annotations

from dataclasses import dataclass

import numba
import numpy as np

from ..ir import builders
from ..ir.nodes import TreesNode
from . import _prune_kernels as K
from ._loss_refit import LOGISTIC, SQUARED, mean_loss, refit_and_losses
from ._routing import category_arrays, error_counts, group_triples, labels_of, path_errors, refit_values, route_bank

DEFAULT_ITERATIONS = 40
BOOSTED_ROUNDS = 4        # re-scorings of a boosted ensemble against its pruned self
LOSSES = {"error": 0, "brier": 1, "squared": 2}


def _ensemble(model, bank, ensemble):
    """"forest" (trees averaged: a divisor) or "boosted" (trees summed)."""
    if ensemble == "auto":
        ensemble = "forest" if bank.divisor != 1.0 or bank.n_trees == 1 else "boosted"
    if ensemble not in ("forest", "boosted"):
        raise ValueError(f"ensemble: {ensemble!r}; expected 'auto', 'forest' or 'boosted'")
    if ensemble == "boosted" and not (bank.n_outputs == 1 and (
            model.task.kind == "regression" or (model.task.kind == "binary"
                                                and model.task.transform == "logistic"))):
        raise ValueError(refused_booster("BudgetPrune", "a binary logistic or a squared loss", model, bank))
    return ensemble


def refused_booster(what, supported, model, bank):
    """The one error for a boosted ensemble that pruning and exits do not
    take: multiclass (one margin per class: a pruned node would need one
    refit per class against the softmax, and an exit a rule on K margins),
    or another task than ``supported`` names."""
    kind = "a multiclass" if model.task.kind == "multiclass" else f"a {model.task.kind}"
    return (f"{what}: boosted ensembles are supported for {supported} only; this model "
            f"is {kind} booster with {bank.n_outputs} outputs and a {model.task.transform} transform "
            "(multiclass boosters are refused: docs/compress.md)")


@dataclass
class PruneResult:
    """A pruned model and what it measured on the validation rows."""

    model: object
    lam: float
    cost: float               # mean cost per validation row (the IR's lazy cost)
    error: float              # forest: mean per-tree validation error (the surrogate minimised);
                              # boosted: the pruned ensemble's mean validation loss
    node_values: str
    n_nodes: int
    n_trees: int
    dual_gap: float           # best primal objective - best dual bound (LP relaxation)
    kept: np.ndarray          # bool [M] over the source bank: internal nodes that still split


def _bank(model) -> TreesNode:
    node = model.nodes[model.output]
    if not isinstance(node, TreesNode):
        raise ValueError(f"BudgetPrune needs a model whose output is one trees bank (an imported or trained "
                         f"forest); this model's output is a {node.kind!r} node")
    return node


def _labels(model, y):
    """Class indices (classification) or float targets (regression)."""
    task = model.task
    if task.kind == "regression":
        return np.zeros(len(y), np.int64), np.asarray(y, np.float64), False
    index = {c: i for i, c in enumerate(task.classes)}
    try:
        idx = np.array([index[v] for v in np.asarray(y).tolist()], np.int64)
    except KeyError as e:
        raise ValueError(f"y holds the label {e.args[0]!r}, which is not one of the model's classes "
                         f"{list(task.classes)}") from None
    return idx, np.zeros(len(y)), True


def _units(model):
    """unit_of[f] = f; group_of[f] = F + g or -1; unit costs [F + G]."""
    F = model.n_features
    groups = model.feature_groups
    unit_cost = np.concatenate([model.feature_costs, model.group_costs]).astype(np.float64)
    return (np.arange(F, dtype=np.int64), np.where(groups >= 0, F + groups, -1).astype(np.int64),
            unit_cost)


def _node_values(bank, node_rows, order, ooff, mode):
    """[M, K] what each node predicts when the tree ends there."""
    internal = bank.feature >= 0
    if mode == "auto":
        mode = "source" if np.any(bank.value[internal] != 0) else "refit"
    if mode == "source":
        return np.asarray(bank.value, np.float64), mode
    if mode != "refit":
        raise ValueError(f"node_values: {mode!r}; expected 'auto', 'source' or 'refit'")
    left, right, feature = (np.asarray(a, np.int64) for a in (bank.left, bank.right, bank.feature))
    return refit_values(order, ooff, left, right, feature, node_rows,
                        np.ascontiguousarray(bank.value, np.float64)), mode


class _Problem:
    """Everything about (bank, validation rows) that does not depend on lambda."""

    def __init__(self, model, X, y, node_values="auto", loss="error", ensemble="auto"):
        bank = _bank(model)
        X = np.ascontiguousarray(np.asarray(X, np.float64).astype(np.float32))
        if X.ndim != 2 or X.shape[1] != model.n_features:
            raise ValueError(f"X: expected shape [N, {model.n_features}], got {X.shape}")
        if len(y) != X.shape[0] or X.shape[0] == 0:
            raise ValueError(f"y: {len(y)} labels for {X.shape[0]} rows")
        self.model, self.bank, self.N = model, bank, X.shape[0]
        self.arrays = (bank.left.astype(np.int64), bank.right.astype(np.int64), bank.feature.astype(np.int64))
        unit_of, group_of, self.unit_cost = _units(model)
        f, thr, lft, rgt = bank.feature.astype(np.int64), bank.threshold, bank.left.astype(np.int64), \
            bank.right.astype(np.int64)
        ml, cat, roots = bank.missing_left, category_arrays(bank), bank.roots.astype(np.int64)
        owner = bank.tree_ranges()
        per_tree = np.bincount(owner[owner >= 0], minlength=bank.n_trees)
        self.order, self.ooff = K.preorder(roots, lft, rgt, f, per_tree)
        node_rows, leaf_of, t_node, t_key, self.toff = route_bank(
            f, thr, lft, rgt, ml, cat, roots, X, unit_of, group_of, len(self.unit_cost))
        self._segments(t_node, t_key)
        del t_key
        y_class, y_value, classify = _labels(model, y)
        self.ensemble = _ensemble(model, bank, ensemble)
        if self.ensemble == "boosted":
            if node_values not in ("auto", "refit"):
                raise ValueError(f"node_values={node_values!r}: a boosted ensemble's pruned nodes are refitted "
                                 "to its loss (node_values='auto' or 'refit')")
            kind = LOGISTIC if classify else SQUARED
            target = y_class.astype(np.float64) if classify else y_value
            source = np.asarray(bank.value[:, 0], np.float64)
            self._rescore = lambda cur, kept, refit=False: refit_and_losses(  # noqa: E731  (the same rows every round)
                f, thr, lft, rgt, ml, cat, roots, X, leaf_of, source, cur, kept, float(bank.base_score[0]), target,
                kind, refit)
            self._mean_loss = lambda F: mean_loss(F, target, kind)  # noqa: E731
            value, loss, _ = self._rescore(source, np.ones(len(source), bool), True)
            self.value, self.node_values, self.loss = value[:, None], "loss-refit", "ensemble"
            self.err = loss / self.N
            return
        self.value, self.node_values = _node_values(bank, node_rows, self.order, self.ooff, node_values)
        if loss not in LOSSES:
            raise ValueError(f"loss: {loss!r}; expected one of {list(LOSSES)}")
        if not classify:
            loss = "squared"
        elif loss == "brier" and self.value.shape[1] > 1 and model.task.transform != "identity":
            raise ValueError("loss='brier' reads the node values as class probabilities; this model's "
                             f"values are {model.task.transform} margins: use loss='error'")
        self.loss = loss
        if loss == "error":                        # counts from the rows' leaves: no walk per row
            err = error_counts(self.order, self.ooff, lft, rgt, f, leaf_of, y_class, labels_of(self.value),
                               len(model.task.classes))
        else:
            err = path_errors(f, thr, lft, rgt, ml, cat, roots, X, self.value, y_class, y_value, LOSSES[loss])
        self.err = err / (self.N * bank.n_trees)

    def _segments(self, t_node, t_key):
        """(unit, row) segments: the triples of one (u, i) across trees,
        about 20 bytes per triple while solving (node in both orders, its
        segment, its dual share)."""
        if t_key.shape[0] >= 2 ** 31:
            raise ValueError(f"BudgetPrune: {t_key.shape[0]} (tree, row, feature) first touches are more than "
                             "2^31; prune on fewer validation rows")
        self.seg, seg_unit, self.node_k, self.seg_of = group_triples(t_node, t_key, len(self.unit_cost), self.N)
        self.seg_unit = seg_unit
        self.useg = np.searchsorted(seg_unit, np.arange(len(self.unit_cost) + 1)).astype(np.int64)
        self.seg_cost = self.unit_cost[seg_unit]
        self.bins = K.unit_bins(self.useg, self.seg, self.model.n_features, max(1, numba.get_num_threads()))
        self.t_node = t_node

    def objective(self, kept, alive, lam, used, err):
        error = float(err[alive & ~kept].sum())
        cost = (float(self.seg_cost[used].sum()) / self.N
                + float(self.bank.tree_cost[kept[self.bank.roots]].sum()))
        return error + lam * cost, error, cost

    def solve(self, lam, iterations=DEFAULT_ITERATIONS, polish_sweeps=3):
        """(kept, alive, error, cost, gap) of the best pruning found."""
        lam = float(lam)
        if not np.isfinite(lam) or lam < 0:
            raise ValueError(f"lambda: {lam!r} must be a finite number >= 0")
        if self.ensemble != "boosted":
            return self._solve(lam, self.err, iterations, polish_sweeps)
        # boosted: re-score every tree against the ensemble as pruned so far,
        # keep the round whose pruned ensemble has the least loss + lam * cost
        err, best = self.err, None
        for _ in range(BOOSTED_ROUNDS):
            kept, alive, _, cost, gap = self._solve(lam, err, iterations, polish_sweeps)
            _, loss, F = self._rescore(self.value[:, 0], kept)
            error = float(self._mean_loss(F))
            if best is None or error + lam * cost < best[2] + lam * best[3]:
                best = (kept, alive, error, cost, gap)
            err = loss / self.N
        return best

    def _solve(self, lam, err, iterations, polish_sweeps):
        lft, rgt, f = self.arrays
        cap = lam * self.unit_cost / self.N
        root_cost = lam * np.asarray(self.bank.tree_cost, np.float64)
        # start from an even split of each (u, i)'s cost among the trees
        # whose unpruned paths touch it: a feasible dual point
        share = np.repeat(1.0 / np.diff(self.seg), np.diff(self.seg))
        best, best_dual, best_sol = np.inf, -np.inf, None
        B = K.node_charges(self.useg, self.model.n_features, self.seg, self.node_k, cap, share, f.shape[0])
        bin_units, bin_off = self.bins
        for k in range(iterations):
            kept, alive, dual = K.solve_trees(self.order, self.ooff, lft, rgt, f, err, B, root_cost)
            best_dual = max(best_dual, float(dual.sum()))
            # the step, and the next iteration's charges of the new shares, in one pass
            used, B = K.dual_step_charges(self.useg, bin_units, bin_off, self.seg, self.node_k, kept, share,
                                          0.5 / np.sqrt(k + 1.0), cap, f.shape[0])
            obj = self.objective(kept, alive, lam, used, err)
            if obj[0] < best:
                best, best_sol = obj[0], (kept.copy(), alive.copy())
        kept, alive = best_sol
        if polish_sweeps:
            K.polish(self.order, self.ooff, self.toff, lft, rgt, f, err, self.t_node, self.seg_of,
                     self.seg_unit, cap, root_cost, kept, alive, polish_sweeps)
        used = K.segment_any(self.seg, self.node_k, kept)
        obj, error, cost = self.objective(kept, alive, lam, used, err)
        return kept, alive, error, cost, obj - best_dual


def _pruned_bank(bank, value, kept, alive, order, ooff):
    """The pruned trees as a new bank; trees pruned to their root join the
    base score.  Vectorised over the nodes: the alive nodes of the kept
    trees, in each tree's preorder, renumbered from 0."""
    T = bank.n_trees
    roots = order[ooff[:-1]]                       # a tree's preorder starts at its root
    stays = kept[roots]
    base = np.array(bank.base_score, np.float64)
    for t in np.flatnonzero(~stays):               # tree order, as the source adds them
        base = base + value[roots[t]]
    tree_of = np.repeat(np.arange(T), np.diff(ooff))
    sel = alive[order] & stays[tree_of]
    nodes = order[sel]
    if not nodes.size:                            # a bank holds one tree at least: a constant one
        return builders.trees_from_arrays([-1], [0.0], [-1], [-1], np.zeros((1, value.shape[1])),
                                          roots=[0], missing_left=[True], tree_cost=np.zeros(1),
                                          base_score=base, name=bank.name, precision=bank.precision,
                                          divisor=bank.divisor)
    new = np.full(bank.feature.shape[0], -1, np.int64)
    new[nodes] = np.arange(nodes.size)
    sizes = np.bincount(tree_of[sel], minlength=T)[stays]
    split = kept[nodes]
    return builders.trees_from_arrays(
        np.where(split, bank.feature[nodes], -1), np.where(split, bank.threshold[nodes], 0.0),
        np.where(split, new[bank.left[nodes]], -1), np.where(split, new[bank.right[nodes]], -1),
        np.where(split[:, None], 0.0, value[nodes]), roots=np.r_[0, np.cumsum(sizes)[:-1]],
        missing_left=np.where(split, bank.missing_left[nodes], True),
        tree_cost=np.asarray(bank.tree_cost, np.float64)[stays], base_score=base, name=bank.name,
        precision=bank.precision, divisor=bank.divisor, categories=_pruned_categories(bank, nodes, split))


def _pruned_categories(bank, nodes, split):
    """The category sets of the nodes that still split (new numbering), or
    None when none does: a pruned model of a numeric forest stays numeric."""
    c = bank.categories
    if c is None:
        return None
    at = np.flatnonzero(split & (c.words[nodes] > 0))
    if not at.size:
        return None
    sets = [None] * nodes.size
    for k in at.tolist():
        b = int(c.begin[nodes[k]])
        sets[k] = c.bits[b:b + int(c.words[nodes[k]])]
    return builders.category_splits(sets, np.where(split, c.other_left[nodes], False), rule=c.rule)


def _model_of(problem, kept, alive, lam, error, cost, gap):
    m = problem.model
    bank = _pruned_bank(problem.bank, problem.value, kept, alive, problem.order, problem.ooff)
    meta = {"trainer": "compress:budget_prune", "lambda": lam, "node_values": problem.node_values,
            "validation": {"rows": problem.N, "mean_cost": cost, "tree_error": error},
            "source": dict(m.metadata)}
    return builders.model(list(m.features), [bank], 0, task=m.task, groups=list(m.groups), metadata=meta)


def budget_prune(model, X, y, lam, *, node_values="auto", loss="error", ensemble="auto",
                 iterations=DEFAULT_ITERATIONS, polish_sweeps=3, _problem=None) -> PruneResult:
    """Prune the forest ``model`` (its output one trees bank) on validation
    rows ``X``, ``y`` with trade-off ``lam`` (error per unit of mean cost).

    Parameters
    ----------
    model : ir.Model
        A forest: scikit-learn random forest / extra trees, LightGBM ``rf``,
        a skinflint bank; any model whose output is a ``trees`` node.
    X : array [N, F]
        Validation rows (rounded to float32, as every runtime does).
    y : array [N]
        Their labels (the model's class labels) or regression targets.
    lam : float
        Weight of the mean cost per row against the mean per-tree error.
    node_values : {"auto", "source", "refit"}
        What a pruned node predicts (module docstring).
    loss : {"error", "brier"}
        A classifier's per-tree surrogate: misclassification (the paper's)
        or the Brier score of the node's class probabilities (values read
        as probabilities; a one-output margin through the logistic).  A
        regression uses the squared error.  Unused for a boosted ensemble.
    ensemble : {"auto", "forest", "boosted"}
        "forest": the paper's per-tree surrogate; "boosted": each tree's
        pruning scored in the ensemble's own loss with pruned nodes refitted
        to it (``_loss_refit``; binary logistic or squared loss).  "auto":
        a bank with a divisor (a forest's mean) or one tree is a forest,
        else boosted.
    iterations : int
        Primal-dual iterations (the paper's Algorithm 1).
    polish_sweeps : int
        Sweeps of exact coordinate descent after it (0: none).

    Returns
    -------
    PruneResult
        ``.model`` is an ordinary IR model.
    """
    problem = _problem if _problem is not None else _Problem(model, X, y, node_values, loss, ensemble)
    kept, alive, error, cost, gap = problem.solve(lam, iterations, polish_sweeps)
    pruned = _model_of(problem, kept, alive, float(lam), error, cost, gap)
    return PruneResult(model=pruned, lam=float(lam), cost=cost, error=error, node_values=problem.node_values,
                       n_nodes=int(pruned.nodes[0].feature.shape[0]), n_trees=int(pruned.nodes[0].n_trees),
                       dual_gap=gap, kept=kept)


def prune_to_budget(model, X, y, budget, *, node_values="auto", loss="error", ensemble="auto", steps=14,
                    **kw) -> PruneResult:
    """The BudgetPrune model of least error whose mean validation cost is at
    most ``budget``: a bisection on lambda (in log space)."""
    problem = _Problem(model, X, y, node_values, loss, ensemble)
    full = budget_prune(model, X, y, 0.0, _problem=problem, **kw)
    if full.cost <= budget:
        return full
    lo, hi = 0.0, 1.0
    res = budget_prune(model, X, y, hi, _problem=problem, **kw)
    while res.cost > budget:
        lo, hi = hi, hi * 10
        if hi > 1e12:
            raise ValueError(f"budget {budget!r}: no pruning reaches it (the cheapest costs {res.cost!r})")
        res = budget_prune(model, X, y, hi, _problem=problem, **kw)
    best = res
    for _ in range(steps):
        mid = np.sqrt(lo * hi) if lo > 0 else hi / 10
        r = budget_prune(model, X, y, mid, _problem=problem, **kw)
        if r.cost <= budget:
            best, hi = r, mid
        else:
            lo = mid
    return best
