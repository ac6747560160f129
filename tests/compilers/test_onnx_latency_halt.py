"""The latency graph's tree operator and sorted halt (issue 30, seventh pass):
first-touch votes that can never be a row's minimum are left out, the bias's
index is voted in front of the leaf starts, the votes are cast to int64 once,
and the halt sorts [features, rows] along axis 0, with a free unit at slot 0
only where the halt needs it.  Every graph is checked against the reference
bit for bit (scores, cost, stage, features used, probabilities, labels) on
adversarial rows, under budgets at, around and far from each row's cost,
negative, zero and +inf, on zero rows and one."""
import numpy as np
import onnx
import pytest

from skinflint import ir
from skinflint.compilers.onnx import compile_onnx
from skinflint.runtimes.onnx import OnnxRuntime
from skinflint.runtimes.reference import predict
from skinflint.verify import adversarial_rows, verify


def _tree(features, values, missing_left=True):
    """A complete depth-2 tree: root on features[0], children on features[1:3]."""
    f = np.array(list(features) + [-1] * 4)
    return dict(feature=f, threshold=np.array([0.0, -0.5, 0.5, 0, 0, 0, 0], np.float32),
                left=np.array([1, 3, 5, -1, -1, -1, -1]), right=np.array([2, 4, 6, -1, -1, -1, -1]),
                value=np.r_[0.0, 0.0, 0.0, values].astype(np.float32),
                missing_left=np.full(7, missing_left))


def _leaf_tree(value):
    """A tree that is a single leaf (no feature touched)."""
    return dict(feature=np.array([-1]), threshold=np.zeros(1, np.float32), left=np.array([-1]),
                right=np.array([-1]), value=np.array([value], np.float32), missing_left=np.array([False]))


def _model(trees, F=4, cost=1.0):
    return ir.model(ir.features_from_costs(np.full(F, cost)), [ir.concat_trees(trees, base_score=0.25)], 0,
                    task=ir.binary_task())


def _votes(proto):
    """(target ids, tree ids, weights) of the graph's one tree operator."""
    (node,) = [n for n in proto.graph.node if n.op_type == "TreeEnsembleRegressor"]
    a = {x.name: onnx.helper.get_attribute_value(x) for x in node.attribute}
    return np.array(a["target_ids"]), np.array(a["target_treeids"]), np.array(a["target_weights"]), a


def _check_exact(m, proto):
    rt = OnnxRuntime(proto)
    rep = verify(m, runtimes=[rt])
    assert rep.ok, rep.table()
    X = adversarial_rows(m)
    full = predict(m, X).cost
    n = len(X)
    for budget in (full, full - 1.0, full - 0.5, np.full(n, -1.0), np.full(n, -0.0), np.zeros(n),
                   np.full(n, np.inf), np.full(n, 1.5)):
        for rows in (slice(None), slice(0, 0), slice(0, 1)):
            got, ref = rt.predict(X[rows], budget=budget[rows]), predict(m, X[rows], budget=budget[rows])
            for field in ("output", "scores", "cost", "stage", "features_used", "proba"):
                np.testing.assert_array_equal(getattr(got, field), getattr(ref, field), err_msg=field)


def test_votes_that_cannot_be_the_minimum_are_left_out():
    """Tree 0 splits on feature 0 at its root: every row touches it at slot 1,
    so the votes for feature 0 of every later tree (which split on it
    deeper) are never a row's minimum and go; feature 3, which only the
    last tree's left branch splits on, keeps its votes (no tree votes for
    it on every leaf).  The same bits as the reference either way."""
    trees = [_tree([0, 1, 2], [-0.5, 0.25, -0.125, 0.5]),
             _tree([1, 0, 0], [0.5, -0.25, 0.125, -0.5]),
             _tree([2, 3, 0], [0.75, -0.75, 0.375, -0.375])]
    m = _model(trees)
    proto = compile_onnx(m, batch_hint=1)
    target, tree, weight, a = _votes(proto)
    T, F = 3, 4
    first_feature = 1 + T        # targets: the bias, T leaf starts, then F first touches
    assert a["aggregate_function"] == b"MIN" and a["n_targets"] == 1 + T + F
    f0 = target == first_feature
    assert set(tree[f0]) == {0}                       # later trees' votes for feature 0 are gone
    assert f0.sum() == 4 and np.unique(weight[f0]).size == 1 and weight[f0][0] < 0   # the root's slot, - never
    f3 = target == first_feature + 3
    assert set(tree[f3]) == {2} and f3.sum() == 2     # tree 2's two leaves under feature 3
    _check_exact(m, proto)


