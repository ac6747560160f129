"""XGBoost's JSON / UBJSON model, checked before XGBoost loads it.

XGBoost's model document declares its tree count (``num_trees``, one
``tree_info`` entry per tree, ``iteration_indptr`` per round), each tree's
size (``tree_param.num_nodes``, the length of every node array), the
number of features and, for categorical splits, which nodes hold a
category set and how long each set is (``_categories``).  A file cut
short, or an array with a number removed, breaks one of these declarations; ``check_document`` checks them all and
raises one ``ValueError`` naming the tree and the field, so a damaged file
never reaches XGBoost's loader (which can take it as another model) and
never ends in a bare ``KeyError``/``IndexError``.
"""
from __future__ import annotations

import json

import numpy as np

from . import _ubjson

MAX_TREES = 1 << 24
MAX_NODES = 1 << 30
MAX_CATEGORY = 1 << 24            # XGBoost's InvalidCat: a category is in [0, 2**24)
# one entry per node; split_type and the statistics are checked when present
_NODE_ARRAYS = ("left_children", "right_children", "parents", "split_indices", "split_conditions",
                "default_left")
_NODE_MORE = ("loss_changes", "sum_hessian")         # split_type: _categories
_CATEGORIES = ("categories", "categories_nodes", "categories_segments", "categories_sizes")


def _fail(msg):
    raise ValueError(f"XGBoost model: {msg}; the file is damaged or cut short")


def _get(d, key, where, kind=dict):
    if not isinstance(d, dict) or key not in d:
        _fail(f"{where} has no {key!r}")
    v = d[key]
    if kind is not None and not isinstance(v, kind):
        _fail(f"{where}.{key} is a {type(v).__name__}, expected a {kind.__name__}")
    return v


def _int(v, field, low=0, high=MAX_NODES):
    """XGBoost writes its parameters as strings ("31")."""
    try:
        out = int(v)
    except (TypeError, ValueError):
        _fail(f"{field}={v!r} is not an integer")
    if not low <= out <= high:
        _fail(f"{field}={out} is out of range [{low}, {high}]")
    return out


def _seq(d, key, where, n=None, n_says=""):
    v = _get(d, key, where, None)
    if not isinstance(v, (list, np.ndarray)):
        _fail(f"{where}.{key} is not an array")
    if n is not None and len(v) != n:
        _fail(f"{where}: {key} has {len(v)} entries, {n_says} needs {n}")
    try:
        return np.asarray(v, np.float64)
    except (TypeError, ValueError):
        _fail(f"{where}.{key} holds something that is not a number")


def decode(raw: bytes) -> dict:
    """The model document of a ``.json`` or ``.ubj`` file's bytes."""
    head = bytes(raw[:64]).lstrip()
    is_json = head[:1] == b"{" and head[1:].lstrip()[:1] in (b'"', b"}")
    try:
        doc = json.loads(bytes(raw)) if is_json else _ubjson.loads(raw)
    except (ValueError, UnicodeDecodeError, RecursionError) as e:
        _fail(f"not readable as {'JSON' if is_json else 'UBJSON'} ({str(e)[:120]})")
    if not isinstance(doc, dict):
        _fail("the document is not an object")
    return doc


def _show(a, n=8):
    """The first ``n`` numbers of an array, integers printed as such."""
    shown = [str(int(v)) if np.isfinite(v) and v == int(v) else repr(float(v)) for v in np.asarray(a)[:n]]
    return "[" + ", ".join(shown) + (", ...]" if len(a) > n else "]")


def _categories(t, w, n):
    """The categorical splits as XGBoost writes them (``RegTree::
    SaveCategoricalSplit``): ``categories_nodes`` lists the nodes whose
    ``split_type`` is 1, in order; node k's categories are
    ``categories[categories_segments[k]:][:categories_sizes[k]]``, at least
    one, increasing, each in [0, 2**24) (XGBoost's valid categories); the
    segments follow one another and cover ``categories``.  XGBoost reads
    the four arrays only when ``split_type`` is present; without it a
    non-empty one means a line was lost."""
    have = [k for k in _CATEGORIES if k in t]
    if have and len(have) != len(_CATEGORIES):
        _fail(f"{w} has no {sorted(set(_CATEGORIES) - set(have))[0]!r}")
    if "split_type" not in t:
        for k in have:
            if len(_seq(t, k, w)):
                _fail(f"{w} has {k} but no 'split_type'")
        return
    st = _seq(t, "split_type", w, n, f"tree_param.num_nodes={n}")
    if ((st != 0) & (st != 1)).any():
        _fail(f"{w}: split_type holds a value other than 0 (numeric) or 1 (categorical)")
    if not have:
        if (st == 1).any():
            _fail(f"{w} has categorical nodes (split_type) but no 'categories'")
        return
    want = np.flatnonzero(st == 1)
    nodes = _seq(t, "categories_nodes", w)
    if not np.array_equal(nodes, want):
        _fail(f"{w}: categories_nodes {_show(nodes)} are not the nodes whose split_type is 1 "
              f"{_show(want)}")
    says = f"categories_nodes ({want.size} nodes)"
    seg = _seq(t, "categories_segments", w, want.size, says)
    size = _seq(t, "categories_sizes", w, want.size, says)
    cats = _seq(t, "categories", w)
    if (size < 1).any() or (size != np.floor(size)).any():
        _fail(f"{w}: categories_sizes holds a size below 1")
    ends = np.cumsum(size)
    if not np.array_equal(seg, ends - size):
        _fail(f"{w}: categories_segments {_show(seg)} do not follow categories_sizes {_show(size)}")
    if want.size and ends[-1] != cats.size or not want.size and cats.size:
        _fail(f"{w}: categories has {cats.size} entries, categories_sizes add up to "
              f"{int(ends[-1]) if want.size else 0}")
    if ((cats < 0) | (cats >= MAX_CATEGORY) | (cats != np.floor(cats))).any():
        _fail(f"{w}: categories holds a value that is not a category (an integer in [0, {MAX_CATEGORY}))")
    step = np.diff(cats)
    step[(ends[:-1] - 1).astype(np.int64)] = 1      # a new node starts: no order across nodes
    if (step <= 0).any():
        _fail(f"{w}: categories of a node are not increasing")


