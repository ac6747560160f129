"""scikit-learn estimators as skinflint IR.

Supported: ``DecisionTree*``, ``RandomForest*``, ``ExtraTrees*``,
``GradientBoosting*``, ``HistGradientBoosting*`` (classifiers and
regressors) and linear models (anything with ``coef_`` and ``intercept_``:
``LogisticRegression``, ``LinearRegression``, ``Ridge``, ``LinearSVC``,
``SGD*``, ...).

Routing is exact: scikit-learn compares the float32 input widened to
float64 with a float64 threshold (``thresholds.le_threshold``), and NaN
follows each node's ``missing_go_to_left``.

Tree families are float64 ``trees`` nodes (format version 2) that add
scikit-learn's double values in scikit-learn's order, so on float32 rows
their margins equal scikit-learn's bit for bit (docs/importers.md):

* a decision tree: its leaf's ``tree_.value`` (the base score -0.0, the
  exact additive identity, so even a -0.0 leaf comes back as -0.0);
* a forest: 0.0 plus each tree's value in ``estimators_`` order, divided
  by the number of trees (``_accumulate_prediction`` then ``/=``; exact
  when the forest predicts with ``n_jobs`` None or 1, since with threads
  scikit-learn's own order changes from call to call);
* gradient boosting: the init estimator's constant raw prediction, then
  ``learning_rate * value`` of each stage (``predict_stages``: one
  product, one sum, unfused where scikit-learn's build does not fuse them,
  as on x86-64);
* histogram gradient boosting: ``0.0 + _baseline_prediction``, then each
  predictor's value in iteration order.

Histogram gradient boosting with ``categorical_features``: the model
encodes each categorical column with its ``OrdinalEncoder`` (a category
value to its code; an unknown value, NaN, to missing) and puts those
columns first.  The imported model reads the user's columns in the
user's order and, in a categorical column, the category value itself
(the float32 of an integer in [0, 2^24), as ``df.to_numpy(np.float32)``
gives for integer categories), or with ``category_codes`` a position in
a list of categories (pandas' ``Series.cat.codes``).  Each categorical
node is an IR set split of rule "integer" whose LEFT set is the encoder
composed with the node's ``raw_left_cat_bitsets``: a value that is not a
known category (an unknown integer, a negative, a non-integer, one past
the set's words, +-inf) goes where NaN goes (``missing_go_to_left``), as
scikit-learn sends unknown categories (it refuses +-inf outright).

Linear models and kernel machines stay float32: scikit-learn computes
``X @ coef_`` with BLAS, whose summation order is the BLAS library's own
(blocked, vectorised), so there is no fixed order to copy; their margins
are within ``error_bound`` of scikit-learn's.

Margins: regressors give ``predict``; binary boosting and linear
classifiers give ``decision_function`` (logistic transform where the
estimator's probability is the logistic of it); trees and forests give
``predict_proba`` with an identity transform (labels are its first argmax,
as scikit-learn's).
"""
from __future__ import annotations

import numpy as np

from ..ir import builders
from ..ir.codes import KERNELS
from ._common import IMPORTER_VERSION, bank_model, cost_argument, cost_parameters_doc, one_hot_values, resolve_costs
from .thresholds import clamp_infinite, le_threshold

U32 = 2.0 ** -24
MAX_CATEGORY_VALUE = 1 << 24   # a float32 carries every integer below it exactly


def _raw(feature, threshold, left, right, missing_left, value):
    """One tree as scikit-learn has it: float64 thresholds (0 at leaves),
    children -1 at leaves, leaf values [M, K] (what sklearn-json stores)."""
    leaf = left < 0
    return {"feature": np.where(leaf, -1, feature), "threshold": np.where(leaf, 0.0, threshold),
            "left": np.where(leaf, -1, left), "right": np.where(leaf, -1, right),
            "missing_left": np.asarray(missing_left).astype(bool), "value": np.asarray(value, np.float64)}


def tree_dict(raw):
    """A raw tree (``_raw``) as the bank's local arrays: ``x <= t`` on the
    float32 input widened becomes ``x <= t32`` (``le_threshold``)."""
    leaf = raw["left"] < 0
    sets = raw.get("category_sets")
    if sets is not None:                    # a categorical node's threshold is 0 (unused)
        leaf = leaf | np.array([c is not None for c in sets])
    thr = np.zeros(raw["feature"].shape[0], np.float32)
    thr[~leaf] = clamp_infinite(le_threshold(raw["threshold"][~leaf]))
    return {**raw, "threshold": thr}


