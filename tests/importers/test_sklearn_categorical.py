"""scikit-learn HistGradientBoosting with categorical features (issue 34).

The model encodes each categorical column with its OrdinalEncoder (category
value -> code, anything else -> NaN, the missing direction) and puts those
columns first; the importer composes the encoder with each node's left
bitset into the IR's set split (rule "integer") over the values the user
feeds, in the user's column order.  On test rows and on adversarial rows
(every integer up to past the largest category, unknown integers,
negatives, -0.0, non-integers, NaN, large values) the IR's float64 margin is
the model's own ``_raw_predict`` bit for bit.  scikit-learn refuses +-inf in
a categorical column; the IR sends it where any unknown value goes (the
missing direction), so those rows are checked against scikit-learn given NaN
there.
"""
import json

import numpy as np
import pandas as pd
import pytest
from sklearn import ensemble
from threadpoolctl import threadpool_limits

from skinflint.importers import from_sklearn, from_sklearn_json
from skinflint.importers.sklearn_json import to_json
from skinflint.ir import IRError
from skinflint.runtimes.reference import ReferenceRuntime
from skinflint.verify import verify

from ._categorical_rows import categorical_rows
from ._rows import same_bits64

N = 600
CATS_A = np.array([0, 3, 7, 40, 100], np.float32)      # sparse, past the first 32-bit word
CATS_B = np.array([1, 2, 5], np.float32)
CAT_COLUMNS = [1, 3]                                     # not first: the model reorders its columns


def _numeric_data(seed=0):
    """Five float32 columns, 1 and 3 categorical (NaN in both), targets."""
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(N, 5)).astype(np.float32)
    X[:, 1] = rng.choice(CATS_A, N)
    X[:, 3] = rng.choice(CATS_B, N)
    a, b = X[:, 1].copy(), X[:, 3].copy()
    X[rng.random(N) < 0.08, 1] = np.nan
    X[rng.random(N) < 0.08, 3] = np.nan
    X[rng.random(N) < 0.05, 0] = np.nan
    y = X[:, 0] + 2 * (a == 3) - (a == 100) * X[:, 2] + (b == 5) + 0.5 * (a == 40) * (b == 1)
    y = np.nan_to_num(y) + 0.1 * rng.normal(size=N)
    return X, y, np.digitize(y, [np.quantile(y, 1 / 3), np.quantile(y, 2 / 3)]), (y > np.median(y)).astype(int)


X, Y_REG, Y_3, Y_BIN = _numeric_data()


def _rows(X, cat_columns, n_categories, seed=1):
    """Test rows plus the shared adversarial categorical rows."""
    return np.concatenate([X, categorical_rows(X, cat_columns, n_categories, np.random.default_rng(seed))])


def _finite_in(R, cat_columns):
    """R with +-inf in the categorical columns as NaN (scikit-learn refuses
    infinity there; the IR sends it, as any unknown value, the missing way)."""
    S = R.copy()
    for j in cat_columns:
        S[np.isinf(S[:, j]), j] = np.nan
    return S


def _fit(est, Xt, y):
    with threadpool_limits(1):                  # OpenMP threads thrash on a busy machine
        return est.fit(Xt, y)


def _check_parity(est, m, R, S):
    """The IR's margins are ``_raw_predict``'s bit for bit; labels equal."""
    pred = ReferenceRuntime(m).predict(R)
    want = np.asarray(est._raw_predict(S), np.float64)
    assert same_bits64(pred.scores, want), np.flatnonzero(np.any(pred.scores != want, 1))[:10]
    if hasattr(est, "classes_"):
        assert np.array_equal(pred.output, est.predict(S))


CASES = [
    (ensemble.HistGradientBoostingRegressor(max_iter=12, random_state=0), Y_REG),
    (ensemble.HistGradientBoostingClassifier(max_iter=10, random_state=0), Y_BIN),
    (ensemble.HistGradientBoostingClassifier(max_iter=6, max_leaf_nodes=12, random_state=0), Y_3),
]


