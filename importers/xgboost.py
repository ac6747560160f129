"""XGBoost boosters as skinflint IR, bit for bit.

XGBoost keeps thresholds and leaf values in float32, starts each row at the
base margin (float32) and adds the trees' leaf values in tree order in
float32: exactly the IR's ``trees`` node (``base_score + v_0 + v_1 + ...``).
So ``from_xgboost(booster)`` gives margins equal to
``booster.predict(DMatrix(X), output_margin=True)`` bit for bit on float32
rows, NaN included.  Conversion per feature of the model:

* ``x < t`` (XGBoost) becomes ``x <= t32`` with ``t32`` the float32 just
  below t (``thresholds.lt_threshold``);
* a missing value (NaN) takes the node's ``default_left``;
* a categorical split (``enable_categorical=True``, one-hot or partition)
  becomes a category-set split under the IR's ``truncate_nonnegative``
  rule, XGBoost's own (``common::Decision``): x >= 0 is category trunc(x);
  XGBoost's stored categories go right, so the IR's left set is their
  complement within the words that hold the largest one, and every value
  that is no category or lies past those words (negative, too large,
  +-inf) goes left (``other_left``), as in XGBoost.  The model reads the
  category codes XGBoost sees: a DataFrame's categories re-coded by
  XGBoost, or the floats given to a DMatrix with ``feature_types='c'``;
* the base margin is read from XGBoost itself (a copy of the model with no
  trees predicts it), so ``base_score``, ``boost_from_average`` and the
  objective's probability-to-margin step are XGBoost's own float32 results;
* multiclass (``num_class`` = K, one tree per class per round, tree_info
  gives the class): a K-output bank whose tree for class k puts its leaf in
  column k and -0.0 (the exact additive identity) elsewhere;
* refused, with an error naming them: vector-leaf
  (multi-target) trees, ``num_parallel_tree`` > 1 with DART, DART
  (``weight_drop`` scales trees at prediction), ``gblinear``, and
  objectives whose prediction transform the IR has no equal for
  (``reg:logistic``, ``count:poisson``, ...) unless ``raw_margin=True``.

A per-row ``base_margin`` given at prediction time is not part of a model;
pass ``base_margin=`` (one value per output) to import it as a constant.
"""
from __future__ import annotations

import json
import os

import numpy as np

from ..ir import builders
from ..ir.json_io import MAX_FILE_BYTES
from . import _ubjson, _xgboost_check
from ._common import bank_model, cost_argument, cost_parameters_doc, one_hot_values, resolve_costs
from .thresholds import lt_threshold

_BINARY = {"binary:logistic": "logistic", "binary:logitraw": "identity", "binary:hinge": None}
_REGRESSION = ("reg:squarederror", "reg:squaredlogerror", "reg:pseudohubererror", "reg:absoluteerror",
               "reg:quantileerror", "rank:pairwise", "rank:ndcg", "rank:map", "reg:linear")
_MULTICLASS = {"multi:softprob": "softmax", "multi:softmax": "softmax"}


def _booster(model):
    """An ``xgboost.Booster`` from a booster, an sklearn wrapper, a path or
    bytes; a file's bytes are checked (``_xgboost_check``) before XGBoost
    reads them."""
    import xgboost as xgb
    if isinstance(model, xgb.Booster):
        return model
    if hasattr(model, "get_booster"):
        return model.get_booster()
    if isinstance(model, (str, os.PathLike)):
        if not os.path.exists(model):
            raise FileNotFoundError(f"{os.fspath(model)}: no such XGBoost model file")
        with open(model, "rb") as fh:
            raw = fh.read(MAX_FILE_BYTES + 1)
        if len(raw) > MAX_FILE_BYTES:
            raise ValueError(f"{os.fspath(model)}: larger than {MAX_FILE_BYTES} bytes; not read")
        model = raw
    if isinstance(model, (bytes, bytearray)):
        _xgboost_check.check_document(_xgboost_check.decode(model))
        try:
            return xgb.Booster(model_file=bytearray(model))
        except xgb.core.XGBoostError as e:           # what XGBoost itself refuses, in one line
            why = str(e).split("\n")[0].split(": ", 2)[-1]
            raise ValueError(f"XGBoost model: XGBoost refuses the file ({why}); the file is damaged "
                             "or not an XGBoost model") from None
    raise TypeError(f"from_xgboost: expected an xgboost Booster, XGBModel, model file or bytes, "
                    f"got {type(model).__name__}")


