"""Gradient histograms: per (node, feature, bin) sums of g and h, and row
counts, as three separate arrays.  The uint8 kernel (``build_level``) sums
each bin's (g, h, count) as one float64 vector of four while it builds
(``simd.add4``: one load and store a row, not three of each), then copies
them out.

The grower builds the histograms of a whole tree level in one call (one
parallel region per level, not one per node: on a loaded or many-core
machine every region's launch and barrier is paid by all threads).  Threads
split the features; a thread streams every node's rows through its
feature's column, so the column stays in cache across the level's nodes.
Each (node, feature, bin) sum adds its rows in row order, one thread per
feature, whatever the thread count: the model bytes do not depend on it
(a sparse feature's hot bin, below, is the one exception, and it does not
depend on the thread count either).

The node's g and h are first gathered into row order (as (g, h, 1, 0)
vectors), so a feature pass makes one random access per row (its bin)
instead of three.

Features are added two at a time (``_accumulate4_pair``): one pass over a
node's rows reads each row's vector once and adds it to both features'
bins (``simd.add4x2``), so the row's index and vector loads are paid once
for two features.  Each feature's bins still add their rows in row order,
so the bits are those of one feature at a time.  Measured on the levels
of one tree at 473k x 519 (one thread, the same inputs, interleaved):
472 -> 386 ms CPU, the root 160 -> 131, the gathered levels 10-20 % each.
Four at a time was slower (the root 186 against 139 ms; on the gathered
levels 429 against 392 ms a tree: four columns no longer stay in L2
across a level's nodes), three too.  Gathering only
(g, h) and putting in the 1 and 0 by a shuffle (16 bytes a row, not 32)
changed nothing measurable.

Sparse features (LTR data: most rows an exact zero) put most rows in one
bin, and adding row after row into the same memory slot waits on the
previous store each time.  For such a feature the grower names its "hot"
bin (``hot_bins``); a row of that bin adds its vector to one of eight
spare slots instead, the row at position p of the node to spare p mod 8,
and once the node is done the bin is the sum of the eight spares in slot
order (``_hot_from_spares``).  Each spare sums its rows in row order, one
thread per feature, so the bits do not depend on the thread count; the
hot bin's sums of g and h are those of its rows in that interleaved order
instead of row order (the count is exact either way), so they round
differently (a model changes where two split gains nearly tie: two of
the pinned models moved), but they are sums of the bin's own rows:
a bin whose rows all have g = h = 0 sums to exactly 0.  (Filling it as the
node's totals minus the other bins, as LightGBM does, left ~1e-7 there
and a split with H = 0 and an infinite leaf.)  Before, the hot bin's sums
were kept in registers in row order, three float adds a row on top of the
vector add: 1.28 against 0.66 ns per row and feature on the root of a
57 %-zero column (``benchmarks/bench_hot_bin.py``), 20.6 -> 16.4 s CPU for
20 trees at 473k x 519, one thread.
"""
import numpy as np
from numba import get_num_threads, njit, prange

from ..simd import add4, add4x2

N_SLOTS = 256  # 255 value bins + the missing bin (uint8 data; wider data: flat_offsets)
# row counts as int32, as the row indices are (N < 2**31): exact, and 5-10% faster than int64 (measured)
COUNT = np.int32
_N_SPARE = 8   # scratch slots the hot bin's rows write to, in turn, instead of the hot slot
_HOT_SHARE = 0.15   # a bin with this share of the sampled rows is hot (summed through the spare slots)
_HOT_SAMPLE = 4096  # rows sampled (the first ones) to find a feature's hot bin
_ROW_BLOCK = 8192   # rows whose (g, h, 1, 0) vectors (256 KB) a group of features adds while they sit in L2
_ROW_WISE_SHARE = 64  # nodes of at most N / this many rows are added row-wise (build_level's ``rowmajor``)
# bins larger than this get a row-major copy (``row_major``): off (2**62 bytes) since the feature-by-feature
# column passes of a level (473k x 519, 6 trees: deepest level 1.48 s CPU with it at 1/64, 0.55 s without)
_ROW_WISE_BYTES = 1 << 62
_GROUP = 32         # features per group at most: their vector histograms (32 x 8 KB) stay in L2 too


