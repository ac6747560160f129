"""The L2-SVM (squared hinge) in the primal, with an unregularised bias.

    min_{w,b}  1/2 w' R w + 1/2 sum_i mu_i [1 - y_i (w' phi_i + b)]_+^2

is AFR's inner problem, paper Eq. (1) / thesis Eq. (2.21) with class weights
(thesis Eq. 2.26, bottom), divided by C: R = I / C.  Any PSD R works (a
reduced kernel SVM passes R = K_JJ).  The bias is *not* regularised: AFR's
gradient (paper Eqs. 12-13, thesis Eqs. 2.29-2.31) is derived for that
problem, which liblinear (it regularises the bias) does not solve.

Solver: primal finite Newton (Keerthi & DeCoste 2005; Chapelle 2007).  With
psi_i = [phi_i; 1] and the active set A = {i : y_i f_i < 1},

    M = diag(R, 0) + sum_{i in A} mu_i psi_i psi_i',   z = sum_{i in A} mu_i y_i psi_i,

and M theta = z is the minimiser for a fixed A (thesis Eq. 2.31's M, whose
"1/C" block means I/C).  Iterate: Newton point, exact line search on the
piecewise-quadratic objective, new A; stop when the Newton point keeps A
(there the objective's gradient is the quadratic's, zero).

``afr_gradients`` gives d loss_V / d phi on the fitting rows and
d loss_V / d log C by one adjoint solve with M's Cholesky factor (O(n S)),
which equals the thesis' Eqs. (2.28)-(2.33) with their typos corrected
(``docs/algorithms/afr-cvm.md`` §1.2, §1.4).

Every product and the Cholesky factorisation are ``trainers/linalg.py``'s, in
a fixed order (no BLAS/LAPACK), so the solution, and AFR's representation
built on its gradients, do not depend on the CPU kernel or thread count.

``LinearSVMClassifier`` is the linear-SVM baseline of the AFR paper (Figs.
3, 4) on raw features, standardised in training and folded back into one
``linear`` IR node.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .. import linalg
from ..common import class_weight_per_class, holdout_rows, no_predict_proba, positive_grid, progress_bar, single_thread
from .linear_estimator import LinearEstimator, standardized


@dataclass
class SVMSolution:
    """theta = [w; b]; ``active`` is the final active set (bool [n]);
    ``chol`` is the lower Cholesky factor of the final M (with jitter),
    ``linalg.cholesky``'s."""

    theta: np.ndarray
    active: np.ndarray
    chol: np.ndarray
    n_iter: int
    margins: np.ndarray | None = None     # Psi theta on the solver's rows (linalg.matvec's bits)

    @property
    def w(self):
        return self.theta[:-1]

    @property
    def b(self):
        return float(self.theta[-1])


def _psi(Phi, biased=False):
    """Psi = [Phi, 1] in float64; ``biased``: Phi already is Psi (its last
    column the ones), used as it is, without a copy."""
    Phi = np.asarray(Phi, np.float64)
    return Phi if biased else np.hstack([Phi, np.ones((Phi.shape[0], 1))])


def _reg_matrix(reg, S):
    """diag(R, 0) as an [S+1, S+1] array; ``reg`` is a scalar (R = reg * I)
    or an [S, S] PSD matrix."""
    Rb = np.zeros((S + 1, S + 1))
    if np.ndim(reg) == 0:
        Rb[np.arange(S), np.arange(S)] = float(reg)
    else:
        Rb[:S, :S] = np.asarray(reg, np.float64)
    return Rb


def _objective(theta, Rb, Psi, y, mu):
    m = np.maximum(0.0, 1.0 - y * linalg.matvec(Psi, theta))
    return 0.5 * linalg.dot(theta, linalg.matvec(Rb, theta)) + 0.5 * np.sum(mu * m * m)


def _line_search(theta, d, Rb, Psi, y, mu, f):
    """argmin_t of the objective along theta + t d, t in (0, 1]: its
    derivative is piecewise linear and increasing; safeguarded Newton steps
    on it (exact within a linear piece) inside a shrinking bracket.  ``f``
    is Psi theta (the caller has it from the active set)."""
    df = linalg.matvec(Psi, d)
    yf, ydf = y * f, y * df
    Rd = linalg.matvec(Rb, d)
    a0, a1 = linalg.dot(theta, Rd), linalg.dot(d, Rd)      # regulariser: a0 + t a1
    mu_ydf = mu * ydf

    def slope(t):
        m = 1.0 - yf - t * ydf
        on = m > 0
        return a0 + t * a1 - linalg.dot(mu_ydf[on], m[on]), a1 + linalg.dot(mu_ydf[on], ydf[on])
    s1, _ = slope(1.0)
    if s1 <= 0:
        return 1.0
    lo, hi, t = 0.0, 1.0, 0.5
    for _ in range(100):
        s, ds = slope(t)
        if s > 0:
            hi = t
        else:
            lo = t
        if hi - lo < 1e-12 or s == 0:
            break
        nt = t - s / ds if ds > 0 else 0.5 * (lo + hi)
        t = nt if lo < nt < hi else 0.5 * (lo + hi)
    return t


