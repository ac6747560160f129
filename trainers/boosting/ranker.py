"""Rankers on the shared booster: Greedy Miser as a cost-sensitive LambdaMART (or pointwise regression on the
relevance label), and Early Exit's per-query proximity rule (Cambazoglu et al. 2010; thesis §2.1.4, §3.7.2).

``GreedyMiserRanker.fit(X, y, group=...)`` takes query groups as per-row query ids or LightGBM-style group
sizes (``skinflint.metrics.query_groups``: rows of a query that are not contiguous are regrouped).  The number of
trees is chosen on validation NDCG@``eval_at`` (thesis §2.1.4: "the iteration that has the best validation
NDCG@5"), read from the exported IR's tree-prefix sums, which are the reference runtime's scores bit for bit.

Early Exit: training is unchanged; at prediction, after every ``exit_every`` trees (checkpoint after tree i of T),
each query drops every document whose score is at least ``gap(i) = s (T - i) / (T - 1)`` below the query's
current ``top_k``-th best score among the documents still in.  The rule compares documents of one query: in the
IR it is a ``query_exit`` node (``with_proximity_exit``, docs/ir.md), run by the reference runtime's ``rank``
(``rank_queries``); a dropped document's score and lazy cost are those of the trees it ran.  ``per_row_exit``
is the per-row stand-in it is measured against (docs/ranking.md).
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numba import njit, prange

from ... import ir
from ...metrics import QueryGroups, ndcg, query_groups, relevance_labels
from ..base import CostSensitiveRegressor
from ..common import holdout_rows
from .booster import BinnedData, boost, tree_outputs
from .greedy_miser import _GreedyMiserMixin, _OneRealOutput
from .lambdarank import OBJECTIVES, RankTarget, make_rank_loss

# cells of the per-tree value matrix [rows, trees] held at once by the prefix-sum helpers (float32: 256 MB)
_BLOCK_CELLS = 1 << 26


def _row_blocks(offsets, n_trees):
    """Row blocks [a, b) of whole queries, cut at the first query boundary past every ``_BLOCK_CELLS / T`` rows,
    so the per-tree values of a block stay near ``_BLOCK_CELLS``."""
    n = int(offsets[-1])
    per = max(1, _BLOCK_CELLS // max(1, n_trees))
    cuts = np.unique(np.r_[0, offsets[np.searchsorted(offsets, np.arange(per, n, per))], n])
    return list(zip(cuts[:-1], cuts[1:], strict=True))


def output_bank(model: ir.Model) -> ir.TreesNode:
    """The model's output node, which must be a float32 one-output tree bank (what the rankers export)."""
    bank = model.nodes[model.output]
    if not isinstance(bank, ir.TreesNode) or bank.n_outputs != 1 or bank.is_float64:
        raise ValueError("a ranker's model must output one float32 tree bank (a boosted ensemble)")
    return bank


def staged_scores(model: ir.Model, X) -> np.ndarray:
    """S [N, T] float32: column t is the score after the first t + 1 trees, accumulated as the reference
    runtime does (base score, then each tree's float32 leaf in bank order, float32 adds)."""
    bank = output_bank(model)
    H = tree_outputs(bank, X)
    return np.cumsum(np.concatenate([np.full((H.shape[0], 1), bank.base_score[0], np.float32), H], 1),
                     axis=1, dtype=np.float32)[:, 1:]


def prefix_metric(model: ir.Model, X, y, group, k=5) -> np.ndarray:
    """NDCG@k of the first 1, 2, ..., T trees of ``model`` on (X, y, group)."""
    qg = group if isinstance(group, QueryGroups) else query_groups(group, len(X))
    S = staged_scores(model, qg.take(np.asarray(X, np.float32)))
    yq = qg.take(relevance_labels(y, len(X)))
    plain = QueryGroups(qg.offsets, None, qg.ids)
    return np.array([ndcg(yq, S[:, t], plain, k) for t in range(S.shape[1])])


