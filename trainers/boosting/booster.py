"""The boosting round loop, callable on its own.

Greedy Miser and GBRT call it to train; the cascade, tree-of-classifiers
and anytime trainers call it to grow their tree dictionaries (the "boosting
trick", thesis §1.4.1 and §3.6).  One round fits ``loss.n_outputs``
regression trees to the loss gradient with Greedy Miser's impurity (thesis
Eq. 2.5): a split on a feature the ensemble has not yet paid for must beat
``cost_tradeoff * n * c_a`` (``CostState``).

A booster run can start from given scores (``init_scores``: continue another
ensemble, as the cost-tiered dictionaries do) and can be restricted to a
subset of the features (``allowed_features``).
"""
from __future__ import annotations

import warnings
from dataclasses import dataclass, field

import numpy as np
from numba import njit, prange

from ... import ir
from ...runtimes._split import category_left
from ..common import progress_bar
from .binning import (
    MAX_CATEGORY_BINS,
    MISSING_BIN,
    bin_categories,
    bin_data,
    category_counts,
    find_thresholds,
    n_slots,
    pack_thresholds,
    widen,
)
from .grower import CategoryOptions, grow
from .losses import Loss
from .predictor import (
    _child,
    add_leaf_values,
    predict_binned,
    predict_binned_sets,
    predict_raw,
    predict_raw_sets,
)
from .split_penalty import CostState

# how a split is scored (GreedyMiserClassifier.split_criterion)
SPLIT_CRITERIA = ("newton", "least_squares")


@dataclass
class BinnedData:
    """Training rows as bin indices, and the thresholds the bins stand for."""

    binned: np.ndarray       # uint8 [F, N]; uint16 when a categorical feature has more bins (binning.widen)
    n_bins: np.ndarray       # int64 [F]
    flat: np.ndarray         # float32 thresholds of all features, packed
    offsets: np.ndarray      # where each feature's thresholds start in ``flat``
    cat_codes: list | None = None   # per feature: the category of each bin (categorical) or None

    @classmethod
    def from_X(cls, X, max_bins=255, seed=0, threshold_rows=None, categorical=None) -> BinnedData:
        """Bin float32 X [N, F] on at most ``max_bins`` quantile thresholds
        per feature (a sample of rows when N is large, drawn with ``seed``).
        ``threshold_rows`` (sorted indices) takes the thresholds from those
        rows only, e.g. the training part of X; every row is binned.
        ``categorical`` (bool [F], optional): those features' bins are their
        frequent category codes (``binning.category_bins``: at least the
        ``max_bins - 1`` most frequent, more as LightGBM keeps them), then
        one "other" bin; ``n_bins`` counts the other bin.  When a feature
        then has more than 255 bins, every feature is stored as uint16
        (``binning.widen``); numeric-only data stay uint8."""
        thresholds = find_thresholds(X if threshold_rows is None else X[threshold_rows], max_bins, seed=seed)
        flat, offsets = pack_thresholds(thresholds)
        data = cls(bin_data(X, flat, offsets), np.array([len(t) + 1 for t in thresholds], np.int64),
                   flat, offsets)
        if categorical is not None and np.any(categorical):
            src = X if threshold_rows is None else X[threshold_rows]
            data.cat_codes = [None] * X.shape[1]
            for f in np.flatnonzero(categorical):
                codes, n_codes, pooled = category_counts(src[:, f], max_bins)
                if pooled and len(codes) == MAX_CATEGORY_BINS:   # the cap, not LightGBM's rule, left them out
                    warnings.warn(f"categorical feature {f} has {n_codes} categories: the {len(codes)} most "
                                  f"frequent get a bin, the other {n_codes - len(codes)} ({pooled} of "
                                  f"{src.shape[0]} rows) go right at every set split", UserWarning,
                                  stacklevel=3)
                data.cat_codes[f] = codes
                data.n_bins[f] = len(codes) + 1
            if data.n_bins.max() > MISSING_BIN:    # value bins would reach the uint8 missing bin
                data.binned = widen(data.binned, int(data.n_bins.max()) + 1)
            for f in np.flatnonzero(categorical):
                data.binned[f] = bin_categories(np.ascontiguousarray(X[:, f]), data.cat_codes[f],
                                                data.missing_bin, data.binned.dtype)
        return data

    @property
    def n_slots(self) -> int:
        """The histogram width (``binning.n_slots``): 256 for uint8 data."""
        return n_slots(self.binned, self.n_bins)

    @property
    def missing_bin(self) -> int:
        """The bin of NaN: 255 for uint8 data, ``n_slots - 1`` for uint16."""
        return self.n_slots - 1

    @property
    def is_cat(self) -> np.ndarray:
        """The categorical features, a bool mask [F]."""
        F = self.binned.shape[0]
        return np.zeros(F, bool) if self.cat_codes is None else np.array([c is not None for c in self.cat_codes])

    @property
    def n_rows(self) -> int:
        return int(self.binned.shape[1])


