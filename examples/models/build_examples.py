"""Regenerate the hand-built example models in this folder.

    python examples/models/build_examples.py

Each model is small enough to evaluate by hand; tests/runtimes/
test_examples.py does exactly that, path by path.  Numbers are dyadic
fractions so that hand arithmetic is exact in float32.
"""
import os

from skinflint import ir
from skinflint.ir import feature_input as F
from skinflint.ir import node_input as N
from skinflint.ir import tree_input as T

HERE = os.path.dirname(os.path.abspath(__file__))


def trees():
    """Regression, 2 trees with evaluation costs and a base score."""
    feats = ir.features_from_costs([1.0, 2.0, 4.0], names=["a", "b", "c"])
    bank = ir.concat_trees([
        # tree 0: a <= 0.5 ? (b <= 0 ? 1 : 2) : 3      NaN in b goes right
        dict(feature=[0, 1, -1, -1, -1], threshold=[0.5, 0, 0, 0, 0], left=[1, 3, -1, -1, -1],
             right=[2, 4, -1, -1, -1], value=[0, 0, 3, 1, 2], missing_left=[1, 0, 1, 1, 1]),
        # tree 1: c <= 1 ? 10 : 20
        dict(feature=[2, -1, -1], threshold=[1, 0, 0], left=[1, -1, -1], right=[2, -1, -1],
             value=[0, 10, 20]),
    ], tree_cost=[0.5, 0.25], base_score=[0.125], name="bank")
    return ir.model(feats, [bank], 0, metadata={"example": "trees"})


def groups():
    """Binary; two word features share a 'tokens' descriptor (cost 20)."""
    feats = ir.features_from_costs([1.0, 1.0, 3.0], names=["w1", "w2", "caps"], groups=[0, 0, None])
    g = ir.groups_from_costs([20.0], names=["tokens"])
    bank = ir.trees_from_arrays(
        # w1 <= 0.5 ? (caps <= 2 ? -1 : 1) : (w2 <= 0.5 ? 0.5 : 2)
        feature=[0, 2, 1, -1, -1, -1, -1], threshold=[0.5, 2, 0.5, 0, 0, 0, 0],
        left=[1, 3, 5, -1, -1, -1, -1], right=[2, 4, 6, -1, -1, -1, -1],
        value=[0, 0, 0, -1, 1, 0.5, 2])
    return ir.model(feats, [bank], 0, groups=g, task=ir.binary_task(["ham", "spam"]))


def linear():
    """0.5 + 2 a + 0 b - 1 c: b has zero weight and is never touched."""
    feats = ir.features_from_costs([1.0, 2.0, 4.0], names=["a", "b", "c"])
    lin = ir.linear([F(0), F(1), F(2)], [2.0, 0.0, -1.0], bias=0.5)
    return ir.model(feats, [lin], 0)


def linear_over_trees():
    """The boosting trick: 0.5 * tree0 + 0.25 * tree1 of a bank."""
    bank = trees().nodes[0]
    lin = ir.linear([T(0, 0), T(0, 1)], [0.5, 0.25], bias=-1.0)
    return ir.model(trees().features, [bank, lin], 1)


def kernel_rbf():
    """Binary rbf SVM over (u, v): SVs at (0, 0) and (8, 8), gamma 2."""
    feats = ir.features_from_costs([2.0, 3.0, 100.0], names=["u", "v", "unused"])
    k = ir.kernel([[0.0, 0.0], [8.0, 8.0]], [1.0, -1.0], [0, 1], kernel="rbf", gamma=2.0,
                  bias=0.25, sv_cost=[1.0, 1.0])
    return ir.model(feats, [k], 0, task=ir.binary_task())


def kernel_poly():
    """(1 * <x, sv> + 1)^2 with SVs (1, 2) and (-1, 0), alpha (0.5, 2)."""
    feats = ir.features_from_costs([1.0, 1.0], names=["u", "v"])
    k = ir.kernel([[1.0, 2.0], [-1.0, 0.0]], [0.5, 2.0], [0, 1], kernel="poly", gamma=1.0,
                  coef0=1.0, degree=2, bias=-4.0)
    return ir.model(feats, [k], 0)


