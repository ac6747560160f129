"""Greedy Miser (Xu et al., thesis §2.1) and stage-wise GBRT.

Each iteration fits a regression tree to the loss gradient with the
impurity of Eq. (2.5),

    g(h_t) = 1/2 sum_i (s_i - h_t(x_i))^2 + lambda sum_a u_a c_a F_at,

where u_a = 1 until the ensemble first uses feature a.  ``cost_tradeoff``
is lambda per training row: a split on an unpaid feature must reduce the
*mean* per-row loss by more than ``cost_tradeoff * c_a`` (the penalty is
lambda * n * c_a, n = sum of sample weights), so lambda does not depend on
the training-set size.  cost_tradeoff=0 is plain stage-wise GBRT.

Refund timing (``refund``):
* "tree": u is updated after each tree, as in the seeds' code; within a
  tree every split on a still-unpaid feature pays again.
* "immediate": a feature is free as soon as any split uses it (the exact
  marginal of Eq. 2.5 within a tree, and LightGBM's CEGB behaviour).

What the first term of Eq. (2.5) measures (``split_criterion``):
* "newton" (default): the second-order gain G_L^2/(H_L + l2) + G_R^2/(H_R +
  l2) - G^2/(H + l2) with the loss's hessians, as XGBoost and LightGBM score
  splits; for the squared loss (hessian 1) it *is* Eq. (2.5).
* "least_squares": Eq. (2.5) for every loss: the tree is the least-squares
  fit of the negative gradient s_i = -dL/dF(x_i), so the hessian is replaced
  by the sample weight and the bracket is the decrease of
  1/2 sum_i w_i (s_i - h_t(x_i))^2; its leaves are that fit, the (weighted)
  mean negative gradient.  lambda then trades cost against squared residual
  rather than loss, so the same ``cost_tradeoff`` buys a different trade-off.

Leaves are Newton steps -G/(H + l2) (``leaf_values="newton"``) or the mean
negative gradient -G/N as in the seeds (``"mean"``); both are multiplied by
``learning_rate`` (the step size eta; the thesis uses 0.1).

Categorical features (``categorical_features``) split on category sets
found as LightGBM does (``splitting._categorical_split``); such a split
charges its feature like any other split (Eq. 2.5's u_a c_a F_at).
"""
from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from ... import ir
from ..base import CostSensitiveClassifier, CostSensitiveRegressor
from ..common import holdout_rows
from .booster import SPLIT_CRITERIA, BinnedData, boost, rounds_to_bank, set_arrays
from .grower import CategoryOptions
from .losses import make_loss
from .predictor import predict_raw, predict_raw_sets

# the categorical options and their defaults: left out of a model's metadata
# while at these values, so models without categorical features keep their bytes
_CATEGORY_DEFAULTS = dict(categorical_features=None, cat_l2=10.0, cat_smooth=10.0, max_cat_threshold=32,
                          min_data_per_group=100, max_cat_to_onehot=4)


def _is_frame(X):
    return hasattr(X, "columns") and hasattr(X, "dtypes") and hasattr(X, "iloc")