def prefix_model(model: ir.Model, n_trees: int) -> ir.Model:
    """The model cut to its first ``n_trees`` trees (trees stored one after another, as the booster writes
    them): its reference predictions are the prefix sums, its lazy cost what a row pays for those trees."""
    bank = output_bank(model)
    T = bank.n_trees
    if not 1 <= n_trees <= T:
        raise ValueError(f"n_trees must be in [1, {T}], got {n_trees}")
    if n_trees == T:
        return model
    M = int(bank.roots[n_trees])
    if not (np.all(np.diff(bank.roots) > 0) and bank.left[:M].max() < M and bank.right[:M].max() < M):
        raise ValueError("prefix_model: the bank's trees are not stored one after another")
    cs = bank.categories
    sets = None if cs is None else ir.category_splits(
        [cs.bits[b:b + w] if w else None for b, w in zip(cs.begin[:M], cs.words[:M], strict=True)],
        cs.other_left[:M], rule=cs.rule)
    sub = ir.trees_from_arrays(bank.feature[:M], bank.threshold[:M], bank.left[:M], bank.right[:M],
                               bank.value[:M], roots=bank.roots[:n_trees], missing_left=bank.missing_left[:M],
                               tree_cost=bank.tree_cost[:n_trees], base_score=bank.base_score, name=bank.name,
                               categories=sets)
    return ir.model(model.features, [sub], 0, task=model.task, groups=model.groups,
                    metadata=dict(model.metadata, n_iterations=n_trees))


# ---------------------------------------------------------------- Early Exit: per-query and per-row rules

@dataclass
class ExitRanking:
    """What an exit rule gives each document, in the rows' original order.

    scores : float32 [N], the reference runtime's score after the trees the document ran;
    n_trees : int64 [N], trees run (T for a survivor);
    cost : float64 [N], the reference runtime's lazy cost of those trees;
    stage : int64 [N], the checkpoint that dropped it (index into ``checkpoints``; survivors: the last; -1 when
        its budget stopped it before the first);
    order : int64 [N], the ranking: query by query, more trees done first (survivors, then dropped documents
        by later exit first), then score, ties by position (``skinflint.metrics``' ``order=`` form);
    checkpoints : int64, the number of trees at each checkpoint (the last is T).
    """

    scores: np.ndarray
    n_trees: np.ndarray
    cost: np.ndarray
    stage: np.ndarray
    order: np.ndarray
    checkpoints: np.ndarray


def checkpoints(n_trees: int, exit_every: int) -> np.ndarray:
    """Trees done at each checkpoint: every ``exit_every`` trees, and the last tree."""
    return np.array(list(range(exit_every, n_trees, exit_every)) + [n_trees], np.int64)


def _check_exit_params(threshold, exit_every, top_k):
    if not (isinstance(threshold, (int, float, np.integer, np.floating)) and np.isfinite(threshold)
            and threshold >= 0):
        raise ValueError(f"threshold (s) must be a finite number >= 0, got {threshold!r}")
    if not (isinstance(exit_every, (int, np.integer)) and exit_every >= 1):
        raise ValueError(f"exit_every must be a positive integer, got {exit_every!r}")
    if not (isinstance(top_k, (int, np.integer)) and top_k >= 1):
        raise ValueError(f"top_k must be a positive integer, got {top_k!r}")


def with_proximity_exit(model: ir.Model, threshold, *, exit_every=10, top_k=5) -> ir.Model:
    """``model`` (one float32 tree bank) with Early Exit's per-query proximity rule in the IR: a ``query_exit``
    after every ``exit_every`` trees, keep ``top_k``, gap ``s (T - i)/(T - 1)`` (``ir.proximity_gaps``).  A bank
    of at most ``exit_every`` trees has no checkpoint and is returned as it is."""
    _check_exit_params(threshold, exit_every, top_k)
    bank = output_bank(model)
    T = bank.n_trees
    after = ir.every(int(exit_every), T)
    if not after:
        return model
    q = ir.query_exit(model.output, after, keep=int(top_k), gap=ir.proximity_gaps(threshold, after, T),
                      name="early exit (per query)")
    meta = dict(model.metadata, exit_rule="query", threshold=float(threshold), exit_every=int(exit_every),
                top_k=int(top_k))
    return ir.model(model.features, list(model.nodes) + [q], len(model.nodes), task=model.task,
                    groups=model.groups, metadata=meta)


