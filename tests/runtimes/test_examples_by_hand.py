"""Reference predictions and costs of the example models against values
worked out by hand here, path by path (see examples/models/build_examples.py
for the models)."""
import math

import numpy as np

from skinflint.runtimes.reference import predict
from tests.conftest import load_example, up

NAN = np.nan


def run(name, X, budget=None):
    return predict(load_example(name), np.array(X, np.float32), budget)


def test_trees_paths_costs_and_missing():
    p = run("trees", [[0, -1, 0], [1, 5, 2], [NAN, NAN, NAN], [0.5, 0, 1], [up(0.5), 0, up(1)]])
    # r0: a=0 left, b=-1 left -> 1; c=0 -> 10; base 0.125
    # r1: a=1 right -> 3; c=2 -> 20
    # r2: NaN a goes left (missing_left), NaN b goes right (missing_left=0) -> 2; NaN c left -> 10
    # r3: exactly on thresholds goes left; r4: one ulp above goes right
    np.testing.assert_array_equal(p.scores[:, 0], [11.125, 23.125, 12.125, 11.125, 23.125])
    # tree cost 0.5, a 1, b 2, tree cost 0.25, c 4
    np.testing.assert_array_equal(p.cost, [7.75, 5.75, 7.75, 7.75, 5.75])
    np.testing.assert_array_equal(p.features_used, [[1, 1, 1], [1, 0, 1], [1, 1, 1], [1, 1, 1], [1, 0, 1]])
    np.testing.assert_array_equal(p.stage, [1, 1, 1, 1, 1])


def test_trees_budget_stops_before_the_unit_that_does_not_fit():
    # r0: tree 0 (0.5) + a (1) = 1.5 fits; b would make 3.5 -> halt, nothing completed
    # r1 at 5.75: everything fits exactly; at 5.5: c would make 5.75 -> tree 1 not done
    p = run("trees", [[0, -1, 0], [1, 5, 2], [1, 5, 2]], budget=[1.5, 5.75, 5.5])
    np.testing.assert_array_equal(p.scores[:, 0], [0.125, 23.125, 3.125])
    np.testing.assert_array_equal(p.cost, [1.5, 5.75, 1.75])
    np.testing.assert_array_equal(p.stage, [-1, 1, 0])
    np.testing.assert_array_equal(p.features_used, [[1, 0, 0], [1, 0, 1], [1, 0, 0]])


def test_group_cost_is_paid_once():
    p = run("groups", [[0, 0, 5], [1, 1, 0], [0, 9, 1]])
    # r0: w1 (group 20 + 1) then caps 3 -> leaf 1; r1: w1 (21), w2 (1, group paid) -> 2
    # r2: w1 (21), caps 1 <= 2 -> -1
    np.testing.assert_array_equal(p.scores[:, 0], [1, 2, -1])
    np.testing.assert_array_equal(p.cost, [24, 22, 24])
    assert list(p.output) == ["spam", "spam", "ham"]
    expected = 1 / (1 + math.exp(-1.0))
    # 2 float32 ulps: the portable expf and the division each round once
    assert abs(p.proba[0, 1] - expected) <= 2 * np.spacing(np.float32(expected))
    np.testing.assert_array_equal(p.proba.sum(axis=1) > 0.999, True)


def test_group_budget_counts_group_and_feature_together():
    p = run("groups", [[0, 0, 5], [0, 0, 5]], budget=[21, 20.5])
    # w1 with its group costs 21: fits the first budget, not the second
    np.testing.assert_array_equal(p.cost, [21, 0])
    np.testing.assert_array_equal(p.features_used, [[1, 0, 0], [0, 0, 0]])
    np.testing.assert_array_equal(p.stage, [-1, -1])
    assert list(p.output) == ["ham", "ham"]  # margin 0 (no checkpoint) is not > 0


def test_linear_skips_zero_weight_inputs():
    p = run("linear", [[1, 7, 3], [1, NAN, 3]])
    # 0.5 + 2*1 - 1*3; b has weight 0: never touched, its NaN never read
    np.testing.assert_array_equal(p.scores[:, 0], [-0.5, -0.5])
    np.testing.assert_array_equal(p.cost, [5, 5])
    np.testing.assert_array_equal(p.features_used, [[1, 0, 1], [1, 0, 1]])
    p = run("linear", [[1, 7, 3]], budget=3)
    # a (1) fits, c would make 5: inputs 0 and 1 (skipped) complete
    np.testing.assert_array_equal(p.scores[:, 0], [2.5])
    np.testing.assert_array_equal(p.stage, [1])


def test_linear_over_trees():
    p = run("linear_over_trees", [[0, -1, 0], [1, 5, 2]])
    # -1 + 0.5*tree0 + 0.25*tree1: -1 + 0.5 + 2.5 and -1 + 1.5 + 5
    np.testing.assert_array_equal(p.scores[:, 0], [2.0, 5.5])
    np.testing.assert_array_equal(p.cost, [7.75, 5.75])


