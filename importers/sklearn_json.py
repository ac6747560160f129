"""sklearn-json: a pickle-free file of a fitted scikit-learn tree model.

scikit-learn saves estimators only with pickle, which runs code when it
loads, so ``skinflint import`` never reads a pickle.  ``to_json(est, path)``
(Python, with scikit-learn) writes what the importer needs of a tree-family
estimator (decision tree, random forest, extra trees, gradient boosting,
histogram gradient boosting) as plain JSON; ``from_sklearn_json(path,
costs)`` (no scikit-learn needed) reads it back into the same model
``from_sklearn`` makes, and the command line takes it with ``skinflint
import FILE --from sklearn-json``.  Linear models and kernel machines have
no sklearn-json: import them with ``from_sklearn`` and save the IR.

The format (version 1; version 2 when a tree has categorical splits), one
JSON object::

    {"format": "skinflint-sklearn-json", "version": 1 | 2,
     "estimator": "RandomForestClassifier", "n_features": F,
     "feature_names": [...] or null,
     "task": {"kind": "regression" | "binary" | "multiclass", "n_outputs": K,
              "classes": [...], "transform": "identity" | "logistic" | "softmax"},
     "base_score": [K doubles], "divisor": d, "n_trees": T,
     "category_inputs": {feature: "values" or [categories]} (version 2: what
                        each categorical column carries, kept as metadata),
     "trees": [{"feature": [M ints, -1 at leaves],
                "threshold": [M doubles: go left when double(x) <= threshold;
                              "inf" / "-inf" where scikit-learn's is infinite],
                "left": [M], "right": [M] (-1 at leaves),
                "missing_left": [M bools: where NaN goes],
                "value": [M * K doubles, row-major],
                version 2, trees with categorical splits only:
                "category_sets": [M entries: null, or the uint32 words (LSB
                                  first) of the node's LEFT set of fed values],
                "other_left": [M bools: where a value outside the rule goes]},
               ...]}

A categorical node (histogram gradient boosting with
``categorical_features``) has threshold 0 and follows the IR's "integer"
rule: NaN goes by ``missing_left``; a fed value x that is an integer >= 0
below 32 times the set's words goes left iff it is in the set; any other
value by ``other_left``.  The sets are over the values the user feeds (the
model's OrdinalEncoder already composed in, ``from_sklearn``'s
``category_codes`` too), and ``feature`` indexes the user's columns.

``n_trees`` (optional, checked when present; ``to_json`` writes it) is the
length of ``trees``, so a file that lost a tree is refused instead of read
as a smaller ensemble.  Trees are in scikit-learn's summation order; the
margin is ``(base_score + v_0 + v_1 + ...) / divisor`` in double.  Doubles are written with Python's
shortest round-trip repr, so they read back bit for bit.
"""
from __future__ import annotations

import json
import os

import numpy as np

from ..ir import builders
from ..ir.arrays import bool_array, float64_array, int_array, scalar_float, scalar_int, uint32_array
from ..ir.codes import MAX_CATEGORY_WORDS
from ..ir.errors import IRError
from ..ir.json_io import parse_json, read_limited
from ..ir.model import Task, validate_task
from ._common import cost_argument, resolve_costs
from .sklearn import category_inputs, raw_trees, tree_dict, tree_model

FORMAT = "skinflint-sklearn-json"
VERSION = 1
CATEGORY_VERSION = 2           # written only when a tree has categorical splits
MAX_TREES = 1 << 20


def _py(v):
    return v.item() if isinstance(v, np.generic) else v


def _thresholds_out(t):
    """Doubles, infinite ones as "inf" / "-inf" (scikit-learn sends a NaN-only
    side with an infinite threshold; JSON has no infinity)."""
    if np.isnan(t).any():
        raise ValueError("a NaN threshold cannot be written")
    return [v if np.isfinite(v) else ("inf" if v > 0 else "-inf") for v in t.tolist()]


def _thresholds_in(value, field, M):
    """Thresholds back: numbers (finite) or the strings "inf" / "-inf"."""
    if not isinstance(value, list):
        raise IRError(f"{field}: expected a list, got {type(value).__name__}")
    inf = {"inf": np.inf, "-inf": -np.inf}
    is_inf = [isinstance(v, str) and v in inf for v in value]
    out = np.array(float64_array([0.0 if b else v for v, b in zip(value, is_inf, strict=True)], field, length=M))
    for i in np.flatnonzero(is_inf):
        out[i] = inf[value[i]]
    return out