def rank_queries(model: ir.Model, X, group, budget=None) -> ExitRanking:
    """Rank the queries of (X, ``group``: per-row query ids or group sizes, ``skinflint.metrics.query_groups``)
    with ``model`` on the reference runtime, results in the caller's row order.  A model with a query-level
    exit runs its rule (``rank``); any other model scores rows independently (``predict``: every document is a
    survivor of one checkpoint; a cascade's stage gives its exit)."""
    from ...runtimes.reference import ReferenceRuntime
    X = np.ascontiguousarray(X, np.float32)
    N = X.shape[0]
    qg = group if isinstance(group, QueryGroups) else query_groups(group, N)
    Xq = qg.take(X)
    bq = None if budget is None or np.ndim(budget) == 0 else qg.take(np.asarray(budget, np.float64))
    rt = ReferenceRuntime(model)
    if model.scores_queries:
        r = rt.rank(Xq, qg.sizes, budget if bq is None else bq)
        q = model.nodes[model.output]
        ends = np.r_[q.after, model.nodes[q.scorer].n_trees].astype(np.int64)
        scores, trees, cost, stage, ranked = r.scores[:, 0], r.n_trees, r.cost, r.stage, r.order
    else:
        p = rt.predict(Xq, budget if bq is None else bq)
        scores, cost = p.scores[:, 0], p.cost
        ends = _stage_ends(model)
        if isinstance(model.nodes[model.output], ir.CascadeNode):
            stage = p.stage                                   # the last stage completed, -1 for none
            trees = np.where(stage >= 0, ends[np.maximum(stage, 0)], 0)
        else:                                                 # a bank: stage is the last tree completed
            trees = p.stage + 1
            stage = np.where(trees == ends[0], 0, -1)
        qrow = np.repeat(np.arange(qg.n_queries), qg.sizes)
        # lexsort: the last key sorts first: query, then more trees first, then score, then position
        ranked = np.lexsort((np.arange(N), -scores.astype(np.float64), -trees, qrow))
    order = ranked if qg.order is None else qg.order[ranked]
    scores, trees, cost, stage = (_in_row_order(a, qg.order) for a in (scores, trees, cost, stage))
    return ExitRanking(scores, trees.astype(np.int64), cost, stage.astype(np.int64), order, ends)


def _stage_ends(model: ir.Model) -> np.ndarray:
    """Trees done at each stage of a per-row model: a cascade's stages (each the first c trees of one bank, as
    ``per_row_exit`` writes them), or one stage of all the bank's trees."""
    out = model.nodes[model.output]
    if isinstance(out, ir.CascadeNode):
        return np.array([model.nodes[int(s)].n_inputs if isinstance(model.nodes[int(s)], ir.LinearNode)
                         else model.nodes[int(s)].n_trees for s in out.scorer], np.int64)
    return np.array([output_bank(model).n_trees], np.int64)


def proximity_exit(model: ir.Model, X, group, threshold, *, exit_every=10, top_k=5, budget=None) -> ExitRanking:
    """Early Exit's per-query proximity rule (Cambazoglu et al. 2010) over ``model``'s tree bank.

    After checkpoint i (every ``exit_every`` trees), a document of a query leaves when its score is at least
    ``threshold * (T - i) / (T - 1)`` below the query's ``top_k``-th best score among the documents still in;
    the top ``top_k`` never leave.  The rule is the IR's query-level exit (``with_proximity_exit``) run by the
    reference runtime (``rank_queries``).
    """
    return rank_queries(with_proximity_exit(model, threshold, exit_every=exit_every, top_k=top_k), X, group,
                        budget)


@njit(cache=True, parallel=True)
def _kth_best_sums(S, offsets, k, out):
    """out[t] += the k-th best score after t + 1 trees of every query (its worst when it has fewer than k
    documents), summed in float64 over queries in order (per column, so the sum is deterministic)."""
    T = S.shape[1]
    for t in prange(T):
        total = 0.0
        for q in range(offsets.shape[0] - 1):
            a, b = offsets[q], offsets[q + 1]
            col = np.sort(S[a:b, t])
            total += np.float64(col[max(b - a - k, 0)])
        out[t] += total


def kth_best_reference(model: ir.Model, X, group, top_k=5) -> np.ndarray:
    """float64 [T]: the mean over the queries of (X, ``group``) of their ``top_k``-th best score after 1, 2, ...,
    T trees (the reference runtime's prefix sums): the per-row rule's stand-in for the query's live k-th best."""
    bank = output_bank(model)
    qg = group if isinstance(group, QueryGroups) else query_groups(group, len(X))
    Xq = qg.take(np.ascontiguousarray(X, np.float32))
    T = bank.n_trees
    sums = np.zeros(T)
    for a, b in _row_blocks(qg.offsets, T):
        off = qg.offsets[(qg.offsets >= a) & (qg.offsets <= b)] - a
        S = np.ascontiguousarray(staged_scores(model, Xq[a:b]))
        _kth_best_sums(S, off, int(top_k), sums)
    return sums / qg.n_queries