def l2svm_newton(Phi, y, mu=None, reg=1.0, theta0=None, max_iter=100, *, biased=False) -> SVMSolution:
    """Solve the L2-SVM above by primal Newton.

    Parameters
    ----------
    Phi : float64 [n, S]
        Inputs (AFR: the representation phi(x) of the training rows T).
    y : [n]
        Labels in {-1, +1}.
    mu : float64 [n], optional
        Per-row weights (class weights beta_y of paper Eq. 6); default 1.
    reg : float or float64 [S, S]
        R of the regulariser 1/2 w' R w; a scalar means R = reg * I
        (AFR: reg = 1 / C).  The bias is never regularised.
    theta0 : float64 [S + 1], optional
        Warm start [w; b].
    max_iter : int
        Newton steps at most (default 100; it usually stops in < 10).
    biased : bool, default False
        ``Phi`` already ends with the bias column of ones (it is Psi), and
        is used as it is, without a copy: AFR passes a column prefix
        ``buf[:, :S + 1]`` of a buffer whose columns it updates in place.

    Returns
    -------
    SVMSolution
    """
    Psi = _psi(Phi, biased)
    n, S = Psi.shape[0], Psi.shape[1] - 1
    y = np.asarray(y, np.float64)
    mu = np.ones(n) if mu is None else np.asarray(mu, np.float64)
    mu_y = mu * y
    Rb = _reg_matrix(reg, S)
    theta = np.zeros(S + 1) if theta0 is None else np.asarray(theta0, np.float64).copy()
    if theta0 is None and mu.sum() > 0:       # start at the best bias alone
        theta[-1] = np.sum(mu_y) / np.sum(mu)
    f = linalg.matvec(Psi, theta)
    active = y * f < 1.0
    it = 0
    for it in range(1, max_iter + 1):
        rows = np.flatnonzero(active)
        chol = _factor(Rb, Psi, mu, rows)
        target = linalg.cho_solve(chol, linalg.rmatvec_rows(Psi, rows, mu_y[rows]))
        f_target = linalg.matvec(Psi, target)
        if np.array_equal(y * f_target < 1.0, active):
            # the Newton point keeps the active set: the objective's gradient
            # equals this quadratic's there, which is zero: the optimum
            return SVMSolution(theta=target, active=active, chol=chol, n_iter=it, margins=f_target)
        d = target - theta
        theta = theta + _line_search(theta, d, Rb, Psi, y, mu, f) * d
        f = linalg.matvec(Psi, theta)
        active = y * f < 1.0
    chol = _factor(Rb, Psi, mu, np.flatnonzero(active))
    return SVMSolution(theta=theta, active=active, chol=chol, n_iter=it, margins=f)


def _factor(Rb, Psi, mu, rows):
    """Cholesky factor of M = diag(R, 0) + sum over the active ``rows`` of
    mu_i psi_i psi_i' (their Gram read in place: ``linalg.weighted_gram_rows``,
    the bits of ``weighted_gram(Psi[rows], mu[rows])``)."""
    M = Rb + linalg.weighted_gram_rows(Psi, rows, mu[rows])
    # jitter: M is singular only when no row is active and R has a zero
    # block (the bias); 1e-12 of the diagonal's scale is far below any
    # entry the data put there
    jitter = 1e-12 * max(1.0, float(np.mean(np.diag(M))))
    L, ok = linalg.cholesky(M + jitter * np.eye(M.shape[0]))
    if not ok:
        raise np.linalg.LinAlgError("l2svm_newton: the Newton system is not positive definite "
                                    "(non-finite inputs or a non-PSD regulariser R)")
    return L


