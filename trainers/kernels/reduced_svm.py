"""Reduced-SVM (Keerthi, Chapelle & DeCoste 2006, JMLR 7, "Building Support
Vector Machines with Reduced Classifier Complexity"), the thesis' "state of
the art" baseline (§4.5, Fig. 4.3).

The primal L2-SVM over a basis J of training rows,

    min_{beta, b}  1/2 beta' K_JJ beta / C + 1/2 sum_i [1 - y_i (K_iJ beta + b)]_+^2,

grown one basis row at a time: each step draws ``n_candidates`` (kappa = 59)
random rows outside J, scores each by the objective decrease of minimising
over its own coefficient alone (the others fixed; an exact 1-D Newton on the
piecewise quadratic), adds the best, and re-solves all coefficients by the
primal Newton method, warm-started (Keerthi et al. §3-4; kappa = 59 makes the
best draw lie in the top 5 % with probability 0.95).
"""
from __future__ import annotations

import numpy as np

from ... import ir
from .. import linalg
from ..common import progress_bar
from .cvm import n_vectors
from .kernel_math import kernel_matrix
from .kernel_svm import (
    KernelEstimator,
    KernelSVMClassifier,
    _WrapsSVM,
    class_targets,
    kernel_node,
    svm_task,
    transform,
    unfrozen,
)


def candidate_gains(Kc, Kcc, KcJ_beta, y, out, C, newton_steps=8):
    """Objective decrease of adding each candidate with its coefficient
    alone optimised (Keerthi et al. 2006 §4.1), vectorised over candidates.

    Parameters
    ----------
    Kc : [n, c] kernel between the training rows and the candidates
    Kcc : [c] k(x_c, x_c);  KcJ_beta : [c] K_cJ beta
    y : [n] ±1;  out : [n] current outputs K_iJ beta + b;  C : float

    Returns
    -------
    [c] decrease of the objective (>= 0)
    """
    t = np.zeros(Kc.shape[1])
    lam = 1.0 / C
    yK = y[:, None] * Kc

    def obj(t):
        m = np.maximum(0.0, 1.0 - (y * out)[:, None] - yK * t[None, :])
        return lam * (t * KcJ_beta + 0.5 * t * t * Kcc) + 0.5 * (m * m).sum(0)

    for _ in range(newton_steps):   # piecewise quadratic: Newton with the active set refreshed
        m = 1.0 - (y * out)[:, None] - yK * t[None, :]
        act = m > 0
        g = lam * (KcJ_beta + t * Kcc) - (np.where(act, yK * m, 0.0)).sum(0)
        h = lam * Kcc + np.where(act, Kc * Kc, 0.0).sum(0)
        t = t - g / np.maximum(h, 1e-300)
    return np.maximum(obj(np.zeros_like(t)) - obj(t), 0.0)


def _line_search(out, dout, y, a0, a1):
    """The argmin over t in (0, 1] of the objective along a Newton direction:
    its slope ``a0 + t a1 - sum_{active} y_i dout_i m_i(t)`` is piecewise
    linear and increasing, so bisect on it (60 halvings: float64 exact)."""
    yo, yd = y * out, y * dout

    def slope(t):
        m = 1.0 - yo - t * yd
        on = m > 0
        return a0 + t * a1 - linalg.dot(yd[on], m[on])
    if slope(1.0) <= 0:
        return 1.0
    lo, hi = 0.0, 1.0
    for _ in range(60):
        mid = 0.5 * (lo + hi)
        if slope(mid) > 0:
            hi = mid
        else:
            lo = mid
    return 0.5 * (lo + hi)