def per_row_exit(model: ir.Model, reference, threshold, *, exit_every=10) -> ir.Model:
    """``model`` (one float32 tree bank) as a per-row cascade: stage j reads the first ``c_j`` trees (every
    ``exit_every``, then all), and a document leaves after stage j when its score is at most
    ``reference[c_j - 1] - s (T - c_j)/(T - 1)`` (``reference``: ``kth_best_reference``, the training queries'
    mean k-th best after each tree).  Every backend runs it row by row; it is the margin rule the per-query rule
    is measured against (docs/ranking.md)."""
    _check_exit_params(threshold, exit_every, 1)
    bank = output_bank(model)
    T = bank.n_trees
    after = ir.every(int(exit_every), T)
    if not after:
        return model
    gaps = ir.proximity_gaps(threshold, after, T)
    nodes: list = [bank]
    stages = []
    for c, g in zip(after, gaps, strict=True):
        nodes.append(ir.linear([ir.tree_input(0, t) for t in range(c)], np.ones(c), bias=float(bank.base_score[0]),
                               name=f"first {c} trees"))
        theta = float(np.float32(np.float64(reference[c - 1]) - g))
        stages.append((len(nodes) - 1, "le", theta))
    stages.append((0, "none", 0.0))
    nodes.append(ir.cascade(stages, name="early exit (per row)"))
    meta = dict(model.metadata, exit_rule="row", threshold=float(threshold), exit_every=int(exit_every))
    return ir.model(model.features, nodes, len(nodes) - 1, task=model.task, groups=model.groups, metadata=meta)


def _offsets(sizes):
    return np.concatenate([[0], np.cumsum(sizes)]).astype(np.int64)


def _in_row_order(a, order):
    """``a``, given for the regrouped rows, in the caller's row order."""
    if order is None:
        return a
    out = np.empty_like(a)
    out[order] = a
    return out


# ---------------------------------------------------------------- estimators

_RANKER_DOC = """
    Parameters
    ----------
    objective : {"lambdarank", "squared"}, default "lambdarank"
        LambdaMART's pairwise ``|dNDCG|``-weighted loss (LightGBM's ``lambdarank``), or pointwise squared loss
        on the relevance label (the thesis' Yahoo experiments).
    sigma : float, default 1
        LambdaMART's sigmoid scale (LightGBM's ``sigmoid``).
    truncation_level : int, default 30
        Pairs need one document in the current top ``truncation_level`` (LightGBM's default).
    eval_at : int, default 5
        k of the validation NDCG@k that chooses the number of trees, and of ``score``.
    split_criterion : {"newton", "least_squares"}, default "newton"
        As ``GreedyMiserClassifier``'s (docs/boosting.md).

    The other parameters are Greedy Miser's (``GreedyMiserRegressor``): ``cost_tradeoff`` (lambda of Eq. 2.5,
    per training row) 0 is plain (LambdaMART) GBRT; ``early_stopping`` holds out ``validation_fraction`` of
    the *queries*.
"""