def _base_margin(booster, learner_json, n_features, n_outputs):
    """XGBoost's own float32 base margin: a tree-less copy predicts it."""
    import xgboost as xgb
    j = json.loads(learner_json)
    m = j["learner"]["gradient_booster"]["model"]
    m["trees"], m["tree_info"] = [], []
    m["gbtree_model_param"]["num_trees"] = "0"
    m["iteration_indptr"] = [0]
    # with no trees and boost_from_average on, XGBoost would re-estimate the
    # base score at the first prediction; the stored one is what counts
    j["learner"]["learner_model_param"]["boost_from_average"] = "0"
    empty = xgb.Booster(model_file=bytearray(json.dumps(j).encode()))
    row = np.zeros((1, n_features), np.float32)
    out = empty.predict(xgb.DMatrix(row), output_margin=True, validate_features=False)
    return np.asarray(out, np.float32).reshape(n_outputs)


def _task(objective, n_class, classes, raw_margin):
    if objective in _BINARY and n_class <= 1:
        tr = _BINARY[objective]
        if tr is None:
            raise ValueError(f"XGBoost objective {objective!r}: its labels come from margin > 0 like "
                             "binary:logitraw; import with raw_margin=True")
        return builders.binary_task(classes if classes is not None else (0, 1), transform=tr)
    if objective in _MULTICLASS:
        cl = classes if classes is not None else tuple(range(n_class))
        return builders.multiclass_task(cl, transform=_MULTICLASS[objective])
    if objective in _REGRESSION or raw_margin:
        return builders.regression_task(max(n_class, 1)) if n_class > 1 else builders.regression_task()
    raise ValueError(f"XGBoost objective {objective!r} transforms the margin in a way the IR has no "
                     "equal for; pass raw_margin=True to import the raw margin (output_margin=True) "
                     "as a regression")


def _category_sets(t, internal):
    """Per node None or the words of its LEFT set, for the IR's
    ``truncate_nonnegative`` rule (``CategorySplits``).

    XGBoost stores per categorical node the categories that go RIGHT
    (``categories[categories_segments[k]:][:categories_sizes[k]]`` of node
    ``categories_nodes[k]``) and sends every other category left, as well as
    a value that is no category (negative, >= 2**24, +-inf) or lies past the
    node's bitfield (``common::Decision``).  So the left set is the
    complement of XGBoost's set within the words that hold its largest
    category, and every other value goes left (``other_left``).  None when
    the tree has no categorical split."""
    if "split_type" not in t:
        return None
    st = np.asarray(t["split_type"], np.int64)
    cat = (st == 1) & internal
    if not cat.any():
        return None
    nodes = np.asarray(t["categories_nodes"], np.int64)
    seg = np.asarray(t["categories_segments"], np.int64)
    size = np.asarray(t["categories_sizes"], np.int64)
    cats = np.asarray(t["categories"], np.int64)
    sets: list = [None] * st.shape[0]
    for k, m in enumerate(nodes):
        if cat[m]:
            right = builders.category_set(cats[seg[k]:seg[k] + size[k]])
            sets[m] = ~right                        # uint32: the complement within the words
    return sets


def _tree(t, n_class, klass):
    """One XGBoost tree as local arrays (XGBoost's own node order)."""
    if int(t["tree_param"].get("size_leaf_vector", "1")) > 1:
        raise ValueError("XGBoost vector-leaf trees (multi_strategy='multi_output_tree') are not "
                         "supported; train with multi_strategy='one_output_per_tree'")
    left = np.asarray(t["left_children"], np.int64)
    right = np.asarray(t["right_children"], np.int64)
    cond = np.asarray(t["split_conditions"], np.float32)
    leaf = left < 0
    sets = _category_sets(t, ~leaf)
    numeric = ~leaf if sets is None else ~leaf & np.array([s is None for s in sets])
    feature = np.where(leaf, -1, np.asarray(t["split_indices"], np.int64))
    thr = np.zeros(left.shape[0], np.float32)       # 0.0 at categorical nodes (the IR requires it)
    thr[numeric] = lt_threshold(cond[numeric])
    value = np.where(leaf, cond, np.float32(0)).astype(np.float64)
    if n_class > 1:
        value = one_hot_values(value, klass, n_class)
    out = {"feature": feature, "threshold": thr, "left": np.where(leaf, -1, left),
           "right": np.where(leaf, -1, right), "value": value,
           "missing_left": np.asarray(t["default_left"]).astype(bool)}
    if sets is not None:
        out["category_sets"] = sets
        out["other_left"] = ~leaf & ~numeric
    return out