@njit(cache=True, parallel=True)
def hot_bins(binned):
    """Per feature, the bin holding at least _HOT_SHARE of the first
    _HOT_SAMPLE rows (-1: none).  A hot bin's sums are added in another
    order than the other bins' (``_hot_from_spares``), so the model bytes
    depend on which bins are hot: changing _HOT_SHARE or _HOT_SAMPLE may
    move pinned models."""
    F, N = binned.shape
    n = min(N, _HOT_SAMPLE)
    hot = np.full(F, -1, np.int64)
    for f in prange(F):
        top = 0
        for i in range(n):
            top = max(top, np.int64(binned[f, i]))
        counts = np.zeros(top + 1, np.int64)
        for i in range(n):
            counts[binned[f, i]] += 1
        b = np.argmax(counts)
        if n > 0 and counts[b] >= _HOT_SHARE * n:
            hot[f] = b
    return hot


def new_level(n_nodes, n_features, workspace=None, key=0, width=N_SLOTS):
    """Uninitialised (sum g, sum h, count) arrays [n_nodes, F, width] for one
    level (``width``: 256 for uint8 data, which the grower builds here;
    uint16 data: ``new_flat_level``);
    ``build_level`` and ``subtract_level`` write every slot they fill.

    With a ``workspace`` (a dict kept across the trees of a fit) they are
    views of buffers stored there under ``key`` (the grower alternates two
    keys: a level reads its parents' while it writes its own), grown when
    too small: a deep level of a wide data set is over 100 MB, and fresh
    memory of that size is mapped and zeroed page by page by the kernel on
    every level (measured 50-80 ms per level at 473k x 519, 5 ms reused)."""
    if workspace is None:
        return (np.empty((n_nodes, n_features, width)), np.empty((n_nodes, n_features, width)),
                np.empty((n_nodes, n_features, width), COUNT))
    buf = workspace.get(key)
    if buf is None or buf[0].ndim != 3 or buf[0].shape[0] < n_nodes or buf[0].shape[1:] != (n_features, width):
        grow = 0 if buf is None or buf[0].ndim != 3 else buf[0].shape[0]
        buf = workspace[key] = new_level(max(n_nodes, 2 * grow), n_features, width=width)
    return tuple(a[:n_nodes] for a in buf)


@njit(cache=True, parallel=True)
def _gather_node_gradients(order, starts, stops, g, h, N):
    """Each node's gradients and hessians in its row order ``order[starts[k]:
    stops[k]]``, gathered once per level so that every feature pass reads them
    in order; a node over all N rows (the root, rows[i] == i) reads g and h
    directly and gets no copy.  Returns (offsets into the gathered arrays per
    node, gathered g, gathered h).  (The flat histograms' kernel.)"""
    K = starts.shape[0]
    off = np.zeros(K + 1, np.int64)
    for k in range(K):
        off[k + 1] = off[k] + (0 if stops[k] - starts[k] == N else stops[k] - starts[k])
    og = np.empty(off[K])
    oh = np.empty(off[K])
    for k in prange(K):
        o = off[k]
        if stops[k] - starts[k] < N:
            for i in range(starts[k], stops[k]):
                og[o + i - starts[k]] = g[order[i]]
                oh[o + i - starts[k]] = h[order[i]]
    return off, og, oh