class GreedyMiserRanker(_OneRealOutput, _GreedyMiserMixin, CostSensitiveRegressor):
    """Greedy Miser for learning to rank (thesis §2.1, §2.1.4): a cost-sensitive LambdaMART.

    ``fit(X, y, group)`` with graded relevance labels y (non-negative integers); ``predict`` returns scores
    (higher ranks first), ``score(X, y, group)`` NDCG@``eval_at``.
    """

    __doc__ += _RANKER_DOC

    def __init__(self, *, objective="lambdarank", n_estimators=100, learning_rate=0.1, max_depth=4,
                 min_samples_leaf=20, l2_regularization=0.0, leaf_values="newton", subsample=1.0,
                 max_bins=255, cost_tradeoff=0.0, refund="tree", feature_costs=None,
                 feature_groups=None, group_costs=None, feature_names=None, group_names=None,
                 tree_eval_cost=0.0, max_feature_cost=None, early_stopping=False, validation_fraction=0.1,
                 n_iter_no_change=10, random_state=None, verbose=1, sigma=1.0, truncation_level=30, eval_at=5,
                 split_criterion="newton",
                 categorical_features=None, cat_l2=10.0, cat_smooth=10.0, max_cat_threshold=32,
                 min_data_per_group=100, max_cat_to_onehot=4):
        super().__init__(
            n_estimators=n_estimators, learning_rate=learning_rate, max_depth=max_depth,
            min_samples_leaf=min_samples_leaf, l2_regularization=l2_regularization, leaf_values=leaf_values,
            subsample=subsample, max_bins=max_bins, cost_tradeoff=cost_tradeoff, refund=refund,
            feature_costs=feature_costs, feature_groups=feature_groups, group_costs=group_costs,
            feature_names=feature_names, group_names=group_names, tree_eval_cost=tree_eval_cost,
            max_feature_cost=max_feature_cost, early_stopping=early_stopping,
            validation_fraction=validation_fraction, n_iter_no_change=n_iter_no_change,
            random_state=random_state, verbose=verbose, split_criterion=split_criterion,
            categorical_features=categorical_features, cat_l2=cat_l2, cat_smooth=cat_smooth,
            max_cat_threshold=max_cat_threshold, min_data_per_group=min_data_per_group,
            max_cat_to_onehot=max_cat_to_onehot)
        del self.loss                     # a ranker's loss is its ``objective``
        self.objective = objective
        self.sigma = sigma
        self.truncation_level = truncation_level
        self.eval_at = eval_at

    def _check_params(self):
        super()._check_params()
        if self.objective not in OBJECTIVES:
            raise ValueError(f"objective must be one of {', '.join(OBJECTIVES)}, got {self.objective!r}")
        if not self.sigma > 0:
            raise ValueError(f"sigma must be > 0, got {self.sigma!r}")
        for name in ("truncation_level", "eval_at"):
            v = getattr(self, name)
            if not (isinstance(v, (int, np.integer)) and v >= 1):
                raise ValueError(f"{name} must be a positive integer, got {v!r}")

    def _bank_ir(self, n_iterations=None) -> ir.Model:
        """The boosted tree bank itself (every document runs all its trees): ``model_``, and what the number
        of trees is chosen on."""
        return _GreedyMiserMixin.to_ir(self, n_iterations)

    def _grouped(self, X, y, group, *, checked):
        """(X, relevance labels, QueryGroups) with each query's rows contiguous; X is validated unless
        ``checked``."""
        X = X if checked else self._validate_X(X, reset=False)
        qg = query_groups(group, X.shape[0])
        return qg.take(X), qg.take(relevance_labels(y, X.shape[0])), qg

    def fit(self, X, y, group=None, sample_weight=None, eval_set=None):
        """Train on rows X with relevance labels y grouped into queries by ``group``.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
        y : array-like of shape (n_samples,)
            Graded relevance, non-negative integers.
        group : array-like, optional
            Per-row query ids, or group sizes summing to n_samples (``skinflint.metrics.query_groups``); None
            is one query.
        sample_weight : array-like of shape (n_samples,), optional
            Multiplies each document's gradient and hessian.
        eval_set : tuple (X_val, y_val) or (X_val, y_val, group_val), optional
            Validation queries: training stops after ``n_iter_no_change`` rounds without a better validation
            NDCG@``eval_at``, and the model keeps the number of trees with the best one.

        Returns
        -------
        self
        """
        X_raw = X
        X = self._encode_frame(X, reset=True)
        X, y, w, costs = self._fit_inputs(X, y, sample_weight)
        N, F = X.shape
        categories = self._category_options(X_raw, F)
        X, labels, qg = self._grouped(X, y, group, checked=True)
        w = qg.take(w)
        rng = np.random.default_rng(self.random_state)
        loss = make_rank_loss(self.objective, sigma=self.sigma, truncation=self.truncation_level,
                              eval_at=self.eval_at)
        offsets = qg.offsets
        val = None
        if eval_set is None and self.early_stopping:
            if qg.n_queries < 2:
                raise ValueError(f"early_stopping holds out whole queries, but the data have {qg.n_queries} query; "
                                 "pass group= with several queries or an eval_set")
            fit_q, val_q = holdout_rows(qg.n_queries, self.validation_fraction, rng)
            fit_q, val_q = np.sort(fit_q), np.sort(val_q)
            query_of_row = np.repeat(np.arange(qg.n_queries), np.diff(offsets))   # rows are grouped by query
            vr = np.flatnonzero(np.isin(query_of_row, val_q))
            val = (X[vr], labels[vr], _offsets(np.diff(offsets)[val_q]))
            tr = np.flatnonzero(np.isin(query_of_row, fit_q))
            X, labels, w = X[tr], labels[tr], w[tr]
            offsets = _offsets(np.diff(qg.offsets)[fit_q])
        elif eval_set is not None:
            if len(eval_set) not in (2, 3):
                raise ValueError("eval_set: expected (X_val, y_val) or (X_val, y_val, group_val)")
            Xv, yv, qgv = self._grouped(eval_set[0], eval_set[1], eval_set[2] if len(eval_set) == 3 else None,
                                        checked=False)
            val = (Xv, yv, qgv.offsets)
        target = RankTarget(labels, offsets)
        data = BinnedData.from_X(X, self.max_bins, seed=int(rng.integers(2**31)),
                                 categorical=None if categories is None else categories.is_cat)
        active = None
        if self.max_feature_cost is not None:
            active = costs.costs <= self.max_feature_cost
            if not active.any():
                raise ValueError(f"no feature has cost <= max_feature_cost={self.max_feature_cost}")
        base = loss.initial_scores(target, w)
        validation = None
        if val is not None:
            vt = RankTarget(val[1], val[2])
            validation = (val[0], vt, np.tile(base, (len(val[0]), 1)))
        result = boost(data, loss, target, self.n_estimators, weight=w, costs=costs,
                       cost_tradeoff=self.cost_tradeoff, refund=self.refund, init_scores=base,
                       allowed_features=active, learning_rate=self.learning_rate, max_depth=self.max_depth,
                       min_samples_leaf=self.min_samples_leaf, l2_regularization=self.l2_regularization,
                       leaf_values=self.leaf_values, subsample=self.subsample, rng=rng, eval_set=validation,
                       n_iter_no_change=self.n_iter_no_change, split_criterion=self.split_criterion,
                       progress=type(self).__name__ if self.verbose else None, categories=categories)
        self._costs = costs
        self.base_score_ = base.astype(np.float32)
        self.trees_ = result.rounds
        self.validation_ndcg_ = None
        if validation is not None:   # choose the trees on the exported model's scores (thesis §2.1.4)
            self.validation_ndcg_ = prefix_metric(self._bank_ir(), val[0], val[1], vt.groups(), self.eval_at)
            self.trees_ = self.trees_[:int(np.argmax(self.validation_ndcg_)) + 1]
        self.n_estimators_ = len(self.trees_)
        tot = result.importances.sum()
        self.feature_importances_ = result.importances / tot if tot > 0 else result.importances
        return self._set_model(self._bank_ir())

    def score(self, X, y, group=None, sample_weight=None):
        """NDCG@``eval_at`` (thesis Eq. 2.20) of the model's ranking of each query, averaged over queries
        (``skinflint.metrics.ndcg``; ``group`` None is one query).  ``sample_weight`` is not supported."""
        if sample_weight is not None:
            raise ValueError("score: sample_weight is not supported by a ranking metric")
        return ndcg(y, self.predict(X), group, self.eval_at)