def test_bias_is_voted_in_front_of_the_leaf_starts():
    """The bias's index (the last entry of the values table) is target 0,
    voted once per row by the first tree's leaves: no Pad of the leaf
    starts, and one Split and no Cast between the operator and the
    values' Gather."""
    trees = [_tree([0, 1, 2], [-0.5, 0.25, -0.125, 0.5]), _tree([3, 0, 1], [0.5, -0.25, 0.125, -0.5])]
    m = _model(trees)
    proto = compile_onnx(m, batch_hint=1)
    target, tree, weight, _ = _votes(proto)
    (values,) = [n for n in proto.graph.node if n.name.startswith("leaf/values/Gather")]
    table = onnx.numpy_helper.to_array({i.name: i for i in proto.graph.initializer}[values.input[0]])
    assert set(tree[target == 0]) == {0} and (target == 0).sum() == 4          # tree 0's four leaves
    assert np.all(weight[target == 0] == table.size - 1) and table[-1] == np.float32(0.25)
    names = [n.name for n in proto.graph.node]
    assert not any(n.startswith("leaf/values/Pad") for n in names)
    assert [n.op_type for n in proto.graph.node[:3]] == ["TreeEnsembleRegressor", "Cast", "Split"]
    _check_exact(m, proto)


@pytest.mark.parametrize("cost", [1.0, 0.25, 3.0])
def test_sorted_halt_runs_along_axis_0_without_padding(cost):
    """The halt sorts [features, rows] along axis 0 (safe on zero rows in
    onnxruntime 1.16-1.30, where TopK along axis 1 dies with SIGFPE): no
    padding row or Slice, no Unsqueeze of the budget, no Where; the first
    tree splits at its root, so there is no free unit (no Pad) either."""
    trees = [_tree([0, 1, 2], [-0.5, 0.25, -0.125, 0.5]), _tree([3, 0, 1], [0.5, -0.25, 0.125, -0.5])]
    m = _model(trees, cost=cost)
    proto = compile_onnx(m, batch_hint=1)
    pay = [n for n in proto.graph.node if n.name.startswith("pay/")]
    ops = [n.op_type for n in pay]
    (topk,) = [n for n in pay if n.op_type == "TopK"]
    assert onnx.helper.get_attribute_value(topk.attribute[0]) == 0 and topk.attribute[0].name == "axis"
    assert not {"Pad", "Slice", "Unsqueeze", "Where"} & set(ops) - ({"Where"} if cost != 1.0 else set())
    assert [i.name for i in proto.graph.input] == ["X", "budget"] and not any(
        n.name.startswith("in/") for n in proto.graph.node)
    _check_exact(m, proto)


def test_free_unit_stays_when_the_first_tree_is_a_leaf():
    """A first tree with no split: a row's first touch is in a later tree,
    whose halt completes a checkpoint that slot 0 does not, so the free
    unit at slot 0 stays (one Pad of the sorted slots) and a negative
    budget still halts at slot 0, stage -1, as the reference does."""
    trees = [_leaf_tree(0.5), _tree([0, 1, 2], [-0.5, 0.25, -0.125, 0.5])]
    m = _model(trees)
    proto = compile_onnx(m, batch_hint=1)
    ops = [n.op_type for n in proto.graph.node if n.name.startswith("pay/")]
    assert "Pad" in ops and "TopK" in ops
    X = adversarial_rows(m)
    assert np.all(predict(m, X, budget=np.full(len(X), -1.0)).stage == -1)
    assert np.all(predict(m, X).stage == 1)
    _check_exact(m, proto)


def test_a_linear_output_that_reads_its_trees_out_of_order_compiles_and_is_exact():
    # found in review: with first touches voted by the tree operator there are no leaf starts, and a
    # region whose trees are not in layout order still gathered from them (a TypeError at compile time)
    bank = ir.trees_from_arrays([0, -1, -1, 1, -1, -1], [0.0] * 6, [1, -1, -1, 4, -1, -1], [2, -1, -1, 5, -1, -1],
                                np.array([0, -1.0, 1.0, 0, 0.5, -0.5]), roots=[0, 3])
    m = ir.model(ir.features_from_costs([1.0, 1.0]),
                 [bank, ir.linear([ir.tree_input(0, 1), ir.tree_input(0, 0)], [1.0, 1.0])], 1,
                 task=ir.binary_task())
    proto = compile_onnx(m, batch_hint=1)
    assert any(n.startswith("pay/") for n in (x.name for x in proto.graph.node))   # the budgeted halt is built
    _check_exact(m, proto)
