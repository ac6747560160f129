"""Compile a Model to an ONNX graph that returns what the reference returns.

``compile_onnx(model)`` builds, from standard ai.onnx / ai.onnx.ml operators
only (no custom ops, no per-row Loop or If):

* **values**: one SUM-aggregated tree-ensemble operator gives, per row, the
  leaf each tree reaches (several trees' leaf numbers packed into one
  integer-valued target, exact in float32); leaf values are then exact
  table lookups.  Every sum whose order matters (trees in bank order,
  linear terms and support vectors in IR order, kernel features) is a
  ``CumSum``, which onnxruntime evaluates left to right: the bits match the
  reference.  exp is the portable expf built from the same basic operations
  (onnx_graph.expf), so it matches too; there is no ulp bound to document.
* **lazy cost**: the static schedule (onnx_schedule.py) numbers every place
  a unit can be touched.  Per row, bit sets of the features on each reached
  leaf's path (a table lookup by leaf), searched for each feature's first
  tree (a segment tree of BitwiseOr), give each unit the slot of its first
  touch in an active region, TopK sorts the paid units into acquisition
  order, and CumSum adds their costs in float64 in that order, as the
  reference does.  The budget
  halts the row at the first unit whose running sum exceeds it; checkpoints
  completed before that give ``stage`` and the returned scores.
* **routing** (cascade exits, classifier-tree branches) is a per-row boolean
  mask over regions, computed from the scorers' margins.
* **category-set splits** (issue 34) need no ``BRANCH_MEMBER`` (ai.onnx.ml
  opset 5 only): each distinct categorical decision becomes a 0/1 column
  appended to X in standard ops, which its nodes split at 0.5
  (onnx_trees.CategoryColumns), so every target runs them; a model without
  them gets no such op.

Outputs: ``label`` and ``probabilities`` (classifiers; probabilities only
with a logistic / softmax transform) or ``variable`` (regression), then
``scores`` [N, K] float32 (float64 when the output is a float64 tree bank:
docs/numerics.md), ``cost`` [N] float64, ``stage`` [N] int64 and
``features_used`` [N, F] bool.  Inputs: ``X`` [N, F] float32 and, unless
``budget=False``, ``budget`` [N] float64 (+inf for no limit).

The graph is built by concern: ``onnx_values`` (leaves and node values),
``onnx_cost`` (first touches, payments, the halt), ``onnx_routing``
(route masks, stage, the scores of the stage reached) and ``onnx_outputs``,
beside the graph builder (``onnx_graph``), the static schedule
(``onnx_schedule``) and the tree operators (``onnx_trees``).  Every op's
name says what it is for: ``leaf/…`` (which leaf each tree reaches),
``value/…`` (node values), ``touch/…`` (first touches), ``pay/…`` (cost and
budget), ``route/…`` (routing and stage), ``out/…`` (outputs).

``mode="fast"`` emits one summed tree ensemble instead (tree-bank outputs
only): predictions and scores, no cost, stage or features_used, and scores
summed in onnxruntime's order, which may differ from the reference's in the
last bits (docs/numerics.md).
"""
from __future__ import annotations

import numpy as np
import onnx
from onnx import TensorProto, helper

from ..ir.codes import KIND_CTREE, KIND_KERNEL
from ..ir.lowering import lower
from . import package_version
from .onnx_cost import Costs, exact_in_any_order  # noqa: F401 (part of this module's API)
from .onnx_graph import Graph, match_constant_ranks
from .onnx_outputs import finish, metadata
from .onnx_routing import Routing
from .onnx_trees import DEFAULT_TARGET, ML_OPSET, TARGETS
from .onnx_values import Setup, Values, fast_scores

DEFAULT_OPSET = 18      # ScatterElements(reduction="min") needs 18
# batch_hint at or below this picks the latency schedule: measured on 100 and
# 1000 LightGBM trees, it beats the batch schedule up to about this many rows
SMALL_BATCH = 16
F32, F64 = TensorProto.FLOAT, TensorProto.DOUBLE
# ops that must not see an empty batch (TopK dies with SIGFPE on onnxruntime
# 1.16-1.30) or that take subsets of rows, which the padding row keeps non-empty
NEEDS_PADDING = {"TopK", "NonZero", "GatherND", "ScatterND", "Scan"}
ROW_SAFE = ("pay/guarded/", "route/stage/GatherND")    # node names whose empty batches are safe


