"""Adversarial rows for importers of categorical splits (issue 34).

``categorical_rows(X, cat_columns, n_categories, rng)``: float32 rows built
from ``X`` in which each categorical column takes, one column at a time
(the others keep X's values, so deep nodes are reached), every category
code 0..n-1 and every value in ``special_values(n)``; then as many rows
again where every categorical column draws from all of them at once.
"""
import numpy as np

__all__ = ["categorical_rows", "special_values"]


def special_values(n_categories: int) -> np.ndarray:
    """float32 values that are not among the codes 0..n-1, or lie on the
    edges of a rule: codes just past the largest and past each 32-bit word
    of a set of n codes, large codes (a C cast to int of 2**31 and more is
    undefined), negatives (-0.5 truncates to 0, -1 does not), -0.0,
    non-integers, values in LightGBM's zero band, NaN and +-inf."""
    n = int(n_categories)
    w = -(-n // 32) * 32                               # the first code past n's last word
    past = [n, n + 1, n + 31, n + 32, w - 1, w, w + 1, w + 32, 1023, 1024, 1 << 16, 1 << 24]
    big = [1e6, 2.0 ** 31 - 128, 2.0 ** 31, 2.0 ** 32, 3e9, 1e10, 3.4e38]
    neg = [-0.0, -1e-36, -0.5, -0.99, -1.0, -1.5, -2.0, -31.0, -32.0, -1e6, -2.0 ** 31, -3e9, -3.4e38]
    frac = [1e-36, 0.5, 0.99, 1.5, 2.5, 31.5, 32.5, n - 0.5, n + 0.5]
    spec = [np.nan, np.inf, -np.inf]
    return np.array(past + big + neg + frac + spec, np.float32)


def categorical_rows(X, cat_columns, n_categories, rng) -> np.ndarray:
    """float32 rows [N, F] hitting every code 0..n-1 and every special value
    in each of ``cat_columns`` (``n_categories``: one int, or one per column)."""
    X = np.asarray(X, np.float32)
    cols = [int(c) for c in cat_columns]
    ns = np.broadcast_to(np.asarray(n_categories, np.int64), (len(cols),))
    out, k = [], 0
    pools = []
    for j, n in zip(cols, ns, strict=True):
        vals = np.concatenate([np.arange(n, dtype=np.float32), special_values(n)])
        pools.append(vals)
        R = X[(k + np.arange(len(vals))) % len(X)].copy()
        R[:, j] = vals
        out.append(R)
        k += len(vals)
    m = max(len(p) for p in pools)                    # every column at once
    R = X[rng.integers(0, len(X), m)].copy()
    for j, p in zip(cols, pools, strict=True):
        R[:, j] = rng.choice(p, m)
    out.append(R)
    return np.concatenate(out)
