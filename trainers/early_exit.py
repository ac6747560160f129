"""Early Exit (Cambazoglu et al. 2010), the cascade baseline of thesis §2.1.4.

A stage-wise GBRT is trained as usual; at test time an exit is placed every
``exit_every`` trees.  For classification (the thesis' Scene-15 variant) a
row leaves at exit i when its margin is confident either way,
|margin| >= theta_i, with theta_i = threshold * (n - i) / n shrinking
towards the last exit (the proximity schedule of the ranking variant,
(300 - i) s / 299, adapted to margins).  The IR is a ``cascade`` whose
stage i is a linear node over the first (i + 1) * exit_every trees, so a
tree is evaluated and paid once however many stages read it.
"""
from __future__ import annotations

import numpy as np

from .. import ir
from .greedy_miser import GreedyMiserClassifier


class EarlyExitClassifier(GreedyMiserClassifier):
    """Binary stage-wise GBRT with early exits.  Parameters as
    GreedyMiserClassifier (cost_tradeoff defaults to 0: plain GBRT), plus
    ``exit_every`` (trees between exits, default 10 as in the thesis) and
    ``threshold`` (s, the margin needed to exit at the first exit)."""

    def __init__(self, *, exit_every=10, threshold=2.0, **params):
        super().__init__(**params)
        self.exit_every = exit_every
        self.threshold = threshold

    @classmethod
    def _param_names(cls):
        return GreedyMiserClassifier._param_names() + ["exit_every", "threshold"]

    def fit(self, X, y, sample_weight=None, eval_set=None):
        if not (isinstance(self.exit_every, (int, np.integer)) and self.exit_every >= 1):
            raise ValueError(f"exit_every must be a positive integer, got {self.exit_every!r}")
        if not self.threshold >= 0:
            raise ValueError(f"threshold must be >= 0, got {self.threshold!r}")
        super().fit(X, y, sample_weight, eval_set)
        if len(self.classes_) != 2:
            raise ValueError("EarlyExitClassifier supports binary classification")
        return self

    def to_ir(self, n_iterations=None) -> ir.Model:
        flat = super().to_ir(n_iterations)
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
            stages.append((len(nodes) - 1, "abs_ge", theta))
        nodes.append(ir.cascade(stages, name="early exit"))
        meta = dict(flat.metadata, trainer=type(self).__name__)
        return ir.model(flat.features, nodes, len(nodes) - 1, task=flat.task,
                        groups=flat.groups, metadata=meta)
