"""Multiclass AFR (thesis §2.2.4, paper §5 Scene-15): one binary AFR per
class (one-vs-all), Platt-scaled so that their margins compare, sharing one
paid-feature state.

* The K problems run in lockstep, one lambda schedule, over one
  ``CostState``: within a block the classes take one dimension step each
  in turn (a dimension's first tree, later its refinement), so a feature (or a
  descriptor group) one class has paid costs nothing to the others (paper
  §5: "descriptor costs zero once used").
* A *global* checkpoint is stored whenever any class is about to pay a new
  feature: every class's latest state (paper §4.1's rule, applied to the
  union of the classes' features).  Its static cost is the cost of every
  feature paid so far.
* Class k's margin f_k = w_k' phi_k + b_k is calibrated by Platt scaling
  p_k = 1 / (1 + exp(A_k f_k + B_k)) fitted on the hold-out O, per stored
  state; the exported column k is the Platt log-odds -(A_k f_k + B_k), so the
  model's argmax is the argmax of the calibrated probabilities (the sigmoid
  is monotone) and the export needs no new IR node: one K-wide ``linear``
  node per global checkpoint, with weights -A_k w_k over class k's segments
  and bias -(A_k b_k + B_k) (``docs/algorithms/afr-cvm.md`` §1.5.1).
"""
from __future__ import annotations

import itertools

import numpy as np

from ... import ir
from .afr_fit import AFRFit, binned_data, cost_state, default_n_blocks
from .platt import platt_fit


class OneVsAllFit:
    """K ``AFRFit`` problems in lockstep with global checkpoints."""

    def __init__(self, est, X, idx, rows, rng):
        K = len(est.classes_)
        self.idx, self.O = idx, rows["O"]
        data = binned_data(est, X, rows, rng)
        state = cost_state(est)
        self.n_blocks = est.n_blocks or default_n_blocks(est.lambda0, state)
        seq = itertools.count()          # one training order over all classes' trees
        self.fits = [AFRFit(est, X, idx, rows, rng, y01=(idx == k), data=data, state=state,
                            n_blocks=self.n_blocks, on_new_feature=self._on_new_feature, seq=seq,
                            margins_O=True) for k in range(K)]
        self.checkpoints: list = []      # per global checkpoint: every class's snapshot

    def _emit(self, snaps):
        last = self.checkpoints[-1] if self.checkpoints else None
        if last is None or any(a is not b for a, b in zip(last, snaps)):
            self.checkpoints.append(snaps)

    def _on_new_feature(self, fit, snap):
        self._emit([snap if f is fit else f.snap for f in self.fits])

    def run(self, bar=None):
        for f in self.fits:
            f.start()
        self._emit([f.snap for f in self.fits])       # checkpoint 0: the calibrated priors
        for b in range(self.n_blocks):
            # the classes take one dimension step each in turn (not a whole
            # block each): every class gets its first trees before another
            # has bought many features, so early checkpoints serve them all
            steps = [f.block_steps(b) for f in self.fits]
            while steps:
                steps = [s for s in steps if next(s, StopIteration) is not StopIteration]
            if bar is not None:
                bar.update()
        self._emit([f.snap for f in self.fits])

    def results(self):
        """(trees in training order with their class ``cls``, checkpoints:
        per class n_trees, w, b, C, lam and Platt's (A, B))."""
        trees = []
        for k, f in enumerate(self.fits):
            for t in f.trees:
                t["cls"] = k
                trees.append(t)
        trees.sort(key=lambda t: t["seq"])
        platt: dict = {}
        cks = []
        yO = self.idx[self.O]
        for snaps in self.checkpoints:
            for k, s in enumerate(snaps):
                if id(s) not in platt:
                    platt[id(s)] = platt_fit(s["f_O"], yO == k)
            cks.append(dict(n_trees=[s["n_trees"] for s in snaps], w=[s["w"] for s in snaps],
                            b=[s["b"] for s in snaps], C=[s["C"] for s in snaps],
                            lam=[s["lam"] for s in snaps], platt=[platt[id(s)] for s in snaps]))
        return trees, cks


def multiclass_nodes(trees, checkpoints, n_classes, tree_eval_cost):
    """Segment banks (consecutive trees of one class and dimension, cut at
    every checkpoint of that class, in training order), one K-wide ``linear``
    node per checkpoint and the ``anytime`` output; returns (nodes, index of
    the first checkpoint node)."""
    K = n_classes
    local = np.zeros(len(trees), np.int64)       # a tree's index among its class's trees
    count = [0] * K
    for i, t in enumerate(trees):
        local[i] = count[t["cls"]]
        count[t["cls"]] += 1
    cuts = [{ck["n_trees"][k] for ck in checkpoints} for k in range(K)]
    segs = []                                    # (class, dim, end in class order, global tree ids)
    open_: dict = {}
    for i, t in enumerate(trees):
        k = t["cls"]
        cur = open_.get(k)
        if cur is not None and (local[i] in cuts[k] or trees[cur[-1]]["dim"] != t["dim"]):
            cur = None
        if cur is None:
            cur = []
            segs.append((k, t["dim"], cur))
            open_[k] = cur
        cur.append(i)
    nodes = []
    for j, (k, d, ids) in enumerate(segs):
        nodes.append(ir.concat_trees([trees[i] for i in ids],
                                     tree_cost=np.full(len(ids), float(tree_eval_cost)),
                                     base_score=[0.0], name=f"segment{j}_class{k}_dim{d}"))
    first_ck = len(nodes)
    for c, ck in enumerate(checkpoints):
        inputs, weights = [], []
        A = [ab[0] for ab in ck["platt"]]
        for j, (k, d, ids) in enumerate(segs):
            if local[ids[-1]] < ck["n_trees"][k]:
                row = np.zeros(K)
                row[k] = -A[k] * ck["w"][k][d]
                inputs.append(ir.node_input(j))
                weights.append(row)
        bias = [-(A[k] * ck["b"][k] + ck["platt"][k][1]) for k in range(K)]
        nodes.append(ir.linear(inputs, np.array(weights).reshape(len(inputs), K), bias, name=f"checkpoint{c}"))
    nodes.append(ir.anytime(list(range(first_ck, len(nodes))), name="afr"))
    return nodes, first_ck
