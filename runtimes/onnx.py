"""Run a compiled ONNX graph in onnxruntime with the common ``predict``.

``OnnxRuntime(source, target=..., ...)`` takes an ``onnx.ModelProto``, a
path to a .onnx file, serialized bytes, or a skinflint ``Model`` (compiled
on the spot, exact mode unless ``mode="fast"``; keyword options go to
``compile_onnx``).  ``predict(X, budget=None)`` returns a ``Prediction``; rows go
through in chunks of ``CHUNK_ROWS`` to bound the graph's per-row
intermediates ([rows, trees] and [rows, units]; ``LATENCY_CHUNK_ROWS`` for a
graph compiled for small batches, ``batch_hint``); a model with kernel nodes
takes ``kernel_chunk_rows(model)`` rows at a time instead, since its kernel
sums carry [rows, support vectors] blocks.

A model with a query-level exit compiles to the query graph
(compilers/onnx_query.py), which ranks ONE query per run:
``rank(X, group, budget=None)`` runs it once per query and returns the
reference's ``Ranking`` (docs/ranking.md); its ``predict`` refuses.
"""
from __future__ import annotations

import json
import os

import numpy as np

from ..ir.model import Model
from .prediction import Prediction, Ranking, as_budget, as_features, as_group_sizes

CHUNK_ROWS = 4096
# rows per call for a graph in the latency schedule (compile_onnx's
# batch_hint): its first-touch search holds [rows, trees, features] slots
LATENCY_CHUNK_ROWS = 64
# rows x support vectors per onnxruntime call for kernel models: a full SVM
# over 784 features with 3735 vectors grows by 1084 MB at 4096 rows a call and
# 447 MB at 1024 (issue 18, point 6); 2**18 / 3735 gives 70 rows a call
KERNEL_CELLS = 1 << 18


