"""Early Exit (Cambazoglu et al. 2010), the cascade baseline of thesis §2.1.4.

A stage-wise GBRT is trained as usual; at test time an exit is placed every
``exit_every`` trees, with theta_i = threshold * (n - i) / n shrinking
towards the last exit (the proximity schedule of the ranking variant,
(300 - i) s / 299, adapted to margins).  Two exit rules:

* ``exit_side="both"``: a row leaves at exit i when its margin is confident
  either way, |margin| >= theta_i;
* ``exit_side="negative"``: the papers' one-sided rule, which only drops
  unpromising inputs (Cambazoglu et al. 2010; thesis §2.1.4): a row leaves,
  predicted negative, when margin <= -theta_i.  The papers measure the drop
  against the query's 5th-best document; per row the reference is the
  decision boundary, margin 0 (``EarlyExitRanker`` has the per-query rule).

The IR is a ``cascade`` whose stage i is a linear node over the first
(i + 1) * exit_every trees, so a tree is evaluated and paid once however many
stages read it.

Multiclass (softmax GBRT, one tree per class per round): the thesis' rule
(§2.1.4, Scene-15) removes a row once its maximum class likelihood exceeds
s.  Probabilities are not bit-exact across backends, so the exit tests the
raw float32 margins with the cascade rule ``gap_ge`` (docs/ir.md): a row
leaves at exit i when its largest margin minus its second largest is
>= theta_i (same schedule).  With K classes a gap of theta certifies a
softmax maximum probability >= 1 / (1 + (K - 1) e^-theta), the worst case
being every other class at the second margin; ``gap_threshold(s, K)`` is the
theta of probability s, log((K - 1) s / (1 - s)).  For K = 2 the gap is
|f(x)| and the bound the logistic, so ``threshold`` means the same margin for
binary and multiclass models.  Exits sit every ``exit_every`` *rounds* (K
trees), and stage i is a linear node over stage i - 1's K margins plus the
new rounds' trees (each tree into its own class), so the model grows with
the trees, not with their square; its last stage is the full ensemble's
margins.
"""
from __future__ import annotations

import math

import numpy as np

from ... import ir
from .greedy_miser import GreedyMiserClassifier

# exit_side -> (the cascade's exit rule, the sign of theta_i in it)
_EXIT_RULES = {"both": ("abs_ge", 1.0), "negative": ("le", -1.0)}


def gap_threshold(probability, n_classes) -> float:
    """The gap theta = log((K - 1) s / (1 - s)): a margin gap >= theta certifies a
    softmax maximum probability >= s among ``n_classes`` = K classes (module
    docstring); theta <= 0 (s <= 1 / K) lets every row without a NaN margin
    exit.  The float64 value; the IR stores it rounded once to float32,
    and from there the test is exact on every backend."""
    s, K = float(probability), int(n_classes)
    if not 0.0 < s < 1.0:
        raise ValueError(f"probability must lie in (0, 1), got {probability!r}")
    if K < 2:
        raise ValueError(f"n_classes must be at least 2, got {n_classes!r}")
    return math.log((K - 1) * s / (1.0 - s))


