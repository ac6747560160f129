"""The exact ONNX graph's routing: which control checkpoints a row's route
reaches, and the stage it completes before its halt.

* ``route/…``: cascade exits and classifier-tree branches as per-row
  boolean masks over regions, from the scorers' raw float32 margins (no
  per-row Loop or If); ``route/stage`` is the last checkpoint completed.
"""
from __future__ import annotations

import numpy as np
from onnx import TensorProto

from ..ir.codes import (
    EXIT_ABS_GE,
    EXIT_GAP_GE,
    EXIT_GE,
    EXIT_LE,
    KIND_ANYTIME,
    KIND_CASCADE,
    KIND_CTREE,
    KIND_TREES,
)
from .onnx_graph import rows_like
from .onnx_values import Part, Setup, Values

I64 = TensorProto.INT64


class Routing(Part):
    """Route masks and stages (reads ``Values`` for the margins)."""

    def __init__(self, setup: Setup, values: Values):
        super().__init__(setup)
        self.values = values

    def margin(self, c):
        """[N] float32: the margin control checkpoint c decides on."""
        t = self.t
        v = self.values.value(int(t.ctl_scorer[c]))
        with self.g.scope(f"route/node{c}", root=True):
            return self.g.squeeze(self.g.gather(v, [int(t.ctl_output[c])], 1), [1])

    def gap_exits(self, c, thr):
        """[N] bool: rule ``gap_ge`` at control checkpoint c (docs/ir.md): the
        largest margin of the scorer's vector minus the second largest, one
        float32 ``Sub`` (0 where the two are equal, so two infinities tie), is
        >= thr; never on a row with a NaN margin.  TopK only selects values,
        so the two are the exact margins (the padding row keeps its batch
        non-empty)."""
        g = self.g
        v = self.values.value(int(self.t.ctl_scorer[c]))
        with g.scope(f"route/gap{c}", root=True):
            top, _ = g.op("TopK", v, g.const([2], np.int64), axis=1, largest=1, sorted=1, n_out=2)
            m1 = g.squeeze(g.slice(top, 0, 1, 1), [1])
            m2 = g.squeeze(g.slice(top, 1, 2, 1), [1])
            gap = g.where(g.op("Equal", m1, m2), g.const(np.float32(0)), g.op("Sub", m1, m2))
            has_nan = g.op("ReduceMax", g.cast(g.op("IsNaN", v), TensorProto.INT32), g.const([1], np.int64),
                           keepdims=0)
            return g.op("And", g.op("GreaterOrEqual", gap, g.const(thr)),
                        g.op("Equal", has_nan, g.const(np.int32(0))))

    def active_regions(self):
        """[N, C] bool: rows whose route reaches each control checkpoint."""
        g, t = self.g, self.t
        C = t.ctl_scorer.shape[0]
        with g.scope("route", root=True):
            true = rows_like(g, self.X, True, np.bool_)
        act = [None] * C
        act[0] = true
        if t.top_kind == KIND_CASCADE:
            for i in range(C - 1):
                thr, rule = t.ctl_threshold[i], t.ctl_rule[i]
                if rule == EXIT_GAP_GE:       # reads the whole vector, not one margin
                    ex = self.gap_exits(i, thr)
                    with g.scope(f"route/exit{i}", root=True):
                        act[i + 1] = g.op("And", act[i], g.op("Not", ex))
                    continue
                m = self.margin(i)
                with g.scope(f"route/exit{i}", root=True):
                    if rule == EXIT_LE:
                        ex = g.op("LessOrEqual", m, g.const(thr))
                    elif rule == EXIT_GE:
                        ex = g.op("GreaterOrEqual", m, g.const(thr))
                    elif rule == EXIT_ABS_GE:
                        ex = g.op("Or", g.op("GreaterOrEqual", m, g.const(thr)),
                                  g.op("LessOrEqual", m, g.const(np.float32(-thr))))
                    else:
                        act[i + 1] = act[i]
                        continue
                    act[i + 1] = g.op("And", act[i], g.op("Not", ex))
        elif t.top_kind == KIND_ANYTIME:
            act = [true] * C
        else:
            order = [0]
            for c in order:       # breadth first: parents before children
                if t.ctl_left[c] < 0:
                    continue
                m = self.margin(c)
                with g.scope(f"route/branch{c}", root=True):
                    go_left = g.op("LessOrEqual", m, g.const(t.ctl_threshold[c]))
                    act[t.ctl_left[c]] = g.op("And", act[c], go_left)
                    act[t.ctl_right[c]] = g.op("And", act[c], g.op("Not", go_left))
                order += [int(t.ctl_left[c]), int(t.ctl_right[c])]
            # nodes off every route never run
            with g.scope("route", root=True):
                act = [a if a is not None else rows_like(g, self.X, False, np.bool_) for a in act]
        with g.scope("route", root=True):
            return g.concat([g.unsqueeze(a, [1]) for a in act], 1)

    def route_ends(self, mask):
        """Classifier trees: (routes [P] of region index arrays, [N] int64).
        A row's active regions are one root-to-leaf route; ``routes[p]``
        lists the regions of route p (the tree's p-th reachable leaf), and
        the [N] tensor says which route each row takes."""
        g, t = self.g, self.t
        routes, stack = [], [(0, [0])]
        while stack:
            c, path = stack.pop()
            if t.ctl_left[c] < 0:
                routes.append(np.array(path, np.int64))
                continue
            stack += [(int(t.ctl_right[c]), path + [int(t.ctl_right[c])]),
                      (int(t.ctl_left[c]), path + [int(t.ctl_left[c])])]
        with g.scope("route/end", root=True):
            ends = g.cast(g.gather(mask, [int(r[-1]) for r in routes], 1), TensorProto.INT32)
            return routes, g.op("ArgMax", ends, axis=1, keepdims=0)

    def stage(self, h, h_col, mask, shift=0, h_index=None):
        """[N] int64: the last checkpoint completed before the halting slot
        ``h`` ([N], and ``h_col`` [N, 1]): the furthest along the route.
        ``h`` None (one route): read ``h_index``, [N, 1] int64, instead.
        ``shift``: h holds slot - shift (one route only)."""
        g, t, sched = self.g, self.t, self.sched
        with g.scope("route/stage", root=True):
            if mask is None:
                # one route, checkpoints in slot order: look the count up by slot
                table = g.const(self._by_slot(self._done_by() - 1, shift))
                if h is None:   # only [N, 1] int64 slots: GatherND gives [N], no Squeeze
                    return g.op("GatherND", table, h_index)
                return g.op("Gather", table, h)
            if shift:
                raise ValueError("shifted halting slots need one route")
            done = g.op("And", g.op("GreaterOrEqual", h_col, g.const(sched.cp_end[None])),
                        g.gather(mask, sched.cp_region, 1))
            if t.top_kind == KIND_CTREE:
                key = g.where(done, g.const(sched.cp_order.astype(np.int32)[None]), g.const(np.int32(-1)))
                best = g.op("ArgMax", key, axis=1, keepdims=0)
                any_done = g.op("GreaterOrEqual", g.op("ReduceMax", key, g.const([1], np.int64), keepdims=0),
                                g.const(np.int32(0)))
                return g.where(any_done, best, g.const(np.int64(-1)))
            # checkpoints complete in order: count them
            n_done = g.op("ReduceSum", g.cast(done, I64), g.const([1], np.int64), keepdims=0)
            return g.op("Sub", n_done, g.const(np.int64(1)))

    def _by_slot(self, table, shift):
        """``table`` [slots + 1] read at slot - ``shift`` (<= 0 when shift is
        'never'): Gather takes a negative index from the end, so the
        table rolled by one puts slot s at s - never + never + 1."""
        if not shift:
            return table
        if shift != self.never:
            raise ValueError("halting slots are shifted by 'never' or not at all")
        return np.roll(table, 1)

    def scores(self, stage, h_col=None, shift=0):
        """[N, K] float32: the value of the stage each row completed (the
        prior before any).  ``h_col``: the halting slots [N, 1] of one route
        (minus ``shift``), when a [N, 1] step is what ``pick_steps`` reads (a
        node of ``rows_2d``): the step is then looked up by slot, as
        ``stage`` looks the stage up, plus one (2 ops fewer than Add and
        Unsqueeze)."""
        g, t = self.g, self.t
        vals = self.values.checkpoint_values()
        with g.scope("route/scores", root=True):
            if h_col is not None and t.top_kind == KIND_TREES and t.top in self.values.rows_2d:
                return g.op("GatherElements", vals, g.op("Gather", g.const(self._by_slot(self._done_by(), shift)),
                                                          h_col), axis=1)
            return self.values.pick_steps(vals, g.op("Add", stage, g.const(np.int64(1))))

    def _done_by(self):
        """[slots + 1] int64: per halting slot, how many checkpoints are
        complete (one route, checkpoints in slot order)."""
        return np.searchsorted(np.sort(self.sched.cp_end), np.arange(self.never + 1), side="right")
