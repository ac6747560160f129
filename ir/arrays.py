"""Coerce untrusted values (JSON lists, user arrays) to typed numpy arrays.

Every check raises IRError naming the field, so validation code elsewhere can
stay declarative: ``feature = int_array(d["feature"], "nodes[0].feature")``.
"""
from __future__ import annotations

import math
import numbers

import numpy as np

from .errors import IRError

# No single array in a model may exceed this many elements.  It bounds the
# memory a hostile file can make us allocate beyond the file's own size.
MAX_ELEMENTS = 1 << 28
INT32_MAX = 2**31 - 1


def frozen(a: np.ndarray) -> np.ndarray:
    """A C-contiguous, read-only array (IR nodes are immutable)."""
    a = np.ascontiguousarray(a)
    a.setflags(write=False)
    return a


def _as_flat_list(value, field):
    if isinstance(value, np.ndarray):
        if value.ndim != 1:
            raise IRError(f"{field}: expected a 1-d array, got shape {value.shape}")
        if value.size > MAX_ELEMENTS:
            raise IRError(f"{field}: {value.size} elements exceeds the limit {MAX_ELEMENTS}")
        return value
    if not isinstance(value, (list, tuple)):
        raise IRError(f"{field}: expected a list, got {type(value).__name__}")
    if len(value) > MAX_ELEMENTS:
        raise IRError(f"{field}: {len(value)} elements exceeds the limit {MAX_ELEMENTS}")
    for i, v in enumerate(value):
        if isinstance(v, bool) or not isinstance(v, (numbers.Real, np.number)):
            raise IRError(f"{field}[{i}]: expected a number, got {type(v).__name__}")
    return value


def _as_float64(value, field, length, expected=None) -> np.ndarray:
    """``value`` as a flat float64 array of ``length`` numbers; an ndarray
    must have a numeric dtype when ``expected`` names one."""
    raw = _as_flat_list(value, field)
    try:
        a = np.asarray(raw, dtype=np.float64)
    except (ValueError, TypeError, OverflowError) as e:
        raise IRError(f"{field}: not an array of numbers ({e})") from None
    if expected and isinstance(raw, np.ndarray) and raw.dtype.kind not in "fiu":
        raise IRError(f"{field}: wrong dtype {raw.dtype}, expected {expected}")
    if length is not None and a.shape[0] != length:
        raise IRError(f"{field}: expected {length} values, got {a.shape[0]}")
    return a


def float32_array(value, field, *, length=None, finite=True) -> np.ndarray:
    """A read-only float32 vector; parameters must be finite unless told."""
    a64 = _as_float64(value, field, length, "float32")
    with np.errstate(over="ignore", invalid="ignore"):
        a = a64.astype(np.float32)
    if finite and not np.all(np.isfinite(a)):
        i = int(np.flatnonzero(~np.isfinite(a))[0])
        raise IRError(f"{field}[{i}]: {a64[i]!r} is not a finite float32")
    return frozen(a)


def float64_array(value, field, *, length=None) -> np.ndarray:
    """A read-only float64 vector of finite values (a float64 tree bank's
    leaves and base score: JSON's shortest round-trip decimals are exact)."""
    a = _as_float64(value, field, length, "float64")
    if not np.all(np.isfinite(a)):
        i = int(np.flatnonzero(~np.isfinite(a))[0])
        raise IRError(f"{field}[{i}]: {a[i]!r} is not a finite float64")
    return frozen(a)


def cost_array(value, field, *, length=None) -> np.ndarray:
    """Costs are float64, finite and >= 0 (docs/costs.md)."""
    a = _as_float64(value, field, length)
    bad = ~np.isfinite(a) | (a < 0)
    if np.any(bad):
        i = int(np.flatnonzero(bad)[0])
        raise IRError(f"{field}[{i}]: cost {a[i]!r} must be finite and >= 0")
    return frozen(a)


