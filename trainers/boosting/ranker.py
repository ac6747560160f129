"""Rankers on the shared booster: Greedy Miser as a cost-sensitive LambdaMART (or pointwise regression on the
relevance label), and Early Exit's per-query proximity rule (Cambazoglu et al. 2010; thesis §2.1.4, §3.7.2).

``GreedyMiserRanker.fit(X, y, group=...)`` takes query groups as per-row query ids or LightGBM-style group
sizes (``skinflint.metrics.query_groups``: rows of a query that are not contiguous are regrouped).  The number of
trees is chosen on validation NDCG@``eval_at`` (thesis §2.1.4: "the iteration that has the best validation
NDCG@5"), read from the exported IR's tree-prefix sums, which are the reference runtime's scores bit for bit.

Early Exit: training is unchanged; at prediction, after every ``exit_every`` trees (checkpoint after tree i of T),
each query drops every document whose score is at least ``gap(i) = s (T - i) / (T - 1)`` below the query's
current ``top_k``-th best score among the documents still in (``proximity_exit``).  The rule compares documents
of one query, so it cannot be a per-row IR node (docs/ranking.md); here it runs over the exported model on the
reference runtime: a dropped document's score and lazy cost are the reference runtime's for the first i trees,
a survivor's are the full model's.
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
    sub = ir.trees_from_arrays(bank.feature[:M], bank.threshold[:M], bank.left[:M], bank.right[:M],
                               bank.value[:M], roots=bank.roots[:n_trees], missing_left=bank.missing_left[:M],
                               tree_cost=bank.tree_cost[:n_trees], base_score=bank.base_score, name=bank.name)
    return ir.model(model.features, [sub], 0, task=model.task, groups=model.groups,
                    metadata=dict(model.metadata, n_iterations=n_trees))


# ---------------------------------------------------------------- Early Exit's proximity rule

@njit(cache=True, parallel=True)
def _proximity_kernel(H, base, offsets, ends, gaps, k, exit_trees, final):
    """Per query (rows contiguous): add trees in float32 up to each checkpoint ``ends[c]``, then drop every
    document outside the current top k (score descending, ties by position) whose score is at least
    ``gaps[c]`` below the k-th best (difference in float64, exact for float32 scores).  Writes the number of
    trees each document ran (``exit_trees``) and its score then (``final``)."""
    T = H.shape[1]
    for q in prange(offsets.shape[0] - 1):
        a, b = offsets[q], offsets[q + 1]
        n = b - a
        acc = np.full(n, base, np.float32)
        active = np.ones(n, np.bool_)
        done = 0
        for c in range(ends.shape[0]):
            e = ends[c]
            for d in range(n):
                if active[d]:
                    for t in range(done, e):
                        acc[d] = acc[d] + H[a + d, t]
            done = e
            if e == T:
                break
            idx = np.flatnonzero(active)
            if idx.shape[0] <= k:
                continue
            ranked = idx[np.argsort(-acc[idx], kind="mergesort")]
            kth = np.float64(acc[ranked[k - 1]])
            for r in range(k, ranked.shape[0]):
                d = ranked[r]
                if kth - np.float64(acc[d]) >= gaps[c]:
                    active[d] = False
                    exit_trees[a + d] = e
        for d in range(n):
            final[a + d] = acc[d]
            if active[d]:
                exit_trees[a + d] = T


@dataclass
class ExitRanking:
    """What the per-query Early Exit rule gives each document, in the rows' original order.

    scores : float32 [N], the reference runtime's score after the trees the document ran;
    n_trees : int64 [N], trees run (T for a survivor);
    cost : float64 [N], the reference runtime's lazy cost of those trees;
    stage : int64 [N], the checkpoint that dropped it (index into ``checkpoints``; survivors: the last);
    order : int64 [N], the ranking: query by query, survivors first by score, then dropped documents by later
        exit first, then score, ties by position (``skinflint.metrics``' ``order=`` form);
    checkpoints : int64, the number of trees at each checkpoint.
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


def proximity_exit(model: ir.Model, X, group, threshold, *, exit_every=10, top_k=5) -> ExitRanking:
    """Early Exit's per-query proximity rule (Cambazoglu et al. 2010) over ``model``'s tree bank.

    After checkpoint i (every ``exit_every`` trees), a document of a query leaves when its score is at least
    ``threshold * (T - i) / (T - 1)`` below the query's ``top_k``-th best score among the documents still in;
    the top ``top_k`` never leave.  Scores and costs come from the reference runtime (module docstring).
    """
    from ...runtimes.reference import ReferenceRuntime
    if not threshold >= 0:
        raise ValueError(f"threshold (s) must be >= 0, got {threshold!r}")
    if not (isinstance(exit_every, (int, np.integer)) and exit_every >= 1):
        raise ValueError(f"exit_every must be a positive integer, got {exit_every!r}")
    if not (isinstance(top_k, (int, np.integer)) and top_k >= 1):
        raise ValueError(f"top_k must be a positive integer, got {top_k!r}")
    bank = output_bank(model)
    X = np.ascontiguousarray(X, np.float32)
    N, T = X.shape[0], bank.n_trees
    qg = group if isinstance(group, QueryGroups) else query_groups(group, N)
    Xq = qg.take(X)
    ends = checkpoints(int(T), int(exit_every))
    gaps = threshold * (T - ends) / max(T - 1, 1)
    exit_trees = np.empty(N, np.int64)
    final = np.empty(N, np.float32)
    for a, b in _row_blocks(qg.offsets, T):
        off = qg.offsets[(qg.offsets >= a) & (qg.offsets <= b)] - a
        _proximity_kernel(tree_outputs(bank, Xq[a:b]), np.float32(bank.base_score[0]), off, ends, gaps,
                          int(top_k), exit_trees[a:b], final[a:b])
    scores = np.empty(N, np.float32)
    cost = np.empty(N)
    for e in np.unique(exit_trees):           # each document runs once, on the prefix it exits after
        rows = np.flatnonzero(exit_trees == e)
        p = ReferenceRuntime(prefix_model(model, int(e))).predict(Xq[rows])
        scores[rows], cost[rows] = p.scores[:, 0], p.cost
    if not np.array_equal(scores.view(np.uint32), final.view(np.uint32)):
        raise AssertionError("proximity_exit: the rule's prefix sums differ from the reference runtime's")
    stage = np.searchsorted(ends, exit_trees)
    qrow = np.repeat(np.arange(qg.n_queries), qg.sizes)
    # lexsort: the last key sorts first: query, then later exit first, then score, then position
    ranked = np.lexsort((np.arange(N), -scores.astype(np.float64), -exit_trees, qrow))
    order = ranked if qg.order is None else qg.order[ranked]
    scores, exit_trees, cost, stage = (_in_row_order(a, qg.order) for a in (scores, exit_trees, cost, stage))
    return ExitRanking(scores, exit_trees, cost, stage, order, ends)


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
                 n_iter_no_change=10, random_state=None, verbose=1, sigma=1.0, truncation_level=30, eval_at=5):
        super().__init__(
            n_estimators=n_estimators, learning_rate=learning_rate, max_depth=max_depth,
            min_samples_leaf=min_samples_leaf, l2_regularization=l2_regularization, leaf_values=leaf_values,
            subsample=subsample, max_bins=max_bins, cost_tradeoff=cost_tradeoff, refund=refund,
            feature_costs=feature_costs, feature_groups=feature_groups, group_costs=group_costs,
            feature_names=feature_names, group_names=group_names, tree_eval_cost=tree_eval_cost,
            max_feature_cost=max_feature_cost, early_stopping=early_stopping,
            validation_fraction=validation_fraction, n_iter_no_change=n_iter_no_change,
            random_state=random_state, verbose=verbose)
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
        self._check_params()
        X, y = self._validate_X_y(X, y)
        N, F = X.shape
        w = self._validate_sample_weight(sample_weight, X)
        X, labels, qg = self._grouped(X, y, group, checked=True)
        w = qg.take(w)
        costs = self._cost_spec(F)
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
        data = BinnedData.from_X(X, self.max_bins, seed=int(rng.integers(2**31)))
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
                       n_iter_no_change=self.n_iter_no_change,
                       progress=type(self).__name__ if self.verbose else None)
        self._costs = costs
        self.base_score_ = base.astype(np.float32)
        self.trees_ = result.rounds
        self.validation_ndcg_ = None
        if validation is not None:   # choose the trees on the exported model's scores (thesis §2.1.4)
            self.validation_ndcg_ = prefix_metric(self.to_ir(), val[0], val[1], vt.groups(), self.eval_at)
            self.trees_ = self.trees_[:int(np.argmax(self.validation_ndcg_)) + 1]
        self.n_estimators_ = len(self.trees_)
        tot = result.importances.sum()
        self.feature_importances_ = result.importances / tot if tot > 0 else result.importances
        return self._set_model(self.to_ir())

    def score(self, X, y, group=None, sample_weight=None):
        """NDCG@``eval_at`` (thesis Eq. 2.20) of the model's ranking of each query, averaged over queries
        (``skinflint.metrics.ndcg``; ``group`` None is one query).  ``sample_weight`` is not supported."""
        if sample_weight is not None:
            raise ValueError("score: sample_weight is not supported by a ranking metric")
        return ndcg(y, self.predict(X), group, self.eval_at)