def compile_onnx(model, *, target=DEFAULT_TARGET, opset=None, mode="exact", budget=True, features_used=True,
                 tree_op=None, tables=None, batch_hint=None) -> onnx.ModelProto:
    """The ONNX graph of ``model``.

    ``target`` says what must run it (docs/onnx.md has the table measured on
    every onnxruntime minor): "onnxruntime-1.16" (the default: ai.onnx.ml
    ``TreeEnsembleRegressor``, every onnxruntime from 1.16),
    "onnxruntime-1.24" (``TreeEnsemble``, ai.onnx.ml opset 5) or
    "no-ml-ops" (no ai.onnx.ml operator: trees walked in standard ops, for
    runtimes and execution providers without tree operators).  ``tree_op``
    overrides the target's ("TreeEnsembleRegressor", "TreeEnsemble" or
    "gather"); ``opset`` is the ai.onnx opset (>= 18); ``tables`` is
    ``ir.lowering.lower(model)`` when the caller has it already.

    ``batch_hint``: the rows per call the graph will mostly see.  Up to
    ``SMALL_BATCH`` (single rows, small batches) the exact graph takes the
    latency schedule, fewer ops and no subsets of rows, whose per-row
    intermediates grow as [rows, trees, features] (docs/onnx.md); None
    (the default) or more: the batch schedule."""
    opset = DEFAULT_OPSET if opset is None else int(opset)
    if opset < DEFAULT_OPSET:
        raise ValueError(f"opset {opset}: the exact graph needs ai.onnx opset >= {DEFAULT_OPSET}")
    if mode not in ("exact", "fast"):
        raise ValueError(f"mode must be 'exact' or 'fast', got {mode!r}")
    if target not in TARGETS:
        raise ValueError(f"target must be one of {list(TARGETS)}, got {target!r}")
    tree_op = tree_op or TARGETS[target]
    if tree_op not in ML_OPSET:
        raise ValueError(f"tree_op must be one of {list(ML_OPSET)}, got {tree_op!r}")
    if batch_hint is not None and (isinstance(batch_hint, bool) or not isinstance(batch_hint, (int, np.integer))
                                   or batch_hint < 1):
        raise ValueError(f"batch_hint must be a positive number of rows or None, got {batch_hint!r}")
    if model.scores_queries:    # a query-level exit: one query per run (onnx_query.py)
        from .onnx_query import compile_query_onnx
        return compile_query_onnx(model, target=target, opset=opset, mode=mode, budget=budget,
                                  features_used=features_used, tree_op=tree_op, tables=tables, batch_hint=batch_hint)
    small = batch_hint is not None and batch_hint <= SMALL_BATCH
    tab = lower(model) if tables is None else tables

    def build(pad):
        g = Graph()
        inputs = [helper.make_tensor_value_info("X", F32, ["N", model.n_features])]
        with_b = budget and mode == "exact"
        X, b = padded_inputs(g, model.n_features, with_b) if pad else ("X", "budget" if with_b else None)
        if mode == "fast":
            outputs = finish(g, model, fast_scores(tab, g, tree_op, X), None)
        else:
            setup = Setup(model, tab, g, tree_op, X, b, small=small)
            scores, cost, stage, used = exact_graph(setup, with_budget=budget, with_used=features_used)
            # the latency schedule drops the NaN work that scores which
            # cannot be NaN do not need (the batch graph keeps its bytes)
            bound = Values(setup).score_bound() if small else np.inf
            outputs = finish(g, model, scores, (cost, stage, used), padded=pad, bound=bound)
            if budget:
                inputs.append(helper.make_tensor_value_info("budget", F64, ["N"]))
        return g, inputs, outputs
    # the latency schedule pads no row when none of its ops needs one (no
    # subset of rows, no sort): 8 ops fewer (the two Concats, the Slices)
    g, inputs, outputs = build(pad=not (small and mode == "exact"))
    # ops under pay/guarded keep their own batch non-empty (Costs._pay_sorted);
    # the stage's GatherND (Routing.stage) reads a rank-1 table by [N, 1]
    # indices, which an empty batch leaves empty (1.16.3 and 1.32.0, tested)
    if {n.op_type for n in g.nodes if not n.name.startswith(ROW_SAFE)} & NEEDS_PADDING:
        g, inputs, outputs = build(pad=True)
    graph = helper.make_graph(g.nodes, "skinflint", inputs, outputs, g.inits)
    opsets = [helper.make_opsetid("", int(opset))]
    ml_opset = ML_OPSET[tree_op]
    if ml_opset is not None:
        opsets.append(helper.make_opsetid("ai.onnx.ml", ml_opset))
    proto = helper.make_model(graph, opset_imports=opsets, producer_name="skinflint",
                              producer_version=package_version())
    proto.ir_version = 9   # onnxruntime 1.16 reads IR versions up to 9
    props = metadata(model, mode, tree_op, package_version())
    if small and mode == "exact":
        props["skinflint.schedule"] = "latency"
    helper.set_model_props(proto, props)
    match_constant_ranks(proto)
    onnx.checker.check_model(proto, full_check=True)
    return proto