class _PrimalNewton:
    """The primal L2-SVM over a growing basis, ``1/2 beta' K_JJ beta / C +
    1/2 sum_i [1 - y_i (K_iJ beta + b)]_+^2`` with the bias unregularised,
    solved by Newton steps with an exact line search (Keerthi et al. 2006
    §3; Chapelle 2007).  Keeps ``M = diag(0, K_JJ / C) + Psi_A' Psi_A``
    (Psi = [1, K_XJ], A the active rows) up to date as rows enter or leave
    A and as basis columns are added, so a step costs O(|dA| S^2 + S^3 / 3)
    instead of re-forming M (O(n S^2))."""

    def __init__(self, y, C):
        self.y, self.C = y, float(C)
        n = y.shape[0]
        self.Psi = np.ones((n, 1))
        self.theta = np.array([np.mean(y)])
        self.R = np.zeros((1, 1))
        self.out = np.full(n, self.theta[0])
        self.active = y * self.out < 1.0
        self.M = self._full_M()

    def _full_M(self):
        PA = self.Psi[self.active]
        return self.R + linalg.tmatmul(PA, PA)

    def add_column(self, col, k_row, k_self):
        """Add basis function ``col`` = K(X, x_j) [n]; ``k_row`` = K(x_J, x_j)
        for the current basis, ``k_self`` = k(x_j, x_j)."""
        S1 = self.Psi.shape[1]
        r = np.zeros(S1 + 1)
        r[1:S1] = k_row / self.C
        r[S1] = k_self / self.C
        R = np.zeros((S1 + 1, S1 + 1))
        R[:S1, :S1] = self.R
        R[S1, :] = R[:, S1] = r
        self.R = R
        ca = col[self.active]
        m = np.empty(S1 + 1)
        m[:S1] = linalg.rmatvec(self.Psi[self.active], ca)
        m[S1] = linalg.dot(ca, ca)
        M = np.zeros((S1 + 1, S1 + 1))
        M[:S1, :S1] = self.M
        M[S1, :] = M[:, S1] = m + r
        self.M = M
        self.Psi = np.column_stack([self.Psi, col])
        self.theta = np.append(self.theta, 0.0)

    def solve(self, max_iter=100):
        y, Psi = self.y, self.Psi
        for it in range(max_iter):
            A = self.active
            z = linalg.rmatvec(Psi[A], y[A])
            jitter = 1e-12 * max(1.0, float(np.mean(np.diag(self.M))))
            target = linalg.solve(self.M + jitter * np.eye(self.M.shape[0]), z)
            d = target - self.theta
            dout = linalg.matvec(Psi, d)
            Rd = linalg.matvec(self.R, d)
            t = _line_search(self.out, dout, y, linalg.dot(self.theta, Rd), linalg.dot(d, Rd))
            self.theta = self.theta + t * d
            self.out = self.out + t * dout
            new = y * self.out < 1.0
            changed = new != A
            if not changed.any() and t == 1.0:
                break
            if it % 10 == 9:                     # refresh: bound the drift of the updates
                self.active = new
                self.M = self._full_M()
                continue
            add, rem = changed & new, changed & A
            self.M = self.M + linalg.tmatmul(Psi[add], Psi[add]) - linalg.tmatmul(Psi[rem], Psi[rem])
            self.active = new
        self.out = linalg.matvec(Psi, self.theta)  # no drift into the next step's scores
        return self.theta