def kernel_chunk_rows(model: Model) -> int:
    """Rows per onnxruntime call: ``CHUNK_ROWS``, or fewer when the model has
    kernel nodes (``KERNEL_CELLS`` / the most support vectors in one node,
    at least 16)."""
    S = max((len(n.support_vectors) for n in model.nodes if n.kind == "kernel"), default=0)
    return CHUNK_ROWS if not S else max(16, min(CHUNK_ROWS, KERNEL_CELLS // S))


class OnnxRuntime:
    """A compiled graph in an onnxruntime session, built once; ``threads``
    sets onnxruntime's intra-op threads, ``tables`` is
    ``ir.lowering.lower(model)`` when the caller has it already."""

    def __init__(self, source, *, threads=None, tables=None, **compile_options):
        import onnx
        import onnxruntime as ort

        self.chunk_rows = CHUNK_ROWS
        if isinstance(source, Model):
            from ..compilers.onnx import compile_onnx
            self.chunk_rows = kernel_chunk_rows(source)
            source = compile_onnx(source, tables=tables, **compile_options)
        elif compile_options or tables is not None:
            raise ValueError(f"compile options {sorted(compile_options) or ['tables']} need a Model, "
                             f"not an already compiled graph")
        if isinstance(source, (str, os.PathLike)):
            source = onnx.load(os.fspath(source))
        elif isinstance(source, (bytes, bytearray)):
            source = onnx.load_from_string(bytes(source))
        self.proto = source
        meta = {p.key: p.value for p in source.metadata_props}
        if meta.get("skinflint.schedule") == "latency":
            self.chunk_rows = min(self.chunk_rows, LATENCY_CHUNK_ROWS)
        if "skinflint.task" not in meta:
            raise ValueError("not a skinflint ONNX graph (no skinflint.task metadata)")
        self.task = json.loads(meta["skinflint.task"])
        self.mode = meta.get("skinflint.mode", "exact")
        self.tree_op = meta.get("skinflint.tree_op")
        self.name = "onnx" + (f" ({self.mode})" if self.mode != "exact" else "") + \
            (f" ({self.tree_op})" if {"tree_op", "target"} & set(compile_options) else "")
        self.feature_names = [f["name"] for f in json.loads(meta["skinflint.features"])]
        opts = ort.SessionOptions()
        if threads:
            opts.intra_op_num_threads = int(threads)
        self.session = ort.InferenceSession(source.SerializeToString(), opts,
                                            providers=["CPUExecutionProvider"])
        self.inputs = {i.name for i in self.session.get_inputs()}
        self.outputs = [o.name for o in self.session.get_outputs()]
        self.ranks_queries = "skinflint.query" in meta

    @property
    def n_features(self) -> int:
        return len(self.feature_names)

    def run(self, X, budget=None) -> dict:
        """The graph's raw outputs by name, rows in chunks."""
        X = as_features(X, self.n_features, self.feature_names)
        N = X.shape[0]
        if budget is not None and "budget" not in self.inputs:
            raise ValueError("this ONNX graph was compiled without a budget input "
                             "(compile_onnx(..., budget=True))")
        b = as_budget(budget, N)
        parts: dict[str, list] = {name: [] for name in self.outputs}
        step = self.chunk_rows
        for r0 in range(0, max(N, 1), step):
            feed = {"X": X[r0:r0 + step]}
            if "budget" in self.inputs:
                feed["budget"] = b[r0:r0 + step]
            for name, v in zip(self.outputs, self.session.run(self.outputs, feed), strict=True):
                parts[name].append(v)
        return {k: np.concatenate(v) for k, v in parts.items()}

    def predict(self, X, budget=None) -> Prediction:
        """cost, stage and features_used are None for a fast-mode graph."""
        if self.ranks_queries:
            raise ValueError("predict: this model has a query-level exit and ranks whole queries "
                             "(docs/ranking.md); call rank(X, group) instead of scoring rows independently")
        return prediction_from_outputs(self.task, self.run(X, budget))

    def rank(self, X, group, budget=None) -> Ranking:
        """Score whole queries, one graph run per query (``group``: the query
        sizes, each query's rows contiguous; ``budget`` per document): the
        reference runtime's ``rank``, bit for bit (docs/ranking.md)."""
        if not self.ranks_queries:
            raise ValueError("rank: this graph has no query-level exit; its rows are scored independently: "
                             "use predict(X)")
        X = as_features(X, self.n_features, self.feature_names)
        N = X.shape[0]
        offsets = as_group_sizes(group, N)
        if budget is not None and "budget" not in self.inputs:
            raise ValueError("this ONNX graph was compiled without a budget input "
                             "(compile_onnx(..., budget=True))")
        b = as_budget(budget, N)
        parts: dict[str, list] = {name: [] for name in self.outputs}
        for q in range(offsets.shape[0] - 1):
            a, e = int(offsets[q]), int(offsets[q + 1])
            feed = {"X": X[a:e]}
            if "budget" in self.inputs:
                feed["budget"] = b[a:e]
            for name, v in zip(self.outputs, self.session.run(self.outputs, feed), strict=True):
                parts[name].append(v + a if name == "order" else v)
        if not N:    # no query: the graph's outputs for zero rows, in their shapes
            feed = {"X": X}
            if "budget" in self.inputs:
                feed["budget"] = b
            parts = {name: [v] for name, v in zip(self.outputs, self.session.run(self.outputs, feed), strict=True)}
        out = {k: np.concatenate(v) for k, v in parts.items()}
        p = prediction_from_outputs(self.task, out)
        return Ranking(output=p.output, scores=p.scores, proba=p.proba, cost=p.cost, stage=p.stage,
                       features_used=p.features_used, order=out["order"], n_trees=out["n_trees"],
                       dropped=out["dropped"])


def prediction_from_outputs(task: dict, out: dict) -> Prediction:
    """The ``Prediction`` of a skinflint graph's raw outputs by name (its
    ``skinflint.task`` metadata as ``task``): what ``predict`` returns."""
    if task["kind"] == "regression":
        v = out["variable"]
        output = v[:, 0].copy() if v.shape[1] == 1 else v
    else:
        # the reference's label dtype (int64, or a str dtype for named classes)
        output = np.asarray(out["label"]).astype(np.asarray(task["classes"]).dtype)
    # an exact graph always has cost, stage and features_used; a fast graph's Prediction has them None
    return Prediction(output=output, scores=out["scores"], proba=out.get("probabilities"),
                      cost=out.get("cost"), stage=out.get("stage"),  # type: ignore[arg-type]
                      features_used=out.get("features_used"))  # type: ignore[arg-type]
