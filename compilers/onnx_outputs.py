"""The ONNX graph's outputs and metadata (``out/…``): canonical NaNs, the
ONNX-ML prediction outputs (``label`` and ``probabilities``, or
``variable``), then ``scores``, ``cost``, ``stage`` and ``features_used``;
and the metadata props that carry feature names, costs and the task."""
from __future__ import annotations

import json

import numpy as np
from onnx import TensorProto, helper

from .onnx_graph import Graph, canonical_nan, first_argmax, logistic, softmax

F32, F64, I64, BOOL = TensorProto.FLOAT, TensorProto.DOUBLE, TensorProto.INT64, TensorProto.BOOL


def finish(g: Graph, model, scores, extra):
    """Canonical NaNs, the ONNX-ML prediction outputs, then scores and cost,
    each without the last row (the padding row of compile_onnx).
    ``extra`` is (cost, stage, features_used or None), or None (fast mode)."""
    with g.scope("out", root=True):
        return _outputs(g, model, scores, extra)


def _outputs(g: Graph, model, scores, extra):
    task = model.task
    K = task.n_outputs
    # a float64 output bank: float64 scores; labels read them as they are,
    # probabilities the float32 transform of them rounded to float32
    wide = model.output_is_float64
    SC = F64 if wide else F32
    scores = canonical_nan(g, scores, wide)
    s32 = g.cast(scores, F32) if wide else scores
    outs = []

    def out(src, name, elem, shape):
        g.slice(src, 0, -1, 0, out=name)     # without the padding row (compile_onnx.padded_inputs)
        outs.append(helper.make_tensor_value_info(name, elem, shape))

    if task.kind == "regression":
        out(scores, "variable", SC, ["N", K])
    else:
        classes = list(task.classes)
        is_int = all(isinstance(c, (int, np.integer)) and not isinstance(c, bool) for c in classes)
        table = g.const(np.array(classes, np.int64 if is_int else str))
        if task.kind == "binary":
            s0 = g.squeeze(g.gather(scores, [0], 1), [1])
            idx = g.cast(g.op("Greater", s0, g.const((np.float64 if wide else np.float32)(0))), I64)
            proba = None
            if task.transform == "logistic":
                with g.scope("proba"):
                    p = canonical_nan(g, logistic(g, g.gather(s32, [0], 1)))
                    proba = canonical_nan(g, g.concat([g.op("Sub", g.const(np.float32(1)), p), p], 1))
        else:
            idx, best = first_argmax(g, scores, K)
            if task.transform == "softmax":
                with g.scope("proba"):
                    if wide:
                        best = first_argmax(g, s32, K)[1]
                    proba = canonical_nan(g, softmax(g, s32, best))
            else:
                proba = None
        out(g.op("Gather", table, idx), "label", I64 if is_int else TensorProto.STRING, ["N"])
        if proba is not None:
            out(proba, "probabilities", F32, ["N", task.n_proba])
    out(scores, "scores", SC, ["N", K])
    if extra is not None:
        cost, stage, used = extra
        out(cost, "cost", F64, ["N"])
        out(stage, "stage", I64, ["N"])
        if used is not None:
            out(used, "features_used", BOOL, ["N", model.n_features])
    return outs


def metadata(model, mode, tree_op, version):
    """The skinflint.* metadata props of a compiled graph."""
    feats = [{"name": f.name, "cost": f.cost, "group": None if f.group is None else
              model.groups[f.group].name} for f in model.features]
    return {"skinflint.version": version, "skinflint.model_hash": model.hash(),
            "skinflint.mode": mode, "skinflint.tree_op": tree_op,
            "skinflint.features": json.dumps(feats),
            "skinflint.groups": json.dumps([{"name": g.name, "cost": g.cost} for g in model.groups]),
            "skinflint.task": json.dumps({"kind": model.task.kind, "classes": list(model.task.classes),
                                          "transform": model.task.transform})}
