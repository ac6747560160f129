"""Compressed Vector Machines (CVM, thesis Ch. 4) and the LARS-SVM baseline.

Given a full kernel SVM with r support vectors, CVM keeps m << r of them:

1. **LARS-SVM** (thesis eqs. 4.6-4.9): re-solve the SVM on its own support
   vectors with the bias fixed, as the least-squares problem
   ``min |t - K beta|^2 + ridge beta' K beta`` under ``|beta|_0 <= m``,
   relaxed to ℓ1 and solved by LAR for exactly m steps.  The target is
   ``t = y - b`` (``lars_target="labels"``, the thesis) or the full SVM's
   predictions ``t = K beta_full`` (``"predictions"``).
2. **Gradient support vectors** (eq. 4.10): move the m selected vectors and
   their coefficients jointly so that the compressed model matches the full
   one's predictions on the fit rows (the support vectors, as in the thesis,
   or all training rows), by L-BFGS (or the thesis' conjugate gradient).

Departures from the thesis, each measured (``docs/cvm.md``):

* the LARS-SVM coefficients are refitted on the selected vectors (the raw
  LAR path coefficients are shrunk and classify poorly); the CVM start is
  the refit to the full model's predictions, the optimum of eq. 4.10 for
  the unmoved vectors;
* the vectors are put in a greedy prefix order (``order="greedy"``), so a
  budget that stops after k of them (``docs/costs.md``) keeps the k that
  approximate the full model best; the thesis has no budget inside a model;
* multiclass models are one-vs-rest with shared vectors, selected by
  simultaneous OMP (the thesis compresses libsvm's one-vs-one models, by a
  scheme it does not describe).
"""
from __future__ import annotations

import numbers

import numpy as np

from ... import ir
from .. import linalg
from ..common import progress_bar
from .gradient_svs import lars_select, move_support_vectors, prefix_order, ridge_refit
from .kernel_math import kernel_matrix
from .kernel_svm import KernelEstimator, KernelSVMClassifier, _WrapsSVM, kernel_node, svm_task, transform, unfrozen

DEFAULT_C = (1.0, 10.0, 100.0)


def n_vectors(n_support_vectors, n_full):
    """The count m from an int (a count) or a float in (0, 1] (a fraction of the full
    SVM's ``n_full`` vectors, at least 1)."""
    v = n_support_vectors
    if isinstance(v, numbers.Integral) and not isinstance(v, bool):
        if v < 1:
            raise ValueError(f"n_support_vectors must be >= 1, got {v}")
        return min(int(v), n_full)
    if isinstance(v, numbers.Real) and 0 < float(v) <= 1:
        return max(1, min(n_full, int(round(float(v) * n_full))))
    raise ValueError(f"n_support_vectors must be a count >= 1 or a fraction in (0, 1], got {v!r}")


def sv_labels(beta, decision):
    """±1 labels of support vectors [S, K']: libsvm's signed coefficients
    are ``y_i alpha_i`` with ``alpha_i > 0``, so their sign is the label; a
    shared one-vs-rest vector that is not a support vector of column k takes
    the full model's sign there."""
    return np.where(beta != 0, np.sign(beta), np.where(decision > 0, 1.0, -1.0))


