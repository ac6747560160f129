"""LightGBM's text model, read strictly: a damaged file is refused.

LightGBM's header declares how many trees follow and the size of each one
in bytes (``tree_sizes``), and each tree declares its ``num_leaves``, which
fixes the length of every array in it.  A file cut short, a line removed
or a number removed from an array breaks one of these declarations, so
``parse_model_text`` checks all of them and raises one ``ValueError``
naming the tree and the field, never a bare ``KeyError``/``IndexError``
and never a model with fewer trees.  What a prediction does not read (the
``feature_importances`` and ``parameters`` sections, ``feature_infos``) is
not checked, except that ``parameters`` is compared with the header where a
removed header line would change the model (``objective``,
``average_output``).  A tree with categorical splits (``num_cat`` > 0)
declares its sets too: ``cat_boundaries`` has ``num_cat`` + 1 offsets from
0, never decreasing, ``cat_threshold`` as many uint32 words as the last
offset, and each categorical node's ``threshold`` is the index of its set.
"""
from __future__ import annotations

import re

import numpy as np

MAX_LEAVES = 1 << 24
MAX_TREES = 1 << 24
_REQUIRED_HEAD = ("version", "num_class", "num_tree_per_iteration", "max_feature_idx", "feature_names",
                  "tree_sizes")
# arrays of one entry per internal node / per leaf; the first of each group
# are what a prediction reads and must be there, the rest are checked when present
_INTERNAL = ("split_feature", "threshold", "decision_type", "left_child", "right_child")
_INTERNAL_MORE = ("split_gain", "internal_value", "internal_weight", "internal_count")
_LEAF = ("leaf_value",)
_LEAF_MORE = ("leaf_weight", "leaf_count")
_INT_FIELDS = ("split_feature", "decision_type", "left_child", "right_child")
# words of all category sets of one tree: LightGBM's codes are C ints, so a
# set has at most 2**26 words; a file declaring more is damaged
MAX_CAT_WORDS = 1 << 26


def _fail(msg):
    raise ValueError(f"LightGBM model: {msg}; the file is damaged or cut short")


def _int(d, key, where, low=None, high=None):
    v = d.get(key)
    if v is None:
        _fail(f"{where} has no {key!r} line")
    try:
        out = int(v)
    except ValueError:
        _fail(f"{where}: {key}={v!r} is not an integer")
    if (low is not None and out < low) or (high is not None and out > high):
        _fail(f"{where}: {key}={out} is out of range [{low}, {high}]")
    return out


def _lines(text):
    """key -> value of ``key=value`` lines (a bare key such as
    ``average_output`` maps to ""), and the keys in order."""
    out = {}
    for line in text.split("\n"):
        k, _, v = line.partition("=")
        if k.strip():
            out[k.strip()] = v
    return out


def _parameters(text):
    """``[name: value]`` entries of the trailing parameters section."""
    return dict(re.findall(r"^\[([A-Za-z_]+): ?(.*)\]$", text, re.M))


def _header(head, params):
    for k in _REQUIRED_HEAD:
        if k not in head:
            _fail(f"the header has no {k!r} line")
    K = _int(head, "num_tree_per_iteration", "the header", 1, 1 << 16)
    _int(head, "num_class", "the header", 1, 1 << 16)
    F = _int(head, "max_feature_idx", "the header", 0, 1 << 30) + 1
    names = head["feature_names"].split()
    if len(names) != F:
        _fail(f"the header's feature_names has {len(names)} names, max_feature_idx={F - 1} needs {F}")
    # a removed objective / average_output line would import a different
    # model; the parameters section (when there) says what they were
    obj = params.get("objective")
    if "objective" not in head and obj not in (None, "", "custom", "none", "None"):
        _fail(f"the header has no 'objective' line, but its parameters say objective {obj!r}")
    if "average_output" not in head and params.get("boosting") in ("rf", "random_forest"):
        _fail("the header has no 'average_output' line, but its parameters say boosting rf")
    try:
        sizes = [int(s) for s in head["tree_sizes"].split()]
    except ValueError:
        _fail(f"the header's tree_sizes {head['tree_sizes'][:40]!r} are not integers")
    if not sizes or len(sizes) > MAX_TREES or len(sizes) % K:
        _fail(f"the header's tree_sizes declares {len(sizes)} trees, which is not a positive multiple of "
              f"num_tree_per_iteration={K}")
    return sizes


def _array(t, key, n, i, dtype, by=None):
    v = t.get(key)
    if v is None:
        _fail(f"tree {i} has no {key!r} line")
    parts = v.split()
    if len(parts) != n:
        _fail(f"tree {i}: {key} has {len(parts)} numbers, {by or 'num_leaves=' + t['num_leaves']} needs {n}")
    try:
        return np.array(parts, dtype)
    except (ValueError, OverflowError):
        _fail(f"tree {i}: {key} holds something that is not a number in range")