def _cart(tree, value):
    """A fitted ``sklearn.tree._tree.Tree`` with leaf values [M, K]."""
    miss = getattr(tree, "missing_go_to_left", np.ones(tree.node_count, np.uint8))
    return _raw(tree.feature.astype(np.int64), tree.threshold, tree.children_left.astype(np.int64),
                tree.children_right.astype(np.int64), miss, value)


def _hgb(pred, klass, K, columns=None, inputs=None):
    """One HGB predictor's tree: its features are the user's columns
    (``columns[f]``: the user's column of the preprocessed column f), and
    each categorical node's left set is over the values the user feeds
    (``_category_set``)."""
    n = pred.nodes
    leaf = n["is_leaf"].astype(bool)
    cat = n["is_categorical"].astype(bool) & ~leaf
    feature = n["feature_idx"].astype(np.int64)
    if columns is not None:
        feature = columns[feature]
    left = np.where(leaf, -1, n["left"].astype(np.int64))
    right = np.where(leaf, -1, n["right"].astype(np.int64))
    val = np.where(leaf, n["value"], 0.0)
    raw = _raw(feature, np.where(cat, 0.0, n["num_threshold"]), left, right,
               n["missing_go_to_left"], one_hot_values(val, klass, K) if K > 1 else val)
    if cat.any():
        if inputs is None:
            raise ValueError("HistGradientBoosting: a categorical split without the model's "
                             "OrdinalEncoder (fitted by a scikit-learn older than 1.4?); refit it")
        miss = raw["missing_left"]
        sets = [None] * len(feature)
        for m in np.flatnonzero(cat):
            sets[m] = _category_set(pred.raw_left_cat_bitsets[n["bitset_idx"][m]], *inputs[int(feature[m])],
                                    bool(miss[m]))
        raw["category_sets"] = sets
        raw["other_left"] = cat & miss
    return raw


def _category_set(bitset, values, codes, missing_left):
    """A categorical node's LEFT set over the values the user feeds (the IR's
    "integer" rule), composed of the model's OrdinalEncoder (``values[i]``
    is encoded as ``codes[i]``; every other value as NaN, the missing
    direction) and the node's ``raw_left_cat_bitsets`` row over codes.
    The words reach the largest known value going the other way than
    missing does; every unknown integer in them, and ``other_left``
    (negatives, non-integers, values past the words, +-inf), go the
    missing direction."""
    bitset = np.asarray(bitset, np.uint32)
    goes_left = ((bitset[codes >> 5] >> (codes & 31).astype(np.uint32)) & 1).astype(bool)
    other = values[goes_left != missing_left]
    words = int(other.max()) // 32 + 1 if other.size else 1
    member = np.full(32 * words, missing_left, bool)
    inside = values < 32 * words
    member[values[inside]] = goes_left[inside]
    return np.packbits(member, bitorder="little").view("<u4").astype(np.uint32)


def _column_positions(cols, F):
    """A ColumnTransformer's column selection (mask or integers) as positions."""
    cols = np.asarray(cols)
    if cols.dtype == bool:
        return np.flatnonzero(cols)
    if cols.dtype.kind in "iu":
        return cols.astype(np.int64) % F
    raise ValueError(f"HistGradientBoosting: the preprocessor selects columns by {cols.dtype} "
                     "(expected a mask or positions)")


def _feature_label(names, j):
    return repr(names[j]) if names is not None else f"at position {j}"


def _is_number(v):
    return isinstance(v, (int, float, np.integer, np.floating)) and not isinstance(v, (bool, np.bool_))


