"""The documented rule for a sparse feature's hot bin, in plain Python, for
the histogram kernels' tests: the bin holds the node's totals (sum g, sum h,
count over the node's rows, added in row order) minus the feature's other
slots (subtracted in slot order); a hot bin with no rows holds zeros.  Every
other slot is the plain row-order sum, which the tests compute themselves."""


def fill_hot_bins(hg, hh, hc, rows, g, h, hot, active):
    """Overwrite, in place, each active feature's hot bin (``hot[f] >= 0``)
    of the [F, W] row-order histograms ``hg, hh, hc`` of the node ``rows``."""
    total_g, total_h = 0.0, 0.0
    for r in rows:                  # in row order, as one float64 sum each
        total_g += float(g[r])
        total_h += float(h[r])
    count = len(rows)
    W = hg.shape[1]
    for f, z in enumerate(hot):
        if z < 0 or not active[f]:
            continue
        other_g, other_h, other_c = 0.0, 0.0, 0
        for b in range(W):
            if b != z:
                other_g += float(hg[f, b])
                other_h += float(hh[f, b])
                other_c += int(hc[f, b])
        hc[f, z] = count - other_c
        hg[f, z] = total_g - other_g if hc[f, z] else 0.0
        hh[f, z] = total_h - other_h if hc[f, z] else 0.0
