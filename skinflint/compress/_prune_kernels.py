"""Numba kernels of BudgetPrune's solver (Nan, Wang & Saligrama, NIPS 2016).

The 0-1 program (the paper's eq. (3)) picks, per tree t, the nodes z^t_h
where the pruned tree ends (one on every root-to-leaf path), minimising

    sum_t sum_h err_h z^t_h  +  lambda * mean cost per row,

where a unit u (feature, group) is paid for row i when *any* kept tree
touches it (w_{u,i} >= w^t_{u,i}, eq. (4)), and a kept tree pays its own
evaluation cost.  Its LP relaxation is solved by the primal-dual method of
the paper's Algorithm 1: with multipliers beta^t_{u,i} >= 0 on
w^t_{u,i} <= w_{u,i}, and sum_t beta^t_{u,i} <= lambda c_u / N (else the
dual is unbounded in w), the Lagrangian splits into one problem per tree,
which is a bottom-up dynamic program over its nodes (``solve_trees``);
the multipliers take a projected subgradient step (``dual_step``).  Here
beta^t_{u,i} = (lambda c_u / N) s^t_{u,i} with shares s in the capped
simplex {s >= 0, sum_t s^t <= 1}.

``polish`` is ours, not the paper's: exact block coordinate descent on the
0-1 objective, one tree at a time, charging a unit only when no other kept
tree pays it for that row; each step solves its tree exactly, so the true
objective never rises.
"""
from __future__ import annotations

import numpy as np
from numba import njit, prange


@njit(cache=True, parallel=True)
def preorder(roots, left, right, feature, n_nodes_per_tree):
    """Every tree's nodes in preorder (parents before children), tree-major,
    and the offsets [T + 1]."""
    T = roots.shape[0]
    off = np.zeros(T + 1, np.int64)
    for t in range(T):
        off[t + 1] = off[t] + n_nodes_per_tree[t]
    order = np.empty(off[T], np.int64)
    for t in prange(T):
        stack = np.empty(n_nodes_per_tree[t] + 1, np.int64)
        sp = 0
        stack[0] = roots[t]
        sp = 1
        k = off[t]
        while sp > 0:
            sp -= 1
            h = stack[sp]
            order[k] = h
            k += 1
            if feature[h] >= 0:
                stack[sp] = right[h]
                stack[sp + 1] = left[h]
                sp += 2
    return order, off


@njit(cache=True)
def _solve_one(t, order, ooff, left, right, feature, err, B, root_cost, opt, keep, kept, alive):
    a, b = ooff[t], ooff[t + 1]
    root = order[a]
    for j in range(b - 1, a - 1, -1):             # children before parents
        h = order[j]
        if feature[h] < 0:
            opt[h] = err[h]
            keep[h] = False
            continue
        k = B[h] + opt[left[h]] + opt[right[h]]
        if h == root:
            k += root_cost[t]
        keep[h] = k <= err[h]                      # a tie keeps: validation rows cannot tell
        opt[h] = k if keep[h] else err[h]
    for j in range(a, b):
        h = order[j]
        alive[h] = h == root or alive[h]
        kept[h] = alive[h] and keep[h]
        if feature[h] >= 0:
            alive[left[h]] = kept[h]
            alive[right[h]] = kept[h]
    return opt[root]


@njit(cache=True, parallel=True)
def solve_trees(order, ooff, left, right, feature, err, B, root_cost):
    """Each tree's Lagrangian subproblem by dynamic programming: a node is
    either a leaf of the pruned tree (cost err_h) or kept as a split (cost
    B_h, the multipliers of the units first touched there, plus both
    subtrees).  Returns (kept split [M], alive [M], dual value per tree)."""
    M = feature.shape[0]
    T = ooff.shape[0] - 1
    opt = np.zeros(M)
    keep = np.zeros(M, np.bool_)
    kept = np.zeros(M, np.bool_)
    alive = np.zeros(M, np.bool_)
    dual = np.zeros(T)
    for t in prange(T):
        dual[t] = _solve_one(t, order, ooff, left, right, feature, err, B, root_cost, opt, keep, kept, alive)
    return kept, alive, dual


@njit(cache=True)
def _charge_unit(u, useg, seg, node_k, cap, share, B):
    c = cap[u]
    for j in range(useg[u], useg[u + 1]):
        for p in range(seg[j], seg[j + 1]):
            B[node_k[p]] += c * share[p]


