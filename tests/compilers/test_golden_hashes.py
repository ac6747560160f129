"""Compiled artifacts pinned byte for byte (issue 14): refactoring the
compilers must not change what they emit.

* ONNX: a canonical form of each graph is hashed: every tensor that is not
  a graph input or output is renamed by its first appearance (initializers,
  then node inputs and outputs in node order) and node names are dropped, so
  renaming ops for readability leaves the hash alone while any change of an
  op, its order, an attribute, a constant's bytes, an output or the metadata
  changes it.  The form is built from the proto's fields, not its
  serialization, so a protobuf upgrade cannot move it.
* C: the exact text of every generated file.

The models are the examples of examples/models, one trained Greedy Miser
model and three random IR models (ir.random_model, seeds 3, 17 and 40),
stored beside this test in golden/ so that later trainer or generator changes
cannot move them.  A pin may change only
in a commit that changes the emitted artifact on purpose and says why; the
parity tests show the new artifact still matches the reference.
"""
import hashlib
import os

import pytest
from onnx import numpy_helper

from skinflint import ir
from skinflint.compilers.c import render
from skinflint.compilers.onnx import compile_onnx
from tests.conftest import EXAMPLES

GOLDEN = os.path.join(os.path.dirname(__file__), "golden")


def _models():
    out = {n[:-5]: ir.load(os.path.join(EXAMPLES, n)) for n in sorted(os.listdir(EXAMPLES))
           if n.endswith(".json")}
    for n in sorted(os.listdir(GOLDEN)):
        if n.endswith(".json"):
            out[n[:-5]] = ir.load(os.path.join(GOLDEN, n))
    return out


MODELS = _models()


def canonical_onnx(proto) -> str:
    """sha256 of the graph with internal tensor names replaced by their
    order of first appearance and node names dropped."""
    g = proto.graph
    fixed = {v.name for v in list(g.input) + list(g.output)}
    names = {}

    def canon(name):
        if name == "" or name in fixed:
            return name
        if name not in names:
            names[name] = f"t{len(names)}"
        return names[name]

    h = hashlib.sha256()

    def put(*parts):
        for p in parts:
            h.update(p if isinstance(p, bytes) else repr(p).encode())
            h.update(b"\0")
    put("opsets", sorted((o.domain, o.version) for o in proto.opset_import), proto.ir_version,
        proto.producer_name, proto.producer_version)
    put("meta", sorted((p.key, p.value) for p in proto.metadata_props))
    for v in list(g.input) + list(g.output):
        put("io", v.SerializeToString(deterministic=True))
    for t in g.initializer:
        a = numpy_helper.to_array(t)
        put("init", canon(t.name), a.dtype.str, a.shape,
            a.tobytes() if a.dtype.kind not in "OSU" else repr(a.tolist()))
    for n in g.node:
        attrs = [a.SerializeToString(deterministic=True) for a in sorted(n.attribute, key=lambda a: a.name)]
        put("node", n.op_type, n.domain, [canon(i) for i in n.input], [canon(o) for o in n.output], *attrs)
    return h.hexdigest()[:16]


def c_hashes(model) -> dict:
    return {name: hashlib.sha256(text.encode()).hexdigest()[:16]
            for name, text in sorted(render(model, "model").items())}


def _onnx_variants(model):
    out = {"exact": compile_onnx(model), "regressor_op": compile_onnx(model, tree_op="TreeEnsembleRegressor")
           if any(n.kind == "trees" for n in model.nodes) else None,
           "no_budget": compile_onnx(model, budget=False, features_used=False)}
    if model.nodes[model.output].kind == "trees":
        out["fast"] = compile_onnx(model, mode="fast")
    return {k: canonical_onnx(v) for k, v in out.items() if v is not None}


# pinned at 425cf90, before the issue-14 refactor
ONNX_PINS = {'anytime': {'exact': '0d261530f3051a28',
             'no_budget': '368aabd74e7bd8da',
             'regressor_op': '8ca9cc29d7a4465a'},
 'cascade': {'exact': 'c0d077ba85ab6ce2',
             'no_budget': 'fc62a09262be49e7',
             'regressor_op': 'a4408ed77a75b0aa'},
 'classifier_tree': {'exact': 'ad5d1c101cc787eb', 'no_budget': '897fe868e461b8a9'},
 'greedy_miser': {'exact': '5ec3511bc46efe30',
                  'fast': '689804b125e90464',
                  'no_budget': '7cd1eed31cdaf1e6',
                  'regressor_op': '6def3ac8115800f7'},
 'groups': {'exact': '0fa896cae77f951d',
            'fast': '79248185bb07e494',
            'no_budget': '067ed6d797f989e4',
            'regressor_op': '4f77291c0ace687e'},
 'kernel_poly': {'exact': 'f770be23cbe7dbca', 'no_budget': '2cd706aba00ee7ff'},
 'kernel_rbf': {'exact': '6e270b18966a98a5', 'no_budget': 'db7dca2ee534edb4'},
 'linear': {'exact': 'c319eff793e6aa20', 'no_budget': '5115619c406e7b18'},
 'linear_over_trees': {'exact': '8265d5c757986db2',
                       'no_budget': 'dbada7a8b58371e9',
                       'regressor_op': 'e08fa98307f111ec'},
 'multiclass': {'exact': '05e924b117df89bc',
                'fast': 'a2e90e27b22145ed',
                'no_budget': '36953664652fe385',
                'regressor_op': '82c98eae92725e6b'},
 'random_17': {'exact': '7413b442077c18a8',
               'fast': '3eb083fb6f18b3ae',
               'no_budget': '7819a3e51c5e8543',
               'regressor_op': '858384e805238c62'},
 'random_3': {'exact': '1f4e53d5b99eade8',
              'fast': '9c78c019399f83e9',
              'no_budget': '7f50fd3f563f2449',
              'regressor_op': '9ba67be09622aadf'},
 'random_40': {'exact': '1710299bece33e6d',
               'no_budget': 'e9a69c849f4eb8fd',
               'regressor_op': 'b7c788cadb059472'},
 'trees': {'exact': '167b24913589caa3',
           'fast': '281e53f86aae5d11',
           'no_budget': '1544d452a9ba4f0a',
           'regressor_op': '1c18b5f88a3472b9'}}