def reduced_svm_path(X, y, m, C, gamma, *, n_candidates=59, seed=0, checkpoints=None, bar=None):
    """Grow the basis to m rows.

    Parameters
    ----------
    X : [n, D] float64 (standardised) training rows;  y : [n] ±1
    m : int;  C : float;  gamma : float (rbf)
    n_candidates : int, default 59
    seed : int
    checkpoints : iterable of int, optional
        Basis sizes at which to record (J, beta, b) (default: only m).
    bar : progress bar, optional
        Advanced once per vector added.

    Returns
    -------
    dict {size: (J int64 [size], beta [size], b)}
    """
    n = X.shape[0]
    rng = np.random.default_rng(seed)
    keep = set(checkpoints or ()) | {m}
    newton = _PrimalNewton(y, C)
    J = []
    free = np.ones(n, bool)
    path = {}
    for size in range(1, min(m, n) + 1):
        cand = np.flatnonzero(free)
        if cand.size > n_candidates:
            cand = rng.choice(cand, n_candidates, replace=False)
        Kc = kernel_matrix(X, X[cand], "rbf", gamma)
        beta = newton.theta[1:]
        KcJb = linalg.rmatvec(Kc[J], beta) if J else np.zeros(cand.size)
        gains = candidate_gains(Kc, np.ones(cand.size), KcJb, y, newton.out, C)
        best = int(np.argmax(gains))
        j = int(cand[best])
        newton.add_column(Kc[:, best], Kc[J, best], 1.0)
        J.append(j)
        free[j] = False
        theta = newton.solve()
        if size in keep:
            path[size] = (np.asarray(J, np.int64), theta[1:].copy(), float(theta[0]))
        if bar is not None:
            bar.update()
    return path


def _shared_basis(solutions, Xs):
    """One node from per-column (J, beta, b): the union of the basis rows
    (first entry order kept), coefficients [U, K] (0 where a row is not in a
    column's basis), biases [K].  Returns (rows, vectors, coef, bias)."""
    rows = list(dict.fromkeys(int(j) for J, _, _ in solutions for j in J))
    pos = {r: i for i, r in enumerate(rows)}
    coef = np.zeros((len(rows), len(solutions)))
    for k, (J, beta, _) in enumerate(solutions):
        coef[[pos[int(j)] for j in J], k] = beta
    rows = np.asarray(rows, np.int64)
    return rows, Xs[rows].astype(np.float32), coef, np.array([b for _, _, b in solutions])


