import numpy as np

from skinflint.ir import numerics
from skinflint.runtimes._expf import expf_array
from skinflint.verify import ulp_distance


def test_expf_within_two_ulp_of_exp_over_its_range():
    lo, hi = float(numerics.EXP_LO), float(numerics.EXP_HI)
    x = np.linspace(lo, hi, 2_000_001).astype(np.float32)
    x = np.concatenate([x, np.float32([-0.0, 0.0, 1e-30, -1e-30, 0.5, -0.5, 1.0, lo, hi])])
    got = expf_array(x)
    want = np.exp(x.astype(np.float64)).astype(np.float32)  # correctly rounded up to double rounding
    d = ulp_distance(got, want)
    assert d.max() <= 2, (x[np.argmax(d)], got[np.argmax(d)], want[np.argmax(d)])


def test_expf_special_values():
    x = np.float32([np.nan, np.inf, -np.inf, 89.0, -104.0, 0.0])
    got = expf_array(x)
    assert np.isnan(got[0])
    assert got[1] == np.inf and got[3] == np.inf
    assert got[2] == 0 and got[4] == 0
    assert got[5] == 1.0


def test_expf_subnormal_results_are_close():
    x = np.linspace(-103.9, -87.4, 5001).astype(np.float32)
    got = expf_array(x).astype(np.float64)
    want = np.exp(x.astype(np.float64))
    # subnormals have absolute spacing 2^-149; allow 2 of those
    assert np.max(np.abs(got - want)) <= 2 * 2.0**-149