@dataclass
class BoostResult:
    """What a booster run grew.

    ``rounds[r]`` is the list of trees of round r, each a dict of local node
    arrays (feature, threshold, left, right, missing_left, value float32) and
    ``k``, the output column it adds to.  ``raw`` [N, K] are the training
    scores after the last round (float64 sums of float32 leaves);
    ``validation_loss`` has one entry per round when an eval set was given,
    and ``best_rounds`` is the number of rounds with the lowest validation
    loss (``len(rounds)`` without an eval set).
    """

    rounds: list
    raw: np.ndarray
    importances: np.ndarray
    validation_loss: list = field(default_factory=list)
    best_rounds: int = 0
    paid: np.ndarray | None = None


def finish_tree(tree, leaf, data: BinnedData):
    """A grown tree as node arrays with leaf values ``leaf`` (already scaled)
    rounded to float32 once, so training sees the deployed values; returns
    (feature, split_bin, left, right, missing_left, value, threshold)."""
    leaf = leaf.astype(np.float32).astype(np.float64)
    feat, sbin, left, right, mleft, value = tree.arrays(leaf)
    thr = np.zeros(feat.shape[0], np.float32)
    inner = feat >= 0
    thr[inner] = data.flat[data.offsets[feat[inner]] + sbin[inner]]
    for m in tree.sets:   # a set split's threshold is 0 (the IR's rule)
        thr[m] = 0.0
    return feat, sbin, left, right, mleft, value, thr


def tree_category_sets(tree, data: BinnedData):
    """A grown tree's set splits as the IR's ``concat_trees`` takes them:
    (``category_sets``: per node None or the words of the *codes* that go
    left, ``other_left``: all False, as the rare, unseen and non-code values
    the left set does not list go right, where their training rows went).
    None when the tree has no set split."""
    if not tree.sets:
        return None
    n = len(tree.feature)
    sets: list = [None] * n
    assert data.cat_codes is not None    # a tree with set splits was grown on categorical data
    for m, goes in tree.sets.items():
        codes = data.cat_codes[tree.feature[m]]
        sets[m] = ir.category_set(codes[np.flatnonzero(goes[:len(codes)])])
    return sets, np.zeros(n, np.bool_)


def set_arrays(category_sets):
    """(begin int64 [n], words int64 [n], bits uint32 [W]) of per-node
    sets (``tree_category_sets``), for ``predict_raw_sets``."""
    words = np.array([0 if c is None else len(c) for c in category_sets], np.int64)
    begin = np.where(words > 0, np.cumsum(words) - words, -1)
    parts = [c for c in category_sets if c is not None]
    bits = np.concatenate(parts).astype(np.uint32) if parts else np.zeros(1, np.uint32)
    return begin, words, bits


