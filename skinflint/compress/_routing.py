"""Numba kernels: validation rows through a tree bank, for BudgetPrune.

For every tree t and validation row i this records the path the row takes
and, for each cost unit u (a feature, or the group it belongs to) the
*first* node on that path that touches u: the paper's w^t_{k,i} variable
(Nan, Wang & Saligrama 2016, eq. (2)) is 1 exactly when that node stays an
internal node of the pruned tree.  Units are numbered features first
(0..F-1), then groups (F..F+G-1).
"""
from __future__ import annotations

import numpy as np
from numba import njit, prange


@njit(cache=True)
def _next(feature, threshold, left, right, missing_left, h, x):
    v = x[feature[h]]
    if np.isnan(v):
        return left[h] if missing_left[h] else right[h]
    return left[h] if v <= threshold[h] else right[h]


@njit(cache=True)
def _walk_tree(feature, threshold, left, right, missing_left, root, X, unit_of, group_of, stamp,
               leaf_of_t, node_rows, out_node, out_unit, out_row, start):
    """One tree over all rows; with ``out_node`` empty it only counts the
    first touches (the first pass), else it writes them from ``start``."""
    n = 0
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
                    out_node[start + n], out_unit[start + n], out_row[start + n] = h, u, i
                n += 1
            g = group_of[f]
            if g >= 0 and stamp[g] != tag:
                stamp[g] = tag
                if write:
                    out_node[start + n], out_unit[start + n], out_row[start + n] = h, g, i
                n += 1
            h = _next(feature, threshold, left, right, missing_left, h, x)
        leaf_of_t[i] = h
    return n


@njit(cache=True, parallel=True)
def route_bank(feature, threshold, left, right, missing_left, roots, X, unit_of, group_of, n_units):
    """(rows per node [M], leaf reached [T, N], first-touch triples (node,
    unit, row) in tree-major order, offsets [T + 1] of each tree's)."""
    T, N, M = roots.shape[0], X.shape[0], feature.shape[0]
    leaf_of = np.empty((T, N), np.int32)
    node_rows = np.zeros(M, np.int64)
    counts = np.zeros(T, np.int64)
    empty = np.empty(0, np.int32)
    for t in prange(T):
        stamp = np.zeros(n_units, np.int64)
        counts[t] = _walk_tree(feature, threshold, left, right, missing_left, roots[t], X, unit_of, group_of,
                               stamp, leaf_of[t], node_rows, empty, empty, empty, 0)
    off = np.zeros(T + 1, np.int64)
    for t in range(T):
        off[t + 1] = off[t] + counts[t]
    S = off[T]
    t_node = np.empty(S, np.int32)
    t_unit = np.empty(S, np.int32)
    t_row = np.empty(S, np.int32)
    scratch = np.zeros(M, np.int64)                # rows are counted once (first pass) only
    for t in prange(T):
        stamp = np.zeros(n_units, np.int64)
        _walk_tree(feature, threshold, left, right, missing_left, roots[t], X, unit_of, group_of, stamp,
                   leaf_of[t], scratch, t_node, t_unit, t_row, off[t])
    return node_rows, leaf_of, t_node, t_unit, t_row, off


@njit(cache=True, parallel=True)
def path_errors(feature, threshold, left, right, missing_left, roots, X, node_value, y_class, y_value, kind):
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
                h = _next(feature, threshold, left, right, missing_left, h, X[i])
    return err
