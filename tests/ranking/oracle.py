"""A slow, plain-Python statement of the query-level exit (docs/ranking.md), written from the documented rule
and independent of the code under test: it reads the IR model's arrays, never the lowering or the runtime."""
from __future__ import annotations

import numpy as np

from skinflint.ir.codes import QX_CUTOFF
from skinflint.runtimes.prediction import Ranking


def _walk(bank, x, t, paid, paid_groups, cost, budget, feat_cost, feat_group, group_cost):
    """Tree t of the bank for one document: (leaf, cost) or (None, cost) when a unit does not fit."""
    c = cost + float(bank.tree_cost[t])
    if c > budget:
        return None, cost
    cost = c
    m = int(bank.roots[t])
    while bank.feature[m] >= 0:
        j = int(bank.feature[m])
        if j not in paid:
            c = cost
            g = int(feat_group[j])
            if g >= 0 and g not in paid_groups:
                c = c + float(group_cost[g])
            c = c + float(feat_cost[j])
            if c > budget:
                return None, cost
            cost = c
            paid.add(j)
            if g >= 0:
                paid_groups.add(g)
        v = x[j]
        if np.isnan(v):
            m = int(bank.left[m]) if bank.missing_left[m] else int(bank.right[m])
        elif v <= bank.threshold[m]:
            m = int(bank.left[m])
        else:
            m = int(bank.right[m])
    return m, cost


class OracleRanker:
    """Ranks with the documented rule, one document and one tree at a time."""

    name = "python-oracle"

    def __init__(self, model):
        self.model = model
        q = model.nodes[model.output]
        self.q = q
        self.bank = model.nodes[q.scorer]

    def rank(self, X, group, budget=None) -> Ranking:
        m, q, bank = self.model, self.q, self.bank
        X = np.asarray(X, np.float32)
        N, F = X.shape
        T = bank.n_trees
        budget = np.full(N, np.inf) if budget is None else np.broadcast_to(np.asarray(budget, np.float64), (N,))
        fc, fg, gc = m.feature_costs, m.feature_groups, m.group_costs
        scores = np.zeros((N, 1), np.float32)
        cost = np.zeros(N)
        stage = np.zeros(N, np.int64)
        used = np.zeros((N, F), bool)
        trees = np.zeros(N, np.int64)
        dropped = np.zeros(N, bool)
        order = []
        a = 0
        for n in [int(s) for s in group]:
            docs = list(range(a, a + n))
            acc = {d: np.float32(bank.base_score[0]) for d in docs}
            spent = {d: 0.0 for d in docs}
            paid = {d: set() for d in docs}
            paid_g = {d: set() for d in docs}
            done = {d: 0 for d in docs}
            last = {d: -1 for d in docs}
            halted = set()
            gone = set()
            ends = [int(e) for e in q.after] + [T]
            for j, end in enumerate(ends):
                for d in docs:
                    if d in halted or d in gone:
                        continue
                    while done[d] < end:
                        leaf, spent[d] = _walk(bank, X[d], done[d], paid[d], paid_g[d], spent[d], budget[d],
                                               fc, fg, gc)
                        if leaf is None:
                            halted.add(d)
                            break
                        acc[d] = np.float32(acc[d] + np.float32(bank.value[leaf, 0]))
                        done[d] += 1
                    if d not in halted:
                        last[d] = j
                if j == len(ends) - 1:
                    break
                still = [d for d in docs if d not in halted and d not in gone]
                keep = int(q.keep[j])
                if len(still) <= keep:
                    continue
                ranked = sorted(still, key=lambda d: (-float(acc[d]), d))
                kth = float(acc[ranked[keep - 1]])
                for d in ranked[keep:]:
                    if int(q.rule[j]) == QX_CUTOFF or kth - float(acc[d]) >= float(q.gap[j]):
                        gone.add(d)
            for d in docs:
                scores[d, 0] = acc[d]
                cost[d] = spent[d]
                stage[d] = last[d]
                trees[d] = done[d]
                dropped[d] = d in gone
                used[d, sorted(paid[d])] = True
            order += sorted(docs, key=lambda d: (-done[d], -float(acc[d]), d))
            a += n
        return Ranking(output=scores[:, 0].copy(), scores=scores, proba=None, cost=cost, stage=stage,
                       features_used=used, order=np.array(order, np.int64), n_trees=trees, dropped=dropped)