def boost(data: BinnedData, loss: Loss, target, n_rounds, *, weight=None, costs=None,
          cost_tradeoff=0.0, refund="tree", init_scores=None, allowed_features=None,
          learning_rate=0.1, max_depth=4, min_samples_leaf=20, l2_regularization=0.0,
          leaf_values="newton", subsample=1.0, rng=None, eval_set=None, n_iter_no_change=None,
          split_criterion="newton", progress=None, categories: CategoryOptions | None = None) -> BoostResult:
    """Grow ``n_rounds`` rounds of regression trees on the gradients of ``loss``.

    Parameters
    ----------
    data : BinnedData
        The training rows, binned.
    loss : Loss
        Gradients, hessians and value (``trainers.losses``); ``loss.n_outputs``
        trees per round.  With K > 1 outputs every tree of a round fits the
        gradients g_ik = dl/df_k(x_i) at the scores f^(t-1) of the round's
        start, f_k^(t) = f_k^(t-1) + lr * h_tk (LightGBM, XGBoost), not at
        scores that classes 0..k-1 already moved (docs/boosting.md,
        "Multiclass").
    target : ndarray
        Encoded targets, as ``loss`` expects them.
    n_rounds : int
        Maximum number of rounds.
    weight : ndarray of shape (N,), optional
        Sample weights (ones).
    costs : FeatureCosts, optional
        Feature and group costs for the Eq. (2.5) penalty (unit costs).
    cost_tradeoff : float, default 0
        Greedy Miser's lambda per training row, in cost units: the penalty
        is ``cost_tradeoff * sum(weight) * unpaid cost``.  0 is plain GBRT.
    refund : {"tree", "immediate"}
        When a newly used feature becomes free: after the tree (the seeds'
        code) or at once (exact marginal within a tree, LightGBM's CEGB).
    init_scores : ndarray of shape (N, K) or (K,), optional
        Starting scores; default ``loss.initial_scores``.  Rows given here
        continue another ensemble (that ensemble's base score then belongs
        to it, not to the trees grown here).
    allowed_features : bool ndarray of shape (F,), optional
        Features the trees may split on (all).
    learning_rate, max_depth, min_samples_leaf, l2_regularization, leaf_values, subsample
        As in ``GreedyMiserClassifier``.
    rng : numpy Generator, optional
        Drawn from for row subsamples only.
    eval_set : tuple (X_val float32, target_val, raw_val [N_val, K]), optional
        Validation rows, their encoded targets and starting scores; the
        validation loss is recorded after every round.
    n_iter_no_change : int, optional
        With an eval set, stop after this many rounds without a new best.
    split_criterion : {"newton", "least_squares"}, default "newton"
        As in ``GreedyMiserClassifier``: "least_squares" grows each tree on
        the sample weights in place of the hessians (Eq. 2.5's fit of the
        negative gradient).
    progress : str, optional
        A progress-bar label (no bar when None; ``common.progress_bar``).
    categories : CategoryOptions, optional
        Category-set splits on ``categories.is_cat`` (``data`` binned with
        the same mask); None: numeric splits only.

    Returns
    -------
    BoostResult
    """
    if split_criterion not in SPLIT_CRITERIA:
        raise ValueError(f"split_criterion must be one of {SPLIT_CRITERIA}, got {split_criterion!r}")
    least_squares = split_criterion == "least_squares"
    want = np.zeros(data.binned.shape[0], bool) if categories is None else np.asarray(categories.is_cat, bool)
    if not np.array_equal(want, data.is_cat):
        raise ValueError("boost: the data's categorical features (BinnedData.from_X(categorical=...)) and "
                         "categories.is_cat differ")
    N = data.n_rows
    F = data.binned.shape[0]
    K = loss.n_outputs
    w = np.ones(N) if weight is None else weight
    if init_scores is None:
        raw = np.tile(loss.initial_scores(target, w), (N, 1))
    else:
        raw = np.array(np.broadcast_to(init_scores, (N, K)) if np.ndim(init_scores) < 2
                       else init_scores, np.float64).reshape(N, K)
    active = np.ones(F, np.bool_) if allowed_features is None else np.asarray(allowed_features, np.bool_)
    if costs is None:
        c, groups, gc = np.ones(F), np.full(F, -1), np.zeros(0)
    else:
        c, groups, gc = costs.costs, costs.groups, costs.group_costs
    state = CostState(c, groups, gc, cost_tradeoff * w.sum())
    Xv = tv = raw_v = None
    if eval_set is not None:
        Xv, tv, raw_v = eval_set
        raw_v = np.array(raw_v, np.float64)
    G, H = np.zeros((K, N)), np.zeros((K, N))     # one round's gradients and hessians, per output
    importances = np.zeros(F)
    result = BoostResult(rounds=[], raw=raw, importances=importances)
    best, best_it, since = np.inf, 0, 0
    all_rows = np.arange(N, dtype=np.int32)
    workspace: dict = {}   # the grower's histogram buffers, reused by every tree of this run
    bar = progress_bar(progress is not None, n_rounds, progress, "round", iterable=range(n_rounds))
    try:   # closed on Ctrl-C too (even one before the first round): an open bar runs into "interrupted"
        for it in bar:
            rows = all_rows
            if subsample < 1:
                rows = np.sort(rng.choice(N, max(1, int(subsample * N)), replace=False)).astype(np.int32)
            penalty = state.penalty()
            used_in_tree: list[int] = []

            def on_split(f, used_in_tree=used_in_tree):   # this round's list, bound now
                used_in_tree.append(f)
                if refund == "immediate":
                    state.pay(f)
                    return state.penalty()
                return None
            round_trees = []
            # Every class's gradients come from the scores at the start of the round (LightGBM, XGBoost):
            # class k's tree must not see classes 0..k-1 already moved, or the round's K Newton steps
            # compound (26-class letter diverged at learning rate 0.2-0.3; docs/boosting.md, "Multiclass").
            loss.round_gradients(target, raw, G, H)
            for k in range(K):
                g, h = G[k], H[k]
                g *= w
                if least_squares:   # Eq. (2.5): fit -g by weighted least squares, whatever the loss
                    h[:] = w
                else:
                    h *= w
                tree = grow(data.binned, data.n_bins, rows, g, h, max_depth=max_depth,
                            min_samples_leaf=min_samples_leaf, l2=l2_regularization,
                            penalty=penalty, active=active, on_split=on_split, workspace=workspace,
                            categories=categories)
                sums = np.array(tree.sums)
                if leaf_values == "newton":
                    leaf = -sums[:, 0] / (sums[:, 1] + l2_regularization + 1e-300)
                else:
                    leaf = -sums[:, 0] / np.maximum(sums[:, 2], 1.0)
                feat, sbin, left, right, mleft, value, thr = finish_tree(tree, learning_rate * leaf, data)
                cats = tree_category_sets(tree, data)
                col = raw[:, k].copy()
                if rows is all_rows:   # every row sits in a leaf range: no walk
                    nodes, starts, stops = tree.leaf_ranges()
                    add_leaf_values(tree.order, starts, stops, value[nodes], col)
                elif cats is None:     # rows left out of the subsample walk the tree
                    predict_binned(data.binned, feat, sbin, left, right, mleft, value, col, data.missing_bin)
                else:
                    goes = np.zeros((feat.shape[0], data.n_slots), np.uint8)
                    for m, s in tree.sets.items():
                        goes[m] = s
                    predict_binned_sets(data.binned, feat, sbin, left, right, mleft, goes,
                                        goes.any(axis=1), value, col, data.missing_bin)
                raw[:, k] = col
                if raw_v is not None:
                    colv = raw_v[:, k].copy()
                    if cats is None:
                        predict_raw(Xv, feat, thr, left, right, mleft, value, colv)
                    else:
                        predict_raw_sets(Xv, feat, thr, left, right, mleft,  # type: ignore[call-arg]  # *-args
                                         *set_arrays(cats[0]), cats[1], value, colv)
                    raw_v[:, k] = colv
                for f, gain in tree.split_gain:
                    importances[f] += gain
                tdict = dict(feature=feat, threshold=thr, left=left, right=right,
                             missing_left=mleft, value=value.astype(np.float32), k=k)
                if cats is not None:
                    tdict["category_sets"], tdict["other_left"] = cats
                round_trees.append(tdict)
            for f in used_in_tree:
                state.pay(f)
            result.rounds.append(round_trees)
            if raw_v is not None:
                vl = loss.value(tv, raw_v)
                result.validation_loss.append(vl)
                if vl < best - 1e-12:
                    best, best_it, since = vl, it + 1, 0
                else:
                    since += 1
                    if n_iter_no_change is not None and since >= n_iter_no_change:
                        break
    finally:
        bar.close()
    result.best_rounds = best_it if raw_v is not None and best_it else len(result.rounds)
    result.paid = state.paid_f.copy()
    return result


