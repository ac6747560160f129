"""Tree dictionaries for the cascades (the boosting trick: Chen et al. 2012
§3, thesis §1.4.1 and §3.6), grown with the shared booster.

* ``tiered_bank``: the *cost-tiered* bank.  Boost on the features whose
  cost is at most the first tier's cap, continue from those scores on the
  next tier's features, ..., then on all features (thesis §2.1.4's
  "stage-wise regression feature subsets", made cumulative).  Without it a
  GBRT dictionary on data with few features has no cheap tree at all and a
  cascade saves nothing (docs/cascades.md, "bank").
* one tier with every feature is plain GBRT; with ``cost_tradeoff > 0`` it
  is a Greedy Miser bank.

Trees are fitted with the squared loss to labels in {-1, +1}, as both
papers' banks are (Chen §4: rt-rank CART on the regression target; thesis
§3.7.2: GBRT with the squared loss).
"""
from __future__ import annotations

import numpy as np

from ... import ir
from .booster import BinnedData, boost, rounds_to_bank
from .grower import CategoryOptions
from .losses import make_loss


def effective_costs(costs) -> np.ndarray:
    """A feature's cost when it is bought alone: its own cost plus its
    group's (``costs`` a FeatureCosts)."""
    c = np.asarray(costs.costs, np.float64).copy()
    g = np.asarray(costs.groups)
    inside = g >= 0
    c[inside] += np.asarray(costs.group_costs, np.float64)[g[inside]]
    return c


def auto_tiers(costs) -> list:
    """Default tier caps: the largest cost levels whose features together
    cost at most 10% and 40% of all features (at least the cheapest level),
    then everything.  Returns the caps below the top level (ascending, may be
    empty: then the bank is plain GBRT).  On the cheap-rejects set (costs
    1, 20 x 4, 100) this gives [1]; on Spambase's descriptor costs the
    character and capital-run features."""
    c = effective_costs(costs)
    levels = np.unique(c)
    if levels.size < 2:
        return []
    cum = np.array([c[c <= v].sum() for v in levels]) / c.sum()
    caps: list = []
    for frac in (0.10, 0.40):
        ok = levels[(cum <= frac) & (levels < levels[-1])]
        cap = ok[-1] if ok.size else levels[0]
        if not caps or cap > caps[-1]:
            caps.append(float(cap))
    return caps