def _category_inputs(cats, j, names, given):
    """(values, codes): the integers the user feeds for categorical column j
    and the OrdinalEncoder's code of each.  ``given`` None: the category
    values themselves (integers in [0, 2^24), exact in float32); else a
    list of categories whose positions the user feeds (pandas'
    ``Series.cat.codes`` when the list is ``Series.cat.categories``)."""
    label = _feature_label(names, j)
    if given is None:
        bad = [c for c in cats if not (_is_number(c) and np.isfinite(c) and float(c) == int(c)
                                       and 0 <= c < MAX_CATEGORY_VALUE)]
        if bad:
            raise ValueError(
                f"HistGradientBoosting: categorical feature {label} has categories ({_py_label(bad[:3])}"
                f"{', ...' if len(bad) > 3 else ''}) that are not integers in [0, 2^24), which a float32 "
                f"input cannot carry exactly; pass category_codes={{{label if names else j}: <its categories>}} "
                "(pandas: Series.cat.categories) and feed the positions (Series.cat.codes)")
        return np.array([int(c) for c in cats], np.int64), np.arange(len(cats), dtype=np.int64)
    given = list(given)
    if len(given) >= MAX_CATEGORY_VALUE:
        raise ValueError(f"category_codes[{label}]: {len(given)} categories, at most 2^24 can be fed")
    code = {}
    for i, c in enumerate(cats):
        code.setdefault(builders._py(c), i)
    keys = [builders._py(c) for c in given]
    if len(set(keys)) != len(keys):
        raise ValueError(f"category_codes[{label}]: the categories repeat a value; each position "
                         "must name one category")
    pos = [(p, code[k]) for p, k in enumerate(keys) if k in code]
    return (np.array([p for p, _ in pos], np.int64).reshape(-1),
            np.array([c for _, c in pos], np.int64).reshape(-1))


def _hgb_columns(est, category_codes):
    """(columns, inputs) of a HistGradientBoosting estimator: the user's
    column of each preprocessed column (its ColumnTransformer puts the
    categorical columns first), and per categorical user column the
    ``_category_inputs`` pairs; (None, None) when it has no categorical
    features."""
    pre = getattr(est, "_preprocessor", None)
    F = int(est.n_features_in_)
    names = [str(n) for n in getattr(est, "feature_names_in_", [])] or None
    if pre is None:
        if category_codes:
            raise ValueError(f"category_codes: {type(est).__name__} has no categorical features")
        return None, None
    columns = np.full(F, -1, np.int64)
    for name, _, cols in pre.transformers_:
        sl = pre.output_indices_[name]
        pos = _column_positions(cols, F)
        if sl.stop - sl.start != len(pos):
            raise ValueError(f"HistGradientBoosting: the preprocessor's {name!r} step changes the "
                             "number of columns")
        columns[sl] = pos
    if sorted(columns.tolist()) != list(range(F)):
        raise ValueError("HistGradientBoosting: the preprocessor does not pass each column once")
    enc = pre.named_transformers_["encoder"]
    cat_cols = columns[pre.output_indices_["encoder"]]
    wanted = {}
    for key, cats in (category_codes or {}).items():
        if isinstance(key, (int, np.integer)) and not isinstance(key, bool):
            j = int(key)
        elif names is not None and key in names:
            j = names.index(key)
        else:
            raise ValueError(f"category_codes: {key!r} is not a feature of the model (names: "
                             f"{names}; or give positions)")
        if j not in cat_cols.tolist():
            raise ValueError(f"category_codes: feature {_feature_label(names, j)} is not categorical")
        wanted[j] = cats
    inputs = {}
    for j, cats in zip(cat_cols.tolist(), enc.categories_, strict=True):
        cats = list(cats)
        if cats and _is_number(cats[-1]) and np.isnan(cats[-1]):
            cats = cats[:-1]                        # NaN: the missing direction, not a category
        inputs[j] = _category_inputs(cats, j, names, wanted.get(j))
    return columns, inputs


def _classifier_task(est, K_margin, transform):
    classes = tuple(est.classes_)
    if K_margin == 1:
        return builders.binary_task(classes, transform=transform)
    return builders.multiclass_task(classes, transform=transform)


def _py_label(classes):
    return ", ".join(repr(builders._py(c)) for c in classes)