def rounds_to_bank(rounds, n_outputs, *, tree_cost=0.0, base_score=None, name="ensemble") -> ir.TreesNode:
    """The trees of ``rounds`` as one IR trees bank, in round order; each
    tree's leaf values sit in its output column ``k``.  ``tree_cost`` is the
    evaluation cost e_t of every tree (a number or one per tree)."""
    trees = []
    for rnd in rounds:
        for t in rnd:
            v = np.zeros((t["value"].shape[0], n_outputs), np.float32)
            v[:, t["k"]] = t["value"]
            tree = dict(feature=t["feature"], threshold=t["threshold"], left=t["left"],
                        right=t["right"], missing_left=t["missing_left"], value=v)
            if "category_sets" in t:   # set splits (rule "integer": the booster's codes)
                tree["category_sets"], tree["other_left"] = t["category_sets"], t["other_left"]
            trees.append(tree)
    if not trees:  # a model with no trees is its base score
        trees = [dict(feature=[-1], threshold=[0.0], left=[-1], right=[-1],
                      value=np.zeros((1, n_outputs), np.float32))]
    return ir.concat_trees(trees, tree_cost=np.broadcast_to(np.asarray(tree_cost, np.float64),
                                                             (len(trees),)).copy(),
                           base_score=base_score, name=name)


