import json

import numpy as np
import pytest
from sklearn.exceptions import NotFittedError

from skinflint import datasets, ir
from skinflint.runtimes.reference import predict
from skinflint.trainers import GreedyMiserClassifier, GreedyMiserRegressor
from skinflint.trainers.boosting.split_penalty import CostState


def fit_cls(ds, **kw):
    params = dict(n_estimators=60, max_depth=3, random_state=0, verbose=0,
                  feature_costs=ds.feature_costs, feature_names=ds.feature_names)
    params.update(kw)
    return GreedyMiserClassifier(**params).fit(ds.X, ds.y)


def test_cost_aware_matches_accuracy_at_a_third_of_the_cost():
    tr, te = datasets.make_cheap_vs_exact(4000, seed=0).split(0.5, seed=1)
    blind = fit_cls(tr, cost_tradeoff=0.0)
    miser = fit_cls(tr, cost_tradeoff=1e-3)
    a0, a1 = blind.score(te.X, te.y), miser.score(te.X, te.y)
    assert a1 >= a0 - 0.01, (a0, a1)
    assert miser.static_cost_ * 3 <= blind.static_cost_, (miser.static_cost_, blind.static_cost_)
    used = {miser.model_.features[j].name for j in miser.model_.features_used()}
    assert used <= {"cheap_a", "cheap_b", "cheap_c"}


def test_lambda_zero_ignores_costs_entirely():
    ds = datasets.make_cheap_vs_exact(1500, seed=3)
    a = fit_cls(ds, cost_tradeoff=0.0)
    b = fit_cls(ds, cost_tradeoff=0.0, feature_costs=np.arange(6.0) * 100)
    ta, tb = json.loads(ir.to_json(a.model_)), json.loads(ir.to_json(b.model_))
    assert ta["nodes"] == tb["nodes"]


def test_root_split_is_the_exhaustive_best_for_squared_loss():
    rng = np.random.default_rng(0)
    # 250 rows: fewer distinct values than bins, so every value is a candidate
    X = rng.normal(size=(250, 4)).astype(np.float32)
    y = np.sin(2 * X[:, 1]) + 0.5 * X[:, 3] + 0.1 * rng.normal(size=250)
    m = GreedyMiserRegressor(n_estimators=1, max_depth=1, min_samples_leaf=1, verbose=0,
                             learning_rate=1.0).fit(X, y)
    bank = m.model_.nodes[0]
    f, t = int(bank.feature[0]), float(bank.threshold[0])
    # brute force over every feature and every data value as threshold
    best = (np.inf, None, None)
    r = y - y.mean()
    for j in range(4):
        for v in np.unique(X[:, j])[:-1]:
            left = X[:, j] <= v
            sse = ((r[left] - r[left].mean()) ** 2).sum() + ((r[~left] - r[~left].mean()) ** 2).sum()
            if sse < best[0] - 1e-9:
                best = (sse, j, v)
    assert (f, np.float32(t)) == (best[1], np.float32(best[2]))
    # leaves are the means of the residuals (learning rate 1)
    left = X[:, f] <= t
    assert np.isclose(bank.value[bank.left[0], 0], r[left].mean(), rtol=1e-5)


def _best_ls_split(X, r):
    """Brute force: the feature and data value whose split leaves the least
    squared residual of ``r`` about the two sides' means (Eq. 2.5's fit)."""
    best = (np.inf, None, None)
    for j in range(X.shape[1]):
        for v in np.unique(X[:, j])[:-1]:
            left = X[:, j] <= v
            sse = ((r[left] - r[left].mean()) ** 2).sum() + ((r[~left] - r[~left].mean()) ** 2).sum()
            if sse < best[0] - 1e-9:
                best = (sse, j, v)
    return best[1], np.float32(best[2])


