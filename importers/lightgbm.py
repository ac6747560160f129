"""LightGBM boosters as skinflint IR.

The importer reads LightGBM's text model (``Booster.model_to_string()`` or a
model file), whose thresholds and leaf values are printed with 17 digits, so
they parse to LightGBM's own doubles exactly; the text is checked against
every declaration it makes (``_lightgbm_text``), so a damaged file is
refused naming the tree and field.  Conversion, per feature of the model:

* ``double(x) <= t`` becomes the float32 test ``x <= t32`` with ``t32`` the
  largest float32 <= t (``thresholds.le_threshold``): every float32 row
  reaches the same leaf as in LightGBM, in every tree;
* LightGBM's predictor drops every input with |x| <= kZeroThreshold
  (1e-35f) from the row it builds, so such an x reads as 0.0 in every
  split: a threshold t inside that band becomes the float32 test ``x <=
  1e-35f`` when 0 <= t (the band goes left with 0) and ``x < -1e-35f``
  otherwise (``_zero_band_threshold``);
* ``missing_type``: ``NaN`` sends NaN to the default child; ``None`` treats
  NaN as 0.0 (so NaN goes where 0 goes); ``Zero`` (``zero_as_missing``)
  sends NaN and every x in LightGBM's zero band [-1e-35, 1e-35] to the
  default child: one float32 test when the band already lies on the
  default side of the threshold, else three (below the band, in it, above
  it) with the children copied (``_zero_band_tree``);
* multiclass (``num_tree_per_iteration`` = K): tree i belongs to class
  i mod K, a K-output bank with -0.0 (the exact additive identity) in the
  other columns;
* random-forest mode (``average_output``): LightGBM's ``predict`` divides
  the sum by the number of iterations before its transform (the bank's
  ``divisor``); ``predict(raw_score=True)`` returns the undivided sum, so
  here the margin is that raw score / iterations, bit for bit;
* categorical splits (``categorical_feature``; decision_type bit 0):
  LightGBM 4 (``Tree::CategoricalDecision``) sends NaN right, casts any
  other x to a C int, sends a negative int right, and sends c left iff bit
  c of the node's bitset (``cat_threshold`` from ``cat_boundaries[k]``,
  k the node's ``threshold``) is set, a c past the bitset's words going
  right.  The IR's category split with rule ``"truncate"`` (x > -1 is code
  trunc(x)), the bitset as the node's left set, NaN and every other value
  right (``missing_left`` and ``other_left`` False), is the same on every
  float32 x: x <= -1 truncates to a negative int; an x in [2**31, inf] (the
  cast is undefined; x86 gives INT_MIN, negative) and every code past the
  words lie at or past the set's 32 * words codes;
* refused with an error naming them: linear trees
  (``linear_tree``), objectives whose transform the IR lacks (unless
  ``raw_margin=True``).

Leaf values and sums: LightGBM starts each output at 0.0 and adds its
double leaf values in double, tree by tree (``GBDT::PredictRaw``).  The
model is one float64 ``trees`` node (format version 2; 4 with categorical
splits) that does the same additions in the same order, so on float32
rows its margin is bit for bit
``predict(raw_score=True)`` (docs/importers.md).  ``init_score`` is not
stored in a LightGBM model and ``predict(raw_score=True)`` does not add it;
pass ``init_score=`` to put a constant one in front of the trees' sum.
"""
from __future__ import annotations

import os

import numpy as np

from ..ir import builders
from ..ir.json_io import MAX_FILE_BYTES
from ._common import bank_model, cost_argument, cost_parameters_doc, one_hot_values, resolve_costs
from ._lightgbm_text import parse_model_text
from .thresholds import clamp_infinite, le_threshold, le_zero_region

K_ZERO_THRESHOLD = 1e-35          # LightGBM's kZeroThreshold (a float constant)
_REGRESSION = ("regression", "regression_l2", "regression_l1", "huber", "fair", "quantile", "mape",
               "lambdarank", "rank_xendcg")
_MISSING = {0: "None", 1: "Zero", 2: "NaN"}