class EarlyExitClassifier(GreedyMiserClassifier):
    """Stage-wise GBRT with early exits (thesis §2.1.4), binary or multiclass.

    Parameters are GreedyMiserClassifier's (``cost_tradeoff`` defaults to 0:
    plain GBRT; ``categorical_features`` and the ``cat_*`` options as
    there: the exits read the same trees), plus:

    exit_every : int, default 10
        Rounds between exits (the thesis places an exit every 10 trees): a
        round is one tree, or one tree per class for multiclass.
    threshold : float, default 2.0
        s, the margin ``|f(x)|`` a row needs to leave at the first exit; exit i
        of n asks for s (n - i) / n.  Larger s: fewer early exits, higher
        cost, accuracy closer to the full ensemble.  Multiclass: the gap
        between the largest and second-largest margin, on the same scale
        (a gap s certifies a maximum class probability
        >= 1 / (1 + (K - 1) e^-s); ``gap_threshold(p, K)`` gives the s of a
        probability p).
    exit_side : {"both", "negative"}, default "both"
        "both": leave when ``|f(x)| >= theta_i`` (confident either way;
        multiclass: when the top margin leads the next by theta_i, rule
        ``gap_ge``); "negative": the papers' one-sided rule, leave predicted
        negative when ``f(x) <= -theta_i`` (rows that may be positive always
        go on; binary only).
    """

    def __init__(self, *, loss=None, n_estimators=100, learning_rate=0.1, max_depth=4,
                 min_samples_leaf=20, l2_regularization=0.0, leaf_values="newton", subsample=1.0,
                 max_bins=255, cost_tradeoff=0.0, refund="tree", feature_costs=None,
                 feature_groups=None, group_costs=None, feature_names=None, group_names=None,
                 tree_eval_cost=0.0, max_feature_cost=None, early_stopping=False,
                 validation_fraction=0.1, n_iter_no_change=10, random_state=None, verbose=1,
                 split_criterion="newton", exit_every=10, threshold=2.0, exit_side="both",
                 categorical_features=None, cat_l2=10.0, cat_smooth=10.0, max_cat_threshold=32,
                 min_data_per_group=100, max_cat_to_onehot=4):
        super().__init__(
            loss=loss, n_estimators=n_estimators, learning_rate=learning_rate, max_depth=max_depth,
            min_samples_leaf=min_samples_leaf, l2_regularization=l2_regularization,
            leaf_values=leaf_values, subsample=subsample, max_bins=max_bins,
            cost_tradeoff=cost_tradeoff, refund=refund, feature_costs=feature_costs,
            feature_groups=feature_groups, group_costs=group_costs, feature_names=feature_names,
            group_names=group_names, tree_eval_cost=tree_eval_cost,
            max_feature_cost=max_feature_cost, early_stopping=early_stopping,
            validation_fraction=validation_fraction, n_iter_no_change=n_iter_no_change,
            random_state=random_state, verbose=verbose, split_criterion=split_criterion,
            categorical_features=categorical_features, cat_l2=cat_l2, cat_smooth=cat_smooth,
            max_cat_threshold=max_cat_threshold, min_data_per_group=min_data_per_group,
            max_cat_to_onehot=max_cat_to_onehot)
        self.exit_every = exit_every
        self.threshold = threshold
        self.exit_side = exit_side

    def fit(self, X, y, sample_weight=None, eval_set=None):
        """As ``GreedyMiserClassifier.fit``."""
        if not (isinstance(self.exit_every, (int, np.integer)) and self.exit_every >= 1):
            raise ValueError(f"exit_every must be a positive integer, got {self.exit_every!r}")
        if not self.threshold >= 0:
            raise ValueError(f"threshold must be >= 0, got {self.threshold!r}")
        if self.exit_side not in _EXIT_RULES:
            raise ValueError(f"exit_side must be one of {sorted(_EXIT_RULES)}, got {self.exit_side!r}")
        if self.exit_side == "negative" and len(np.unique(np.asarray(y))) > 2:
            raise ValueError("exit_side='negative' is a binary rule; multiclass Early Exit exits on the margin gap "
                             "(exit_side='both')")
        return super().fit(X, y, sample_weight, eval_set)

    def to_ir(self, n_iterations=None) -> ir.Model:
        flat = super().to_ir(n_iterations)
        if flat.task.kind == "multiclass":
            return self._multiclass_ir(flat, self.trees_[: n_iterations or len(self.trees_)])
        bank = flat.nodes[0]
        T = bank.n_trees
        ends = list(range(self.exit_every, T, self.exit_every)) + [T]
        n = len(ends)
        nodes = [bank]
        stages = []
        for i, end in enumerate(ends):
            nodes.append(ir.linear([ir.tree_input(0, t) for t in range(end)], np.ones(end),
                                   bias=float(bank.base_score[0]), name=f"first {end} trees"))
            theta = self.threshold * (n - i) / n
            rule, sign = _EXIT_RULES[self.exit_side]
            stages.append((len(nodes) - 1, rule, sign * theta))
        nodes.append(ir.cascade(stages, name="early exit"))
        meta = dict(flat.metadata, trainer=type(self).__name__)
        return ir.model(flat.features, nodes, len(nodes) - 1, task=flat.task,
                        groups=flat.groups, metadata=meta)

    def _multiclass_ir(self, flat, rounds) -> ir.Model:
        """The cascade of the module docstring over the softmax bank: exit
        i after round ends[i], rule ``gap_ge`` with theta_i."""
        bank = flat.nodes[0]
        K = bank.n_outputs
        R = len(rounds)
        ends = list(range(self.exit_every, R, self.exit_every)) + [R]
        first = np.concatenate([[0], np.cumsum([len(r) for r in rounds])])   # bank index of each round's trees
        cls = [int(t["k"]) for r in rounds for t in r]
        eye = np.eye(K)
        nodes, stages, start = [bank], [], 0
        n = len(ends)
        for i, end in enumerate(ends):
            trees = range(int(first[start]), int(first[end]))
            inputs = [ir.tree_input(0, t, cls[t]) for t in trees]
            weights = [eye[cls[t]] for t in trees]
            bias = bank.base_score.astype(np.float64)
            if i:        # the previous stage's margins, each into its own class, then the new trees
                inputs = [ir.node_input(len(nodes) - 1, k) for k in range(K)] + inputs
                weights = [eye[k] for k in range(K)] + weights
                bias = np.zeros(K)
            nodes.append(ir.linear(inputs, np.array(weights).reshape(len(inputs), K), bias=bias,
                                   name=f"first {end} rounds"))
            stages.append((len(nodes) - 1, "gap_ge", self.threshold * (n - i) / n, 0))
            start = end
        nodes.append(ir.cascade(stages, name="early exit"))
        meta = dict(flat.metadata, trainer=type(self).__name__)
        return ir.model(flat.features, nodes, len(nodes) - 1, task=flat.task,
                        groups=flat.groups, metadata=meta)