def test_least_squares_criterion_fits_the_negative_gradient_for_logistic_loss():
    rng = np.random.default_rng(4)
    X = rng.normal(size=(250, 4)).astype(np.float32)
    y = (X[:, 0] + 0.8 * X[:, 2] ** 2 + 0.5 * rng.normal(size=250) > 0.6).astype(int)
    kw = dict(n_estimators=2, max_depth=1, min_samples_leaf=1, verbose=0, learning_rate=1.0)
    ls = GreedyMiserClassifier(split_criterion="least_squares", **kw).fit(X, y)
    newton = GreedyMiserClassifier(**kw).fit(X, y)
    # tree 2 sees unequal hessians p(1 - p): there the two criteria part
    F1 = next(ls.staged_decision_function(X)).astype(np.float64)
    r = y - 1 / (1 + np.exp(-F1))          # the negative gradient of the log-loss
    t2 = ls.trees_[1][0]
    assert (int(t2["feature"][0]), np.float32(t2["threshold"][0])) == _best_ls_split(X, r)
    left = X[:, int(t2["feature"][0])] <= t2["threshold"][0]
    # leaves: the mean negative gradient on each side (float32 leaf, 1e-5 relative)
    assert np.isclose(t2["value"][int(t2["left"][0])], r[left].mean(), rtol=1e-5)
    n2 = newton.trees_[1][0]
    assert (int(n2["feature"][0]), float(n2["threshold"][0])) != (int(t2["feature"][0]), float(t2["threshold"][0]))


def test_least_squares_criterion_is_the_newton_one_for_squared_loss():
    ds = datasets.make_quadrant(600, seed=1)
    kw = dict(n_estimators=15, cost_tradeoff=1e-3, feature_costs=ds.feature_costs, random_state=0, verbose=0)
    a = GreedyMiserRegressor(**kw).fit(ds.X, ds.y).to_ir()
    b = GreedyMiserRegressor(split_criterion="least_squares", **kw).fit(ds.X, ds.y).to_ir()
    assert [n.to_dict() for n in a.nodes] == [n.to_dict() for n in b.nodes]
    with pytest.raises(ValueError, match="split_criterion"):
        GreedyMiserRegressor(split_criterion="gini", **kw).fit(ds.X, ds.y)


def test_estimator_predictions_equal_its_ir_everywhere(tmp_path):
    ds = datasets.load_breast_cancer()
    m = fit_cls(ds, cost_tradeoff=1e-4, feature_groups=ds.feature_groups, group_costs=ds.group_costs,
                subsample=0.8)
    ir.save(m.model_, tmp_path / "m.json")
    loaded = ir.load(tmp_path / "m.json")
    X = ds.X.copy()
    X[::7, 3] = np.nan
    ref = predict(loaded, X)
    np.testing.assert_array_equal(m.predict(X), ref.output)
    np.testing.assert_array_equal(m.predict_proba(X).view(np.uint32), ref.proba.view(np.uint32))
    np.testing.assert_array_equal(m.cost(X), ref.cost)
    staged = list(m.staged_decision_function(X))
    assert len(staged) == m.n_estimators_
    np.testing.assert_array_equal(staged[-1].view(np.uint32), ref.scores[:, 0].view(np.uint32))
    from skinflint.verify import verify
    report = verify(loaded, X[:200], runtimes=("c", "c-lazy"))
    assert report.ok, report.table()


def test_training_is_deterministic():
    ds = datasets.load_breast_cancer()
    kw = dict(cost_tradeoff=1e-4, subsample=0.7, random_state=42)
    a, b = fit_cls(ds, **kw), fit_cls(ds, **kw)
    assert ir.to_json(a.model_) == ir.to_json(b.model_)


def test_group_costs_make_siblings_cheap():
    st = CostState([1.0, 1.0, 5.0], [0, 0, -1], [10.0], scale=2.0)
    np.testing.assert_array_equal(st.penalty(), [22, 22, 10])
    st.pay(0)
    np.testing.assert_array_equal(st.penalty(), [0, 2, 10])


