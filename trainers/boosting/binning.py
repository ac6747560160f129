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


@njit(cache=True, inline="always")
def _to_key(u):
    """The order-preserving radix key of float32 bits ``u``: negative values
    with every bit flipped, the others with the sign bit set."""
    return ~u if u >> np.uint32(31) else u | np.uint32(0x80000000)


@njit(cache=True, inline="always")
def _from_key(k):
    """The float32 bits of radix key ``k`` (``_to_key``'s inverse)."""
    return k ^ np.uint32(0x80000000) if k >> np.uint32(31) else ~k


@njit(cache=True, nogil=True)
def _radix_keys(a, b):
    """Sort the uint32 keys ``a`` (LSD radix, _RADIX bits a pass, ``b`` the
    scratch of the same length); returns the array holding the result."""
    m = a.shape[0]
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
    return a


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
        a[m] = _to_key(u)
        m += 1
    a = _radix_keys(a[:m], np.empty(m, np.uint32))
    for i in range(m):
        k = a[i]
        a[i] = _from_key(k)
    return a, True


_FBLOCK = 128   # features gathered together at most: 512 bytes of each sampled row (16 features: 2.3x slower)


@njit(cache=True, inline="always")
def _key_value(keys, n_neg, n_zero, p):
    """The order-preserving key at position p of the sorted column whose
    nonzero keys are ``keys`` (sorted; the first n_neg negative) and which
    holds n_zero +0.0 between them (the key of +0.0 is 0x80000000)."""
    if p < n_neg:
        return keys[p]
    if p < n_neg + n_zero:
        return np.uint32(0x80000000)
    return keys[p - n_zero]


