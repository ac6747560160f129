"""The full kernel SVM (sklearn SVC exported to one kernel node), its import,
one-vs-rest multiclass with shared vectors, and Reduced-SVM."""
import numpy as np
import pytest
from scipy.optimize import minimize_scalar
from sklearn.datasets import load_digits
from sklearn.svm import SVC

from skinflint import ir
from skinflint.datasets import make_noisy_circle
from skinflint.trainers.kernels.kernel_math import kernel_matrix
from skinflint.trainers.kernels.kernel_svm import KernelSVMClassifier
from skinflint.trainers.kernels.reduced_svm import ReducedSVMClassifier, candidate_gains


@pytest.fixture(scope="module")
def circle():
    return make_noisy_circle(), make_noisy_circle(seed=1)


@pytest.mark.parametrize("kernel,params", [("rbf", dict(C=0.1, gamma=0.5)),
                                           ("poly", dict(C=1.0, gamma=0.5, degree=2, coef0=1.0)),
                                           ("linear", dict(C=1.0))])
def test_exported_svc_agrees_with_svc_decision(circle, kernel, params):
    train, test = circle
    est = KernelSVMClassifier(kernel=kernel, standardize=False, **params).fit(train.X, train.y)
    svc = SVC(kernel=kernel, **params).fit(train.X, train.y)
    d64 = svc.decision_function(test.X)
    ref = est.decision_function(test.X)
    # the gate: the reference's sign agrees with the float64 model's
    # on >= 99.5 % of test rows (float32 evaluation can flip rows at |f| ~ 0)
    assert np.mean(np.sign(ref) == np.sign(d64)) >= 0.995
    assert est.n_support_ == svc.support_vectors_.shape[0]
    # one kernel evaluation (cost 1) per vector, plus the 2 features
    assert est.static_cost_ == est.n_support_ + 2
    np.testing.assert_array_equal(est.predict(test.X) == svc.predict(test.X),
                                  np.sign(ref) == np.sign(d64))


def test_from_svc_is_the_same_model(circle):
    train, test = circle
    svc = SVC(C=0.1, gamma=0.5).fit(train.X, train.y)
    imported = KernelSVMClassifier.from_svc(svc)
    node = imported.model_.nodes[0]
    np.testing.assert_array_equal(node.support_vectors, svc.support_vectors_.astype(np.float32))
    np.testing.assert_array_equal(node.alpha[:, 0], svc.dual_coef_[0].astype(np.float32))
    np.testing.assert_array_equal(node.bias, svc.intercept_.astype(np.float32))
    assert node.gamma == np.float32(0.5)
    # skinflint's own SMO on the same data: the same vectors in libsvm's order,
    # the same model up to the solvers' tolerance (tests/trainers/kernels/test_smo.py)
    fitted = KernelSVMClassifier(C=0.1, gamma=0.5, standardize=False).fit(train.X, train.y)
    np.testing.assert_array_equal(fitted.support_, svc.support_)
    # 1e-2 = 10x libsvm's stopping tolerance on the gradient (1e-3); measured 2e-3
    np.testing.assert_allclose(fitted.decision_function(test.X), imported.decision_function(test.X), atol=1e-2)


def test_from_svc_refuses_what_it_cannot_import(circle):
    train, _ = circle
    with pytest.raises(ValueError, match="not fitted"):
        KernelSVMClassifier.from_svc(SVC())
    X = np.vstack([train.X, train.X[:50] + 10])
    y = np.concatenate([train.y, np.full(50, 2)])
    with pytest.raises(ValueError, match="one-vs-rest"):
        KernelSVMClassifier.from_svc(SVC().fit(X, y))
    with pytest.raises(ValueError, match="no IR form"):
        KernelSVMClassifier.from_svc(SVC(kernel="sigmoid").fit(train.X, train.y))


def test_sv_order_alpha_puts_large_coefficients_first(circle):
    train, _ = circle
    est = KernelSVMClassifier(C=0.1, gamma=0.5, standardize=False, sv_order="alpha").fit(train.X, train.y)
    a = np.abs(est.model_.nodes[0].alpha[:, 0])
    assert np.all(np.diff(a) <= 0)


