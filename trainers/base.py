"""The surface every cost-sensitive estimator shares, written once.

A trainer subclasses ``CostSensitiveClassifier`` or ``CostSensitiveRegressor``
and implements ``fit`` and ``to_ir`` only.  ``fit`` ends with
``self._set_model(self.to_ir())``; from then on ``predict``,
``decision_function``, ``predict_proba``, ``cost`` and ``score`` answer from
that IR model on the reference runtime: what users deploy is what the
estimator reports (docs/design.md: the reference runtime is the definition of
truth).

The estimators are scikit-learn estimators (``BaseEstimator`` with
``ClassifierMixin`` / ``RegressorMixin``), so ``clone``, ``GridSearchCV``,
``cross_val_score`` and ``Pipeline`` work.  NaN means "missing" and is
accepted; infinity is rejected (use NaN).
"""
from __future__ import annotations

import inspect

import numpy as np
from sklearn.base import BaseEstimator, ClassifierMixin, RegressorMixin
from sklearn.utils.multiclass import check_classification_targets
from sklearn.utils.validation import _check_sample_weight, check_is_fitted, validate_data

from .. import ir
from ..ir.feature_costs import FeatureCosts, match_columns


def package_version():
    from skinflint import __version__
    return __version__


def _json_value(v):
    """A parameter as model metadata: JSON values as they are, arrays as
    lists; an object (a tree bank, a fitted estimator passed in) is named,
    not copied: its content is in the model's nodes already."""
    if v is None or isinstance(v, (str, bool, int, float)):
        return v
    if isinstance(v, np.ndarray):
        return v.tolist()
    if isinstance(v, FeatureCosts):
        return v.to_dict()
    if isinstance(v, np.generic):
        return v.item()
    if isinstance(v, (list, tuple)):
        return [_json_value(x) for x in v]
    if isinstance(v, dict):
        return {str(k): _json_value(x) for k, x in v.items()}
    if isinstance(v, ir.TreesNode):
        return f"<trees bank of {v.n_trees} trees>"
    return f"<{type(v).__name__}>"


class _CostSensitiveEstimator(BaseEstimator):
    """Shared fitting helpers and the IR-backed prediction surface.

    A model that reads every feature it keeps (linear and kernel models)
    sets ``_allow_missing = False``: NaN is then refused in fit and predict
    with one message, and scikit-learn's checks know it."""

    _allow_missing = True

    # ------------------------------------------------------------ sklearn
    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.allow_nan = self._allow_missing   # NaN is a missing value (docs/numerics.md)
        return tags

    def __getstate__(self):
        # the compiled runtime is a cache, rebuilt from model_
        state = dict(self.__dict__)
        state.pop("_runtime", None)
        return state

    def __setstate__(self, state):
        self.__dict__.update(state)
        if "model_" in state:
            self._set_model(self.model_)

    # ------------------------------------------------------------ inputs
    def _check_finite(self, X):
        # a finite sum has no inf or NaN among its terms (one would make it inf or NaN): one pass that makes no
        # array, where the checks below make a bool array as large as X (473k x 519 float32: 0.04 against
        # 0.07-0.5 s, the larger when the array's pages are fresh); an overflow to inf takes the exact checks
        with np.errstate(over="ignore", invalid="ignore"):
            finite = np.isfinite(X.sum())
        if finite:
            return X
        if np.isinf(X).any():
            raise ValueError("X: contains infinity; use NaN for missing values")
        if not self._allow_missing and np.isnan(X).any():
            raise ValueError(f"{type(self).__name__}: X has missing values (NaN); the model reads "
                             "every feature: impute them first")
        return X

    def _validate_X(self, X, *, reset):
        """float32, C-contiguous [N, F]; NaN allowed, inf refused.  float64
        is rounded to the nearest float32 here, as every runtime does."""
        return self._check_finite(validate_data(self, X, reset=reset, dtype=np.float32, order="C",
                                                ensure_all_finite="allow-nan"))

    def _validate_X_y(self, X, y):
        """Checked training data: (float32 X, y as a 1-d array)."""
        X, y = validate_data(self, X, y, dtype=np.float32, order="C",
                             ensure_all_finite="allow-nan", y_numeric=False)
        return self._check_finite(X), y

    @staticmethod
    def _validate_sample_weight(sample_weight, X):
        """float64 weights [N]: ones when None; finite, >= 0, not all zero."""
        w = _check_sample_weight(sample_weight, X, dtype=np.float64, ensure_non_negative=True)
        if not np.all(np.isfinite(w)):
            raise ValueError("sample_weight: expected finite weights")
        if not np.any(w > 0):
            raise ValueError("sample_weight: weights must contain at least one non-zero number")
        return w

    def _cost_spec(self, n_features) -> FeatureCosts:
        """The estimator's ``feature_costs`` / ``feature_groups`` /
        ``group_costs`` / ``feature_names`` / ``group_names`` parameters as
        one checked ``FeatureCosts`` in the order of the training data's
        columns (unit costs when none are given).

        Call it after ``validate_data(reset=True)``: when the data had
        column names (a DataFrame; ``feature_names_in_``), named costs are
        matched to them by name and unnamed costs by position, taking the
        columns' names (``ir.feature_costs.match_columns``, the rule the
        command line and the importers follow too)."""
        fc = getattr(self, "feature_costs", None)
        extra = {k: getattr(self, k, None) for k in
                 ("feature_groups", "group_costs", "feature_names", "group_names")}
        if isinstance(fc, FeatureCosts):
            given = [k for k, v in extra.items() if v is not None]
            if given:
                raise ValueError(f"feature_costs is a FeatureCosts, which already holds "
                                 f"{', '.join(given)}: pass them there, not as parameters")
            spec = fc
        elif fc is None and all(v is None for v in extra.values()):
            spec = None
        else:
            costs = np.ones(n_features) if fc is None else fc
            spec = FeatureCosts.from_arrays(costs, extra["feature_groups"], extra["group_costs"],
                                            extra["feature_names"], extra["group_names"])
        columns = getattr(self, "feature_names_in_", None)
        return match_columns(spec, None if columns is None else list(columns), n_features,
                             what="X's columns")

    def _json_params(self) -> dict:
        """Parameters for a model's metadata, in ``__init__``'s order (not
        scikit-learn's sorted order, so model bytes stay stable)."""
        params = self.get_params(deep=False)
        order = inspect.signature(type(self).__init__).parameters
        return {k: _json_value(params[k]) for k in order if k in params}

    def _ir_model(self, nodes, output, task, costs: FeatureCosts, **metadata) -> ir.Model:
        """An IR model with these costs and the standard metadata: trainer
        name, parameters, ``metadata`` and the package version."""
        meta = {"trainer": type(self).__name__, "params": self._json_params(), **metadata,
                "skinflint_version": package_version()}
        return ir.model(costs.features(), nodes, output, task=task, groups=costs.ir_groups(),
                        metadata=meta)

    # ------------------------------------------------------------ the model
    def _set_model(self, model: ir.Model):
        """Install the fitted IR model: every prediction comes from it."""
        from ..runtimes.reference import ReferenceRuntime
        self.model_ = model
        self.static_cost_ = model.static_cost()
        # built here, not on first predict: predicting must not change the estimator
        self._runtime = ReferenceRuntime(model)
        return self

    def _prediction(self, X, budget=None):
        check_is_fitted(self, "model_")
        X = self._validate_X(X, reset=False)
        return self._runtime.predict(X, budget)

    def to_ir(self) -> ir.Model:  # pragma: no cover - every trainer overrides it
        raise NotImplementedError

    def predict(self, X, budget=None):
        """Labels (classifiers) or values (regressors) from the IR model.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Rows; rounded to float32, NaN means missing.
        budget : float or array-like of shape (n_samples,), optional
            Per-row cost budget in cost units; evaluation stops before the
            first step whose new units would exceed it (docs/costs.md,
            budgets).  None means no limit.
        """
        return self._prediction(X, budget).output

    def cost(self, X, budget=None) -> np.ndarray:
        """Per-row lazy cost: what an on-demand runtime pays for each row
        (each feature, group, tree and support vector paid once, on first
        touch), in the units of ``feature_costs``."""
        return self._prediction(X, budget).cost


