"""CVM (thesis Ch. 4) and LARS-SVM: the LAR order against scikit-learn, the
gradient of eq. 4.10, the thesis' synthetic claim (Fig. 4.2), budgets,
determinism and exact parity of trained models."""
import numpy as np
import pytest
from sklearn.base import clone
from sklearn.frozen import FrozenEstimator
from sklearn.linear_model import lars_path_gram

from skinflint import ir
from skinflint.datasets import make_noisy_circle
from skinflint.trainers.kernels.cvm import CVMClassifier, LARSSVMClassifier, n_vectors
from skinflint.trainers.kernels.gradient_svs import cvm_loss_grad, prefix_order
from skinflint.trainers.kernels.kernel_math import kernel_matrix
from skinflint.trainers.kernels.kernel_svm import KernelSVMClassifier
from skinflint.trainers.kernels.lars import lars_path_lazy
from skinflint.trainers.kernels.reduced_svm import ReducedSVMClassifier


@pytest.fixture(scope="module")
def circle():
    return make_noisy_circle()


@pytest.fixture(scope="module")
def full_svm(circle):
    # the thesis' regime (§4.5: 248 SVs of 600 rows): C = 0.1, gamma = 0.5 gives 239
    return KernelSVMClassifier(C=0.1, gamma=0.5, standardize=False).fit(circle.X, circle.y)


def _accuracy(est, ds, budget=None):
    return float(np.mean(est.predict(ds.X, budget=budget) == ds.y))


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_lar_order_equals_sklearn_lars_path_gram(seed):
    # a random PSD Gram matrix (n = 200 regressors) and correlations
    rng = np.random.default_rng(seed)
    A = rng.normal(size=(260, 200))
    G, Xy = A.T @ A, A.T @ (A[:, :12] @ rng.normal(size=12) + rng.normal(size=260))
    _, active, coefs = lars_path_gram(Xy, G, n_samples=260, method="lar", max_iter=30)
    calls = []
    res = lars_path_lazy(Xy, lambda j: calls.append(j) or G[:, j], np.diag(G), 30)
    assert list(res.active) == list(active[:30])
    # only the Gram columns of entering regressors are formed (the lazy Gram)
    assert sorted(calls) == sorted(res.active)
    # the coefficients are the path's at the step where the 30th enters
    # (sklearn's column 29); both are float64 solves of the same 29x29
    # system by different factorisations: 1e-9 relative is far above their
    # rounding and far below any step of the path
    np.testing.assert_allclose(res.coef, coefs[res.active, 29], rtol=0, atol=1e-9 * np.abs(coefs).max())


@pytest.mark.parametrize("m", [5, 12, 25])
def test_lar_invariant_on_a_cvm_gram(full_svm, m):
    # CVM's own Gram G = K K + K (thesis eq. 4.7) is near-singular (rbf
    # kernel rows, condition ~1e16), where sklearn's path stops decreasing
    # its alphas after 5 steps; check LAR's defining property instead: when
    # the m-th regressor enters, every active |correlation| is the maximum
    # and no inactive one exceeds it (Efron et al. 2004, eq. 2.15)
    S = full_svm.support_vectors_.astype(np.float64)[:150]
    K = kernel_matrix(S, S, "rbf", full_svm.gamma_)
    G = K @ K + K
    Xy = K @ np.sign(full_svm.dual_coef_[:150, 0])
    res = lars_path_lazy(Xy, lambda j: G[:, j], np.diag(G), m)
    assert len(res.active) == m == len(set(res.active.tolist()))
    c = Xy - G[:, res.active] @ res.coef
    top = np.abs(c[res.active])
    inactive = np.delete(np.abs(c), res.active)
    # relative 1e-6: the active correlations come from m float64 solves of
    # a system with condition up to ~1e8 on its active block
    assert np.ptp(top) <= 1e-6 * top.max()
    assert inactive.max() <= top.max() * (1 + 1e-6)


@pytest.mark.parametrize("K", [1, 3])
def test_gradient_of_eq_4_10_matches_finite_differences(K):
    rng = np.random.default_rng(0)
    XE, T = rng.normal(size=(40, 3)), rng.normal(size=(40, K))
    m, gamma = 4, 0.7
    theta = np.concatenate([rng.normal(size=m * 3), rng.normal(size=m * K)])
    _, g = cvm_loss_grad(theta, XE, T, m, gamma)
    h = 1e-6
    fd = np.array([(cvm_loss_grad(theta + h * e, XE, T, m, gamma)[0]
                    - cvm_loss_grad(theta - h * e, XE, T, m, gamma)[0]) / (2 * h)
                   for e in np.eye(theta.size)])
    # central differences: error O(h^2) ~ 1e-12 plus rounding ~1e-16 / h = 1e-10
    np.testing.assert_allclose(g, fd, rtol=1e-6, atol=1e-8)


