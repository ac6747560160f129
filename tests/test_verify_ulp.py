"""ulp_distance counts steps exactly, float32 and float64 (skinflint/verify.py)."""
import numpy as np

from skinflint.verify import ulp_distance


def _up(x, k):
    for _ in range(k):
        x = np.nextafter(x, x.dtype.type(np.inf))
    return x


def test_float64_neighbours_are_one_and_two_ulp_apart():
    one = np.float64(1.0)
    assert ulp_distance(one, _up(one, 1)) == 1
    assert ulp_distance(one, _up(one, 2)) == 2
    assert ulp_distance(_up(one, 2), one) == 2
    big = np.float64(1e300)
    assert ulp_distance(big, _up(big, 1)) == 1


def test_float64_across_zero():
    tiny = np.nextafter(0.0, 1.0)
    assert ulp_distance(tiny, -tiny) == 2
    assert ulp_distance(0.0, -0.0) == 0
    assert ulp_distance(-tiny, 0.0) == 1


def test_float32_as_before():
    one = np.float32(1.0)
    assert ulp_distance(one, _up(one, 1)) == 1
    assert ulp_distance(one, _up(one, 2)) == 2
    tiny = np.nextafter(np.float32(0), np.float32(1))
    assert ulp_distance(tiny, -tiny) == 2
    # -inf to +inf: twice the bit pattern of +inf
    assert ulp_distance(np.float32(-np.inf), np.float32(np.inf)) == 2 * 0x7F800000


def test_nan_and_far_apart_values():
    assert ulp_distance(np.nan, np.nan) == 0
    assert ulp_distance(np.float32(np.nan), np.float32(1)) == 2**32
    assert ulp_distance(np.nan, 1.0) == 2**62
    # float64 steps between -inf and +inf exceed int64's range: saturate, never wrap negative
    assert ulp_distance(-np.inf, np.inf) == 2**62
    d = ulp_distance(np.array([1.0, -1e308]), np.array([_up(np.float64(1.0), 3), 1e308]))
    assert d.tolist() == [3, 2**62]
