"""The cost-weighted ℓ1 linear model: cheap features first, exact lazy cost."""
import numpy as np
import pytest

from skinflint.datasets import load_breast_cancer, make_cheap_vs_exact
from skinflint.ir.feature_costs import FeatureCosts
from skinflint.trainers.linear.sparse_linear import SparseLinearClassifier, penalty_weights


@pytest.fixture(scope="module")
def cheap_vs_exact():
    # three exact features (cost 20) and three noisy cheap ones (cost 1)
    return make_cheap_vs_exact(n=1000).split(0.3, seed=0)


def test_cost_weighting_prefers_cheap_features(cheap_vs_exact):
    tr, te = cheap_vs_exact
    # measured at C = 0.03: weighted keeps cheap_b only (cost 1, accuracy
    # 0.99); plain ℓ1 keeps exact_a, exact_b, cheap_b (cost 41, 0.987)
    w = SparseLinearClassifier(C=0.03, feature_costs=tr.costs).fit(tr.X, tr.y)
    p = SparseLinearClassifier(C=0.03, cost_weighted=False, feature_costs=tr.costs).fit(tr.X, tr.y)
    assert w.cost(te.X).mean() < p.cost(te.X).mean() / 10
    assert w.score(te.X, te.y) >= p.score(te.X, te.y) - 0.01
    assert set(np.flatnonzero(w.coef_[0])) <= {3, 4, 5}


def test_zero_weights_are_never_paid(cheap_vs_exact):
    tr, te = cheap_vs_exact
    e = SparseLinearClassifier(C=0.1, cost_weighted=False, feature_costs=tr.costs).fit(tr.X, tr.y)
    used = np.flatnonzero(e.coef_[0].astype(np.float32) != 0)
    assert 0 < used.size < 6 and e.n_features_used_ == used.size
    np.testing.assert_array_equal(e.cost(te.X), np.full(te.X.shape[0], tr.feature_costs[used].sum()))
    # the IR margin is the folded raw-feature model (float32 evaluation)
    f64 = te.X.astype(np.float64) @ e.coef_[0] + e.intercept_[0]
    assert np.mean(np.sign(e.decision_function(te.X)) == np.sign(f64)) >= 0.995


def test_penalty_weights_share_group_costs():
    fc = FeatureCosts.from_arrays([1.0, 2.0, 0.0, 0.0], groups=[0, 0, 1, -1], group_costs=[4.0, 3.0])
    np.testing.assert_allclose(penalty_weights(fc), [3.0, 4.0, 3.0, 1e-3 * (3.0 + 4.0 + 3.0) / 3])
    np.testing.assert_array_equal(penalty_weights(FeatureCosts.uniform(3, 0.0)), np.ones(3))


def test_multiclass_and_errors():
    ds = load_breast_cancer()
    X, y = ds.X, ds.y.copy()
    y[:100] = 2
    e = SparseLinearClassifier(C=0.5).fit(X, y)
    assert e.model_.task.n_outputs == 3 and e.predict(X[:5]).shape == (5,)
    with pytest.raises(ValueError, match="C must be"):
        SparseLinearClassifier(C=0.0).fit(X, y)