class EarlyExitRanker(GreedyMiserRanker):
    """Early Exit for ranking (Cambazoglu et al. 2010; thesis §2.1.4, §3.7.2): a (LambdaMART) GBRT trained
    as usual whose prediction drops a query's hopeless documents early.

    ``exit_rule="query"`` (the papers' rule): after every ``exit_every`` trees a document leaves when its score
    is at least ``s (T - i)/(T - 1)`` below its query's current ``top_k``-th best (a ``query_exit`` in the IR,
    run by the reference runtime's ``rank``).  ``exit_rule="row"``: the same schedule against a fixed
    reference instead of the query's live k-th best, the training queries' mean ``top_k``-th best after those
    trees (``kth_best_reference``), so each document decides alone (a ``cascade`` every backend runs row by
    row).  ``to_ir()`` is the model with its exit rule; ``model_``, ``predict`` and ``cost`` are the full tree
    bank's per row; ``rank`` applies the rule and gives each document's score, cost and exit; ``score`` is the
    NDCG@``eval_at`` of that ranking; ``exit_curve`` sweeps s.
    """

    __doc__ += _RANKER_DOC + """
    exit_every : int, default 10
        Trees between checkpoints.
    threshold : float, default 1.0
        s: at checkpoint i of T trees a document leaves when at least s (T - i) / (T - 1) below its query's
        ``top_k``-th best (``exit_rule="row"``: below the training queries' mean ``top_k``-th best).  Larger
        s: fewer exits, higher cost.
    top_k : int, default 5
        The rank the proximity is measured from (NDCG@5's depth).
    exit_rule : {"query", "row"}, default "query"
        The per-query proximity rule (the papers') or its per-row stand-in (docs/ranking.md).
"""

    def __init__(self, *, objective="lambdarank", n_estimators=100, learning_rate=0.1, max_depth=4,
                 min_samples_leaf=20, l2_regularization=0.0, leaf_values="newton", subsample=1.0,
                 max_bins=255, cost_tradeoff=0.0, refund="tree", feature_costs=None,
                 feature_groups=None, group_costs=None, feature_names=None, group_names=None,
                 tree_eval_cost=0.0, max_feature_cost=None, early_stopping=False, validation_fraction=0.1,
                 n_iter_no_change=10, random_state=None, verbose=1, sigma=1.0, truncation_level=30, eval_at=5,
                 split_criterion="newton", exit_every=10, threshold=1.0, top_k=5, exit_rule="query",
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
        self.exit_every = exit_every
        self.threshold = threshold
        self.top_k = top_k
        self.exit_rule = exit_rule

    def _check_params(self):
        super()._check_params()
        _check_exit_params(self.threshold, self.exit_every, self.top_k)
        if self.exit_rule not in ("query", "row"):
            raise ValueError(f"exit_rule must be 'query' or 'row', got {self.exit_rule!r}")

    def fit(self, X, y, group=None, sample_weight=None, eval_set=None):
        """As ``GreedyMiserRanker.fit``; then the training queries' mean ``top_k``-th best score after each
        tree (``row_reference_``, the per-row rule's reference)."""
        super().fit(X, y, group, sample_weight, eval_set)
        Xv = self._validate_X(X, reset=False)
        self.row_reference_ = kth_best_reference(self.model_, Xv, group, int(self.top_k))
        return self

    def _exit_model(self, threshold, n_iterations=None) -> ir.Model:
        self._check_params()
        bank = self._bank_ir(n_iterations)
        if self.exit_rule == "query":
            return with_proximity_exit(bank, threshold, exit_every=self.exit_every, top_k=self.top_k)
        return per_row_exit(bank, self.row_reference_, threshold, exit_every=self.exit_every)

    def to_ir(self, n_iterations=None) -> ir.Model:
        """The model with its exit rule (a ``query_exit`` or a per-row ``cascade``), optionally over the first
        ``n_iterations`` trees; ``model_`` is the bank without it."""
        return self._exit_model(self.threshold, n_iterations)

    def rank(self, X, group=None, threshold=None, budget=None) -> ExitRanking:
        """The exit rule over the fitted model (``rank_queries``); ``threshold`` overrides s, ``budget`` is per
        document."""
        X = self._validate_X(X, reset=False)
        s = self.threshold if threshold is None else threshold
        return rank_queries(self._exit_model(s), X, group, budget)

    def score(self, X, y, group=None, sample_weight=None):
        """NDCG@``eval_at`` of the Early Exit ranking (survivors first, module docstring)."""
        if sample_weight is not None:
            raise ValueError("score: sample_weight is not supported by a ranking metric")
        r = self.rank(X, group)
        return ndcg(y, r.scores, group, self.eval_at, order=r.order)

    def exit_curve(self, X, y, group=None, thresholds=(0.25, 0.5, 1.0, 2.0, 4.0), metric=None) -> list[dict]:
        """One row per s: ``threshold``, ``metric`` (NDCG@``eval_at`` by default; a callable
        ``metric(y, scores, group, order=...)`` otherwise), ``mean_cost`` per document and
        ``mean_trees``."""
        rows = []
        for s in thresholds:
            r = self.rank(X, group, s)
            value = (ndcg(y, r.scores, group, self.eval_at, order=r.order) if metric is None
                     else metric(y, r.scores, group, order=r.order))
            rows.append(dict(threshold=float(s), metric=float(value), mean_cost=float(r.cost.mean()),
                             mean_trees=float(r.n_trees.mean())))
        return rows
