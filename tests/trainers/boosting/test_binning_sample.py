"""The one-pass threshold kernel (``_sample_thresholds``: feature blocks
gathered from the sampled rows, exact zeros counted, not sorted) and the
zero-skipping ``bin_data`` give the bytes of the np.sort / searchsorted code
they replaced (issue 29: binning at Yahoo size)."""
import numpy as np
import pytest

from skinflint.trainers.boosting import binning
from skinflint.trainers.boosting.binning import MISSING_BIN, bin_data, find_thresholds, pack_thresholds
from tests.trainers.boosting.binning_oracle import reference_thresholds


def _bits(a):
    return np.asarray(a, np.float32).view(np.uint32)




def _reference(X, max_bins, subsample, seed):   # find_thresholds before the kernel: the same draw of rows
    rng = np.random.default_rng(seed)
    rows = rng.choice(X.shape[0], subsample, replace=False) if X.shape[0] > subsample else slice(None)
    return [reference_thresholds(np.ascontiguousarray(X[rows, f]), max_bins) for f in range(X.shape[1])]


def _data(n, seed=0):
    """Columns of every kind the kernel special-cases, more of them than one block of features holds."""
    rng = np.random.default_rng(seed)
    F = binning._FBLOCK + 9
    X = rng.normal(size=(n, F)).astype(np.float32)
    share = rng.uniform(0.0, 0.99, F)                        # exact zeros, as in LTR features
    X[rng.random((n, F)) < share] = 0.0
    X[:, 1] = 0.0                                            # all zeros
    X[:, 2] = np.nan                                         # all NaN
    X[::3, 3] = np.nan                                       # NaN among zeros and values
    X[:, 4] = np.round(X[:, 4] * 2)                          # few values: every value a threshold
    X[:, 5] = -np.abs(X[:, 5])                               # negatives and zeros only
    X[:12, 6] = [np.inf, -np.inf, 1e-45, -1e-45, 3.4e38, -3.4e38, 0, 0, 1, 1, -2, np.nan]
    X[::7, 7] = -0.0                                         # signed zeros: left to np.sort
    X[:, 8] = (rng.standard_cauchy(n) * 1e20).astype(np.float32)
    return X


@pytest.mark.parametrize("max_bins", [2, 16, 255])
@pytest.mark.parametrize("n, subsample", [(3000, 200_000), (3000, 1000), (257, 256)])
def test_thresholds_are_the_np_sort_ones(max_bins, n, subsample):
    X = _data(n)
    for seed in (0, 5):
        got = find_thresholds(X, max_bins, subsample, seed)
        want = _reference(X, max_bins, subsample, seed)
        assert len(got) == X.shape[1]
        for f, (a, b) in enumerate(zip(got, want)):
            assert a.dtype == np.float32
            assert np.array_equal(_bits(a), _bits(b)), f


def test_thresholds_do_not_depend_on_layout_or_threads():
    import numba
    X = _data(2000, seed=3)
    want = _reference(X, 255, 1500, 2)
    before = numba.get_num_threads()
    try:
        for threads in sorted({1, before}):
            numba.set_num_threads(threads)     # the feature blocks follow the thread count
            for arr in (X, np.asfortranarray(X), X[:, ::-1][:, ::-1]):
                got = find_thresholds(arr, 255, 1500, 2)
                assert all(np.array_equal(_bits(a), _bits(b)) for a, b in zip(got, want))
    finally:
        numba.set_num_threads(before)


def test_the_quantile_positions_are_linspaces():
    # the kernel takes position k of m sorted values as int(k * ((m - 1) / max_bins)), np.linspace's arithmetic
    for m in list(range(256, 3000)) + [199_999, 200_000, 473_134]:
        for max_bins in (16, 255):
            want = np.linspace(0, m - 1, max_bins + 1)[1:-1].astype(np.int64)
            got = (np.arange(1, max_bins) * (np.float64(m - 1) / np.float64(max_bins))).astype(np.int64)
            assert np.array_equal(got, want), (m, max_bins)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_zeros_take_the_zero_bin(dtype):
    X = _data(1000, seed=4)[:, :12].astype(dtype)          # blocks of 256 rows and a partial one
    X[5::11, 9] = -0.0
    thr = find_thresholds(X.astype(np.float32))
    thr[10] = np.array([-1.0, -0.0, 0.0, 2.0], np.float32)  # a threshold at zero: x <= t puts 0 in its bin
    thr[11] = np.array([0.5, 1.0], np.float32)              # every threshold above zero: the first bin
    got = bin_data(X, *pack_thresholds(thr))
    for f in range(X.shape[1]):
        want = np.where(np.isnan(X[:, f]), MISSING_BIN, np.searchsorted(thr[f], X[:, f], "left"))
        np.testing.assert_array_equal(got[f], want, err_msg=str(f))


@pytest.mark.parametrize("bad", [255.0, True, "255", None, 1, 256])
def test_max_bins_must_be_an_integer_in_range(bad):
    # a float reached the numba threshold kernel and failed there as a TypingError (found in review)
    X = np.random.default_rng(0).normal(size=(50, 2)).astype(np.float32)
    with pytest.raises(ValueError, match="max_bins must be an integer in"):
        find_thresholds(X, max_bins=bad)


def test_max_bins_takes_numpy_integers():
    X = np.random.default_rng(0).normal(size=(500, 2)).astype(np.float32)
    for a, b in zip(find_thresholds(X, max_bins=np.int64(16)), find_thresholds(X, max_bins=16)):
        assert a.tobytes() == b.tobytes() and len(a) == 15
