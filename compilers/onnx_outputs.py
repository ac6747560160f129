"""The ONNX graph's outputs and metadata (``out/…``): canonical NaNs, the
ONNX-ML prediction outputs (``label`` and ``probabilities``, or
``variable``), then ``scores``, ``cost``, ``stage`` and ``features_used``;
and the metadata props that carry feature names, costs and the task."""
from __future__ import annotations

import json

import numpy as np
from onnx import TensorProto, helper

from .onnx_graph import Graph, canonical_nan, canonical_nan_value, first_argmax, logistic, logistic_plain, softmax

F32, F64, I64, BOOL = TensorProto.FLOAT, TensorProto.DOUBLE, TensorProto.INT64, TensorProto.BOOL


def finish(g: Graph, model, scores, extra, padded=True, bound=np.inf):
    """Canonical NaNs, the ONNX-ML prediction outputs, then scores and cost,
    each without the last row (the padding row of compile_onnx; as they
    are when not ``padded``).  ``extra`` is (cost, stage, features_used
    or None), or None (fast mode).  ``bound``: a bound on |score|
    (``Values.score_bound``), finite when no score can be NaN: then no
    NaN is made canonical, and the logistic skips its range clamps where
    the bound allows (``logistic``)."""
    with g.scope("out", root=True):
        return _outputs(g, model, scores, extra, padded, bound)


def _outputs(g: Graph, model, scores, extra, padded=True, bound=np.inf):
    task = model.task
    K = task.n_outputs
    # a float64 output bank: float64 scores; labels read them as they are,
    # probabilities the float32 transform of them rounded to float32
    wide = model.output_is_float64
    SC = F64 if wide else F32
    nan = None
    if not np.isfinite(bound):
        nan = g.op("IsNaN", scores)
        scores = g.where(nan, g.const(canonical_nan_value(wide)), scores)     # canonical_nan, keeping the mask
    s32 = g.cast(scores, F32) if wide else scores
    outs = []

    def out(src, name, elem, shape):
        if padded:
            g.slice(src, 0, -1, 0, out=name)     # without the padding row (compile_onnx.padded_inputs)
        else:
            g.expose(src, name)
        outs.append(helper.make_tensor_value_info(name, elem, shape))

    if task.kind == "regression":
        out(scores, "variable", SC, ["N", K])
    else:
        classes = list(task.classes)
        is_int = all(isinstance(c, (int, np.integer)) and not isinstance(c, bool) for c in classes)
        if task.kind == "binary":
            # a binary task's scores are one column: [N, 1] is column 0
            lean = K == 1 and np.isfinite(bound)
            zero = (np.float64 if wide else np.float32)(0)
            if lean:
                # no NaN score (the latency graph): s > 0 is the first
                # ArgMax of [0, s] (ties give index 0, as s = 0 and s = -0
                # give false), one op fewer than Squeeze, Greater, Cast;
                # [0, s] as [0 s, s] = [+-0, s] (a Mul costs less than a
                # Pad) where no score is infinite (0 inf is NaN)
                if bound < float(np.finfo(zero.dtype).max) / 2:
                    both = g.op("Mul", scores, g.const(np.array([[0, 1]], zero.dtype)))
                else:
                    both = g.op("Pad", scores, g.const(np.array([0, 1, 0, 0], np.int64)), g.const(zero))
                idx = g.op("ArgMax", both, axis=1, keepdims=0)
            else:
                s0 = g.squeeze(scores if K == 1 else g.gather(scores, [0], 1), [1])
                idx = g.cast(g.op("Greater", s0, g.const(zero)), I64)
            proba = None
            if task.transform == "logistic":
                with g.scope("proba"):
                    # logistic gives 1 for a NaN score; the scores' NaN mask
                    # writes the canonical NaN there, in both columns (a
                    # probability is NaN exactly where its score is)
                    if lean and logistic_plain(bound):
                        # [1, 0] - [p, -p] (-p is 1 / (1 + e) with numerator -1,
                        # the same rounding negated; 0 - -p is p): no Concat
                        pm = logistic(g, s32, bound, numerator=np.array([[1, -1]], np.float32))
                        proba = g.op("Sub", g.const(np.array([[1, 0]], np.float32)), pm)
                    else:
                        p = logistic(g, s32 if K == 1 else g.gather(s32, [0], 1), bound)
                        proba = g.concat([g.op("Sub", g.const(np.float32(1)), p), p], 1)
                    if nan is not None:
                        proba = g.where(nan if K == 1 else g.gather(nan, [0], 1), g.const(canonical_nan_value()),
                                        proba)
        else:
            idx, best = first_argmax(g, scores, K)
            if task.transform == "softmax":
                with g.scope("proba"):
                    if wide:
                        best = first_argmax(g, s32, K)[1]
                    proba = canonical_nan(g, softmax(g, s32, best))
            else:
                proba = None
        # classes 0, 1, ..., K - 1 are their own indices: no lookup
        label = idx if is_int and [int(c) for c in classes] == list(range(len(classes))) else \
            g.op("Gather", g.const(np.array(classes, np.int64 if is_int else str)), idx)
        out(label, "label", I64 if is_int else TensorProto.STRING, ["N"])
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
