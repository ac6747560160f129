"""The full kernel SVM exported exactly to one IR ``kernel`` node, and what
the kernel trainers share: the standardised inputs the IR recomputes, the
(C, gamma) grid on a validation split (thesis §4.5), and the kernel node with
its per-feature shift and scale.

The C-SVC dual is solved by skinflint's own SMO (``smo.py``: libsvm's
algorithm, working-set selection, tolerance and bias) over the float64
kernel matrix of ``kernel_math``, every reduction in a fixed order, so the
model's bytes are the same on every CPU, instruction set and thread count;
it is scikit-learn's ``SVC`` model to the solver's tolerance (libsvm's own
compiled arithmetic differs between x86-64 and aarch64).  A fitted ``SVC``
can still be imported as it is (``from_svc``).

Binary models are one node with one output: ``decision = b + sum_s
alpha_s k(sv_s, x')`` with scikit-learn's signs (``dual_coef_``,
``intercept_``; positive means ``classes_[1]``).  Multiclass models are
one-vs-rest (one binary SVC per class) with the union of their support
vectors shared in one K-wide node: each vector is evaluated and paid once.
(libsvm's own multiclass scheme is one-vs-one, whose vote counting the IR
has no node for.)
"""
from __future__ import annotations

import numpy as np
from sklearn.frozen import FrozenEstimator

from ... import ir
from ..base import CostSensitiveClassifier
from ..common import class_weight_per_class, holdout_rows, no_predict_proba, positive_grid, progress_bar
from .kernel_math import kernel_matrix
from .smo import fit_binary

DEFAULT_C = 1.0
# the SMO keeps the fit rows' float64 kernel matrix in memory: 8 GiB is about 32 000 rows
MAX_KERNEL_BYTES = 8 * 2**30
TOL = 1e-3      # the SMO stopping tolerance on m(a) - M(a): libsvm's eps, scikit-learn SVC's default tol


def standardizer(X, standardize):
    """Per-feature float32 ``shift`` (mean) and ``scale`` (1 / std) of the
    training rows, and the features a kernel reads (constant features are
    dropped: every row has the same value, so they are never paid for).

    Parameters
    ----------
    X : float32 [N, F]
    standardize : bool
        False: shift 0, scale 1 (no IR transform), every feature kept.

    Returns
    -------
    (features int64 [D], shift float32 [D] or None, scale float32 [D] or None)
    """
    F = X.shape[1]
    if not standardize:
        return np.arange(F), None, None
    X64 = X.astype(np.float64)
    mean, std = X64.mean(0), X64.std(0)
    feats = np.flatnonzero(std > 0)
    if feats.size == 0:
        raise ValueError("X: every feature is constant; a kernel model needs at least one that varies")
    shift = mean[feats].astype(np.float32)
    scale = (1.0 / std[feats]).astype(np.float32)
    return feats, shift, scale


def transform(X, features, shift, scale):
    """What the IR's kernel node computes before its sums:
    ``x' = (x - shift) * scale``, two float32 roundings (never fused)."""
    Xf = np.ascontiguousarray(np.asarray(X, np.float32)[:, features])
    if shift is None:
        return Xf
    return (Xf - shift) * scale


def resolve_gamma(gamma, n_dims):
    """``None`` means ``1 / D`` (scikit-learn's ``"scale"`` on standardised
    inputs); the result is rounded to float32, the IR's precision, so the
    trainer and the deployed model use the same value."""
    g = 1.0 / max(n_dims, 1) if gamma is None else float(gamma)
    if not (np.isfinite(g) and g > 0):
        raise ValueError(f"gamma must be a positive number, got {gamma!r}")
    return float(np.float32(g))


def kernel_node(support_vectors, alpha, bias, features, *, kernel, gamma, coef0=0.0, degree=3,
                shift=None, scale=None, sv_cost=1.0, name="svm"):
    """One IR kernel node; every support vector costs ``sv_cost`` (thesis
    §4.4: e, the cost of one kernel evaluation)."""
    S = np.asarray(support_vectors).shape[0]
    kw = {} if shift is None else {"shift": np.asarray(shift, np.float64),
                                   "scale": np.asarray(scale, np.float64)}
    return ir.kernel(np.asarray(support_vectors, np.float32).astype(np.float64),
                     np.asarray(alpha, np.float32).astype(np.float64), [int(f) for f in features],
                     kernel=kernel, gamma=float(np.float32(gamma)), coef0=float(np.float32(coef0)),
                     degree=int(degree) if kernel == "poly" else 1,
                     bias=np.asarray(bias, np.float32).astype(np.float64),
                     sv_cost=np.full(S, float(sv_cost)), name=name, **kw)


