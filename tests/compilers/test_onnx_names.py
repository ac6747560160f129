"""Every op of a compiled graph is named for its purpose (issue 14): one
can tell in Netron which ops decode leaves, find first touches, pay costs,
route, or form the outputs."""
import pytest

from skinflint import ir
from skinflint.compilers.onnx import compile_onnx
from tests.conftest import example_paths, load_example

PURPOSES = ("in/", "leaf/", "value/", "touch/", "pay/", "route/", "out/")


@pytest.mark.parametrize("path", example_paths(), ids=lambda p: p.rsplit("/", 1)[-1])
def test_every_op_is_named_for_its_purpose(path):
    proto = compile_onnx(ir.load(path))
    names = [n.name for n in proto.graph.node]
    assert all(n.startswith(PURPOSES) for n in names), [n for n in names if not n.startswith(PURPOSES)]
    assert len(set(names)) == len(names)
    internal = [o for n in proto.graph.node for o in n.output] + [t.name for t in proto.graph.initializer]
    outputs = {o.name for o in proto.graph.output}
    assert all(o.startswith(PURPOSES) for o in internal if o not in outputs)


def _ops(proto, op_type):
    return [n.name for n in proto.graph.node if n.op_type == op_type]


def test_names_follow_what_the_ops_do():
    groups = compile_onnx(load_example("groups"))
    assert all(n.startswith("leaf/ensemble/")
               for n in _ops(groups, "TreeEnsemble") + _ops(groups, "TreeEnsembleRegressor"))
    assert all(n.startswith("touch/groups/") for n in _ops(groups, "ScatterElements"))
    assert all(n.startswith("pay/") for n in _ops(groups, "TopK"))
    assert all(n.startswith("touch/") for n in _ops(groups, "BitwiseOr"))
    cascade = compile_onnx(load_example("cascade"))
    assert any(n.startswith("route/exit0/") for n in _ops(cascade, "LessOrEqual") + _ops(cascade, "GreaterOrEqual"))
    assert all(n.startswith("value/") for n in _ops(cascade, "CumSum") if not n.startswith(("pay/", "out/")))
    ctree = compile_onnx(load_example("classifier_tree"))
    assert any(n.startswith("route/branch0/") for n in _ops(ctree, "LessOrEqual"))
    # every graph output comes straight from an out/ op (the padding row's Slice), no Identity
    made = {o: n.name for n in ctree.graph.node for o in n.output}
    assert all(made[o.name].startswith("out/") for o in ctree.graph.output)
    assert not _ops(ctree, "Identity")
    kernel = compile_onnx(load_example("kernel_rbf"))
    assert any(n.startswith("value/kernel") for n in _ops(kernel, "Floor"))   # the kernel's expf
