"""The reference query evaluator: a model with a query-level exit (a
``query_exit`` node over a tree bank, docs/ir.md), all queries in one numba
call, queries in parallel.

Per document the payments are the per-row evaluator's (``_vm.py``): for each
tree in bank order, the tree's cost, then the features on its path root to
leaf (a feature's group first time, then the feature), each paid on first
touch; before each unit, a document whose cost would pass its budget halts
(docs/costs.md).  Scores add in float32 from the bank's base score, trees in
bank order.  Documents do not share units, so walking a tree over all the
query's documents before the next tree (what this kernel does, to keep the
tree in cache, the documents' walks in lockstep) pays and sums exactly as
one document at a time would.

At checkpoint j (``after[j]`` trees done) the documents still in, those not
dropped or halted, are ranked by score, highest first, ties by position in
the query; past rank ``keep[j]`` a document is dropped when the rule says so
(docs/ranking.md): ``kth - score >= gap[j]`` in float64 for the proximity
rule (one IEEE subtraction of the two float32 scores widened to float64, as
every backend must do it), always for a cutoff.
"""
import numpy as np
from numba import njit, prange

from ..ir.codes import QX_CUTOFF
from ._split import category_left


@njit(cache=True)
def _tree_all(tree_cost, tree_root, tn_feature, tn_threshold, tn_left, tn_right, tn_missing_left, any_cat, tn_cat,
              tn_cat_words, tn_cat_rule, tn_other_left, cat_bits, tn_value, leaf_value, feat_group, group_cost,
              feat_cost, X, a, gt, alive, n_alive, halted, acc, done, used, gstamp, cost, budget, walk, node):
    """Global tree gt for every document still in: each pays the tree's cost, then walks it root to leaf
    paying its path's features (a feature's group first time, then the feature, two float64 additions);
    the walks advance one level at a time in lockstep, with a branchless child select (as the per-row bank
    evaluator does: the walks overlap instead of stalling on mispredicted branches).  Per document the
    payments come in the per-row order, so the results are identical.  Takes arrays, not the table tuple: a
    call passes its arguments by value."""
    nw = 0
    for i in range(n_alive):
        d = alive[i]
        if halted[d]:
            continue
        c = cost[d] + tree_cost[gt]
        if c > budget[a + d]:
            halted[d] = True
            continue
        cost[d] = c
        walk[nw] = d
        node[nw] = tree_root[gt]
        nw += 1
    active = True
    while active:
        active = False
        for w in range(nw):
            d = walk[w]
            if halted[d]:
                continue
            mk = node[w]
            j = tn_feature[mk]
            if j < 0:
                continue
            row = a + d
            if not used[row, j]:
                c = cost[d]
                g = feat_group[j]
                if g >= 0 and not gstamp[d, g]:
                    c = c + group_cost[g]
                c = c + feat_cost[j]
                if c > budget[row]:
                    halted[d] = True
                    continue
                cost[d] = c
                used[row, j] = True
                if g >= 0:
                    gstamp[d, g] = True
            x = X[row, j]
            lft = tn_left[mk]
            rgt = tn_right[mk]
            if x != x:
                node[w] = lft if tn_missing_left[mk] else rgt
            elif any_cat and tn_cat[mk] >= 0:
                node[w] = lft if category_left(x, tn_cat_rule[mk], tn_cat_words[mk], tn_cat[mk], tn_other_left[mk],
                                               cat_bits) else rgt
            else:
                go = np.int32(x > tn_threshold[mk])
                node[w] = lft + go * (rgt - lft)
            active = True
    for w in range(nw):
        d = walk[w]
        if not halted[d]:
            acc[d] = acc[d] + leaf_value[tn_value[node[w]]]
            done[d] += 1


@njit(cache=True)
def _query(T, after, keep, rule, gap, X, a, n, budget, scores, cost_out, stage, used, trees_out, dropped,
           order):
    """One query: rows [a, a + n) of X."""
    top = T.top
    first = T.node_first[top]
    count = T.node_count[top]
    J = after.shape[0]
    any_cat = T.tn_cat.max() >= 0     # a bank without sets keeps the branchless numeric walk (_vm.py)
    acc = np.full(n, T.bias[T.node_bias[top]], np.float32)
    cost = np.zeros(n)
    gstamp = np.zeros((n, T.group_cost.shape[0]), np.bool_)
    done = np.zeros(n, np.int64)
    last_cp = np.full(n, -1, np.int64)
    halted = np.zeros(n, np.bool_)
    alive = np.arange(n)          # documents still in, in position order
    walk = np.empty(n, np.int64)  # the documents walking the current tree, and their tree node
    node = np.empty(n, np.int32)
    n_alive = n
    t = 0
    for j in range(J + 1):
        end = after[j] if j < J else count
        while t < end:
            _tree_all(T.tree_cost, T.tree_root, T.tn_feature, T.tn_threshold, T.tn_left, T.tn_right,
                      T.tn_missing_left, any_cat, T.tn_cat, T.tn_cat_words, T.tn_cat_rule, T.tn_other_left, T.cat_bits,
                      T.tn_value, T.leaf_value, T.feat_group, T.group_cost, T.feat_cost, X, a,
                      first + t, alive, n_alive, halted, acc, done, used, gstamp, cost, budget, walk, node)
            t += 1
        # the documents that finished this checkpoint's trees
        m = 0
        for i in range(n_alive):
            d = alive[i]
            if not halted[d]:
                alive[m] = d
                last_cp[d] = j
                m += 1
        n_alive = m
        if j == J or n_alive <= keep[j]:
            continue
        cand = alive[:n_alive].copy()
        ranked = cand[np.argsort(-acc[cand], kind="mergesort")]   # stable: ties keep position order
        k = keep[j]
        kth = np.float64(acc[ranked[k - 1]])
        for r in range(k, n_alive):
            d = ranked[r]
            if rule[j] == QX_CUTOFF or kth - np.float64(acc[d]) >= gap[j]:
                dropped[a + d] = True
        m = 0
        for i in range(n_alive):
            d = alive[i]
            if not dropped[a + d]:
                alive[m] = d
                m += 1
        n_alive = m
    for d in range(n):
        scores[a + d, 0] = acc[d]
        cost_out[a + d] = cost[d]
        stage[a + d] = last_cp[d]
        trees_out[a + d] = done[d]
    # the query's ranking: more trees done first (survivors, then later exits), then score, then position
    by_score = np.argsort(-acc, kind="mergesort")
    by_trees = by_score[np.argsort(-done[by_score], kind="mergesort")]
    for r in range(n):
        order[a + r] = a + by_trees[r]


@njit(cache=True, parallel=True)
def rank_queries(T, after, keep, rule, gap, X, offsets, budget, scores, cost_out, stage, used, trees_out,
                 dropped, order):
    """Every query of ``offsets`` (rows of query q: [offsets[q], offsets[q + 1])), in parallel.  Fills scores
    [N, 1] f32, cost [N] f64, stage [N] i64 (last checkpoint completed; J = all trees; -1 none), used [N, F]
    (all False on entry), trees [N] i64, dropped [N] (all False on entry) and order [N] i64 (row indices,
    query by query, best first)."""
    for q in prange(offsets.shape[0] - 1):
        a = offsets[q]
        _query(T, after, keep, rule, gap, X, a, offsets[q + 1] - a, budget, scores, cost_out, stage, used,
               trees_out, dropped, order)
