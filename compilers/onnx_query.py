"""The exact ONNX graph of a model with a query-level exit (a ``query_exit``
over one float32 tree bank: docs/ranking.md, docs/onnx.md): ONE query per
run, ``X`` its documents in position order, and what the reference's
``rank`` gives for it (runtimes/_query_vm.py), bit for bit.

It is the per-row exact graph of the bank (onnx.exact_graph's parts:
``Values``, ``Costs``, ``Routing``) plus the exit rule in between:

1. **Budget alone** (``Costs.halt_lazy`` when the costs add exactly in any
   order, as in the per-row graph: the first-touch search only for the rows
   over their budget; else ``Costs.halt`` over every row): each document's
   halting slot ``h_b`` and the trees it completes within its budget,
   ``done_b``; the bank's running scores ``P`` [T + 1, N]
   (``Values.checkpoint_values``, summed in bank order as the reference).
2. **Checkpoints, unrolled** (``query/cp<j>``): the documents still in
   (``alive``: not dropped, and ``done_b >= after[j]``: their budget let them
   finish the checkpoint's trees) are ranked by ``P[after[j]]`` with one
   ``TopK`` over the query (highest first; equal scores by position: TopK's
   tie rule, the ONNX spec's, which onnxruntime follows), a ``CumSum`` of
   ``alive`` along the sorted order gives each document its rank among the
   documents still in, and the document at rank ``keep[j]`` gives ``kth``.
   Past rank ``keep[j]`` a document is dropped: always for a cutoff; for
   the proximity rule when ``float64(kth) - float64(score) >= gap[j]`` (one
   float64 subtraction of the two float32 scores, as the reference; ``gap``
   is the IR's, computed once by ``ir.proximity_gaps``).  Fewer documents
   in than ``keep[j]``: no rank is past it, nothing is dropped (no ``If``).
3. **Where each document stops**: a document dropped at checkpoint j stops
   at the slot where tree ``after[j]`` starts (``cap``); the halting slot is
   ``min(h_b, cap)``, and everything after is the per-row graph's: the
   trees done, the stage, the score (``P`` at the trees done), the cost (the
   paid units before the slot, in acquisition order), the features used.
   On the lazy path only the dropped documents' first touches are searched
   (``Costs.on_rows``: a subset gathered and scattered back, the padding row
   always in it); the others keep the lazy halt's cost and features.
4. **The order**: documents by trees done (more first), then score, then
   position (two ``TopK``, as the reference's two stable sorts).

Sort keys are float64: a float32 score widened (exact), NaN below -inf and
-inf just above it, so every key compares totally (``TopK``'s comparator on
NaN is undefined) and -0.0 ties 0.0, as in the reference's sort.  The
padding row (onnx.padded_inputs) is never in: it is masked out of every
checkpoint and sorts last in the order, which then drops it.

Outputs: the per-row graph's (``variable`` or ``label``/``probabilities``,
``scores``, ``cost``, ``stage`` as the reference's query stage: the last
checkpoint completed, J for every tree, -1 for none; ``features_used``)
then ``order`` [N] int64 (positions in the query, best first), ``n_trees``
[N] int64 and ``dropped`` [N] bool.
"""
from __future__ import annotations

import json

import numpy as np
import onnx
from onnx import TensorProto, helper

from ..ir.codes import QX_CUTOFF
from ..ir.lowering import lower_query
from ..ir.nodes import QueryExitNode
from .onnx_cost import Costs, exact_in_any_order
from .onnx_graph import Graph, match_constant_ranks, rows_like
from .onnx_outputs import finish
from .onnx_trees import ML_OPSET
from .onnx_values import Setup, Values

F32, F64, I64, I32, BOOL = TensorProto.FLOAT, TensorProto.DOUBLE, TensorProto.INT64, TensorProto.INT32, \
    TensorProto.BOOL
QUERY_OUTPUTS = ("order", "n_trees", "dropped")