def _model_text(model, num_iteration):
    """The model's text and the iterations still to cut from it: a file is
    read here, not by LightGBM, whose loader takes a file cut short between
    two trees as a smaller model."""
    if hasattr(model, "booster_"):
        model = model.booster_
    if isinstance(model, (str, os.PathLike)):
        if isinstance(model, str) and model.lstrip().startswith("tree\n"):
            return model.lstrip(), num_iteration
        if not os.path.exists(model):
            raise FileNotFoundError(f"{os.fspath(model)}: no such LightGBM model file")
        with open(model, "rb") as fh:
            raw = fh.read(MAX_FILE_BYTES + 1)
        if len(raw) > MAX_FILE_BYTES:
            raise ValueError(f"{os.fspath(model)}: larger than {MAX_FILE_BYTES} bytes; not read")
        return raw.decode("utf-8", errors="replace"), num_iteration
    import lightgbm as lgb
    if isinstance(model, lgb.Booster):
        return model.model_to_string(num_iteration=num_iteration), None
    raise TypeError(f"from_lightgbm: expected a LightGBM Booster, LGBMModel, model file or model "
                    f"string, got {type(model).__name__}")


def _tree(t, i, n_class, klass, feature_names):
    """One LightGBM tree as local arrays: internal nodes, then leaves."""
    if t.get("is_linear", "0") != "0":
        raise ValueError("LightGBM linear trees (linear_tree=True) are not supported by the importer; "
                         "retrain with linear_tree=False")
    n_leaves = int(t["num_leaves"])
    leaf_value = t["leaf_value"]
    if n_leaves == 1:
        val = leaf_value[:1]
        return {"feature": [-1], "threshold": [0.0], "left": [-1], "right": [-1],
                "value": one_hot_values(val, klass, n_class) if n_class > 1 else val,
                "missing_left": [True]}
    feat, t64 = t["split_feature"], t["threshold"]
    thr = _zero_band_threshold(t64, clamp_infinite(le_threshold(t64)))
    dt, lc, rc = t["decision_type"], t["left_child"], t["right_child"]
    n_int = n_leaves - 1
    default_left = (dt & 2) != 0
    missing = (dt >> 2) & 3
    missing_left = np.where(missing == 0, np.float32(0) <= thr, default_left)
    sets = _category_sets(t, i)                      # None, or per internal node None / left set
    if sets is not None:                             # NaN and non-codes go right; threshold 0.0
        cat = np.array([s is not None for s in sets])
        thr = np.where(cat, np.float32(0), thr)
        missing_left = missing_left & ~cat
    zero = [m for m in np.flatnonzero(missing == 1)
            if not le_zero_region(thr[m], bool(default_left[m]), K_ZERO_THRESHOLD)
            and (sets is None or sets[m] is None)]
    if zero:
        node_v = _zero_band_tree(feat, thr, lc, rc, default_left, missing_left, leaf_value, set(zero), i,
                                 sets)
        return {**node_v, "value": (one_hot_values(node_v["value"], klass, n_class) if n_class > 1
                                    else node_v["value"])}
    child = lambda c: np.where(c >= 0, c, n_int + ~c)  # noqa: E731  (leaf ~j sits at n_int + j)
    val = np.concatenate([np.zeros(n_int), leaf_value])
    out = {"feature": np.concatenate([feat, np.full(n_leaves, -1)]),
           "threshold": np.concatenate([thr, np.zeros(n_leaves, np.float32)]),
           "left": np.concatenate([child(lc), np.full(n_leaves, -1)]),
           "right": np.concatenate([child(rc), np.full(n_leaves, -1)]),
           "value": one_hot_values(val, klass, n_class) if n_class > 1 else val,
           "missing_left": np.concatenate([missing_left, np.ones(n_leaves, bool)])}
    if sets is not None:
        out["category_sets"] = list(sets) + [None] * n_leaves
    return out


