"""The Lemma-1 relaxation that the soft cascades (Cronus, CSCC) and the soft
trees of classifiers (CSTC) share.

Both train linear scorers ``s = b + X beta`` (a cascade stage, a tree node)
whose relaxed objective, with everything but one scorer fixed and that scorer
treated as the last one (a cascade's last stage, a tree's leaf), is

    f(b, beta) = 1/2 sum_i w_i (y_i - s_i)^2 + rho sum_c |beta_c|
                 + lam_P sum_m ct_m sqrt(G_m + a sum_c M_mc beta_c^2)

(Chen et al. 2012 Eq. 8 with the other stages fixed; thesis T(3.13) for one
node): ``w`` the rows' reach weights, ``M`` the item matrix (M_mc = 1 when
column c needs item m: a tree's evaluation, a feature, a group), ``ct`` the
items' costs, ``G`` what the other scorers on the path already put in each
item's norm, ``a`` this scorer's weight in it (Cronus' d_k^2, 1 elsewhere) and
``lam_P`` lambda times the scorer's exit mass.

Lemma 1 (Chen Eq. 11; thesis T(3.16)) majorises both non-smooth terms by
quadratics that touch them at the current point:

    |beta_c|  <= 1/2 (beta_c^2 / gamma_c + gamma_c),           gamma_c = |beta_c|
    sqrt(v_m) <= 1/2 (v_m / eta_m + eta_m),                      eta_m = sqrt(v_m)

so with the auxiliaries fixed ``f`` is a weighted ridge problem with the
closed form (Chen Eq. 14; thesis T(3.17))

    (X1' diag(w) X1 + diag(0, Gamma)) [b; beta] = X1' diag(w) y,
    Gamma_c = rho / gamma_c + lam_P a sum_m M_mc ct_m / eta_m,

X1 = [1, X].  ``lemma1_fit`` alternates the two (iteratively reweighted
least squares) until ``f`` stops falling; ``refit`` is the fine-tuning of the
last scorer without the cost term (thesis §3.4.4); ``routing`` is the soft
exit/branch probability of both models (Chen §3.2; thesis T(3.5)).

Every product and solve is ``trainers/linalg.py``'s, in a fixed order, so the
result does not depend on the BLAS build or the thread count.
"""
from __future__ import annotations

import numpy as np
from scipy.special import expit

from . import linalg

JITTER = 1e-10      # of the mean diagonal: keeps a system regular for a scorer no row reaches


def routing(s, theta, gamma):
    """sigma(gamma (s - theta)): the probability that a row with margin s
    passes a stage / goes to a node's upper child (Chen §3.2; T(3.5))."""
    return expit(gamma * (s - theta))


def design(X, cols, w, y):
    """X1 = [1, X[:, cols]] and its weighted normal equations
    (X1' diag(w) X1, X1' diag(w) y): the bias is index 0."""
    X1 = np.empty((X.shape[0], len(cols) + 1))
    X1[:, 0] = 1.0
    X1[:, 1:] = X[:, cols]
    return X1, linalg.weighted_gram(X1, w), linalg.rmatvec(X1, w * y)


def design_t(Xt, cols, w, y):
    """``design``'s normal equations (without X1) from the transposed basis
    ``Xt`` = X.T (contiguous [P, n]), reading only the rows ``cols``: the
    same bits (``linalg.cols_bias_gram``, ``linalg.cols_rmatvec``; the bias
    entry of the right-hand side is sum_i w_i y_i, i ascending, as
    ``rmatvec`` sums 1.0 * w_i y_i)."""
    cols = np.asarray(cols, np.int64)
    wy = w * y
    rhs = np.empty(cols.shape[0] + 1)
    rhs[0] = linalg.dot(np.ones(wy.shape[0]), wy)
    rhs[1:] = linalg.cols_rmatvec(Xt, cols, wy)
    return linalg.cols_bias_gram(Xt, cols, w), rhs


def item_norms(M, G, a, beta2):
    """eta_m = sqrt(G_m + a sum_c M_mc beta_c^2), the items' group norms
    (Lemma 1's optimal auxiliaries)."""
    return np.sqrt(G + a * linalg.matvec(M, beta2))


def item_weights(M, ct, eta):
    """sum_m M_mc ct_m / eta_m per column c (an item of norm 0 holds no
    non-zero column and adds nothing)."""
    inv = np.divide(ct, eta, out=np.zeros_like(eta), where=eta > 0)
    return linalg.rmatvec(M, inv)


def _ridge_solve(gram, rhs, idx, diag):
    return linalg.spd_solve(gram[np.ix_(idx, idx)] + np.diag(diag), rhs[idx], JITTER)


