"""Linear algebra whose reduction order is skinflint's, not the BLAS's.

A BLAS or LAPACK routine is free to sum in any order: OpenBLAS picks a kernel
per CPU (``OPENBLAS_CORETYPE``), splits work across threads, and unrolls each
kernel its own way, so ``a @ b`` can differ in the last bits from one machine
or thread count to the next, and a trainer that branches on such a value
(a clamp, an active set, a line search) then produces different model bytes.
Every product, Gram matrix and factorisation a trainer's result depends on
goes through this module instead (docs/results.md, "Reproducibility").

The stated order, for every function: a sum over an index runs serially in
ascending index order, one accumulator, starting from 0.0, with a separate
multiply and add (numba compiles without fast-math, so LLVM neither contracts
to FMA nor reassociates).  Loops that are not reductions (over the output's
entries) are arranged so that the compiler may vectorise *across* outputs,
which leaves each output's own order untouched; that is the "blocking" that
keeps these kernels within a small factor of BLAS on the sizes the trainers
use.  Results are therefore identical on every CPU, thread count and BLAS
build (what ``tests/trainers/test_determinism.py`` checks).

All inputs are float64; a 1-D right-hand side is accepted where a 2-D one is
(columns solved independently, each in the same order).
"""
from __future__ import annotations

import numpy as np
from numba import njit

from .simd import load4, muladd4, splat4, store4

# ---------------------------------------------------------------- products


@njit(cache=True)
def dot(a, b):
    """sum_i a_i b_i, i ascending."""
    s = 0.0
    for i in range(a.shape[0]):
        s += a[i] * b[i]
    return s


@njit(cache=True)
def matvec(A, x):
    """A @ x: out_i = sum_j A_ij x_j, j ascending.  Four rows at a time, each
    its own accumulator (four independent chains: ~2.4x faster, the same
    bits); ``rmatvec(A.T, x)`` on a contiguous transpose gives the same bits
    again, vectorised, for a matrix that is multiplied many times."""
    n, m = A.shape
    out = np.zeros(n)
    i = 0
    while i + 4 <= n:
        s0 = 0.0
        s1 = 0.0
        s2 = 0.0
        s3 = 0.0
        for j in range(m):
            xj = x[j]
            s0 += A[i, j] * xj
            s1 += A[i + 1, j] * xj
            s2 += A[i + 2, j] * xj
            s3 += A[i + 3, j] * xj
        out[i] = s0
        out[i + 1] = s1
        out[i + 2] = s2
        out[i + 3] = s3
        i += 4
    while i < n:
        s = 0.0
        for j in range(m):
            s += A[i, j] * x[j]
        out[i] = s
        i += 1
    return out


_NARROW = 8   # rmatvec keeps the sums of a matrix with fewer columns in registers


@njit(cache=True)
def rmatvec(A, x):
    """A.T @ x: out_j = sum_i A_ij x_i, i ascending (rows streamed once,
    vectorised across j).  With fewer than _NARROW columns (CSTC's slot of
    1-4 terminals) the sums in memory were a store-to-load chain per row:
    there ``matvec`` of the transposed view keeps four sums in registers
    per pass over the rows; every sum the same chain, so the same bits."""
    n, m = A.shape
    if m < _NARROW:
        return matvec(A.T, x)
    out = np.zeros(m)
    for i in range(n):
        xi = x[i]
        for j in range(m):
            out[j] += A[i, j] * xi
    return out


@njit(cache=True)
def rmatvec_rows(A, rows, x):
    """``rmatvec(A[rows], x)`` without the copy A[rows] (``x`` has one entry
    per listed row): out_j = sum_k A_rj x_k over r = rows[k], k ascending,
    in float64 (a float32 ``A`` is widened entry by entry, exactly).  Each
    sum is ``rmatvec``'s chain, so the same bits (its two layouts differ in
    loop order only)."""
    m = A.shape[1]
    out = np.zeros(m)
    for k in range(rows.shape[0]):
        r = rows[k]
        xk = x[k]
        for j in range(m):
            out[j] += np.float64(A[r, j]) * xk
    return out


