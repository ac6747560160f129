"""Importers refuse damaged files (issue 31, item 5).

Seeded mutants of real model files (LightGBM text, XGBoost JSON and
UBJSON, sklearn-json): cut short anywhere, a line removed, a number
removed from an array.  Each mutant is either refused with a ValueError
whose message names the tree (and field) when the damage is inside a
tree, or imports to the very same model as the undamaged file (same JSON),
which itself is checked against the source library's own predictions.
Any other exception (KeyError, IndexError, ...) fails the test.
"""
import json
import re

import numpy as np
import pytest

from skinflint import ir
from skinflint.runtimes.reference import ReferenceRuntime

from ._rows import data, same_bits, same_bits64

X, Y_BIN, Y_REG, Y_3 = data(n=300, F=5)
RNG_SEED = 31
NUMBER = re.compile(r"-?(\d+\.?\d*|\.\d+)([eE][-+]?\d+)?")
N_CUT, N_LINE, N_NUMBER = 120, 120, 120


def _numbers_in_arrays(text):
    """Spans of numbers that are JSON array elements."""
    return [m.span(1) for m in re.finditer(r"(?<=[\[,])\s*(-?[0-9][0-9.eE+-]*)\s*(?=[,\]])", text)]


def _drop_array_number(text, span):
    """Remove one array element and one comma next to it."""
    a, b = span
    if text[b:b + 1] == ",":
        return text[:a] + text[b + 1:]
    a2 = text.rfind(",", 0, a)
    return text[:a2] + text[b:] if text[a2 + 1:a].strip() == "" and a2 >= 0 else text[:a] + text[b:]


def _import_each(importer, path, mutants, clean_json, prefix, skip=None):
    """(refused, accepted) over ``mutants`` ((content, tree) pairs, str or
    bytes), each written to ``path`` and imported; ``skip``: a content left out."""
    got = np.zeros(2, int)
    for mutant, tree in mutants:
        if skip is not None and mutant == skip:
            continue
        if isinstance(mutant, bytes):
            path.write_bytes(mutant)
        else:
            path.write_text(mutant)
        got += _run(importer, path, clean_json, tree, prefix)
    return got


