"""The cost-weighted ℓ1 linear model: the thesis' ℓ1-regularised linear
baseline (§2.1.4, Scene-15) with each feature's penalty weighted by its
cost, so that cheap features are preferred.

    min_{w, b}  sum_f c_f |w_f| + C sum_i log(1 + exp(-y_i (w' x_i + b)))

is solved as a plain ℓ1 logistic regression on ``x'_f = x_f / c_f`` (then
``w_f = w'_f / c_f``), on standardised features, folded back into one
``linear`` IR node over raw features.  A feature whose float32 weight is
zero is never touched, so the model's lazy cost is exactly the cost of the
features it kept.  Sweep C (``cost_accuracy_curve``) for a cost curve.

The solver is coordinate descent with Newton steps (``_l1_logistic.py``,
liblinear's L1R_LR method, bias penalised as liblinear's: a constant column
of ``intercept_scaling``) in a fixed order, so a model is the same on every
machine, BLAS kernel and thread count.

Groups are approximate: a feature's weight ``c_f`` is its own cost plus its
group's cost shared equally among the group's features (a group lasso would
be exact).
"""
from __future__ import annotations

import numpy as np

from .. import linalg
from ..common import progress_bar
from ._l1_logistic import l1_logistic_cdn
from .linear_estimator import LinearEstimator, standardized

_TOL = 1e-4     # stop at 1e-4 of the first sweep's largest violation (scikit-learn's liblinear default)


def penalty_weights(costs) -> np.ndarray:
    """c_f: own cost + group cost / group size; zero costs get 1e-3 of the
    mean positive weight (almost free, but the problem stays bounded); all
    zero means plain ℓ1 (every c_f = 1)."""
    c = np.asarray(costs.costs, np.float64).copy()
    groups = np.asarray(costs.groups)
    gc = np.asarray(costs.group_costs, np.float64)
    for g in np.unique(groups[groups >= 0]):
        members = groups == g
        c[members] += gc[g] / members.sum()
    pos = c[c > 0]
    if pos.size == 0:
        return np.ones_like(c)
    return np.where(c > 0, c, 1e-3 * pos.mean())


class SparseLinearClassifier(LinearEstimator):
    """Cost-weighted ℓ1 logistic regression, one ``linear`` IR node.

    Parameters
    ----------
    C : float, default 1.0
        Inverse regularisation strength (larger: more features kept).
    cost_weighted : bool, default True
        Weight each feature's ℓ1 penalty by its cost (False: plain ℓ1).
    standardize : bool, default True
        Fit on (x - mean) / std, fold the scaling back into w and b.
    intercept_scaling : float, default 100.0
        The bias is penalised as a weight on a constant column of this value
        (as liblinear does); large makes that penalty negligible.
    max_iter : int, default 1000
        Coordinate-descent sweeps at most.
    feature_costs, feature_groups, group_costs, feature_names, group_names
        The cost specification; unit costs by default.
    random_state : int or None
        Unused (the solver visits coordinates in a fixed order); kept for
        a uniform trainer interface.
    verbose : int, default 1
        A progress bar over the one-vs-rest problems (one for a binary task).

    Attributes
    ----------
    coef_ : float64 [K', F] on raw features
    intercept_ : [K']
    n_features_used_ : features with a non-zero float32 weight

    Multiclass targets are one-vs-rest: one K-wide node of the classes'
    logits, softmax output (the first maximum wins).
    """

    def __init__(self, *, C=1.0, cost_weighted=True, standardize=True, intercept_scaling=100.0,
                 max_iter=1000, feature_costs=None, feature_groups=None, group_costs=None,
                 feature_names=None, group_names=None, random_state=None, verbose=1):
        self.verbose = verbose
        self.C = C
        self.cost_weighted = cost_weighted
        self.standardize = standardize
        self.intercept_scaling = intercept_scaling
        self.max_iter = max_iter
        self.feature_costs = feature_costs
        self.feature_groups = feature_groups
        self.group_costs = group_costs
        self.feature_names = feature_names
        self.group_names = group_names
        self.random_state = random_state

    _node_name = "sparse_linear"
    _transforms = ("logistic", "softmax")

    def fit(self, X, y, eval_set=None):
        """Fit on X [N, F] (no missing values) and labels y.  ``eval_set``
        is accepted for a uniform trainer interface and unused."""
        X, y = self._validate_X_y(X, y)
        if not (np.isfinite(self.C) and self.C > 0):
            raise ValueError(f"C must be a positive number, got {self.C!r}")
        idx = self._encode_labels(y)
        self._costs = self._cost_spec(X.shape[1])
        Z, mean, inv = standardized(X, self.standardize)
        c = penalty_weights(self._costs) if self.cost_weighted else np.ones(X.shape[1])
        Z = Z / c
        K = len(self.classes_)
        targets = [idx] if K == 2 else [(idx == k).astype(np.int64) for k in range(K)]   # one-vs-rest
        W, b = np.zeros((len(targets), X.shape[1])), np.zeros(len(targets))
        s = float(self.intercept_scaling)
        Xt = np.empty((X.shape[1] + 1, X.shape[0]))
        Xt[:-1] = Z.T
        Xt[-1] = s
        n_iter = 0
        with progress_bar(self.verbose, len(targets), "l1 linear", "problem") as bar:
            for j, t in enumerate(targets):
                w, sweeps = l1_logistic_cdn(Xt, np.where(t == 1, 1.0, -1.0), float(self.C), int(self.max_iter),
                                            _TOL)
                n_iter = max(n_iter, int(sweeps))
                W[j] = w[:-1] / c * inv                   # on raw features
                b[j] = w[-1] * s - linalg.dot(W[j], mean)
                bar.update()
        self.coef_, self.intercept_ = W, b
        self.n_iter_ = n_iter
        self.n_features_used_ = int(np.any(W.astype(np.float32) != 0, axis=0).sum())
        return self._set_model(self.to_ir())

    def _ir_metadata(self):
        return {"n_features_used": self.n_features_used_}