class CostSensitiveClassifier(ClassifierMixin, _CostSensitiveEstimator):
    """Base of the cost-sensitive classifiers.  A subclass whose algorithm
    is binary only sets ``_binary_only = True``: more classes then get a
    clear error, and scikit-learn's checks know it."""

    _binary_only = False

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.classifier_tags.multi_class = not self._binary_only
        return tags

    def _encode_labels(self, y, *, reset=True):
        """Class indices of ``y``; with ``reset`` sets ``classes_``."""
        y = np.asarray(y)
        if reset:
            check_classification_targets(y)
            self.classes_ = np.unique(y)
            if len(self.classes_) < 2:
                raise ValueError(f"y: a classifier needs samples of at least 2 classes in the data, "
                                 f"but the data contain only one class: {self.classes_[0]!r}")
            if self._binary_only and len(self.classes_) > 2:
                raise ValueError(f"{type(self).__name__}: Only binary classification is supported. "
                                 f"y has {len(self.classes_)} classes; use GreedyMiserClassifier "
                                 "for multiclass problems")
        idx = np.searchsorted(self.classes_, y)
        inside = idx < len(self.classes_)
        if not inside.all() or np.any(self.classes_[np.minimum(idx, len(self.classes_) - 1)] != y):
            raise ValueError("y: labels not seen in training")
        return idx

    def _validate_eval_set(self, eval_set):
        """``eval_set = (X_val, y_val)`` checked as the training data was:
        float32 rows with the training columns, labels as class indices
        (a label not seen in training is refused)."""
        return self._validate_X(eval_set[0], reset=False), self._encode_labels(eval_set[1], reset=False)

    def _ir_classes(self):
        return [c.item() if hasattr(c, "item") else c for c in self.classes_]

    def decision_function(self, X, budget=None):
        """Raw float32 margins from the IR model: shape (n_samples,) for
        binary models, (n_samples, n_classes) for multiclass."""
        s = self._prediction(X, budget).scores
        return s[:, 0] if s.shape[1] == 1 else s

    def predict_proba(self, X, budget=None):
        """Class probabilities from the IR model's output transform
        (the project's portable float32 logistic / softmax)."""
        p = self._prediction(X, budget).proba
        if p is None:
            raise AttributeError(f"{type(self).__name__}.predict_proba: this model's output has no "
                                 "probabilistic transform (e.g. the squared hinge loss)")
        return p

    def staged_predict(self, X):
        """Labels after each stage (see ``staged_decision_function``)."""
        for s in self.staged_decision_function(X):
            yield self.classes_[(s > 0).astype(int)] if s.ndim == 1 else self.classes_[np.argmax(s, axis=1)]


class CostSensitiveRegressor(RegressorMixin, _CostSensitiveEstimator):
    """Base of the cost-sensitive regressors."""

    def staged_predict(self, X):
        """Predictions after each stage (see ``staged_decision_function``)."""
        yield from self.staged_decision_function(X)