def _tree(t, i, F, leaf_width):
    w = f"tree {i}"
    if not isinstance(t, dict):
        _fail(f"{w} is not an object")
    if _int(_get(t, "id", w, None), f"{w}.id", 0, MAX_TREES) != i:
        _fail(f"{w} has id {t['id']}, expected {i}")
    param = _get(t, "tree_param", w)
    n = _int(_get(param, "num_nodes", f"{w}.tree_param", None), f"{w}.tree_param.num_nodes", 1)
    tf = _int(_get(param, "num_feature", f"{w}.tree_param", None), f"{w}.tree_param.num_feature", 0, 1 << 31)
    if tf != F:
        _fail(f"{w}: tree_param.num_feature={param['num_feature']}, the model's num_feature is {F}")
    says = f"tree_param.num_nodes={n}"
    a = {k: _seq(t, k, w, n, says) for k in _NODE_ARRAYS}
    for k in _NODE_MORE:
        if k in t:
            _seq(t, k, w, n, says)
    _categories(t, w, n)
    if "base_weights" in t:
        _seq(t, "base_weights", w, n * leaf_width, f"{says} x size_leaf_vector")
    left, right = a["left_children"], a["right_children"]
    internal = left >= 0
    if ((left < -1) | (left >= n) | (right < -1) | (right >= n) | ((right >= 0) != internal)).any():
        _fail(f"{w}: left_children/right_children hold an index outside 0..{n - 1}")
    kids = np.concatenate([left[internal], right[internal]]).astype(np.int64)
    if kids.size != n - 1 or (np.bincount(kids, minlength=n)[1:] != 1).any() or (kids == 0).any():
        _fail(f"{w}: left_children/right_children do not form a tree")
    par = a["parents"].astype(np.int64)
    parent_of = np.flatnonzero(internal)
    if not (np.array_equal(par[left[internal].astype(np.int64)], parent_of)
            and np.array_equal(par[right[internal].astype(np.int64)], parent_of)):
        _fail(f"{w}: parents disagree with left_children/right_children")
    feat = a["split_indices"][internal]
    if ((feat < 0) | (feat >= F)).any():
        _fail(f"{w}: split_indices hold a feature outside 0..{F - 1}")


def check_document(doc: dict) -> None:
    """Refuse a damaged XGBoost model document (see the module docstring)."""
    version = _get(doc, "version", "the document", None)
    if not isinstance(version, (list, np.ndarray)) or len(version) != 3:
        _fail(f"version {version!r} is not [major, minor, patch]")
    learner = _get(doc, "learner", "the document")
    param = _get(learner, "learner_model_param", "learner")
    _get(_get(learner, "objective", "learner"), "name", "learner.objective", str)
    F = _int(_get(param, "num_feature", "learner_model_param", None), "num_feature", 0, 1 << 31)
    n_class = _int(param.get("num_class", "0"), "num_class", 0, 1 << 16)
    K = max(n_class, 1)
    base = str(_get(param, "base_score", "learner_model_param", None)).strip("[]").split(",")
    if len(base) not in (1, K):
        _fail(f"learner_model_param.base_score has {len(base)} values, num_class={n_class} needs {K}")
    for k in ("feature_names", "feature_types"):
        v = learner.get(k, [])
        if len(v) not in (0, F):
            _fail(f"learner.{k} has {len(v)} entries, num_feature={F} needs {F} (or none)")
    gb = _get(learner, "gradient_booster", "learner")
    if _get(gb, "name", "gradient_booster", str) != "gbtree":
        return                                      # dart, gblinear: refused by the importer
    model = _get(gb, "model", "gradient_booster")
    gp = _get(model, "gbtree_model_param", "model")
    T = _int(_get(gp, "num_trees", "gbtree_model_param", None), "gbtree_model_param.num_trees", 0, MAX_TREES)
    P = _int(gp.get("num_parallel_tree", "1"), "gbtree_model_param.num_parallel_tree", 1, MAX_TREES)
    trees = _get(model, "trees", "model", (list,))
    if len(trees) != T:
        _fail(f"the model has {len(trees)} trees, gbtree_model_param.num_trees declares {T}")
    info = _seq(model, "tree_info", "model", T, f"num_trees={T}")
    if ((info < 0) | (info >= K)).any():
        _fail(f"tree_info holds a class outside 0..{K - 1}")
    if "iteration_indptr" in model:
        ptr = _seq(model, "iteration_indptr", "model")
        if ptr.size < 1 or ptr[0] != 0 or ptr[-1] != T or (np.diff(ptr) != K * P).any():
            _fail(f"iteration_indptr {ptr.tolist()[:8]} does not split {T} trees into rounds of "
                  f"num_class x num_parallel_tree = {K * P}")
    width = 1
    for i, t in enumerate(trees):
        if isinstance(t, dict) and isinstance(t.get("tree_param"), dict):
            width = _int(t["tree_param"].get("size_leaf_vector", "1"), f"tree {i}.size_leaf_vector", 0,
                         1 << 16) or 1
        _tree(t, i, F, width)
