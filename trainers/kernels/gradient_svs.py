"""CVM's numerics: the LARS-SVM selection (thesis eqs. 4.6-4.9), the ridge
refit, gradient support vectors (eq. 4.10), and the prefix order that keeps
budget-truncated models good.

All float64; every product, solve and the optimiser's vector operations run
in ``trainers/linalg.py`` / ``trainers/lbfgs.py`` in a fixed order (no BLAS),
so the selected and moved vectors do not depend on the CPU kernel or the
thread count.  Targets ``T`` are ``[n, K]`` (K = 1 for binary); coefficients
``B`` are ``[m, K]``.
"""
from __future__ import annotations

import numpy as np

from .. import lbfgs, linalg
from .kernel_math import kernel_matrix
from .lars import lars_path_lazy


def lars_select(K, T, m, *, ridge=1.0):
    """The LARS-SVM selection: LAR on ``min |t - K beta|^2 + ridge beta' K beta``
    with ``beta`` restricted to ``m`` non-zeros (thesis eqs. 4.6-4.9; the
    eigen-factorisation of 4.8 is not needed: LAR needs only the Gram
    ``G = K K + ridge K`` and ``Xy = K t``, and G's columns are formed as
    regressors enter).

    For K > 1 outputs (one-vs-rest, shared vectors) this is simultaneous OMP
    instead: each step adds the vector whose kernel column correlates most
    (in ℓ2 over outputs) with the ridge-refit residual.

    Parameters
    ----------
    K : array [n, n] float64
        Kernel matrix of the candidate support vectors.
    T : array [n, K] float64
        Targets (labels minus bias, or the full SVM's predictions minus bias).
    m : int
        Number of vectors to select.
    ridge : float, default 1.0
        rho in ``G = K K + rho K`` (1 in the thesis' eq. 4.7, where C is dropped).

    Returns
    -------
    ndarray [m] int64: selected rows of K, in entry order.
    """
    n = K.shape[0]
    m = min(int(m), n)
    if T.shape[1] == 1:
        K = np.ascontiguousarray(K)
        Xy = linalg.matvec(K, np.ascontiguousarray(T[:, 0]))
        diag = (K * K).sum(0) + ridge * np.diag(K)

        def column(j):
            kj = np.ascontiguousarray(K[:, j])
            return linalg.matvec(K, kj) + ridge * kj
        res = lars_path_lazy(Xy, column, diag, m)
        return res.active
    sel = []
    R = T.copy()
    norms = np.sqrt((K * K).sum(0)) + 1e-300
    for _ in range(m):
        KR = linalg.tmatmul(K, R)
        score = np.sqrt((KR * KR).sum(1)) / norms
        score[sel] = -np.inf
        sel.append(int(np.argmax(score)))
        B = ridge_refit(K[:, sel], K[np.ix_(sel, sel)], T, ridge)
        R = T - linalg.matmul(np.ascontiguousarray(K[:, sel]), B)
    return np.asarray(sel, np.int64)


def ridge_refit(KE, KS, T, ridge=1.0):
    """``B = argmin |T - KE B|^2 + ridge tr(B' KS B)`` (the refit of the
    selected vectors; the thesis' objective 4.7 restricted to them).

    Parameters
    ----------
    KE : array [n, m] kernel between fit rows and the selected vectors
    KS : array [m, m] kernel among the selected vectors
    T : array [n, K] targets
    ridge : float

    Returns
    -------
    ndarray [m, K] float64
    """
    KE = np.ascontiguousarray(KE, np.float64)
    A = linalg.tmatmul(KE, KE) + ridge * KS
    A[np.diag_indices_from(A)] += 1e-10 * max(np.trace(A) / max(A.shape[0], 1), 1e-300)
    return linalg.solve(A, linalg.tmatmul(KE, np.ascontiguousarray(T, np.float64)))


