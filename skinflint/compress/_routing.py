"""Numba kernels: validation rows through a tree bank, for BudgetPrune.

For every tree t and validation row i this records the path the row takes
and, for each cost unit u (a feature, or the group it belongs to) the
*first* node on that path that touches u: the paper's w^t_{k,i} variable
(Nan, Wang & Saligrama 2016, eq. (2)) is 1 exactly when that node stays an
internal node of the pruned tree.  Units are numbered features first
(0..F-1), then groups (F..F+G-1).
"""
from __future__ import annotations

import numba
import numpy as np
from numba import njit, prange

from ..runtimes._split import category_left


def category_arrays(bank):
    """The bank's category-set splits (``ir.nodes.CategorySplits``) as the
    kernels read them: (rule code, begin [M], words [M], bits, other_left
    [M]); None when the bank has none, and the walkers are then compiled
    without the per-node test (passing the arrays made a numeric bank's
    routing 2.4x slower, measured)."""
    c = bank.categories
    if c is None:
        return None
    return (np.int64(c.rule_code), np.asarray(c.begin, np.int64), np.asarray(c.words, np.int64),
            np.ascontiguousarray(c.bits, np.uint32), np.asarray(c.other_left, np.uint8))


@njit(cache=True)
def _next(feature, threshold, left, right, missing_left, cat, h, x):
    """The child row ``x`` goes to at node h: the reference runtime's rule,
    NaN first, then the category set (``category_left``, the reference's own
    function) at a categorical node, else ``x <= threshold``."""
    v = x[feature[h]]
    if np.isnan(v):
        return left[h] if missing_left[h] else right[h]
    if cat is not None:                            # None (a numeric bank): compiled out
        words = cat[2][h]
        if words > 0:
            return left[h] if category_left(v, cat[0], words, cat[1][h], cat[4][h], cat[3]) else right[h]
    return left[h] if v <= threshold[h] else right[h]


@njit(cache=True)
def _walk_tree(feature, threshold, left, right, missing_left, cat, root, X, unit_of, group_of, stamp,
               leaf_of_t, node_rows, out_node, out_key, start):
    """One tree over all rows; with ``out_node`` empty it only counts the
    first touches (the first pass), else it writes them from ``start``: the
    node and the key ``unit * N + row``."""
    n = 0
    N = X.shape[0]
    write = out_node.shape[0] > 0
    for i in range(X.shape[0]):
        x = X[i]
        tag = i + 1                       # stamp[u] == tag: u already touched by row i here
        h = root
        while True:
            node_rows[h] += 1
            f = feature[h]
            if f < 0:
                break
            u = unit_of[f]
            if stamp[u] != tag:
                stamp[u] = tag
                if write:
                    out_node[start + n], out_key[start + n] = h, u * N + i
                n += 1
            g = group_of[f]
            if g >= 0 and stamp[g] != tag:
                stamp[g] = tag
                if write:
                    out_node[start + n], out_key[start + n] = h, g * N + i
                n += 1
            h = _next(feature, threshold, left, right, missing_left, cat, h, x)
        leaf_of_t[i] = h
    return n


@njit(cache=True, parallel=True)
def route_bank(feature, threshold, left, right, missing_left, cat, roots, X, unit_of, group_of, n_units):
    """(rows per node [M], leaf reached [T, N], first touches in tree-major
    order: node [S] and key ``unit * N + row`` [S], offsets [T + 1] of each
    tree's)."""
    T, N, M = roots.shape[0], X.shape[0], feature.shape[0]
    leaf_of = np.empty((T, N), np.int32)
    node_rows = np.zeros(M, np.int64)
    counts = np.zeros(T, np.int64)
    empty = np.empty(0, np.int32)
    empty_key = np.empty(0, np.int64)
    for t in prange(T):
        stamp = np.zeros(n_units, np.int64)
        counts[t] = _walk_tree(feature, threshold, left, right, missing_left, cat, roots[t], X, unit_of, group_of,
                               stamp, leaf_of[t], node_rows, empty, empty_key, 0)
    off = np.zeros(T + 1, np.int64)
    for t in range(T):
        off[t + 1] = off[t] + counts[t]
    S = off[T]
    t_node = np.empty(S, np.int32)
    t_key = np.empty(S, np.int64)
    scratch = np.zeros(M, np.int64)                # rows are counted once (first pass) only
    for t in prange(T):
        stamp = np.zeros(n_units, np.int64)
        _walk_tree(feature, threshold, left, right, missing_left, cat, roots[t], X, unit_of, group_of, stamp,
                   leaf_of[t], scratch, t_node, t_key, off[t])
    return node_rows, leaf_of, t_node, t_key, off