def category_inputs(est, category_codes=None) -> dict:
    """What each categorical column of a HistGradientBoosting model carries
    in the imported model's rows, by feature name (else position):
    ``"values"`` (the category values) or the list of categories whose
    positions it carries (``category_codes``); {} for other models.  Kept
    in the model's metadata (``source.category_inputs``)."""
    from sklearn import ensemble
    if not isinstance(est, (ensemble.HistGradientBoostingClassifier, ensemble.HistGradientBoostingRegressor)):
        return {}
    columns, inputs = _hgb_columns(est, category_codes)
    if inputs is None:
        return {}
    names = [str(n) for n in getattr(est, "feature_names_in_", [])] or None
    given = {}
    for key, cats in (category_codes or {}).items():
        j = int(key) if isinstance(key, (int, np.integer)) else (names or []).index(key)
        given[j] = [_json_value(c) for c in cats]
    return {(names[j] if names else str(j)): given.get(j, "values") for j in sorted(inputs)}


def _json_value(c):
    c = builders._py(c)
    return c if isinstance(c, (str, int)) or (isinstance(c, float) and np.isfinite(c)) else str(c)


def raw_trees(est, category_codes=None):
    """(raw trees, base score [K], task, divisor) of a tree-family estimator
    in scikit-learn's summation order, or None for other estimators.
    ``category_codes``: ``from_sklearn``'s."""
    from sklearn import ensemble, tree
    name = type(est).__name__
    is_clf = hasattr(est, "classes_")
    if getattr(est, "n_outputs_", 1) > 1:
        raise ValueError(f"{name}: multi-output estimators are not supported; import one per output")
    if is_clf and len(est.classes_) < 2:
        raise ValueError(f"{name}: fitted on one class ({_py_label(est.classes_)}); it predicts that "
                         "class for every row, and a classifier needs 2 or more classes to import")
    hgb = (ensemble.HistGradientBoostingClassifier, ensemble.HistGradientBoostingRegressor)
    if category_codes and not isinstance(est, hgb):
        raise ValueError(f"category_codes: {name} has no categorical features (only "
                         "HistGradientBoosting* with categorical_features has)")
    forests = (ensemble.RandomForestClassifier, ensemble.RandomForestRegressor,
               ensemble.ExtraTreesClassifier, ensemble.ExtraTreesRegressor)
    if isinstance(est, (tree.BaseDecisionTree,) + forests):
        single = isinstance(est, tree.BaseDecisionTree)
        members = [est] if single else list(est.estimators_)
        # predict_proba / predict return tree_.value as it is (scikit-learn
        # >= 1.4 stores classifiers' leaf fractions there)
        trees = [_cart(m.tree_, m.tree_.value[:, 0, :] if is_clf else m.tree_.value[:, 0, :1])
                 for m in members]
        K = trees[0]["value"].shape[1]
        # classifiers: K = n_classes probability columns, labels the first argmax
        task = (builders.multiclass_task(tuple(est.classes_), transform="identity") if is_clf
                else builders.regression_task())
        # a tree: -0.0 + v == v for every v; a forest: zeros, += each tree, /= n
        base = np.full(K, -0.0) if single else np.zeros(K)
        return trees, base, task, (1.0 if single else float(len(members)))
    if isinstance(est, (ensemble.GradientBoostingClassifier, ensemble.GradientBoostingRegressor)):
        if est.init_ == "zero":
            base = np.zeros(est.estimators_.shape[1])
        elif type(est.init_).__name__ not in ("DummyRegressor", "DummyClassifier"):
            raise ValueError(f"{name}: init={type(est.init_).__name__} gives each row its own starting "
                             "value, which a tree bank's constant base score cannot hold; use the "
                             "default init or init='zero'")
        else:
            base = np.asarray(est._raw_predict_init(np.zeros((1, est.n_features_in_), np.float32)),
                              np.float64)[0]
        K = est.estimators_.shape[1]
        trees = [_cart(est.estimators_[i, k].tree_,
                       one_hot_values(est.learning_rate * est.estimators_[i, k].tree_.value[:, 0, 0], k, K)
                       if K > 1 else est.learning_rate * est.estimators_[i, k].tree_.value[:, 0, :1])
                 for i in range(est.estimators_.shape[0]) for k in range(K)]
        task = (_classifier_task(est, K, "logistic" if K == 1 else "softmax") if is_clf
                else builders.regression_task())
        if not is_clf and getattr(est, "loss", "") not in ("squared_error", "absolute_error", "huber",
                                                          "quantile"):
            raise ValueError(f"{name}: loss {est.loss!r} is not supported")
        return trees, base, task, 1.0
    if isinstance(est, hgb):
        loss = getattr(est, "loss", "")
        if not is_clf and loss not in ("squared_error", "absolute_error", "quantile"):
            raise ValueError(f"{name}: loss {loss!r} transforms the raw prediction (e.g. exp for "
                             "poisson/gamma), which the importer does not reproduce")
        # raw_predictions = zeros; += _baseline_prediction; += each predictor
        base = np.zeros(np.size(est._baseline_prediction)) + np.asarray(est._baseline_prediction,
                                                                         np.float64).ravel()
        K = base.shape[0]
        columns, inputs = _hgb_columns(est, category_codes)
        trees = [_hgb(p, k, K, columns, inputs) for it in est._predictors for k, p in enumerate(it)]
        task = (_classifier_task(est, K, "logistic" if K == 1 else "softmax") if is_clf
                else builders.regression_task())
        return trees, base, task, 1.0
    return None


