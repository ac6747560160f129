"""FeatureCosts: the one place cost rules are checked (issue 13, point 3)."""
import numpy as np
import pytest

from skinflint import datasets, ir
from skinflint.ir import FeatureCosts
from skinflint.ir.feature_costs import column_order, match_columns
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
    ("name,cost\na,1\nb,2\na,3\n", "line 4: duplicate name 'a' \\(first on line 2\\)"),
    ("name,cost\n,1\n", "line 2: empty name"),
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
    with pytest.raises(ValueError, match=r"only in the costs: \['c'\]; only in the data's columns: \['z'\]"):
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


def test_match_columns_states_one_rule():
    named = FeatureCosts.from_arrays([1.0, 2.0, 3.0], [0, -1, 0], [5.0], ["a", "b", "c"], ["g"])
    # named costs, named columns: by name, in the columns' order
    r = match_columns(named, ["c", "a", "b"])
    assert r.names == ("c", "a", "b") and r.costs.tolist() == [3.0, 1.0, 2.0] and r.groups.tolist() == [0, 0, -1]
    assert match_columns(named, ["a", "b", "c"]) is named
    # unnamed costs on named columns: by position, named after the columns
    r = match_columns(FeatureCosts.from_arrays([1.0, 2.0, 3.0]), ["c", "a", "b"])
    assert r.names == ("c", "a", "b") and r.costs.tolist() == [1.0, 2.0, 3.0]
    # no names on the data: by position, the costs' names kept
    assert match_columns(named, None, 3) is named
    # explicit positional matching keeps the costs' names
    assert match_columns(named, ["u", "v", "w"], by_position=True) is named
    # no costs: unit costs named after the columns
    r = match_columns(None, ["p", "q"])
    assert r.names == ("p", "q") and r.costs.tolist() == [1.0, 1.0]
    with pytest.raises(ValueError, match=r"only in the costs: \['c'\]; only in the data's columns: \[\]"):
        match_columns(named, ["a", "b"])
    with pytest.raises(ValueError, match="3 costs for 2 features"):
        match_columns(named, None, 2)
    with pytest.raises(ValueError, match="3 costs for 2 features"):
        match_columns(FeatureCosts.uniform(3), ["a", "b"])
    with pytest.raises(ValueError, match="duplicate name 'a'"):
        match_columns(named, ["a", "a", "b"])


def test_costs_named_like_the_defaults_follow_columns_of_those_names():
    """A cost file naming x0, x1 on data whose columns are x1, x0: by name,
    not by position (the default names are names when the columns use them)."""
    costs = FeatureCosts.from_arrays([1.0, 5.0], names=["x0", "x1"])
    r = match_columns(costs, ["x1", "x0"])
    assert r.names == ("x1", "x0") and r.costs.tolist() == [5.0, 1.0]


def test_column_order_reads_a_header_by_name():
    assert column_order(["a", "b", "c"], ["c", "a", "b"]).tolist() == [1, 2, 0]
    # one extra column, last: a label, left out
    assert column_order(["a", "b", "c"], ["b", "c", "a", "label"]).tolist() == [2, 0, 1]
    # a model without names reads by position
    assert column_order(["x0", "x1"], ["u", "v", "y"]).tolist() == [0, 1]
    with pytest.raises(ValueError, match=r"missing \['c'\]; not in the model: \['z'\]"):
        column_order(["a", "b", "c"], ["a", "b", "z"])
    with pytest.raises(ValueError, match=r"missing \[\]; not in the model: \['u', 'label'\]"):
        column_order(["a", "b"], ["u", "a", "b", "label"])
    with pytest.raises(ValueError, match="3 columns, but the model has 1 features"):
        column_order(["x0"], ["u", "v", "w"])
