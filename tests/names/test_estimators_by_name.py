"""Every estimator matches named costs to a DataFrame's columns by name and
keeps the columns' names in its model (issue 32, item 1); predicting on the
same columns in another order raises scikit-learn's error (item 2)."""
import numpy as np
import pandas as pd
import pytest

from skinflint.ir import FeatureCosts
from skinflint.trainers import ESTIMATORS, GreedyMiserClassifier

COLUMNS = ["age", "income", "blood_test", "mri"]
# the issue's costs, listed in another order than the data's columns
COSTS = FeatureCosts.from_arrays([50.0, 10.0, 1.0, 1.0], names=["mri", "blood_test", "income", "age"])


def _data(regression=False):
    rng = np.random.default_rng(0)
    X = rng.normal(size=(120, 4)).astype(np.float32)
    y = X[:, 0] + X[:, 3] if regression else (X[:, 0] + X[:, 3] > 0).astype(np.int64)
    return pd.DataFrame(X, columns=COLUMNS), y


@pytest.mark.parametrize("cls", list(ESTIMATORS), ids=lambda c: c.__name__)
def test_named_costs_follow_the_columns_by_name(cls):
    df, y = _data(regression=not hasattr(cls, "predict_proba"))
    est = cls(**ESTIMATORS[cls].test_params, feature_costs=COSTS).fit(df, y)
    m = est.model_
    assert m.feature_names == COLUMNS
    assert dict(zip(m.feature_names, m.feature_costs.tolist())) == {
        "age": 1.0, "income": 1.0, "blood_test": 10.0, "mri": 50.0}
    # the same columns in another order: scikit-learn's own error, never a silent positional read
    with pytest.raises(ValueError, match="feature names should match"):
        est.predict(df[COLUMNS[::-1]])
    with pytest.warns(UserWarning, match="does not have valid feature names"):
        np.testing.assert_array_equal(est.predict(df), est.predict(df.to_numpy()))


def test_the_issue_example_costs_what_the_column_order_costs():
    df, y = _data()
    kw = dict(n_estimators=5, max_depth=2, random_state=0, verbose=0)
    by_name = GreedyMiserClassifier(feature_costs=COSTS, **kw).fit(df, y)
    in_order = GreedyMiserClassifier(feature_costs=FeatureCosts.from_arrays([1.0, 1.0, 10.0, 50.0]),
                                     **kw).fit(df, y)
    assert by_name.static_cost_ == in_order.static_cost_
    assert by_name.model_.hash() == in_order.model_.hash()


def test_unnamed_costs_on_named_columns_go_by_position_and_take_the_names():
    df, y = _data()
    est = GreedyMiserClassifier(feature_costs=[1.0, 2.0, 3.0, 4.0], n_estimators=3, verbose=0).fit(df, y)
    assert est.model_.feature_names == COLUMNS
    np.testing.assert_array_equal(est.model_.feature_costs, [1.0, 2.0, 3.0, 4.0])
    plain = GreedyMiserClassifier(n_estimators=3, verbose=0).fit(df, y)
    assert plain.model_.feature_names == COLUMNS and plain.model_.feature_costs.tolist() == [1.0] * 4


def test_a_name_on_one_side_only_is_an_error_listing_both_sides():
    df, y = _data()
    fc = FeatureCosts.from_arrays([1.0] * 4, names=["age", "income", "blood", "mri"])
    with pytest.raises(ValueError) as e:
        GreedyMiserClassifier(feature_costs=fc, n_estimators=3, verbose=0).fit(df, y)
    msg = str(e.value)
    assert "only in the costs: ['blood']" in msg and "only in X's columns: ['blood_test']" in msg
    assert "\n" not in msg


def test_numpy_data_keep_positional_costs_and_default_names():
    df, y = _data()
    est = GreedyMiserClassifier(feature_costs=COSTS, n_estimators=3, verbose=0).fit(df.to_numpy(), y)
    assert est.model_.feature_names == list(COSTS.names)
    np.testing.assert_array_equal(est.model_.feature_costs, COSTS.costs)
