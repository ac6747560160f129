"""Gradient histograms: per (node, feature, bin) sums of g and h, and row
counts, as three separate arrays (measured 40% faster than one interleaved
[F, bins, 3] array: each add then has its own dependency chain).

The grower builds the histograms of a whole tree level in one call (one
parallel region per level, not one per node: on a loaded or many-core
machine every region's launch and barrier is paid by all threads).  Threads
split the features; a thread streams every node's rows through its
feature's column, so the column stays in cache across the level's nodes.
Each (node, feature, bin) sum adds its rows in row order, one thread per
feature, whatever the thread count: the model bytes do not depend on it.

The node's g and h are first gathered into row order, so a feature pass
makes one random access per row (its bin) instead of three.

Sparse features (LTR data: most rows an exact zero) put most rows in one
bin, and adding row after row into the same memory slot waits on the
previous store each time.  For such a feature the grower names its "hot"
bin; that bin's sums are kept in registers, adding the row's g (or +0.0,
which changes no sum: one that starts at +0.0 is never -0.0) on every row,
so each bin still sums its rows in row order, bit for bit (measured 1.8x on
a 60 %-zero column).
"""
import numpy as np
from numba import njit, prange

N_SLOTS = 256  # 255 value bins + the missing bin (uint8 data; wider data: flat_offsets)
# row counts as int32, as the row indices are (N < 2**31): exact, and 5-10% faster than int64 (measured)
COUNT = np.int32
_N_SPARE = 8   # scratch slots the hot bin's rows write to, in turn, instead of the hot slot
_HOT_SHARE = 0.15   # a bin with this share of the sampled rows is kept in registers
_HOT_SAMPLE = 4096  # rows sampled (the first ones) to find a feature's hot bin
_ROW_BLOCK = 8192   # rows whose g and h (128 KB) a group of features adds while they sit in L2
_GROUP = 32         # features per group at most: their histograms (32 x 5 KB) stay in L2 too


@njit(cache=True, inline="always")
def _accumulate(col, rows, og, oh, a, b2, c, dense):
    # two rows per step: their adds are independent, so when the two bins
    # differ (almost always) the CPU overlaps them (measured 15%).  ``dense``
    # (the root over all rows) reads the column in order, no indirection.
    n = og.shape[0]
    i = 0
    while i + 1 < n:
        b = col[i] if dense else col[rows[i]]
        bb = col[i + 1] if dense else col[rows[i + 1]]
        a[b] += og[i]
        b2[b] += oh[i]
        c[b] += 1
        a[bb] += og[i + 1]
        b2[bb] += oh[i + 1]
        c[bb] += 1
        i += 2
    if i < n:
        b = col[i] if dense else col[rows[i]]
        a[b] += og[i]
        b2[b] += oh[i]
        c[b] += 1


@njit(cache=True, inline="always")
def _accumulate_unit(col, rows, og, a, c, dense):
    """``_accumulate`` when every hessian is 1.0 (squared loss, unit
    weights): sum h of a bin is its row count, exactly (integers below
    2**53), so only g and the count are added (``build_level``)."""
    n = og.shape[0]
    i = 0
    while i + 1 < n:
        b = col[i] if dense else col[rows[i]]
        bb = col[i + 1] if dense else col[rows[i + 1]]
        a[b] += og[i]
        c[b] += 1
        a[bb] += og[i + 1]
        c[bb] += 1
        i += 2
    if i < n:
        b = col[i] if dense else col[rows[i]]
        a[b] += og[i]
        c[b] += 1


@njit(cache=True, inline="always")
def _accumulate_nocount(col, og, oh, a, b2, unit_h):
    """``_accumulate`` over all rows in order (the root) without the
    counts, which the root has whatever the gradients (``bin_counts``);
    with ``unit_h`` only g is added."""
    n = og.shape[0]
    i = 0
    while i + 1 < n:
        b = col[i]
        bb = col[i + 1]
        a[b] += og[i]
        a[bb] += og[i + 1]
        if not unit_h:
            b2[b] += oh[i]
            b2[bb] += oh[i + 1]
        i += 2
    if i < n:
        a[col[i]] += og[i]
        if not unit_h:
            b2[col[i]] += oh[i]


@njit(cache=True, parallel=True)
def bin_counts(binned):
    """Rows per (feature, bin) over all rows, int32 [F, 256] (uint8 data):
    the root's count histograms, the same for every tree of a fit without
    row subsampling, so ``build_level`` copies them instead of counting."""
    F, N = binned.shape
    out = np.zeros((F, N_SLOTS), COUNT)
    for f in prange(F):
        c = out[f]
        col = binned[f]
        for i in range(N):
            c[col[i]] += 1
    return out