def unfrozen(svm):
    """A full SVM passed as ``svm=``, unwrapped from scikit-learn's
    ``FrozenEstimator`` (which ``clone``, hence ``GridSearchCV`` and
    ``cost_accuracy_curve``, keeps fitted; a bare fitted estimator is cloned
    unfitted)."""
    return svm.estimator if isinstance(svm, FrozenEstimator) else svm


def class_targets(idx, n_classes):
    """±1 targets [N, K'] for class indices: one column (classes_[1] is +1)
    for binary, one-vs-rest columns for multiclass."""
    if n_classes == 2:
        return np.where(idx == 1, 1.0, -1.0)[:, None]
    return np.where(idx[:, None] == np.arange(n_classes)[None, :], 1.0, -1.0)


class KernelEstimator(CostSensitiveClassifier):
    """What the kernel trainers share with scikit-learn: no missing values
    (a kernel reads every feature) and no ``predict_proba`` (the margin is
    an identity output, as ``SVC.decision_function``)."""

    _allow_missing = False

    predict_proba = no_predict_proba("kernel SVM margins are not probabilities; use decision_function")


class KernelSVMClassifier(KernelEstimator):
    """The full kernel SVM (thesis §4.5's "full SVM": the C-SVC of libsvm /
    scikit-learn's ``SVC``, solved by skinflint's SMO) as one IR ``kernel`` node.

    Parameters
    ----------
    kernel : {"rbf", "linear", "poly"}, default "rbf"
    C : float or sequence of float, default 1.0
        The C-SVC's C.  A sequence (and/or a sequence ``gamma``) is a grid: each
        pair is scored by the accuracy of its IR model on ``eval_set`` or a
        seeded ``validation_fraction`` hold-out, then the best is refitted
        on all rows (thesis §4.5 selects C and sigma on a 20 % split).
    gamma : float, sequence of float or None, default None
        rbf / poly gamma on the standardised inputs; None is 1 / D.
    degree, coef0 : int, float
        Polynomial kernel parameters.
    standardize : bool, default True
        Train on ``(x - mean) / std``; the node carries the float32 shift and
        scale, so the model reads raw features.
    class_weight : None, "balanced" or dict: per-class factors of C (libsvm's).
    validation_fraction : float, default 0.2
    sv_cost : float, default 1.0
        Cost of one kernel evaluation (one support vector), in the units of
        ``feature_costs``.
    sv_order : {"svc", "alpha"}, default "svc"
        Order of the vectors in the node: libsvm's, or by decreasing
        ``|alpha|`` (a better prefix when a budget truncates the sum).
    feature_costs, feature_groups, group_costs, feature_names, group_names
        The cost specification (``FeatureCosts``); unit costs by default.
    random_state : int or None
        Seeds the validation split.
    verbose : int, default 1
        A progress bar over the grid's fits.

    Attributes
    ----------
    support_vectors_ : float32 [S, D] in the standardised space
    dual_coef_ : float64 [S, K'] signed coefficients (K' = 1 for binary)
    intercept_ : float64 [K']
    gamma_, C_ : the fitted values
    n_support_ : int, S
    n_iter_ : int array [K'], SMO iterations per output
    features_, shift_, scale_ : the node's feature list and transform
    """

    def __init__(self, *, kernel="rbf", C=DEFAULT_C, gamma=None, degree=3, coef0=0.0,
                 standardize=True, class_weight=None, validation_fraction=0.2, sv_cost=1.0,
                 sv_order="svc", feature_costs=None, feature_groups=None, group_costs=None,
                 feature_names=None, group_names=None, random_state=None, verbose=1):
        self.verbose = verbose
        self.kernel = kernel
        self.C = C
        self.gamma = gamma
        self.degree = degree
        self.coef0 = coef0
        self.standardize = standardize
        self.class_weight = class_weight
        self.validation_fraction = validation_fraction
        self.sv_cost = sv_cost
        self.sv_order = sv_order
        self.feature_costs = feature_costs
        self.feature_groups = feature_groups
        self.group_costs = group_costs
        self.feature_names = feature_names
        self.group_names = group_names
        self.random_state = random_state

    # ------------------------------------------------------------ fit
    def fit(self, X, y, eval_set=None):
        """Fit on X [N, F] (no missing values) and labels y.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
        y : array-like of shape (n_samples,)
        eval_set : (X_val, y_val), optional
            Rows for choosing (C, gamma) when either is a grid.
        """
        X, y = self._validate_X_y(X, y)
        if self.kernel not in ("rbf", "linear", "poly"):
            raise ValueError(f"kernel must be 'rbf', 'linear' or 'poly', got {self.kernel!r}")
        if self.sv_order not in ("svc", "alpha"):
            raise ValueError(f"sv_order must be 'svc' or 'alpha', got {self.sv_order!r}")
        idx = self._encode_labels(y)
        self._costs = self._cost_spec(X.shape[1])
        self.features_, self.shift_, self.scale_ = standardizer(X, self.standardize)
        Xs = transform(X, self.features_, self.shift_, self.scale_)
        Cs = positive_grid(self.C, "C")
        gs = [None] if self.gamma is None else list(np.atleast_1d(self.gamma))
        grid = [(float(c), resolve_gamma(g, Xs.shape[1])) for c in Cs for g in gs]
        if len(grid) > 1:
            if eval_set is not None:
                fit_rows = np.arange(X.shape[0])
                Xv, yv = self._validate_eval_set(eval_set)
            else:
                fit_rows, val = holdout_rows(X.shape[0], self.validation_fraction, self.random_state)
                Xv, yv = X[val], idx[val]
            from ...runtimes.reference import predict
            scores = [0.0] * len(grid)
            with progress_bar(self.verbose, len(grid), "kernel SVM grid", "fit") as bar:
                for g in dict.fromkeys(g for _, g in grid):      # one kernel matrix per gamma
                    K = self._gram(Xs[fit_rows], g)
                    for p, (c, gp) in enumerate(grid):
                        if gp != g:
                            continue
                        self.C_ = c
                        self._fit_svc(Xs[fit_rows], idx[fit_rows], fit_rows, c, g, K)
                        scores[p] = float(np.mean(predict(self.to_ir(), Xv).output == self.classes_[yv]))
                        bar.update()
                    del K
            self.validation_scores_ = scores
            self.C_, self.gamma_ = grid[int(np.argmax(scores))]
        else:
            self.C_, self.gamma_ = grid[0]
        self._fit_svc(Xs, idx, np.arange(X.shape[0]), self.C_, self.gamma_)
        return self._set_model(self.to_ir())

    def _gram(self, Xs, gamma):
        """The float64 kernel matrix of the fit rows (``kernel_math``: fixed
        summation order, the C library's exp)."""
        n = Xs.shape[0]
        if 8 * n * n > MAX_KERNEL_BYTES:
            raise ValueError(f"X: {n} rows need a {8 * n * n / 2**30:.1f} GiB kernel matrix (the SMO keeps it in "
                             f"memory; at most {MAX_KERNEL_BYTES / 2**30:.0f} GiB): subsample the rows")
        return kernel_matrix(Xs, Xs, self.kernel, gamma, float(self.coef0), int(self.degree))

    def _fit_svc(self, Xs, idx, rows, C, gamma, K=None):
        """One C-SVC per output (binary: one; multiclass: one-vs-rest) by
        skinflint's SMO (``smo.py``, libsvm's algorithm and tolerance), the
        union of their support vectors sharing one coefficient matrix; the
        outputs share one kernel matrix."""
        K = self._gram(Xs, gamma) if K is None else K
        n_classes = len(self.classes_)
        cols = [None] if n_classes == 2 else list(range(n_classes))
        sv_rows, coefs, bias = [], [], []
        bound = np.full(idx.size, float(C))
        if self.class_weight is not None:     # libsvm's per-class C factors, one per row
            bound = bound * class_weight_per_class(self.class_weight, self.classes_, idx)[idx]
        n_iter = []
        for k in cols:
            yk = idx if k is None else (idx == k).astype(np.int64)
            if np.unique(yk).size < 2:
                raise ValueError("y: a one-vs-rest column has one class only in the fit rows; "
                                 "use more rows per class")
            sv, coef, b, it = fit_binary(K, np.where(yk == 1, 1.0, -1.0), bound, TOL)
            sv_rows.append(sv)
            coefs.append(coef)
            bias.append(b)
            n_iter.append(it)
        self.n_iter_ = np.asarray(n_iter)
        union = np.unique(np.concatenate(sv_rows))
        alpha = np.zeros((union.size, len(cols)))
        for j, (r, c) in enumerate(zip(sv_rows, coefs)):
            alpha[np.searchsorted(union, r), j] = c
        if len(cols) == 1:     # keep libsvm's own order for the binary model
            union = sv_rows[0]
            alpha = coefs[0][:, None]
        self._set_support(Xs[union], alpha, np.asarray(bias), gamma)
        self.support_ = rows[union]

    def _set_support(self, sv, alpha, bias, gamma):
        order = np.arange(sv.shape[0])
        if self.sv_order == "alpha":
            order = np.argsort(-np.abs(alpha).max(1), kind="stable")
        self.support_vectors_ = np.asarray(sv, np.float32)[order]
        self.dual_coef_ = np.asarray(alpha, np.float64)[order]
        self.intercept_ = np.asarray(bias, np.float64)
        self.gamma_ = float(gamma)
        self.n_support_ = int(sv.shape[0])

    # ------------------------------------------------------------ import
    @classmethod
    def from_svc(cls, svc, *, shift=None, scale=None, sv_cost=1.0, feature_costs=None,
                 feature_groups=None, group_costs=None, feature_names=None, group_names=None):
        """Import a fitted binary scikit-learn ``SVC`` (rbf, linear or poly).

        Parameters
        ----------
        svc : sklearn.svm.SVC, fitted on two classes
        shift, scale : array [F], optional
            The inputs the SVC saw were ``(x - shift) * scale`` (float32);
            the model then reads raw features.  E.g. a ``StandardScaler``'s
            ``mean_`` and ``1 / scale_``.
        sv_cost, feature_costs, ... : as for the estimator.

        Returns
        -------
        KernelSVMClassifier, fitted (``model_`` set).
        """
        if not hasattr(svc, "support_vectors_"):
            raise ValueError("from_svc: the SVC is not fitted yet; call its fit first")
        if len(svc.classes_) != 2:
            raise ValueError("from_svc: only binary SVCs can be imported (libsvm's multiclass "
                             "models are one-vs-one); fit KernelSVMClassifier on the data for a "
                             "one-vs-rest multiclass model")
        if svc.kernel not in ("rbf", "linear", "poly"):
            raise ValueError(f"from_svc: kernel {svc.kernel!r} has no IR form; use rbf, linear or poly")
        F = svc.support_vectors_.shape[1]
        est = cls(kernel=svc.kernel, C=float(svc.C), degree=int(svc.degree), coef0=float(svc.coef0),
                  standardize=shift is not None, sv_cost=sv_cost, feature_costs=feature_costs,
                  feature_groups=feature_groups, group_costs=group_costs,
                  feature_names=feature_names, group_names=group_names)
        est.classes_ = np.asarray(svc.classes_)
        est.n_features_in_ = F
        est._costs = est._cost_spec(F)
        est.features_ = np.arange(F)
        est.shift_ = None if shift is None else np.asarray(shift, np.float32)
        est.scale_ = None if shift is None else np.asarray(scale, np.float32)
        est.C_ = float(svc.C)
        est._set_support(svc.support_vectors_, svc.dual_coef_[0][:, None],
                         np.asarray(svc.intercept_[:1], np.float64), float(svc._gamma))
        est.support_ = np.asarray(svc.support_)
        est.svc_ = svc
        return est._set_model(est.to_ir())

    # ------------------------------------------------------------ IR
    def to_ir(self) -> ir.Model:
        """One ``kernel`` node: the support vectors in ``sv_order``, signed
        coefficients, bias and gamma as float32; identity output (the sign of
        the margin decides the class, as SVC's ``decision_function``)."""
        if getattr(self, "support_vectors_", None) is None:
            raise RuntimeError(f"this {type(self).__name__} is not fitted yet; call fit first")
        node = kernel_node(self.support_vectors_, self.dual_coef_, self.intercept_, self.features_,
                           kernel=self.kernel, gamma=self.gamma_, coef0=self.coef0, degree=self.degree,
                           shift=self.shift_, scale=self.scale_, sv_cost=self.sv_cost)
        return self._ir_model([node], 0, svm_task(self._ir_classes()), self._costs,
                              n_support=int(self.n_support_), C=self.C_, gamma=self.gamma_)


class _WrapsSVM:
    """Mixin for trainers with an ``svm`` parameter (a fitted full SVM): the
    model's metadata records that SVM's parameters, not the object."""

    def _json_params(self):
        params = super()._json_params()
        if params.get("svm") is not None:
            params["svm"] = {type(self.svm).__name__: self.svm._json_params()}
        return params


def svm_task(classes):
    """Binary: identity margin (positive = classes[1]); multiclass: identity
    one-vs-rest margins, the first maximum wins."""
    return (ir.binary_task(classes, "identity") if len(classes) == 2
            else ir.multiclass_task(classes, "identity"))
