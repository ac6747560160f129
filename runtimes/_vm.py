"""The reference evaluator: a numba kernel over ``ir.lowering.Tables``.

One row at a time (rows diverge: each has its own acquired set, budget and
route), rows in parallel.  The semantics are docs/costs.md's lazy cost, refined
for on-demand evaluation (docs/costs.md):

* a unit (feature with its group, tree, support vector) is paid the first
  time a row touches it, in evaluation order;
* before each unit, if paying it would take the row's cost past its budget,
  the row halts; the step in progress does not count, and the prediction is
  the last checkpoint completed.

Per-row state uses *stamps* (``stamp[u] == row tag`` means touched), so no
array is cleared between rows.

A float64 tree bank (``node_f64``) adds its leaves in ``acc64`` from its
float64 base score; when it finishes, ``accbuf`` gets ``float32(acc64 /
divisor)``, the value every other node reads.  When it is the model's
output, the scores are ``acc64 / divisor`` itself, in float64
(docs/numerics.md).
"""
import numpy as np
from numba import njit, prange

from ..ir.codes import (
    EXIT_ABS_GE,
    EXIT_GAP_GE,
    EXIT_GE,
    EXIT_LE,
    KERNEL_LINEAR,
    KERNEL_RBF,
    KIND_CASCADE,
    KIND_CTREE,
    KIND_KERNEL,
    KIND_LINEAR,
    KIND_TREES,
    TERM_FEATURE,
    TERM_TREE,
)
from ._expf import expf
from ._split import category_left


def _kernel(**options):
    """``njit`` for the interpreter's allocation-free kernels: cached, and
    without numba's reference-counting runtime (``_nrt=False``, a private
    option its type stubs do not list), which these kernels never need."""
    return njit(cache=True, _nrt=False, **options)  # type: ignore[call-overload]


ZERO = np.float32(0.0)
ONE = np.float32(1.0)


@_kernel(inline="always")
def _acquire(feat_group, group_cost, feat_cost, j, tag, fstamp, gstamp, cost, budget):
    """Touch feature j (and its group).  False when it does not fit."""
    if fstamp[j] == tag:
        return True
    c = cost[0]
    g = feat_group[j]
    if g >= 0 and gstamp[g] != tag:
        c = c + group_cost[g]
    c = c + feat_cost[j]
    if c > budget:
        return False
    cost[0] = c
    fstamp[j] = tag
    if g >= 0:
        gstamp[g] = tag
    return True


@_kernel(inline="always")
def _walk(feat_group, group_cost, feat_cost, tree_root, tree_cost, tn_feature, tn_threshold,
          tn_left, tn_right, tn_missing_left, tn_cat, tn_cat_words, tn_cat_rule, tn_other_left, cat_bits,
          X, row, t, tag, fstamp, gstamp, tstamp, tleaf, cost, budget):
    """Evaluate global tree t; returns the leaf, or -1 if the row halts.
    (Takes arrays, not the table tuple: a call passes its arguments by value.)"""
    if tstamp[t] == tag:
        return tleaf[t]
    c = cost[0] + tree_cost[t]
    if c > budget:
        return -1
    cost[0] = c
    m = tree_root[t]
    while tn_feature[m] >= 0:
        j = tn_feature[m]
        if not _acquire(feat_group, group_cost, feat_cost, j, tag, fstamp, gstamp, cost, budget):
            return -1
        x = X[row, j]
        if x != x:
            m = tn_left[m] if tn_missing_left[m] else tn_right[m]
        elif tn_cat[m] >= 0:
            m = tn_left[m] if category_left(x, tn_cat_rule[m], tn_cat_words[m], tn_cat[m], tn_other_left[m],
                                            cat_bits) else tn_right[m]
        elif x <= tn_threshold[m]:
            m = tn_left[m]
        else:
            m = tn_right[m]
    tstamp[t] = tag
    tleaf[t] = m
    return m


@_kernel(inline="always")
def _tree(T, X, row, t, tag, fstamp, gstamp, tstamp, tleaf, cost, budget):
    return _walk(T.feat_group, T.group_cost, T.feat_cost, T.tree_root, T.tree_cost, T.tn_feature,
                 T.tn_threshold, T.tn_left, T.tn_right, T.tn_missing_left, T.tn_cat, T.tn_cat_words,
                 T.tn_cat_rule, T.tn_other_left, T.cat_bits, X, row, t, tag,
                 fstamp, gstamp, tstamp, tleaf, cost, budget)