def compile_query_onnx(model, *, target, opset, mode, budget, features_used, tree_op, tables, batch_hint):
    """``compile_onnx`` of a model with a query-level exit (module docstring):
    the exact graph only, batch schedule, one query per run."""
    from . import package_version
    from .onnx import padded_inputs
    from .onnx_outputs import metadata
    if mode != "exact":
        raise ValueError(f"mode={mode!r}: a model with a query-level exit compiles to the exact graph only "
                         "(its drops need every document's score at each checkpoint)")
    if batch_hint is not None:
        raise ValueError("batch_hint: a model with a query-level exit scores one query per run (its documents "
                         "are the rows); compile it without batch_hint")
    tabs = query_tables(model, tables)
    g = Graph()
    inputs = [helper.make_tensor_value_info("X", F32, ["N", model.n_features])]
    X, b = padded_inputs(g, model.n_features, budget)
    outputs = query_graph(g, model, tabs, tree_op, X, b, budget, features_used)
    if budget:
        inputs.append(helper.make_tensor_value_info("budget", F64, ["N"]))
    graph = helper.make_graph(g.nodes, "skinflint", inputs, outputs, g.inits)
    opsets = [helper.make_opsetid("", int(opset))]
    if ML_OPSET[tree_op] is not None:
        opsets.append(helper.make_opsetid("ai.onnx.ml", ML_OPSET[tree_op]))
    proto = helper.make_model(graph, opset_imports=opsets, producer_name="skinflint",
                              producer_version=package_version())
    proto.ir_version = 9   # onnxruntime 1.16 reads IR versions up to 9
    props = metadata(model, "exact", tree_op, package_version())
    q = tabs[1]
    props["skinflint.query"] = json.dumps({"after": q.after.tolist(), "keep": q.keep.tolist(),
                                           "rule": q.rule.tolist(), "gap": q.gap.tolist(), "n_trees": int(q.n_trees)})
    helper.set_model_props(proto, props)
    match_constant_ranks(proto)
    onnx.checker.check_model(proto, full_check=True)
    return proto


def query_tables(model, tables=None):
    """(bank tables, QueryTables): ``tables`` as given (``lower_query(model)``) or lowered now."""
    if tables is None:
        return lower_query(model)
    if not isinstance(tables, tuple):
        raise ValueError("tables: a query-level model takes lower_query(model), not lower(model)")
    return tables