def test_rbf_kernel():
    p = run("kernel_rbf", [[0, 0, 0], [8, 8, 0], [0.5, 0, 0]])
    # at an SV k = expf(0) = 1 exactly; the other SV is 2*128 away: expf(-256) = 0
    assert p.scores[0, 0] == np.float32(1.25)
    assert p.scores[1, 0] == np.float32(-0.75)
    expected = 0.25 + math.exp(-0.5)
    # 2 ulps: expf's own error (~1 ulp) plus the rounding of the sum
    assert abs(p.scores[2, 0] - expected) <= 2 * np.spacing(np.float32(expected))
    # SV0 (1), u (2), v (3), SV1 (1); the unused feature is never touched
    np.testing.assert_array_equal(p.cost, [7, 7, 7])
    assert list(p.output) == [1, 0, 1]
    p = run("kernel_rbf", [[0, 0, 0]], budget=4)
    # SV0 + u = 3 fits; v would make 6
    np.testing.assert_array_equal(p.cost, [3])
    np.testing.assert_array_equal(p.scores[:, 0], [0.25])
    np.testing.assert_array_equal(p.stage, [-1])


def test_poly_kernel():
    p = run("kernel_poly", [[1, 1], [2, -1]])
    # (1,1): SV0 (3+1)^2 = 16 * 0.5; SV1 (-1+1)^2 = 0  -> -4 + 8
    # (2,-1): SV0 (0+1)^2 * 0.5; SV1 (-2+1)^2 * 2      -> -4 + 0.5 + 2
    np.testing.assert_array_equal(p.scores[:, 0], [4.0, -1.5])
    np.testing.assert_array_equal(p.cost, [2, 2])


def test_cascade_exits_and_budget():
    p = run("cascade", [[-1, 2, 4], [1, 2, 4]])
    # r0: stage 0 gives -2 <= -1: exit after the cheap feature
    # r1: 0.5 continues; stage 1 = 0.5 (node 0, already paid) + 2 + 0.5*4
    np.testing.assert_array_equal(p.scores[:, 0], [-2, 4.5])
    np.testing.assert_array_equal(p.stage, [0, 1])
    np.testing.assert_array_equal(p.cost, [1, 61])
    np.testing.assert_array_equal(p.features_used, [[1, 0, 0], [1, 1, 1]])
    p = run("cascade", [[1, 2, 4]], budget=11)
    # stage 1 halts at 'costly': the output is stage 0's margin
    np.testing.assert_array_equal(p.scores[:, 0], [0.5])
    np.testing.assert_array_equal(p.stage, [0])
    np.testing.assert_array_equal(p.cost, [11])


def test_anytime_checkpoints():
    X = [[1, 1, -1]] * 3
    p = run("anytime", X, budget=[np.inf, 3, 0.5])
    # checkpoints 1, 1+2, 1+2-4; budget 3 pays a and b; 0.5 pays nothing
    np.testing.assert_array_equal(p.scores[:, 0], [-1, 3, 0])
    np.testing.assert_array_equal(p.stage, [2, 1, -1])
    np.testing.assert_array_equal(p.cost, [7, 3, 0])


def test_classifier_tree_routes_and_costs_12():
    X = [[1, -1, 9, 5.5, 7, 8], [-1, 1, 9, 5.5, 7, 8], [-1, -1, 9, 5.5, 7, 8], [1, 1, 9, 5.5, 7, 8]]
    p = run("classifier_tree", X)
    # (+,-) reads z_+- ; (-,+) z_-+ ; (-,-) z_-- ; (+,+) z_++
    np.testing.assert_array_equal(p.scores[:, 0], [5.5, 7, 8, 9])
    np.testing.assert_array_equal(p.stage, [5, 4, 3, 6])
    np.testing.assert_array_equal(p.cost, [12, 12, 12, 12])
    np.testing.assert_array_equal(p.features_used[0], [1, 1, 0, 1, 0, 0])
    p = run("classifier_tree", X[:1], budget=11)
    # root and node 2 done (cost 2); the leaf's feature (10) does not fit:
    # the output is node 2's margin, sign_z = -1
    np.testing.assert_array_equal(p.scores[:, 0], [-1])
    np.testing.assert_array_equal(p.stage, [2])
    np.testing.assert_array_equal(p.cost, [2])


def test_multiclass_softmax_and_labels():
    p = run("multiclass", [[-1], [1], [NAN]])
    assert list(p.output) == ["cat", "emu", "cat"]
    s = np.array([2, 0, -1], np.float64)
    e = np.exp(s - s.max())
    # 4 ulps: each probability is expf (~1 ulp) of a rounded difference,
    # divided by a sum of three rounded terms
    np.testing.assert_allclose(p.proba[0], e / e.sum(), rtol=4 * 2**-23, atol=0)
