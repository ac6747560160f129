"""The cost/accuracy trade-off of Greedy Miser over a grid of lambda.

``cost_accuracy_curve`` trains one model per lambda, picks the number of
boosting rounds with the best validation score (as the thesis does, the
red circles of Fig. 2.2), and reports test accuracy, mean lazy cost per row
and static cost of the truncated model.
"""
from __future__ import annotations

import numpy as np
from tqdm.auto import tqdm

from ..runtimes.reference import predict
from .greedy_miser import GreedyMiserClassifier

DEFAULT_LAMBDAS = (0.0, 1e-4, 3e-4, 1e-3, 3e-3, 1e-2)


def _score(y, pred):
    if pred.dtype.kind == "f" and np.asarray(y).dtype.kind == "f":
        return -float(np.mean((pred - y) ** 2))
    return float(np.mean(pred == y))


def cost_accuracy_curve(X_train, y_train, X_val, y_val, X_test, y_test, *, lambdas=DEFAULT_LAMBDAS,
                        estimator=GreedyMiserClassifier, verbose=1, **params) -> list[dict]:
    """One row per lambda: lambda, n_iterations (chosen on validation),
    accuracy (test; negative MSE for regression), mean_cost, static_cost,
    n_features, and the fitted ``model`` (IR, truncated)."""
    rows = []
    for lam in tqdm(lambdas, disable=not verbose, desc="lambda sweep", leave=False):
        est = estimator(cost_tradeoff=lam, verbose=0, **params).fit(X_train, y_train)
        val = [_score(y_val, p) for p in est.staged_predict(X_val)]
        best = int(np.argmax(val)) + 1
        model = est.to_ir(best)
        p = predict(model, X_test)
        rows.append(dict(method=f"Greedy Miser (lambda={lam:g})" if lam else "GBRT (lambda=0)",
                         lam=float(lam), n_iterations=best, accuracy=_score(y_test, p.output),
                         mean_cost=float(p.cost.mean()), static_cost=model.static_cost(),
                         n_features=int(len(model.features_used())), model=model))
    return rows


def format_table(rows) -> str:
    head = f"{'model':<32} {'trees':>6} {'accuracy':>9} {'mean cost/row':>14} {'static cost':>12} {'features':>9}"
    lines = [head]
    for r in rows:
        lines.append(f"{r['method']:<32} {r['n_iterations']:>6} {r['accuracy']:>9.4f} "
                     f"{r['mean_cost']:>14.2f} {r['static_cost']:>12.2f} {r['n_features']:>9}")
    return "\n".join(lines)
