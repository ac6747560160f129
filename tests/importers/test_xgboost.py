"""XGBoost import: margins equal XGBoost's output_margin bit for bit on test
and adversarial rows, and every backend equals the reference (verify)."""
import numpy as np
import pytest

xgb = pytest.importorskip("xgboost")

from skinflint.importers.xgboost import from_xgboost  # noqa: E402
from skinflint.ir import FeatureCosts, from_json, to_json  # noqa: E402
from skinflint.runtimes.reference import ReferenceRuntime  # noqa: E402
from skinflint.verify import verify  # noqa: E402

from ._rows import check_rows, data, same_bits  # noqa: E402

X, Y_BIN, Y_REG, Y_3 = data()
VERIFIED = ("binary:logitraw", "reg:squarederror", "multi:softprob")


def _margins(booster, R):
    return booster.predict(xgb.DMatrix(R), output_margin=True).reshape(len(R), -1)


@pytest.mark.parametrize("params,y", [
    ({"objective": "binary:logistic"}, Y_BIN),
    ({"objective": "binary:logistic", "base_score": 0.3}, Y_BIN),
    ({"objective": "binary:logitraw"}, Y_BIN),
    ({"objective": "reg:squarederror"}, Y_REG),
    ({"objective": "reg:absoluteerror"}, Y_REG),
    ({"objective": "multi:softprob", "num_class": 3}, Y_3),
    ({"objective": "binary:logistic", "tree_method": "exact"}, Y_BIN),
    ({"objective": "binary:logistic", "grow_policy": "lossguide", "max_leaves": 12}, Y_BIN),
], ids=["logistic", "base_score", "logitraw", "squared", "absolute", "softprob", "exact", "lossguide"])
def test_margins_bit_exact(params, y):
    b = xgb.train({"max_depth": 4, "eta": 0.3, "nthread": 1, **params}, xgb.DMatrix(X, label=y), 15)
    m = from_xgboost(b)
    R = check_rows(m, X)
    pred = ReferenceRuntime(m).predict(R)
    assert same_bits(pred.scores, _margins(b, R))
    if params["objective"] in VERIFIED:       # every backend, once per model family
        rep = verify(m, X[:64])
        assert rep.ok, rep.table()
    # the saved model is the same model
    assert same_bits(ReferenceRuntime(from_json(to_json(m))).predict(R).scores, pred.scores)


def test_sklearn_wrapper_labels_probabilities_and_model_files(tmp_path):
    clf = xgb.XGBClassifier(n_estimators=10, max_depth=3, n_jobs=1).fit(X, Y_3)
    costs = FeatureCosts.from_arrays(np.arange(1.0, 7.0))
    assert from_xgboost(clf, costs).task.classes == (0, 1, 2)
    m = from_xgboost(clf, costs, classes=("a", "b", "c"))
    pred = ReferenceRuntime(m).predict(X)
    assert np.array_equal(pred.output, np.array(["a", "b", "c"])[clf.predict(X)])
    assert np.array_equal(m.feature_costs, np.arange(1.0, 7.0))
    # probabilities: the IR's portable softmax against XGBoost's; both are
    # float32 softmaxes of the same margins: a few ulps apart (docs/importers.md)
    assert np.max(np.abs(pred.proba - clf.predict_proba(X))) < 1e-6
    for ext in ("json", "ubj"):
        path = tmp_path / f"m.{ext}"
        clf.get_booster().save_model(path)
        assert same_bits(ReferenceRuntime(from_xgboost(path, costs)).predict(X).scores, pred.scores)


def test_feature_names_reorder_costs(tmp_path):
    names = [f"c{i}" for i in range(6)]
    b = xgb.train({"max_depth": 2, "nthread": 1}, xgb.DMatrix(X, label=Y_REG, feature_names=names), 3)
    rev = FeatureCosts.from_arrays(np.arange(6.0)[::-1], names=names[::-1])
    m = from_xgboost(b, rev)
    assert m.feature_names == names
    assert np.array_equal(m.feature_costs, np.arange(6.0))


def test_base_margin_replaces_the_base_score():
    b = xgb.train({"objective": "binary:logistic", "max_depth": 3, "nthread": 1}, xgb.DMatrix(X, label=Y_BIN), 5)
    m = from_xgboost(b, base_margin=0.25)
    want = b.predict(xgb.DMatrix(X, base_margin=np.full(len(X), 0.25)), output_margin=True)
    assert same_bits(ReferenceRuntime(m).predict(X).scores[:, 0], want)


@pytest.mark.parametrize("params,match", [
    ({"booster": "dart", "rate_drop": 0.2}, "DART"),
    ({"booster": "gblinear", "max_depth": None}, "gblinear"),
    ({"objective": "count:poisson"}, "raw_margin=True"),
])
def test_refused_with_a_message(params, match):
    params = {k: v for k, v in {"max_depth": 2, "nthread": 1, **params}.items() if v is not None}
    b = xgb.train(params, xgb.DMatrix(X, label=np.abs(Y_REG)), 3)
    with pytest.raises(ValueError, match=match):
        from_xgboost(b)


def test_raw_margin_imports_poisson_margins():
    b = xgb.train({"max_depth": 3, "objective": "count:poisson", "nthread": 1}, xgb.DMatrix(X, label=np.abs(Y_REG)), 5)
    m = from_xgboost(b, raw_margin=True)
    assert same_bits(ReferenceRuntime(m).predict(X).scores, _margins(b, X))


def test_sklearn_wrapper_early_stopping_keeps_the_best_iteration():
    clf = xgb.XGBRegressor(n_estimators=60, max_depth=3, learning_rate=0.5, n_jobs=1,
                           early_stopping_rounds=2).fit(X[:200], Y_REG[:200], eval_set=[(X[200:], Y_REG[200:])],
                                                        verbose=False)
    assert clf.best_iteration + 1 < 60                # it stopped early
    m = from_xgboost(clf)
    assert m.nodes[0].n_trees == clf.best_iteration + 1
    assert same_bits(ReferenceRuntime(m).predict(X).scores[:, 0], clf.predict(X, output_margin=True))
