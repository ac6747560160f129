"""scikit-learn import (issue 19): on test and adversarial rows (every
threshold, +-1 ulp, NaN), every tree family's float64 margin is
scikit-learn's own (predict_proba / decision_function / predict) bit for
bit and the labels equal scikit-learn's on every row; linear models and
kernel machines (BLAS / libsvm order) stay within the stated error_bound;
every backend equals the reference (verify)."""
import numpy as np
import pytest
from sklearn import ensemble, linear_model, svm, tree
from threadpoolctl import threadpool_limits

from skinflint.importers.sklearn import error_bound, from_sklearn
from skinflint.ir import FeatureCosts
from skinflint.runtimes.reference import ReferenceRuntime
from skinflint.verify import verify

from ._rows import check_rows, data, proba_bound, same_bits64

X, Y_BIN, Y_REG, Y_3 = data(n=300)
XF = np.nan_to_num(X)          # for estimators that refuse NaN


def _margin(est, R, m):
    if m.nodes[0].kind == "trees" and hasattr(est, "predict_proba") and m.task.transform == "identity":
        return est.predict_proba(R)
    if hasattr(est, "decision_function"):
        return est.decision_function(R)
    return est.predict(R)


CASES = [
    (tree.DecisionTreeRegressor(max_depth=5, random_state=0), X, Y_REG, "verify"),
    (tree.DecisionTreeClassifier(max_depth=5, random_state=0), X, Y_3, "verify"),
    (ensemble.RandomForestRegressor(8, max_depth=4, random_state=0), X, Y_REG, "verify"),
    (ensemble.RandomForestClassifier(9, max_depth=4, random_state=0), X, Y_3, "verify"),
    (ensemble.ExtraTreesClassifier(8, max_depth=4, random_state=0), XF, Y_BIN, "verify"),
    (ensemble.ExtraTreesRegressor(7, max_depth=4, random_state=0), XF, Y_REG, ""),
    (ensemble.GradientBoostingClassifier(n_estimators=8, max_depth=3, random_state=0), XF, Y_BIN, "verify"),
    (ensemble.GradientBoostingClassifier(n_estimators=8, max_depth=3, random_state=0), XF, Y_3, "verify"),
    (ensemble.GradientBoostingRegressor(n_estimators=8, max_depth=3, random_state=0), XF, Y_REG, ""),
    (ensemble.GradientBoostingRegressor(n_estimators=8, max_depth=3, init="zero", random_state=0), XF, Y_REG, ""),
    (ensemble.HistGradientBoostingClassifier(max_iter=8, random_state=0), X, Y_BIN, "verify"),
    (ensemble.HistGradientBoostingClassifier(max_iter=8, random_state=0), X, Y_3, "verify"),
    (ensemble.HistGradientBoostingRegressor(max_iter=8, random_state=0), X, Y_REG, "verify"),
    (linear_model.LogisticRegression(), XF, Y_BIN, "verify"),
    (linear_model.LogisticRegression(), XF, Y_3, ""),
    (linear_model.Ridge(), XF, Y_REG, ""),
    (svm.LinearSVC(), XF, Y_3, ""),
    (svm.SVC(kernel="rbf", gamma=0.3), XF, Y_BIN, "verify"),
    (svm.SVC(kernel="linear"), XF, Y_BIN, ""),
    (svm.SVC(kernel="poly", degree=3, coef0=1.0, gamma=0.2), XF, Y_BIN, ""),
    (svm.SVR(kernel="rbf"), XF, Y_REG, ""),
]