@njit(cache=True, parallel=True)
def _bank_outputs(X, roots, feature, threshold, left, right, missing_left, value, out):
    for i in prange(X.shape[0]):
        for t in range(roots.shape[0]):
            m = roots[t]
            while feature[m] >= 0:
                x = X[i, feature[m]]
                m = _child(m, x, x != x, threshold[m], left, right, missing_left)
            out[i, t] = value[m]


@njit(cache=True, parallel=True)
def _bank_outputs_sets(X, roots, feature, threshold, left, right, missing_left, cat_rule, cat_begin, cat_words,
                       cat_bits, other_left, value, out):
    for i in prange(X.shape[0]):
        for t in range(roots.shape[0]):
            m = roots[t]
            while feature[m] >= 0:
                x = X[i, feature[m]]
                if cat_words[m] > 0 and x == x:
                    goes = category_left(x, cat_rule, cat_words[m], cat_begin[m], other_left[m], cat_bits)
                    m = left[m] if goes else right[m]
                else:
                    m = _child(m, x, x != x, threshold[m], left, right, missing_left)
            out[i, t] = value[m]


def tree_outputs(bank: ir.TreesNode, X, output=0) -> np.ndarray:
    """H [N, T] float32: the leaf value of every tree of ``bank`` (output
    column ``output``) for every row of float32 X, exactly the values the IR
    runtimes add (the dictionary h(x) of thesis §1.4.1)."""
    X = np.ascontiguousarray(X, np.float32)
    out = np.zeros((X.shape[0], bank.n_trees), np.float32)
    cs = getattr(bank, "categories", None)
    if cs is not None:
        _bank_outputs_sets(X, bank.roots.astype(np.int64), bank.feature.astype(np.int64), bank.threshold,
                           bank.left.astype(np.int64), bank.right.astype(np.int64), bank.missing_left,
                           cs.rule_code, cs.begin.astype(np.int64), cs.words.astype(np.int64), cs.bits, cs.other_left,
                           np.ascontiguousarray(bank.value[:, output]), out)
        return out
    _bank_outputs(X, bank.roots.astype(np.int64), bank.feature.astype(np.int64),
                  bank.threshold, bank.left.astype(np.int64), bank.right.astype(np.int64),
                  bank.missing_left, np.ascontiguousarray(bank.value[:, output]), out)
    return out