@njit(cache=True, inline="always")
def _accumulate_hot(col, rows, og, oh, a, b2, c, dense, z):
    """``_accumulate`` into [256 + _N_SPARE] arrays, bin ``z``'s sums in
    registers: a row of bin z adds to a spare slot (in turn, so no two
    nearby rows wait on one slot) and to the registers, any other row adds
    +0.0 to the registers and its g to its bin.  Then a[z] = the registers."""
    n = og.shape[0]
    ag = a[z]   # 0 at a node's first block; the sums so far at the next ones
    ah = b2[z]
    ac = c[z]
    for i in range(n):
        b = np.int64(col[i] if dense else col[rows[i]])
        hot = b == z
        t = N_SLOTS + (i & (_N_SPARE - 1)) if hot else b
        x = og[i]
        y = oh[i]
        a[t] += x
        b2[t] += y
        c[t] += 1
        ag += x if hot else 0.0
        ah += y if hot else 0.0
        ac += hot
    a[z] = ag
    b2[z] = ah
    c[z] = ac


@njit(cache=True, parallel=True)
def hot_bins(binned):
    """Per feature, the bin holding at least _HOT_SHARE of the first
    _HOT_SAMPLE rows (-1: none).  Only speed depends on it, never a sum."""
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
    node, gathered g, gathered h)."""
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
def build_level(binned, order, starts, stops, slots, g, h, active, hot, hg, hh, hc, unit_h=False, root_counts=None):
    """Histograms of the nodes ``order[starts[k]:stops[k]]`` (each range
    sorted, unique) into ``hg[slots[k]]``, ``hh[slots[k]]``, ``hc[slots[k]]``
    ([F, width] each, the width of ``hg``); inactive features are left at zero.  ``hot[f]`` is
    feature f's bin kept in registers (-1: none; ``hot_bins``); only histograms
    256 wide (uint8 data) keep one: the spare slots' constant offset is worth
    10% of this kernel (measured: the width as a variable there cost 1.8 ->
    2.0 ms on 100k x 20, one thread).  ``unit_h``: every h is 1.0 (the
    caller checked), so sum h is the row count, copied from it instead of
    added (the same float: the count is exact; features without a hot bin).
    ``root_counts``: ``bin_counts(binned)``, copied into a node over all N
    rows instead of counted (measured 12% of the adds on 50k x 100)."""
    F, N = binned.shape
    K = starts.shape[0]
    W = hg.shape[2]
    keep_hot = W == N_SLOTS
    off, og, oh = _gather_node_gradients(order, starts, stops, g, h, N)
    # threads take groups of features; a group walks the node's rows in
    # blocks, each block's gradients staying in L2 while every feature of the
    # group adds it (measured 20% faster than one feature over all rows).
    # Blocks go in row order, so every bin still sums its rows in row order.
    per = max(1, min(_GROUP, F // 16))   # at least 16 groups: work for 16 threads
    for q in prange((F + per - 1) // per):
        f0, f1 = q * per, min(F, (q + 1) * per)
        # hot features sum into scratch rows with spare slots, copied out per node
        scratch = np.empty((3, f1 - f0, W + _N_SPARE))
        counts = np.empty((f1 - f0, W + _N_SPARE), COUNT)
        for k in range(K):
            s = slots[k]
            hg[s, f0:f1, :] = 0.0
            hh[s, f0:f1, :] = 0.0
            hc[s, f0:f1, :] = 0
            scratch[:] = 0.0
            counts[:] = 0
            n = stops[k] - starts[k]
            dense = n == N
            for i0 in range(0, n, _ROW_BLOCK):
                i1 = min(n, i0 + _ROW_BLOCK)
                rows = order[starts[k] + i0:starts[k] + i1]
                ng, nh = (g[i0:i1], h[i0:i1]) if dense else (og[off[k] + i0:off[k] + i1], oh[off[k] + i0:off[k] + i1])
                for f in range(f0, f1):
                    if not active[f]:
                        continue
                    # the dense root reads its block of the column in order
                    col = binned[f, i0:i1] if dense else binned[f]
                    if dense and root_counts is not None and (hot[f] < 0 or not keep_hot):
                        _accumulate_nocount(col, ng, nh, hg[s, f], hh[s, f], unit_h)
                    elif unit_h and (hot[f] < 0 or not keep_hot):
                        _accumulate_unit(col, rows, ng, hg[s, f], hc[s, f], dense)
                    elif hot[f] < 0 or not keep_hot:
                        _accumulate(col, rows, ng, nh, hg[s, f], hh[s, f], hc[s, f], dense)
                    else:
                        _accumulate_hot(col, rows, ng, nh, scratch[0, f - f0], scratch[1, f - f0],
                                        counts[f - f0], dense, hot[f])
            for f in range(f0, f1):
                if active[f] and hot[f] >= 0 and keep_hot:
                    hg[s, f, :] = scratch[0, f - f0, :W]
                    hh[s, f, :] = scratch[1, f - f0, :W]
                    hc[s, f, :] = counts[f - f0, :W]
                elif active[f]:
                    if dense and root_counts is not None:
                        hc[s, f, :] = root_counts[f, :W]
                    if unit_h:
                        for b in range(W):
                            hh[s, f, b] = hc[s, f, b]


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
    """``_accumulate`` into one feature's flat slots: a bin beyond them (the
    shared uint16 missing bin, ``n_slots - 1``) goes to its last slot."""
    last = a.shape[0] - 1
    n = og.shape[0]
    i = 0
    while i + 1 < n:   # two rows per step, as _accumulate
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