@pytest.mark.parametrize("est,Xt,y,mode", CASES, ids=[f"{type(c[0]).__name__}-{i}" for i, c in enumerate(CASES)])
def test_parity_with_sklearn(est, Xt, y, mode):
    with threadpool_limits(1):                      # OpenMP threads thrash on a busy 2-core machine
        est.fit(Xt, y)
    m = from_sklearn(est)
    R = check_rows(m, Xt)
    if not np.isnan(Xt).any():
        R = R[~np.isnan(R).any(1)]                  # the estimator refuses NaN
    pred = ReferenceRuntime(m).predict(R)
    want = np.asarray(_margin(est, R, m), np.float64).reshape(len(R), -1)
    if m.nodes[0].kind == "trees":
        # float64 bank: scikit-learn's margin bit for bit, its labels on every row
        assert m.nodes[0].precision == "float64"
        assert same_bits64(pred.scores, want)
        if hasattr(est, "classes_"):
            assert np.array_equal(pred.output, est.predict(R))
        if pred.proba is not None:                  # the bound against scikit-learn's own transform
            src = est.predict_proba(R)
            assert np.all(np.abs(pred.proba - src) <= proba_bound(pred.scores, src.shape[1]))
        if mode == "verify":
            rep = verify(m, Xt[:48])
            assert rep.ok, rep.table()
        return
    bound = np.reshape(error_bound(m, R), (-1, 1))
    assert np.all(np.abs(pred.scores - want) <= bound)
    if hasattr(est, "classes_"):
        # labels agree where sklearn's margins are not within the bound of a tie
        if want.shape[1] == 1:
            clear = np.abs(want[:, 0]) > bound[:, 0]
        else:
            top = np.sort(want, 1)
            clear = top[:, -1] - top[:, -2] > 2 * bound[:, 0]
        assert np.array_equal(pred.output[clear], est.predict(R)[clear])
        assert clear.mean() > 0.9
    if mode == "verify":
        rep = verify(m, Xt[:48])
        assert rep.ok, rep.table()


def test_costs_by_feature_name():
    import pandas as pd
    cols = [f"c{i}" for i in range(X.shape[1])]
    est = tree.DecisionTreeRegressor(max_depth=3).fit(pd.DataFrame(XF, columns=cols), Y_REG)
    m = from_sklearn(est, FeatureCosts.from_arrays(np.arange(6.0)[::-1], names=cols[::-1]))
    assert m.feature_names == cols and np.array_equal(m.feature_costs, np.arange(6.0))


def test_unsupported_refused():
    with pytest.raises(ValueError, match="not supported"):
        from sklearn.neighbors import KNeighborsClassifier
        from_sklearn(KNeighborsClassifier().fit(XF, Y_BIN))
    with pytest.raises(ValueError, match="sigmoid"):
        from_sklearn(svm.SVR(kernel="sigmoid").fit(XF, Y_REG))
    with pytest.raises(ValueError, match="init=Ridge"):
        from_sklearn(ensemble.GradientBoostingRegressor(n_estimators=2, init=linear_model.Ridge()).fit(XF, Y_REG))
    with pytest.raises(ValueError, match="one-vs-one"):
        from_sklearn(svm.SVC().fit(XF, Y_3))
    with pytest.raises(ValueError, match="poisson"):
        from_sklearn(ensemble.HistGradientBoostingRegressor(loss="poisson", max_iter=2).fit(X, np.abs(Y_REG)))


@pytest.mark.parametrize("est", [tree.DecisionTreeClassifier(max_depth=2),
                                 ensemble.RandomForestClassifier(3, max_depth=2, random_state=0),
                                 ensemble.ExtraTreesClassifier(3, max_depth=2, random_state=0)],
                         ids=lambda e: type(e).__name__)
def test_classifier_fitted_on_one_class_refused_naming_the_estimator(est):
    from skinflint.importers.sklearn_json import to_json
    est.fit(XF, np.full(len(XF), 7))
    name = type(est).__name__
    with pytest.raises(ValueError, match=f"^{name}: fitted on one class"):
        from_sklearn(est)
    with pytest.raises(ValueError, match=f"^{name}: fitted on one class"):
        to_json(est)                          # no file that could never be imported


def test_budget_halted_forest_is_its_partial_sum_over_n():
    """docs/costs.md: a forest halted after t of n trees gives (0.0 + v_0 +
    ... + v_{t-1}) / n, not the mean of the t trees; every backend agrees."""
    est = ensemble.RandomForestRegressor(6, max_depth=3, random_state=0).fit(XF, Y_REG)
    m = from_sklearn(est, np.arange(1.0, XF.shape[1] + 1))
    R = XF[:40].astype(np.float32)
    full = ReferenceRuntime(m).predict(R)
    pred = ReferenceRuntime(m).predict(R, budget=full.cost * 0.6)
    t = pred.stage + 1
    assert np.any((t > 0) & (t < 6))                                  # some rows halt part way
    per_tree = np.stack([e.predict(R) for e in est.estimators_])       # [n, rows], float64 leaves
    want = np.empty(len(R))
    for r in range(len(R)):
        acc = 0.0
        for i in range(t[r]):
            acc = acc + per_tree[i, r]
        want[r] = acc / 6.0
    assert same_bits64(pred.scores[:, 0], want)
    rep = verify(m, R[:16], budget=full.cost[:16] * 0.6, adversarial=False)   # and budgets "around"
    assert rep.ok, rep.table()