def test_groups_are_used_together_on_real_data():
    ds = datasets.load_breast_cancer()
    m = fit_cls(ds, cost_tradeoff=3e-3, feature_groups=ds.feature_groups, group_costs=ds.group_costs)
    used = m.model_.features_used()
    groups_used = {int(ds.feature_groups[j]) for j in used}
    # several statistics of few measurements: fewer groups than features
    assert len(groups_used) < len(used)
    assert m.score(ds.X, ds.y) > 0.9


def test_both_refund_timings_train_valid_models():
    ds = datasets.make_cheap_vs_exact(1500, seed=4)
    for refund in ("tree", "immediate"):
        m = fit_cls(ds, cost_tradeoff=1e-3, refund=refund)
        assert m.score(ds.X, ds.y) > 0.97


def test_feature_subset_baseline_uses_only_cheap_features():
    ds = datasets.make_cheap_vs_exact(1500, seed=5)
    m = fit_cls(ds, max_feature_cost=1.0)
    assert set(m.model_.features_used()) <= {3, 4, 5}


def test_early_stopping_on_a_validation_set():
    tr, va = datasets.make_xor10(1200, seed=0).split(0.3, seed=0)
    m = GreedyMiserClassifier(n_estimators=400, learning_rate=0.3, max_depth=3, n_iter_no_change=5,
                              verbose=0, random_state=0).fit(tr.X, tr.y, eval_set=(va.X, va.y))
    assert m.n_estimators_ < 400
    assert m.n_estimators_ == int(np.argmin(m.validation_loss_)) + 1


def test_multiclass_and_regression():
    from sklearn.datasets import load_digits
    d = load_digits()
    m = GreedyMiserClassifier(n_estimators=30, max_depth=3, verbose=0, random_state=0)
    m.fit(d.data[:1200], d.target[:1200])
    assert m.score(d.data[1200:], d.target[1200:]) > 0.85
    assert m.model_.task.kind == "multiclass" and m.model_.task.n_outputs == 10
    q = datasets.make_quadrant(2000, seed=0)
    r = GreedyMiserRegressor(n_estimators=80, max_depth=3, verbose=0, random_state=0,
                             feature_costs=q.feature_costs).fit(q.X, q.y)
    assert r.score(q.X, q.y) > 0.8


def test_squared_hinge_loss():
    ds = datasets.make_cheap_vs_exact(1500, seed=6)
    m = fit_cls(ds, loss="squared_hinge")
    assert m.model_.task.transform == "identity"
    assert m.score(ds.X, ds.y) > 0.97
    with pytest.raises(AttributeError, match="predict_proba"):
        m.predict_proba(ds.X)


@pytest.mark.parametrize("kw, words", [
    (dict(n_estimators=0), "n_estimators"), (dict(cost_tradeoff=-1), "cost_tradeoff"),
    (dict(refund="later"), "refund"), (dict(feature_costs=[1.0, 2.0]), "feature_costs"),
    (dict(max_depth=0), "max_depth"), (dict(subsample=1.5), "subsample"),
])
def test_bad_parameters_say_what_is_wrong(kw, words):
    ds = datasets.make_cheap_vs_exact(200)
    with pytest.raises(ValueError, match=words):
        GreedyMiserClassifier(verbose=0, **kw).fit(ds.X, ds.y)


def test_params_and_unfitted_errors():
    m = GreedyMiserClassifier(cost_tradeoff=0.5)
    assert m.get_params()["cost_tradeoff"] == 0.5
    m.set_params(max_depth=2)
    assert m.max_depth == 2
    with pytest.raises(ValueError, match="(?i)invalid parameter"):
        m.set_params(depth=3)
    # scikit-learn's NotFittedError, as its tools expect
    with pytest.raises(NotFittedError, match="not fitted"):
        m.predict(np.zeros((1, 3)))
    with pytest.raises(ValueError, match="infinity"):
        m.fit(np.array([[np.inf]]), [0])