@njit(cache=True, parallel=True)
def _sample_thresholds(bits, rows, max_bins, fblock):
    """``_column_thresholds`` of every feature of float32 X (``bits``, its
    uint32 view [N, F]) on the rows ``rows`` (sorted), without a copy or
    transpose of X: a block of ``fblock`` features gathers each row's
    values from a few adjacent cache lines; the exact zeros (LTR data: most
    of a column) are only counted, the other values' keys radix-sorted
    (``_radix_keys``) and the zeros put back by position.  Returns
    (thresholds [F, max_bins - 1] as float32 bits, their counts [F], and per
    feature whether it holds a -0.0: such a column is left to
    ``_column_thresholds``, whose np.sort may order -0.0 and +0.0 either
    way).  The quantile positions are ``np.linspace``'s: k * ((m - 1) /
    max_bins), truncated."""
    N, F = bits.shape
    M = rows.shape[0]
    thr = np.empty((F, max_bins - 1), np.uint32)   # float32 bits
    n_thr = np.zeros(F, np.int64)
    neg0 = np.zeros(F, np.bool_)
    for blk in prange((F + fblock - 1) // fblock):
        f0 = blk * fblock
        f1 = min(F, f0 + fblock)
        keys = np.empty((f1 - f0, M), np.uint32)
        scratch = np.empty(M, np.uint32)
        nz = np.zeros(f1 - f0, np.int64)
        zeros = np.zeros(f1 - f0, np.int64)
        negs = np.zeros(f1 - f0, np.int64)
        n_neg0 = np.zeros(f1 - f0, np.int64)
        for i in range(M):
            r = rows[i]
            for j in range(f1 - f0):
                # branch-free (zeros and nonzeros alternate at random): every value is written, kept if counted
                u = bits[r, f0 + j]
                zero = u == np.uint32(0)
                keep = (u != np.uint32(0)) & ((u & np.uint32(0x7FFFFFFF)) <= np.uint32(0x7F800000))   # nor NaN
                neg = u >> np.uint32(31)
                keys[j, nz[j]] = _to_key(u)
                nz[j] += keep
                negs[j] += keep & neg
                zeros[j] += zero
                n_neg0[j] += u == np.uint32(0x80000000)
        for j in range(f1 - f0):
            f = f0 + j
            if n_neg0[j]:
                neg0[f] = True
                continue
            srt = _radix_keys(keys[j, :nz[j]], scratch[:nz[j]])
            n_neg, n_zero = negs[j], zeros[j]
            m = nz[j] + n_zero
            # distinct values (equal float32 values other than +-0 have equal bits)
            n_uniq = 1 if n_zero > 0 else 0
            for i in range(nz[j]):
                n_uniq += i == 0 or srt[i] != srt[i - 1]
            out = thr[f]
            t = 0
            if n_uniq <= max_bins:   # every distinct value but the largest
                prev = np.uint32(0)
                for p in range(m):
                    k = _key_value(srt, n_neg, n_zero, p)
                    if p == 0 or k != prev:
                        if t == n_uniq - 1:
                            break
                        out[t] = _from_key(k)
                        t += 1
                    prev = k
            else:   # quantiles snapped to data values, below the largest
                top = _key_value(srt, n_neg, n_zero, m - 1)
                step = np.float64(m - 1) / np.float64(max_bins)
                prev = np.uint32(0)
                for q in range(1, max_bins):
                    k = _key_value(srt, n_neg, n_zero, np.int64(np.float64(q) * step))
                    if k >= top:
                        break
                    if t == 0 or k != prev:
                        out[t] = _from_key(k)
                        t += 1
                    prev = k
            n_thr[f] = t
    return thr, n_thr, neg0


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
    # an integer, checked here: the threshold kernel is typed for one, and a float reached numba as a TypingError
    if isinstance(max_bins, (bool, np.bool_)) or not isinstance(max_bins, (int, np.integer)) \
            or not 2 <= max_bins <= MAX_BINS:
        raise ValueError(f"max_bins must be an integer in [2, {MAX_BINS}], got {max_bins!r}")
    max_bins = int(max_bins)
    rng = np.random.default_rng(seed)
    rows = rng.choice(X.shape[0], subsample, replace=False) if X.shape[0] > subsample else slice(None)
    if X.dtype == np.float32 and X.ndim == 2:
        # one parallel pass over the sampled rows of X, in row order (the thresholds do not depend on it)
        sample = np.sort(rows) if X.shape[0] > subsample else np.arange(X.shape[0])
        F, threads = X.shape[1], get_num_threads()
        n_blocks = threads * max(1, -(-F // (threads * _FBLOCK)))   # a multiple of the threads, <= _FBLOCK wide
        bits, n_thr, neg0 = _sample_thresholds(X.view(np.uint32), sample, max_bins, max(1, -(-F // n_blocks)))
        out = [bits[f, :n_thr[f]].view(np.float32).copy() for f in range(F)]
        for f in np.flatnonzero(neg0):   # a -0.0: np.sort's order, on the sample in its drawn order
            out[f] = _column_thresholds(np.ascontiguousarray(X[rows, f]), max_bins)
        return out
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
    overlap (one row's search is a chain of dependent loads; measured 4x).
    Exact zeros (+-0.0; most values of LTR features) take their feature's
    zero bin without a search: each block searches only its other values,
    gathered branch-free (473k x 519, 57 % zeros: 3.7 -> 1.7 s CPU, one thread)."""
    N, F = X.shape
    out = np.empty((F, N), np.uint8)
    zero_bin = np.empty(F, np.uint8)
    for f in range(F):
        b = offsets[f]
        while b < offsets[f + 1] and flat[b] < 0.0:
            b += 1
        zero_bin[f] = b - offsets[f]
    for blk in prange((N + _BLOCK - 1) // _BLOCK):
        i0 = blk * _BLOCK
        m = min(N, i0 + _BLOCK) - i0
        base = np.empty(_BLOCK, np.int64)
        xs = np.empty(_BLOCK, X.dtype)
        at = np.empty(_BLOCK, np.int64)
        for f in range(F):
            lo0 = offsets[f]
            n = offsets[f + 1] - lo0
            zb = zero_bin[f]
            c = 0
            for i in range(m):
                x = X[i0 + i, f]
                out[f, i0 + i] = zb
                xs[c] = x
                at[c] = i
                c += x != 0.0   # NaN too: it is not 0
            for i in range(c):
                base[i] = lo0
            if n > 0:
                while n > 1:   # the lower bound lies in [base, base + n]
                    half = n >> 1
                    for i in range(c):
                        base[i] += half if flat[base[i] + half] < xs[i] else 0
                    n -= half
                for i in range(c):
                    base[i] += flat[base[i]] < xs[i]
            for i in range(c):
                # NaN compares false everywhere; it gets the missing bin
                out[f, i0 + at[i]] = MISSING_BIN if xs[i] != xs[i] else base[i] - lo0
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