@njit(cache=True)
def matmul(A, B):
    """A @ B: C_ij = sum_k A_ik B_kj, k ascending (vectorised across j).  A
    single column of B goes through :func:`matvec` (the same sum, four rows'
    chains interleaved: ~10x faster than one chain through memory)."""
    n, p = A.shape
    m = B.shape[1]
    if m == 1:
        return matvec(A, B[:, 0]).reshape((n, 1))
    C = np.zeros((n, m))
    for i in range(n):
        for k in range(p):
            a = A[i, k]
            for j in range(m):
                C[i, j] += a * B[k, j]
    return C


@njit(cache=True)
def tmatmul(A, B):
    """A.T @ B: C_jl = sum_i A_ij B_il, i ascending.

    Every C_jl is one chain over i from 0.0, whatever the shape; only the
    memory layout of the accumulation depends on it (the same bits as the
    plain triple loop):

    * B with fewer than 16 columns (CVM's gradient on low-dimensional data,
      a single residual column): C' is accumulated, vectorised across j over
      each row of A (a short inner loop over l vectorises badly);
    * otherwise four rows of C at a time, each in its own small array that
      stays in L1 while the rows of A and B stream past (vectorised across
      l): ~1.6x faster than one pass over all of C per row of A on CVM's
      [806, 161]' [806, 57], ~2.5x on [1779, 356]' [1779, 10]."""
    n, p = A.shape
    m = B.shape[1]
    C = np.zeros((p, m))
    if m < 16:
        CT = np.zeros((m, p))
        for i in range(n):
            for l in range(m):
                b = B[i, l]
                for j in range(p):
                    CT[l, j] += A[i, j] * b
        for j in range(p):
            for l in range(m):
                C[j, l] = CT[l, j]
        return C
    nb = p // 4
    for blk in range(nb):
        j = 4 * blk
        c0 = np.zeros(m)
        c1 = np.zeros(m)
        c2 = np.zeros(m)
        c3 = np.zeros(m)
        for i in range(n):
            a0 = A[i, j]
            a1 = A[i, j + 1]
            a2 = A[i, j + 2]
            a3 = A[i, j + 3]
            for l in range(m):
                bl = B[i, l]
                c0[l] += a0 * bl
                c1[l] += a1 * bl
                c2[l] += a2 * bl
                c3[l] += a3 * bl
        C[j, :] = c0
        C[j + 1, :] = c1
        C[j + 2, :] = c2
        C[j + 3, :] = c3
    for j in range(4 * nb, p):
        c0 = np.zeros(m)
        for i in range(n):
            a0 = A[i, j]
            for l in range(m):
                c0[l] += a0 * B[i, l]
        C[j, :] = c0
    return C


GRAM_ROWS = 64      # rows per block of gram_upper_add: a block of A (64 x p float64) stays in L2 across its tiles


def weighted_gram(A, w):
    """A.T diag(w) A: G_jl = sum_i (w_i A_ij) A_il, i ascending; the upper
    triangle is summed and mirrored, so G is exactly symmetric.  Rows in
    blocks of ``GRAM_ROWS`` (``gram_upper_add``): the same chains as the
    plain row loop, which streamed the whole p x p Gram through the cache
    for every row.  Any layout and real dtype (widened to float64 exactly,
    as the products were)."""
    A = np.ascontiguousarray(A, dtype=np.float64)
    return weighted_gram_rows(A, np.arange(A.shape[0]), np.asarray(w, np.float64))


