"""Training-time predictions of one tree: on binned data, or on raw float32."""
import numpy as np
from numba import njit, prange

from .binning import MISSING_BIN


@njit(cache=True, inline="always")
def _child(m, x, missing, cut, left, right, missing_left):
    """The child of node m for a row whose value there is x: missing goes
    where missing_left says, else x <= cut goes left."""
    if missing:
        return left[m] if missing_left[m] else right[m]
    return left[m] if x <= cut else right[m]


@njit(cache=True, parallel=True)
def predict_binned(binned, feature, split_bin, left, right, missing_left, value, out):
    """out[i] += value of the leaf row i reaches (bin <= split_bin goes left)."""
    for i in prange(binned.shape[1]):
        m = 0
        while feature[m] >= 0:
            b = binned[feature[m], i]
            m = _child(m, b, b == MISSING_BIN, split_bin[m], left, right, missing_left)
        out[i] += value[m]


@njit(cache=True, parallel=True)
def predict_raw(X, feature, threshold, left, right, missing_left, value, out):
    """Same tree on float32 rows (validation sets): x <= threshold goes left."""
    for i in prange(X.shape[0]):
        m = 0
        while feature[m] >= 0:
            x = X[i, feature[m]]
            m = _child(m, x, x != x, threshold[m], left, right, missing_left)
        out[i] += value[m]


@njit(cache=True, parallel=True)
def partition(binned, rows, f, split_bin, missing_left):
    """Stable split of ``rows`` into (left, right) by bin <= split_bin."""
    n = rows.shape[0]
    goes_left = np.empty(n, np.bool_)
    col = binned[f]
    for i in prange(n):
        b = col[rows[i]]
        goes_left[i] = missing_left if b == MISSING_BIN else b <= split_bin
    n_left = 0
    for i in range(n):
        n_left += goes_left[i]
    left = np.empty(n_left, rows.dtype)
    right = np.empty(n - n_left, rows.dtype)
    a, c = 0, 0
    for i in range(n):
        if goes_left[i]:
            left[a] = rows[i]
            a += 1
        else:
            right[c] = rows[i]
            c += 1
    return left, right
