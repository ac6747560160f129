"""The binning tests' oracle: per-column thresholds as the first binning
computed them, with numpy's sort (written apart from trainers/boosting/
binning.py, whose kernels must give the same bytes)."""
import numpy as np


def reference_thresholds(col, max_bins):
    """Sorted float32 thresholds of one column: every distinct value but the
    largest when there are at most ``max_bins``, else the values at
    ``max_bins - 1`` evenly spaced ranks, deduplicated, below the largest."""
    col = np.sort(col[~np.isnan(col)])
    uniq = col[np.r_[True, col[1:] != col[:-1]]] if col.size else col
    if uniq.size <= max_bins:
        thr = uniq[:-1]
    else:
        pos = np.linspace(0, col.size - 1, max_bins + 1)[1:-1].astype(np.int64)
        thr = np.unique(col[pos])
        thr = thr[thr < uniq[-1]]
    return thr.astype(np.float32)