@njit(cache=True)
def weighted_gram_rows(A, rows, w):
    """``weighted_gram(A[rows], w)`` without the copy A[rows] (``w`` has one
    entry per listed row): G_jl = sum_k (w_k A_rj) A_rl over r = rows[k], k
    ascending, the same chains and bits.  ``A`` may be a column prefix of a wider C-contiguous buffer
    (``buf[:, :p]``: each row's entries adjacent, as the tiles load them),
    which a solver that grows its columns in place passes without a copy."""
    if A.strides[1] != A.itemsize:
        A = np.ascontiguousarray(A)
    p = A.shape[1]
    G = np.zeros((p, p))
    n = rows.shape[0]
    for i0 in range(0, n, GRAM_ROWS):
        gram_upper_add(A, rows, w, G, 0, i0, min(i0 + GRAM_ROWS, n))
    return mirror_upper(G)


@njit(cache=True)
def mirror_upper(G):
    """G with its lower triangle copied from the upper one (in place): the
    Gram kernels sum the upper triangle only, so G is exactly symmetric."""
    for j in range(G.shape[0]):
        for l in range(j):
            G[j, l] = G[l, j]
    return G


@njit(cache=True)
def gram_upper_add(A, rows, w, G, o, i0, i1):
    """Rows rows[i0..i1-1] of A' diag(w) A (their weights w[i0..i1-1]) added
    to the upper triangle of G[o:, o:], each entry continuing its own chain (i ascending): tiles of
    4 x 8 entries held in ``<4 x double>`` registers (``simd.Vec4``; each
    lane is the scalar chain, so the bits are the row loop's), a 4 x 4 tile
    and single cells at the edges.  A tile on the diagonal also sums a few
    entries below it; the callers overwrite the lower triangle with the
    upper one.  ``A`` is float64 and each of its rows has unit stride (the
    tiles load four adjacent doubles): the caller checks it
    (``weighted_gram_rows``, ``bias_design``), once, not per block."""
    T = A.shape[1]
    j = 0
    while j + 4 <= T:
        l = j
        while l + 8 <= T:
            _gram_tile(A, rows, w, G, i0, i1, j, l, o)
            l += 8
        if l + 4 <= T:
            _gram_tile4(A, rows, w, G, i0, i1, j, l, o)
            l += 4
        for r in range(j, j + 4):
            for c in range(max(l, r), T):
                _gram_cell(A, rows, w, G, i0, i1, r, c, o)
        j += 4
    for r in range(j, T):
        for c in range(r, T):
            _gram_cell(A, rows, w, G, i0, i1, r, c, o)


@njit(cache=True)
def _gram_cell(A, rows, w, G, i0, i1, j, l, o):
    """Rows rows[i0..i1-1] added to G[o + j, o + l] (one chain, i ascending)."""
    g = G[o + j, o + l]
    for i in range(i0, i1):
        r = rows[i]
        g += (w[i] * A[r, j]) * A[r, l]
    G[o + j, o + l] = g


@njit(cache=True)
def _gram_tile(A, rows, w, G, i0, i1, j, l, o):
    """Rows rows[i0..i1-1] added to the 4 x 8 block G[o+j:o+j+4,
    o+l:o+l+8] of A' diag(w) A: eight Vec4 accumulators (two per row of the
    block), each lane its own chain (i ascending), in registers across the
    rows."""
    r, c = o + j, o + l
    g00 = load4(G, r, c)
    g01 = load4(G, r, c + 4)
    g10 = load4(G, r + 1, c)
    g11 = load4(G, r + 1, c + 4)
    g20 = load4(G, r + 2, c)
    g21 = load4(G, r + 2, c + 4)
    g30 = load4(G, r + 3, c)
    g31 = load4(G, r + 3, c + 4)
    for i in range(i0, i1):
        k = rows[i]
        wk = w[i]
        x0 = load4(A, k, l)
        x1 = load4(A, k, l + 4)
        a = splat4(wk * A[k, j])
        g00 = muladd4(g00, a, x0)
        g01 = muladd4(g01, a, x1)
        a = splat4(wk * A[k, j + 1])
        g10 = muladd4(g10, a, x0)
        g11 = muladd4(g11, a, x1)
        a = splat4(wk * A[k, j + 2])
        g20 = muladd4(g20, a, x0)
        g21 = muladd4(g21, a, x1)
        a = splat4(wk * A[k, j + 3])
        g30 = muladd4(g30, a, x0)
        g31 = muladd4(g31, a, x1)
    store4(G, r, c, g00)
    store4(G, r, c + 4, g01)
    store4(G, r + 1, c, g10)
    store4(G, r + 1, c + 4, g11)
    store4(G, r + 2, c, g20)
    store4(G, r + 2, c + 4, g21)
    store4(G, r + 3, c, g30)
    store4(G, r + 3, c + 4, g31)


