"""XGBoost categorical splits (issue 34): margins equal XGBoost's own bit
for bit, one-hot and partition splits, on test rows and on adversarial rows
(every code, codes past the largest, large codes, negatives, -0.0,
non-integers, NaN, +-inf).

XGBoost's own answer is ``predict(DMatrix(..., feature_types 'c',
enable_categorical=True), output_margin=True)``; a DMatrix refuses +-inf
anywhere ("Input data contains `inf`", unless ``missing=inf``), so rows
with +-inf are compared with ``inplace_predict`` alone, which takes them
(and agrees with the DMatrix on every other row: checked).  XGBoost's rule
(``common::Decision``): NaN takes default_left; a value < 0 or >= 2**24
(no category) goes left; else category trunc(x) goes right iff it is in
the node's stored set.
"""
import json
import re

import numpy as np
import pytest

xgb = pytest.importorskip("xgboost")

from skinflint import ir  # noqa: E402
from skinflint.importers.xgboost import from_xgboost  # noqa: E402
from skinflint.ir import from_json, to_json  # noqa: E402
from skinflint.runtimes.reference import ReferenceRuntime  # noqa: E402

from ._categorical_rows import categorical_rows  # noqa: E402
from ._rows import check_rows, same_bits  # noqa: E402

N_CATS = {1: 40, 3: 5, 4: 100}                    # categorical column -> its number of categories
TYPES = ["q", "c", "q", "c", "c"]
# values on the edges of XGBoost's rule, beyond _categorical_rows' own
EDGES = np.array([16777215, 16777216, 16777217, 1e6, 3e9, -1, -0.5, -0.0, 2.5, 2 ** 31, np.nan,
                  np.inf, -np.inf], np.float32)


def _data(n=800, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, 5)).astype(np.float32)
    for j, k in N_CATS.items():
        X[:, j] = rng.integers(0, k, n)
    X[rng.random(X.shape) < 0.05] = np.nan
    c1, c3, c4 = (np.nan_to_num(X[:, j], nan=0).astype(int) for j in (1, 3, 4))
    y = (np.nan_to_num(X[:, 0]) + 1.5 * (c1 % 7 == 3) - (c3 == 2) + 0.8 * (c4 % 11 < 4)
         + 0.2 * rng.normal(size=n))
    return X, y


X, Y = _data()
Y_BIN = (Y > 0.5).astype(int)
Y_3 = np.digitize(Y, [0.0, 1.0])


def _dmatrix(R, **kw):
    return xgb.DMatrix(R, feature_types=TYPES, enable_categorical=True, **kw)


def _train(params, y, rounds=12):
    return xgb.train({"max_depth": 5, "eta": 0.3, "nthread": 1, "tree_method": "hist", **params},
                     _dmatrix(X, label=y), rounds)


def _rows(model, seed=0, adversarial=True):
    """Test rows, verify's adversarial rows (unless ``adversarial=False``),
    every code and special value of each categorical column
    (``categorical_rows``) and EDGES in each."""
    rng = np.random.default_rng(seed)
    R = [check_rows(model, X, finite=False) if adversarial else X,
         categorical_rows(X, list(N_CATS), list(N_CATS.values()), rng)]
    for j in N_CATS:
        E = X[rng.integers(0, len(X), EDGES.size)].copy()
        E[:, j] = EDGES
        R.append(E)
    return np.concatenate(R).astype(np.float32)


def _source_margins(b, R):
    """XGBoost's margins: inplace_predict on every row, checked equal to the
    DMatrix's on every row a DMatrix takes (no +-inf)."""
    K = b.predict(_dmatrix(X[:1]), output_margin=True).reshape(1, -1).shape[1]
    got = b.inplace_predict(R, predict_type="margin").reshape(len(R), K)
    finite = ~np.isinf(R).any(1)
    dm = b.predict(_dmatrix(R[finite]), output_margin=True).reshape(-1, K)
    assert same_bits(got[finite], dm)
    return got


def _xgboost_set(b, tree, node):
    """The categories XGBoost stores (they go right) at node ``node`` of tree ``tree``."""
    t = json.loads(b.save_raw("json"))["learner"]["gradient_booster"]["model"]["trees"][tree]
    k = t["categories_nodes"].index(node)
    s = t["categories_segments"][k]
    return t["categories"][s:s + t["categories_sizes"][k]]