@njit(cache=True, parallel=True)
def _gather_lanes(order, starts, stops, g, h, N):
    """Each node's rows, in its order ``order[starts[k]:stops[k]]``, as
    (g, h, 1.0, 0.0) float64 quadruples: the vector every histogram add of
    the row adds (``simd.add4``); gathered once per level, so a feature pass
    reads them in order.  A node over all N rows is rows 0..N-1 in order,
    as ``build_level`` reads its columns.  Returns (offsets per node,
    [rows, 4] array)."""
    K = starts.shape[0]
    off = np.zeros(K + 1, np.int64)
    for k in range(K):
        off[k + 1] = off[k] + stops[k] - starts[k]
    lanes = np.empty((off[K], 4))
    for k in prange(K):
        o = off[k] - starts[k]
        dense = stops[k] - starts[k] == N
        for i in range(starts[k], stops[k]):
            r = i - starts[k] if dense else order[i]
            lanes[o + i, 0] = g[r]
            lanes[o + i, 1] = h[r]
            lanes[o + i, 2] = 1.0
            lanes[o + i, 3] = 0.0
    return off, lanes


@njit(cache=True, inline="always")
def _accumulate4(col, rows, lanes, acc, dense):
    """Every row's (g, h, 1, 0) into its bin's four sums ``acc[bin]``, in
    row order, one vector add a row.  ``dense`` (the root over all rows)
    reads the column in order, no indirection."""
    for i in range(lanes.shape[0]):
        add4(acc, col[i] if dense else col[rows[i]], lanes, i)


@njit(cache=True, inline="always")
def _slot(b, z, i):
    """Where the row at position i of a node adds its vector: its bin ``b``,
    or spare slot i mod 8 when that is the feature's hot bin ``z`` (-1:
    none, as no bin is -1)."""
    return N_SLOTS + (i & (_N_SPARE - 1)) if b == z else b


@njit(cache=True, inline="always")
def _store_sums(acc, hot_bin, hg, hh, hc, s, f):
    """One feature's sums ``acc`` into node slot ``s`` of the level's
    histograms, its hot bin first filled from the spare slots (``hot_bin``
    -1: none)."""
    if hot_bin >= 0:
        _hot_from_spares(acc, hot_bin)
    for b in range(hg.shape[2]):
        hg[s, f, b] = acc[b, 0]
        hh[s, f, b] = acc[b, 1]
        hc[s, f, b] = COUNT(acc[b, 2])


@njit(cache=True, inline="always")
def _accumulate4_hot(col, rows, lanes, acc, dense, z):
    """``_accumulate4`` for a feature with hot bin ``z``: the row at position
    i adds its vector to spare slot i mod 8 if its bin is z (in turn, so no
    two nearby rows wait on one slot: a select, not a branch, which would
    mispredict on a share of the rows); bin z is filled afterwards by
    ``_hot_from_spares``.  ``lanes`` starts at a multiple of 8 rows of the
    node (its row blocks are _ROW_BLOCK long), so i mod 8 is the row's
    position in the node mod 8."""
    for i in range(lanes.shape[0]):
        add4(acc, _slot(np.int64(col[i] if dense else col[rows[i]]), z, i), lanes, i)


@njit(cache=True, inline="always")
def _hot_from_spares(acc, z):
    """Hot bin ``z`` of one feature's sums ``acc`` [N_SLOTS + _N_SPARE, 4]:
    the sum of the spare slots, in slot order (spare t holds the bin's rows
    at positions t mod 8, each added in row order).  An empty bin gets +0.0
    sums, as a summed empty bin has; the count is exact."""
    for j in range(3):
        t = 0.0
        for k in range(_N_SPARE):
            t += acc[N_SLOTS + k, j]
        acc[z, j] = t


@njit(cache=True, inline="always")
def _accumulate4_pair(col_a, col_b, rows, lanes, acc_a, acc_b, dense, za, zb):
    """``_accumulate4_hot`` of two features in one pass over the rows (hot
    bin -1: none, as no bin is -1): each row's index and vector are loaded
    once for both (``simd.add4x2``).  Each feature's bins add their rows in
    row order and its hot rows go to spare slot i mod 8, as alone: the same
    bits."""
    for i in range(lanes.shape[0]):
        r = i if dense else rows[i]
        add4x2(acc_a, _slot(np.int64(col_a[r]), za, i), acc_b, _slot(np.int64(col_b[r]), zb, i), lanes, i)