class ReducedSVMClassifier(_WrapsSVM, KernelEstimator):
    """Reduced-SVM (Keerthi et al. 2006): an rbf L2-SVM whose basis is grown
    greedily from the training rows to ``n_support_vectors``.  Multiclass
    targets are one-vs-rest: each class grows its own basis of that size and
    the node holds their union (each row evaluated and paid once).

    Parameters
    ----------
    n_support_vectors : int or float, default 0.1
        A count, or a fraction of the full SVM's number of support vectors
        (the full SVM is then fitted, or taken from ``svm``).
    C, gamma : float or sequence, default (1, 10, 100) and None (1 / D)
        Chosen as the full SVM's (grid on a validation split) unless ``svm``
        is given, whose ``C_`` / ``gamma_`` / standardisation are then reused.
    svm : KernelSVMClassifier, optional
    n_candidates : int, default 59 (kappa)
    record_sizes : sequence of int, optional
        Smaller basis sizes whose solutions (one growth, re-solved at each
        size) are kept for ``to_ir(n_support=k)``: a whole accuracy curve
        from one fit.
    standardize, validation_fraction, sv_cost, feature_costs, ... : as
        ``KernelSVMClassifier``.
    random_state : int or None
        Seeds the candidate draws (and the validation split).
    verbose : int, default 1
        A progress bar over the basis growth (one step per vector and class).

    Attributes
    ----------
    support_ : indices of the basis rows in X, in the order they entered
        (the IR keeps that order: each prefix is an earlier, smaller model's basis)
    support_vectors_, dual_coef_, intercept_, n_support_, C_, gamma_ : arrays
        [m, D], [m, 1], [1], m, and the chosen C and gamma
    """

    def __init__(self, *, n_support_vectors=0.1, C=(1.0, 10.0, 100.0), gamma=None, svm=None,
                 n_candidates=59, record_sizes=None, standardize=True, validation_fraction=0.2, sv_cost=1.0,
                 feature_costs=None, feature_groups=None, group_costs=None, feature_names=None,
                 group_names=None, random_state=None, verbose=1):
        self.verbose = verbose
        self.n_support_vectors = n_support_vectors
        self.C = C
        self.gamma = gamma
        self.svm = svm
        self.n_candidates = n_candidates
        self.record_sizes = record_sizes
        self.standardize = standardize
        self.validation_fraction = validation_fraction
        self.sv_cost = sv_cost
        self.feature_costs = feature_costs
        self.feature_groups = feature_groups
        self.group_costs = group_costs
        self.feature_names = feature_names
        self.group_names = group_names
        self.random_state = random_state

    def fit(self, X, y, eval_set=None):
        """Fit on X [N, F] (no missing values) and labels y."""
        X, y = self._validate_X_y(X, y)
        idx = self._encode_labels(y)
        if int(self.n_candidates) < 1:
            raise ValueError(f"n_candidates must be >= 1, got {self.n_candidates!r}")
        self._costs = self._cost_spec(X.shape[1])
        svm = unfrozen(self.svm)
        needs_full = svm is None and not (isinstance(self.n_support_vectors, (int, np.integer))
                                          and np.ndim(self.C) == 0)
        if svm is None and needs_full:
            svm = KernelSVMClassifier(C=self.C, gamma=self.gamma, standardize=self.standardize,
                                      validation_fraction=self.validation_fraction,
                                      random_state=self.random_state, verbose=self.verbose).fit(X, y, eval_set=eval_set)
        if svm is not None:
            self.features_, self.shift_, self.scale_ = svm.features_, svm.shift_, svm.scale_
            self.C_, self.gamma_, n_full = svm.C_, svm.gamma_, svm.n_support_
        else:
            from .kernel_svm import resolve_gamma, standardizer
            self.features_, self.shift_, self.scale_ = standardizer(X, self.standardize)
            self.C_ = float(self.C)
            self.gamma_ = resolve_gamma(self.gamma, self.features_.size)
            n_full = X.shape[0]
        m = n_vectors(self.n_support_vectors, n_full)
        Xs = transform(X, self.features_, self.shift_, self.scale_).astype(np.float64)
        Y = class_targets(idx, len(self.classes_))
        seed = 0 if self.random_state is None else int(self.random_state)
        sizes = [int(k) for k in (self.record_sizes or ()) if 0 < int(k) < m]
        with progress_bar(self.verbose, m * Y.shape[1], "Reduced-SVM", "vector") as bar:
            paths = [reduced_svm_path(Xs, Y[:, j], m, self.C_, self.gamma_, n_candidates=int(self.n_candidates),
                                      seed=seed + j, checkpoints=sizes, bar=bar) for j in range(Y.shape[1])]
        self.path_ = {k: _shared_basis([p[k] for p in paths], Xs) for k in paths[0]}
        self.support_, self.support_vectors_, self.dual_coef_, self.intercept_ = self.path_[m]
        self.n_support_ = int(self.support_.size)
        self.n_iter_ = m
        return self._set_model(self.to_ir())

    def to_ir(self, n_support=None) -> ir.Model:
        """One rbf ``kernel`` node over the basis rows, in entry order; with
        ``n_support`` the solution recorded at that basis size."""
        if getattr(self, "support_vectors_", None) is None:
            raise RuntimeError("this ReducedSVMClassifier is not fitted yet; call fit first")
        sv, coef, b = self.support_vectors_, self.dual_coef_, self.intercept_
        if n_support is not None:
            if n_support not in self.path_:
                raise ValueError(f"n_support={n_support} was not recorded; fit with it in "
                                 f"record_sizes (recorded: {sorted(self.path_)})")
            _, sv, coef, b = self.path_[n_support]
        node = kernel_node(sv, coef, b, self.features_,
                           kernel="rbf", gamma=self.gamma_, shift=self.shift_, scale=self.scale_,
                           sv_cost=self.sv_cost, name="reduced_svm")
        return self._ir_model([node], 0, svm_task(self._ir_classes()), self._costs,
                              n_support=int(sv.shape[0]), C=self.C_, gamma=self.gamma_)
