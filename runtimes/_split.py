"""Where a row goes at one tree split: the rule every tree walker of the
reference runtime shares (the per-row VM, its batch bank walk, the query
VM), so a numeric and a category-set split are decided in one place.

A numeric split sends x left when ``x <= threshold``; a category-set split
(``ir.nodes.CategorySplits``, docs/ir.md "Categorical splits") when x is a
category code of the bank's rule that is in the node's set.  NaN goes
``missing_left`` at either.
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


@njit(cache=True, inline="always")
def child(x, m, tn_threshold, tn_left, tn_right, tn_missing_left, tn_cat, tn_cat_words, tn_cat_rule,
          tn_other_left, cat_bits):
    """The child of split node m a row with value x takes (branchless for a
    numeric split: the walks of a block overlap instead of stalling on
    mispredicted branches)."""
    lft = tn_left[m]
    rgt = tn_right[m]
    if x != x:
        return lft if tn_missing_left[m] else rgt
    b = tn_cat[m]
    if b >= 0:
        return lft if category_left(x, tn_cat_rule[m], tn_cat_words[m], b, tn_other_left[m], cat_bits) else rgt
    go = np.int32(x > tn_threshold[m])
    return lft + go * (rgt - lft)