def cascade():
    """Binary cascade: a cheap tree stage exits confident negatives
    (margin <= -1); the last stage adds an expensive linear term to it."""
    feats = ir.features_from_costs([1.0, 10.0, 50.0], names=["cheap", "mid", "costly"])
    stage0 = ir.trees_from_arrays(feature=[0, -1, -1], threshold=[0, 0, 0], left=[1, -1, -1],
                                  right=[2, -1, -1], value=[0, -2, 0.5], name="cheap stage")
    stage1 = ir.linear([N(0), F(1), F(2)], [1.0, 1.0, 0.5], bias=0.0, name="costly stage")
    casc = ir.cascade([(0, "le", -1.0), (1, "none", 0.0)])
    return ir.model(feats, [stage0, stage1, casc], 2, task=ir.binary_task())


def anytime():
    """Three checkpoints over one bank: tree 0; trees 0 + 1; trees 0 + 1 + 2."""
    feats = ir.features_from_costs([1.0, 2.0, 4.0], names=["a", "b", "c"])
    def stump(j, lo, hi):
        return dict(feature=[j, -1, -1], threshold=[0, 0, 0], left=[1, -1, -1], right=[2, -1, -1], value=[0, lo, hi])
    bank = ir.concat_trees([stump(0, -1, 1), stump(1, -2, 2), stump(2, -4, 4)], name="bank")
    c1 = ir.linear([T(0, 0)], [1.0])
    c2 = ir.linear([T(0, 0), T(0, 1)], [1.0, 1.0])
    c3 = ir.linear([T(0, 0), T(0, 1), T(0, 2)], [1.0, 1.0, 1.0])
    return ir.model(feats, [bank, c1, c2, c3, ir.anytime([1, 2, 3])], 4)


def classifier_tree():
    """CSTC on the quadrant problem: route on sign_x, then sign_z, then read
    the one exact feature of the quadrant.  Every path costs 1 + 1 + 10."""
    names = ["sign_x", "sign_z", "z_++", "z_+-", "z_-+", "z_--"]
    feats = ir.features_from_costs([1, 1, 10, 10, 10, 10], names=names)
    nodes = [ir.linear([F(0)], [1.0]), ir.linear([F(1)], [1.0])]
    nodes += [ir.linear([F(j)], [1.0]) for j in (2, 3, 4, 5)]
    ct = ir.classifier_tree([
        dict(scorer=0, threshold=0.0, left=1, right=2),   # x <= 0 -> left
        dict(scorer=1, threshold=0.0, left=3, right=4),   # x < 0: z <= 0 -> left
        dict(scorer=1, threshold=0.0, left=5, right=6),   # x > 0
        dict(scorer=5), dict(scorer=4),                    # (-,-), (-,+)
        dict(scorer=3), dict(scorer=2),                    # (+,-), (+,+)
    ])
    return ir.model(feats, nodes + [ct], 6)


def multiclass():
    """Three classes, one tree of width 3, softmax."""
    feats = ir.features_from_costs([1.0], names=["x"])
    bank = ir.trees_from_arrays(feature=[0, -1, -1], threshold=[0, 0, 0], left=[1, -1, -1],
                                right=[2, -1, -1],
                                value=[[0, 0, 0], [2, 0, -1], [-1, 0.5, 3]])
    return ir.model(feats, [bank], 0, task=ir.multiclass_task(["cat", "dog", "emu"]))


EXAMPLES = {f.__name__: f for f in (trees, groups, linear, linear_over_trees, kernel_rbf,
                                     kernel_poly, cascade, anytime, classifier_tree, multiclass)}

if __name__ == "__main__":
    for name, build in EXAMPLES.items():
        path = os.path.join(HERE, f"{name}.json")
        with open(path, "w") as fh:
            fh.write(ir.to_json(build(), indent=1) + "\n")
        print("wrote", os.path.relpath(path))