def _without_a_line(d, rng):
    """Mutants of JSON data ``d`` printed one key per line, each missing one line."""
    pretty = json.dumps(d, indent=1).split("\n")
    return [("\n".join(pretty[:j] + pretty[j + 1:]), None) for j in rng.integers(1, len(pretty) - 1, N_LINE // 2)]


def _run(importer, path, clean_json, tree_of, prefix):
    """(refused, accepted) after importing ``path``; checks the outcome."""
    try:
        m = importer(path)
    except ValueError as e:
        msg = str(e)
        assert msg.startswith(prefix), msg
        if tree_of is not None:
            # damage in tree k is reported in tree k, or in tree k - 1 when
            # it removed the line that starts tree k (tree k - 1 runs on)
            named = {int(n) for n in re.findall(r"\btrees?\[?\s?(\d+)", msg)}
            assert named & {tree_of, tree_of - 1}, (tree_of, msg)
        return 1, 0
    assert ir.to_json(m) == clean_json, "a damaged file imported as a different model"
    return 0, 1


# -- LightGBM text -------------------------------------------------------------------------------

lgb = pytest.importorskip("lightgbm")


@pytest.fixture(scope="module", params=["multiclass", "rf"])
def lgb_model(request):
    from skinflint.importers.lightgbm import from_lightgbm
    base = {"num_leaves": 5, "verbose": -1, "num_threads": 1, "min_data_in_leaf": 5}
    if request.param == "multiclass":
        b = lgb.train({**base, "objective": "multiclass", "num_class": 3}, lgb.Dataset(X, Y_3), 4)
    else:
        b = lgb.train({**base, "objective": "binary", "boosting": "rf", "bagging_freq": 1,
                       "bagging_fraction": 0.6}, lgb.Dataset(X, Y_BIN), 8)
    m = from_lightgbm(b)
    raw = b.predict(X, raw_score=True).reshape(len(X), -1)
    # the undamaged import is LightGBM's own model, bit for bit
    assert same_bits64(ReferenceRuntime(m).predict(X).scores, raw / m.nodes[0].divisor)
    return b.model_to_string(), ir.to_json(m)


def test_lightgbm_text_damaged_is_refused_or_the_same_model(lgb_model, tmp_path):
    from skinflint.importers.lightgbm import from_lightgbm
    text, clean = lgb_model
    rng = np.random.default_rng(RNG_SEED)
    lines = text.split("\n")
    tree_start = [i for i, ln in enumerate(lines) if ln.startswith("Tree=")]
    end = lines.index("end of trees")

    def tree_at_line(j):
        k = np.searchsorted(tree_start, j, side="right") - 1
        return int(k) if k >= 0 and j < end else None

    def tree_at_char(c):
        return tree_at_line(text.count("\n", 0, c))

    mutants = []                                    # (text, tree the damage lies in)
    for c in rng.integers(0, len(text), N_CUT):
        mutants.append((text[:c], tree_at_char(c) if text[c - 1:c] != "\n" else None))
    for j in rng.integers(0, len(lines), N_LINE):
        mutants.append(("\n".join(lines[:j] + lines[j + 1:]), tree_at_line(j) if lines[j] else None))
    num = [(j, t) for j, ln in enumerate(lines) if "=" in ln
           for t, tok in enumerate(ln.partition("=")[2].split(" ")) if NUMBER.fullmatch(tok)]
    for k in rng.choice(len(num), N_NUMBER, replace=False):
        j, t = num[k]
        key, _, val = lines[j].partition("=")
        toks = val.split(" ")
        ln = key + "=" + " ".join(toks[:t] + toks[t + 1:])
        mutants.append(("\n".join(lines[:j] + [ln] + lines[j + 1:]), tree_at_line(j)))
    got = _import_each(from_lightgbm, tmp_path / "model.txt", mutants, clean, "LightGBM model:", skip=text)
    assert got.sum() >= 300 and got[0] > 0, got



def test_lightgbm_the_issues_examples(lgb_model, tmp_path):
    """Cut short inside the 8th tree; the objective or average_output line
    removed (each would otherwise import a different model)."""
    from skinflint.importers.lightgbm import from_lightgbm
    text, _ = lgb_model
    path = tmp_path / "m.txt"
    cut = text.index("Tree=7\n") + 60
    path.write_text(text[:cut])
    with pytest.raises(ValueError, match=r"cut short in tree 7, at its '\w+' line"):
        from_lightgbm(path)
    for says in ("objective", "average_output"):
        if re.search(f"^{says}", text, re.M):
            path.write_text(re.sub(f"^{says}(=.*)?\n", "", text, count=1, flags=re.M))
            with pytest.raises(ValueError, match=f"header has no '{says}' line, but its parameters"):
                from_lightgbm(path)


# -- XGBoost JSON and UBJSON ---------------------------------------------------------------------

xgb = pytest.importorskip("xgboost")


@pytest.fixture(scope="module")
def xgb_model():
    from skinflint.importers.xgboost import from_xgboost
    b = xgb.train({"objective": "multi:softprob", "num_class": 3, "max_depth": 2, "nthread": 1},
                  xgb.DMatrix(X, Y_3), 3)
    m = from_xgboost(b)
    margin = b.predict(xgb.DMatrix(X), output_margin=True)
    assert same_bits(ReferenceRuntime(m).predict(X).scores, margin)   # the source's own model
    return bytes(b.save_raw("json")), bytes(b.save_raw("ubj")), ir.to_json(m)


def _tree_spans(text, starts):
    return lambda c: (int(np.searchsorted(starts, c, side="right") - 1)
                      if starts and c > starts[0] else None)


def test_xgboost_json_damaged_is_refused_or_the_same_model(xgb_model, tmp_path):
    from skinflint.importers.xgboost import from_xgboost
    raw, _, clean = xgb_model
    text = raw.decode()
    rng = np.random.default_rng(RNG_SEED)
    starts = [m.start() for m in re.finditer(r'\{"base_weights"', text)]
    tree_at = _tree_spans(text, starts)
    end_trees = re.search(r'"name":\s*"gbtree"', text).start()     # after the trees
    mutants = [(text[:c], None) for c in rng.integers(1, len(text), N_CUT)]
    spans = _numbers_in_arrays(text)
    for k in rng.choice(len(spans), min(len(spans), 2 * N_NUMBER), replace=False):
        a = spans[k][0]
        mutants.append((_drop_array_number(text, spans[k]), tree_at(a) if a < end_trees else None))
    mutants += _without_a_line(json.loads(text), rng)
    got = _import_each(from_xgboost, tmp_path / "model.json", mutants, clean, "XGBoost model:")
    assert got.sum() >= 300 and got[0] > 0, got


def _typed_arrays(raw):
    """(count position, count width, data start, item size, count) of every
    strongly typed array ``[$<type>#<int type><count>`` in UBJSON bytes."""
    sizes = {b"i": 1, b"U": 1, b"I": 2, b"l": 4, b"L": 8, b"d": 4, b"D": 8}
    out = []
    for m in re.finditer(rb"\[\$([iUIlLdD])#([iUIlL])", raw):
        w = sizes[m.group(2)]
        pos = m.end()
        n = int.from_bytes(raw[pos:pos + w], "big", signed=True)
        if n > 0 and pos + w + n * sizes[m.group(1)] <= len(raw):
            out.append((pos, w, pos + w, sizes[m.group(1)], n))
    return out


def test_xgboost_ubjson_damaged_is_refused_or_the_same_model(xgb_model, tmp_path):
    """Cut short; one element's bytes removed from a typed array with its
    count left as it was (misaligned) or with the count lowered by one (a
    well-formed document with one number fewer)."""
    from skinflint.importers.xgboost import from_xgboost
    _, raw, clean = xgb_model
    rng = np.random.default_rng(RNG_SEED)
    mutants = [raw[:c] for c in rng.integers(1, len(raw), N_CUT)]
    arrays = _typed_arrays(raw)
    for k in rng.integers(0, len(arrays), 2 * N_NUMBER):
        pos, w, data0, size, n = arrays[k]
        j = data0 + size * int(rng.integers(0, n))
        cut = raw[:j] + raw[j + size:]
        mutants.append(cut)
        mutants.append(cut[:pos] + (n - 1).to_bytes(w, "big", signed=True) + cut[pos + w:])
    got = _import_each(from_xgboost, tmp_path / "model.ubj", [(m, None) for m in mutants], clean, "XGBoost model:")
    assert got.sum() >= 300 and got[0] > 0, got


# -- sklearn-json --------------------------------------------------------------------------------

@pytest.fixture(scope="module", params=["forest", "boosting"])
def skl_model(request):
    pytest.importorskip("sklearn")
    from sklearn.ensemble import GradientBoostingClassifier, RandomForestClassifier

    from skinflint.importers.sklearn_json import from_sklearn_json, to_json
    Xf = np.nan_to_num(X)
    est = (RandomForestClassifier(6, max_depth=3, random_state=0) if request.param == "forest"
           else GradientBoostingClassifier(n_estimators=4, max_depth=2, random_state=0)).fit(Xf, Y_3)
    text = to_json(est)
    m = from_sklearn_json(text)
    # the source's own model: its margins (a forest's mean probability, a
    # boosting's decision function) bit for bit, and its labels
    pred = ReferenceRuntime(m).predict(Xf)
    src = est.predict_proba(Xf) if request.param == "forest" else est.decision_function(Xf)
    assert same_bits64(pred.scores, src) and np.array_equal(pred.output, est.predict(Xf))
    return text, ir.to_json(m)


def test_sklearn_json_damaged_is_refused_or_the_same_model(skl_model, tmp_path):
    from skinflint.importers.sklearn_json import from_sklearn_json
    text, clean = skl_model
    rng = np.random.default_rng(RNG_SEED)
    starts = [m.start() for m in re.finditer(r'\{"feature"', text)]
    tree_at = _tree_spans(text, starts)
    mutants = [(text[:c], None) for c in rng.integers(1, len(text), N_CUT)]
    spans = _numbers_in_arrays(text)
    for k in rng.choice(len(spans), min(len(spans), 2 * N_NUMBER), replace=False):
        mutants.append((_drop_array_number(text, spans[k]), tree_at(spans[k][0])))
    d = json.loads(text)
    for i in range(len(d["trees"])):                 # a whole tree removed
        mutants.append((json.dumps({**d, "trees": d["trees"][:i] + d["trees"][i + 1:]}), None))
    mutants += _without_a_line(d, rng)
    got = _import_each(from_sklearn_json, tmp_path / "model.json", mutants, clean, "")
    assert got.sum() >= 300 and got[0] > 0, got