@pytest.mark.parametrize("onehot", [64, 1], ids=["one-hot", "partition"])
@pytest.mark.parametrize("params,y", [
    ({"objective": "binary:logistic"}, Y_BIN),
    ({"objective": "reg:squarederror"}, Y),
    ({"objective": "multi:softprob", "num_class": 3}, Y_3),
], ids=["logistic", "squared", "softprob"])
def test_margins_bit_exact(onehot, params, y):
    b = _train({"max_cat_to_onehot": onehot, **params}, y)
    st = [np.asarray(t["split_type"]) for t in
          json.loads(b.save_raw("json"))["learner"]["gradient_booster"]["model"]["trees"]]
    assert sum(int((s == 1).sum()) for s in st) >= 10          # the model does split on categories
    m = from_xgboost(b)
    cats = m.nodes[0].categories
    assert cats is not None and cats.rule == "truncate_nonnegative"
    R = _rows(m)
    pred = ReferenceRuntime(m).predict(R).scores
    assert same_bits(pred, _source_margins(b, R))
    assert same_bits(ReferenceRuntime(from_json(to_json(m))).predict(R).scores, pred)


def test_infinity_refused_by_a_dmatrix_goes_left_as_in_inplace_predict():
    """What the source refuses: a DMatrix takes no +-inf (in any column);
    inplace_predict takes it and, as for every value that is no category
    (-1, 2**24, 3e9), goes left at a categorical node: the IR's other_left."""
    b = _train({"max_cat_to_onehot": 1, "objective": "reg:squarederror"}, Y, rounds=4)
    m = from_xgboost(b)
    R = np.repeat(X[:50], 6, 0)
    R[:, 1] = np.resize(np.array([np.inf, -np.inf, -1, 1 << 24, 3e9, -3e9], np.float32), len(R))
    with pytest.raises(xgb.core.XGBoostError, match="inf"):
        b.predict(_dmatrix(R), output_margin=True)
    src = b.inplace_predict(R, predict_type="margin").reshape(-1, 6)
    assert (src == src[:, :1]).all()                  # the six values go the same way in XGBoost
    assert same_bits(ReferenceRuntime(m).predict(R).scores[:, 0], src.ravel())


def test_partition_sets_span_several_words():
    """A partition split on the 100-category column has a set over 4 words;
    the IR's set there is the complement of XGBoost's (which goes right)."""
    b = _train({"max_cat_to_onehot": 1, "objective": "reg:squarederror"}, Y)
    m = from_xgboost(b)
    t = m.nodes[0]
    cats = t.categories
    roots = list(t.roots) + [len(t.feature)]
    seen = 0
    for m_ in np.flatnonzero(cats.words >= 3):
        tree = int(np.searchsorted(roots, m_, side="right") - 1)
        right = set(_xgboost_set(b, tree, int(m_ - roots[tree])))
        w = int(cats.words[m_])
        words = cats.bits[cats.begin[m_]:cats.begin[m_] + w]
        left = {c for c in range(32 * w) if (int(words[c >> 5]) >> (c & 31)) & 1}
        assert left == set(range(32 * w)) - right and max(right) // 32 + 1 == w
        assert cats.other_left[m_] and t.threshold[m_] == 0.0
        seen += 1
    assert seen > 0


def _edit_tree(b, edit):
    j = json.loads(b.save_raw("json"))
    edit(j["learner"]["gradient_booster"]["model"]["trees"])
    raw = json.dumps(j).encode()
    return xgb.Booster(model_file=bytearray(raw)), raw