@cost_parameters_doc("the source model's feature names")
def from_xgboost(model, feature_costs=None, *, classes=None, raw_margin=False, base_margin=None,
                 by_position=False, costs=None):
    """Import an XGBoost model as an IR model whose margins equal XGBoost's.

    Parameters
    ----------
    model : xgboost.Booster, XGBModel, path to a ``.json``/``.ubj`` model file, or its bytes
    {cost_parameters}
    classes : sequence, optional
        Class labels; default the sklearn wrapper's ``classes_`` or 0..K-1.
    raw_margin : bool, default False
        Import objectives whose transform the IR lacks as a regression on
        the raw margin (``output_margin=True``).
    base_margin : float or array [K], optional
        A constant added as XGBoost adds a ``base_margin``: it replaces the
        model's own base score (XGBoost does the same).

    Returns
    -------
    ir.Model
        One ``trees`` node; ``ReferenceRuntime(model).predict(X).scores``
        equals ``booster.predict(DMatrix(X), output_margin=True)`` bit for bit.
    """
    feature_costs = cost_argument(feature_costs, costs, "from_xgboost")
    if classes is None and hasattr(model, "classes_"):
        classes = tuple(model.classes_)
    booster = _booster(model)
    if hasattr(model, "get_booster"):
        # the sklearn wrapper predicts with the best iteration after early stopping
        try:
            best = model.best_iteration
        except AttributeError:
            best = None
        if best is not None and best + 1 < booster.num_boosted_rounds():
            booster = booster[: best + 1]
    learner_json = booster.save_raw("json").decode()
    doc = _ubjson.loads(booster.save_raw("ubj"))
    _xgboost_check.check_document(doc)
    d = doc["learner"]
    gb = d["gradient_booster"]
    if gb["name"] == "dart":
        raise ValueError("XGBoost DART boosters scale each tree by its weight_drop at prediction "
                         "time, which the importer does not reproduce; retrain with booster='gbtree'")
    if gb["name"] != "gbtree":
        raise ValueError(f"XGBoost booster {gb['name']!r} is not supported (only 'gbtree'); "
                         "a gblinear model is a linear model: rebuild it with ir.linear")
    param = d["learner_model_param"]
    n_features = int(param["num_feature"])
    n_class = int(param.get("num_class", "0"))
    if int(param.get("num_target", "1")) > 1:
        raise ValueError("XGBoost multi-target models are not supported; import one booster per target")
    objective = d["objective"]["name"]
    task = _task(objective, n_class, classes, raw_margin)
    K = task.n_outputs
    gm = gb["model"]
    info = np.asarray(gm["tree_info"], np.int64)
    trees = [_tree(t, K, int(info[i]) if K > 1 else 0) for i, t in enumerate(gm["trees"])]
    if not trees:
        raise ValueError("from_xgboost: the model has no trees")
    base = (_base_margin(booster, learner_json, n_features, K) if base_margin is None
            else np.broadcast_to(np.asarray(base_margin, np.float32), (K,)))
    names = list(d.get("feature_names") or []) or None
    fc = resolve_costs(feature_costs, n_features, names, by_position=by_position)
    meta = {"library": "xgboost", "objective": objective, "n_trees": len(trees),
            "exact": "margins equal booster.predict(output_margin=True) bit for bit"}
    rule = ({"category_rule": "truncate_nonnegative"} if any("category_sets" in t for t in trees)
            else {})
    return bank_model(trees, fc, task, base_score=base.astype(np.float64), source="xgboost", info=meta,
                      **rule)