def query_graph(g: Graph, model, tables, tree_op, X, budget, with_budget, with_used):
    """The outputs (value infos) of the query graph, emitted into ``g`` over
    the padded inputs ``X`` and ``budget`` (None without a budget input)."""
    tab, q = tables
    _check_checkpoints(q)
    setup = Setup(model, tab, g, tree_op, X, budget if with_budget else None, small=False)
    values = Values(setup)
    costs = Costs(setup, values, None)
    sched, never, T = setup.sched, setup.never, int(q.n_trees)
    cp_end = np.asarray(sched.cp_end, np.int64)
    if cp_end.shape != (T,) or np.any(np.diff(cp_end) < 0):
        raise ValueError(f"query graph: expected one checkpoint per tree of the bank ({T}), got {cp_end.shape[0]}")

    # 1. budget alone: halting slot, trees done, running scores
    lazy = costs.lazy(None, with_budget)
    if lazy:
        # as the per-row graph: rows within their budget need no first-touch
        # search (their union of path features says what they pay); the
        # leaf starts stay decoded for every row, so the dropped rows'
        # search below gathers them instead of running the trees again
        values.touch_votes = costs.touch_votes() if setup.op == "TreeEnsembleRegressor" else None
        h_b, lazy_cost, lazy_used = costs.halt_lazy(with_budget, True)
    else:
        feat_slots = costs.feature_slots(None)
        h_b, _ = costs.halt(feat_slots, None, with_budget)
    vals = values.checkpoint_values()                       # [T + 1, N] (Values.tree_major)
    with g.scope("query/budget", root=True):
        done_at = np.searchsorted(cp_end, np.arange(int(never) + 1), side="right").astype(np.int64)
        done_b = g.op("Gather", g.const(done_at), h_b)                                        # [N]
        real = g.concat([rows_like(g, "X", True, np.bool_), g.const(np.array([False]))], 0)   # not the padding row
        cap = rows_like(g, X, T, np.int64)

    # 2. the checkpoints: every checkpoint's scores sorted at once (the sort
    # does not depend on who is in), split into [1, N] rows; then who is in
    # (``alive``, 0/1 int64 [1, N]), checkpoint by checkpoint
    J = q.after.shape[0]
    with g.scope("query/sort", root=True):
        at = g.gather(vals, q.after.astype(np.int64), 0)                                     # [J, N] f32
        wide = g.cast(at, F64)
        perm = _sort_desc(g, _score_key(g, at, wide), axis=1)                                 # [J, N]
        # inv[j, perm[j, p]] = p: each document's place in checkpoint j's order
        places = g.op("Sub", g.cumsum(g.op("Add", g.op("Mul", perm, g.const(np.int64(0))), g.const(np.int64(1))),
                                      1), g.const(np.int64(1)))
        inv = g.op("ScatterElements", places, perm, places, axis=1)
        finished = g.cast(g.op("GreaterOrEqual", g.unsqueeze(done_b, [0]),
                               g.const(q.after.astype(np.int64)[:, None])), I64)
        perm, inv, wide, finished = (_rows(g, x, J) for x in (perm, inv, wide, finished))
        alive = g.unsqueeze(g.cast(real, I64), [0])                                          # [1, N]
        cap = g.unsqueeze(cap, [0])
    zero = g.const(np.int64(0))
    for j in range(J):
        a, k = int(q.after[j]), g.const(np.int64(q.keep[j]))
        with g.scope(f"query/cp{j}", root=True):
            alive = g.op("Mul", alive, finished[j])
            # per document in: its rank among the documents in, from 1 (0 for one not in)
            upto = g.cumsum(g.op("GatherElements", alive, perm[j], axis=1), 1)
            rank = g.op("Mul", g.op("GatherElements", upto, inv[j], axis=1), alive)
            drop = g.op("Greater", rank, k)
            if q.rule[j] != QX_CUTOFF:
                at_k = g.cast(g.op("Equal", rank, k), I32)
                kth = g.op("GatherElements", wide[j], g.op("ArgMax", at_k, axis=1, keepdims=1), axis=1)    # [1, 1]
                near = g.op("GreaterOrEqual", g.op("Sub", kth, wide[j]), g.const(np.float64(q.gap[j])))
                drop = g.op("And", drop, near)
            cap = g.where(drop, g.const(np.int64(a)), cap)
            alive = g.where(drop, zero, alive)
    with g.scope("query/sort", root=True):
        cap = g.squeeze(cap, [0])

    # 3. where each document stops, and what it has then
    with g.scope("query/stop", root=True):
        done = g.op("Min", done_b, cap)
        start_of = np.r_[np.int64(0), cp_end[:-1], never].astype(np.int64)     # slot where tree t starts; T: never
        h = g.op("Min", h_b, g.op("Gather", g.const(start_of), cap))
        ends = np.r_[q.after.astype(np.int64), T]
        stage_of = (np.searchsorted(ends, np.arange(T + 1), side="right") - 1).astype(np.int64)
        stage = g.op("Gather", g.const(stage_of), done)
        dropped = g.op("Less", cap, g.const(np.int64(T)))
        scores = values.pick_steps(vals, done)                                                   # [N, 1]
    if lazy:
        # only the dropped documents (and the padding row: never an empty
        # subset) stop before their budget's halt: search their first touches
        with g.scope("query/dropped", root=True):
            rows = g.op("Reshape", g.op("NonZero", g.op("Or", dropped, g.op("Not", real))),
                        g.const([-1, 1], np.int64))                                              # [M, 1]
            sub = costs.on_rows(rows)
        with g.scope("query/dropped", root=True):
            slots = sub.feature_slots(None)
            h_sub = g.op("GatherND", h, rows)
        with g.scope("query/cost", root=True):
            cost = g.op("ScatterND", lazy_cost, rows, _cost_before(g, sub, slots, h_sub))
        used = None
        if with_used:
            with g.scope("touch/features_used", root=True):
                used = g.op("ScatterND", lazy_used, rows, g.op("Less", slots, g.unsqueeze(h_sub, [1])))
    else:
        with g.scope("query/cost", root=True):
            cost = _cost_before(g, costs, feat_slots, h)
        used = None
        if with_used:
            with g.scope("touch/features_used", root=True):
                used = g.op("Less", feat_slots, g.unsqueeze(h, [1]))

    # 4. the order: trees done, then score, then position; the padding row last
    with g.scope("query/order", root=True):
        by_score = _sort_desc(g, _score_key(g, g.squeeze(scores, [1])))
        trees_key = g.where(real, g.cast(done, F64), g.const(np.float64(-1)))
        order = g.op("Gather", by_score, _sort_desc(g, g.op("Gather", trees_key, by_score)))
    outputs = finish(g, model, scores, (cost, stage, used), padded=True)
    with g.scope("out", root=True):
        for src, name, elem in ((order, "order", I64), (done, "n_trees", I64), (dropped, "dropped", BOOL)):
            g.slice(src, 0, -1, 0, out=name)        # without the padding row
            outputs.append(helper.make_tensor_value_info(name, elem, ["N"]))
    return outputs