def group_triples(t_node, t_key, n_units, N):
    """The first touches grouped by (unit, row): a stable counting sort of
    the keys (by unit, then by row within a unit), so the triples of one
    (u, i) are contiguous and in tree order, as a stable argsort would put
    them.  Returns the segments' offsets [n_seg + 1] and units [n_seg],
    each triple's node in that order [S], and each tree-major triple's
    segment [S].  When the key space (units * N, one counter per key and
    thread) is no larger than the triples, a direct counting sort on the
    key, two parallel passes over the triples (``_group_dense``); else one
    by unit then row that needs O(S + N) memory only (``_group_sparse``).
    Both give the same arrays."""
    n_chunks = max(1, numba.get_num_threads())
    if n_units * N * n_chunks <= t_key.shape[0]:
        return _group_dense(t_node, t_key, n_units, N, n_chunks)
    return _group_sparse(t_node, t_key, n_units, N)


@njit(cache=True, parallel=True)
def _group_dense(t_node, t_key, n_units, N, n_chunks):
    """``group_triples`` by a counting sort on the key ``unit * N + row``:
    each of ``n_chunks`` contiguous ranges of triples counts its keys, a
    pass over the keys (in order: unit, then row) makes the segments and
    each range's first slot in each, and the ranges scatter their triples
    in parallel; ranges and the triples within one go in order, so the
    sort is stable (tree order within a segment)."""
    S = t_key.shape[0]
    n_keys = n_units * N
    step = (S + n_chunks - 1) // n_chunks
    cnt = np.zeros((n_chunks, n_keys), np.int32)   # S < 2^31: counts and slots fit
    for c in prange(n_chunks):
        for q in range(c * step, min(S, (c + 1) * step)):
            cnt[c, t_key[q]] += 1
    n_seg = 0
    for k in range(n_keys):
        for c in range(n_chunks):
            if cnt[c, k]:
                n_seg += 1
                break
    seg = np.empty(n_seg + 1, np.int64)
    seg_unit = np.empty(n_seg, np.int64)
    sid = np.empty(n_keys, np.int32)
    j, pos = 0, 0
    for k in range(n_keys):
        start = pos
        for c in range(n_chunks):
            v = cnt[c, k]
            cnt[c, k] = pos
            pos += v
        if pos > start:
            seg[j], seg_unit[j], sid[k] = start, k // N, j
            j += 1
    seg[n_seg] = S
    node_k = np.empty(S, np.int32)
    seg_of = np.empty(S, np.int32)
    for c in prange(n_chunks):
        for q in range(c * step, min(S, (c + 1) * step)):
            k = t_key[q]
            p = cnt[c, k]
            node_k[p] = t_node[q]
            cnt[c, k] = p + 1
            seg_of[q] = sid[k]
    return seg, seg_unit, node_k, seg_of