class EarlyExitRanker(GreedyMiserRanker):
    """Early Exit for ranking (Cambazoglu et al. 2010; thesis §2.1.4, §3.7.2): a (LambdaMART) GBRT trained
    as usual whose prediction drops a query's hopeless documents early (``proximity_exit``).

    ``predict`` and ``cost`` are the full model's per row (what any per-row backend runs); ``rank`` applies the
    per-query rule and gives each document's score, cost and exit; ``score`` is the NDCG@``eval_at`` of that
    ranking; ``exit_curve`` sweeps s.
    """

    __doc__ += _RANKER_DOC + """
    exit_every : int, default 10
        Trees between checkpoints.
    threshold : float, default 1.0
        s: at checkpoint i of T trees a document leaves when at least s (T - i) / (T - 1) below its query's
        ``top_k``-th best.  Larger s: fewer exits, higher cost.
    top_k : int, default 5
        The rank the proximity is measured from (NDCG@5's depth).
"""

    def __init__(self, *, objective="lambdarank", n_estimators=100, learning_rate=0.1, max_depth=4,
                 min_samples_leaf=20, l2_regularization=0.0, leaf_values="newton", subsample=1.0,
                 max_bins=255, cost_tradeoff=0.0, refund="tree", feature_costs=None,
                 feature_groups=None, group_costs=None, feature_names=None, group_names=None,
                 tree_eval_cost=0.0, max_feature_cost=None, early_stopping=False, validation_fraction=0.1,
                 n_iter_no_change=10, random_state=None, verbose=1, sigma=1.0, truncation_level=30, eval_at=5,
                 exit_every=10, threshold=1.0, top_k=5):
        super().__init__(
            objective=objective, n_estimators=n_estimators, learning_rate=learning_rate, max_depth=max_depth,
            min_samples_leaf=min_samples_leaf, l2_regularization=l2_regularization, leaf_values=leaf_values,
            subsample=subsample, max_bins=max_bins, cost_tradeoff=cost_tradeoff, refund=refund,
            feature_costs=feature_costs, feature_groups=feature_groups, group_costs=group_costs,
            feature_names=feature_names, group_names=group_names, tree_eval_cost=tree_eval_cost,
            max_feature_cost=max_feature_cost, early_stopping=early_stopping,
            validation_fraction=validation_fraction, n_iter_no_change=n_iter_no_change,
            random_state=random_state, verbose=verbose, sigma=sigma, truncation_level=truncation_level,
            eval_at=eval_at)
        self.exit_every = exit_every
        self.threshold = threshold
        self.top_k = top_k

    def rank(self, X, group=None, threshold=None) -> ExitRanking:
        """The per-query exit rule over the fitted model (``proximity_exit``); ``threshold`` overrides s."""
        X = self._validate_X(X, reset=False)
        s = self.threshold if threshold is None else threshold
        return proximity_exit(self.model_, X, group, s, exit_every=self.exit_every, top_k=self.top_k)

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