class _CompressedSVM(_WrapsSVM, KernelEstimator):
    """What CVM and LARS-SVM share: the full SVM, the selection, the export."""

    _moves = True

    def __init__(self, *, n_support_vectors=0.1, kernel="rbf", C=DEFAULT_C, gamma=None, svm=None,
                 lars_target="labels", init="lars", fit_rows="support", max_iter=300,
                 optimizer="lbfgs", ridge=1.0, order="greedy", standardize=True,
                 validation_fraction=0.2, sv_cost=1.0, feature_costs=None, feature_groups=None,
                 group_costs=None, feature_names=None, group_names=None, random_state=None, verbose=1):
        self.verbose = verbose
        self.n_support_vectors = n_support_vectors
        self.kernel = kernel
        self.C = C
        self.gamma = gamma
        self.svm = svm
        self.lars_target = lars_target
        self.init = init
        self.fit_rows = fit_rows
        self.max_iter = max_iter
        self.optimizer = optimizer
        self.ridge = ridge
        self.order = order
        self.standardize = standardize
        self.validation_fraction = validation_fraction
        self.sv_cost = sv_cost
        self.feature_costs = feature_costs
        self.feature_groups = feature_groups
        self.group_costs = group_costs
        self.feature_names = feature_names
        self.group_names = group_names
        self.random_state = random_state

    def _check_params(self):
        opts = {"lars_target": ("labels", "predictions"), "init": ("lars", "random"),
                "fit_rows": ("support", "train"), "optimizer": ("lbfgs", "cg"),
                "order": ("greedy", "selection")}
        for name, allowed in opts.items():
            if getattr(self, name) not in allowed:
                raise ValueError(f"{name} must be one of {allowed}, got {getattr(self, name)!r}")
        if self.kernel != "rbf":
            raise ValueError(f"kernel={self.kernel!r}: CVM moves rbf support vectors (the gradient of "
                             "thesis eq. 4.10 is for the rbf kernel); use kernel='rbf', or "
                             "KernelSVMClassifier for other kernels")
        if not (np.isfinite(self.ridge) and self.ridge > 0):
            raise ValueError(f"ridge must be > 0, got {self.ridge!r}")
        if int(self.max_iter) < 0:
            raise ValueError(f"max_iter must be >= 0, got {self.max_iter!r}")

    def _full_svm(self, X, y, eval_set):
        """The SVM to compress: ``svm`` (a fitted KernelSVMClassifier, used
        as is) or a new rbf one with this estimator's C / gamma grid."""
        if self.svm is not None:
            svm = unfrozen(self.svm)
            if not isinstance(svm, KernelSVMClassifier) or not hasattr(svm, "support_vectors_"):
                raise ValueError("svm must be a fitted KernelSVMClassifier (import an sklearn SVC "
                                 "with KernelSVMClassifier.from_svc); wrap it in "
                                 "sklearn.frozen.FrozenEstimator where it will be cloned "
                                 "(GridSearchCV, cost_accuracy_curve), which otherwise unfits it")
            if svm.n_features_in_ != X.shape[1]:
                raise ValueError(f"svm was fitted on {svm.n_features_in_} features, X has {X.shape[1]}")
            if not np.array_equal(np.asarray(svm.classes_), np.unique(y)):
                raise ValueError("svm was fitted on other classes than y's")
        else:
            svm = KernelSVMClassifier(kernel="rbf", C=self.C, gamma=self.gamma,
                                      standardize=self.standardize,
                                      validation_fraction=self.validation_fraction,
                                      random_state=self.random_state, verbose=self.verbose).fit(X, y, eval_set=eval_set)
        if svm.kernel != "rbf":
            raise ValueError("CVM moves rbf support vectors; the svm's kernel is "
                             f"{svm.kernel!r}: use kernel='rbf'")
        return svm

    def fit(self, X, y, eval_set=None):
        """Fit (or take) the full SVM, then compress it.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features), no missing values
        y : array-like of shape (n_samples,)
        eval_set : (X_val, y_val), optional
            Rows for choosing the full SVM's (C, gamma) when they are grids.
        """
        X, y = self._validate_X_y(X, y)
        self._check_params()
        self._encode_labels(y)
        self._costs = self._cost_spec(X.shape[1])
        svm = self._full_svm(X, y, eval_set)
        self.full_svm_ = svm
        self.features_, self.shift_, self.scale_ = svm.features_, svm.shift_, svm.scale_
        self.gamma_ = g = svm.gamma_
        S = svm.support_vectors_.astype(np.float64)
        beta, b = svm.dual_coef_, svm.intercept_
        self.intercept_ = b.copy()
        m = n_vectors(self.n_support_vectors, S.shape[0])
        KSS = kernel_matrix(S, S, "rbf", g)
        F_S = linalg.matmul(KSS, beta)                      # full predictions minus bias
        if self.lars_target == "labels":
            T = sv_labels(beta, F_S + b[None, :]) - b[None, :]
        else:
            T = F_S
        if self.init == "lars":
            sel = lars_select(KSS, T, m, ridge=self.ridge)
        else:
            sel = np.sort(np.random.default_rng(self.random_state).choice(S.shape[0], m, replace=False))
        self.selected_ = sel
        if self.fit_rows == "support":
            XE, FE, KES = S, F_S, KSS[:, sel]
        else:
            XE = transform(X, self.features_, self.shift_, self.scale_).astype(np.float64)
            KE = kernel_matrix(XE, S, "rbf", g)
            FE, KES = linalg.matmul(KE, beta), KE[:, sel]
        KSel = KSS[np.ix_(sel, sel)]
        if self._moves:
            B0 = ridge_refit(KES, KSel, FE, self.ridge)
            method = "L-BFGS-B" if self.optimizer == "lbfgs" else "CG"
            with progress_bar(self.verbose, int(self.max_iter), "CVM", "step") as bar:
                Z, B, self.loss_, self.n_iter_ = move_support_vectors(
                    XE, FE, S[sel], B0, g, max_iter=int(self.max_iter), method=method, bar=bar)
        else:   # LARS-SVM: the selected vectors, refitted to the LARS target on them
            Z = S[sel]
            B = ridge_refit(KSS[:, sel], KSel, T, self.ridge)
            self.loss_ = float(np.mean((linalg.matmul(kernel_matrix(XE, Z, "rbf", g), B) - FE) ** 2))
            self.n_iter_ = int(sel.size)      # LAR steps
        if self.order == "greedy":
            perm = prefix_order(kernel_matrix(XE, Z, "rbf", g), B, FE)
            Z, B = Z[perm], B[perm]
        self.support_vectors_ = Z.astype(np.float32)
        self.dual_coef_ = B
        self.n_support_ = int(Z.shape[0])
        return self._set_model(self.to_ir())

    def to_ir(self) -> ir.Model:
        """One rbf ``kernel`` node with the m (moved) vectors in prefix
        order, the full SVM's bias, shift and scale, and gamma."""
        if getattr(self, "support_vectors_", None) is None:
            raise RuntimeError(f"this {type(self).__name__} is not fitted yet; call fit first")
        node = kernel_node(self.support_vectors_, self.dual_coef_, self.intercept_, self.features_,
                           kernel="rbf", gamma=self.gamma_, shift=self.shift_, scale=self.scale_,
                           sv_cost=self.sv_cost, name=type(self).__name__)
        return self._ir_model([node], 0, svm_task(self._ir_classes()), self._costs,
                              n_support=self.n_support_, n_support_full=self.full_svm_.n_support_,
                              gamma=self.gamma_)