def sigmoid_loss(margins, mu, a):
    """AFR's smooth 0-1 loss sum_j mu_j sigma_a(y_j f_j), sigma_a(z) =
    1 / (1 + e^{a z}) (paper Eq. 6 with the sign fixed: it needs y_j and
    e^{+az}).  ``margins`` = y * f.  Returns (loss, sigma)."""
    s = 0.5 * (1.0 - np.tanh(0.5 * a * margins))   # = 1 / (1 + e^{a z}), overflow-free
    return float(np.sum(mu * s)), s


@dataclass
class AFRGradients:
    """d loss_V / d phi on T rows [nT, S] and V rows [nV, S], d loss_V /
    d log C, and loss_V itself."""

    d_phi_T: np.ndarray
    d_phi_V: np.ndarray
    d_log_C: float
    loss: float


def afr_gradients(sol: SVMSolution, Phi_T, y_T, mu_T, Phi_V, y_V, mu_V, C, a=5.0) -> AFRGradients:
    """Gradients of loss_V = sum_{j in V} mu_j sigma_a(y_j f_j) (paper Eq. 6,
    thesis Eq. 2.25, signs fixed) through the SVM solved on T.

    Adjoint form of thesis Eqs. (2.28)-(2.33) (paper Eqs. 9-14); with
    d_j = d loss_V / d f_j = -a mu_j y_j sigma (1 - sigma) (the thesis' Eq.
    2.32 drops the factor a mu), g = sum_V d_j psi_j and v = M^{-1} g:

        V rows:          d/d phi_s(x_j) = d_j w_s                       (2.30)
        T rows in A:     d/d phi_s(x_i) = mu_i [v_s (y_i - f_i) - w_s v'psi_i]
        T rows not in A: 0                                       (2.29, 2.31)
        d/d log C = v_{1:S}' w / C                                      (2.33)

    Parameters
    ----------
    sol : SVMSolution
        ``l2svm_newton(Phi_T, y_T, mu_T, 1 / C)``.
    Phi_T, Phi_V : float64 [nT, S], [nV, S]
    y_T, y_V : labels in {-1, +1}
    mu_T, mu_V : float64 weights
    C : float
        The SVM's C (the solution's regulariser is 1 / C).
    a : float
        Sigmoid steepness (paper §4: 5).

    Returns
    -------
    AFRGradients
    """
    w = sol.w
    loss, d, v, residual_T, Psi_T_v, coef = afr_adjoint(sol, Phi_T, y_T, mu_T, Phi_V, y_V, mu_V, a)
    d_phi_V = d[:, None] * w[None, :]
    d_phi_T = coef[:, None] * (np.outer(residual_T, v[:-1]) - np.outer(Psi_T_v, w))
    return AFRGradients(d_phi_T=d_phi_T, d_phi_V=d_phi_V, d_log_C=linalg.dot(v[:-1], w) / C, loss=loss)


def afr_adjoint(sol: SVMSolution, Phi_T, y_T, mu_T, Phi_V, y_V, mu_V, a, biased=False):
    """The per-row factors every AFR gradient is made of (``afr_gradients``'
    adjoint form): loss_V, d_j on V rows, v = M^{-1} g, the residuals
    y_i - f_i and v'psi_i on T rows, and mu_i on T rows in A (0 elsewhere).
    ``afr_gradients`` takes outer products of them; AFR's fit reads one
    column at a time (``anytime.afr_fit.gradient_column``).  ``biased``:
    Phi_T and Phi_V already end with the bias column (``l2svm_newton``'s
    ``biased``), used without a copy."""
    theta = sol.theta
    Psi_V, Psi_T = _psi(Phi_V, biased), _psi(Phi_T, biased)
    yV = np.asarray(y_V, np.float64)
    loss, s = sigmoid_loss(yV * linalg.matvec(Psi_V, theta), mu_V, a)
    d = -a * mu_V * yV * s * (1.0 - s)
    v = linalg.cho_solve(sol.chol, linalg.rmatvec(Psi_V, d))
    # AFR's path (``biased``: ``sol`` was just solved on this very Psi_T) takes the solver's own Psi_T theta
    # (the same matvec, the same bits); any other caller gets it computed
    f_T = sol.margins if biased and sol.margins is not None else linalg.matvec(Psi_T, theta)
    residual_T = np.asarray(y_T, np.float64) - f_T
    return loss, d, v, residual_T, linalg.matvec(Psi_T, v), np.where(sol.active, mu_T, 0.0)


