"""Split a node's rows in place: the tree grower keeps one array of row
indices in which every node is a contiguous range [start, stop), as
scikit-learn's splitter does, so children need no new arrays."""
import numpy as np
from numba import get_num_threads, njit, prange

from .binning import MISSING_BIN

_PARALLEL_MIN_ROWS = 1 << 15  # below this a thread launch costs more than it saves


@njit(cache=True, inline="always")
def _split_chunk(col, order, lo, hi, split_bin, miss, left, right):
    """Rows order[lo:hi] to left[lo:lo+k] and right[lo:lo+(hi-lo-k)], stably;
    returns k.  Branch-free (a branch on the side mispredicts on half the
    rows): every row is written at both cursors and only its side's cursor
    advances, so a stray write lands where that side's next row goes, or
    past its last row, never outside [lo, hi)."""
    a = lo
    r = lo
    for i in range(lo, hi):
        row = order[i]
        b = col[row]
        # split_bin < MISSING_BIN, so a missing value never tests left by value
        gl = np.int64(b <= split_bin) | (np.int64(b == MISSING_BIN) & miss)
        left[a] = row
        right[r] = row
        a += gl
        r += 1 - gl
    return a - lo


@njit(cache=True)
def _partition_serial(col, order, start, stop, split_bin, miss, left, right):
    k = _split_chunk(col, order, start, stop, split_bin, miss, left, right)
    order[start:start + k] = left[start:start + k]
    order[start + k:stop] = right[start:stop - k]
    return start + k


@njit(cache=True, parallel=True)
def _partition_parallel(col, order, start, stop, split_bin, miss, left, right, n_chunks):
    per = (stop - start + n_chunks - 1) // n_chunks
    n_left = np.zeros(n_chunks, np.int64)
    for c in prange(n_chunks):
        lo = start + c * per
        n_left[c] = _split_chunk(col, order, lo, min(stop, lo + per), split_bin, miss, left, right)
    mid = start + n_left.sum()
    # chunk c's left rows follow those of chunks < c; its right rows follow
    # mid and the right rows of chunks < c: the same order as one pass
    for c in prange(n_chunks):
        lo = start + c * per
        hi = min(stop, lo + per)
        k = n_left[c]
        at_left = start + n_left[:c].sum()
        at_right = mid + (lo - start) - n_left[:c].sum()
        order[at_left:at_left + k] = left[lo:lo + k]
        order[at_right:at_right + hi - lo - k] = right[lo:hi - k]
    return mid


def partition(binned, order, start, stop, f, split_bin, missing_left, buffers):
    """Stable in-place split of ``order[start:stop]`` into left rows (bin <=
    split_bin, or missing when ``missing_left``) then right rows; returns the
    boundary.  ``buffers`` is two scratch arrays as long as ``order``."""
    left, right = buffers
    if stop - start < _PARALLEL_MIN_ROWS:
        return _partition_serial(binned[f], order, start, stop, split_bin, int(missing_left), left, right)
    return _partition_parallel(binned[f], order, start, stop, split_bin, int(missing_left), left, right,
                               get_num_threads())


# ---------------------------------------------------------------- category sets
@njit(cache=True, inline="always")
def _split_chunk_set(col, order, lo, hi, goes_left, left, right):
    """``_split_chunk`` for a category-set split: row goes left iff
    ``goes_left[bin]`` (uint8 [256]; the NaN and "other" bins are 0)."""
    a = lo
    r = lo
    for i in range(lo, hi):
        row = order[i]
        gl = np.int64(goes_left[col[row]])
        left[a] = row
        right[r] = row
        a += gl
        r += 1 - gl
    return a - lo


@njit(cache=True)
def _partition_set_serial(col, order, start, stop, goes_left, left, right):
    k = _split_chunk_set(col, order, start, stop, goes_left, left, right)
    order[start:start + k] = left[start:start + k]
    order[start + k:stop] = right[start:stop - k]
    return start + k


@njit(cache=True, parallel=True)
def _partition_set_parallel(col, order, start, stop, goes_left, left, right, n_chunks):
    per = (stop - start + n_chunks - 1) // n_chunks
    n_left = np.zeros(n_chunks, np.int64)
    for c in prange(n_chunks):
        lo = start + c * per
        n_left[c] = _split_chunk_set(col, order, lo, min(stop, lo + per), goes_left, left, right)
    mid = start + n_left.sum()
    for c in prange(n_chunks):
        lo = start + c * per
        hi = min(stop, lo + per)
        k = n_left[c]
        at_left = start + n_left[:c].sum()
        at_right = mid + (lo - start) - n_left[:c].sum()
        order[at_left:at_left + k] = left[lo:lo + k]
        order[at_right:at_right + hi - lo - k] = right[lo:hi - k]
    return mid


def partition_set(binned, order, start, stop, f, goes_left, buffers):
    """``partition`` for a category-set split: left rows are those whose
    bin has ``goes_left[bin] == 1``, in the same stable order."""
    left, right = buffers
    if stop - start < _PARALLEL_MIN_ROWS:
        return _partition_set_serial(binned[f], order, start, stop, goes_left, left, right)
    return _partition_set_parallel(binned[f], order, start, stop, goes_left, left, right, get_num_threads())
