"""numba kernels of the trees of classifiers (CSTC, ASTC).

- ``f32_margins``: a ``linear`` IR node's margin exactly as every runtime
  computes it (float32 bias, then ``acc + w * x`` in input order, no FMA), so
  routing during training is the deployed routing (docs/numerics.md).
- ``greedy_select``: ASTC's cost-aware forward selection for one node
  (Kusner et al. 2014, Alg. 1 with the fast gain of eq. (9)-(11)): an
  incremental Gram-Schmidt basis Q, C = Q^T X and the residual r = y - QQ^T y,
  so each step costs two passes over the node's rows.  The same kernel runs
  the plain-gain greedy (``ratio=False``) that ASTC compares with eq. (7).
"""
from __future__ import annotations

import numpy as np
from numba import njit


@njit(cache=True)
def f32_margins(X, rows, cols, w32, b32):
    """IR-exact float32 margins of ``rows``: ``b32 + sum_j w32[j] * X[row, cols[j]]``
    summed left to right in float32.

    Parameters
    ----------
    X : float32 [N, F]
    rows : int64 [R]
    cols : int64 [J], the linear node's inputs in IR order
    w32 : float32 [J]
    b32 : float32 scalar

    Returns
    -------
    float32 [R]
    """
    out = np.empty(rows.shape[0], np.float32)
    for ii in range(rows.shape[0]):
        r = rows[ii]
        acc = b32
        for j in range(cols.shape[0]):
            acc = acc + w32[j] * X[r, cols[j]]
        out[ii] = acc
    return out


@njit(cache=True)
def centred_rows(Z, rows, xm, rw, out):
    """out[i, a] = (Z[rows[i], a] - xm[a]) * rw[i] in float64 (numpy's
    ``(Z[rows].astype(float64) - xm) * rw[:, None]``, element by element,
    the same bits) into the first len(rows) rows of ``out``; returns them.
    ASTC's centred, scaled node rows without the float64 copy of the rows
    and the temporary of the difference (at 284k rows x 519 features,
    1.2 GB each, fresh pages for every node)."""
    R = rows.shape[0]
    P = Z.shape[1]
    for ii in range(R):
        r = rows[ii]
        s = rw[ii]
        for a in range(P):
            out[ii, a] = (np.float64(Z[r, a]) - xm[a]) * s
    return out[:R]


@njit(cache=True)
def internal_rows(s, y, sig, w, Al, Au, g):
    """The per-row part of ``SoftTree.internal_objective`` in one pass, the
    bits of its numpy expressions (each element the same operations in the
    same order; the sums in ``linalg.dot``'s order):

        r = s - y
        fw = sum_i w_i (0.5 r_i r_i + sig_i Au_i + (1 - sig_i) Al_i)
        dsig_i = g sig_i (1 - sig_i) (Au_i - Al_i)
        ds_i = w_i (r_i + dsig_i)
        wd = sum_i w_i dsig_i

    Returns (fw, ds, wd).  One pass instead of about fifteen [n] temporaries
    per L-BFGS evaluation."""
    n = s.shape[0]
    ds = np.empty(n)
    fw = 0.0
    wd = 0.0
    for i in range(n):
        r = s[i] - y[i]
        sg = sig[i]
        wi = w[i]
        fw += wi * (0.5 * r * r + sg * Au[i] + (1.0 - sg) * Al[i])
        dsig = g * sg * (1.0 - sg) * (Au[i] - Al[i])
        ds[i] = wi * (r + dsig)
        wd += wi * dsig
    return fw, ds, wd


@njit(cache=True)
def _column_cost(c, col_ptr, col_items, item_cost, paid):
    s = 0.0
    for q in range(col_ptr[c], col_ptr[c + 1]):
        m = col_items[q]
        if not paid[m]:
            s += item_cost[m]
    return s


@njit(cache=True)
def _xtv(Xc, v, out):
    """out[a] = Xc[:, a] . v, rows in order (deterministic).  Serial: a
    node's pass is ~1e5 flops, less than a thread hand-off on a busy machine."""
    n, P = Xc.shape
    out[:] = 0.0
    for i in range(n):
        vi = v[i]
        for a in range(P):
            out[a] += Xc[i, a] * vi


