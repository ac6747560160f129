"""A multi-stage ranking cascade on one boosted tree bank: rank cutoffs (the IR's ``query_exit`` with the
``cutoff`` rule, docs/ranking.md) placed on a Greedy Miser LambdaMART ensemble, chosen on validation NDCG@k.

The method, stated: Greedy Miser's cost penalty (thesis §2.1, Eq. 2.5) makes its early trees split on cheap
features and its later ones buy the expensive features, so the bank is already ordered roughly by cost, as
Cronus' stages are (Chen et al. 2012).  Checkpoints cut the bank into ``n_stages`` stages of equal numbers of
trees.  Then, checkpoint by checkpoint in order, with the cutoffs already chosen in place, the cutoff is the
smallest top-k of ``keep_grid`` (never more than the previous checkpoint's) whose validation NDCG@``eval_at``
stays within ``tolerance`` of the whole bank's; when none does, that checkpoint keeps every document (no
cutoff).  Greedy, one validation ranking per candidate; the documents a cutoff drops pay for no later tree.
"""
from __future__ import annotations

import numpy as np

from ... import ir
from ...metrics import ndcg
from .ranker import _RANKER_DOC, ExitRanking, GreedyMiserRanker, output_bank, rank_queries


def with_cutoffs(model: ir.Model, after, keep) -> ir.Model:
    """``model`` (one float32 tree bank) with rank cutoffs: after ``after[j]`` trees each query keeps its top
    ``keep[j]`` documents (``keep[j] == 0``: no cutoff there).  No cutoff at all: ``model`` itself."""
    bank = output_bank(model)
    pairs = [(int(a), int(k)) for a, k in zip(after, keep, strict=True) if k > 0 and 1 <= a < bank.n_trees]
    if not pairs:
        return model
    q = ir.query_exit(model.output, [a for a, _ in pairs], rule="cutoff", keep=[k for _, k in pairs],
                      name="ranking cascade")
    meta = dict(model.metadata, exit_rule="cutoff", cutoffs=[[a, k] for a, k in pairs])
    return ir.model(model.features, list(model.nodes) + [q], len(model.nodes), task=model.task,
                    groups=model.groups, metadata=meta)


