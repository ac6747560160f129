"""SoftTree.scores keeps each node's margins until its weights change, and
skips zero weights: the margins must be exactly the full product's, before
and after a weight moves (or CSTC models would change)."""
import numpy as np

from skinflint.ir import FeatureCosts
from skinflint.trainers import linalg
from skinflint.trainers.trees.soft_tree import SoftTree
from skinflint.trainers.trees.tree_ir import CostItems, Standardizer


def _full(tree, k):
    return tree.bias[k] + linalg.matvec(tree.Phi, tree.beta[k])


def test_scores_are_the_full_products_bits_and_follow_every_weight_change():
    rng = np.random.default_rng(0)
    n, F = 203, 12                      # n not a multiple of 4: matvec's remainder rows too
    X = rng.normal(size=(n, F))
    y = X[:, 0] - 2 * X[:, 3] + 0.1 * rng.normal(size=n)
    spec = FeatureCosts.from_arrays(rng.uniform(1, 5, F).tolist())
    std = Standardizer.fit(X, y)
    tree = SoftTree(std.columns(X), std.target(y), CostItems.from_features(spec), 2, lam=0.01)
    tree.initialise()
    for k in range(tree.K):
        assert np.array_equal(tree.scores(k), _full(tree, k))     # exact: same bits, no tolerance
    k = 0
    tree.beta[k] = 0.0
    tree.beta[k, [2, 7]] = (0.5, -1.25)          # sparse: the zero columns are skipped
    tree.beta[k, 5] = -0.0                       # a negative zero weight changes nothing either
    assert np.array_equal(tree.scores(k), _full(tree, k))
    before = tree.scores(k).copy()
    tree.beta[k, 7] = 3.0                        # a moved weight is seen, not the kept margins
    assert not np.array_equal(tree.scores(k), before)
    assert np.array_equal(tree.scores(k), _full(tree, k))
    tree.bias[k] += 1.0                          # and a moved bias
    assert np.array_equal(tree.scores(k), _full(tree, k))
    tree.beta[k] = rng.normal(size=F)            # dense: the full product
    assert np.array_equal(tree.scores(k), _full(tree, k))
    assert not tree.scores(k).flags.writeable    # kept margins cannot be changed in place by a caller