def categorical_mask(spec, n_features, names=None, frame=None) -> np.ndarray | None:
    """The bool mask [F] of ``categorical_features`` as scikit-learn's
    HistGradientBoosting takes it: None, a bool mask, int indices, str
    names (``names``: the columns' or ``feature_names``), or "from_dtype"
    (the pandas ``category`` columns of ``frame``; none without a frame)."""
    if spec is None:
        return None
    if isinstance(spec, str):
        if spec != "from_dtype":
            raise ValueError(f"categorical_features: expected None, 'from_dtype', a bool mask, indices or "
                             f"names, got the string {spec!r}")
        mask = np.zeros(n_features, bool)
        if frame is not None:
            mask[:] = [str(d) == "category" for d in frame.dtypes]
        return mask
    arr = np.asarray(spec)
    if arr.ndim != 1:
        raise ValueError("categorical_features: expected a 1-d list of bools, indices or names")
    mask = np.zeros(n_features, bool)
    if arr.size == 0:
        return mask
    if arr.dtype == bool:
        if arr.shape[0] != n_features:
            raise ValueError(f"categorical_features: a bool mask needs {n_features} entries (one per "
                             f"feature), got {arr.shape[0]}")
        return arr.copy()
    if arr.dtype.kind in "iu":
        if arr.min() < 0 or arr.max() >= n_features:
            raise ValueError(f"categorical_features: indices must lie in [0, {n_features}), got "
                             f"{int(arr.min())}..{int(arr.max())}")
        mask[arr] = True
        return mask
    if arr.dtype.kind in "UO" and all(isinstance(v, str) for v in arr):
        if names is None:
            raise ValueError("categorical_features: feature names need a DataFrame or feature_names")
        pos = {str(n): i for i, n in enumerate(names)}
        unknown = [str(v) for v in arr if v not in pos]
        if unknown:
            raise ValueError(f"categorical_features: unknown feature name {unknown[0]!r}")
        mask[[pos[str(v)] for v in arr]] = True
        return mask
    raise ValueError(f"categorical_features: expected bools, ints or strs, got {arr.dtype}")


CATEGORICAL_DOC = """\
    categorical_features : None, "from_dtype", bool mask, int indices or str names, default None
        Features whose values are category codes (non-negative integers;
        pandas ``category`` columns are encoded by their categories' order),
        as scikit-learn's HistGradientBoosting takes them.  Their splits send
        a set of categories left (LightGBM's search: categories sorted by
        G/(H + cat_smooth), best prefix from either end).  A feature's
        ``max_bins - 1`` most frequent categories get a bin each, then more,
        as LightGBM's bin mapper keeps them, while those kept cover less
        than 99% of the rows and the next has at least 3 rows (at most 4094;
        above 254 the binned rows are uint16); NaN, rarer, unseen, negative
        and non-integer values go right at every set split.  None: every
        split numeric.
    cat_l2 : float, default 10
        Added to l2 in the children's scores of a set split (LightGBM).
    cat_smooth : float, default 10
        Categories with fewer rows in the node are left out of the search,
        and it smooths the sort key G/(H + cat_smooth) (LightGBM).
    max_cat_threshold : int, default 32
        At most this many categories in a left set (LightGBM).
    min_data_per_group : int, default 100
        Rows each step of the scan must add, and the right side must keep
        (LightGBM).
    max_cat_to_onehot : int, default 4
        A feature with fewer categories than this (plus the other bin) splits
        one category against the rest (LightGBM).
"""


