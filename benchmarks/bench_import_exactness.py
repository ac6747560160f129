"""Importer exactness (issue 19): per source family, the largest
|skinflint raw margin - the source library's own raw prediction| over test
rows plus verify's adversarial rows (every threshold, +-1 ulp, NaN), and
whether the labels agree on every row.

Needs lightgbm, xgboost and scikit-learn.  Prints one line per family.
"""
from __future__ import annotations

import numpy as np


def rows(model, X, nan_ok):
    from skinflint.verify import adversarial_rows
    R = np.concatenate([X, adversarial_rows(model, X)])
    R = R[~np.isinf(R).any(1)]
    return R if nan_ok else R[~np.isnan(R).any(1)]


def report(name, m, R, want, labels=None):
    from skinflint.runtimes.reference import ReferenceRuntime
    pred = ReferenceRuntime(m).predict(R)
    got = np.asarray(pred.scores, np.float64)
    want = np.asarray(want, np.float64).reshape(got.shape)
    d = float(np.max(np.abs(got - want)))
    same = bool(np.array_equal(got, want))
    lab = "" if labels is None else f"  labels equal: {bool(np.array_equal(pred.output, labels))}"
    print(f"{name:<34} rows {len(R):>6}  max |diff| {d:.3g}  bit-exact: {same} "
          f"(scores {pred.scores.dtype}){lab}")


def main():
    import lightgbm as lgb
    import xgboost as xgb
    from sklearn import ensemble, linear_model, svm, tree

    from skinflint.importers import from_lightgbm, from_sklearn, from_xgboost
    rng = np.random.default_rng(0)
    X = rng.normal(size=(600, 8)).astype(np.float32)
    y_reg = X[:, 0] + 2 * X[:, 1] * X[:, 2] + 0.1 * rng.normal(size=600)
    y_bin, y_3 = (y_reg > 0).astype(int), np.digitize(y_reg, [-0.5, 0.5])
    Xn = X.copy()
    Xn[rng.random(X.shape) < 0.1] = np.nan
    p = {"num_leaves": 15, "verbose": -1, "num_threads": 1}
    for obj, y in (("binary", y_bin), ("regression", y_reg), ("multiclass", y_3)):
        b = lgb.train({**p, "objective": obj, **({"num_class": 3} if obj == "multiclass" else {})},
                      lgb.Dataset(Xn, y), 200)
        m = from_lightgbm(b)
        R = rows(m, Xn, True)
        raw = b.predict(R, raw_score=True)
        lab = None if obj == "regression" else (raw > 0).astype(int) if obj == "binary" else raw.argmax(1)
        report(f"LightGBM {obj} (200 iters)", m, R, raw, lab)
    b = xgb.train({"objective": "binary:logistic", "max_depth": 4, "nthread": 1}, xgb.DMatrix(Xn, label=y_bin), 200)
    m = from_xgboost(b)
    R = rows(m, Xn, True)
    report("XGBoost binary (200 iters)", m, R, b.predict(xgb.DMatrix(R), output_margin=True))
    cases = [
        ("DecisionTreeRegressor", tree.DecisionTreeRegressor(max_depth=6, random_state=0), Xn, y_reg),
        ("RandomForestRegressor", ensemble.RandomForestRegressor(50, max_depth=6, random_state=0), Xn, y_reg),
        ("RandomForestClassifier", ensemble.RandomForestClassifier(50, max_depth=6, random_state=0), Xn, y_3),
        ("ExtraTreesClassifier", ensemble.ExtraTreesClassifier(50, max_depth=6, random_state=0), X, y_bin),
        ("GradientBoostingClassifier bin",
         ensemble.GradientBoostingClassifier(n_estimators=100, random_state=0), X, y_bin),
        ("GradientBoostingClassifier 3", ensemble.GradientBoostingClassifier(n_estimators=50, random_state=0), X, y_3),
        ("GradientBoostingRegressor", ensemble.GradientBoostingRegressor(n_estimators=100, random_state=0), X, y_reg),
        ("HistGradientBoostingClassifier 3",
         ensemble.HistGradientBoostingClassifier(max_iter=100, random_state=0), Xn, y_3),
        ("HistGradientBoostingRegressor",
         ensemble.HistGradientBoostingRegressor(max_iter=100, random_state=0), Xn, y_reg),
        ("LogisticRegression", linear_model.LogisticRegression(), X, y_bin),
        ("Ridge", linear_model.Ridge(), X, y_reg),
        ("SVC rbf", svm.SVC(gamma=0.3), X, y_bin),
    ]
    for name, est, Xt, y in cases:
        est.fit(Xt, y)
        m = from_sklearn(est)
        R = rows(m, Xt, np.isnan(Xt).any())
        if m.nodes[0].kind == "trees" and hasattr(est, "predict_proba") and m.task.transform == "identity":
            want = est.predict_proba(R)
        elif hasattr(est, "decision_function"):
            want = est.decision_function(R)
        else:
            want = est.predict(R)
        report(name, m, R, want, est.predict(R) if hasattr(est, "classes_") else None)


if __name__ == "__main__":
    main()
