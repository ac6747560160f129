"""sklearn-json (issue 19): a pickle-free file of a scikit-learn tree model.
Written from Python, read without scikit-learn, by the API and by
``skinflint import --from sklearn-json``; the model is the one from_sklearn
makes (same hash), so its margins are scikit-learn's bit for bit.  The
command line refuses pickles with a message saying what to do instead."""
import json

import numpy as np
import pytest
from sklearn import ensemble, linear_model, tree

from skinflint import ir
from skinflint.cli import main
from skinflint.importers import from_sklearn, from_sklearn_json
from skinflint.importers.sklearn_json import to_json
from skinflint.runtimes.reference import ReferenceRuntime

from ._rows import check_rows, data, same_bits64

X, Y_BIN, Y_REG, Y_3 = data(n=200)
CSV = "name,cost,group\n" + "".join(f"x{i},{i + 1},{'g' if i % 2 else ''}\n" for i in range(6)) + "group:g,4,\n"

ESTIMATORS = [
    tree.DecisionTreeClassifier(max_depth=4, random_state=0),
    ensemble.RandomForestRegressor(5, max_depth=3, random_state=0),
    ensemble.GradientBoostingClassifier(n_estimators=5, max_depth=2, random_state=0),
    ensemble.HistGradientBoostingClassifier(max_iter=5, random_state=0),
]


def _fit(est):
    Xt = np.nan_to_num(X) if isinstance(est, ensemble.GradientBoostingClassifier) else X
    y = Y_REG if "Regressor" in type(est).__name__ else Y_3
    return est.fit(Xt, y), Xt


@pytest.mark.parametrize("est", ESTIMATORS, ids=lambda e: type(e).__name__)
def test_round_trip_is_from_sklearns_model(tmp_path, est):
    est, Xt = _fit(est)
    path = tmp_path / "m.json"
    text = to_json(est, path)
    if isinstance(est, tree.DecisionTreeClassifier):     # NaN-only splits: infinite thresholds
        assert '"inf"' in text or '"-inf"' in text
    got, want = from_sklearn_json(path), from_sklearn(est)
    assert got.hash() == want.hash()
    R = check_rows(got, Xt)
    if not np.isnan(Xt).any():
        R = R[~np.isnan(R).any(1)]
    scores = ReferenceRuntime(got).predict(R).scores
    sk = est.predict_proba(R) if isinstance(est, tree.DecisionTreeClassifier) else (
        est.predict(R) if "Regressor" in type(est).__name__ else est.decision_function(R))
    assert same_bits64(scores, np.asarray(sk, np.float64).reshape(scores.shape))


def test_command_line_import_with_costs(tmp_path, capsys):
    est, _ = _fit(ensemble.RandomForestRegressor(5, max_depth=3, random_state=0))
    src, costs, out = tmp_path / "rf.json", tmp_path / "costs.csv", tmp_path / "model.json"
    to_json(est, src)
    costs.write_text(CSV)
    assert main(["import", str(src), "--from", "sklearn-json", "--costs", str(costs), "-o", str(out)]) == 0
    got = ir.load(out)
    assert got.hash() == from_sklearn(est, str(costs)).hash()
    assert np.array_equal(got.feature_costs, np.arange(1.0, 7.0)) and [g.cost for g in got.groups] == [4.0]
    assert "bit for bit" in capsys.readouterr().out


def test_command_line_refuses_pickles_and_says_what_to_do(tmp_path, capsys):
    assert main(["import", str(tmp_path / "m.pkl"), "--from", "sklearn", "-o", str(tmp_path / "o.json")]) == 1
    err = capsys.readouterr().err
    assert err.startswith("skinflint: error:") and "pickle" in err and "--from sklearn-json" in err


def test_linear_models_have_no_sklearn_json():
    with pytest.raises(ValueError, match="from_sklearn"):
        to_json(linear_model.Ridge().fit(np.nan_to_num(X), Y_REG))


@pytest.mark.parametrize("edit,field", [
    (lambda d: d.update(format="pickle"), "format"),
    (lambda d: d.update(version=2), "version"),
    (lambda d: d.pop("trees"), "trees"),
    (lambda d: d.update(trees=[]), "trees"),
    (lambda d: d["trees"][0]["left"].__setitem__(0, 10**6), "trees[0].left[0]"),
    (lambda d: d["trees"][0]["feature"].__setitem__(0, 99), "trees[0].feature[0]"),
    (lambda d: d["trees"][0]["value"].pop(), "trees[0].value"),
    (lambda d: d["trees"][0]["threshold"].__setitem__(0, "1"), "trees[0].threshold[0]"),
    (lambda d: d.update(divisor=0.0), "divisor"),
    (lambda d: d["task"].update(kind="ranking"), "task.kind"),
    (lambda d: d.update(base_score=[0.0, 1.0]), "base_score"),
    # a regression has the identity transform and no classes (were ignored)
    (lambda d: d["task"].update(transform="softmax"), "task.transform"),
    (lambda d: d["task"].update(classes=[0, 1]), "task.classes"),
    (lambda d: d["task"].update(kind="multiclass", classes=[3]), "task.classes"),
    (lambda d: d["task"].update(kind="binary", classes=[0, 1], transform="logistic", n_outputs=2),
     "task.n_outputs"),
])
def test_malformed_files_refused_naming_the_field(tmp_path, edit, field, capsys):
    est, _ = _fit(ensemble.RandomForestRegressor(3, max_depth=3, random_state=0))
    d = json.loads(to_json(est))
    edit(d)
    with pytest.raises(ir.IRError) as e:
        from_sklearn_json(d)
    assert str(e.value).startswith(field)
    path = tmp_path / "bad.json"
    path.write_text(json.dumps(d))
    assert main(["import", str(path), "--from", "sklearn-json", "-o", str(tmp_path / "o.json")]) == 1
    assert capsys.readouterr().err.startswith("skinflint: error:")


def test_not_json_and_missing_file(tmp_path):
    bad = tmp_path / "bad.json"
    bad.write_text("{not json")
    with pytest.raises(ir.IRError, match="not valid JSON"):
        from_sklearn_json(bad)
    bad.write_text('{"format": "skinflint-sklearn-json", "x": NaN}')
    with pytest.raises(ir.IRError, match="NaN is not allowed"):
        from_sklearn_json(bad)
    with pytest.raises(FileNotFoundError, match="no such sklearn-json file"):
        from_sklearn_json(tmp_path / "none.json")


def test_malformed_tree_named_with_its_own_node_index():
    est, _ = _fit(ensemble.RandomForestRegressor(3, max_depth=3, random_state=0))
    d = json.loads(to_json(est))
    t = d["trees"][2]
    j = t["feature"].index(-1)                 # tree 2's first leaf, local index
    t["left"][j] = 0
    with pytest.raises(ir.IRError) as e:
        from_sklearn_json(d)
    assert str(e.value).startswith(f"trees[2].left/right[{j}]: a leaf"), str(e.value)
    d = json.loads(to_json(est))
    t = d["trees"][1]
    k = t["feature"].index(-1)
    t["left"][0] = k                           # root's two children the same leaf: node k has 2 parents
    t["right"][0] = k
    with pytest.raises(ir.IRError) as e:
        from_sklearn_json(d)
    assert str(e.value).startswith("trees[1]: tree node"), str(e.value)
    # a tree of the bank at float32's edge: named as the tree's own value
    d = json.loads(to_json(est))
    d["trees"][1]["value"][k] = 1e39
    with pytest.raises(ir.IRError, match=rf"^trees\[1\]\.value\[{k}\]: .*float32's range"):
        from_sklearn_json(d)