@_kernel()
def _kernel_input(T, X, row, q, i):
    """Input i of kernel q's feature pool: x, or (x - shift) * scale when the
    kernel has a transform (two float32 roundings, in this order)."""
    x = X[row, T.k_feat[i]]
    if T.k_xform[q]:
        x = x - T.k_shift[i]
        x = x * T.k_scale[i]
    return x


@_kernel()
def _kernel_value(T, X, row, q, s):
    """k(sv_s, x) for kernel q, float32, features in IR order."""
    nf = T.k_n_feat[q]
    f0 = T.k_feat_first[q]
    base = T.k_sv_first[q] + s * nf
    kt = T.k_type[q]
    acc = ZERO
    if kt == KERNEL_RBF:
        for d in range(nf):
            diff = _kernel_input(T, X, row, q, f0 + d) - T.sv[base + d]
            acc = acc + diff * diff
        return expf(-T.k_gamma[q] * acc)
    for d in range(nf):
        acc = acc + _kernel_input(T, X, row, q, f0 + d) * T.sv[base + d]
    if kt == KERNEL_LINEAR:
        return acc
    b = T.k_gamma[q] * acc + T.k_coef0[q]
    v = ONE
    for _ in range(T.k_degree[q]):
        v = v * b
    return v


NEG_INF = np.float32(-np.inf)


@_kernel()
def _gap_exits(v, o, K, t):
    """Rule ``gap_ge`` (docs/ir.md): the largest of v[o:o+K] minus the second
    largest, one float32 subtraction (0 when the two are equal, so two
    infinities tie), is >= t; never when a component is NaN.  Kept out of
    line: the other rules' test in ``_row`` stays what it was."""
    m1 = v[o]
    m2 = NEG_INF
    nan = m1 != m1
    for k in range(1, K):
        x = v[o + k]
        if x != x:
            nan = True
        elif x > m1:
            m2 = m1
            m1 = x
        elif x > m2:
            m2 = x
    if nan:
        return False
    if m1 == m2:
        return ZERO >= t
    return m1 - m2 >= t


@_kernel()
def _begin(T, n, accbuf, acc64, stack, pos, sp):
    o, b = T.node_acc[n], T.node_bias[n]
    for k in range(T.node_width[n]):
        accbuf[o + k] = T.bias[b + k]
    if T.node_f64[n]:
        for k in range(T.node_width[n]):
            acc64[o + k] = T.bias64[b + k]
    stack[sp] = n
    pos[sp] = 0


@_kernel()
def _eval_node(T, X, row, n0, tag, fstamp, gstamp, tstamp, tleaf, nstamp, accbuf, acc64,
               stack, pos, cost, budget):
    """Evaluate scoring node n0 and what it reads, depth-first with an
    explicit stack.  Returns True if finished, False if the row halted; on a
    halt ``pos[0]`` is the number of n0's steps completed."""
    if nstamp[n0] == tag:
        return True
    _begin(T, n0, accbuf, acc64, stack, pos, 0)
    sp = 1
    while sp > 0:
        n = stack[sp - 1]
        p = pos[sp - 1]
        kind = T.node_kind[n]
        o = T.node_acc[n]
        K = T.node_width[n]
        if p == T.node_count[n]:
            if T.node_f64[n]:         # what other nodes read: the float64 value rounded once
                d = T.node_div[n]
                for k in range(K):
                    accbuf[o + k] = np.float32(acc64[o + k] / d)
            nstamp[n] = tag
            sp -= 1
            continue
        if kind == KIND_TREES:
            # all trees of the bank in one tight loop: the stack is for node inputs
            first = T.node_first[n]
            while p < T.node_count[n]:
                leaf = _tree(T, X, row, first + p, tag, fstamp, gstamp, tstamp, tleaf, cost, budget)
                if leaf < 0:
                    pos[sp - 1] = p
                    return False
                v = T.tn_value[leaf]
                if T.node_f64[n]:
                    for k in range(K):
                        acc64[o + k] = acc64[o + k] + T.leaf_value64[v + k]
                else:
                    for k in range(K):
                        accbuf[o + k] = accbuf[o + k] + T.leaf_value[v + k]
                p += 1
            pos[sp - 1] = p
            continue
        elif kind == KIND_LINEAR:
            term = T.node_first[n] + p
            if T.term_live[term]:
                tk = T.term_kind[term]
                idx = T.term_index[term]
                if tk == TERM_FEATURE:
                    if not _acquire(T.feat_group, T.group_cost, T.feat_cost, idx, tag, fstamp, gstamp, cost, budget):
                        return False
                    x = X[row, idx]
                elif tk == TERM_TREE:
                    leaf = _tree(T, X, row, idx, tag, fstamp, gstamp, tstamp, tleaf, cost, budget)
                    if leaf < 0:
                        return False
                    x = T.leaf_value[T.tn_value[leaf] + T.term_output[term]]
                else:
                    if nstamp[idx] != tag:
                        _begin(T, idx, accbuf, acc64, stack, pos, sp)
                        sp += 1
                        continue  # come back to this term once idx is done
                    x = accbuf[T.node_acc[idx] + T.term_output[term]]
                w = T.term_weight[term]
                for k in range(K):
                    accbuf[o + k] = accbuf[o + k] + T.weight[w + k] * x
        else:  # kernel: one support vector per step
            q = T.node_kernel[n]
            c = cost[0] + T.sv_cost[T.k_svcost_first[q] + p]
            if c > budget:
                return False
            cost[0] = c
            f0 = T.k_feat_first[q]
            for d in range(T.k_n_feat[q]):
                if not _acquire(T.feat_group, T.group_cost, T.feat_cost, T.k_feat[f0 + d], tag, fstamp, gstamp, cost,
                                budget):
                    return False
            kv = _kernel_value(T, X, row, q, p)
            a = T.k_alpha_first[q] + p * K
            for k in range(K):
                accbuf[o + k] = accbuf[o + k] + T.alpha[a + k] * kv
        pos[sp - 1] = p + 1
    return True


