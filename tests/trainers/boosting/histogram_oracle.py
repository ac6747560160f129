"""The documented rule for a sparse feature's hot bin, in plain Python, for
the histogram kernels' tests: the bin's rows are split by their position p
in the node's row list into eight interleaved parts (p mod 8), each part's
g and h are summed in row order, and the bin holds the eight part sums added
in part order; the count is exact, and an empty bin holds +0.0.  Every other
slot is the plain row-order sum, which the tests compute themselves."""

N_PARTS = 8


def fill_hot_bins(hg, hh, hc, binned, rows, g, h, hot, active):
    """Overwrite, in place, each active feature's hot bin (``hot[f] >= 0``)
    of the [F, W] row-order histograms ``hg, hh, hc`` of the node ``rows``
    (its row list, in order)."""
    for f, z in enumerate(hot):
        if z < 0 or not active[f]:
            continue
        part_g, part_h = [0.0] * N_PARTS, [0.0] * N_PARTS
        count = 0
        for p, r in enumerate(rows):
            if binned[f, r] == z:
                part_g[p % N_PARTS] += float(g[r])
                part_h[p % N_PARTS] += float(h[r])
                count += 1
        total_g, total_h = 0.0, 0.0
        for t in range(N_PARTS):
            total_g += part_g[t]
            total_h += part_h[t]
        hg[f, z], hh[f, z], hc[f, z] = total_g, total_h, count