@pytest.mark.parametrize("est,y", CASES, ids=["regressor", "binary", "multiclass"])
def test_numeric_categories_are_fed_as_values(est, y):
    est = _fit(est.set_params(categorical_features=CAT_COLUMNS), X, y)
    m = from_sklearn(est)
    bank = m.nodes[0]
    cat = bank.categories
    assert cat is not None and cat.rule == "integer"
    split = np.flatnonzero(bank.feature >= 0)
    is_cat = cat.words[split] > 0
    # both kinds of split, categorical ones on the user's columns 1 and 3 only
    assert is_cat.any() and (~is_cat).any()
    assert set(bank.feature[split[is_cat]].tolist()) <= set(CAT_COLUMNS)
    assert set(bank.feature[split[~is_cat]].tolist()) <= {0, 2, 4}
    assert np.array_equal(cat.other_left, (cat.words > 0) & bank.missing_left)
    R = _rows(X, CAT_COLUMNS, [int(CATS_A.max()) + 1, int(CATS_B.max()) + 1])
    assert np.isinf(R[:, CAT_COLUMNS]).any() and np.isnan(R[:, CAT_COLUMNS]).any()
    with pytest.raises(ValueError, match="infinity"):
        est._raw_predict(R[np.isinf(R[:, 1])][:1])
    _check_parity(est, m, R, _finite_in(R, CAT_COLUMNS))


def test_boolean_mask_and_a_column_without_categorical_splits():
    """categorical_features as a mask; the categorical column 4 is noise the
    trees may never split on, yet it still moves the others (reorder)."""
    rng = np.random.default_rng(3)
    Xt = X.copy()
    Xt[:, 4] = rng.choice(np.float32([2, 4, 6, 8]), N)
    mask = np.array([False, True, False, False, True])
    est = _fit(ensemble.HistGradientBoostingRegressor(max_iter=8, categorical_features=mask, random_state=0),
               Xt, Y_REG)
    m = from_sklearn(est)
    R = _rows(Xt, [1, 4], [101, 9])
    _check_parity(est, m, R, _finite_in(R, [1, 4]))


def test_every_value_routes_as_sklearn_for_each_node():
    """Each imported set against the mapping stated independently of the
    importer: for every integer 0..300, a known category value goes left
    iff its code's bit is set in the node's raw_left_cat_bitsets, any other
    value the missing way (the encoder's codes are the sorted categories'
    indices)."""
    est = _fit(ensemble.HistGradientBoostingRegressor(max_iter=6, categorical_features=CAT_COLUMNS,
                                                      random_state=0), X, Y_REG)
    bank = from_sklearn(est).nodes[0]
    cat = bank.categories
    known = {1: CATS_A.astype(int).tolist(), 3: CATS_B.astype(int).tolist()}    # sorted: code = index
    preds = [p for it in est._predictors for p in it]
    roots = list(bank.roots)
    checked = 0
    for t, p in enumerate(preds):
        for local in np.flatnonzero(p.nodes["is_categorical"] & ~p.nodes["is_leaf"].astype(bool)):
            g = roots[t] + local
            words = cat.bits[cat.begin[g]:cat.begin[g] + cat.words[g]]
            miss = bool(p.nodes["missing_go_to_left"][local])
            left_codes = p.raw_left_cat_bitsets[p.nodes["bitset_idx"][local]]
            for v in range(0, 301):
                in_set = v < 32 * len(words) and bool((words[v >> 5] >> (v & 31)) & 1)
                goes = in_set if v < 32 * len(words) else bool(cat.other_left[g])
                vals = known[int(bank.feature[g])]
                want = bool((left_codes[vals.index(v) >> 5] >> (vals.index(v) & 31)) & 1) if v in vals else miss
                assert goes == want, (t, local, v)
            checked += 1
    assert checked > 0


def _frame_data(seed=0):
    rng = np.random.default_rng(seed)
    s_cats = ["z", "a", "b", "q", "never"]               # not sorted; "never" is never seen
    i_cats = [9, 5, 2, 11, 40]                            # 11 and 40 never seen
    s = pd.Categorical(rng.choice(["b", "a", "z", "q"], N), categories=s_cats)
    i = pd.Categorical(rng.choice([5, 2, 9], N), categories=i_cats)
    x, z = rng.normal(size=(2, N)).astype(np.float32)
    df = pd.DataFrame({"x": x, "s": s, "i": i, "z": z})
    df.loc[rng.random(N) < 0.07, "s"] = np.nan
    df.loc[rng.random(N) < 0.07, "i"] = np.nan
    sv, iv = np.asarray(s.astype(object)), np.asarray(i.astype(object))
    y = (x + 2 * (sv == "a") - (iv == 5) * z + (sv == "q") * (iv == 2) > 0.3).astype(int)
    y[(sv == "b") & (x > 1)] = 2
    return df, y, s_cats


def _frame(M, s_cats):
    """The DataFrame scikit-learn gets for skinflint's matrix M: column s's
    valid codes as their categories, any other code as NaN (pandas' code -1
    and every non-code: the missing direction); column i's values as they are."""
    codes = M[:, 1]
    ok = np.isfinite(codes) & (codes >= 0) & (codes < len(s_cats)) & (codes == np.trunc(codes))
    s = np.full(len(M), np.nan, object)
    s[ok] = np.array(s_cats, object)[codes[ok].astype(int)]
    return pd.DataFrame({"x": M[:, 0], "s": pd.Categorical(s, categories=s_cats), "i": M[:, 2], "z": M[:, 3]})


