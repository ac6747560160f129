"""CronusClassifier and CSCCClassifier: export, parity, per-row cost,
determinism, errors, and the cheap-rejects acceptance check (issue 15)."""
import numpy as np
import pytest

from skinflint.datasets import make_cheap_rejects
from skinflint.ir.codes import EXIT_ABS_GE, EXIT_LE, EXIT_NONE
from skinflint.ir.json_io import to_json
from skinflint.runtimes.reference import predict
from skinflint.trainers.boosting.early_exit import EarlyExitClassifier
from skinflint.trainers.boosting.greedy_miser import GreedyMiserClassifier
from skinflint.trainers.cascades.cronus import CronusClassifier, CSCCClassifier
from skinflint.verify import verify

CLASSES = (CronusClassifier, CSCCClassifier)


@pytest.fixture(scope="module")
def small():
    ds = make_cheap_rejects(3000, seed=11)
    return ds.X[:2000], ds.y[:2000], ds.X[2000:], ds.y[2000:], ds.feature_costs


def _small_fit(cls, data, lam=4e-4, **kw):
    Xtr, ytr, _, _, costs = data
    params = dict(n_stages=4, n_estimators=40, max_depth=3, tree_eval_cost=1.0, feature_costs=costs,
                  cost_tradeoff=lam, random_state=0, max_cycles=3)
    params.update(kw)
    return cls(**params).fit(Xtr, ytr)


@pytest.fixture(scope="module")
def fitted(small):
    return {cls: _small_fit(cls, small) for cls in CLASSES}


@pytest.mark.parametrize("cls", CLASSES)
def test_ir_shape_and_predictions(cls, fitted, small):
    est = fitted[cls]
    m = est.model_
    kinds = [n.kind for n in m.nodes]
    assert kinds[0] == "trees" and kinds[-1] == "cascade" and set(kinds[1:-1]) == {"linear"}
    casc = m.nodes[-1]
    assert est.n_stages_ == len(casc.scorer) >= 2          # a real cascade at this lambda
    assert casc.exit_rule[-1] == EXIT_NONE
    # the trained exits, or the two-sided ones retrofitted on validation (retrofit_exits, the default)
    rules = set(casc.exit_rule[:-1].tolist())
    assert rules == {EXIT_LE} if est.exit_level_ is None else EXIT_ABS_GE in rules <= {EXIT_ABS_GE, EXIT_NONE}
    Xte = small[2]
    p = predict(est.to_ir(), Xte)
    np.testing.assert_array_equal(est.predict(Xte), p.output)
    # the exit value is the exit stage's own margin; the label is margin > 0
    np.testing.assert_array_equal(est.predict(Xte), est.classes_[(p.scores[:, 0] > 0).astype(int)])
    h = np.array(est.objective_history_)
    assert np.all(np.diff(h) <= 0) and len(h) >= 2


@pytest.mark.parametrize("cls", CLASSES)
def test_parity_with_budgets(cls, fitted, small):
    """reference == ONNX == C dense == C on-demand, bit for bit, with budgets
    at and around each row's cost (verify's default)."""
    report = verify(fitted[cls].model_, small[2][:300], max_rows=600)
    assert report.ok, report.table()


@pytest.mark.parametrize("cls", CLASSES)
def test_parity_of_retrofitted_exits(cls, small):
    """The two-sided exits of retrofit_exits (|margin| >= s on every stage but
    the last): reference == ONNX == C dense == C on-demand, bit for bit, with
    budgets, at a level where rows leave at several stages."""
    est = _small_fit(cls, small, retrofit_exits=0.875, n_stages=4, exit_fraction=0.15, lambda_inflation=1.3,
                     early_stopping=False, fine_tune="none", max_cycles=1)
    assert EXIT_ABS_GE in est.model_.nodes[-1].exit_rule.tolist()
    p = predict(est.model_, small[2][:300])
    assert len(np.unique(p.stage)) == 3          # rows leave at every stage (measured: 219, 56, 25)
    report = verify(est.model_, small[2][:300], max_rows=600)
    assert report.ok, report.table()


def _paths(bank, X, t, row):
    """Features on tree t's path for one row (an independent walk)."""
    m = int(bank.roots[t])
    feats = []
    while bank.feature[m] >= 0:
        f = int(bank.feature[m])
        feats.append(f)
        x = X[row, f]
        go_left = bank.missing_left[m] if np.isnan(x) else x <= bank.threshold[m]
        m = int(bank.left[m] if go_left else bank.right[m])
    return feats


