"""Feature binning: at most 255 value bins per feature plus a missing bin.

Thresholds are float32 *data values* (quantiles picked from the sorted
column), and bin(x) is the first threshold index t_i with x <= t_i, so a
split "bin <= b" is exactly the IR test ``x <= t_b`` on float32 inputs.

Binned data are uint8 [F, N], the missing bin 255, histograms 256 slots
wide.  A categorical feature may need more bins (``category_counts``, as
LightGBM's bin mapper: its frequent categories up to 99% of the rows); then,
and only then, every feature is stored as uint16, NaN in bin ``n_slots - 1``
= (the most bins of any feature), the bin the category sets and partition
read (``widen``); the histograms are then flat, feature f only
``n_bins[f] + 1`` slots wide, its missing slot last
(``histogram.flat_offsets``), so their memory and work grow with the wide
feature's bins, not with F x its bins.  Numeric data keep the uint8
kernels, their speed and their models' bytes.
"""
from concurrent.futures import ThreadPoolExecutor

import numpy as np
from numba import get_num_threads, njit, prange

MISSING_BIN = 255          # NaN
MAX_BINS = 255             # value bins 0..254: at most 254 thresholds
#: at most this many categories of one feature get a bin (uint16 data; LightGBM's cap), so one feature's
#: histograms are at most 4096 slots x 20 bytes per node
MAX_CATEGORY_BINS = 4094
CATEGORY_SHARE = 0.99      # LightGBM's bin mapper: more categories while the kept cover less than this
MIN_CATEGORY_ROWS = 3      # ... and the next has at least this many rows (LightGBM's min_data_in_bin)


def n_slots(binned, n_bins) -> int:
    """The histogram width of binned data: 256 for uint8 (missing bin 255),
    else (the most bins of any feature) + 1, the missing bin last."""
    return 256 if binned.dtype == np.uint8 else int(np.max(n_bins)) + 1


def widen(binned, width):
    """uint8 binned data as uint16 with the missing bin moved to ``width - 1``."""
    out = binned.astype(np.uint16)
    out[binned == MISSING_BIN] = width - 1
    return out


_RADIX = 11   # bits per pass of the threshold sort: 3 passes over 32-bit keys, 2048 counters each


@njit(cache=True, nogil=True)
def _sort_float32(bits):
    """The non-NaN values of a float32 column (given as its uint32 bits),
    sorted, by an LSD radix sort of order-preserving keys (negative: all
    bits flipped, else the sign bit set): three linear passes, measured 6x
    faster than ``np.sort``'s quicksort on 200k values.  Returns (sorted bits,
    ok); ok is False when the column holds a -0.0, which the keys would put
    before every +0.0 where ``np.sort`` (-0.0 == +0.0) may leave them in any
    order: the caller then sorts with numpy, so the thresholds stay the
    bytes ``np.sort`` gives."""
    n = bits.shape[0]
    a = np.empty(n, np.uint32)
    m = 0
    for i in range(n):
        u = bits[i]
        if u == np.uint32(0x80000000):
            return a[:0], False
        if (u & np.uint32(0x7FFFFFFF)) > np.uint32(0x7F800000):   # NaN
            continue
        a[m] = ~u if u >> np.uint32(31) else u | np.uint32(0x80000000)
        m += 1
    a = a[:m]
    b = np.empty(m, np.uint32)
    nb = 1 << _RADIX
    mask = np.uint32(nb - 1)
    counts = np.zeros((3, nb), np.int64)
    for i in range(m):
        k = a[i]
        counts[0, k & mask] += 1
        counts[1, (k >> np.uint32(_RADIX)) & mask] += 1
        counts[2, k >> np.uint32(2 * _RADIX)] += 1
    for p in range(3):
        c = counts[p]
        if c.max() == m:   # one digit for every key: the pass would not move anything
            continue
        total = 0
        for d in range(nb):
            t = c[d]
            c[d] = total
            total += t
        shift = np.uint32(p * _RADIX)
        for i in range(m):
            k = a[i]
            d = (k >> shift) & mask
            b[c[d]] = k
            c[d] += 1
        a, b = b, a
    for i in range(m):
        k = a[i]
        a[i] = k ^ np.uint32(0x80000000) if k >> np.uint32(31) else ~k
    return a, True


def _column_thresholds(col, max_bins):
    ok = False
    if col.dtype == np.float32 and col.flags.c_contiguous:
        bits, ok = _sort_float32(col.view(np.uint32))
    col = bits.view(np.float32) if ok else np.sort(col[~np.isnan(col)])
    uniq = col[np.r_[True, col[1:] != col[:-1]]] if col.size else col  # sorted already
    if uniq.size <= max_bins:
        thr = uniq[:-1]
    else:
        # quantiles of the data, snapped to data values (float32-exact)
        pos = np.linspace(0, col.size - 1, max_bins + 1)[1:-1].astype(np.int64)
        thr = np.unique(col[pos])
        thr = thr[thr < uniq[-1]]
    return thr.astype(np.float32)


def find_thresholds(X, max_bins=MAX_BINS, subsample=200_000, seed=0):
    """Per feature, sorted float32 thresholds (len <= max_bins - 1)."""
    if not 2 <= max_bins <= MAX_BINS:
        raise ValueError(f"max_bins must be in [2, {MAX_BINS}], got {max_bins}")
    rng = np.random.default_rng(seed)
    rows = rng.choice(X.shape[0], subsample, replace=False) if X.shape[0] > subsample else slice(None)
    # one transpose, then contiguous columns: slicing a column of row-major X
    # would read the whole array once per feature (measured 2x slower)
    XT = np.ascontiguousarray(X[rows].T)
    # numpy's sort releases the GIL: the columns sort on every core
    with ThreadPoolExecutor(get_num_threads()) as pool:
        return list(pool.map(lambda col: _column_thresholds(col, max_bins), XT))