def test_prefix_order_first_vector_is_the_best_single_one():
    rng = np.random.default_rng(1)
    KEZ, B, T = rng.uniform(size=(30, 6)), rng.normal(size=(6, 1)), rng.normal(size=(30, 1))
    order = prefix_order(KEZ, B, T)
    assert sorted(order) == list(range(6))
    single = [np.sum((KEZ[:, [j]] @ B[[j]] - T) ** 2) for j in range(6)]
    assert order[0] == int(np.argmin(single))
    best_pair = min(np.sum((KEZ[:, [order[0], j]] @ B[[order[0], j]] - T) ** 2)
                    for j in range(6) if j != order[0])
    assert np.isclose(np.sum((KEZ[:, order[:2]] @ B[order[:2]] - T) ** 2), best_pair)


def test_n_vectors_counts_and_fractions():
    assert n_vectors(8, 239) == 8
    assert n_vectors(0.1, 239) == 24
    assert n_vectors(0.001, 239) == 1
    assert n_vectors(500, 239) == 239
    for bad in (0, 0.0, 1.5, -3, "10"):
        with pytest.raises(ValueError, match="n_support_vectors"):
            n_vectors(bad, 239)


def test_fig_4_2_eight_moved_vectors_match_the_full_svm(circle, full_svm):
    # thesis §4.5, Fig. 4.2: 600 points, 8 vectors (3 % of ~240); the moved
    # vectors reach the full SVM's decision boundary.  Measured: full 0.945,
    # CVM 0.937 on the training rows (the thesis' setting).
    assert full_svm.n_support_ >= 150
    cvm = CVMClassifier(n_support_vectors=8, svm=full_svm).fit(circle.X, circle.y)
    assert cvm.n_support_ == 8
    assert _accuracy(cvm, circle) >= _accuracy(full_svm, circle) - 0.01
    # the moved vectors are not training rows any more
    S = full_svm.support_vectors_
    moved = [not np.any(np.all(S == z, axis=1)) for z in cvm.support_vectors_]
    assert all(moved)
    # and moving them lowered the gap to the full predictions (eq. 4.10)
    lars = LARSSVMClassifier(n_support_vectors=8, svm=full_svm, lars_target="predictions").fit(circle.X, circle.y)
    assert cvm.loss_ < 0.5 * lars.loss_


def test_budget_truncation_keeps_a_good_prefix(circle, full_svm):
    # 2 features (cost 1 each) + 1 per vector: a budget of 6 keeps 4 of 8
    # vectors.  Measured: greedy order 0.925, LARS entry order 0.50.
    greedy = CVMClassifier(n_support_vectors=8, svm=full_svm, order="greedy").fit(circle.X, circle.y)
    entry = CVMClassifier(n_support_vectors=8, svm=full_svm, order="selection").fit(circle.X, circle.y)
    assert np.all(greedy.cost(circle.X, budget=6.0) == 6.0)
    assert greedy.static_cost_ == 10.0
    assert _accuracy(greedy, circle, budget=6.0) >= _accuracy(greedy, circle) - 0.03
    assert _accuracy(greedy, circle, budget=6.0) > _accuracy(entry, circle, budget=6.0) + 0.1
    # a budget stops after the last vector it can pay for: the margin is
    # the bias plus the first k terms, in the IR's order
    node = greedy.model_.nodes[0]
    k2 = greedy.decision_function(circle.X[:5], budget=4.0)
    Xf = circle.X[:5].astype(np.float32)
    want = np.full(5, node.bias[0], np.float32)
    for s in range(2):
        d = Xf - node.support_vectors[s]
        acc = np.float32(0) + d[:, 0] * d[:, 0]
        acc = acc + d[:, 1] * d[:, 1]
        kv = np.exp(-np.float64(node.gamma) * acc.astype(np.float64))
        want = want + node.alpha[s, 0] * kv.astype(np.float32)
    # expf is the project's own float32 exp (<= 1 ulp from libm's): compare
    # with a float32 tolerance of a few ulp of the terms
    np.testing.assert_allclose(k2, want, rtol=0, atol=1e-5)


def test_lars_svm_and_cvm_differ_by_moving_only(circle, full_svm):
    lars = LARSSVMClassifier(n_support_vectors=8, svm=full_svm).fit(circle.X, circle.y)
    # LARS-SVM keeps training rows as its vectors
    S = full_svm.support_vectors_
    assert all(np.any(np.all(S == z, axis=1)) for z in lars.support_vectors_)
    assert lars.model_.metadata["trainer"] == "LARSSVMClassifier"


def test_determinism_same_bytes(circle, full_svm):
    a = CVMClassifier(n_support_vectors=6, svm=full_svm, max_iter=50).fit(circle.X, circle.y)
    b = CVMClassifier(n_support_vectors=6, svm=full_svm, max_iter=50).fit(circle.X, circle.y)
    assert ir.to_json(a.model_) == ir.to_json(b.model_)
    c = CVMClassifier(n_support_vectors=6, C=0.1, gamma=0.5, standardize=False, max_iter=50,
                      random_state=3).fit(circle.X, circle.y)
    d = CVMClassifier(n_support_vectors=6, C=0.1, gamma=0.5, standardize=False, max_iter=50,
                      random_state=3).fit(circle.X, circle.y)
    assert ir.to_json(c.model_) == ir.to_json(d.model_)


