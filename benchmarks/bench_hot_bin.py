"""What the hot bin costs in the root's histogram pass, and what LightGBM's
way would save (issue 29: the dense root and level 1 are most of a tree at
Yahoo size).

The booster keeps every bin's sums in row order, so the model bytes do not
depend on the thread count; a sparse feature's "hot" bin (most rows an exact
zero) is summed in registers, one float64 add per row and lane whatever the
row's bin (``histogram._accumulate4_hot``).  LightGBM instead never sums its
most frequent bin: it takes the node's totals minus the other bins
(``FixHistogram``), which changes the rounding of that bin's sums (so the
model bytes would change).  This script times, on one thread, one group of
32 features over the root's rows (a column with ``--zeros`` exact zeros):

* ``row order (today)``: the kernel the booster runs;
* ``no hot sums``: the same pass with the hot bin's rows sent to the spare
  slots and no register sums: the floor of the subtraction scheme (the
  hot bin's sums would then be the node's totals minus the other bins);
* ``dense, no hot bin``: a column without zeros, for scale.

    python benchmarks/bench_hot_bin.py [--rows 473134] [--zeros 0.57] [--repeat 9]
"""
import argparse
import time

import numpy as np
from numba import njit

from skinflint.trainers.boosting.histogram import _N_SPARE, _ROW_BLOCK, N_SLOTS, _accumulate4, _accumulate4_hot
from skinflint.trainers.boosting.simd import add4

_F = 32   # one feature group of build_level (histogram._GROUP)


@njit(cache=True)
def _row_order(binned, lanes, acc, hot):
    """The root's pass as ``histogram._build_level`` makes it (blocks outer)."""
    F, N = binned.shape
    rows = np.zeros(1, np.int64)
    for i0 in range(0, N, _ROW_BLOCK):
        i1 = min(N, i0 + _ROW_BLOCK)
        for f in range(F):
            if hot[f] < 0:
                _accumulate4(binned[f, i0:i1], rows, lanes[i0:i1], acc[f], True)
            else:
                _accumulate4_hot(binned[f, i0:i1], rows, lanes[i0:i1], acc[f], True, hot[f])


@njit(cache=True)
def _no_hot_sums(binned, lanes, acc, hot):
    """The same pass without the hot bin's register sums: its rows go to the
    spare slots only (their sums would come from the node's totals)."""
    F, N = binned.shape
    for i0 in range(0, N, _ROW_BLOCK):
        i1 = min(N, i0 + _ROW_BLOCK)
        block = lanes[i0:i1]
        for f in range(F):
            col, z, a = binned[f, i0:i1], hot[f], acc[f]
            for i in range(i1 - i0):
                b = np.int64(col[i])
                add4(a, N_SLOTS + (i & (_N_SPARE - 1)) if b == z else b, block, i)


def _time(fn, binned, lanes, hot, repeat):
    acc = np.zeros((binned.shape[0], N_SLOTS + _N_SPARE, 4))
    fn(binned, lanes, acc, hot)   # compile or load the cache
    times = []
    for _ in range(repeat):
        acc[:] = 0.0
        t = time.process_time()
        fn(binned, lanes, acc, hot)
        times.append(time.process_time() - t)
    return float(np.median(times)), acc


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rows", type=int, default=473_134)
    ap.add_argument("--zeros", type=float, default=0.57, help="share of exact zeros (the hot bin) per column")
    ap.add_argument("--repeat", type=int, default=9)
    args = ap.parse_args()
    rng = np.random.default_rng(0)
    n = args.rows
    dense = rng.integers(1, 255, (_F, n)).astype(np.uint8)
    sparse = dense.copy()
    sparse[rng.random((_F, n)) < args.zeros] = 0
    lanes = np.stack([rng.normal(size=n), rng.random(n), np.ones(n), np.zeros(n)], 1)
    hot0 = np.zeros(_F, np.int64)
    t_today, acc_today = _time(_row_order, sparse, lanes, hot0, args.repeat)
    t_floor, acc_floor = _time(_no_hot_sums, sparse, lanes, hot0, args.repeat)
    t_dense, _ = _time(_row_order, dense, lanes, np.full(_F, -1, np.int64), args.repeat)
    # the other bins are the same sums in the same order either way: only the hot bin differs
    assert np.array_equal(acc_today[:, 1:N_SLOTS], acc_floor[:, 1:N_SLOTS])
    per = 1e9 / (n * _F)
    print(f"{n:,} rows x {_F} features, {args.zeros:.0%} zeros, one thread, CPU median of {args.repeat}:")
    for name, t in (("row order (today)", t_today), ("no hot sums (floor of subtraction)", t_floor),
                    ("dense, no hot bin", t_dense)):
        print(f"  {name:<36} {1e3 * t:7.1f} ms  {t * per:5.2f} ns per row and feature  {t / t_today:5.2f}x")


if __name__ == "__main__":
    main()