class CVMClassifier(_CompressedSVM):
    """Compressed Vector Machine (thesis Ch. 4): a full rbf SVM compressed
    to ``n_support_vectors`` moved support vectors, one IR kernel node.

    Parameters
    ----------
    n_support_vectors : int or float, default 0.1
        m, a count, or a fraction of the full SVM's vectors (thesis: m = B_e / e).
    kernel : {"rbf"}, default "rbf"
        The only kernel whose vectors CVM moves (thesis §4.4).
    C, gamma : float or sequence, default (1, 10, 100) and None (1 / D)
        The full SVM's parameters; sequences are a grid chosen on a
        validation split (thesis §4.5).  Ignored when ``svm`` is given.
    svm : KernelSVMClassifier, optional
        A fitted rbf full SVM to compress (shares its standardisation); in
        ``sklearn.frozen.FrozenEstimator`` where the estimator is cloned.
    lars_target : {"labels", "predictions"}, default "labels"
        LARS target: ``y - b`` (thesis eq. 4.7) or the full predictions.
    init : {"lars", "random"}, default "lars"
        Selection of the starting vectors: LARS, or a random subset of the
        support vectors (Burges 1996's reduced set, for comparison).
    fit_rows : {"support", "train"}, default "support"
        Rows of the loss 4.10: the support vectors (thesis) or all training rows.
    max_iter : int, default 300
        Optimiser iterations for eq. 4.10 (thesis Fig. 4.2: 10 000 plain
        gradient steps, for illustration).
    optimizer : {"lbfgs", "cg"}, default "lbfgs"
    ridge : float, default 1.0
        rho of ``K K + rho K`` (the thesis' eq. 4.7 with C dropped).
    order : {"greedy", "selection"}, default "greedy"
        Order of the vectors in the node (what a budget truncates): the
        greedy best-prefix order, or the LARS entry order.
    standardize, validation_fraction : as ``KernelSVMClassifier``.
    sv_cost : float, default 1.0
        e, the cost of one kernel evaluation.
    feature_costs, feature_groups, group_costs, feature_names, group_names
        The cost specification; unit costs by default.
    random_state : int or None
    verbose : int, default 1
        Progress bars over the full SVM's grid and CVM's optimiser steps.

    Attributes
    ----------
    full_svm_ : the KernelSVMClassifier compressed
    support_vectors_ : float32 [m, D]
    dual_coef_ : [m, K']
    intercept_ : [K']
    selected_ : indices of the full SVM's vectors chosen as starting points
    n_support_ : m
    loss_ : final mean squared gap to the full predictions
    """


class LARSSVMClassifier(_CompressedSVM):
    """LARS-SVM (thesis §4.4, the baseline of Fig. 4.3): CVM's selection
    step alone, the m selected support vectors unmoved, their coefficients
    refitted to the LARS target.  Same parameters as ``CVMClassifier``
    (``max_iter``, ``optimizer`` and ``fit_rows`` other than for the reported
    loss are unused)."""

    _moves = False