@cost_parameters_doc('``feature_names_in_``')
def from_sklearn(est, feature_costs=None, *, by_position=False, costs=None, category_codes=None):
    """Import a fitted scikit-learn estimator as an IR model.

    Parameters
    ----------
    est : fitted estimator (see the module docstring for the families)
    {cost_parameters}
    category_codes : dict, optional
        HistGradientBoosting with categorical features only: ``{feature
        name or position: categories}`` for the columns whose rows will
        carry positions in ``categories`` instead of category values, e.g.
        ``{"color": df["color"].cat.categories}`` to feed
        ``df["color"].cat.codes`` (needed where the categories are not
        integers in [0, 2^24), such as strings).  Other categorical columns
        carry the category values themselves.

    Returns
    -------
    ir.Model
    """
    from sklearn.utils.validation import check_is_fitted
    feature_costs = cost_argument(feature_costs, costs, "from_sklearn")
    check_is_fitted(est)
    names = [str(n) for n in getattr(est, "feature_names_in_", [])] or None
    F = int(est.n_features_in_)
    fc = resolve_costs(feature_costs, F, names, by_position=by_position)
    info = {"library": "sklearn", "estimator": type(est).__name__}
    got = raw_trees(est, category_codes)
    if got is not None:
        trees, base, task, divisor = got
        if any(t.get("category_sets") is not None for t in trees):
            info["category_inputs"] = category_inputs(est, category_codes)
        return tree_model([tree_dict(t) for t in trees], fc, task, base, divisor, info)
    if hasattr(est, "support_vectors_") and hasattr(est, "dual_coef_"):
        return _kernel_model(est, fc, info)
    if hasattr(est, "coef_") and hasattr(est, "intercept_"):
        W = np.atleast_2d(np.asarray(est.coef_, np.float64))
        b = np.atleast_1d(np.asarray(est.intercept_, np.float64))
        if W.shape[1] != F:
            raise ValueError(f"{type(est).__name__}: coef_ has {W.shape[1]} columns for {F} features")
        K = W.shape[0]
        if hasattr(est, "classes_"):
            proba = hasattr(est, "predict_proba") and getattr(est, "loss", "log_loss") in ("log_loss", "log")
            task = _classifier_task(est, K, ("logistic" if K == 1 else "softmax") if proba else "identity")
        else:
            task = builders.regression_task(K)
        node = builders.linear(list(range(F)), W.T, np.broadcast_to(b, (K,)), name="sklearn")
        info["exact"] = "margins float32, see error_bound"
        meta = {"trainer": "import:sklearn", "importer_version": IMPORTER_VERSION, "source": info}
        return builders.model(fc.features(), [node], 0, task=task, groups=fc.ir_groups(), metadata=meta)
    raise ValueError(f"from_sklearn: {type(est).__name__} is not supported; supported are decision "
                     "trees, random forests, extra trees, (hist) gradient boosting and linear models")


def tree_model(trees, fc, task, base, divisor, info):
    """The float64 bank of a tree family (also read from sklearn-json)."""
    info["exact"] = "margins are scikit-learn's bit for bit (float64 bank)"
    return bank_model(trees, fc, task, base_score=base, source="sklearn", info=info,
                      precision="float64", divisor=divisor, category_rule="integer")


