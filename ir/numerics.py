"""Constants of the numeric contract (docs/numerics.md).

The portable float32 ``expf`` is defined here as data; each backend implements
the same sequence of IEEE single-precision operations with these constants,
so libm differences cannot leak into predictions.

    expf(x):
      NaN -> NaN; x > EXP_HI -> +inf; x < EXP_LO -> +0
      t  = x * LOG2E + 0.5            (two float32 roundings)
      n  = floor(t)                   (truncate, minus 1 if that exceeded t)
      r  = (x - n * LN2_HI) - n * LN2_LO    (n * LN2_HI is exact: Cody-Waite)
      p  = Horner(EXP_POLY, r)        p = c7; p = p*r + c6; ...; p = p*r + c0
      if n < -126: p = p * 2^-64; n = n + 64     (keeps 2^n a normal number)
      if n > 127:  p = p * 2;     n = n - 1
      return p * 2^n                  (2^n built exactly from its bits)
"""
import numpy as np

LOG2E = np.float32(1.44269502162933349609375)       # 0x1.715476p+0
LN2_HI = np.float32(0.693359375)                     # 0x1.63p-1, 9 significant bits
LN2_LO = np.float32(-2.12194440e-4)                  # ln 2 - LN2_HI, rounded
EXP_HI = np.float32(88.72283172607421875)            # largest x with finite expf
EXP_LO = np.float32(-103.972084045410156)            # below this expf underflows to 0
# Taylor coefficients 1/k! for k = 7..0 (rounded to float32); degree 7 keeps
# the truncation error near 5e-9 relative on |r| <= ln2/2.
EXP_POLY = tuple(np.float32(c) for c in (
    1.0 / 5040.0, 1.0 / 720.0, 1.0 / 120.0, 1.0 / 24.0, 1.0 / 6.0, 0.5, 1.0, 1.0))
TWO_M64 = np.float32(2.0 ** -64)
HALF = np.float32(0.5)
ONE = np.float32(1.0)
TWO = np.float32(2.0)
# IEEE 754 leaves the sign and payload of a NaN made by arithmetic
# unspecified (x86 and ARM differ), so every backend writes any NaN score or
# probability as this one quiet NaN.  Decisions never see the difference:
# comparisons with any NaN are false.
CANONICAL_NAN_BITS = 0x7FC00000
# The same for the float64 scores of a float64 tree bank (docs/numerics.md).
CANONICAL_NAN64_BITS = 0x7FF8000000000000


def hexfloat(v) -> str:
    """A C99 hex-float literal of a float32 value (exact)."""
    v = float(np.float32(v))
    if v != v or v in (float("inf"), float("-inf")):
        raise ValueError(f"{v} has no hex-float literal")
    return f"{v.hex()}f"