def _n_groups(F, n_threads):
    """How many groups of features ``build_level`` splits F into: at least 16
    (work for 16 threads; F when fewer), at most _GROUP features each, and a
    multiple of the thread count, so that every thread gets as many features
    (groups differ by one feature at most).  Before, 100 features were 17
    groups of 6: at two threads one did 54 features, the other 46.  The
    grouping changes no sum (each feature is added by one thread, in row
    order)."""
    n = max(-(-F // _GROUP), min(F, 16))
    n = -(-n // n_threads) * n_threads
    return max(1, min(n, F))


def build_level(binned, order, starts, stops, slots, g, h, active, hot, hg, hh, hc, rowmajor=None):
    """Histograms of the nodes ``order[starts[k]:stops[k]]`` (each range
    sorted, unique) into ``hg[slots[k]]``, ``hh[slots[k]]``, ``hc[slots[k]]``
    ([F, width] each, the width of ``hg``); inactive features are left at zero.  ``hot[f]`` is
    feature f's hot bin, summed through the spare slots (-1: none; ``hot_bins``); only histograms
    256 wide (uint8 data) have one.

    Each row adds (g, h, 1.0, 0.0) to its bin's four float64 sums in one
    vector add (``simd.add4``): one load and one store where three separate
    sums took three of each (measured 1.19 -> 0.89 ns per row and feature,
    one thread, 100k of 200k rows).  The count is summed as a float64 (exact
    below 2**53) and stored as an int32.  Every sum but a hot bin's adds its
    rows in row order, as before, so those keep their bits; the special cases
    the three separate sums needed (unit hessians, whose sum h was copied
    from the count, and the root's counts, copied from a once-per-fit
    count) are no faster than the one vector add, and are gone.

    ``rowmajor``: the same bins as an [N, F] array (``row_major``), or None.
    With it, a node of at most N / _ROW_WISE_SHARE rows is added row by row,
    each row's bins of the group's features read from one cache line, where
    a column pass reads one line of each column per row: when the columns
    do not fit in the cache (473k x 519, 245 MB) a deep node's column reads
    miss to memory (measured 8.0 -> 2.9 ns per row and feature at 1/64 of
    the rows; slower than columns at 1/8).  Each bin still adds its rows in
    row order, and a hot bin's rows go to the spare slots by position, as on
    the column passes, so both paths give the same bits.
    Since the column passes below go feature by feature, the copy is off by
    default (``_ROW_WISE_BYTES``): it no longer pays.

    A level's gathered nodes (not the dense root) take their column passes
    one feature (now a pair, ``_accumulate4_pair``) at a time through every
    node: the feature's column (N bytes: 473 KB at Yahoo size) stays in L2
    across the level's nodes, where node by node the group's columns (32 x N bytes)
    were read again from L3 or memory for each node and row block.  At
    473k x 519 (one thread, 6 trees) the four deepest levels took 1.9 s CPU
    instead of 4.6 s (with the row-major copy at 1/64 of the rows).  The
    dense root keeps the row blocks outer: its lanes stay in L2 while every
    feature of the group (a pair at a time) adds them (measured 20 % faster).
    In either pass the features pair up in order within a thread's group,
    whatever the thread count; pairing changes no sum."""
    if rowmajor is None:
        rowmajor, below = np.zeros((1, 1), np.uint8), 0
    else:
        below = binned.shape[1] // _ROW_WISE_SHARE + 1
    _build_level(binned, order, starts, stops, slots, g, h, active, hot, hg, hh, hc,
                 _n_groups(binned.shape[0], get_num_threads()), rowmajor, below)


@njit(cache=True, parallel=True)
def _build_level(binned, order, starts, stops, slots, g, h, active, hot, hg, hh, hc, n_groups, rowmajor, below):
    F, N = binned.shape
    K = starts.shape[0]
    W = hg.shape[2]
    # each feature's hot bin, -1 for none; only 256-wide (uint8) histograms keep one
    zs = hot if W == N_SLOTS else np.full(F, -1, np.int64)
    off, lanes = _gather_lanes(order, starts, stops, g, h, N)
    # threads take groups of features; a group walks the node's rows in
    # blocks, each block's vectors staying in L2 while every feature of the
    # group adds it (measured 20% faster than one feature over all rows).
    # Blocks go in row order, so every bin still sums its rows in row order
    # (a hot bin from its spare slots once its node is done).
    for q in prange(n_groups):
        f0, f1 = q * F // n_groups, (q + 1) * F // n_groups
        # per feature (sum g, sum h, count, unused) per bin, then the hot bin's spare slots
        acc = np.empty((f1 - f0, W + _N_SPARE, 4))
        for k in range(K):
            s = slots[k]
            n = stops[k] - starts[k]
            if n >= below and n < N:
                continue   # a gathered node: the column pass below
            acc[:] = 0.0
            dense = n == N
            if n < below:   # a small node: row by row from the [N, F] copy (build_level)
                rws = order[starts[k]:stops[k]]
                blk = lanes[off[k]:off[k] + n]
                for i in range(n):
                    r = rws[i]
                    for f in range(f0, f1):
                        if active[f]:
                            # a hot row to its spare, as the column passes
                            add4(acc[f - f0], _slot(np.int64(rowmajor[r, f]), zs[f], i), blk, i)
                n = 0   # no column pass
            for i0 in range(0, n, _ROW_BLOCK):
                i1 = min(n, i0 + _ROW_BLOCK)
                rows = order[starts[k] + i0:starts[k] + i1]
                block = lanes[off[k] + i0:off[k] + i1]
                fa = -1   # an active feature waiting for a partner
                for f in range(f0, f1):
                    if not active[f]:
                        continue
                    if fa < 0:
                        fa = f
                        continue
                    # the dense root reads its block of the columns in order
                    _accumulate4_pair(binned[fa, i0:i1] if dense else binned[fa],
                                      binned[f, i0:i1] if dense else binned[f], rows, block,
                                      acc[fa - f0], acc[f - f0], dense, zs[fa], zs[f])
                    fa = -1
                if fa >= 0:
                    col = binned[fa, i0:i1] if dense else binned[fa]
                    if zs[fa] < 0:
                        _accumulate4(col, rows, block, acc[fa - f0], dense)
                    else:
                        _accumulate4_hot(col, rows, block, acc[fa - f0], dense, zs[fa])
            for f in range(f0, f1):
                _store_sums(acc[f - f0], zs[f] if active[f] else -1, hg, hh, hc, s, f)
        # gathered nodes: a pair of features at a time through every node, so their columns stay in L2 across
        # the level
        for fa in range(f0, f1, 2):
            fb = min(fa + 1, f1 - 1)   # fb == fa: an odd group's last feature alone
            for k in range(K):
                n = stops[k] - starts[k]
                if n < below or n == N:
                    continue
                s = slots[k]
                acc[fa - f0] = 0.0
                acc[fb - f0] = 0.0
                rows = order[starts[k]:stops[k]]
                block = lanes[off[k]:off[k] + n]
                if fb > fa and active[fa] and active[fb]:
                    _accumulate4_pair(binned[fa], binned[fb], rows, block, acc[fa - f0], acc[fb - f0], False,
                                      zs[fa], zs[fb])
                else:
                    for f in range(fa, fb + 1):
                        if active[f]:
                            _accumulate4_hot(binned[f], rows, block, acc[f - f0], False, zs[f])
                for f in range(fa, fb + 1):
                    _store_sums(acc[f - f0], zs[f] if active[f] else -1, hg, hh, hc, s, f)


def row_major(binned):
    """The [F, N] uint8 bins as an [N, F] copy when they are larger than
    _ROW_WISE_BYTES (columns that stay in the cache gain nothing from it),
    else None: ``build_level``'s ``rowmajor``."""
    if binned.dtype != np.uint8 or binned.nbytes <= _ROW_WISE_BYTES:
        return None
    return np.ascontiguousarray(binned.T)


def subtract_level(pg, ph, pc, parents, hg, hh, hc, smalls, bigs):
    """The subtraction trick for a level: node ``bigs[q]``'s histograms are
    its parent's (``parents[q]`` in the previous level's p arrays) minus
    its built sibling's (``smalls[q]``).  [nodes, F, width] histograms are
    flat ones whose feature f owns slots f*width:(f+1)*width, so
    ``subtract_flat_level`` serves both layouts."""
    F, W = hg.shape[1], hg.shape[2]
    flat = [a.reshape(a.shape[0], F * W) for a in (pg, ph, pc, hg, hh, hc)]
    subtract_flat_level(*flat[:3], parents, *flat[3:], smalls, bigs, np.arange(F + 1, dtype=np.int64) * W)


# ------------------------------------------------ per-feature widths (uint16 data)
# When one categorical feature needs more than 255 bins, every feature is
# stored as uint16 (``binning.widen``) but each keeps its own histogram width
# ``n_bins[f] + 1`` (its value bins, then its missing slot), at
# ``offsets[f]:offsets[f + 1]`` of one flat [nodes, offsets[F]] array per sum,
# as LightGBM lays out its histograms: the memory and the work grow with the
# wide feature's bins, not with F x its bins (measured, 20k rows, 300 numeric
# features + one 4,000-category column, 10 trees of depth 6, one thread:
# 4.4 s and 1,387 MB peak with [F, n_slots] histograms, 1.3 s and 446 MB flat;
# 1.2 s and 437 MB with 200 categories, uint8).
# Each slot sums the same rows in the same order as a [F, n_slots] histogram
# would, so the models are the same bytes.


def flat_offsets(n_bins):
    """int64 [F + 1]: feature f's slots are ``offsets[f]:offsets[f + 1]``,
    ``n_bins[f] + 1`` of them (the last one its missing slot)."""
    out = np.zeros(len(n_bins) + 1, np.int64)
    np.cumsum(np.asarray(n_bins, np.int64) + 1, out=out[1:])
    return out


def new_flat_level(n_nodes, total, workspace=None, key=0):
    """``new_level`` for flat histograms: (sum g, sum h, count) [n_nodes, total]
    (``total = flat_offsets(n_bins)[-1]``), kept in ``workspace`` alike."""
    if workspace is None:
        return np.empty((n_nodes, total)), np.empty((n_nodes, total)), np.empty((n_nodes, total), COUNT)
    buf = workspace.get(key)
    if buf is None or buf[0].ndim != 2 or buf[0].shape[0] < n_nodes or buf[0].shape[1] != total:
        grow = 0 if buf is None or buf[0].ndim != 2 else buf[0].shape[0]
        buf = workspace[key] = new_flat_level(max(n_nodes, 2 * grow), total)
    return tuple(a[:n_nodes] for a in buf)


@njit(cache=True, inline="always")
def _accumulate_capped(col, rows, og, oh, a, b2, c, dense):
    """Every row's g, h and 1 into its bin of one feature's flat slots, in
    row order; a bin beyond them (the shared uint16 missing bin, ``n_slots -
    1``) goes to its last slot.  ``dense``: rows are 0..n-1 (the root)."""
    last = a.shape[0] - 1
    n = og.shape[0]
    i = 0
    while i + 1 < n:   # two rows per step: their adds are independent, so the CPU overlaps them
        b = min(np.int64(col[i] if dense else col[rows[i]]), last)
        bb = min(np.int64(col[i + 1] if dense else col[rows[i + 1]]), last)
        a[b] += og[i]
        b2[b] += oh[i]
        c[b] += 1
        a[bb] += og[i + 1]
        b2[bb] += oh[i + 1]
        c[bb] += 1
        i += 2
    if i < n:
        b = min(np.int64(col[i] if dense else col[rows[i]]), last)
        a[b] += og[i]
        b2[b] += oh[i]
        c[b] += 1


@njit(cache=True, parallel=True)
def build_flat_level(binned, order, starts, stops, slots, g, h, active, offsets, hg, hh, hc):
    """``build_level`` into flat histograms (feature f at ``hg[slot,
    offsets[f]:offsets[f + 1]]``); no hot bins (as uint16 data before).
    Every slot adds its rows in row order, as ``build_level`` does."""
    F, N = binned.shape
    K = starts.shape[0]
    off, og, oh = _gather_node_gradients(order, starts, stops, g, h, N)
    per = max(1, min(_GROUP, F // 16))
    for q in prange((F + per - 1) // per):
        f0, f1 = q * per, min(F, (q + 1) * per)
        lo, hi = offsets[f0], offsets[f1]
        for k in range(K):
            s = slots[k]
            hg[s, lo:hi] = 0.0
            hh[s, lo:hi] = 0.0
            hc[s, lo:hi] = 0
            n = stops[k] - starts[k]
            dense = n == N
            for i0 in range(0, n, _ROW_BLOCK):
                i1 = min(n, i0 + _ROW_BLOCK)
                rows = order[starts[k] + i0:starts[k] + i1]
                ng, nh = (g[i0:i1], h[i0:i1]) if dense else (og[off[k] + i0:off[k] + i1], oh[off[k] + i0:off[k] + i1])
                for f in range(f0, f1):
                    if not active[f]:
                        continue
                    col = binned[f, i0:i1] if dense else binned[f]
                    a, b = offsets[f], offsets[f + 1]
                    _accumulate_capped(col, rows, ng, nh, hg[s, a:b], hh[s, a:b], hc[s, a:b], dense)


@njit(cache=True, parallel=True)
def subtract_flat_level(pg, ph, pc, parents, hg, hh, hc, smalls, bigs, offsets):
    """``subtract_level`` for flat histograms."""
    F = offsets.shape[0] - 1
    for t in prange(parents.shape[0] * F):
        q, f = t // F, t % F
        p, s, b = parents[q], smalls[q], bigs[q]
        for j in range(offsets[f], offsets[f + 1]):
            hg[b, j] = pg[p, j] - hg[s, j]
            hh[b, j] = ph[p, j] - hh[s, j]
            hc[b, j] = pc[p, j] - hc[s, j]


def build_histograms(binned, rows, g, h, active, hot=None, width=N_SLOTS):
    """(sum g, sum h, count), each [F, width], over ``rows`` (sorted, unique):
    one node, as ``build_level`` builds each (no hot bins by default)."""
    hist = new_level(1, binned.shape[0], width=width)
    first = np.zeros(1, np.int64)   # the one node's start and slot
    hot = np.full(binned.shape[0], -1, np.int64) if hot is None else hot
    build_level(binned, rows, first, np.array([rows.shape[0]], np.int64), first, g, h, active, hot, *hist)
    return tuple(a[0] for a in hist)


@njit(cache=True)
def node_sums(rows, g, h):
    """(G, H, N) of the rows: the root's sums (children get theirs from the
    split).  Serial on purpose: a parallel reduction's rounding depends on
    the thread count, and the model bytes must not (one pass per tree)."""
    G = 0.0
    H = 0.0
    for i in range(rows.shape[0]):
        G += g[rows[i]]
        H += h[rows[i]]
    return G, H, float(rows.shape[0])