def test_largest_valid_category_in_a_set(tmp_path):
    """A set holding category 2**24 - 1 (the largest XGBoost accepts: the
    IR's largest set too, 2**19 words): 16777215 goes right, 16777216 left
    (no category for XGBoost), as the source, in every backend; edited into
    a trained model."""
    b0 = _train({"max_cat_to_onehot": 64, "objective": "reg:squarederror"}, Y, rounds=3)

    def edit(trees):
        t = trees[0]
        k = 0
        s = t["categories_segments"][k]
        t["categories"][s:s + t["categories_sizes"][k]] = [5, 33, 16777215]
        t["categories_sizes"][k] = 3
        ends = np.cumsum(t["categories_sizes"])
        t["categories_segments"] = (ends - t["categories_sizes"]).tolist()
    b, raw = _edit_tree(b0, edit)
    path = tmp_path / "m.json"
    path.write_bytes(raw)
    m = from_xgboost(path)
    node = int(json.loads(raw)["learner"]["gradient_booster"]["model"]["trees"][0]["categories_nodes"][0])
    j = int(m.nodes[0].feature[node])
    R = np.repeat(X[:40], 3, 0)
    R[:, j] = np.resize(np.array([5, 33, 16777215, 16777216, 16777214, 6, 3e9, -0.0, 5.5], np.float32), len(R))
    # verify's adversarial_rows enumerate every code of the set's 2**24 (about 50 s): left out
    R = np.concatenate([R, _rows(m, adversarial=False)])
    pred = ReferenceRuntime(m).predict(R).scores
    assert same_bits(pred, _source_margins(b, R))
    assert m.nodes[0].categories.words[node] == 1 << 19
    from skinflint.verify import verify
    # C and ONNX hold the 2 MiB set too
    rep = verify(m, R, adversarial=False, budgets=None)
    assert rep.ok, rep.table()


def test_ubjson_and_json_files_and_the_sklearn_wrapper(tmp_path):
    clf = xgb.XGBClassifier(n_estimators=8, max_depth=4, n_jobs=1, enable_categorical=True,
                            max_cat_to_onehot=1, tree_method="hist", feature_types=TYPES).fit(X, Y_3)
    b = clf.get_booster()
    m = from_xgboost(clf)
    R = _rows(m)
    pred = ReferenceRuntime(m).predict(R).scores
    assert same_bits(pred, _source_margins(b, R))
    for ext in ("json", "ubj"):
        path = tmp_path / f"m.{ext}"
        b.save_model(path)
        assert ir.to_json(from_xgboost(path)) == ir.to_json(from_xgboost(b))


def test_pandas_categories_read_as_codes():
    """A model trained on a DataFrame reads the codes of its training
    categories (XGBoost re-codes a DataFrame's categories to those)."""
    pd = pytest.importorskip("pandas")
    rng = np.random.default_rng(3)
    names = np.array(list("abcdefghij"))
    df = pd.DataFrame({"u": rng.normal(size=500), "c": pd.Categorical(rng.choice(names, 500))})
    df.loc[rng.random(500) < 0.05, "c"] = np.nan
    y = df.u + df.c.isin(["b", "e", "h"])
    b = xgb.train({"max_depth": 3, "nthread": 1, "max_cat_to_onehot": 1},
                  xgb.DMatrix(df, y, enable_categorical=True), 6)
    m = from_xgboost(b)
    codes = df.c.cat.codes.to_numpy().astype(np.float32)
    R = np.stack([df.u.to_numpy(np.float32), np.where(codes < 0, np.nan, codes)], 1)
    want = b.predict(xgb.DMatrix(df, enable_categorical=True), output_margin=True)
    assert same_bits(ReferenceRuntime(m).predict(R).scores[:, 0], want)


