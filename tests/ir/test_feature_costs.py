"""FeatureCosts: the one place cost rules are checked (issue 13, point 3)."""
import numpy as np
import pytest

from skinflint import datasets, ir
from skinflint.ir import FeatureCosts
from skinflint.trainers import GreedyMiserClassifier


def test_from_csv_numbers_groups_in_name_order_and_round_trips_through_a_model(tmp_path):
    path = tmp_path / "c.csv"
    path.write_text("name,cost,group\nb,2,zeta\na,0.5,\nc,1,alpha\ngroup:zeta,10\ngroup:alpha,3\n")
    fc = FeatureCosts.from_csv(path)
    assert fc.names == ("b", "a", "c") and fc.group_names == ("alpha", "zeta")
    np.testing.assert_array_equal(fc.groups, [1, -1, 0])
    np.testing.assert_array_equal(fc.group_costs, [3.0, 10.0])
    bank = ir.trees_from_arrays(feature=[0, -1, -1], threshold=[0.0, 0, 0], left=[1, -1, -1],
                                right=[2, -1, -1], value=[0, 1.0, 2.0])
    model = ir.model(fc.features(), [bank], 0, task=ir.regression_task(), groups=fc.ir_groups())
    assert FeatureCosts.from_model(model) == fc
    assert model.static_cost() == 2 + 10   # feature b and its group zeta


@pytest.mark.parametrize("text, words", [
    ("name,cost\na,-1\n", "finite and >= 0"),
    ("name,cost\na,x\n", "not a number"),
    ("name,cost,group\na,1,g\n", "without a 'group:NAME' cost row"),
    ("nom,prix\na,1\n", "expected a header"),
])
def test_from_csv_names_the_problem(tmp_path, text, words):
    path = tmp_path / "c.csv"
    path.write_text(text)
    with pytest.raises(ValueError, match=words):
        FeatureCosts.from_csv(path)


@pytest.mark.parametrize("kw, words", [
    (dict(costs=[1.0, np.inf]), "finite and >= 0"),
    (dict(costs=[1.0, 2.0], groups=[0, 0]), "group_costs has 0 entries"),
    (dict(costs=[1.0, 2.0], groups=[0]), "feature_groups"),
    (dict(costs=[1.0, 2.0], groups=[0, -1], group_costs=[-2.0]), "group_costs must be finite"),
    (dict(costs=[1.0, 2.0], names=["a"]), "feature_names: 1 names for 2 features"),
])
def test_from_arrays_refuses_bad_costs(kw, words):
    with pytest.raises(ValueError, match=words):
        FeatureCosts.from_arrays(**kw)


def test_reordered_follows_the_data_columns_and_refuses_strangers():
    fc = FeatureCosts.from_arrays([1.0, 2.0, 3.0], [0, -1, 0], [5.0], ["a", "b", "c"], ["g"])
    r = fc.reordered(["c", "a", "b"])
    np.testing.assert_array_equal(r.costs, [3.0, 1.0, 2.0])
    np.testing.assert_array_equal(r.groups, [0, 0, -1])
    with pytest.raises(ValueError, match="does not match"):
        fc.reordered(["a", "b", "z"])


def test_an_estimator_takes_a_feature_costs_value_or_arrays_and_builds_the_same_model():
    ds = datasets.load_breast_cancer()
    kw = dict(n_estimators=5, max_depth=2, cost_tradeoff=1e-3, random_state=0, verbose=0)
    a = GreedyMiserClassifier(feature_costs=ds.costs, **kw).fit(ds.X, ds.y)
    b = GreedyMiserClassifier(feature_costs=ds.feature_costs, feature_groups=ds.feature_groups,
                              group_costs=ds.group_costs, feature_names=ds.feature_names,
                              group_names=ds.group_names, **kw).fit(ds.X, ds.y)
    # same features, groups and trees: everything before the metadata (whose
    # params record how the costs were passed) is the same JSON
    assert ir.to_json(a.model_).split('"metadata"')[0] == ir.to_json(b.model_).split('"metadata"')[0]
    assert FeatureCosts.from_model(a.model_) == ds.costs
    with pytest.raises(ValueError, match="already holds feature_groups"):
        GreedyMiserClassifier(feature_costs=ds.costs, feature_groups=ds.feature_groups,
                              **kw).fit(ds.X, ds.y)
    with pytest.raises(ValueError, match="29 costs for 30 features"):
        GreedyMiserClassifier(feature_costs=ds.feature_costs[:-1], **kw).fit(ds.X, ds.y)