# ---------------------------------------------------------------- estimator
class LinearSVMClassifier(LinearEstimator):
    """Linear L2-SVM on the raw features (the AFR paper's "SVM linear kernel"
    baseline, Figs. 3-4; thesis Figs. 2.8-2.9), exported as one ``linear``
    IR node.  Every feature with a non-zero weight is paid for.

    Parameters
    ----------
    C : float or sequence of float, default 1.0
        The SVM's C (paper Eq. 1).  A sequence is a grid: each value is
        scored on ``eval_set`` (or on a seeded ``validation_fraction``
        hold-out) by the accuracy of its IR model, and the best one is
        refitted on all the training rows.
    class_weight : None, "balanced" or dict
        Row weights by class (beta_y in the paper).
    standardize : bool, default True
        Train on (x - mean) / std and fold the scaling back into w and b
        (float32); the model reads raw features.
    validation_fraction : float, default 0.2
        Hold-out share for choosing C from a grid without ``eval_set``.
    max_iter : int, default 100
        Newton steps at most.
    feature_costs, feature_groups, group_costs, feature_names, group_names
        The cost specification (``FeatureCosts``); unit costs by default.
    random_state : int or None
        Seeds the hold-out split.
    verbose : int, default 1
        A progress bar over the grid of C (one fit per value).

    Multiclass targets are fitted one-vs-rest into one K-wide linear node
    (the first maximal margin wins).
    """

    def __init__(self, *, C=1.0, class_weight=None, standardize=True, validation_fraction=0.2,
                 max_iter=100, feature_costs=None, feature_groups=None, group_costs=None,
                 feature_names=None, group_names=None, random_state=None, verbose=1):
        self.verbose = verbose
        self.C = C
        self.class_weight = class_weight
        self.standardize = standardize
        self.validation_fraction = validation_fraction
        self.max_iter = max_iter
        self.feature_costs = feature_costs
        self.feature_groups = feature_groups
        self.group_costs = group_costs
        self.feature_names = feature_names
        self.group_names = group_names
        self.random_state = random_state

    _node_name = "linear_svm"
    _transforms = ("identity", "identity")

    predict_proba = no_predict_proba("linear SVM margins are not probabilities; use decision_function")

    def fit(self, X, y, eval_set=None):
        """Fit on X [N, F] (no missing values) and labels y.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
        y : array-like of shape (n_samples,)
        eval_set : (X_val, y_val), optional
            Rows for choosing C when ``C`` is a grid.
        """
        X, y = self._validate_X_y(X, y)
        idx = self._encode_labels(y)
        self._costs = self._cost_spec(X.shape[1])
        grid = positive_grid(self.C, "C")
        if grid.size > 1:
            if eval_set is not None:
                Xs, ys = X, idx
                Xv, yv = self._validate_eval_set(eval_set)
            else:
                fit_rows, val = holdout_rows(X.shape[0], self.validation_fraction, self.random_state)
                Xs, ys, Xv, yv = X[fit_rows], idx[fit_rows], X[val], idx[val]
            from ...runtimes.reference import predict
            scores = []
            with progress_bar(self.verbose, grid.size, "linear SVM grid", "fit") as bar:
                for c in grid:
                    with single_thread():
                        self._fit_weights(Xs, ys, c)
                    scores.append(float(np.mean(predict(self.to_ir(), Xv).output == self.classes_[yv])))
                    bar.update()
            self.C_ = float(grid[int(np.argmax(scores))])
            self.validation_scores_ = scores
        else:
            self.C_ = float(grid[0])
        with single_thread():   # [F+1]^2 systems: one thread is faster
            self._fit_weights(X, idx, self.C_)
        return self._set_model(self.to_ir())

    def _fit_weights(self, X, idx, C):
        Z, mean, scale = standardized(X, self.standardize)
        K = len(self.classes_)
        cols = [1] if K == 2 else range(K)
        W, B = np.zeros((X.shape[1], len(cols))), np.zeros(len(cols))
        self.n_iter_ = 0                                 # Newton steps, most over the columns
        mu = class_weight_per_class(self.class_weight, self.classes_, idx)[idx]   # same rows, same weights per column
        for j, k in enumerate(cols):
            y_pm = np.where(idx == k, 1.0, -1.0)
            sol = l2svm_newton(Z, y_pm, mu, 1.0 / C, max_iter=self.max_iter)
            self.n_iter_ = max(self.n_iter_, sol.n_iter)
            W[:, j] = sol.w * scale                   # w' x = w (x - m) / s
            B[j] = sol.b - linalg.dot(sol.w, mean * scale)
        self.coef_, self.intercept_, self._fitted_C = W.T, B, float(C)

    def _ir_metadata(self):
        return {"C": self._fitted_C}