def padded_inputs(g: Graph, F, with_budget):
    """("X" and "budget" with one more row, the padding row): every op of
    the graph then sees at least one row, by construction.  onnxruntime
    1.16-1.30 dies with SIGFPE on an empty batch in TopK (the sort of an
    empty subset of rows, e.g. when no row's budget binds), and older
    runtimes mishandle other ops over empty axes; no op here ever gets one.
    The padding row has budget -1, so it is always over its budget and the
    subset of rows sorted for their halt (onnx_cost.Costs._pay) is never
    empty either.  ``finish`` drops the row from every output."""
    with g.scope("in", root=True):
        X = g.op("Concat", "X", g.const(np.zeros((1, F), np.float32)), axis=0)
        if not with_budget:
            return X, None
        return X, g.op("Concat", "budget", g.const(np.array([-1.0])), axis=0)


def exact_graph(setup: Setup, with_budget, with_used=True):
    """(scores [N, K] f32, cost [N] f64, stage [N] i64, features_used [N, F]
    bool, or None when not ``with_used``) of the exact graph: routing masks,
    first touches, payments and the halt, the stage completed before it,
    and that stage's value.  When costs add exactly in any order and the
    trees have one route, only the rows over their budget are searched for
    their first touches (``Costs.halt_lazy``); without a budget, none.  When,
    besides, the features alone are paid, at one cost, the tree operator votes
    every row's first touches instead (``Costs.halt_voted``)."""
    g = setup.g
    values = Values(setup)
    routing = Routing(setup, values)
    mask = None if setup.t.top_kind <= KIND_KERNEL else routing.active_regions()
    routes = routing.route_ends(mask) if setup.t.top_kind == KIND_CTREE else None
    costs = Costs(setup, values, routes)
    voted = not setup.small and (first := costs.first_slot_votes(mask, with_budget)) is not None
    if voted:
        # the batch schedule's one MIN-aggregated operator votes each row's
        # first touches beside each tree's leaf number (a float32 bank's
        # leaf value, ``can_vote_values``): no search (Costs.halt_voted)
        values.first_slots = first
        values.vote_values = values.can_vote_values()
    elif costs.lazy(mask, with_budget) and setup.op == "TreeEnsembleRegressor":
        # the one tree operator also counts, per feature, the reached leaves
        # that split on it, where that costs less than gathering bit sets,
        # and gives a float32 bank's leaf values; then leaf numbers are
        # needed only for the rows over their budget (their own operator)
        values.touch_votes = costs.touch_votes()
        values.vote_values = values.can_vote_values() and not setup.small
        values.need_starts = not (values.vote_values and values.touch_votes is not None)
    elif (first := costs.first_slot_votes(mask, with_budget)) is not None:
        values.first_slots = first
        values.int_votes = costs.sorted_halt()
    if voted:
        h, cost, used = costs.halt_voted(with_used)
        h_col = costs.h_col
    elif costs.lazy(mask, with_budget):
        h, cost, used = costs.halt_lazy(with_budget, with_used)
        h_col = None        # one route: the stage is a lookup by h alone
    else:
        feat_slots = costs.feature_slots(mask)
        h, cost = costs.halt(feat_slots, mask, with_budget)
        h_col = costs.h_col
        if h_col is None:
            with g.scope("pay/halt", root=True):
                h_col = g.unsqueeze(h, [1])
        used = costs.used if with_used else None
        if with_used and used is None:
            with g.scope("touch/features_used", root=True):
                used = g.op("Less", feat_slots, h_col)
    shift = costs.h_shift       # 'never' where the halting slots are shifted (``_pay_sorted``, ``halt_voted``)
    pick = costs.h_index if costs.h_index is not None else h_col
    stage = routing.stage(h, h_col, mask, shift, h_index=costs.h_index)
    return routing.scores(stage, pick if mask is None else None, shift), cost, stage, used
