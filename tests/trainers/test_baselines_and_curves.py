import numpy as np
import pytest

from skinflint import datasets
from skinflint.runtimes.reference import predict
from skinflint.trainers import EarlyExitClassifier, GreedyMiserClassifier, cost_accuracy_curve, format_table
from skinflint.verify import verify


def test_early_exit_cascade_saves_cost_and_matches_its_gbrt_when_nobody_exits():
    ds = datasets.make_cheap_vs_exact(1500, seed=0)
    # trees cost 1 each: on these data the first ten trees already touch every
    # feature, so what an early exit saves is tree evaluations
    kw = dict(n_estimators=40, max_depth=3, feature_costs=ds.feature_costs, random_state=0, verbose=0,
              exit_every=10, tree_eval_cost=1.0)
    never = EarlyExitClassifier(threshold=1e30, **kw).fit(ds.X, ds.y)
    m = never.to_ir()
    assert m.nodes[m.output].kind == "cascade" and len(m.nodes[m.output].scorer) == 4
    flat = GreedyMiserClassifier(**{k: v for k, v in kw.items() if k != "exit_every"}).fit(ds.X, ds.y)
    p, q = predict(m, ds.X), predict(flat.model_, ds.X)
    # a threshold nobody reaches: every row runs all 40 trees, same labels;
    # the cascade sums trees through a linear node, so only the labels and
    # costs are compared (summation order differs from the flat bank)
    assert np.mean(p.output == q.output) > 0.995
    np.testing.assert_array_equal(p.cost, q.cost)
    eager = EarlyExitClassifier(threshold=0.5, **kw).fit(ds.X, ds.y)
    pe = predict(eager.to_ir(), ds.X)
    assert pe.cost.mean() < p.cost.mean()
    assert np.any(pe.stage < 3)
    assert verify(eager.to_ir(), ds.X[:100], runtimes=("c", "c-lazy")).ok


def test_early_exit_one_sided_rule_only_drops_unpromising_rows():
    ds = datasets.make_cheap_vs_exact(1500, seed=0)
    kw = dict(n_estimators=40, max_depth=3, feature_costs=ds.feature_costs, random_state=0, verbose=0,
              exit_every=10, tree_eval_cost=1.0, threshold=1.0)
    one = EarlyExitClassifier(exit_side="negative", **kw).fit(ds.X, ds.y)
    both = EarlyExitClassifier(**kw).fit(ds.X, ds.y)
    p1, p2 = predict(one.to_ir(), ds.X), predict(both.to_ir(), ds.X)
    last = 3
    early = p1.stage < last
    assert 0.1 < early.mean() < 0.9, early.mean()
    # the thesis' rule drops rows as negatives only
    assert np.all(p1.output[early] == one.classes_[0])
    # same trees, same stage margins: |f| >= theta_i whenever f <= -theta_i, so
    # the two-sided rule lets every row out no later than the one-sided one
    assert np.all(p2.stage <= p1.stage) and np.any(p2.stage < p1.stage)
    # independent oracle: the estimator's own staged scores (not the IR) give the
    # first checkpoint i with f_i <= -theta_i, theta_i = s (n - i) / n; the cascade
    # sums its trees in another order, so rows within 1e-4 of a threshold (float32
    # rounding of 40 terms of size <= 1 is below 1e-5) are not judged
    staged = list(one.staged_decision_function(ds.X))
    expect = np.full(len(ds.y), last)
    near = np.zeros(len(ds.y), bool)
    for i in range(last - 1, -1, -1):
        f, theta = staged[10 * (i + 1) - 1], 1.0 * (4 - i) / 4
        expect[f <= -theta] = i
        near |= np.abs(f + theta) < 1e-4
    assert near.mean() < 0.01
    np.testing.assert_array_equal(p1.stage[~near], expect[~near])
    assert verify(one.to_ir(), ds.X[:100], runtimes=("c", "c-lazy")).ok
    with pytest.raises(ValueError, match="exit_side"):
        EarlyExitClassifier(exit_side="high", **kw).fit(ds.X, ds.y)


def test_early_exit_rejects_bad_parameters():
    ds = datasets.make_cheap_vs_exact(200)
    with pytest.raises(ValueError, match="exit_every"):
        EarlyExitClassifier(exit_every=0, verbose=0).fit(ds.X, ds.y)


def test_cost_accuracy_curve_trades_accuracy_for_cost():
    tr, te = datasets.make_cheap_vs_exact(3000, seed=2).split(0.3, seed=0)
    tr, va = tr.split(0.3, seed=1)
    est = GreedyMiserClassifier(n_estimators=40, max_depth=3, feature_costs=tr.feature_costs,
                                random_state=0)
    rows = cost_accuracy_curve(est, {"cost_tradeoff": [0.0, 1e-3]}, tr.X, tr.y, va.X, va.y, te.X, te.y,
                               label="Greedy Miser", verbose=0)
    assert [r["lam"] for r in rows] == [0.0, 1e-3]
    assert rows[1]["static_cost"] < rows[0]["static_cost"]
    for r in rows:
        assert 1 <= r["n_iterations"] <= 40
        assert r["mean_cost"] <= r["static_cost"]
        p = predict(r["model"], te.X)
        assert np.mean(p.output == te.y) == pytest.approx(r["accuracy"])
    assert "Greedy Miser (lambda=0.001)" in format_table(rows)


def test_cost_accuracy_curve_sweeps_the_early_exit_threshold():
    tr, te = datasets.make_cheap_vs_exact(2000, seed=2).split(0.3, seed=0)
    tr, va = tr.split(0.3, seed=1)
    est = EarlyExitClassifier(n_estimators=30, max_depth=3, exit_every=5, tree_eval_cost=1.0,
                              feature_costs=tr.feature_costs, random_state=0)
    rows = cost_accuracy_curve(est, {"threshold": [0.25, 1e30]}, tr.X, tr.y, va.X, va.y, te.X, te.y,
                               label="Early Exit", choose_rounds=False, verbose=0)
    assert [r["method"] for r in rows] == ["Early Exit (s=0.25)", "Early Exit (s=1e+30)"]
    # nobody reaches s=1e30: every row pays all 30 trees; s=0.25 lets rows out early
    assert rows[0]["mean_cost"] < rows[1]["mean_cost"]
    for r in rows:
        p = predict(r["model"], te.X)
        assert r["mean_cost"] == pytest.approx(float(p.cost.mean()))
        assert r["model"].nodes[r["model"].output].kind == "cascade"


def test_plots_write_pngs(tmp_path):
    pytest.importorskip("matplotlib")
    from skinflint.plot import plot_cost_accuracy, plot_feature_costs
    ds = datasets.load_breast_cancer()
    m = GreedyMiserClassifier(n_estimators=10, verbose=0, feature_costs=ds.feature_costs,
                              feature_groups=ds.feature_groups, group_costs=ds.group_costs).fit(ds.X, ds.y)
    a = plot_feature_costs(m.model_, ds.X, tmp_path / "c.png")
    b = plot_cost_accuracy({"x": [dict(mean_cost=1, accuracy=0.5), dict(mean_cost=2, accuracy=0.7)]},
                           tmp_path / "a.png")
    for path in (a, b):
        assert open(path, "rb").read(8) == b"\x89PNG\r\n\x1a\n"