@njit(cache=True, parallel=True)
def node_charges(useg, n_features, seg, node_k, cap, share, M):
    """B_h = sum over the triples first touched at h of cap_u * s, each
    node's terms added in (unit, row) order.  A node first touches at most
    two units, its feature's and then its group's (units >= F), so the
    features' blocks run in parallel (no node is in two of them), then the
    groups' blocks, each adding to what its nodes hold: the same sums in
    the same order as one sequential pass.  ``useg`` [units + 1]: each
    unit's range of segments."""
    B = np.zeros(M)
    for u in prange(n_features):
        _charge_unit(u, useg, seg, node_k, cap, share, B)
    for u in prange(n_features, useg.shape[0] - 1):
        _charge_unit(u, useg, seg, node_k, cap, share, B)
    return B


@njit(cache=True, parallel=True)
def segment_any(seg, node_k, kept):
    """Per (unit, row): whether some kept tree's node pays it."""
    n = seg.shape[0] - 1
    used = np.zeros(n, np.bool_)
    for j in prange(n):
        for p in range(seg[j], seg[j + 1]):
            if kept[node_k[p]]:
                used[j] = True
                break
    return used


@njit(cache=True)
def _step(a, b, node_k, kept, share, eta):
    """s += eta * w^t over the segment [a, b): (the new sum, whether some
    kept tree pays it).  Branch-free (adding 0.0 where a branch would skip,
    exact for these non-negative shares): the tests are unpredictable, and
    a select costs less than a mispredicted branch."""
    total = 0.0
    paid = False
    for p in range(a, b):
        k = kept[node_k[p]]
        paid |= k
        sp = share[p] + (eta if k else 0.0)
        share[p] = sp
        total += sp
    return total, paid


@njit(cache=True)
def _michelot(a, b, share, total, buf):
    """The threshold theta of the projection of the segment [a, b) (summing
    to ``total`` > 1) onto {s >= 0, sum_t s^t <= 1} (Michelot's algorithm);
    the projection is max(s - theta, 0), which the caller applies (its last
    pass, fused with what it adds up).

    Michelot's passes after the first run over the entries above the last
    threshold only (kept in ``buf``, in order), not the whole segment: an
    entry at or below a threshold stays out while the threshold does not
    fall, which holds in exact arithmetic; should a rounding make it fall,
    that pass reads the whole segment again, so the sums and thresholds are
    those of full passes, bit for bit.  Branch-free compaction: every entry
    is written to ``buf``, the end advances past those above only."""
    n = b - a
    theta = (total - 1.0) / n
    cnt, s = 0, 0.0                                # the first pass: the whole segment
    for p in range(a, b):
        sp = share[p]
        above = sp > theta
        buf[cnt] = sp
        cnt += above
        s += sp if above else 0.0
    floor = theta                                  # every entry out of buf is <= floor
    theta = (s - 1.0) / cnt
    active = n
    for _ in range(n - 1):                         # the active set only shrinks
        if cnt == active:
            break
        active = cnt
        if theta >= floor:                         # buf holds every entry above theta's predecessor
            w, s = 0, 0.0
            for r in range(active):
                sp = buf[r]
                above = sp > theta
                buf[w] = sp
                w += above
                s += sp if above else 0.0
            cnt = w
        else:                                      # a rounding lowered theta: read the whole segment
            cnt, s = 0, 0.0
            for p in range(a, b):
                sp = share[p]
                above = sp > theta
                buf[cnt] = sp
                cnt += above
                s += sp if above else 0.0
        floor = max(floor, theta)
        theta = (s - 1.0) / cnt
    return theta