@njit(cache=True)
def _gram_tile4(A, rows, w, G, i0, i1, j, l, o):
    """``_gram_tile`` for a 4 x 4 block (the last four columns before the
    edge's single cells)."""
    r, c = o + j, o + l
    g0 = load4(G, r, c)
    g1 = load4(G, r + 1, c)
    g2 = load4(G, r + 2, c)
    g3 = load4(G, r + 3, c)
    for i in range(i0, i1):
        k = rows[i]
        wk = w[i]
        x = load4(A, k, l)
        g0 = muladd4(g0, splat4(wk * A[k, j]), x)
        g1 = muladd4(g1, splat4(wk * A[k, j + 1]), x)
        g2 = muladd4(g2, splat4(wk * A[k, j + 2]), x)
        g3 = muladd4(g3, splat4(wk * A[k, j + 3]), x)
    store4(G, r, c, g0)
    store4(G, r + 1, c, g1)
    store4(G, r + 2, c, g2)
    store4(G, r + 3, c, g3)


@njit(cache=True)
def sq_distances(A, Bt):
    """Squared Euclidean distances D_ij = sum_d (A_id - B_jd)^2, d ascending,
    with ``Bt`` = B.T (contiguous [D, m], so the loop over j vectorises).
    Exact differences, never the ``|a|^2 + |b|^2 - 2 a.b`` expansion: no
    cancellation, never negative.

    Blocked for the cache, not for the order: columns of Bt in blocks of 64
    (a contiguous copy, [D, 64] fits L1), four rows of A at a time, each
    D_ij one chain over d from 0.0 in a small accumulator; the same bits as
    the plain loop, ~1.5x faster on CVM's [806, 57] x [57, 161]."""
    n, D = A.shape
    m = Bt.shape[1]
    out = np.empty((n, m))
    JB = 64
    for b in range((m + JB - 1) // JB):
        j0 = b * JB
        w = min(JB, m - j0)
        Bb = np.ascontiguousarray(Bt[:, j0:j0 + w])
        acc = np.zeros((4, w))
        i = 0
        while i + 4 <= n:
            acc[:] = 0.0
            for d in range(D):
                a0 = A[i, d]
                a1 = A[i + 1, d]
                a2 = A[i + 2, d]
                a3 = A[i + 3, d]
                for j in range(w):
                    bj = Bb[d, j]
                    t0 = a0 - bj
                    t1 = a1 - bj
                    t2 = a2 - bj
                    t3 = a3 - bj
                    acc[0, j] += t0 * t0
                    acc[1, j] += t1 * t1
                    acc[2, j] += t2 * t2
                    acc[3, j] += t3 * t3
            out[i:i + 4, j0:j0 + w] = acc
            i += 4
        while i < n:
            acc[0] = 0.0
            for d in range(D):
                a = A[i, d]
                for j in range(w):
                    t = a - Bb[d, j]
                    acc[0, j] += t * t
            out[i, j0:j0 + w] = acc[0]
            i += 1
    return out


# ---------------------------------------------------------------- columns of a transposed matrix
# A trainer that multiplies a few columns of a tall A many times (CSTC's nodes: the active columns
# of an [n, P] basis, a different set per node) keeps At = A.T (contiguous [P, n]) once and reads the
# columns it needs as rows: no gathered [n, |cols|] copy per node and solve (at 284k rows x 519
# features each copy was 1.2 GB of fresh pages), and only those columns' bytes are read.  Each
# function gives the bits of the plain function on the gathered copy (the same chains, same order).

@njit(cache=True)
def cols_matvec(At, cols, x):
    """A[:, cols] @ x from At = A.T: out_i = sum_a At[cols[a], i] x_a, a
    ascending from 0.0, the bits of ``matvec(A[:, cols], x)``.  One
    selected row of At at a time through the whole output, vectorised
    across i (blocks of 1k-32k outputs kept in cache were slower: 1.7-2.3x
    at 200k x 100 columns, the prefetch restarting at every block)."""
    n = At.shape[1]
    m = cols.shape[0]
    out = np.zeros(n)
    for a in range(m):
        row = At[cols[a]]
        xa = x[a]
        for i in range(n):
            out[i] += row[i] * xa
    return out


@njit(cache=True)
def cols_rmatvec(At, cols, x):
    """A[:, cols].T @ x from At = A.T: out_a = sum_i At[cols[a], i] x_i, i
    ascending from 0.0, the bits of ``rmatvec(A[:, cols], x)``.  Eight
    columns at a time, each its own chain (eight independent adds in
    flight; one chain is bound by the add's latency)."""
    n = At.shape[1]
    m = cols.shape[0]
    out = np.zeros(m)
    a = 0
    while a + 8 <= m:
        r0 = cols[a]
        r1 = cols[a + 1]
        r2 = cols[a + 2]
        r3 = cols[a + 3]
        r4 = cols[a + 4]
        r5 = cols[a + 5]
        r6 = cols[a + 6]
        r7 = cols[a + 7]
        s0 = 0.0
        s1 = 0.0
        s2 = 0.0
        s3 = 0.0
        s4 = 0.0
        s5 = 0.0
        s6 = 0.0
        s7 = 0.0
        for i in range(n):
            xi = x[i]
            s0 += At[r0, i] * xi
            s1 += At[r1, i] * xi
            s2 += At[r2, i] * xi
            s3 += At[r3, i] * xi
            s4 += At[r4, i] * xi
            s5 += At[r5, i] * xi
            s6 += At[r6, i] * xi
            s7 += At[r7, i] * xi
        out[a] = s0
        out[a + 1] = s1
        out[a + 2] = s2
        out[a + 3] = s3
        out[a + 4] = s4
        out[a + 5] = s5
        out[a + 6] = s6
        out[a + 7] = s7
        a += 8
    while a < m:
        r = cols[a]
        s = 0.0
        for i in range(n):
            s += At[r, i] * x[i]
        out[a] = s
        a += 1
    return out


@njit(cache=True)
def cols_bias_gram(At, cols, w):
    """X1' diag(w) X1 for X1 = [1, A[:, cols]], from At = A.T without the
    copy X1: the bits of ``weighted_gram(X1, w)`` (every entry the chain
    (w_i X1_ij) X1_il, i ascending from 0.0, upper triangle mirrored; a 1.0
    factor is exact, so the bias row is sum_i w_i A_il).  Rows in blocks of
    ``GRAM_ROWS`` (the selected rows' blocks stay in L2 across the tiles),
    4 x 4 tiles in registers as ``gram_upper_add``."""
    n = At.shape[1]
    m = cols.shape[0]
    G = np.zeros((m + 1, m + 1))
    for i0 in range(0, n, GRAM_ROWS):
        i1 = min(i0 + GRAM_ROWS, n)
        g = G[0, 0]
        for i in range(i0, i1):
            g += w[i]
        G[0, 0] = g
        for l in range(m):
            r = cols[l]
            g = G[0, l + 1]
            for i in range(i0, i1):
                g += w[i] * At[r, i]
            G[0, l + 1] = g
        j = 0
        while j + 4 <= m:
            l = j
            while l + 4 <= m:
                _gram_tile_t(At, cols, w, G, i0, i1, j, l)
                l += 4
            for r in range(j, j + 4):
                for c in range(max(l, r), m):
                    _gram_cell_t(At, cols, w, G, i0, i1, r, c)
            j += 4
        for r in range(j, m):
            for c in range(r, m):
                _gram_cell_t(At, cols, w, G, i0, i1, r, c)
    return mirror_upper(G)


@njit(cache=True)
def _gram_cell_t(At, cols, w, G, i0, i1, j, l):
    """Rows i0..i1-1 added to G[1 + j, 1 + l] (columns cols[j], cols[l] of A)."""
    rj = cols[j]
    rl = cols[l]
    g = G[1 + j, 1 + l]
    for i in range(i0, i1):
        g += (w[i] * At[rj, i]) * At[rl, i]
    G[1 + j, 1 + l] = g


@njit(cache=True)
def _gram_tile_t(At, cols, w, G, i0, i1, j, l):
    """Rows i0..i1-1 added to the 4 x 4 block G[1+j:1+j+4, 1+l:1+l+4] (the
    bias row and column are G's first), each entry its own chain, in
    registers: ``_gram_tile`` reading the columns as rows of At."""
    a0r = cols[j]
    a1r = cols[j + 1]
    a2r = cols[j + 2]
    a3r = cols[j + 3]
    x0r = cols[l]
    x1r = cols[l + 1]
    x2r = cols[l + 2]
    x3r = cols[l + 3]
    o, q = 1 + j, 1 + l
    g00 = G[o, q]
    g01 = G[o, q + 1]
    g02 = G[o, q + 2]
    g03 = G[o, q + 3]
    g10 = G[o + 1, q]
    g11 = G[o + 1, q + 1]
    g12 = G[o + 1, q + 2]
    g13 = G[o + 1, q + 3]
    g20 = G[o + 2, q]
    g21 = G[o + 2, q + 1]
    g22 = G[o + 2, q + 2]
    g23 = G[o + 2, q + 3]
    g30 = G[o + 3, q]
    g31 = G[o + 3, q + 1]
    g32 = G[o + 3, q + 2]
    g33 = G[o + 3, q + 3]
    for i in range(i0, i1):
        wi = w[i]
        a0 = wi * At[a0r, i]
        a1 = wi * At[a1r, i]
        a2 = wi * At[a2r, i]
        a3 = wi * At[a3r, i]
        x0 = At[x0r, i]
        x1 = At[x1r, i]
        x2 = At[x2r, i]
        x3 = At[x3r, i]
        g00 += a0 * x0
        g01 += a0 * x1
        g02 += a0 * x2
        g03 += a0 * x3
        g10 += a1 * x0
        g11 += a1 * x1
        g12 += a1 * x2
        g13 += a1 * x3
        g20 += a2 * x0
        g21 += a2 * x1
        g22 += a2 * x2
        g23 += a2 * x3
        g30 += a3 * x0
        g31 += a3 * x1
        g32 += a3 * x2
        g33 += a3 * x3
    G[o, q] = g00
    G[o, q + 1] = g01
    G[o, q + 2] = g02
    G[o, q + 3] = g03
    G[o + 1, q] = g10
    G[o + 1, q + 1] = g11
    G[o + 1, q + 2] = g12
    G[o + 1, q + 3] = g13
    G[o + 2, q] = g20
    G[o + 2, q + 1] = g21
    G[o + 2, q + 2] = g22
    G[o + 2, q + 3] = g23
    G[o + 3, q] = g30
    G[o + 3, q + 1] = g31
    G[o + 3, q + 2] = g32
    G[o + 3, q + 3] = g33


# ---------------------------------------------------------------- factorisations


@njit(cache=True)
def cholesky(A):
    """Lower Cholesky factor L of a symmetric positive definite A
    (Cholesky-Crout, column by column; each inner product over k ascending).
    Returns (L, ok): ok is False, and L partial, when a pivot is <= 0."""
    n = A.shape[0]
    L = np.zeros((n, n))
    for j in range(n):
        s = A[j, j]
        for k in range(j):
            s -= L[j, k] * L[j, k]
        if not s > 0.0:
            return L, False
        d = np.sqrt(s)
        L[j, j] = d
        for i in range(j + 1, n):
            t = A[i, j]
            for k in range(j):
                t -= L[i, k] * L[j, k]
            L[i, j] = t / d
    return L, True


@njit(cache=True)
def solve_lower(L, B):
    """L X = B by forward substitution (L lower triangular, B [n, r]);
    row i: (B_i - sum_{k<i} L_ik X_k) / L_ii, k ascending."""
    n = L.shape[0]
    r = B.shape[1]
    X = np.empty((n, r))
    for c in range(r):
        for i in range(n):
            s = B[i, c]
            for k in range(i):
                s -= L[i, k] * X[k, c]
            X[i, c] = s / L[i, i]
    return X


@njit(cache=True, inline="always")
def _solve_upper(U, B, n):
    """X [n, r] with U[:n, :n] X = B[:n] by back substitution (U upper
    triangular); row i: (B_i - sum_{k>i} U_ik X_k) / U_ii, k ascending.  The
    last step of :func:`solve_lower_t`, :func:`_lu_solve` and
    :func:`_householder_lstsq`, inlined into each (as a call it cost
    ``cho_solve`` ~19 % on a [300, 300] factor)."""
    r = B.shape[1]
    X = np.empty((n, r))
    for c in range(r):
        for i in range(n - 1, -1, -1):
            s = B[i, c]
            for k in range(i + 1, n):
                s -= U[i, k] * X[k, c]
            X[i, c] = s / U[i, i]
    return X


@njit(cache=True)
def solve_lower_t(L, B):
    """L.T X = B by back substitution (L lower triangular, B [n, r]);
    row i: (B_i - sum_{k>i} L_ki X_k) / L_ii, k ascending: the upper
    triangular solve on the transposed view (the same reads of L)."""
    return _solve_upper(L.T, B, L.shape[0])


@njit(cache=True, inline="always")
def _reflect_columns(Rt, j, v0, vv, Tt, k0):
    """Apply the Householder reflector of column j, H = I - 2 v v' / (v'v)
    with v = (v0, R[j+1:, j]) and v'v = ``vv``, to the columns k0.. of T
    (rows j..; T may be R itself, right of column j): per column,
    s = v0 T_jk + sum_{i>j} R_ij T_ik, i ascending, then T_k -= (2 s / vv) v.
    R and T are stored transposed (``Rt``, ``Tt``: a column is a contiguous
    row), so every sum streams two contiguous rows; in row-major storage each
    step of i was a cache line (at 20k rows x 519 columns, a page) further
    on.  Inlined (as a call it cost ``lstsq`` ~20 % on [2000, 20])."""
    n = Rt.shape[1]
    vj = Rt[j]
    for k in range(k0, Tt.shape[0]):
        tk = Tt[k]
        s = v0 * tk[j]
        for i in range(j + 1, n):
            s += vj[i] * tk[i]
        f = 2.0 * s / vv
        tk[j] -= f * v0
        for i in range(j + 1, n):
            tk[i] -= f * vj[i]


@njit(cache=True)
def _lu_solve(A, B):
    """A X = B by Gaussian elimination with partial pivoting (the first
    largest |pivot| wins); returns (X, ok)."""
    n = A.shape[0]
    r = B.shape[1]
    M = A.copy()
    X = B.copy()
    for j in range(n):
        p = j
        best = abs(M[j, j])
        for i in range(j + 1, n):
            if abs(M[i, j]) > best:
                best = abs(M[i, j])
                p = i
        if best == 0.0:
            return X, False
        if p != j:
            for k in range(n):
                M[j, k], M[p, k] = M[p, k], M[j, k]
            for c in range(r):
                X[j, c], X[p, c] = X[p, c], X[j, c]
        for i in range(j + 1, n):
            f = M[i, j] / M[j, j]
            if f != 0.0:
                for k in range(j, n):
                    M[i, k] -= f * M[j, k]
                for c in range(r):
                    X[i, c] -= f * X[j, c]
    return _solve_upper(M, X, n), True


@njit(cache=True)
def _householder_lstsq(A, B):
    """Least squares, min |A X - B|, for A [n, p] of full column rank (n >= p), by
    Householder QR (columns in order, each reflector's sums over rows
    ascending) and back substitution; returns (X [p, r], ok).  R and the
    right-hand sides are worked on transposed (a column per contiguous row);
    the arithmetic is the row-major loop's, in the same order."""
    n, p = A.shape
    Rt = np.ascontiguousarray(A.T)
    Yt = np.ascontiguousarray(B.T)
    for j in range(p):
        rj = Rt[j]
        nrm = 0.0
        for i in range(j, n):
            nrm += rj[i] * rj[i]
        nrm = np.sqrt(nrm)
        if nrm == 0.0:
            return Yt.T[:p].copy(), False
        alpha = -nrm if rj[j] >= 0.0 else nrm
        v0 = rj[j] - alpha
        # v = (v0, R[j+1:, j]); H = I - 2 v v' / (v'v), v'v = -2 alpha v0
        vv = -2.0 * alpha * v0
        rj[j] = alpha
        _reflect_columns(Rt, j, v0, vv, Rt, j + 1)
        _reflect_columns(Rt, j, v0, vv, Yt, 0)
    return _solve_upper(Rt.T, Yt.T, p), True


# ---------------------------------------------------------------- Python entry points


def _as2d(b):
    b = np.asarray(b, np.float64)
    return np.ascontiguousarray(b[:, None] if b.ndim == 1 else b), b.ndim == 1


def cho_solve(L, b):
    """Solve (L L') x = b for x, L from :func:`cholesky`."""
    B, vec = _as2d(b)
    X = solve_lower_t(L, solve_lower(L, B))
    return X[:, 0] if vec else X


def spd_solve(A, b, jitter=0.0):
    """Solve (A + jitter*s I) x = b for a symmetric positive semi-definite A,
    s the mean of diag(A) (at least the smallest normal float).  When the
    Cholesky factorisation meets a pivot <= 0 the jitter grows tenfold (from
    1e-12 of s if it was 0) until it succeeds, a deterministic sequence, so a
    singular system gets the same answer everywhere."""
    A = np.ascontiguousarray(A, np.float64)
    n = A.shape[0]
    scale = max(float(np.mean(np.diag(A))) if n else 1.0, np.finfo(float).tiny)
    eps = float(jitter)
    idx = np.arange(n)
    for _ in range(40):
        M = A.copy()
        if eps > 0:
            M[idx, idx] += eps * scale
        L, ok = cholesky(M)
        if ok:
            return cho_solve(L, b)
        eps = 1e-12 if eps == 0 else eps * 10.0
    raise np.linalg.LinAlgError("spd_solve: the matrix is not positive semi-definite (non-finite entries?)")


def solve(A, b):
    """Solve A x = b for a square non-singular A (LU, partial pivoting)."""
    B, vec = _as2d(b)
    X, ok = _lu_solve(np.ascontiguousarray(A, np.float64), B)
    if not ok:
        raise np.linalg.LinAlgError("solve: the matrix is singular")
    return X[:, 0] if vec else X


def lstsq(A, b):
    """Least squares for A of full column rank (Householder QR); raises
    LinAlgError on a zero column."""
    B, vec = _as2d(b)
    X, ok = _householder_lstsq(np.ascontiguousarray(A, np.float64), B)
    if not ok:
        raise np.linalg.LinAlgError("lstsq: the matrix does not have full column rank")
    return X[:, 0] if vec else X