@njit(cache=True)
def _group_sparse(t_node, t_key, n_units, N):
    """``group_triples`` in O(S + units * N) time and O(S + N) memory: a
    stable counting sort by unit, then the rows of each unit in order."""
    S = t_key.shape[0]
    ustart = np.zeros(n_units + 1, np.int64)
    for q in range(S):
        ustart[t_key[q] // N + 1] += 1
    for u in range(n_units):
        ustart[u + 1] += ustart[u]
    fill = ustart[:-1].copy()
    perm = np.empty(S, np.int32)                   # triples by unit, tree-major within one (S < 2^31)
    for q in range(S):
        u = t_key[q] // N
        perm[fill[u]] = q
        fill[u] += 1
    count = np.zeros(N, np.int64)
    n_seg = 0
    for u in range(n_units):
        for p in range(ustart[u], ustart[u + 1]):
            r = t_key[perm[p]] - u * N
            if count[r] == 0:
                n_seg += 1
            count[r] += 1
        for p in range(ustart[u], ustart[u + 1]):
            count[t_key[perm[p]] - u * N] = 0
    seg = np.empty(n_seg + 1, np.int64)
    seg_unit = np.empty(n_seg, np.int64)
    node_k = np.empty(S, np.int32)
    seg_of = np.empty(S, np.int32)
    ptr = np.empty(N, np.int64)
    sid = np.empty(N, np.int64)
    j, pos = 0, 0
    for u in range(n_units):
        a, b = ustart[u], ustart[u + 1]
        if a == b:
            continue
        for p in range(a, b):
            count[t_key[perm[p]] - u * N] += 1
        for r in range(N):                         # rows ascending: the segments' order
            if count[r]:
                seg[j], seg_unit[j], sid[r], ptr[r] = pos, u, j, pos
                pos += count[r]
                count[r] = 0
                j += 1
        for p in range(a, b):
            q = perm[p]
            r = t_key[q] - u * N
            node_k[ptr[r]] = t_node[q]
            ptr[r] += 1
            seg_of[q] = sid[r]
    seg[n_seg] = S
    return seg, seg_unit, node_k, seg_of


@njit(cache=True, parallel=True)
def leaf_index(feature, threshold, left, right, missing_left, cat, roots, X):
    """[T, N] the leaf each row reaches in each tree."""
    T, N = roots.shape[0], X.shape[0]
    leaf_of = np.empty((T, N), np.int32)
    for t in prange(T):
        for i in range(N):
            h = roots[t]
            while feature[h] >= 0:
                h = _next(feature, threshold, left, right, missing_left, cat, h, X[i])
            leaf_of[t, i] = h
    return leaf_of


@njit(cache=True, parallel=True)
def error_counts(order, ooff, left, right, feature, leaf_of, y_class, pred, n_classes):
    """Per node, the number of validation rows that reach it whose class is
    not the node's label ``pred``: the misclassification surrogate, from the
    rows' leaves and one bottom-up pass per tree (children before parents in
    reversed preorder) instead of a walk per row."""
    M = feature.shape[0]
    T, N = leaf_of.shape
    cnt = np.zeros((M, n_classes), np.int64)
    err = np.zeros(M)
    for t in prange(T):
        for i in range(N):
            cnt[leaf_of[t, i], y_class[i]] += 1
        for j in range(ooff[t + 1] - 1, ooff[t] - 1, -1):
            h = order[j]
            if feature[h] >= 0:
                for c in range(n_classes):
                    cnt[h, c] = cnt[left[h], c] + cnt[right[h], c]
            n = 0
            for c in range(n_classes):
                n += cnt[h, c]
            right_ = cnt[h, pred[h]] if pred[h] < n_classes else 0
            err[h] = float(n - right_)
    return err


@njit(cache=True)
def labels_of(node_value):
    """A node's label: argmax of its values, or value > 0 with one output."""
    M, K = node_value.shape
    pred = np.empty(M, np.int64)
    for h in range(M):
        if K == 1:
            pred[h] = 1 if node_value[h, 0] > 0 else 0
        else:
            pred[h] = np.argmax(node_value[h])
    return pred


@njit(cache=True, parallel=True)
def refit_values(order, ooff, left, right, feature, node_rows, value):
    """[M, K] the mean, over the rows that reach each internal node, of the
    leaf values below it (leaves keep theirs; a node no row reaches takes
    the plain mean of its children's), children before parents."""
    M, K = value.shape
    total = np.zeros((M, K))
    val = value.copy()
    for t in prange(ooff.shape[0] - 1):
        for j in range(ooff[t + 1] - 1, ooff[t] - 1, -1):
            h = order[j]
            if feature[h] < 0:
                if node_rows[h]:
                    for k in range(K):
                        total[h, k] = value[h, k] * node_rows[h]
                continue
            lft, rgt, n = left[h], right[h], node_rows[h]
            for k in range(K):
                total[h, k] = total[lft, k] + total[rgt, k]
                val[h, k] = total[h, k] / n if n else 0.5 * (val[lft, k] + val[rgt, k])
    return val


@njit(cache=True, parallel=True)
def path_errors(feature, threshold, left, right, missing_left, cat, roots, X, node_value, y_class, y_value, kind):
    """Per node, the summed loss of the validation rows that reach it if
    the node predicted its own value there (the per-tree surrogate of the
    paper's eq. (1)).  ``kind`` 0: misclassification (the paper's; label
    argmax of the value, or value > 0 with one output); 1: Brier score,
    sum_c (p_c - [c == y])^2 with ``node_value`` the class probabilities
    [M, C] (a one-output margin gives p_1 = logistic(margin)); 2: squared
    error of a regression."""
    M, K = node_value.shape
    err = np.zeros(M)
    pred = np.empty(M, np.int64)
    sq = np.zeros(M)
    for h in range(M):
        if K == 1:
            pred[h] = 1 if node_value[h, 0] > 0 else 0
        else:
            pred[h] = np.argmax(node_value[h])
        for c in range(K):
            sq[h] += node_value[h, c] * node_value[h, c]
    for t in prange(roots.shape[0]):
        for i in range(X.shape[0]):
            h = roots[t]
            while True:
                if kind == 0:
                    err[h] += 1.0 if pred[h] != y_class[i] else 0.0
                elif kind == 1:
                    if K == 1:
                        p = 1.0 / (1.0 + np.exp(-node_value[h, 0]))
                        d = p - y_class[i]
                        err[h] += 2.0 * d * d
                    else:
                        err[h] += sq[h] - 2.0 * node_value[h, y_class[i]] + 1.0
                else:
                    d = node_value[h, 0] - y_value[i]
                    err[h] += d * d
                if feature[h] < 0:
                    break
                h = _next(feature, threshold, left, right, missing_left, cat, h, X[i])
    return err