@njit(cache=True, parallel=True)
def dual_step(seg, node_k, kept, share, eta):
    """s += eta * w^t (the dual subgradient), projected per (unit, row) onto
    {s >= 0, sum_t s^t <= 1} (Michelot's algorithm); returns whether each
    (unit, row) is paid by some kept tree (the primal w_{u,i}).  Triples
    are in (unit, row) order, so each segment is contiguous."""
    n = seg.shape[0] - 1
    used = np.zeros(n, np.bool_)
    longest = 0
    for j in range(n):
        longest = max(longest, seg[j + 1] - seg[j])
    chunk = 4096
    for c in prange((n + chunk - 1) // chunk):
        buf = np.empty(longest, np.float64)
        for j in range(c * chunk, min(n, (c + 1) * chunk)):
            total, used[j] = _step(seg[j], seg[j + 1], node_k, kept, share, eta)
            if total > 1.0:
                theta = _michelot(seg[j], seg[j + 1], share, total, buf)
                for p in range(seg[j], seg[j + 1]):
                    share[p] = max(share[p] - theta, 0.0)
    return used


def unit_bins(useg, seg, n_features, n_bins):
    """Units in ``n_bins`` bins of about equal triples (largest first, each
    into the lightest bin), features and groups apart: the work lists of
    ``dual_step_charges``.  Returns (units, offsets [2 * n_bins + 1]):
    bins 0..n_bins-1 hold features, the rest groups.  Which bin a unit
    lands in changes no result, only the balance between threads."""
    sizes = seg[useg[1:]] - seg[useg[:-1]]
    units, off = [], [0]
    for block in (np.arange(n_features), np.arange(n_features, len(useg) - 1)):
        bins, load = [[] for _ in range(n_bins)], np.zeros(n_bins, np.int64)
        for u in block[np.argsort(-sizes[block], kind="stable")]:
            b = int(np.argmin(load))
            bins[b].append(int(u))
            load[b] += sizes[u]
        for b in bins:
            units += sorted(b)
            off.append(len(units))
    return np.array(units, np.int64), np.array(off, np.int64)


@njit(cache=True)
def _last_pass(a, b, node_k, share, proj, theta, c, B):
    """The projection max(s - theta, 0) (when ``proj``) and each share's
    charge c * s added to its node."""
    for p in range(a, b):
        sp = share[p]
        if proj:
            sp = max(sp - theta, 0.0)
        share[p] = sp
        B[node_k[p]] += c * sp


@njit(cache=True)
def _step_unit(u, useg, seg, node_k, kept, share, eta, cap, used, B, buf):
    """``dual_step`` and the charges of unit u's segments, in row order."""
    c = cap[u]
    for j in range(useg[u], useg[u + 1]):
        a, b = seg[j], seg[j + 1]
        total, used[j] = _step(a, b, node_k, kept, share, eta)
        proj = total > 1.0
        theta = _michelot(a, b, share, total, buf) if proj else 0.0
        _last_pass(a, b, node_k, share, proj, theta, c, B)


@njit(cache=True, parallel=True)
def dual_step_charges(useg, bin_units, bin_off, seg, node_k, kept, share, eta, cap, M):
    """``dual_step`` and then ``node_charges`` of the new shares in one pass
    over the triples (they are read from memory once, not twice): returns
    (used [segments], B [M]), both bit for bit what the two give.  Threads
    take the bins of ``unit_bins``: first the features' (a node first
    touches one feature unit, so no two threads add to one B entry), then
    the groups', so each B entry adds its terms in (unit, row) order."""
    n = seg.shape[0] - 1
    used = np.zeros(n, np.bool_)
    B = np.zeros(M)
    longest = 0
    for j in range(n):
        longest = max(longest, seg[j + 1] - seg[j])
    n_bins = (bin_off.shape[0] - 1) // 2
    for phase in range(2):
        for q in prange(n_bins):
            buf = np.empty(longest, np.float64)
            k = phase * n_bins + q
            for r in range(bin_off[k], bin_off[k + 1]):
                _step_unit(bin_units[r], useg, seg, node_k, kept, share, eta, cap, used, B, buf)
    return used, B


@njit(cache=True)
def polish(order, ooff, toff, left, right, feature, err, t_node, seg_of, seg_unit, cap, root_cost, kept, alive,
           sweeps):
    """Exact block coordinate descent on the 0-1 objective (see the module
    docstring); ``kept``/``alive`` are updated in place."""
    T = ooff.shape[0] - 1
    M = feature.shape[0]
    users = np.zeros(seg_unit.shape[0], np.int64)
    for q in range(t_node.shape[0]):
        if kept[t_node[q]]:
            users[seg_of[q]] += 1
    opt = np.zeros(M)
    keep = np.zeros(M, np.bool_)
    B = np.zeros(M)
    for _ in range(sweeps):
        changed = False
        for t in range(T):
            a, b = toff[t], toff[t + 1]
            for j in range(ooff[t], ooff[t + 1]):
                B[order[j]] = 0.0
            for q in range(a, b):                  # a tree touches a (unit, row) once: one pass
                s = seg_of[q]
                if kept[t_node[q]]:
                    users[s] -= 1
                if users[s] == 0:
                    B[t_node[q]] += cap[seg_unit[s]]
            before = kept[order[ooff[t]:ooff[t + 1]]].copy()
            for j in range(ooff[t], ooff[t + 1]):
                alive[order[j]] = False
            _solve_one(t, order, ooff, left, right, feature, err, B, root_cost, opt, keep, kept, alive)
            if not np.array_equal(before, kept[order[ooff[t]:ooff[t + 1]]]):
                changed = True
            for q in range(a, b):
                if kept[t_node[q]]:
                    users[seg_of[q]] += 1
        if not changed:
            break