def _tree_out(t):
    out = {"feature": t["feature"].tolist(), "threshold": _thresholds_out(t["threshold"]),
           "left": t["left"].tolist(), "right": t["right"].tolist(),
           "missing_left": t["missing_left"].tolist(), "value": t["value"].ravel().tolist()}
    if t.get("category_sets") is not None:
        out["category_sets"] = [None if c is None else np.asarray(c, np.uint32).tolist()
                                for c in t["category_sets"]]
        out["other_left"] = np.asarray(t["other_left"], bool).tolist()
    return out


def to_dict(est, category_codes=None) -> dict:
    """The sklearn-json object of a fitted tree-family estimator
    (``category_codes``: ``from_sklearn``'s)."""
    from sklearn.utils.validation import check_is_fitted
    check_is_fitted(est)
    got = raw_trees(est, category_codes)
    if got is None:
        raise ValueError(f"sklearn-json holds tree models (decision trees, forests, (hist) gradient "
                         f"boosting), not {type(est).__name__}; import it in Python with "
                         "skinflint.importers.from_sklearn and save the model with skinflint.ir.save")
    trees, base, task, divisor = got
    names = [str(n) for n in getattr(est, "feature_names_in_", [])] or None
    categorical = any(t.get("category_sets") is not None for t in trees)
    extra = {"category_inputs": category_inputs(est, category_codes)} if categorical else {}
    return {"format": FORMAT, "version": CATEGORY_VERSION if categorical else VERSION, **extra,
            "estimator": type(est).__name__,
            "n_features": int(est.n_features_in_), "feature_names": names,
            "task": {"kind": task.kind, "n_outputs": task.n_outputs,
                     "classes": [_py(c) for c in task.classes], "transform": task.transform},
            "base_score": np.asarray(base, np.float64).tolist(), "divisor": float(divisor),
            "n_trees": len(trees),
            "trees": [_tree_out(t) for t in trees]}


def to_json(est, path=None, *, category_codes=None) -> str:
    """sklearn-json text of ``est``; written to ``path`` too when given
    (``category_codes``: ``from_sklearn``'s)."""
    text = json.dumps(to_dict(est, category_codes), allow_nan=False)
    if path is not None:
        with open(path, "w", encoding="utf-8") as fh:
            fh.write(text)
    return text


def _read(source):
    if isinstance(source, dict):
        return source
    if isinstance(source, (str, os.PathLike)) and not str(source).lstrip().startswith("{"):
        if not os.path.exists(source):
            raise FileNotFoundError(f"{os.fspath(source)}: no such sklearn-json file")
        source = read_limited(source)
    return parse_json(source, "sklearn-json")


def _field(d, key, where):
    if not isinstance(d, dict):
        raise IRError(f"{where}: expected an object")
    if key not in d:
        raise IRError(f"{where}.{key}: missing" if where else f"{key}: missing")
    return d[key]