def test_dataframe_category_dtype_codes_and_values():
    """categorical_features="from_dtype": string column s fed as pandas codes
    (category_codes), integer column i fed as its category values."""
    df, y, s_cats = _frame_data()
    est = _fit(ensemble.HistGradientBoostingClassifier(max_iter=8, random_state=0,
                                                       categorical_features="from_dtype"), df, y)
    assert est.is_categorical_.tolist() == [False, True, True, False]
    with pytest.raises(ValueError, match=r"categorical feature 's' .*'a'.*category_codes"):
        from_sklearn(est)
    m = from_sklearn(est, category_codes={"s": df["s"].cat.categories})
    assert [f.name for f in m.features] == ["x", "s", "i", "z"]
    assert m.metadata["source"]["category_inputs"] == {"s": s_cats, "i": "values"}
    assert m.nodes[0].categories is not None
    M = np.column_stack([df["x"], df["s"].cat.codes, df["i"].astype(float), df["z"]]).astype(np.float32)
    assert (M[:, 1] == -1).any()                         # pandas' missing code
    R = _rows(M, [1, 2], [len(s_cats), 41])
    S = _finite_in(R, [2])
    _check_parity(est, m, R, _frame(S, s_cats))
    # the same model by position, and fed the training frame itself
    m2 = from_sklearn(est, category_codes={1: list(df["s"].cat.categories)})
    assert m2.hash() == m.hash()
    _check_parity(est, m, M, df)


@pytest.mark.parametrize("cats,what", [
    ([-1.0, 2.0, 3.0], "-1"),
    ([0.0, 2.5, 3.0], "2.5"),
    ([0.0, 1.0, 2.0 ** 24], "16777216"),
])
def test_categories_a_float32_input_cannot_carry_are_refused(cats, what):
    rng = np.random.default_rng(0)
    Xt = rng.normal(size=(N, 2))
    Xt[:, 1] = rng.choice(cats, N)
    est = _fit(ensemble.HistGradientBoostingRegressor(max_iter=3, categorical_features=[1]), Xt,
               Xt[:, 0] + (Xt[:, 1] == cats[1]))
    with pytest.raises(ValueError, match=rf"^HistGradientBoosting: categorical feature at position 1 has "
                                          rf"categories \({what}.*integers in \[0, 2\^24\).*category_codes"):
        from_sklearn(est)
    # positions in a list of the categories are always fed exactly
    m = from_sklearn(est, category_codes={1: cats})
    R = np.column_stack([np.zeros(len(cats) + 2), np.arange(len(cats) + 2)]).astype(np.float32)
    S = R.astype(np.float64)
    S[:, 1] = np.concatenate([cats, [np.nan, np.nan]])
    _check_parity(est, m, R, S)


def test_category_codes_misuse_is_refused():
    df, y, s_cats = _frame_data()
    est = _fit(ensemble.HistGradientBoostingClassifier(max_iter=2, random_state=0), df, y)
    with pytest.raises(ValueError, match="^category_codes: feature 'x' is not categorical"):
        from_sklearn(est, category_codes={"x": [1, 2]})
    with pytest.raises(ValueError, match="^category_codes: 'w' is not a feature"):
        from_sklearn(est, category_codes={"w": [1, 2]})
    with pytest.raises(ValueError, match=r"^category_codes\['s'\]: the categories repeat"):
        from_sklearn(est, category_codes={"s": ["a", "b", "a"]})
    rf = _fit(ensemble.RandomForestRegressor(2, max_depth=2), X[:, [0, 2]], Y_REG)
    with pytest.raises(ValueError, match="^category_codes: RandomForestRegressor has no categorical"):
        from_sklearn(rf, category_codes={0: [1]})
    plain = _fit(ensemble.HistGradientBoostingRegressor(max_iter=2), X, Y_REG)
    with pytest.raises(ValueError, match="^category_codes: HistGradientBoostingRegressor has no categorical"):
        from_sklearn(plain, category_codes={1: [1]})


def test_verify_an_imported_categorical_model():
    est = _fit(ensemble.HistGradientBoostingClassifier(max_iter=6, max_leaf_nodes=8, categorical_features=CAT_COLUMNS,
                                                       random_state=0), X, Y_3)
    m = from_sklearn(est)
    R = _rows(X[:40], CAT_COLUMNS, [101, 6])
    rep = verify(m, R)
    assert rep.ok, rep.table()


