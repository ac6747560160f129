"""Float64 kernel matrices for training the kernel trainers (CVM, LARS-SVM,
Reduced-SVM).

Distances are summed as ``(a_d - b_d)^2`` in feature order, in float64, by
``trainers/linalg.py`` (never BLAS, whose order depends on the CPU kernel and
thread count, and never the cancelling ``|a|^2 + |b|^2 - 2 a.b``
expansion); deployment sums the same terms in float32 (the IR's kernel node,
``docs/numerics.md``), so a model's deployed decision differs from these
float64 values in the last bits only.
"""
from __future__ import annotations

import math

import numpy as np
from numba import njit

from .. import linalg

KERNEL_NAMES = ("rbf", "linear", "poly")


def sq_distances(A, B) -> np.ndarray:
    """[len(A), len(B)] float64 squared Euclidean distances.

    Parameters
    ----------
    A, B : array [n, D] and [m, D]

    Returns
    -------
    ndarray [n, m] float64
    """
    A = np.ascontiguousarray(A, np.float64)
    Bt = np.ascontiguousarray(np.asarray(B, np.float64).T)
    return linalg.sq_distances(A, Bt)


@njit(cache=True)
def _exp_inplace(d):
    """Every entry replaced by its exp, in place, by the C library's ``exp``: numpy's own
    vectorised float64 exp (taken on CPUs with AVX-512) rounds about 5 % of
    values differently, which made a kernel model's bytes depend on the CPU."""
    flat = d.reshape(-1)
    for i in range(flat.shape[0]):
        flat[i] = math.exp(flat[i])
    return d


def kernel_matrix(A, B, kernel="rbf", gamma=1.0, coef0=0.0, degree=3) -> np.ndarray:
    """k(a_i, b_j) in float64: rbf ``exp(-gamma |a - b|^2)`` (thesis §4.4,
    gamma = 1 / (2 sigma^2)), linear ``a.b``, poly ``(gamma a.b + coef0)^degree``.

    Parameters
    ----------
    A, B : array [n, D] and [m, D]
    kernel : {"rbf", "linear", "poly"}
    gamma, coef0 : float
    degree : int

    Returns
    -------
    ndarray [n, m] float64
    """
    if kernel == "rbf":
        d = sq_distances(A, B)
        d *= -float(gamma)
        return _exp_inplace(d)
    dot = linalg.matmul(np.ascontiguousarray(A, np.float64), np.ascontiguousarray(np.asarray(B, np.float64).T))
    if kernel == "linear":
        return dot
    if kernel == "poly":
        return (float(gamma) * dot + float(coef0)) ** int(degree)
    raise ValueError(f"kernel: unknown kernel {kernel!r}; use one of {KERNEL_NAMES}")