def test_grid_is_chosen_on_validation_rows(circle):
    train, _ = circle
    est = KernelSVMClassifier(C=(0.1, 10.0), gamma=(0.05, 0.5, 5.0), standardize=False,
                              random_state=0).fit(train.X, train.y)
    assert len(est.validation_scores_) == 6
    best = int(np.argmax(est.validation_scores_))
    assert (est.C_, est.gamma_) == ((0.1, 10.0)[best // 3], float(np.float32((0.05, 0.5, 5.0)[best % 3])))


def test_multiclass_one_vs_rest_shares_vectors():
    d = load_digits()
    X, y = d.data[:500].astype(np.float32), d.target[:500]
    Xt = d.data[500:800].astype(np.float32)
    est = KernelSVMClassifier(C=10.0, gamma=0.001, standardize=False).fit(X, y)
    node = est.model_.nodes[0]
    assert node.n_outputs == 10
    # the union of the ten one-vs-rest SVCs' vectors, each evaluated once
    union = set()
    f64 = np.zeros((Xt.shape[0], 10))
    for k in range(10):
        svc = SVC(C=10.0, gamma=float(np.float32(0.001))).fit(X, (y == k).astype(int))
        union |= set(svc.support_.tolist())
        f64[:, k] = svc.decision_function(Xt)
    assert est.n_support_ == len(union) == node.n_support
    assert est.static_cost_ == len(union) + len(node.features)
    # argmax of the float32 reference vs the float64 one-vs-rest models
    assert np.mean(est.predict(Xt) == est.classes_[np.argmax(f64, 1)]) >= 0.995
    assert np.mean(est.predict(Xt) == d.target[500:800]) > 0.9


def test_candidate_gain_is_the_exact_one_dimensional_decrease():
    rng = np.random.default_rng(0)
    n, c, C = 60, 5, 3.0
    y = np.where(rng.uniform(size=n) > 0.5, 1.0, -1.0)
    Kc = rng.uniform(size=(n, c))
    Kcc, KcJb, out = np.ones(c), rng.normal(size=c) * 0.3, rng.normal(size=n) * 0.5
    gains = candidate_gains(Kc, Kcc, KcJb, y, out, C)

    def obj(t, j):
        m = np.maximum(0.0, 1.0 - y * (out + t * Kc[:, j]))
        return (t * KcJb[j] + 0.5 * t * t * Kcc[j]) / C + 0.5 * np.sum(m * m)
    for j in range(c):
        best = minimize_scalar(lambda t, j=j: obj(t, j), bracket=(-5, 5), tol=1e-12)
        # both minimise the same convex 1-D function; 1e-9 absolute is far
        # below the gains' scale (~1) and above Brent's final precision
        assert abs(gains[j] - (obj(0.0, j) - best.fun)) <= 1e-9


def test_reduced_svm_on_the_circle(circle):
    train, test = circle
    full = KernelSVMClassifier(C=0.1, gamma=0.5, standardize=False).fit(train.X, train.y)
    r = ReducedSVMClassifier(n_support_vectors=8, svm=full, random_state=0).fit(train.X, train.y)
    assert r.n_support_ == 8
    # its basis vectors are training rows, in entry order
    np.testing.assert_array_equal(r.support_vectors_, train.X[r.support_])
    # measured: 0.94 with 8 vectors against the full SVM's 0.945 (239 vectors)
    assert r.score(test.X, test.y) >= full.score(test.X, test.y) - 0.03
    a = ReducedSVMClassifier(n_support_vectors=8, C=0.1, gamma=0.5, standardize=False,
                             random_state=1).fit(train.X, train.y)
    b = ReducedSVMClassifier(n_support_vectors=8, C=0.1, gamma=0.5, standardize=False,
                             random_state=1).fit(train.X, train.y)
    assert ir.to_json(a.model_) == ir.to_json(b.model_)
    # multiclass: one basis per one-vs-rest column, their union in one node
    X3 = np.vstack([train.X, train.X[:60] + 9])
    y3 = np.concatenate([train.y, np.full(60, 2)])
    r3 = ReducedSVMClassifier(n_support_vectors=4, C=1.0, gamma=0.5, standardize=False,
                              random_state=0).fit(X3, y3)
    node = r3.model_.nodes[0]
    assert node.n_outputs == 3 and 4 <= node.n_support <= 12
    assert np.all((node.alpha != 0).sum(0) == 4)
    assert r3.score(X3, y3) > 0.9


def test_kernel_math_matches_the_definitions():
    rng = np.random.default_rng(0)
    A, B = rng.normal(size=(7, 3)), rng.normal(size=(4, 3))
    d2 = ((A[:, None] - B[None]) ** 2).sum(-1)
    np.testing.assert_allclose(kernel_matrix(A, B, "rbf", 0.3), np.exp(-0.3 * d2), rtol=1e-12)
    np.testing.assert_allclose(kernel_matrix(A, B, "poly", 0.5, 1.0, 3), (0.5 * A @ B.T + 1) ** 3, rtol=1e-12)
    with pytest.raises(ValueError, match="unknown kernel"):
        kernel_matrix(A, B, "sigmoid")


def test_standardised_model_reads_raw_features_exactly():
    # breast cancer's features span 1e-3 .. 4e3: the node carries the
    # float32 mean and 1 / std, and runs on the raw rows
    from skinflint.datasets import load_breast_cancer
    from skinflint.trainers.kernels.cvm import CVMClassifier
    from skinflint.trainers.kernels.kernel_svm import transform
    from skinflint.verify import verify
    tr, te = load_breast_cancer().split(0.3, seed=0)
    full = KernelSVMClassifier(C=10.0, feature_costs=tr.costs).fit(tr.X, tr.y)
    node = full.model_.nodes[0]
    assert node.shift is not None and node.scale is not None
    Xt = transform(te.X, full.features_, full.shift_, full.scale_)
    d64 = kernel_matrix(Xt, full.support_vectors_, "rbf", full.gamma_) @ full.dual_coef_[:, 0] + full.intercept_[0]
    assert np.mean(np.sign(full.decision_function(te.X)) == np.sign(d64)) >= 0.995
    assert full.score(te.X, te.y) > 0.95
    cvm = CVMClassifier(n_support_vectors=0.1, svm=full, feature_costs=tr.costs).fit(tr.X, tr.y)
    assert cvm.model_.nodes[0].shift is not None
    # measured: full 0.977 (73 vectors), CVM with 7 of them 0.959 (3 of 171
    # test rows more wrong); the bound allows 5 rows (0.03)
    assert cvm.score(te.X, te.y) >= full.score(te.X, te.y) - 0.03
    for model in (full.model_, cvm.model_):
        report = verify(model, te.X[:48])
        assert report.ok, report.table()


def test_incremental_newton_reaches_the_l2svm_optimum():
    # the Reduced-SVM solver (M updated as rows and columns come and go)
    # against the AFR L2-SVM solver (M re-formed each step) on the same basis
    from skinflint.trainers.kernels.reduced_svm import _PrimalNewton
    from skinflint.trainers.linear.linear_svm import l2svm_newton
    rng = np.random.default_rng(0)
    X = rng.normal(size=(300, 2))
    y = np.where(X[:, 0] * X[:, 1] + 0.3 * rng.normal(size=300) > 0, 1.0, -1.0)
    J = [3, 50, 77, 120, 200, 260]
    K = kernel_matrix(X, X[J], "rbf", 0.7)
    C = 5.0
    pn = _PrimalNewton(y, C)
    for k in range(len(J)):
        pn.add_column(K[:, k], K[J[:k], k], 1.0)
        pn.solve()
    ref = l2svm_newton(K, y, None, K[J] / C)
    # both are the unique minimiser of the same strictly convex problem;
    # 1e-7 is far below the coefficients' scale (~1) and above the solvers'
    # final Newton residual
    np.testing.assert_allclose(pn.theta[1:], ref.w, rtol=0, atol=1e-7)
    assert abs(pn.theta[0] - ref.b) <= 1e-7


def test_from_svc_with_a_standard_scaler():
    # an SVC trained behind sklearn's StandardScaler, imported with the
    # scaler's mean and 1 / scale: the model reads raw features
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import StandardScaler

    from skinflint.datasets import load_breast_cancer
    tr, te = load_breast_cancer().split(0.3, seed=0)
    pipe = make_pipeline(StandardScaler(), SVC(C=10.0, gamma=0.02)).fit(tr.X, tr.y)
    sc, svc = pipe[0], pipe[1]
    est = KernelSVMClassifier.from_svc(svc, shift=sc.mean_, scale=1.0 / sc.scale_, feature_costs=tr.costs)
    assert est.model_.nodes[0].shift is not None
    # the pipeline standardises in float64, the node in float32 (two
    # roundings): signs agree on >= 99.5 % of rows (the gate)
    assert np.mean(np.sign(est.decision_function(te.X)) == np.sign(pipe.decision_function(te.X))) >= 0.995
    np.testing.assert_array_equal(est.classes_, svc.classes_)
    # every vector costs 1 on top of the features' costs (all read)
    assert est.static_cost_ == svc.support_vectors_.shape[0] + KernelSVMClassifier.from_svc(
        svc, shift=sc.mean_, scale=1.0 / sc.scale_, sv_cost=0.0, feature_costs=tr.costs).static_cost_