C_PINS = {'anytime': {'Makefile': '1c978fa820e96786',
             'main.c': 'a4b5085a930dadfc',
             'model.c': 'f9dee2f285761c7e',
             'model.h': 'ba89b830507f9a8e'},
 'cascade': {'Makefile': '1c978fa820e96786',
             'main.c': '1fc6b7e9af1ce326',
             'model.c': 'e800aa583d0d56ed',
             'model.h': '41da603490f5bb6e'},
 'classifier_tree': {'Makefile': '1c978fa820e96786',
                     'main.c': '8495f4ce202b97e6',
                     'model.c': 'b739bdcdfbf73ef8',
                     'model.h': '224f141038b3f99f'},
 'greedy_miser': {'Makefile': '1c978fa820e96786',
                  'main.c': 'c1f296cdbc4562d5',
                  'model.c': 'd3d9a65dd2fe87b3',
                  'model.h': 'c5cf113af726ba75'},
 'groups': {'Makefile': '1c978fa820e96786',
            'main.c': '1fc6b7e9af1ce326',
            'model.c': 'bda7aadb025b7c97',
            'model.h': '87d585c9dc237340'},
 'kernel_poly': {'Makefile': '1c978fa820e96786',
                 'main.c': 'c0f47c5190689fc3',
                 'model.c': '37640764a2982743',
                 'model.h': '27ebd0bbb5f59a8d'},
 'kernel_rbf': {'Makefile': '1c978fa820e96786',
                'main.c': '1fc6b7e9af1ce326',
                'model.c': '5a7598d37658f292',
                'model.h': '53ed7a6cfdfd8409'},
 'linear': {'Makefile': '1c978fa820e96786',
            'main.c': 'a4b5085a930dadfc',
            'model.c': 'd06e57294321e3ac',
            'model.h': 'b388ce4e0d79b381'},
 'linear_over_trees': {'Makefile': '1c978fa820e96786',
                       'main.c': 'a4b5085a930dadfc',
                       'model.c': 'b9071c0a305726c7',
                       'model.h': '7f5f1139798471cc'},
 'multiclass': {'Makefile': '1c978fa820e96786',
                'main.c': 'cc316f918c50f1bc',
                'model.c': 'b776db96e568c9a7',
                'model.h': 'a2fbb8499557d39e'},
 'random_17': {'Makefile': '1c978fa820e96786',
               'main.c': '87b02b504d7ce93f',
               'model.c': 'a87f9a23cd2d7bbb',
               'model.h': 'da4468bc86dbf059'},
 'random_3': {'Makefile': '1c978fa820e96786',
              'main.c': '87b02b504d7ce93f',
              'model.c': '462767b8ce15fe81',
              'model.h': '384220039f259bd1'},
 'random_40': {'Makefile': '1c978fa820e96786',
               'main.c': '309d818bf3a4f27b',
               'model.c': 'e7eb0613cd09c39a',
               'model.h': 'f64ca90e70deabe5'},
 'trees': {'Makefile': '1c978fa820e96786',
           'main.c': 'a4b5085a930dadfc',
           'model.c': '57e3d583c5f63403',
           'model.h': '0bb2879bc3c3470a'}}


@pytest.mark.parametrize("name", sorted(MODELS))
def test_onnx_graphs_are_pinned(name):
    assert _onnx_variants(MODELS[name]) == ONNX_PINS[name]


@pytest.mark.parametrize("name", sorted(MODELS))
def test_generated_c_is_pinned(name):
    assert c_hashes(MODELS[name]) == C_PINS[name]


def test_canonical_form_ignores_names_but_not_ops():
    import onnx
    proto = compile_onnx(MODELS["trees"])
    renamed = onnx.ModelProto()
    renamed.CopyFrom(proto)
    internal = {n for node in renamed.graph.node for n in node.output} - {o.name for o in renamed.graph.output}
    new = {n: f"purpose/{i}" for i, n in enumerate(sorted(internal))}
    for node in renamed.graph.node:
        node.name = "x/" + node.op_type
        node.input[:] = [new.get(i, i) for i in node.input]
        node.output[:] = [new.get(o, o) for o in node.output]
    assert canonical_onnx(renamed) == canonical_onnx(proto)
    renamed.graph.node[3].op_type = "Sub" if renamed.graph.node[3].op_type != "Sub" else "Add"
    assert canonical_onnx(renamed) != canonical_onnx(proto)


if __name__ == "__main__":   # prints the pins (only for a deliberate change)
    import pprint
    pprint.pprint({n: _onnx_variants(m) for n, m in MODELS.items()}, width=110)
    pprint.pprint({n: c_hashes(m) for n, m in MODELS.items()}, width=110)
