"""Rows and data shared by the importer tests."""
import numpy as np

from skinflint.verify import adversarial_rows


def data(n=400, F=6, seed=0, nan=0.1):
    """A small float32 problem with NaNs; y_bin, y_reg, y_3 targets."""
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, F)).astype(np.float32)
    Z = X.copy()
    X[rng.random(X.shape) < nan] = np.nan
    y_reg = Z[:, 0] + 2 * Z[:, 1] * Z[:, 2] + 0.1 * rng.normal(size=n)
    return X, (y_reg > 0).astype(int), y_reg.astype(np.float64), np.digitize(y_reg, [-0.5, 0.5])


def check_rows(model, X, finite=True):
    """X plus verify's adversarial rows (every threshold, +-1 ulp, NaN);
    without +-inf when the source library refuses infinite inputs."""
    R = np.concatenate([X, adversarial_rows(model, X)])
    return R[~np.isinf(R).any(1)] if finite else R


def same_bits(a, b):
    a = np.ascontiguousarray(a, np.float32)
    b = np.ascontiguousarray(b, np.float32)
    return a.shape == b.shape and np.array_equal(a.view(np.uint32), b.view(np.uint32))


def same_bits64(a, b):
    """float64 arrays equal bit for bit (so -0.0 differs from 0.0)."""
    a = np.ascontiguousarray(a)
    b = np.ascontiguousarray(b)
    return (a.dtype == b.dtype == np.float64 and a.shape == b.shape
            and np.array_equal(a.view(np.uint64), b.view(np.uint64)))


def proba_bound(scores, n_proba):
    """|IR probability - the source's own float64 transform| per row: the
    IR rounds each margin to float32 (moving any probability by at most
    2 max_k|m_k| u, the softmax / logistic slope being <= 1), then its
    float32 transform errs by the subtraction from the max (u |s_k - max|
    times p_k <= 1), expf (2 ulp), the K-term sum (K u), the division and
    1 - p (2 u); the source's double transform errs by far less than u.
    u = 2^-24.  docs/importers.md."""
    u = 2.0 ** -24
    return u * (2 * np.abs(np.asarray(scores, np.float64)).max(1, keepdims=True) + n_proba + 6)