def test_reported_decision_agrees_with_the_float64_model(circle, full_svm):
    cvm = CVMClassifier(n_support_vectors=8, svm=full_svm).fit(circle.X, circle.y)
    Z = cvm.support_vectors_.astype(np.float64)
    f64 = kernel_matrix(circle.X.astype(np.float64), Z, "rbf", cvm.gamma_) @ cvm.dual_coef_[:, 0] + cvm.intercept_[0]
    ref = cvm.decision_function(circle.X)
    assert np.mean(np.sign(ref) == np.sign(f64)) >= 0.995


def test_bad_parameters_say_what_to_do(circle, full_svm):
    with pytest.raises(ValueError, match="lars_target"):
        CVMClassifier(svm=full_svm, lars_target="x").fit(circle.X, circle.y)
    with pytest.raises(ValueError, match="KernelSVMClassifier"):
        CVMClassifier(svm="nope").fit(circle.X, circle.y)
    with pytest.raises(ValueError, match="moves rbf"):
        CVMClassifier(kernel="poly", svm=full_svm).fit(circle.X, circle.y)
    lin = KernelSVMClassifier(kernel="linear", standardize=False).fit(circle.X, circle.y)
    with pytest.raises(ValueError, match="rbf"):
        CVMClassifier(svm=lin).fit(circle.X, circle.y)
    X = circle.X.copy()
    X[0, 0] = np.nan
    with pytest.raises(ValueError, match="impute"):
        CVMClassifier(svm=full_svm).fit(X, circle.y)


def test_trained_models_are_exact_on_every_backend_with_budgets(circle, full_svm):
    # exact parity (reference == ONNX == C dense == C on-demand), scores,
    # cost and stage, without budget and at/around each row's cost
    from skinflint.verify import verify
    cvm = CVMClassifier(n_support_vectors=8, svm=full_svm).fit(circle.X, circle.y)
    lars = LARSSVMClassifier(n_support_vectors=5, svm=full_svm).fit(circle.X, circle.y)
    for model in (cvm.model_, lars.model_, full_svm.model_):
        report = verify(model, circle.X[:64])
        assert report.ok, report.table()


def test_multiclass_one_vs_rest_with_shared_vectors():
    # digits, 10 classes: one K-wide node whose m vectors serve every class
    # (selection by simultaneous OMP, then eq. 4.10 with a [m, K] B).
    # Measured with 10 vectors: full (409 vectors) 0.970, CVM 0.948, LARS-SVM 0.733
    from sklearn.datasets import load_digits
    d = load_digits()
    X, y = d.data.astype(np.float32), d.target
    full = KernelSVMClassifier(C=10.0, gamma=0.001, standardize=False).fit(X[:600], y[:600])
    cvm = CVMClassifier(n_support_vectors=10, svm=full).fit(X[:600], y[:600])
    lars = LARSSVMClassifier(n_support_vectors=10, svm=full).fit(X[:600], y[:600])
    node = cvm.model_.nodes[0]
    assert node.n_outputs == 10 and node.n_support == 10
    assert cvm.static_cost_ == 10 + X.shape[1]
    Xt, yt = X[600:1200], y[600:1200]
    assert cvm.score(Xt, yt) >= full.score(Xt, yt) - 0.04
    assert cvm.score(Xt, yt) >= lars.score(Xt, yt) + 0.1


@pytest.mark.parametrize("options", [dict(init="random", random_state=0), dict(optimizer="cg"),
                                     dict(fit_rows="train"), dict(lars_target="predictions")])
def test_options_give_working_compressions(circle, full_svm, options):
    # each option still moves 8 vectors to the full SVM's boundary
    # (measured 0.93-0.94 against the full SVM's 0.945 on the training rows)
    cvm = CVMClassifier(n_support_vectors=8, svm=full_svm, **options).fit(circle.X, circle.y)
    assert cvm.n_support_ == 8 and len(set(cvm.selected_.tolist())) == 8
    assert _accuracy(cvm, circle) >= _accuracy(full_svm, circle) - 0.03


@pytest.mark.parametrize("cls", [CVMClassifier, LARSSVMClassifier, ReducedSVMClassifier])
def test_a_frozen_full_svm_survives_clone_and_gives_the_same_model(circle, cls):
    # a bare fitted svm= is cloned unfitted (GridSearchCV, cost_accuracy_curve
    # clone their estimator); FrozenEstimator keeps it, and compressing it is
    # compressing the SVM the estimator would have fitted itself
    kw = dict(n_support_vectors=6, C=0.1, gamma=0.5, standardize=False)
    own = cls(**kw).fit(circle.X, circle.y)
    full = KernelSVMClassifier(C=0.1, gamma=0.5, standardize=False).fit(circle.X, circle.y)
    frozen = clone(cls(**kw, svm=FrozenEstimator(full))).fit(circle.X, circle.y)
    assert ir.to_dict(own.model_)["nodes"] == ir.to_dict(frozen.model_)["nodes"]
    if cls is not ReducedSVMClassifier:     # it does not need a fitted svm (it may grow from scratch)
        with pytest.raises(ValueError, match="FrozenEstimator"):
            clone(cls(**kw, svm=full)).fit(circle.X, circle.y)