@pytest.mark.parametrize("cls", CLASSES)
def test_row_cost_is_distinct_trees_and_features_reached(cls, fitted, small):
    est = fitted[cls]
    m = est.model_
    bank, stages = m.nodes[0], m.nodes[1:-1]
    X = small[2][:150]
    p = predict(m, X)
    costs = np.array([f.cost for f in m.features])
    for i in range(X.shape[0]):
        trees = set()
        for k in range(p.stage[i] + 1):
            lin = stages[k]
            trees |= {int(t) for t, w in zip(lin.input_tree, lin.weights[:, 0]) if w != 0}
        feats = set()
        for t in trees:
            feats |= set(_paths(bank, X, t, i))
        expect = float(sum(bank.tree_cost[t] for t in trees) + costs[list(feats)].sum())
        assert p.cost[i] == expect, i          # small integers: exact in float64
        np.testing.assert_array_equal(np.flatnonzero(p.features_used[i]), sorted(feats))
    assert np.all(p.cost <= m.static_cost())


@pytest.mark.parametrize("cls", CLASSES)
def test_same_seed_same_bytes(cls, small):
    a = to_json(_small_fit(cls, small, max_cycles=1).model_)
    b = to_json(_small_fit(cls, small, max_cycles=1).model_)
    assert a == b


def test_binary_only_and_bad_params(small):
    Xtr, ytr = small[0], small[1]
    y3 = ytr.copy()
    y3[:50] = 2
    with pytest.raises(ValueError, match="binary"):
        CronusClassifier(n_estimators=5).fit(Xtr, y3)
    with pytest.raises(ValueError, match="Unknown label type"):
        CSCCClassifier(n_estimators=5).fit(Xtr, Xtr[:, 0].astype(np.float64) + 0.5)
    with pytest.raises(ValueError, match="exit_fraction"):
        CronusClassifier(exit_fraction=1.5, n_estimators=5).fit(Xtr, ytr)
    with pytest.raises(ValueError, match="bank must be"):
        CronusClassifier(bank="xgboost", n_estimators=5).fit(Xtr, ytr)


def test_cheap_rejects_acceptance():
    """The digest's AC1 on make_cheap_rejects(16000, seed=3), split
    8000/2000/6000: the cheapest cascade within 1 point of GBRT's accuracy
    costs <= 1/3 of GBRT and <= 2/3 of the cheapest Early Exit within 1 point,
    and its first-stage exits never fetch the expensive feature b.  Margins:
    the known optimum is ~35-70 per row against GBRT's ~223 and Early Exit's
    ~111 (every Early Exit row buys b before its first exit)."""
    ds = make_cheap_rejects(16000, seed=3)
    X, y, c = ds.X, ds.y, ds.feature_costs
    Xtr, ytr, Xva, yva, Xte, yte = X[:8000], y[:8000], X[8000:10000], y[8000:10000], X[10000:], y[10000:]
    common = dict(max_depth=3, learning_rate=0.1, tree_eval_cost=1.0, feature_costs=c, random_state=0)
    gb = GreedyMiserClassifier(n_estimators=200, verbose=0, **common).fit(Xtr, ytr, eval_set=(Xva, yva))
    pg = predict(gb.model_, Xte)
    acc0, cost0 = np.mean(pg.output == yte), pg.cost.mean()
    ee = []
    for s in (0.5, 1.0, 2.0, 4.0):
        e = EarlyExitClassifier(threshold=s, n_estimators=200, verbose=0, **common).fit(
            Xtr, ytr, eval_set=(Xva, yva))
        pe = predict(e.model_, Xte)
        if np.mean(pe.output == yte) >= acc0 - 0.01:
            ee.append(pe.cost.mean())
    assert ee
    for cls in CLASSES:
        est = cls(n_stages=5, n_estimators=150, **common)
        grid = est.lambda_grid(Xtr, ytr)
        est.set_params(bank=est._bank_cache[1])
        best = None
        for lam in grid[:8]:      # the top 8 of 12 points: the bottom ones only add cost
            est.set_params(cost_tradeoff=float(lam)).fit(Xtr, ytr)
            p = predict(est.model_, Xte)
            acc = np.mean(p.output == yte)
            if acc >= acc0 - 0.01 and (best is None or p.cost.mean() < best[0]):
                best = (p.cost.mean(), p)
        assert best is not None, cls.__name__
        cost, p = best
        assert cost <= cost0 / 3, (cls.__name__, cost, cost0)
        assert cost <= 2 / 3 * min(ee), (cls.__name__, cost, ee)
        first = p.stage == 0
        assert first.mean() >= 0.5
        assert not p.features_used[first, 1].any()