def _tree(block, i, F):
    """One tree's fields, checked: arrays as numpy arrays, scalars as str."""
    first, _, rest = block.partition("\n")
    if first != f"Tree={i}":
        _fail(f"tree {i} starts with {first[:40]!r}, expected 'Tree={i}'")
    t = _lines(rest)
    L = _int(t, "num_leaves", f"tree {i}", 1, MAX_LEAVES)
    n_cat = _int(t, "num_cat", f"tree {i}", 0)
    if t.get("is_linear", "0") not in ("0", "1"):
        _fail(f"tree {i}: is_linear={t['is_linear']!r} is not 0 or 1")
    out = dict(t)
    for keys, n, required in ((_INTERNAL, L - 1, True), (_INTERNAL_MORE, L - 1, False),
                              (_LEAF, L, True), (_LEAF_MORE, L, False)):
        for k in keys:
            if not required and L == 1 and not t.get(k, "").strip():
                continue        # LightGBM writes leaf_weight= empty for a one-leaf tree; nothing reads it
            if required or k in t:
                arr = _array(t, k, n, i, np.int64 if k in _INT_FIELDS else np.float64)
                out[k] = arr
    feat, lc, rc = out["split_feature"], out["left_child"], out["right_child"]
    bad = np.flatnonzero((feat < 0) | (feat >= F))
    if bad.size:
        _fail(f"tree {i}: split_feature[{bad[0]}]={feat[bad[0]]} is not a feature index 0..{F - 1}")
    kids = np.concatenate([lc, rc])
    if ((kids < -L) | (kids >= L - 1)).any():
        _fail(f"tree {i}: left_child/right_child hold an index outside -{L}..{L - 2}")
    if L > 1 and not _is_tree(lc, rc, L):
        _fail(f"tree {i}: left_child/right_child do not form a tree")
    if L > 1:
        _categories(t, out, i, n_cat)
    return out


def _categories(t, out, i, n_cat):
    """Check a tree's category sets against its categorical nodes
    (``decision_type`` bit 0): one set per node, ``threshold`` its index;
    ``out`` gets ``cat_boundaries`` and ``cat_threshold`` as int64 arrays."""
    cat = np.flatnonzero(out["decision_type"] & 1)
    if cat.size != n_cat:
        _fail(f"tree {i}: decision_type marks {cat.size} categorical splits, num_cat={n_cat}")
    if not n_cat:
        return
    cb = _array(t, "cat_boundaries", n_cat + 1, i, np.int64, by=f"num_cat={n_cat}")
    if cb[0] != 0 or (np.diff(cb) < 0).any() or cb[-1] > MAX_CAT_WORDS:
        _fail(f"tree {i}: cat_boundaries do not run from 0 upwards to at most {MAX_CAT_WORDS} words")
    ct = _array(t, "cat_threshold", int(cb[-1]), i, np.int64, by=f"cat_boundaries[-1]={cb[-1]}")
    if ((ct < 0) | (ct >= 1 << 32)).any():
        _fail(f"tree {i}: cat_threshold holds a number outside the uint32 range")
    idx = out["threshold"][cat]
    if not np.array_equal(np.sort(idx), np.arange(n_cat)):
        _fail(f"tree {i}: the thresholds of its categorical splits are not the set indices 0..{n_cat - 1}, "
              "one each")
    out["cat_boundaries"], out["cat_threshold"] = cb, ct


def _is_tree(lc, rc, L):
    """Every leaf and every internal node but the root is reached once from
    the root (level by level: at most L - 1 levels)."""
    seen = np.zeros(2 * L - 1, np.int64)           # internal 0..L-2, then leaf ~c at L-1+~c
    level = np.array([0])
    seen[0] = 1
    for _ in range(L):
        kids = np.concatenate([lc[level], rc[level]])
        slot = np.where(kids >= 0, kids, L - 1 + ~kids)
        np.add.at(seen, slot, 1)
        level = kids[kids >= 0]
        if not level.size or seen.max() > 1:
            break
    return bool((seen == 1).all())


def parse_model_text(text: str, num_iteration=None):
    """The header (key -> str) and one dict per tree (arrays parsed), after
    checking every declaration the file makes.  ``num_iteration`` > 0 keeps
    that many iterations (LightGBM's own meaning)."""
    if not text.startswith("tree\n"):
        _fail("the first line is not 'tree' (not a LightGBM text model)")
    first = text.find("\nTree=")
    if first < 0:
        _fail("the file ends before its first tree")
    end = text.find("\nend of trees", first)
    params = _parameters(text[end:]) if end >= 0 else {}
    head = _lines(text[:first])
    sizes = _header(head, params)
    body = text[first + 1: end + 1 if end >= 0 else len(text)]
    starts = [m.start() for m in re.finditer(r"^Tree=", body, re.M)]
    blocks = [body[a:b] for a, b in zip(starts, starts[1:] + [len(body)], strict=True)]
    if len(blocks) > len(sizes):
        _fail(f"the file has {len(blocks)} trees, the header's tree_sizes declares {len(sizes)}")
    F = int(head["max_feature_idx"]) + 1
    trees = []
    for i, block in enumerate(blocks):
        last_cut = end < 0 and i == len(blocks) - 1
        if last_cut and len(block.encode()) < sizes[i]:
            field = block.rstrip("\n").rsplit("\n", 1)[-1].partition("=")[0]
            _fail(f"the file is cut short in tree {i}, at its {field!r} line ({len(block.encode())} of "
                  f"{sizes[i]} bytes)")
        trees.append(_tree(block, i, F))
        # every field checked, the byte count catches what they cannot
        # (a number changed in length, a line the prediction does not read)
        if len(block.encode()) != sizes[i] and not last_cut:
            _fail(f"tree {i} is {len(block.encode())} bytes, the header's tree_sizes says {sizes[i]}")
    if end < 0:
        _fail(f"the file is cut short after tree {len(blocks) - 1} (no 'end of trees' line)")
    if len(blocks) < len(sizes):
        _fail(f"the file has {len(blocks)} trees, the header's tree_sizes declares {len(sizes)}")
    K = int(head["num_tree_per_iteration"])
    if num_iteration is not None and num_iteration > 0:
        trees = trees[: num_iteration * K]
    return head, trees