def lemma1_fit(gram, rhs, X, y, w, M, ct, G, a, lam_P, rho, clamp, cols, *, n_iter, tol,
               start=None, ridge=1e-6, Xt=None):
    """Minimise ``f`` over the bias and ``beta`` on ``cols`` by Lemma-1 IRLS.

    Parameters
    ----------
    gram, rhs : float64 [len(cols)+1, len(cols)+1], [len(cols)+1]
        Normal equations of [1, X[:, cols]] with the row weights ``w``
        (``design(X, cols, w, y)``).
    X : float64 [n, P] or None (with ``Xt``); y, w : float64 [n]
    M : float64 [m, P]; ct, G : float64 [m]; a, lam_P, rho : float
        The cost term (see the module docstring).
    clamp : float
        |beta_c| below this becomes 0 and leaves the support for good
        (thesis §3.4.3: the auxiliary gamma_c = 0 is an infinite penalty).
    cols : int array
        The columns allowed to be non-zero (ascending).
    n_iter : int
        IRLS steps at most.
    tol : float
        Stop when f falls by less than ``tol`` relative.
    start : (float, float64 [len(cols)]) or None
        The current (b, beta on cols); None starts from the ridge solution
        with ``ridge`` times the mean diagonal on the weights (not the bias).
    Xt : float64 [P, n] or None
        X.T, contiguous: the residuals then read only the rows of the
        non-zero weights (``linalg.cols_matvec``).  The same bits as
        ``matvec(X, beta)``: a row's sum starts at +0.0 and adding a +-0
        product never changes it.

    Returns
    -------
    (b, beta [P], f): the best point met (f never rises from it).
    """
    P = X.shape[1] if Xt is None else Xt.shape[0]
    cols = np.asarray(cols, np.int64)
    pos = np.arange(cols.shape[0])          # the live columns, as positions in ``cols`` (and gram)
    if start is None:
        diag = np.zeros(pos.shape[0] + 1)
        dg = np.diag(gram)[1:]
        diag[1:] = ridge * max(float(np.mean(dg)) if dg.size else 0.0, 1e-300)
        z = _ridge_solve(gram, rhs, np.arange(pos.shape[0] + 1), diag)
    else:
        z = np.concatenate(([float(start[0])], np.asarray(start[1], np.float64)))
    best_f, best = np.inf, None
    beta = np.zeros(P)
    for _ in range(n_iter):
        beta[:] = 0.0
        beta[cols[pos]] = z[1:]
        beta[np.abs(beta) < clamp] = 0.0
        eta = item_norms(M, G, a, beta * beta)
        if Xt is None:
            r = y - (z[0] + linalg.matvec(X, beta))
        else:
            nz = np.flatnonzero(beta)
            r = y - (z[0] + linalg.cols_matvec(Xt, nz, beta[nz]))
        f = 0.5 * linalg.dot(w, r * r) + rho * float(np.abs(beta).sum()) + lam_P * linalg.dot(ct, eta)
        if f > best_f * (1 - tol):
            if f < best_f:
                best_f, best = f, (float(z[0]), beta.copy())
            break
        best_f, best = f, (float(z[0]), beta.copy())
        pos = np.flatnonzero(beta[cols])
        live = cols[pos]
        diag = np.zeros(pos.shape[0] + 1)
        if rho > 0:
            diag[1:] += rho / np.abs(beta[live])
        if lam_P > 0:
            diag[1:] += lam_P * a * item_weights(np.ascontiguousarray(M[:, live]), ct, eta)
        z = _ridge_solve(gram, rhs, np.concatenate(([0], pos + 1)), diag)
    if best is None:            # n_iter == 0
        beta[:] = 0.0
        beta[cols[pos]] = z[1:]
        best = (float(z[0]), beta.copy())
        best_f = np.nan
    return best[0], best[1], best_f


def refit(gram, rhs, rho, *, n_iter=30, floor=1e-8, tol=1e-10):
    """Fine-tuning (thesis §3.4.4): weighted least squares on the normal
    equations ``gram`` z = ``rhs`` (z = [b; beta], the bias unpenalised)
    without the cost term, the l1 term by the same Lemma-1 IRLS
    (Gamma_c = rho / max(|beta_c|, floor)) until no coefficient moves by
    ``tol``.  Returns z."""
    idx = np.arange(gram.shape[0])
    z = _ridge_solve(gram, rhs, idx, np.zeros(idx.shape[0]))
    for _ in range(n_iter if rho > 0 else 0):
        diag = np.r_[0.0, rho / np.maximum(np.abs(z[1:]), floor)]
        z_new = _ridge_solve(gram, rhs, idx, diag)
        done = np.max(np.abs(z_new - z)) < tol
        z = z_new
        if done:
            break
    return z