def _category_sets(t, i):
    """Per internal node of a tree with categorical splits: None (numeric)
    or the uint32 words of its bitset, the categories LightGBM sends left
    (an empty bitset, which sends every x right, as one zero word); None
    for a tree without categorical splits.  ``_lightgbm_text`` has checked
    that each categorical node's threshold indexes one set."""
    if int(t["num_cat"]) == 0:
        return None
    from ..ir.codes import MAX_CATEGORY_WORDS
    cb, words = t["cat_boundaries"], t["cat_threshold"].astype(np.uint32)
    sets = [None] * len(t["decision_type"])
    for m in np.flatnonzero(t["decision_type"] & 1):
        k = int(t["threshold"][m])
        w = words[cb[k]:cb[k + 1]]
        if len(w) > MAX_CATEGORY_WORDS:
            raise ValueError(f"LightGBM categorical split at node {m} of tree {i} tests categories up to "
                             f"{32 * len(w) - 1}, past the {32 * MAX_CATEGORY_WORDS} the IR holds; "
                             "renumber the categories from 0")
        sets[m] = w if len(w) else np.zeros(1, np.uint32)
    return sets


def _zero_band_threshold(t64, thr):
    """Float32 thresholds that also send LightGBM's zero band |x| <= 1e-35f
    where 0.0 goes: LightGBM reads such an x as 0.0 (it leaves it out of
    the row), so a split whose double threshold t lies in [-z, z) sends the
    whole band left when 0 <= t (test ``x <= z``) and right otherwise (test
    ``x < -z``).  Outside that range the band already falls on 0's side."""
    z = np.float32(K_ZERO_THRESHOLD)               # the float kZeroThreshold is
    band = (t64 >= -float(z)) & (t64 < float(z))
    if not band.any():
        return thr
    thr = thr.copy()
    thr[band & (t64 >= 0)] = z
    thr[band & (t64 < 0)] = np.nextafter(-z, np.float32(-np.inf))
    return thr


MAX_ZERO_BAND_NODES = 1 << 20


def _zero_band_tree(feat, thr, lc, rc, default_left, missing_left, leaf_value, zero, i, sets=None):
    """A tree with ``missing_type=Zero`` splits whose zero band [-z, z]
    straddles the threshold, as float32 tests: such a split on feature f
    becomes ``x < -z`` (left: ``x <= t`` to L or R), else ``x <= z`` (left,
    and NaN: the default child; right: ``x <= t`` to L or R).  The children
    are copied where they are reached twice (the IR's trees are trees), so
    the tree grows; a tree past MAX_ZERO_BAND_NODES nodes is refused.
    ``sets``: the tree's category sets (``_category_sets``), copied along."""
    z = np.float32(K_ZERO_THRESHOLD)
    out = {k: [] for k in ("feature", "threshold", "left", "right", "missing_left", "value")}
    cats = []

    def new(f, t, ml, v=0.0, s=None):
        if len(out["feature"]) >= MAX_ZERO_BAND_NODES:
            raise ValueError(f"LightGBM zero_as_missing splits in tree {i} need more than "
                             f"{MAX_ZERO_BAND_NODES} float32 tests; retrain with zero_as_missing=False")
        for k, x in zip(out, (f, t, -1, -1, ml, v), strict=True):
            out[k].append(x)
        cats.append(s)
        return len(out["feature"]) - 1

    def link(n, a, b):
        out["left"][n], out["right"][n] = a, b
        return n

    def emit(c):                                    # c: LightGBM child code (>= 0 node, < 0 leaf)
        if c < 0:
            return new(-1, np.float32(0), True, float(leaf_value[~c]))
        f, t = int(feat[c]), thr[c]
        if c not in zero:
            n = new(f, t, bool(missing_left[c]), s=None if sets is None else sets[c])
            return link(n, emit(lc[c]), emit(rc[c]))
        plain = lambda: link(new(f, t, True), emit(lc[c]), emit(rc[c]))  # noqa: E731  (NaN never reaches it)
        a = new(f, np.nextafter(-z, np.float32(-np.inf)), False)   # below the band; NaN goes on to b
        b = new(f, z, True)                         # the band and NaN: the default child
        link(b, emit(lc[c] if default_left[c] else rc[c]), plain())
        return link(a, plain(), b)

    emit(0)
    res = {k: np.asarray(v) for k, v in out.items()}
    if sets is not None:
        res["category_sets"] = cats
    return res