class CategoricalInputs:
    """``categorical_features`` and its options for any estimator whose trees
    the booster grows (Greedy Miser, GBRT, Early Exit, the rankers, the
    cascades' tree banks): one parameter, one meaning, documented once in
    ``CATEGORICAL_DOC``.  The class mixing this in stores the six options
    (``_CATEGORY_DEFAULTS``) as attributes."""

    feature_names: Any

    def _json_params(self):
        # the categorical options at their defaults are left out: a model
        # trained without them has the bytes it had before they existed
        params = super()._json_params()  # type: ignore[misc]
        for k, v in _CATEGORY_DEFAULTS.items():
            if k in params and (params[k] is None if v is None else params[k] == v):
                del params[k]
        return params

    # ------------------------------------------------------------ categories
    def _category_columns(self, X, n_features):
        """The categorical mask for raw X (a DataFrame's columns name the
        features), or None."""
        spec = getattr(self, "categorical_features", None)
        frame = X if _is_frame(X) else None
        names = [str(c) for c in X.columns] if frame is not None else self.feature_names
        return categorical_mask(spec, n_features, names, frame)

    def _encode_frame(self, X, reset):
        """A DataFrame's pandas ``category`` columns among the categorical
        features as float codes (the dtype's category order): NaN stays NaN,
        a value not among the training categories becomes -1 (not a code:
        it goes where ``other_left`` says, right).  Other inputs unchanged."""
        if reset:
            self._pandas_categories = None
            if getattr(self, "categorical_features", None) is None or not _is_frame(X):
                return X
            mask = self._category_columns(X, X.shape[1])
            cols = {c: list(X[c].cat.categories) for c, m, d in zip(X.columns, mask, X.dtypes)
                    if m and str(d) == "category"}
            self._pandas_categories = cols or None
        cats = getattr(self, "_pandas_categories", None)
        if not cats or not _is_frame(X):
            return X
        import pandas as pd  # type: ignore[import-untyped]  # only a DataFrame gets here
        X = X.copy()
        for c, known in cats.items():
            if c not in X.columns:
                continue
            col = X[c]
            codes = pd.Index(known).get_indexer(col.astype(object)).astype(np.float32)   # -1: unknown
            codes[np.asarray(col.isna())] = np.nan
            X[c] = codes
        return X

    def _validate_X(self, X, *, reset):
        return super()._validate_X(self._encode_frame(X, reset=False), reset=reset)  # type: ignore[misc]

    def _category_options(self, X_raw, n_features):
        """``CategoryOptions`` for the fit (sets ``is_categorical_``), or
        None when no feature is categorical."""
        spec = getattr(self, "categorical_features", None)
        if spec is None:
            self.is_categorical_ = None
            return None
        names = getattr(self, "feature_names_in_", None)
        names = [str(n) for n in names] if names is not None else self.feature_names
        mask = categorical_mask(spec, n_features, names, X_raw if _is_frame(X_raw) else None)
        self.is_categorical_ = mask
        if not mask.any():
            return None
        for nm in ("cat_l2", "cat_smooth", "min_data_per_group"):
            if not getattr(self, nm) >= 0:
                raise ValueError(f"{nm} must be >= 0, got {getattr(self, nm)!r}")
        for nm in ("max_cat_threshold", "max_cat_to_onehot"):
            if not (isinstance(getattr(self, nm), (int, np.integer)) and getattr(self, nm) >= 1):
                raise ValueError(f"{nm} must be a positive integer, got {getattr(self, nm)!r}")
        return CategoryOptions(mask, float(self.cat_l2), float(self.cat_smooth), int(self.max_cat_threshold),
                               int(self.min_data_per_group), int(self.max_cat_to_onehot))