def _integers(value, field, length) -> np.ndarray:
    """``value`` as a flat array of numbers meant to be integers: an integer
    ndarray as it is, anything else as float64 (checked by the caller)."""
    raw = _as_flat_list(value, field)
    if isinstance(raw, np.ndarray) and (raw.dtype.kind == "b" or raw.dtype.kind not in "iuf"):
        raise IRError(f"{field}: wrong dtype {raw.dtype}, expected integers")
    try:
        a = np.asarray(raw, dtype=np.float64) if not (
            isinstance(raw, np.ndarray) and raw.dtype.kind in "iu") else np.asarray(raw)
    except (ValueError, TypeError, OverflowError) as e:
        raise IRError(f"{field}: not an array of integers ({e})") from None
    if length is not None and a.shape[0] != length:
        raise IRError(f"{field}: expected {length} values, got {a.shape[0]}")
    return a


def int_array(value, field, *, length=None, low=None, high=None) -> np.ndarray:
    """A read-only int32 vector with every element in [low, high)."""
    a = _integers(value, field, length)
    if a.dtype.kind == "f":
        ok = np.isfinite(a) & (a == np.floor(a)) & (np.abs(a) <= INT32_MAX)
        if not np.all(ok):
            i = int(np.flatnonzero(~ok)[0])
            raise IRError(f"{field}[{i}]: {a[i]!r} is not a 32-bit integer")
    elif a.size and (a.max() > INT32_MAX or a.min() < -INT32_MAX):
        raise IRError(f"{field}: values outside the 32-bit integer range")
    a = a.astype(np.int32)
    if low is not None and a.size and a.min() < low:
        i = int(np.argmin(a))
        raise IRError(f"{field}[{i}]: index {a[i]} is out of range [{low}, {high})")
    if high is not None and a.size and a.max() >= high:
        i = int(np.argmax(a))
        raise IRError(f"{field}[{i}]: index {a[i]} is out of range [{low}, {high})")
    return frozen(a)


def uint32_array(value, field, *, length=None) -> np.ndarray:
    """A read-only uint32 vector (a category set's words): integers in [0, 2**32)."""
    a = _integers(value, field, length)
    ok = (a >= 0) & (a <= 0xFFFFFFFF)
    if a.dtype.kind == "f":
        ok &= np.isfinite(a) & (a == np.floor(a))
    if not np.all(ok):
        i = int(np.flatnonzero(~ok)[0])
        raise IRError(f"{field}[{i}]: {a[i]!r} is not an unsigned 32-bit integer")
    return frozen(a.astype(np.uint32))


def bool_array(value, field, *, length=None) -> np.ndarray:
    if isinstance(value, list) and all(isinstance(v, bool) for v in value):
        value = [int(v) for v in value]
    raw = _as_flat_list(value, field)
    a = np.asarray(raw)
    if a.dtype.kind not in "biuf":
        raise IRError(f"{field}: expected booleans")
    if length is not None and a.shape[0] != length:
        raise IRError(f"{field}: expected {length} values, got {a.shape[0]}")
    if a.dtype.kind != "b" and a.size and not np.all((a == 0) | (a == 1)):
        raise IRError(f"{field}: expected booleans (true/false or 0/1)")
    return frozen(a.astype(bool))


def scalar_float(value, field, *, finite=True) -> float:
    if isinstance(value, bool) or not isinstance(value, (numbers.Real, np.number)):
        raise IRError(f"{field}: expected a number, got {type(value).__name__}")
    v = float(value)
    if finite and not math.isfinite(v):
        raise IRError(f"{field}: {v!r} must be finite")
    return v


def scalar_float32(value, field) -> np.float32:
    """A finite number that stays finite as float32."""
    v = scalar_float(value, field)
    if abs(v) > float(np.finfo(np.float32).max):
        raise IRError(f"{field}: {v!r} overflows float32")
    return np.float32(v)


def scalar_cost(value, field) -> float:
    v = scalar_float(value, field, finite=False)
    if not math.isfinite(v) or v < 0:
        raise IRError(f"{field}: cost {v!r} must be finite and >= 0")
    return v


def scalar_int(value, field, *, low=None, high=None) -> int:
    if isinstance(value, bool) or not isinstance(value, (numbers.Integral, np.integer)):
        if isinstance(value, float) and value.is_integer():
            value = int(value)
        else:
            raise IRError(f"{field}: expected an integer, got {value!r}")
    v = int(value)
    if (low is not None and v < low) or (high is not None and v >= high):
        raise IRError(f"{field}: {v} is out of range [{low}, {high})")
    return v


def f32(value) -> np.float32:
    return np.float32(value)