def _task(objective, n_class, classes, raw_margin):
    name, *args = objective.split()
    opts = dict(a.split(":", 1) for a in args if ":" in a)
    if name in ("binary", "cross_entropy", "xentropy") and n_class == 1:
        cl = classes if classes is not None else (0, 1)
        if float(opts.get("sigmoid", "1")) != 1.0:
            # labels still come from margin > 0; LightGBM's probability is
            # logistic(sigmoid * margin), which the IR's transform is not
            return builders.binary_task(cl, transform="identity")
        return builders.binary_task(cl)
    if name in ("multiclass", "softmax", "multiclassova", "ovr", "multiclass_ova"):
        cl = classes if classes is not None else tuple(range(n_class))
        return builders.multiclass_task(cl, transform="softmax" if name in ("multiclass", "softmax")
                                        else "identity")
    if name in _REGRESSION or raw_margin:
        return builders.regression_task(n_class)
    raise ValueError(f"LightGBM objective {name!r} transforms the raw score in a way the IR has no "
                     "equal for; pass raw_margin=True to import the raw score (raw_score=True) as "
                     "a regression")


@cost_parameters_doc("the source model's feature names")
def from_lightgbm(model, feature_costs=None, *, classes=None, raw_margin=False, num_iteration=None,
                  init_score=None, by_position=False, costs=None):
    """Import a LightGBM model as an IR model.

    Parameters
    ----------
    model : lightgbm.Booster, LGBMModel, model file path or model string
    {cost_parameters}
    classes : sequence, optional
        Class labels (default: the sklearn wrapper's ``classes_`` or 0..K-1).
    raw_margin : bool, default False
        Import objectives whose transform the IR lacks (poisson, tweedie,
        gamma, ...) as a regression on the raw score.
    num_iteration : int, optional
        As LightGBM's: None keeps the best iteration if there is one.
    init_score : float or array [K], optional
        A constant added in front of the trees (LightGBM's ``predict``
        never adds a training ``init_score``).

    Returns
    -------
    ir.Model
        One float64 ``trees`` node.  Every float32 row reaches the same
        leaves as in LightGBM, and its margins are LightGBM's raw scores
        (``predict(raw_score=True)``) bit for bit; in random-forest mode
        (``boosting="rf"``) they are the raw score / iterations, bit for bit
        the value LightGBM's ``predict()`` transforms (``raw_score=True``
        returns the undivided sum there).
    """
    feature_costs = cost_argument(feature_costs, costs, "from_lightgbm")
    if classes is None and hasattr(model, "classes_"):
        classes = tuple(model.classes_)
    head, trees = parse_model_text(*_model_text(model, num_iteration))
    n_class = int(head.get("num_tree_per_iteration", head.get("num_class", "1")))
    n_features = int(head["max_feature_idx"]) + 1
    names = head.get("feature_names", "").split() or None
    task = _task(head.get("objective", "regression"), n_class, classes, raw_margin)
    K = task.n_outputs
    banks = [_tree(t, i, K, i % K, names) for i, t in enumerate(trees)]
    # LightGBM's sum starts at +0.0 (memset); a given init_score goes first
    base = np.zeros(K) if init_score is None else np.broadcast_to(np.asarray(init_score, np.float64), (K,))
    # random-forest mode: predict() divides each output by the iterations
    divisor = float(len(trees) // K) if "average_output" in head else 1.0
    # LightGBM names unnamed columns Column_0, Column_1, ...: no names to match
    named = names is not None and names != [f"Column_{i}" for i in range(n_features)]
    fc = resolve_costs(feature_costs, n_features, names if named else None, by_position=by_position)
    if not named and names is not None and not fc.named:
        fc = fc.renamed(names)
    exact = ("margins are predict(raw_score=True) / iterations bit for bit, what predict() transforms "
             "(random-forest mode, float64 bank)" if "average_output" in head
             else "margins are predict(raw_score=True) bit for bit (float64 bank)")
    meta = {"library": "lightgbm", "objective": head.get("objective", ""), "n_trees": len(trees),
            "exact": exact}
    # a bank with category splits reads codes as LightGBM does (C int cast)
    cat = {"category_rule": "truncate"} if any("category_sets" in b for b in banks) else {}
    return bank_model(banks, fc, task, base_score=base, source="lightgbm", info=meta,
                      precision="float64", divisor=divisor, **cat)