class _GreedyMiserMixin(CategoricalInputs):
    """Greedy Miser's parameters, fit and export, shared by the classifier
    and the regressor.

    Parameters
    ----------
    loss : str, optional
        "logistic" (classifier default), "squared_hinge" (the thesis' loss)
        or "squared" (regressor default); multiclass always uses softmax.
    n_estimators : int, default 100
        Boosting rounds (the thesis' T).
    learning_rate : float, default 0.1
        Step size eta (thesis: 0.1).
    max_depth : int, default 4
        Depth of each regression tree (thesis: 4).
    min_samples_leaf : int, default 20
    l2_regularization : float, default 0
        Added to the hessian sum of Newton leaves.
    leaf_values : {"newton", "mean"}, default "newton"
        -G/(H + l2), or the seeds' mean negative gradient -G/N.
    split_criterion : {"newton", "least_squares"}, default "newton"
        How a split's loss reduction (the first term of Eq. 2.5) is scored:
        the second-order gain with the loss's hessians, or the paper's
        least-squares fit of the negative gradient (see the module
        docstring; the same for the squared loss).
    subsample : float, default 1
        Fraction of rows drawn (without replacement) per round.
    max_bins : int, default 255
    cost_tradeoff : float, default 0
        lambda of Eq. (2.5) per training row, in cost units: one unit of
        lambda means a split on an unpaid feature of cost c must reduce the
        mean per-row loss by more than lambda * c.  0 is plain GBRT.
    refund : {"tree", "immediate"}, default "tree"
        When a newly used feature becomes free (see the module docstring).
    feature_costs : array-like of shape (n_features,) or FeatureCosts, optional
        Cost of each feature (unit costs when None); a ``FeatureCosts``
        carries groups and names too.
    feature_groups : array-like of int, optional
        Group (descriptor) index of each feature, -1 for none.
    group_costs : array-like, optional
        Cost of each group, paid once per row on its first feature.
    feature_names, group_names : list of str, optional
    tree_eval_cost : float, default 0
        e_t, the cost of evaluating one tree (thesis §1.4.1), charged per
        row for every tree the row reaches.
    max_feature_cost : float, optional
        Only features costing at most this are used: the feature-subset
        GBRT baseline of thesis §2.1.4.
    early_stopping : bool, default False
        Hold out ``validation_fraction`` and stop after ``n_iter_no_change``
        rounds without a better validation loss (or pass ``eval_set`` to
        ``fit``).
    validation_fraction : float, default 0.1
    n_iter_no_change : int, default 10
    random_state : int, optional
        Seeds threshold sampling, subsamples and the held-out split.
    verbose : int, default 1
        A progress bar over the boosting rounds.
    """

    # provided by the estimator class this mixes into (the classifier or the regressor)
    _n_outputs: Callable[[], int]
    _task: Callable[[], Any]
    _ir_model: Callable[..., ir.Model]
    _costs: Any

    def __init__(self, *, loss=None, n_estimators=100, learning_rate=0.1, max_depth=4,
                 min_samples_leaf=20, l2_regularization=0.0, leaf_values="newton", subsample=1.0,
                 max_bins=255, cost_tradeoff=0.0, refund="tree", feature_costs=None,
                 feature_groups=None, group_costs=None, feature_names=None, group_names=None,
                 tree_eval_cost=0.0,
                 max_feature_cost=None, early_stopping=False, validation_fraction=0.1,
                 n_iter_no_change=10, random_state=None, verbose=1, split_criterion="newton",
                 categorical_features=None, cat_l2=10.0, cat_smooth=10.0, max_cat_threshold=32,
                 min_data_per_group=100, max_cat_to_onehot=4):
        self.loss = loss
        self.n_estimators = n_estimators
        self.learning_rate = learning_rate
        self.max_depth = max_depth
        self.min_samples_leaf = min_samples_leaf
        self.l2_regularization = l2_regularization
        self.leaf_values = leaf_values
        self.subsample = subsample
        self.max_bins = max_bins
        self.cost_tradeoff = cost_tradeoff
        self.refund = refund
        self.feature_costs = feature_costs
        self.feature_groups = feature_groups
        self.group_costs = group_costs
        self.feature_names = feature_names
        self.group_names = group_names
        self.tree_eval_cost = tree_eval_cost
        self.max_feature_cost = max_feature_cost
        self.early_stopping = early_stopping
        self.validation_fraction = validation_fraction
        self.n_iter_no_change = n_iter_no_change
        self.random_state = random_state
        self.verbose = verbose
        self.split_criterion = split_criterion
        self.categorical_features = categorical_features
        self.cat_l2 = cat_l2
        self.cat_smooth = cat_smooth
        self.max_cat_threshold = max_cat_threshold
        self.min_data_per_group = min_data_per_group
        self.max_cat_to_onehot = max_cat_to_onehot

    # ------------------------------------------------------------ checks
    def _check_params(self):
        if not (isinstance(self.n_estimators, (int, np.integer)) and self.n_estimators >= 1):
            raise ValueError(f"n_estimators must be a positive integer, got {self.n_estimators!r}")
        if not self.learning_rate > 0:
            raise ValueError(f"learning_rate must be > 0, got {self.learning_rate!r}")
        if not (isinstance(self.max_depth, (int, np.integer)) and 1 <= self.max_depth <= 30):
            raise ValueError(f"max_depth must be an integer in [1, 30], got {self.max_depth!r}")
        if not self.min_samples_leaf >= 1:
            raise ValueError("min_samples_leaf must be >= 1")
        if not (0 < self.subsample <= 1):
            raise ValueError(f"subsample must be in (0, 1], got {self.subsample!r}")
        if not self.cost_tradeoff >= 0:
            raise ValueError(f"cost_tradeoff (lambda) must be >= 0, got {self.cost_tradeoff!r}")
        if self.refund not in ("tree", "immediate"):
            raise ValueError(f"refund must be 'tree' or 'immediate', got {self.refund!r}")
        if self.leaf_values not in ("newton", "mean"):
            raise ValueError(f"leaf_values must be 'newton' or 'mean', got {self.leaf_values!r}")
        if self.split_criterion not in SPLIT_CRITERIA:
            raise ValueError(f"split_criterion must be one of {SPLIT_CRITERIA}, got {self.split_criterion!r}")

    def _fit_inputs(self, X, y, sample_weight):
        """Parameters checked; X, y, the sample weights and the cost
        specification validated, as every fit of the family starts."""
        self._check_params()
        X, y = self._validate_X_y(X, y)
        return X, y, self._validate_sample_weight(sample_weight, X), self._cost_spec(X.shape[1])

    # ------------------------------------------------------------ fit
    def fit(self, X, y, sample_weight=None, eval_set=None):
        """Train.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Training rows (rounded to float32; NaN = missing).
        y : array-like of shape (n_samples,)
        sample_weight : array-like of shape (n_samples,), optional
        eval_set : tuple (X_val, y_val), optional
            Validation rows: the ensemble is cut at the round with the lowest
            validation loss, and training stops after ``n_iter_no_change``
            rounds without improvement.  ``early_stopping=True`` holds out
            ``validation_fraction`` of the data instead.

        Returns
        -------
        self
        """
        X_raw = X
        X = self._encode_frame(X, reset=True)
        X, y, w, costs = self._fit_inputs(X, y, sample_weight)
        N, F = X.shape
        categories = self._category_options(X_raw, F)
        rng = np.random.default_rng(self.random_state)
        target = self._encode_target(y, reset=True)
        loss = self._make_loss()
        held_out = False
        if eval_set is None and self.early_stopping:
            tr, val = holdout_rows(N, self.validation_fraction, rng)
            eval_set = (X[val], y[val])
            X, target, w, N = X[tr], target[tr], w[tr], len(tr)
            held_out = True   # rows of X, validated already (and without a DataFrame's column names)
        data = BinnedData.from_X(X, self.max_bins, seed=int(rng.integers(2**31)),
                                 categorical=None if categories is None else categories.is_cat)
        active = None
        if self.max_feature_cost is not None:  # the feature-subset baseline
            active = costs.costs <= self.max_feature_cost
            if not active.any():
                raise ValueError(f"no feature has cost <= max_feature_cost={self.max_feature_cost}")
        base = loss.initial_scores(target, w)
        validation = None
        if eval_set is not None:
            Xv = eval_set[0] if held_out else self._validate_X(eval_set[0], reset=False)
            tv = self._encode_target(np.asarray(eval_set[1]), reset=False)
            validation = (Xv, tv, np.tile(base, (len(Xv), 1)))
        result = boost(data, loss, target, self.n_estimators, weight=w, costs=costs,
                       cost_tradeoff=self.cost_tradeoff, refund=self.refund, init_scores=base,
                       allowed_features=active, learning_rate=self.learning_rate,
                       max_depth=self.max_depth, min_samples_leaf=self.min_samples_leaf,
                       l2_regularization=self.l2_regularization, leaf_values=self.leaf_values,
                       subsample=self.subsample, rng=rng, eval_set=validation,
                       n_iter_no_change=self.n_iter_no_change, split_criterion=self.split_criterion,
                       progress=type(self).__name__ if self.verbose else None,
                       categories=categories)
        self._costs = costs
        self.base_score_ = base.astype(np.float32)
        self.trees_ = result.rounds[:result.best_rounds]
        self.validation_loss_ = result.validation_loss
        self.n_estimators_ = len(self.trees_)
        tot = result.importances.sum()
        self.feature_importances_ = result.importances / tot if tot > 0 else result.importances
        return self._set_model(self.to_ir())

    # ------------------------------------------------------------ IR
    def to_ir(self, n_iterations=None) -> ir.Model:
        """The trained ensemble (optionally its first ``n_iterations`` rounds)
        as an IR model; its reference predictions are this estimator's."""
        if not hasattr(self, "trees_"):
            from sklearn.exceptions import NotFittedError
            raise NotFittedError(f"this {type(self).__name__} is not fitted yet; call fit first")
        rounds = self.trees_[: n_iterations or len(self.trees_)]
        bank = rounds_to_bank(rounds, self._n_outputs(), tree_cost=float(self.tree_eval_cost),
                              base_score=self.base_score_)
        return self._ir_model([bank], 0, self._task(), self._costs, n_iterations=len(rounds))

    def staged_decision_function(self, X):
        """Scores after each boosting round, accumulated exactly as the IR
        runtimes do (float32, bank order)."""
        X = self._validate_X(X, reset=False)
        K = self._n_outputs()
        acc = np.tile(self.base_score_, (X.shape[0], 1)).astype(np.float32)
        for rnd in self.trees_:
            for t in rnd:
                col = np.zeros(X.shape[0])
                if "category_sets" in t:
                    predict_raw_sets(X, t["feature"], t["threshold"], t["left"], t["right"], t["missing_left"],
                                     *set_arrays(t["category_sets"]), t["other_left"],
                                     t["value"].astype(np.float64), col)
                else:
                    predict_raw(X, t["feature"], t["threshold"], t["left"], t["right"], t["missing_left"],
                                t["value"].astype(np.float64), col)
                # each tree's value is a float32 leaf; add it in float32
                acc[:, t["k"]] = acc[:, t["k"]] + col.astype(np.float32)
            yield acc[:, 0].copy() if K == 1 else acc.copy()