def cvm_loss_grad(theta, XE, T, m, gamma):
    """Mean squared approximation loss of eq. 4.10 and its gradient, for the
    rbf kernel ``k(z, x) = exp(-gamma |z - x|^2)``.

    ``L = |K_EZ B - T|^2 / n``; with ``r = K_EZ B - T``,
    ``dL/dB = 2 K_EZ' r / n`` and
    ``dL/dz_j = -(4 gamma / n) (z_j sum_i W_ij - sum_i W_ij x_i)``,
    ``W = (r B') o K_EZ``.

    Parameters
    ----------
    theta : array [m*D + m*K] float64: Z (row-major) then B (row-major)
    XE : array [n, D] fit rows;  T : array [n, K] targets;  m : int;  gamma : float

    Returns
    -------
    (float, ndarray): loss and gradient in theta's layout
    """
    n, D = XE.shape
    Kn = T.shape[1]
    Z = theta[: m * D].reshape(m, D)
    B = theta[m * D:].reshape(m, Kn)
    KEZ = kernel_matrix(XE, Z, "rbf", gamma)
    r = linalg.matmul(KEZ, np.ascontiguousarray(B)) - T
    loss = float((r * r).sum()) / n
    gB = (2.0 / n) * linalg.tmatmul(KEZ, r)
    W = linalg.matmul(r, np.ascontiguousarray(B.T)) * KEZ
    gZ = (-4.0 * gamma / n) * (Z * W.sum(0)[:, None] - linalg.tmatmul(W, XE))
    return loss, np.concatenate([gZ.ravel(), gB.ravel()])


def move_support_vectors(XE, T, Z0, B0, gamma, *, max_iter=300, method="L-BFGS-B", bar=None):
    """Gradient support vectors (thesis eq. 4.10): move the vectors Z and
    their coefficients B jointly to match the full model's predictions T on
    the fit rows XE.  The thesis names (Polak-Ribière) conjugate gradient
    (``method="CG"``); L-BFGS (``method="L-BFGS-B"``, no bounds) reaches
    lower losses in 300 iterations.  Both are ``trainers/lbfgs.py``'s.

    Parameters
    ----------
    XE : array [n, D];  T : array [n, K];  Z0 : array [m, D];  B0 : array [m, K]
    gamma : float
        The deployed (float32-rounded) rbf gamma.
    max_iter : int, default 300
    method : {"L-BFGS-B", "CG"}
    bar : progress bar, optional
        Advanced once per accepted optimiser step.

    Returns
    -------
    (Z [m, D], B [m, K], final loss, iterations)
    """
    m, D = Z0.shape
    theta0 = np.concatenate([np.asarray(Z0, np.float64).ravel(), np.asarray(B0, np.float64).ravel()])
    if max_iter <= 0:
        return Z0.copy(), B0.copy(), cvm_loss_grad(theta0, XE, T, m, gamma)[0], 0
    XE = np.ascontiguousarray(XE, np.float64)
    res = lbfgs.minimize(lambda th: cvm_loss_grad(th, XE, T, m, gamma), theta0, maxiter=int(max_iter),
                         method="cg" if method == "CG" else "lbfgs", callback=None if bar is None else bar.update)
    th = res.x
    return th[: m * D].reshape(m, D), th[m * D:].reshape(m, -1), float(res.fun), int(res.nit)


def prefix_order(KEZ, B, T):
    """Greedy order of the vectors so that every prefix (what a budget keeps,
    ``docs/costs.md``) approximates T well: step k adds the vector that
    minimises ``|sum_{j in prefix} k_j B_j - T|^2`` with the coefficients
    fixed (they are the full model's, a truncated IR model keeps them).

    Parameters
    ----------
    KEZ : array [n, m] kernel between fit rows and vectors
    B : array [m, K] coefficients;  T : array [n, K] targets

    Returns
    -------
    ndarray [m] int64 permutation
    """
    n, m = KEZ.shape
    R = T.copy()
    left = list(range(m))
    order = []
    # contribution of vector j: C_j = k_j B_j' [n, K]; |R - C_j|^2 = |R|^2 - 2<R, C_j> + |C_j|^2
    cn = (KEZ * KEZ).sum(0) * (B * B).sum(1)
    for _ in range(m):
        idx = np.asarray(left)
        gain = 2.0 * (linalg.tmatmul(np.ascontiguousarray(KEZ[:, idx]), R) * B[idx]).sum(1) - cn[idx]
        j = int(idx[np.argmax(gain)])
        order.append(j)
        left.remove(j)
        R -= KEZ[:, j][:, None] * B[j][None, :]
    return np.asarray(order, np.int64)