def from_sklearn_json(source, feature_costs=None, *, by_position=False, costs=None):
    """The model of an sklearn-json file (path, JSON text or dict): the same
    as ``from_sklearn`` of the estimator it was written from.  A malformed
    file raises ``IRError`` naming the field.  ``feature_costs``,
    ``by_position`` and the deprecated ``costs`` are ``from_sklearn``'s."""
    feature_costs = cost_argument(feature_costs, costs, "from_sklearn_json")
    d = _read(source)
    if not isinstance(d, dict) or d.get("format") != FORMAT:
        raise IRError(f"format: expected {FORMAT!r}; write the file with "
                      "skinflint.importers.sklearn_json.to_json(estimator, path)")
    version = d.get("version")
    if version not in (VERSION, CATEGORY_VERSION) or isinstance(version, bool):
        raise IRError(f"version: unknown version {version!r}; this skinflint reads versions "
                      f"{VERSION} and {CATEGORY_VERSION}")
    F = scalar_int(_field(d, "n_features", ""), "n_features", low=1, high=1 << 24)
    names = d.get("feature_names")
    if names is not None and (not isinstance(names, list) or len(names) != F
                              or not all(isinstance(n, str) for n in names)):
        raise IRError(f"feature_names: expected null or {F} strings")
    t = _field(d, "task", "")
    kind, K = _field(t, "kind", "task"), scalar_int(_field(t, "n_outputs", "task"), "task.n_outputs",
                                                    low=1, high=1 << 16)
    classes, transform = t.get("classes", []), t.get("transform", "identity")
    if not isinstance(classes, list) or not all(
            isinstance(c, (str, int, float)) and not isinstance(c, bool) for c in classes):
        raise IRError("task.classes: expected a list of numbers or strings")
    if kind not in ("regression", "binary", "multiclass"):
        raise IRError(f"task.kind: unknown kind {kind!r}; expected regression, binary or multiclass")
    if kind != "regression" and len(classes) < 2:
        raise IRError(f"task.classes: {len(classes)} class(es); an estimator fitted on one class "
                      "cannot be imported (a classifier needs 2 or more)")
    # the IR's own task checks, each naming its field (task.transform of a
    # regression is identity, a regression has no classes, ...)
    task = Task(kind, K, tuple(classes), transform)
    validate_task(task)
    base = float64_array(_field(d, "base_score", ""), "base_score", length=K)
    divisor = scalar_float(d.get("divisor", 1.0), "divisor")
    if not divisor > 0:
        raise IRError(f"divisor: {divisor!r} must be > 0")
    trees = _field(d, "trees", "")
    if not isinstance(trees, list) or not trees or len(trees) > MAX_TREES:
        raise IRError(f"trees: expected a list of 1 to {MAX_TREES} trees")
    if "n_trees" in d and scalar_int(d["n_trees"], "n_trees", low=1, high=MAX_TREES) != len(trees):
        raise IRError(f"trees: {len(trees)} trees, n_trees declares {d['n_trees']}; the file is damaged")
    raw = []
    for i, tr in enumerate(trees):
        w = f"trees[{i}]"
        feature = int_array(_field(tr, "feature", w), f"{w}.feature", low=-1, high=F)
        M = feature.shape[0]
        raw.append({"feature": feature.astype(np.int64),
                    "threshold": _thresholds_in(_field(tr, "threshold", w), f"{w}.threshold", M),
                    "left": int_array(_field(tr, "left", w), f"{w}.left", length=M, low=-1, high=M).astype(np.int64),
                    "right": int_array(_field(tr, "right", w), f"{w}.right", length=M, low=-1, high=M).astype(np.int64),
                    "missing_left": bool_array(_field(tr, "missing_left", w), f"{w}.missing_left", length=M),
                    "value": float64_array(_field(tr, "value", w), f"{w}.value", length=M * K).reshape(M, K),
                    **_categories_in(tr, w, M, version)})
    if version == CATEGORY_VERSION and not any("category_sets" in r for r in raw):
        raise IRError(f"version: {CATEGORY_VERSION} is written for trees with categorical splits, "
                      "and no tree has category_sets; the file is damaged")
    fc = resolve_costs(feature_costs, F, names, by_position=by_position)
    info = {"library": "sklearn", "estimator": str(d.get("estimator", "")), "via": "sklearn-json"}
    if any("category_sets" in r for r in raw):
        info["category_inputs"] = _category_inputs_in(d.get("category_inputs", {}))
    local = [tree_dict(r) for r in raw]
    try:
        return tree_model(local, fc, task, base, divisor, info)
    except IRError:
        _blame_one_tree(local, K)
        raise


def _category_inputs_in(value):
    """``category_inputs`` (metadata: what each categorical column carries)."""
    if not isinstance(value, dict) or not all(
            isinstance(k, str) and (v == "values" or (isinstance(v, list) and all(
                isinstance(c, (str, int, float)) and not isinstance(c, bool) for c in v)))
            for k, v in value.items()):
        raise IRError('category_inputs: expected an object of feature -> "values" or a list of categories')
    return value


def _categories_in(tr, w, M, version):
    """A tree's category_sets / other_left (version 2), checked."""
    if "category_sets" not in tr and "other_left" not in tr:
        return {}
    if version != CATEGORY_VERSION:
        raise IRError(f"{w}.category_sets: categorical splits need version {CATEGORY_VERSION}, "
                      f"the file says {version}")
    sets = _field(tr, "category_sets", w)
    if not isinstance(sets, list) or len(sets) != M:
        raise IRError(f"{w}.category_sets: expected a list of {M} entries (null or a list of words)")
    out = []
    for m, c in enumerate(sets):
        if c is None:
            out.append(None)
        elif isinstance(c, list) and 1 <= len(c) <= MAX_CATEGORY_WORDS:
            out.append(np.array(uint32_array(c, f"{w}.category_sets[{m}]")))
        else:
            raise IRError(f"{w}.category_sets[{m}]: expected null or a list of 1 to "
                          f"{MAX_CATEGORY_WORDS} uint32 words")
    return {"category_sets": out,
            "other_left": bool_array(_field(tr, "other_left", w), f"{w}.other_left", length=M)}


def _blame_one_tree(local, K):
    """The merged bank was refused: check each tree alone so the error
    names ``trees[i]`` and the tree's own node index (the merged bank's
    indices are global); nothing when no tree fails alone."""
    for i, t in enumerate(local):
        cats = (None if t.get("category_sets") is None else
                builders.category_splits(t["category_sets"], t["other_left"], rule="integer"))
        builders.trees_from_arrays(t["feature"], t["threshold"], t["left"], t["right"],
                                   t["value"].reshape(-1, K), missing_left=t["missing_left"],
                                   name=f"trees[{i}]", precision="float64", categories=cats)
