"""Split thresholds from other libraries as skinflint's float32 ``x <= t``.

skinflint's IR sends a row left when ``x <= t`` with ``x`` and ``t`` both
float32 (docs/numerics.md).  The source libraries compare differently:

* LightGBM and scikit-learn compare the float32 input, widened to float64,
  against a float64 threshold: ``double(x) <= t``;
* XGBoost compares float32 with float32, strictly: ``x < t``.

For every float32 ``x`` (NaN aside: missing values follow the node's
default direction, decided by each importer) both are one float32 test
``x <= t32`` where ``t32`` is the largest float32 that passes the source's
own test: the decision is monotone in ``x``, so the float32 values sent left
are exactly those up to that one.  ``le_threshold`` and ``lt_threshold``
compute it for whole arrays at once.
"""
from __future__ import annotations

import numpy as np

_NEG_INF32 = np.float32(-np.inf)


def _round_down_f32(t: np.ndarray) -> np.ndarray:
    """The largest float32 <= t (float64 in), elementwise."""
    with np.errstate(over="ignore"):                # beyond FLT_MAX: +-inf, then stepped back
        t32 = t.astype(np.float32)                  # round to nearest
    up = t32.astype(np.float64) > t
    t32[up] = np.nextafter(t32[up], _NEG_INF32)
    return t32


def _check(t, what):
    t = np.asarray(t, np.float64)
    if np.isnan(t).any():
        raise ValueError(f"{what}: a NaN split threshold at node {int(np.flatnonzero(np.isnan(t))[0])}; "
                         "the model file is damaged")
    return t


def le_threshold(t) -> np.ndarray:
    """Float32 thresholds equivalent to ``double(x) <= t`` for float32 ``x``.

    Parameters
    ----------
    t : array of float64
        The source's thresholds (LightGBM, scikit-learn).

    Returns
    -------
    ndarray of float32
        The largest float32 <= t: ``x <= t32`` iff ``double(x) <= t`` for
        every non-NaN float32 x (±inf included; t beyond the float32 range
        rounds to ±inf or ±FLT_MAX as that rule requires).
    """
    return _round_down_f32(_check(t, "threshold"))


def lt_threshold(t) -> np.ndarray:
    """Float32 thresholds equivalent to ``x < t`` for float32 ``x``.

    Parameters
    ----------
    t : array of float32 or float64
        The source's thresholds (XGBoost's ``split_conditions``, float32).

    Returns
    -------
    ndarray of float32
        The largest float32 strictly below t, so ``x <= t32`` iff ``x < t``.

    Raises
    ------
    ValueError
        For t = -inf (no float32 is below it, but ``x <= t32`` would send
        -inf left): such a split sends every non-missing row right, and the
        importer must not silently change that.
    """
    t = _check(t, "threshold")
    if np.any(t == -np.inf):
        raise ValueError("threshold: a split 'x < -inf' (node "
                         f"{int(np.flatnonzero(t == -np.inf)[0])}) cannot be written as x <= t in "
                         "float32; retrain without it or report the model")
    t32 = _round_down_f32(t)
    same = t32.astype(np.float64) == t
    t32[same] = np.nextafter(t32[same], _NEG_INF32)
    return t32


def le_zero_region(t32: np.float32, default_left: bool, zero: float) -> bool:
    """Whether every float32 x in LightGBM's zero region [-zero, zero] takes
    the default direction under ``x <= t32`` anyway (then a
    ``missing_type=Zero`` split is an ordinary split whose NaN goes the
    default way)."""
    z = np.float32(zero)
    if default_left:
        return bool(z <= t32)
    return bool(-z > t32)


def clamp_infinite(t32: np.ndarray) -> np.ndarray:
    """The IR's thresholds are finite: t32 = +inf (every non-NaN row left,
    as HistGradientBoosting's missing-only splits) becomes FLT_MAX, -inf
    becomes -FLT_MAX.  Decisions then differ only for the inputs +inf
    (now right) and -FLT_MAX (now left) at such nodes (docs/importers.md)."""
    big = np.finfo(np.float32).max
    return np.clip(t32, -big, big).astype(np.float32)
