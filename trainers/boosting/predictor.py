"""Training-time predictions of one tree: from the grower's leaf ranges, on
binned data, or on raw float32."""
from numba import njit, prange

from ...ir.codes import CAT_INTEGER
from ...runtimes._split import category_left
from .binning import MISSING_BIN


@njit(cache=True, inline="always")
def _child(m, x, missing, cut, left, right, missing_left):
    """The child of node m for a row whose value there is x: missing goes
    where missing_left says, else x <= cut goes left."""
    if missing:
        return left[m] if missing_left[m] else right[m]
    return left[m] if x <= cut else right[m]


@njit(cache=True, parallel=True)
def predict_binned(binned, feature, split_bin, left, right, missing_left, value, out, missing_bin=MISSING_BIN):
    """out[i] += value of the leaf row i reaches (bin <= split_bin goes left;
    ``missing_bin``: NaN's bin, ``BinnedData.missing_bin``)."""
    for i in prange(binned.shape[1]):
        m = 0
        while feature[m] >= 0:
            b = binned[feature[m], i]
            m = _child(m, b, b == missing_bin, split_bin[m], left, right, missing_left)
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
def add_leaf_values(order, leaf_start, leaf_stop, leaf_value, out):
    """out[r] += value of its leaf, for the rows the grower left in each
    leaf's range of ``order``: no tree walk (as scikit-learn updates its
    raw predictions)."""
    for j in prange(leaf_start.shape[0]):
        v = leaf_value[j]
        for i in range(leaf_start[j], leaf_stop[j]):
            out[order[i]] += v


# ---------------------------------------------------------------- category sets
@njit(cache=True, parallel=True)
def predict_binned_sets(binned, feature, split_bin, left, right, missing_left, goes_left, is_set, value, out,
                        missing_bin=MISSING_BIN):
    """``predict_binned`` for a tree with category-set nodes: at a node with
    ``is_set[m]`` a row goes left iff ``goes_left[m, bin]``."""
    for i in prange(binned.shape[1]):
        m = 0
        while feature[m] >= 0:
            b = binned[feature[m], i]
            if is_set[m]:
                m = left[m] if goes_left[m, b] else right[m]
            else:
                m = _child(m, b, b == missing_bin, split_bin[m], left, right, missing_left)
        out[i] += value[m]


@njit(cache=True, parallel=True)
def predict_raw_sets(X, feature, threshold, left, right, missing_left, cat_begin, cat_words, cat_bits,
                     other_left, value, out):
    """``predict_raw`` for a tree or bank with category-set nodes
    (``cat_words[m] > 0``; their words in ``cat_bits`` from ``cat_begin[m]``), under the
    booster's rule ("integer", docs/ir.md) and the reference runtime's own decision."""
    for i in prange(X.shape[0]):
        m = 0
        while feature[m] >= 0:
            x = X[i, feature[m]]
            if cat_words[m] > 0 and x == x:
                goes = category_left(x, CAT_INTEGER, cat_words[m], cat_begin[m], other_left[m], cat_bits)
                m = left[m] if goes else right[m]
            else:
                m = _child(m, x, x != x, threshold[m], left, right, missing_left)
        out[i] += value[m]