def _kernel_model(est, fc, info):
    """SVC (binary) / SVR: ``dual_coef_ @ k(support_vectors_, x) + intercept_``
    (scikit-learn's public, sign-corrected attributes give decision_function)."""
    name = type(est).__name__
    if est.kernel not in ("rbf", "linear", "poly"):
        raise ValueError(f"{name}: kernel {est.kernel!r} is not supported (rbf, linear and poly are)")
    if hasattr(est, "classes_") and len(est.classes_) != 2:
        raise ValueError(f"{name}: multiclass SVC votes one-vs-one, which the IR does not express; "
                         "import one binary SVC per class pair, or use a one-vs-rest model")
    if getattr(est, "_sparse", False):
        raise ValueError(f"{name}: fitted on sparse data; refit on a dense array")
    F = int(est.n_features_in_)
    sv = np.asarray(est.support_vectors_, np.float64)
    used = np.flatnonzero(np.any(sv != 0, axis=0)) if est.kernel != "rbf" else np.arange(F)
    task = (builders.binary_task(tuple(est.classes_), transform="identity") if hasattr(est, "classes_")
            else builders.regression_task())
    node = builders.kernel(sv[:, used], np.asarray(est.dual_coef_, np.float64)[0], used,
                           kernel=est.kernel, gamma=float(est._gamma), coef0=float(est.coef0),
                           degree=int(est.degree), bias=float(np.ravel(est.intercept_)[0]), name="sklearn")
    info["exact"] = "margins float32, see error_bound"
    meta = {"trainer": "import:sklearn", "importer_version": IMPORTER_VERSION, "source": info}
    return builders.model(fc.features(), [node], 0, task=task, groups=fc.ir_groups(), metadata=meta)


def _kernel_bound(node, X):
    """First-order float32 error of a kernel node against its float64 value,
    doubled to cover the second-order terms (each below 1e-3 of the first)."""
    X = np.asarray(X, np.float64)[:, node.features]
    sv = node.support_vectors.astype(np.float64)
    a = np.abs(node.alpha[:, 0].astype(np.float64))
    D, S, g = sv.shape[1], sv.shape[0], float(node.gamma)
    kname = {v: k for k, v in KERNELS.items()}[int(node.kernel)]
    if kname == "rbf":
        diff = X[:, None, :] - sv[None]
        d2 = (diff ** 2).sum(2)
        k = np.exp(-g * d2)
        # sv rounding (u|sv| per coordinate), the float32 sum of squares,
        # gamma's rounding and the product, expf's few ulps
        dk = k * (g * (2 * U32 * (np.abs(diff) * np.abs(sv)[None]).sum(2) + (D + 3) * U32 * d2) + 4 * U32)
    else:
        dot = X @ sv.T
        adot = np.abs(X) @ np.abs(sv).T
        if kname == "linear":
            k, dk = dot, (D + 2) * U32 * adot
        else:
            p = int(node.degree)
            base = g * dot + float(node.coef0)
            k = base ** p
            dbase = g * (D + 3) * U32 * adot + U32 * np.abs(base)
            dk = p * np.abs(base) ** max(p - 1, 0) * dbase + (p + 1) * U32 * np.abs(k)
    ak = np.abs(k) * a
    return 2 * ((dk * a).sum(1) + U32 * ak.sum(1) + (S + 2) * U32 * (ak.sum(1) + abs(float(node.bias[0]))))


def error_bound(model, X=None) -> float | np.ndarray:
    """A bound on |IR margin - scikit-learn's float64 margin|.

    For a float64 tree bank (what ``from_sklearn`` makes of every tree
    family): 0, the margins are scikit-learn's own.  For a linear node over
    rows X (u = 2^-24): (2F + 3) u (1 + u)^F (|b| + sum_j |w_j x_j|) per
    row; for a kernel node, ``_kernel_bound``.
    """
    node = model.nodes[0]
    if node.kind == "trees":
        if not node.is_float64:
            raise ValueError("error_bound: a float32 tree bank is not what from_sklearn makes "
                             "(its tree families are float64 banks, exact)")
        return 0.0
    if node.kind == "kernel":
        return _kernel_bound(node, X)
    W = np.asarray(node.weights, np.float64)
    X = np.nan_to_num(np.asarray(X, np.float64))
    F = W.shape[0]
    return (2 * F + 3) * U32 * (1 + U32) ** F * (np.abs(node.bias).max() + np.abs(X) @ np.abs(W).max(1))