@njit(cache=True)
def greedy_select(Xc, yc, col_ptr, col_items, item_cost, paid, inherited, budget, skip,
                  max_select, tol, ratio=True):
    """Cost-aware greedy forward selection for one ASTC node (Kusner et al.
    2014, eq. (7) with the gain of eq. (11)), or its plain-gain twin.

    Parameters
    ----------
    Xc : float64 [n, P]
        The node's rows, centred with the node weights and scaled by
        sqrt(weight) (so least squares on Xc is the node's weighted fit with
        an intercept).
    yc : float64 [n]
        The centred, scaled target.
    col_ptr, col_items : int64
        CSR map column -> cost items it needs.
    item_cost : float64 [n_items]
    paid : bool [n_items]
        Items already paid on the path (updated in place as columns are taken).
    inherited : bool [P]
        Columns an ancestor uses: taken first, at no cost (paper: "select them
        immediately").
    budget : float
        New-item budget of the node (cost units).
    skip : bool
        False: stop at the first unaffordable best column (the paper's prefix
        G<T>); True: skip unaffordable columns and go on.
    max_select : int
        At most this many columns (bounds Q's width).
    tol : float
        Relative residual-norm floor below which a column counts as collinear.
    ratio : bool
        True: each paid step takes the largest gain per unit of new cost
        (eq. (7)).  False: the largest gain among the columns that still fit
        the budget (unaffordable ones are passed over whatever ``skip`` says),
        the "unit-cost" greedy that ``ASTC(greedy="both")`` runs beside eq. (7)
        (Leskovec et al. 2007, CELF; docs/trees.md).

    Returns
    -------
    order : int64 [k], the columns in selection order
    gains : float64 [k], the R^2 increase of each step (eq. (11) times c(a))
    spent : float, new cost paid
    """
    n, P = Xc.shape
    var = 0.0
    for i in range(n):
        var += yc[i] * yc[i]
    order = np.empty(max_select, np.int64)
    gains = np.empty(max_select, np.float64)
    k = 0
    spent = 0.0
    if var <= 0.0 or n == 0:
        return order[:0], gains[:0], spent
    # Q's columns stored as rows (Qt[j] = q_j, contiguous): Gram-Schmidt reads and writes whole
    # columns of Q, which in an [n, max_select] array were n cache lines (and pages) apart; the
    # arithmetic and its order are the same
    Qt = np.zeros((max_select, n))
    C = np.zeros((max_select, P))
    norm2 = np.empty(P)
    for a in range(P):
        s = 0.0
        for i in range(n):
            s += Xc[i, a] * Xc[i, a]
        norm2[a] = s
    cn2 = np.zeros(P)           # ||C[:, a]||^2: the part of column a inside span(Q)
    r = yc.copy()
    xr = np.empty(P)
    taken = np.zeros(P, np.bool_)
    v = np.empty(n)
    phase = 0                   # 0: inherited / free columns, 1: paid greedy steps
    while k < max_select:
        _xtv(Xc, r, xr)
        best = -1
        best_score = 0.0
        best_gain = 0.0
        best_cost = 0.0
        for a in range(P):
            if taken[a]:
                continue
            den = norm2[a] - cn2[a]
            if den <= tol * norm2[a] or den <= 0.0:
                continue
            gain = xr[a] * xr[a] / den / var
            if gain <= 1e-10:
                continue
            ca = 0.0 if inherited[a] else _column_cost(a, col_ptr, col_items, item_cost, paid)
            if phase == 0:
                if ca > 0.0:
                    continue
                score = gain
            else:
                if (skip or not ratio) and spent + ca > budget:
                    continue
                if ca <= 0.0:
                    score = np.inf
                elif ratio:
                    score = gain / ca
                else:
                    score = gain
            if score > best_score:
                best, best_score, best_gain, best_cost = a, score, gain, ca
        if best < 0:
            if phase == 0:
                phase = 1
                continue
            break
        if phase == 1 and spent + best_cost > budget:
            break                                   # the prefix rule G<T>
        # q = normalised residual of column best against Q (Gram-Schmidt twice)
        for i in range(n):
            v[i] = Xc[i, best]
        for _rep in range(2):     # Gram-Schmidt twice ("twice is enough")
            for j in range(k):
                qj = Qt[j]
                d = 0.0
                for i in range(n):
                    d += qj[i] * v[i]
                for i in range(n):
                    v[i] -= d * qj[i]
        nv = 0.0
        for i in range(n):
            nv += v[i] * v[i]
        nv = np.sqrt(nv)
        if nv <= 0.0:
            taken[best] = True
            continue
        qk = Qt[k]
        for i in range(n):
            qk[i] = v[i] / nv
        qy = 0.0
        for i in range(n):
            qy += qk[i] * r[i]
        for i in range(n):
            r[i] -= qy * qk[i]
        _xtv(Xc, qk, xr)
        for a in range(P):
            C[k, a] = xr[a]
            cn2[a] += xr[a] * xr[a]
        taken[best] = True
        order[k] = best
        gains[k] = best_gain
        spent += best_cost
        for q in range(col_ptr[best], col_ptr[best + 1]):
            paid[col_items[q]] = True
        k += 1
    return order[:k], gains[:k], spent
