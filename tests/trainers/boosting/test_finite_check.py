"""``_check_finite`` takes a fast path (a finite float32 sum has no inf or
NaN among its terms) before its exact checks: the outcome must be the
exact checks' on every kind of input, including sums that overflow."""
import numpy as np
import pytest

from skinflint.trainers.base import _CostSensitiveEstimator


class _Allows(_CostSensitiveEstimator):
    _allow_missing = True


class _Refuses(_CostSensitiveEstimator):
    _allow_missing = False


def _expected(X, allow_missing):
    """The rule, value by value in plain Python: "infinity" for any inf,
    else "missing" for a NaN where NaN is refused, else accepted (None)."""
    values = [float(v) for v in X.ravel()]
    if any(v in (float("inf"), float("-inf")) for v in values):
        return "infinity"
    if not allow_missing and any(v != v for v in values):
        return "missing values"
    return None


def _cases():
    big = np.float32(3e38)   # two of them sum past float32's largest value: the sum overflows, the values do not
    yield "finite", np.array([[1.0, -2.0], [0.0, 5.5]], np.float32)
    yield "overflowing sum", np.array([[big, big], [big, 1.0]], np.float32)
    yield "overflowing sum, NaN", np.array([[big, big], [np.nan, 1.0]], np.float32)
    yield "+inf", np.array([[1.0, np.inf]], np.float32)
    yield "-inf", np.array([[-np.inf, 1.0]], np.float32)
    yield "inf and -inf (sum NaN)", np.array([[np.inf, -np.inf]], np.float32)
    yield "NaN", np.array([[np.nan, 1.0]], np.float32)
    yield "NaN and inf", np.array([[np.nan, np.inf]], np.float32)
    yield "empty", np.zeros((0, 3), np.float32)


@pytest.mark.parametrize("cls", [_Allows, _Refuses])
@pytest.mark.parametrize("name", [n for n, _ in _cases()])
def test_fast_path_gives_the_exact_checks_outcome(name, cls):
    X = dict(_cases())[name]
    want = _expected(X, cls._allow_missing)
    if want is None:
        assert cls()._check_finite(X) is X
    else:
        with pytest.raises(ValueError, match=want):
            cls()._check_finite(X)