def pack_thresholds(thresholds):
    offsets = np.zeros(len(thresholds) + 1, np.int64)
    offsets[1:] = np.cumsum([len(t) for t in thresholds])
    flat = np.concatenate(thresholds).astype(np.float32) if thresholds else np.zeros(0, np.float32)
    return flat, offsets


_BLOCK = 256   # rows binned together: their X rows stay in cache across the features


@njit(cache=True, parallel=True)
def bin_data(X, flat, offsets):
    """Binned data, feature-major [F, N] uint8 (each histogram reads one row).

    bin(x) is the first threshold index with x <= t (a lower bound), NaN the
    missing bin.  A block of rows is searched in lockstep: every row takes
    the same halvings, so the rows' threshold loads are independent and
    overlap (one row's search is a chain of dependent loads; measured 4x)."""
    N, F = X.shape
    out = np.empty((F, N), np.uint8)
    for blk in prange((N + _BLOCK - 1) // _BLOCK):
        i0 = blk * _BLOCK
        m = min(N, i0 + _BLOCK) - i0
        base = np.empty(_BLOCK, np.int64)
        xs = np.empty(_BLOCK, X.dtype)
        for f in range(F):
            lo0 = offsets[f]
            n = offsets[f + 1] - lo0
            for i in range(m):
                xs[i] = X[i0 + i, f]
                base[i] = lo0
            if n > 0:
                while n > 1:   # the lower bound lies in [base, base + n]
                    half = n >> 1
                    for i in range(m):
                        base[i] += half if flat[base[i] + half] < xs[i] else 0
                    n -= half
                for i in range(m):
                    base[i] += flat[base[i]] < xs[i]
            for i in range(m):
                # NaN compares false everywhere; it gets the missing bin
                out[f, i0 + i] = MISSING_BIN if xs[i] != xs[i] else base[i] - lo0
    return out


# ---------------------------------------------------------------- categories
#: category codes are integers in [0, MAX_CODE): the IR's largest set (ir.codes.MAX_CATEGORY_WORDS
#: words of 32 bits), and every such code is a float32 integer
MAX_CODE = 1 << 24


def is_code(x):
    """A bool mask of the float values that are category codes under the IR's
    "integer" rule (x >= 0 and integral) and below MAX_CODE."""
    with np.errstate(invalid="ignore"):
        return (x >= 0) & (x < MAX_CODE) & (x == np.floor(x))


def category_bins(col, max_bins=MAX_BINS):
    """The categories of one float32 column that get a bin of their own, as
    LightGBM's categorical bin mapper picks them (``BinMapper::FindBin``):
    codes by decreasing frequency (ties: the smaller code first), the
    ``max_bins - 1`` most frequent always, then more while the kept ones
    cover less than CATEGORY_SHARE of the rows with a code and the next has
    at least MIN_CATEGORY_ROWS rows (so a feature may get more than
    ``max_bins`` bins; at most MAX_CATEGORY_BINS), as an int64 array indexed
    by bin.  Bin ``len(codes)`` is the "other" bin: rarer codes, non-codes
    (negative, non-integer, too large); NaN is the missing bin.  Both go
    right at every split (``splitting``)."""
    return category_counts(col, max_bins)[0]


def category_counts(col, max_bins=MAX_BINS):
    """(``category_bins``'s codes, the number of distinct codes, the rows
    of the codes left to the other bin)."""
    x = col[~np.isnan(col)]
    x = x[is_code(x)].astype(np.int64)
    codes, counts = np.unique(x, return_counts=True)        # ascending codes
    order = np.argsort(-counts, kind="stable")               # most frequent first, stable on code
    n_keep = min(max_bins - 1, codes.shape[0])
    if n_keep < codes.shape[0]:
        ranked = counts[order]
        before = np.cumsum(ranked) - ranked                  # rows of the more frequent codes
        cut = np.floor(CATEGORY_SHARE * x.shape[0] + 0.5)    # LightGBM's RoundInt(0.99 * rows)
        # both tests fail from some rank on (``before`` grows, ``ranked`` shrinks): count the ranks that pass
        more = (before[n_keep:] < cut) & (ranked[n_keep:] >= MIN_CATEGORY_ROWS)
        n_keep = min(n_keep + int(more.sum()), MAX_CATEGORY_BINS)
    keep = order[:n_keep]
    return codes[keep], codes.shape[0], int(counts[order[n_keep:]].sum())


def bin_categories(col, codes, missing=MISSING_BIN, dtype=np.uint8):
    """Bins of one column (``dtype``): the bin of each kept code, the other
    bin (``len(codes)``) for any other non-NaN value, ``missing`` for NaN.
    Vectorised numpy (one pass per categorical feature per fit)."""
    order = np.argsort(codes)
    sorted_codes = codes[order]
    out = np.full(col.shape[0], len(codes), dtype)
    ok = is_code(col)
    c = np.where(ok, col, -1).astype(np.int64)
    pos = np.minimum(np.searchsorted(sorted_codes, c), max(len(codes) - 1, 0))
    hit = ok & (len(codes) > 0)
    if len(codes):
        hit &= sorted_codes[pos] == c
        out[hit] = order[pos[hit]].astype(dtype)
    out[np.isnan(col)] = missing
    return out
