"""What a sparse feature's hot bin costs in the root's histogram pass: the
booster's way (the bin's rows summed through eight spare slots) against
summing it in row order in registers (issue 29: the dense root and level 1
are most of a tree at Yahoo size).

Until this change the booster kept every bin's sums in row order; a sparse
feature's "hot" bin (most rows an exact zero) was summed in registers, one
float64 add per row and lane whatever the row's bin.  Now the hot bin's rows
go to eight spare slots by position and the bin is their sum
(``histogram._accumulate4_hot``, ``histogram._hot_from_spares``).  This
script times, on one thread, one group of 32 features over the root's rows
(each column ``--zeros`` exact zeros):

* ``row-order sums in registers (before)``: the former kernel, restated here;
* ``through spare slots (the booster's)``: the pass plus the fill;
* ``dense, no hot bin``: a column without zeros, for scale.

The other bins are the same sums either way (checked).

    python benchmarks/bench_hot_bin.py [--rows 473134] [--zeros 0.57] [--repeat 9]
"""
import argparse
import time

import numpy as np
from numba import njit

from skinflint.trainers.boosting.histogram import (
    _N_SPARE,
    _ROW_BLOCK,
    N_SLOTS,
    _accumulate4,
    _accumulate4_hot,
    _hot_from_spares,
)
from skinflint.trainers.simd import add4

_F = 32   # one feature group of build_level (histogram._GROUP)


@njit(cache=True)
def _registers(col, lanes, acc, z):
    """The former hot kernel: bin z's sums in registers, in row order (a row
    of another bin adds +0.0 to them, its vector to its bin)."""
    ag, ah, ac = acc[z, 0], acc[z, 1], acc[z, 2]
    for i in range(lanes.shape[0]):
        b = np.int64(col[i])
        hot = b == z
        x, y = lanes[i, 0], lanes[i, 1]
        add4(acc, N_SLOTS + (i & (_N_SPARE - 1)) if hot else b, lanes, i)
        ag += x if hot else 0.0
        ah += y if hot else 0.0
        ac += hot
    acc[z, 0], acc[z, 1], acc[z, 2] = ag, ah, ac


@njit(cache=True)
def _before(binned, lanes, acc, hot):
    F, N = binned.shape
    for i0 in range(0, N, _ROW_BLOCK):
        i1 = min(N, i0 + _ROW_BLOCK)
        for f in range(F):
            _registers(binned[f, i0:i1], lanes[i0:i1], acc[f], hot[f])


@njit(cache=True)
def _booster(binned, lanes, acc, hot):
    """The root's pass as ``histogram._build_level`` makes it (blocks outer),
    then each hot bin from its spare slots."""
    F, N = binned.shape
    rows = np.zeros(1, np.int64)
    for i0 in range(0, N, _ROW_BLOCK):
        i1 = min(N, i0 + _ROW_BLOCK)
        for f in range(F):
            if hot[f] < 0:
                _accumulate4(binned[f, i0:i1], rows, lanes[i0:i1], acc[f], True)
            else:
                _accumulate4_hot(binned[f, i0:i1], rows, lanes[i0:i1], acc[f], True, hot[f])
    for f in range(F):
        if hot[f] >= 0:
            _hot_from_spares(acc[f], hot[f])


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
    t_before, acc_before = _time(_before, sparse, lanes, hot0, args.repeat)
    t_now, acc_now = _time(_booster, sparse, lanes, hot0, args.repeat)
    t_dense, _ = _time(_booster, dense, lanes, np.full(_F, -1, np.int64), args.repeat)
    # the other bins are the same sums in the same order either way; the hot bin's count is exact
    assert np.array_equal(acc_before[:, 1:N_SLOTS], acc_now[:, 1:N_SLOTS])
    assert np.array_equal(acc_before[:, 0, 2], acc_now[:, 0, 2])
    per = 1e9 / (n * _F)
    print(f"{n:,} rows x {_F} features, {args.zeros:.0%} zeros, one thread, CPU median of {args.repeat}:")
    for name, t in (("row-order sums in registers (before)", t_before), ("through spare slots (the booster's)", t_now),
                    ("dense, no hot bin", t_dense)):
        print(f"  {name:<38} {1e3 * t:7.1f} ms  {t * per:5.2f} ns per row and feature  {t / t_before:5.2f}x")
    gap = np.abs(acc_before[:, 0, :2] - acc_now[:, 0, :2]).max()
    print(f"  largest difference of a hot bin's sum of g or h between the two: {gap:.3g}")


if __name__ == "__main__":
    main()
