"""The threshold conversion: for every float32 x near each threshold the
float32 test x <= t32 decides as the source library does."""
import numpy as np
import pytest

from skinflint.importers.thresholds import le_threshold, le_zero_region, lt_threshold


def _neighbours(t64):
    """float32 values around each threshold: its two float32 roundings and
    three ulps either side of them, plus the extremes."""
    with np.errstate(over="ignore"):
        return _around(t64)


def _around(t64):
    base = np.concatenate([t64.astype(np.float32),
                           np.nextafter(t64.astype(np.float32), np.float32(np.inf)),
                           np.nextafter(t64.astype(np.float32), np.float32(-np.inf))])
    out = [base]
    for d in (np.float32(np.inf), np.float32(-np.inf)):
        v = base
        for _ in range(3):
            v = np.nextafter(v, d)
            out.append(v)
    out.append(np.float32([np.inf, -np.inf, 0.0, -0.0, np.finfo(np.float32).max,
                           -np.finfo(np.float32).max, np.finfo(np.float32).tiny]))
    return np.unique(np.concatenate(out))


def _thresholds():
    rng = np.random.default_rng(0)
    t = rng.normal(size=300) * 10.0 ** rng.integers(-40, 38, size=300)
    f32 = rng.normal(size=100).astype(np.float32).astype(np.float64)      # exactly float32
    mid = (f32 + np.nextafter(f32.astype(np.float32), np.float32(np.inf)).astype(np.float64)) / 2
    edge = np.array([0.0, -0.0, 1e-45, -1e-45, 3.5e38, -3.5e38, 1e300, -1e300, np.inf,
                     float(np.finfo(np.float32).max), 1e-35])
    return np.concatenate([t, f32, mid, edge])


def test_le_threshold_matches_double_comparison():
    for t in _thresholds():
        t32 = le_threshold(np.array([t]))[0]
        x = _neighbours(np.array([t]))
        assert np.array_equal(x <= t32, x.astype(np.float64) <= t), t


def test_lt_threshold_matches_float32_strict_comparison():
    with np.errstate(over="ignore"):
        t32s = np.unique(_thresholds().astype(np.float32))
    t32s = t32s[t32s != -np.inf]
    for t in t32s:
        c = lt_threshold(np.array([t], np.float32))[0]
        x = _neighbours(np.array([t], np.float64))
        assert np.array_equal(x <= c, x < t), t


def test_refusals_name_the_problem():
    with pytest.raises(ValueError, match="NaN split threshold"):
        le_threshold(np.array([0.0, np.nan]))
    with pytest.raises(ValueError, match="-inf"):
        lt_threshold(np.array([-np.inf]))


def test_zero_region_test():
    z = 1e-35
    zf = np.float32(z)
    # default left: plain only when the whole band [-z, z] is <= t
    assert le_zero_region(zf, True, z)
    assert not le_zero_region(np.nextafter(zf, np.float32(-1)), True, z)
    # default right: plain only when the whole band is > t
    assert le_zero_region(np.nextafter(-zf, np.float32(-1)), False, z)
    assert not le_zero_region(-zf, False, z)