@_kernel()
def _row(T, X, row, tag, budget, fstamp, gstamp, tstamp, tleaf, nstamp, accbuf, acc64, stack, pos,
         cost, scores_out):
    """Evaluate one row; writes its scores and returns the stage reached."""
    cost[0] = 0.0
    K = T.n_outputs
    top = T.top
    if T.top_kind <= KIND_KERNEL:
        ok = _eval_node(T, X, row, top, tag, fstamp, gstamp, tstamp, tleaf, nstamp, accbuf, acc64,
                        stack, pos, cost, budget)
        steps = T.node_count[top] if ok else pos[0]
        o = T.node_acc[top]
        if T.top_f64:                 # float64 scores: the sum so far over the divisor
            for k in range(K):
                scores_out[k] = acc64[o + k] / T.node_div[top]
        else:
            for k in range(K):
                scores_out[k] = accbuf[o + k]
        return steps - 1
    last = -1
    i = 0
    nC = T.ctl_scorer.shape[0]
    while True:
        n = T.ctl_scorer[i]
        if not _eval_node(T, X, row, n, tag, fstamp, gstamp, tstamp, tleaf, nstamp, accbuf, acc64,
                          stack, pos, cost, budget):
            break
        last = i
        margin = accbuf[T.node_acc[n] + T.ctl_output[i]]
        if T.top_kind == KIND_CTREE:
            if T.ctl_left[i] < 0:
                break
            i = T.ctl_left[i] if margin <= T.ctl_threshold[i] else T.ctl_right[i]
        else:
            if i == nC - 1:
                break
            if T.top_kind == KIND_CASCADE:
                r = T.ctl_rule[i]
                t = T.ctl_threshold[i]
                if (r == EXIT_LE and margin <= t) or (r == EXIT_GE and margin >= t) or (
                        r == EXIT_ABS_GE and (margin >= t or margin <= -t)):
                    break
                if r == EXIT_GAP_GE and _gap_exits(accbuf, T.node_acc[n], T.node_width[n], t):
                    break
            i += 1
    if last < 0:
        for k in range(K):
            scores_out[k] = T.prior[k]
    else:
        o = T.node_acc[T.ctl_scorer[last]]
        for k in range(K):
            scores_out[k] = accbuf[o + k]
    return last


BLOCK = 16