def stage_checkpoints(n_trees: int, n_stages: int) -> np.ndarray:
    """Trees done at the boundaries of ``n_stages`` stages of (nearly) equal numbers of trees."""
    after = np.unique([n_trees * j // n_stages for j in range(1, n_stages)]).astype(np.int64)
    return after[(after >= 1) & (after < n_trees)]


def choose_cutoffs(model: ir.Model, after, X, y, group, *, keep_grid=(5, 10, 20, 50, 100), tolerance=0.005,
                   k=5):
    """The cutoffs of the module docstring for ``model`` (one tree bank) at checkpoints ``after``, chosen on the
    queries (X, y, ``group``): (keep [J] int64, 0 for no cutoff; the bank's NDCG@k; one dict per candidate
    tried: checkpoint, keep, NDCG@k, mean cost per document)."""
    full = ndcg(y, rank_queries(model, X, group).scores, group, k)
    keep = np.zeros(len(after), np.int64)
    curve = []
    grid = sorted(int(v) for v in np.unique(keep_grid))
    for j in range(len(keep)):
        chosen = 0
        for kk in grid:
            keep[j] = kk
            r = rank_queries(with_cutoffs(model, after, keep), X, group)
            value = ndcg(y, r.scores, group, k, order=r.order)
            curve.append(dict(checkpoint=int(after[j]), keep=kk, ndcg=float(value), mean_cost=float(r.cost.mean())))
            if value >= full - tolerance:
                chosen = kk
                break
        keep[j] = chosen
        if chosen:              # later checkpoints keep no more than this one
            grid = [kk for kk in grid if kk <= chosen]
    return keep, float(full), curve


class CascadeRanker(GreedyMiserRanker):
    """A ranking cascade (module docstring): a Greedy Miser ranker whose exported model keeps only each query's
    top ``keep_`` documents at its checkpoints ``after_``.

    ``to_ir()`` is the bank with its cutoffs (a ``query_exit``); ``model_``, ``predict`` and ``cost`` are the
    full bank's per row; ``rank`` runs the cascade on the reference runtime; ``score`` is its NDCG@``eval_at``.
    """

    __doc__ += _RANKER_DOC + """
    n_stages : int, default 3
        Stages of equal numbers of trees; a checkpoint (a possible cutoff) between two stages.
    keep_grid : tuple of int, default (5, 10, 20, 50, 100)
        The top-k a checkpoint may keep.
    tolerance : float, default 0.005
        How far below the whole bank's validation NDCG@``eval_at`` the cascade may go.

    The cutoffs are chosen on ``eval_set`` when given (as the number of trees), else on the training queries.
"""

    def __init__(self, *, objective="lambdarank", n_estimators=100, learning_rate=0.1, max_depth=4,
                 min_samples_leaf=20, l2_regularization=0.0, leaf_values="newton", subsample=1.0,
                 max_bins=255, cost_tradeoff=0.0, refund="tree", feature_costs=None,
                 feature_groups=None, group_costs=None, feature_names=None, group_names=None,
                 tree_eval_cost=0.0, max_feature_cost=None, early_stopping=False, validation_fraction=0.1,
                 n_iter_no_change=10, random_state=None, verbose=1, sigma=1.0, truncation_level=30, eval_at=5,
                 split_criterion="newton", n_stages=3, keep_grid=(5, 10, 20, 50, 100), tolerance=0.005,
                 categorical_features=None, cat_l2=10.0, cat_smooth=10.0, max_cat_threshold=32,
                 min_data_per_group=100, max_cat_to_onehot=4):
        super().__init__(
            objective=objective, n_estimators=n_estimators, learning_rate=learning_rate, max_depth=max_depth,
            min_samples_leaf=min_samples_leaf, l2_regularization=l2_regularization, leaf_values=leaf_values,
            subsample=subsample, max_bins=max_bins, cost_tradeoff=cost_tradeoff, refund=refund,
            feature_costs=feature_costs, feature_groups=feature_groups, group_costs=group_costs,
            feature_names=feature_names, group_names=group_names, tree_eval_cost=tree_eval_cost,
            max_feature_cost=max_feature_cost, early_stopping=early_stopping,
            validation_fraction=validation_fraction, n_iter_no_change=n_iter_no_change,
            random_state=random_state, verbose=verbose, sigma=sigma, truncation_level=truncation_level,
            eval_at=eval_at, split_criterion=split_criterion,
            categorical_features=categorical_features, cat_l2=cat_l2, cat_smooth=cat_smooth,
            max_cat_threshold=max_cat_threshold, min_data_per_group=min_data_per_group,
            max_cat_to_onehot=max_cat_to_onehot)
        self.n_stages = n_stages
        self.keep_grid = keep_grid
        self.tolerance = tolerance

    def _check_params(self):
        super()._check_params()
        if not (isinstance(self.n_stages, (int, np.integer)) and self.n_stages >= 1):
            raise ValueError(f"n_stages must be a positive integer, got {self.n_stages!r}")
        grid = np.asarray(self.keep_grid)
        if grid.ndim != 1 or grid.size == 0 or grid.dtype.kind not in "iu" or np.any(grid < 1):
            raise ValueError(f"keep_grid must be a non-empty list of positive integers, got {self.keep_grid!r}")
        if not (isinstance(self.tolerance, (int, float, np.integer, np.floating)) and self.tolerance >= 0):
            raise ValueError(f"tolerance must be a number >= 0, got {self.tolerance!r}")

    def fit(self, X, y, group=None, sample_weight=None, eval_set=None):
        """As ``GreedyMiserRanker.fit``; then the cutoffs (module docstring): ``after_`` (trees done at each
        checkpoint), ``keep_`` (top-k kept there, 0 for none), ``validation_curve_`` (one dict per candidate
        tried: checkpoint, keep, NDCG, mean cost per document)."""
        super().fit(X, y, group, sample_weight, eval_set)
        if eval_set is not None and len(eval_set) == 3:
            Xv, yv, gv = eval_set
        elif eval_set is not None:
            Xv, yv, gv = eval_set[0], eval_set[1], None
        else:
            Xv, yv, gv = X, y, group
        Xv = self._validate_X(Xv, reset=False)
        self.after_ = stage_checkpoints(output_bank(self.model_).n_trees, int(self.n_stages))
        keep, full, curve = choose_cutoffs(self.model_, self.after_, Xv, yv, gv, keep_grid=self.keep_grid,
                                           tolerance=self.tolerance, k=self.eval_at)
        self.keep_ = keep
        self.validation_full_ndcg_ = float(full)
        self.validation_curve_ = curve
        return self

    def to_ir(self, n_iterations=None) -> ir.Model:
        """The bank (optionally its first ``n_iterations`` trees) with the chosen cutoffs."""
        self._check_params()
        bank = self._bank_ir(n_iterations)
        if not hasattr(self, "keep_"):
            return bank
        return with_cutoffs(bank, self.after_, self.keep_)

    def rank(self, X, group=None, budget=None) -> ExitRanking:
        """The cascade over the queries of (X, ``group``), on the reference runtime (``rank_queries``)."""
        X = self._validate_X(X, reset=False)
        return rank_queries(self.to_ir(), X, group, budget)

    def score(self, X, y, group=None, sample_weight=None):
        """NDCG@``eval_at`` of the cascade's ranking."""
        if sample_weight is not None:
            raise ValueError("score: sample_weight is not supported by a ranking metric")
        r = self.rank(X, group)
        return ndcg(y, r.scores, group, self.eval_at, order=r.order)
