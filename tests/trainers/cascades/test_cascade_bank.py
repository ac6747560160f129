"""The cascades' tree dictionaries (trainers/boosting/tree_bank.py)."""
import numpy as np

from skinflint.datasets import make_cheap_rejects
from skinflint.ir.feature_costs import FeatureCosts
from skinflint.trainers.boosting.booster import tree_outputs
from skinflint.trainers.boosting.tree_bank import auto_tiers, bank_features, subset_bank, tier_sizes, tiered_bank


def test_auto_tiers_and_sizes():
    # cheap-rejects costs: the cost-1 feature is 0.6% of the total, the four
    # cost-20 ones reach 45% (> 40%), so only {a} is a tier below "all"
    assert auto_tiers(FeatureCosts.from_arrays([1, 100, 20, 20, 20, 20])) == [1.0]
    # a group's cost counts with its features (2 x (1 + 4) = 10 of 90, 11%);
    # the cheapest level is a tier even above 10%
    fc = FeatureCosts.from_arrays([1, 1, 10, 10, 10, 10, 10, 10, 10, 10], groups=[0, 0] + [-1] * 8,
                                  group_costs=[4])
    assert auto_tiers(fc) == [5.0]
    assert auto_tiers(FeatureCosts.uniform(5)) == []
    assert tier_sizes(150, 2) == [50, 100]
    assert tier_sizes(300, 3) == [60, 60, 180]
    assert sum(tier_sizes(301, 4)) == 301


def test_tiers_use_only_their_features_and_subset_keeps_outputs():
    ds = make_cheap_rejects(2000, seed=5)
    y = 2.0 * ds.y - 1.0
    fc = FeatureCosts.from_arrays(ds.feature_costs)
    bank = tiered_bank(ds.X, y, fc, n_estimators=30, max_depth=3, tree_eval_cost=1.0, random_state=0)
    assert bank.n_trees == 30 and np.all(bank.tree_cost == 1.0)
    F = bank_features(bank, 6)
    assert not F[1:, :10].any()          # the first tier (10 trees) reads only feature a
    assert F[1:, 10:].any()              # the last tier may read everything
    keep = np.array([0, 3, 17, 29])
    sub = subset_bank(bank, keep)
    np.testing.assert_array_equal(tree_outputs(sub, ds.X), tree_outputs(bank, ds.X)[:, keep])
    np.testing.assert_array_equal(sub.tree_cost, bank.tree_cost[keep])