def test_damaged_category_arrays_are_refused(tmp_path):
    """One number removed from any of the category arrays of a tree, the
    split_type line removed, or a category that is not one: refused with a
    message naming the tree and the field."""
    b = _train({"max_cat_to_onehot": 1, "objective": "reg:squarederror"}, Y, rounds=3)
    text = b.save_raw("json").decode()
    clean = json.loads(text)
    path = tmp_path / "m.json"
    cases = 0
    for i, t in enumerate(clean["learner"]["gradient_booster"]["model"]["trees"]):
        if 1 not in t["split_type"]:
            continue
        for field in ("categories", "categories_nodes", "categories_segments", "categories_sizes", "split_type"):
            for k in sorted({0, len(t[field]) // 2, len(t[field]) - 1}):
                j = json.loads(text)
                del j["learner"]["gradient_booster"]["model"]["trees"][i][field][k]
                path.write_text(json.dumps(j))
                with pytest.raises(ValueError, match=rf"XGBoost model: tree {i}\b.*{field}"):
                    from_xgboost(path)
                cases += 1
        for field, value in (("categories", -1), ("categories", 1 << 24), ("categories", 2.5)):
            j = json.loads(text)
            j["learner"]["gradient_booster"]["model"]["trees"][i][field][0] = value
            path.write_text(json.dumps(j))
            with pytest.raises(ValueError, match=rf"XGBoost model: tree {i}\b.*{field}"):
                from_xgboost(path)
            cases += 1
        j = json.loads(text)
        del j["learner"]["gradient_booster"]["model"]["trees"][i]["split_type"]
        path.write_text(json.dumps(j))
        with pytest.raises(ValueError, match=rf"XGBoost model: tree {i}\b.*split_type"):
            from_xgboost(path)
    assert cases >= 36


def _one_number_fewer(raw, rng, n):
    """``n`` mutants of a model file, each with one number removed from an
    array: JSON text, or a UBJSON typed array with its count lowered by one
    (a well-formed document with one number fewer)."""
    out = []
    if raw[:1] == b"{" and raw[1:2] == b'"':
        text = raw.decode()
        spans = [m.span(1) for m in re.finditer(r"(?<=[\[,])(-?[0-9][0-9.eE+-]*)(?=[,\]])", text)]
        for k in rng.choice(len(spans), n, replace=False):
            a, b = spans[k]
            out.append((text[:a] + text[b + 1:] if text[b] == "," else text[:a - 1] + text[b:]).encode())
        return out
    sizes = {b"i": 1, b"U": 1, b"I": 2, b"l": 4, b"L": 8, b"d": 4, b"D": 8}
    arrays = []
    for m in re.finditer(rb"\[\$([iUIlLdD])#([iUIlL])", raw):
        w, pos = sizes[m.group(2)], m.end()
        count = int.from_bytes(raw[pos:pos + w], "big", signed=True)
        if count > 0:
            arrays.append((pos, w, sizes[m.group(1)], count))
    for k in rng.integers(0, len(arrays), n):
        pos, w, size, count = arrays[k]
        j = pos + w + size * int(rng.integers(0, count))
        cut = raw[:j] + raw[j + size:]
        out.append(cut[:pos] + (count - 1).to_bytes(w, "big", signed=True) + cut[pos + w:])
    return out


@pytest.mark.parametrize("fmt", ["json", "ubj"])
def test_one_number_removed_is_refused_or_the_same_model(tmp_path, fmt):
    """Any one number removed from a categorical model's file: refused with
    a ValueError, or the very same model (as the numeric files of
    test_damaged_files)."""
    b = _train({"max_cat_to_onehot": 1, "objective": "reg:squarederror"}, Y, rounds=3)
    clean = ir.to_json(from_xgboost(b))
    path = tmp_path / f"m.{fmt}"
    refused = 0
    for mutant in _one_number_fewer(bytes(b.save_raw(fmt)), np.random.default_rng(34), 150):
        path.write_bytes(mutant)
        try:
            m = from_xgboost(path)
        except ValueError as e:
            assert str(e).startswith("XGBoost model:"), str(e)
            refused += 1
            continue
        assert ir.to_json(m) == clean, "a damaged file imported as a different model"
    assert refused > 100


def test_verify_every_backend():
    from skinflint.verify import verify
    b = _train({"max_cat_to_onehot": 1, "objective": "binary:logitraw"}, Y_BIN, rounds=6)
    m = from_xgboost(b)
    rng = np.random.default_rng(1)
    R = np.concatenate([X[:64], categorical_rows(X[:64], list(N_CATS), list(N_CATS.values()), rng)])
    rep = verify(m, R)
    assert rep.ok, rep.table()


def test_cli_import_of_a_categorical_model(tmp_path, capsys):
    from skinflint.cli import main
    b = _train({"max_cat_to_onehot": 1, "objective": "binary:logistic"}, Y_BIN, rounds=4)
    src = tmp_path / "m.json"
    b.save_model(src)
    out = tmp_path / "model.json"
    assert main(["import", str(src), "--from", "xgboost", "-o", str(out)]) == 0
    got = ir.load(out)
    R = _rows(got)
    assert same_bits(ReferenceRuntime(got).predict(R).scores, _source_margins(b, R))
    assert "trees" in capsys.readouterr().out