@njit(cache=True, parallel=True)
def _evaluate_bank(T, X, budget, scores, cost_out, stage, used):
    """The output is a tree bank: rows in blocks of BLOCK walk each tree in
    lockstep, one level at a time, with a branchless child select.  Per row
    the order of payments is the general evaluator's (tree cost, then the
    path's features root to leaf, halting at the first unit over budget), so
    results are identical; measured 2x faster, since the walks of a block
    overlap instead of stalling on mispredicted branches."""
    N, F = X.shape
    top = T.top
    K = T.node_width[top]
    first = T.node_first[top]
    count = T.node_count[top]
    base = T.node_bias[top]
    f64 = T.node_f64[top]
    div = T.node_div[top]
    # loop-invariant: a bank without category sets keeps the branchless numeric walk (the
    # compiler unswitches the loop on it; testing tn_cat per split cost 20 % here)
    any_cat = T.tn_cat.max() >= 0
    for c in prange((N + BLOCK - 1) // BLOCK):
        r0 = c * BLOCK
        nb = min(BLOCK, N - r0)
        fstamp = np.zeros((BLOCK, T.feat_cost.shape[0]), np.bool_)
        gstamp = np.zeros((BLOCK, T.group_cost.shape[0]), np.bool_)
        cost = np.zeros(BLOCK)
        acc = np.empty((BLOCK, K), np.float32)
        acc64 = np.empty((BLOCK, K), np.float64)
        halted = np.zeros(BLOCK, np.bool_)
        done = np.zeros(BLOCK, np.int64)
        m = np.zeros(BLOCK, np.int32)
        for k in range(nb):
            for j in range(K):
                acc[k, j] = T.bias[base + j]
                acc64[k, j] = T.bias64[base + j] if f64 else 0.0
        for t in range(first, first + count):
            for k in range(nb):
                if not halted[k]:
                    ct = cost[k] + T.tree_cost[t]
                    if ct > budget[r0 + k]:
                        halted[k] = True
                    else:
                        cost[k] = ct
                        m[k] = T.tree_root[t]
            active = True
            while active:
                active = False
                for k in range(nb):
                    if halted[k]:
                        continue
                    mk = m[k]
                    f = T.tn_feature[mk]
                    if f < 0:
                        continue
                    if not fstamp[k, f]:
                        g = T.feat_group[f]
                        ct = cost[k]
                        if g >= 0 and not gstamp[k, g]:
                            ct = ct + T.group_cost[g]
                        ct = ct + T.feat_cost[f]
                        if ct > budget[r0 + k]:
                            halted[k] = True
                            continue
                        cost[k] = ct
                        fstamp[k, f] = True
                        if g >= 0:
                            gstamp[k, g] = True
                    x = X[r0 + k, f]
                    lft = T.tn_left[mk]
                    rgt = T.tn_right[mk]
                    if x != x:
                        m[k] = lft if T.tn_missing_left[mk] else rgt
                    elif any_cat and T.tn_cat[mk] >= 0:
                        m[k] = lft if category_left(x, T.tn_cat_rule[mk], T.tn_cat_words[mk], T.tn_cat[mk],
                                                    T.tn_other_left[mk], T.cat_bits) else rgt
                    else:
                        go = np.int32(x > T.tn_threshold[mk])
                        m[k] = lft + go * (rgt - lft)
                    active = True
            for k in range(nb):
                if not halted[k]:
                    v = T.tn_value[m[k]]
                    if f64:
                        for j in range(K):
                            acc64[k, j] = acc64[k, j] + T.leaf_value64[v + j]
                    else:
                        for j in range(K):
                            acc[k, j] = acc[k, j] + T.leaf_value[v + j]
                    done[k] += 1
        for k in range(nb):
            row = r0 + k
            if f64:
                for j in range(K):
                    scores[row, j] = acc64[k, j] / div
            else:
                for j in range(K):
                    scores[row, j] = acc[k, j]
            cost_out[row] = cost[k]
            stage[row] = done[k] - 1
            for j in range(F):
                used[row, j] = fstamp[k, j]


@njit(cache=True, parallel=True)
def evaluate(T, X, budget, scores, cost_out, stage, used):
    """Fill scores [N,K] (f32; f64 when the output is a float64 bank), cost
    [N] f64, stage [N] i64 and used [N,F]."""
    N = X.shape[0]
    F = X.shape[1]
    chunk = 512
    n_chunks = (N + chunk - 1) // chunk
    for c in prange(n_chunks):
        fstamp = np.zeros(T.feat_cost.shape[0], np.int64)
        gstamp = np.zeros(T.group_cost.shape[0], np.int64)
        tstamp = np.zeros(T.tree_root.shape[0], np.int64)
        tleaf = np.zeros(T.tree_root.shape[0], np.int32)
        nstamp = np.zeros(T.node_kind.shape[0], np.int64)
        accbuf = np.zeros(T.acc_size, np.float32)
        acc64 = np.zeros(T.acc_size, np.float64)
        stack = np.zeros(T.stack_depth + 1, np.int32)
        pos = np.zeros(T.stack_depth + 1, np.int32)
        cost = np.zeros(1, np.float64)
        for row in range(c * chunk, min(N, (c + 1) * chunk)):
            tag = row + 1
            stage[row] = _row(T, X, row, tag, budget[row], fstamp, gstamp, tstamp, tleaf,
                              nstamp, accbuf, acc64, stack, pos, cost, scores[row])
            cost_out[row] = cost[0]
            for j in range(F):
                used[row, j] = fstamp[j] == tag
