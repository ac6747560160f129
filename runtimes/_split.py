"""Where a row goes at a category-set split (``ir.nodes.CategorySplits``,
docs/ir.md "Categorical splits"): the one decision every tree walker of the
reference runtime (the per-row VM, its batch bank walk, the query VM) calls.

The walkers keep the numeric test ``x <= threshold`` and the NaN test inline:
a shared child-selection function taking the tables' arrays, measured, made
the batch walk 4.7x slower (the arrays passed per split), and testing for a
set at every split 1.2x; they test for sets only when the bank has one.
"""
import numpy as np
from numba import njit

from ..ir.codes import CAT_INTEGER, CAT_TRUNCATE


@njit(cache=True, inline="always")
def category_left(x, rule, words, begin, other_left, bits):
    """Whether a non-NaN float32 x goes left at a category-set split.

    x is a code of the rule when it is > -1 ("truncate", LightGBM's C cast
    to int) or >= 0 (the other rules), below 32 * words (the set's range:
    past it nothing is in the set), and, for "integer", integral; its code
    is trunc(x).  Range first, then the conversion, so no value outside the
    integers is ever cast.  Any other x goes ``other_left``."""
    ok = x > -1.0 if rule == CAT_TRUNCATE else x >= 0.0
    if ok and x < 32.0 * words:
        c = np.int64(x)                       # toward zero: (-1, 0) is code 0 under "truncate"
        if rule == CAT_INTEGER and np.float64(c) != x:
            return other_left != 0
        return (np.int64(bits[begin + (c >> 5)]) >> (c & 31)) & 1 != 0
    return other_left != 0