def test_sklearn_json_round_trip(tmp_path):
    df, y, s_cats = _frame_data()
    est = _fit(ensemble.HistGradientBoostingClassifier(max_iter=5, random_state=0), df, y)
    codes = {"s": df["s"].cat.categories}
    text = to_json(est, tmp_path / "m.json", category_codes=codes)
    d = json.loads(text)
    assert d["version"] == 2 and any("category_sets" in t for t in d["trees"])
    assert d["category_inputs"] == {"s": s_cats, "i": "values"}
    got = from_sklearn_json(tmp_path / "m.json")
    assert got.hash() == from_sklearn(est, category_codes=codes).hash()
    assert got.metadata["source"]["category_inputs"] == {"s": s_cats, "i": "values"}
    with pytest.raises(IRError, match="^category_inputs: expected"):
        from_sklearn_json({**d, "category_inputs": {"s": 3}})
    # numeric-only models keep version 1
    assert json.loads(to_json(_fit(ensemble.HistGradientBoostingRegressor(max_iter=2), X, Y_REG)))["version"] == 1


def _damaged(d, edit):
    d = json.loads(json.dumps(d))
    edit(d)
    return d


def test_sklearn_json_damaged_categories_refused():
    est = _fit(ensemble.HistGradientBoostingRegressor(max_iter=4, categorical_features=CAT_COLUMNS,
                                                      random_state=0), X, Y_REG)
    d = json.loads(to_json(est))
    t = next(i for i, tr in enumerate(d["trees"]) if "category_sets" in tr)
    m = next(i for i, c in enumerate(d["trees"][t]["category_sets"]) if c is not None)
    for edit, field in [
        (lambda d: d.update(version=1), f"trees[{t}].category_sets"),
        (lambda d: [(tr.pop("category_sets", None), tr.pop("other_left", None)) for tr in d["trees"]], "version"),
        (lambda d: d["trees"][t].pop("category_sets"), f"trees[{t}].category_sets: missing"),
        (lambda d: d["trees"][t]["category_sets"].pop(), f"trees[{t}].category_sets"),
        (lambda d: d["trees"][t]["category_sets"].__setitem__(m, []), f"trees[{t}].category_sets[{m}]"),
        (lambda d: d["trees"][t]["category_sets"].__setitem__(m, [2 ** 32]), f"trees[{t}].category_sets[{m}]"),
        (lambda d: d["trees"][t]["other_left"].pop(), f"trees[{t}].other_left"),
    ]:
        with pytest.raises(IRError) as e:
            from_sklearn_json(_damaged(d, edit))
        assert str(e.value).startswith(field), (field, str(e.value))


def test_categorical_column_never_split_on_still_reorders():
    """A categorical column the trees never split on leaves no set split in
    the bank, yet the model reads its columns categorical-first: the
    numeric splits must land on the user's columns (before issue 34 the
    importer took the preprocessed positions as the user's)."""
    rng = np.random.default_rng(5)
    Xt = rng.normal(size=(N, 3)).astype(np.float32)
    Xt[:, 2] = rng.choice(np.float32([1, 2]), N)            # noise, last column
    est = _fit(ensemble.HistGradientBoostingRegressor(max_iter=8, max_leaf_nodes=6, categorical_features=[2],
                                                      random_state=0), Xt, 3 * Xt[:, 0] - 2 * Xt[:, 1])
    assert not any(p.nodes["is_categorical"].any() for it in est._predictors for p in it)
    m = from_sklearn(est)
    assert m.nodes[0].categories is None
    assert set(m.nodes[0].feature[m.nodes[0].feature >= 0].tolist()) == {0, 1}
    R = _rows(Xt, [2], 3)
    _check_parity(est, m, R, _finite_in(R, [2]))
    assert json.loads(to_json(est))["version"] == 1


def test_command_line_imports_categorical_sklearn_json(tmp_path):
    from skinflint import ir
    from skinflint.cli import main
    est = _fit(ensemble.HistGradientBoostingRegressor(max_iter=4, categorical_features=CAT_COLUMNS,
                                                      random_state=0), X, Y_REG)
    src, out = tmp_path / "hgb.json", tmp_path / "model.json"
    to_json(est, src)
    assert main(["import", str(src), "--from", "sklearn-json", "-o", str(out)]) == 0
    got = ir.load(out)
    assert got.hash() == from_sklearn(est).hash() and got.nodes[0].categories is not None
    R = _rows(X, CAT_COLUMNS, [101, 6])
    _check_parity(est, got, R, _finite_in(R, CAT_COLUMNS))