def tier_sizes(n_estimators, n_tiers) -> list:
    """Trees per tier: 1/3 and 2/3 for two tiers, otherwise 60% in the last
    tier and the rest shared equally (the digest's 20/20/60)."""
    if n_tiers == 1:
        return [n_estimators]
    last = int(round(n_estimators * (2 / 3 if n_tiers == 2 else 0.6)))
    first = [(n_estimators - last) // (n_tiers - 1)] * (n_tiers - 1)
    first[0] += n_estimators - last - sum(first)
    return [max(1, s) for s in first] + [max(1, last)]


def tiered_bank(X, y_pm, costs, *, tiers=None, n_estimators=300, cost_tradeoff=0.0, max_depth=4,
                learning_rate=0.1, min_samples_leaf=20, max_bins=255, tree_eval_cost=0.0,
                random_state=None, categories: CategoryOptions | None = None) -> ir.TreesNode:
    """A cost-tiered tree bank.

    Parameters
    ----------
    X : float32 [n, F]; y_pm : labels in {-1, +1}; costs : FeatureCosts.
    tiers : list of float or None
        Cost caps of the tiers before the last (which has every feature);
        None: ``auto_tiers``; ``[]``: one tier (plain GBRT / Greedy Miser).
    n_estimators : int, default 300
        Trees in all, split by ``tier_sizes``.
    cost_tradeoff : float, default 0
        Greedy Miser's lambda inside each tier (0: plain GBRT).
    max_depth, learning_rate, min_samples_leaf, max_bins : as GreedyMiserClassifier.
    tree_eval_cost : float, default 0
        e_t of every tree.
    random_state : int or None
        Seeds the threshold sample.
    categories : CategoryOptions, optional
        Category-set splits on ``categories.is_cat`` (GreedyMiserClassifier's
        ``categorical_features``); None: numeric splits only.

    Returns
    -------
    ir.TreesNode with base score 0 (the cascade stages carry the biases).
    """
    caps = auto_tiers(costs) if tiers is None else sorted(float(t) for t in tiers)
    eff = effective_costs(costs)
    masks = [eff <= cap for cap in caps if (eff <= cap).any()] + [np.ones(eff.shape[0], bool)]
    rng = np.random.default_rng(random_state)
    data = BinnedData.from_X(X, max_bins, seed=int(rng.integers(2**31)),
                             categorical=None if categories is None else categories.is_cat)
    loss = make_loss("squared")
    y = np.asarray(y_pm, np.float64)
    raw = np.tile(loss.initial_scores(y, np.ones(y.shape[0])), (y.shape[0], 1))
    rounds = []
    for mask, size in zip(masks, tier_sizes(n_estimators, len(masks))):
        res = boost(data, loss, y, size, costs=costs, cost_tradeoff=cost_tradeoff, init_scores=raw,
                    allowed_features=mask, learning_rate=learning_rate, max_depth=max_depth,
                    min_samples_leaf=min_samples_leaf, rng=rng, categories=categories)
        rounds += res.rounds
        raw = res.raw
    return rounds_to_bank(rounds, 1, tree_cost=float(tree_eval_cost), name="cascade dictionary")


def bank_features(bank, n_features):
    """F [n_features, T] of thesis §3.6: F[a, t] iff tree t splits on a."""
    F = np.zeros((n_features, bank.n_trees), bool)
    inner = bank.feature >= 0
    F[bank.feature[inner], bank.tree_ranges()[inner]] = True
    return F


def subset_bank(bank: ir.TreesNode, keep) -> ir.TreesNode:
    """The trees ``keep`` (ascending) of ``bank`` as a new bank, in that
    order.  Each tree's nodes must be contiguous, children inside its range
    (as ``ir.concat_trees`` builds them)."""
    keep = np.asarray(keep, np.int64)
    ends = np.r_[bank.roots[1:], bank.feature.shape[0]]
    cs = getattr(bank, "categories", None)
    trees: list[dict] = []
    for t in keep:
        lo, hi = int(bank.roots[t]), int(ends[t])
        lt, rt = bank.left[lo:hi], bank.right[lo:hi]
        inner = bank.feature[lo:hi] >= 0
        if np.any(inner & ((lt < lo) | (lt >= hi) | (rt < lo) | (rt >= hi))):
            raise ValueError("subset_bank: a tree's nodes are not contiguous; pass a bank built "
                             "by ir.concat_trees")
        trees.append(dict(feature=bank.feature[lo:hi], threshold=bank.threshold[lo:hi],
                          left=np.where(lt >= 0, lt - lo, -1), right=np.where(rt >= 0, rt - lo, -1),
                          missing_left=bank.missing_left[lo:hi], value=bank.value[lo:hi]))
        if cs is not None:   # the kept trees' category sets, words copied as they are
            trees[-1]["category_sets"] = [cs.bits[cs.begin[m]:cs.begin[m] + cs.words[m]] if cs.words[m] > 0
                                          else None for m in range(lo, hi)]
            trees[-1]["other_left"] = cs.other_left[lo:hi]
    if not trees:
        trees = [dict(feature=np.array([-1]), threshold=np.array([0.0]), left=np.array([-1]),
                      right=np.array([-1]), value=np.zeros((1, bank.n_outputs), np.float32))]
        cost = np.zeros(1)
    else:
        cost = bank.tree_cost[keep]
    return ir.concat_trees(trees, tree_cost=cost, base_score=np.zeros(bank.n_outputs), name=bank.name,
                           **({} if cs is None else {"category_rule": cs.rule}))