def _check_checkpoints(q):
    """The IR's rules for a query_exit's checkpoints, again here since ``tables`` may come from the
    caller: ``QueryExitNode.check`` (at least one, ``after`` strictly increasing from 1, ``keep`` >= 1,
    one keep, rule and gap each) and ``ir.model``'s bound ``after`` < T.  The graph relies on them: a
    document dropped after the last tree would stop "before tree T", which reads as not dropped."""
    after = np.atleast_1d(np.asarray(q.after, np.int64))
    QueryExitNode(scorer=0, after=after, keep=np.atleast_1d(np.asarray(q.keep, np.int64)),
                  rule=np.atleast_1d(np.asarray(q.rule)), gap=np.atleast_1d(np.asarray(q.gap, np.float64))
                  ).check("query graph tables")
    if after[-1] >= int(q.n_trees):
        raise ValueError(f"query graph tables.checkpoints: after {after.tolist()} must stay below the bank's "
                         f"{int(q.n_trees)} trees (lower_query(model) gives valid tables)")


def _score_key(g: Graph, s, wide=None):
    """float64 sort key of float32 scores ``s`` (``wide``: them as float64
    already): the score itself, -inf just above the lowest float64 and NaN
    at -inf (last, as numpy sorts it)."""
    wide = g.cast(s, F64) if wide is None else wide
    low = g.where(g.op("Equal", wide, g.const(np.float64(-np.inf))), g.const(np.float64(-np.finfo(np.float64).max)),
                  wide)
    return g.where(g.op("IsNaN", s), g.const(np.float64(-np.inf)), low)


def _sort_desc(g: Graph, key, axis=0):
    """int64 positions of ``key`` sorted along ``axis`` (the last), highest
    first, equal keys by position (TopK's tie rule)."""
    n = g.slice(g.op("Shape", key), axis, axis + 1, 0)
    return g.op("TopK", key, n, axis=axis, largest=1, sorted=1, n_out=2)[1]


def _rows(g: Graph, x, J):
    """[J, N] -> J tensors [1, N]."""
    if J == 1:
        return [x]
    return g.op("Split", x, axis=0, num_outputs=J, n_out=J)


def _cost_before(g: Graph, costs: Costs, feat_slots, h):
    """[N] float64: what each document paid before its halting slot ``h``:
    the paid units with a slot below it, added in acquisition order (one
    masked sum when every partial sum is exact in float64, else the sort
    and running sum of ``Costs._pay_in_order``)."""
    parts = costs._unit_slots(feat_slots, None)
    _, unit_costs = costs._paid_units()
    if not parts:
        return rows_like(g, costs.X, 0.0, np.float64)
    slots = g.concat(parts, 1)
    if exact_in_any_order(unit_costs):
        paid = g.cast(g.op("Less", slots, g.unsqueeze(h, [1])), F64)
        return g.op("ReduceSum", g.op("Mul", paid, g.const(unit_costs[None])), g.const([1], np.int64), keepdims=0)
    return costs._pay_in_order(slots, unit_costs, None, h)[1]
