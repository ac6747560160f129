"""Importers match the source model's feature names to the costs by the rule
training follows (issue 32 item 1), and take ``feature_costs=`` (issue 25)."""
import numpy as np
import pandas as pd
import pytest
from sklearn.tree import DecisionTreeRegressor

from skinflint.importers import from_lightgbm, from_sklearn, from_sklearn_json, from_xgboost
from skinflint.importers.sklearn_json import to_json
from skinflint.ir import FeatureCosts

COLS = ["age", "income", "blood_test", "mri"]
REVERSED = FeatureCosts.from_arrays([50.0, 10.0, 1.0, 1.0], names=COLS[::-1])
STRANGER = FeatureCosts.from_arrays([50.0, 10.0, 1.0, 1.0], names=["mri", "blood", "income", "age"])


def _df():
    rng = np.random.default_rng(0)
    X = rng.normal(size=(200, 4))
    return pd.DataFrame(X, columns=COLS), X[:, 0] + X[:, 3]


def _lightgbm():
    lgb = pytest.importorskip("lightgbm")
    df, y = _df()
    return lgb.train({"objective": "regression", "verbose": -1, "num_threads": 1}, lgb.Dataset(df, y), 3)


def _xgboost():
    xgb = pytest.importorskip("xgboost")
    df, y = _df()
    return xgb.train({"max_depth": 2, "nthread": 1}, xgb.DMatrix(df, label=y), 3)


def _sklearn():
    df, y = _df()
    return DecisionTreeRegressor(max_depth=3, random_state=0).fit(df, y)


def _sklearn_json(tmp_path):
    path = tmp_path / "dt.json"
    to_json(_sklearn(), path)
    return path


SOURCES = {"lightgbm": (_lightgbm, from_lightgbm), "xgboost": (_xgboost, from_xgboost),
           "sklearn": (_sklearn, from_sklearn), "sklearn-json": (_sklearn_json, from_sklearn_json)}


def _source(name, tmp_path):
    make, importer = SOURCES[name]
    return (make(tmp_path) if name == "sklearn-json" else make()), importer


@pytest.mark.parametrize("name", SOURCES)
def test_names_are_the_key_and_a_mismatch_is_refused_unless_positional(name, tmp_path):
    src, importer = _source(name, tmp_path)
    m = importer(src, REVERSED)
    assert m.feature_names == COLS
    assert m.feature_costs.tolist() == [1.0, 1.0, 10.0, 50.0]
    with pytest.raises(ValueError) as e:
        importer(src, STRANGER)
    assert "only in the costs: ['blood']" in str(e.value)
    assert "only in the source model's feature names: ['blood_test']" in str(e.value)
    # the user's explicit choice: by position, the costs' names kept
    m = importer(src, STRANGER, by_position=True)
    assert m.feature_names == list(STRANGER.names) and m.feature_costs.tolist() == [50.0, 10.0, 1.0, 1.0]
    # costs without names take the model's names, by position
    m = importer(src, [1.0, 2.0, 3.0, 4.0])
    assert m.feature_names == COLS and m.feature_costs.tolist() == [1.0, 2.0, 3.0, 4.0]


@pytest.mark.parametrize("name", SOURCES)
def test_costs_is_the_former_spelling_of_feature_costs(name, tmp_path):
    src, importer = _source(name, tmp_path)
    with pytest.warns(DeprecationWarning, match=r"\(costs=...\) is deprecated: write feature_costs="):
        old = importer(src, costs=REVERSED)
    assert old.hash() == importer(src, feature_costs=REVERSED).hash()
    with pytest.raises(TypeError, match="not both"), pytest.warns(DeprecationWarning):
        importer(src, feature_costs=REVERSED, costs=REVERSED)


def test_lightgbm_column_names_it_made_up_are_no_names():
    lgb = pytest.importorskip("lightgbm")
    df, y = _df()
    b = lgb.train({"objective": "regression", "verbose": -1, "num_threads": 1},
                  lgb.Dataset(df.to_numpy(), y), 3)
    m = from_lightgbm(b, REVERSED)      # Column_0..3 are LightGBM's, not the user's: by position
    assert m.feature_names == list(REVERSED.names)
    assert from_lightgbm(b).feature_names == [f"Column_{i}" for i in range(4)]