class _OneRealOutput:
    """What a Greedy Miser with one real-valued output (the regressor, the
    ranker) exports: one score column, a regression task, a required target."""

    def _n_outputs(self):
        return 1

    def _task(self):
        return ir.regression_task()

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()  # type: ignore[misc]
        tags.target_tags.required = True
        return tags


_GreedyMiserMixin.__doc__ = (_GreedyMiserMixin.__doc__ or "").rstrip() + "\n" + CATEGORICAL_DOC + "    "


class GreedyMiserRegressor(_OneRealOutput, _GreedyMiserMixin, CostSensitiveRegressor):
    """Greedy Miser for regression (squared loss): thesis §2.1, Eq. (2.5)."""

    __doc__ += "\n\n" + (_GreedyMiserMixin.__doc__ or "\n\n").split("\n\n", 1)[1]

    def _encode_target(self, y, reset):
        y = np.asarray(y, np.float64)
        if not np.all(np.isfinite(y)):
            raise ValueError("y: regression targets must be finite")
        return y

    def _make_loss(self):
        name = self.loss or "squared"
        if name != "squared":
            raise ValueError(f"loss {name!r} is not a regression loss; use 'squared'")
        return make_loss(name)


class GreedyMiserClassifier(_GreedyMiserMixin, CostSensitiveClassifier):
    """Greedy Miser for classification (thesis §2.1, Eq. 2.5): binary
    log-loss (or the squared hinge with ``loss="squared_hinge"``),
    multiclass log-loss with one tree per class per round."""

    __doc__ += "\n\n" + (_GreedyMiserMixin.__doc__ or "\n\n").split("\n\n", 1)[1]

    def _encode_target(self, y, reset):
        idx = self._encode_labels(y, reset=reset)
        if len(self.classes_) == 2:
            return idx.astype(np.float64)
        Y = np.zeros((len(y), len(self.classes_)))
        Y[np.arange(len(y)), idx] = 1.0
        return Y

    def _loss_name(self):
        if len(self.classes_) > 2:
            return "multiclass"
        return self.loss or "logistic"

    def _make_loss(self):
        name = self._loss_name()
        if name not in ("logistic", "squared_hinge", "multiclass"):
            raise ValueError(f"loss {name!r} is not a classification loss")
        return make_loss(name, len(self.classes_))

    def _n_outputs(self):
        return 1 if len(self.classes_) == 2 else len(self.classes_)

    def _task(self):
        classes = self._ir_classes()
        if len(classes) == 2:
            return ir.binary_task(classes, "logistic" if self._loss_name() == "logistic" else "identity")
        return ir.multiclass_task(classes)
