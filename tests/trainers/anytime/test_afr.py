"""AFR (Xu et al. 2013; thesis §2.2): the paper's synthetic XOR result, the
anytime budget semantics of the exported model, parity and determinism.

The adjoint gradient is tested against finite differences of a re-solved SVM
in ``test_linear_svm.py`` (it lives with the solver)."""
import math

import numpy as np
import pytest

from skinflint import ir
from skinflint.datasets import make_xor10
from skinflint.runtimes.reference import predict
from skinflint.trainers.anytime.afr import AFRClassifier
from skinflint.trainers.linear.linear_svm import LinearSVMClassifier
from skinflint.verify import verify

SEEDS = (0, 1, 2)


def _xor(seed):
    """The paper's XOR (§5): 640 training / 360 test rows of 1000."""
    ds = make_xor10(seed=seed)
    return (ds, *ds.split(0.36, seed=seed + 100))


def _afr(ds, **kw):
    # the paper's XOR demo: phi in R^2, the same two dimensions refined
    # across lambda blocks (Fig. 2's ~140 iterations of w1, w2)
    return AFRClassifier(dims_per_block=2, append_dims=False, feature_costs=ds.feature_costs,
                         random_state=0, **kw)


@pytest.fixture(scope="module")
def xor_fits():
    out = {}
    for seed in SEEDS:
        ds, tr, te = _xor(seed)
        out[seed] = (_afr(ds).fit(tr.X, tr.y), tr, te)
    return out


def _acc(model, X, y, budget):
    return float(np.mean(predict(model, X, budget=budget).output == y))


def test_xor_reproduces_the_papers_anytime_result(xor_fits):
    """Paper §5 / Fig. 2 reports test 0.84 at cost 25 and 0.98 at cost 95;
    the issue's gates, mean over seeds 0-2: >= 0.75 at budget 25, >= 0.85
    at full budget, and every checkpoint costing >= 3 at least 10 points
    above a linear SVM on all features (0.51-0.53 here: XOR is not linear).
    Measured: 0.82 / 0.91, worst checkpoint 0.74 (docs/afr.md)."""
    at25, full = [], []
    for seed, (m, tr, te) in xor_fits.items():
        model = m.model_
        at25.append(_acc(model, te.X, te.y, 25.0))
        full.append(_acc(model, te.X, te.y, None))
        svm = LinearSVMClassifier(feature_costs=tr.feature_costs).fit(tr.X, tr.y).score(te.X, te.y)
        for ck in m.checkpoints_:
            if ck["static_cost"] >= 3:
                acc = _acc(model, te.X, te.y, ck["static_cost"])
                assert acc >= svm + 0.10, (seed, ck["static_cost"], acc, svm)
    assert np.mean(at25) >= 0.75
    assert np.mean(full) >= 0.85


def test_checkpoints_and_budgets(xor_fits):
    m, tr, te = xor_fits[0]
    model = m.model_
    out = model.nodes[model.output]
    assert out.kind == "anytime" and len(out.checkpoints) == len(m.checkpoints_)
    costs = [ck["static_cost"] for ck in m.checkpoints_]
    # checkpoint 0 is the bias alone; each later one is stored before a tree
    # that pays a new feature, so its static cost is strictly larger
    assert costs[0] == 0.0
    assert all(a < b for a, b in zip(costs[:-1], costs[1:-1] + [math.inf]))
    assert costs[-1] >= costs[-2] and costs[-1] == m.static_cost_
    K = len(costs)
    X = np.concatenate([tr.X, te.X])
    for k, B in enumerate([0.0] + costs + [math.inf]):
        p = predict(model, X, budget=B)
        assert np.all(p.cost <= B)
        assert np.all((p.stage >= 0) & (p.stage <= K - 1))
        if 1 <= k <= K:          # B = checkpoint (k-1)'s static cost
            assert np.all(p.stage >= k - 1), (k - 1, B)
    # budget 0: every row gets checkpoint 0's bias (the weighted class mean)
    p0 = predict(model, X, budget=0.0)
    b0 = np.float32(m.checkpoints_[0]["b"])
    assert np.all(p0.scores[:, 0] == b0) and np.all(p0.stage == 0) and np.all(p0.cost == 0)
    assert set(np.unique(p0.output)) == {m.classes_[int(b0 > 0)]}
    # no limit: the last checkpoint
    assert np.all(predict(model, X).stage == K - 1)


def test_parity_with_budgets(xor_fits):
    """Reference == ONNX == C (dense and on-demand), bit for bit, at budgets
    0, every checkpoint's static cost and none; then adversarial rows with
    budgets around each row's own cost."""
    m, tr, te = xor_fits[1]
    model = m.model_
    X = te.X[:40]
    budgets = [0.0] + [ck["static_cost"] for ck in m.checkpoints_] + [math.inf]
    Xr = np.tile(X, (len(budgets), 1))
    Br = np.repeat(budgets, len(X))
    report = verify(model, Xr, budget=Br, budgets=None, adversarial=False)
    assert report.ok, report.table()
    report = verify(model, X)
    assert report.ok, report.table()


def test_json_round_trip_and_determinism():
    ds, tr, te = _xor(0)
    a = _afr(ds).fit(tr.X[:400], tr.y[:400])
    b = _afr(ds).fit(tr.X[:400], tr.y[:400])
    ja, jb = ir.to_json(a.to_ir()), ir.to_json(b.to_ir())
    assert ja == jb
    back = ir.from_json(ja)
    assert ir.model_hash(back) == ir.model_hash(a.model_)
    np.testing.assert_array_equal(predict(back, te.X, budget=25.0).scores, a.decision_function(te.X, 25.0)[:, None])
    c = _afr(ds).set_params(random_state=1).fit(tr.X[:400], tr.y[:400])
    assert ir.to_json(c.to_ir()) != ja      # the seed does reach the split


def test_eval_set_is_the_holdout_and_checkpoint_views(xor_fits):
    ds, tr, te = _xor(2)
    m = _afr(ds, trees_per_dim=3, n_blocks=4).fit(tr.X, tr.y, eval_set=(te.X[:100], te.y[:100]))
    assert m.split_sizes_["O"] == 100
    assert m.split_sizes_["T"] + m.split_sizes_["V"] == len(tr.y)
    # checkpoint k's own margins equal the anytime model's at its static cost
    # (every row completes k there, and k is then the last one that fits
    # unless a row also completes k + 1, which costs strictly more)
    staged = list(m.staged_decision_function(te.X))
    assert len(staged) == len(m.checkpoints_)
    last = m.checkpoints_[-1]["static_cost"]
    np.testing.assert_array_equal(staged[-1], m.decision_function(te.X, budget=last))
    curve = m.anytime_curve(te.X, te.y)
    assert len(curve) == len(m.checkpoints_) + 1 and curve[-1]["budget"] == math.inf
    assert curve[-1]["accuracy"] == m.score(te.X, te.y)


def test_groups_and_tree_cost_are_paid():
    """Descriptor groups: a checkpoint's static cost counts a group once;
    c_e per tree adds to every checkpoint after it."""
    rng = np.random.default_rng(0)
    X = rng.normal(size=(600, 6)).astype(np.float32)
    y = ((X[:, 0] > 0) ^ (X[:, 3] > 0)).astype(int)
    m = AFRClassifier(dims_per_block=2, trees_per_dim=5, n_blocks=4, append_dims=False,
                      feature_costs=np.ones(6), feature_groups=[0, 0, 0, 1, 1, 1],
                      group_costs=[3.0, 10.0], tree_eval_cost=0.25, random_state=0).fit(X, y)
    model = m.model_
    for k, ck in enumerate(m.checkpoints_):
        sub = m.checkpoint_model(k)
        u = ir.reachable_units(sub)
        n_trees = sum(int(mask.sum()) for mask in u.trees.values())
        expect = float(u.features.sum()) + 3.0 * u.groups[0] + 10.0 * u.groups[1] + 0.25 * n_trees
        assert ck["static_cost"] == expect
    assert m.score(X, y) > 0.8        # XOR of two features; measured 0.9+
    assert np.all(predict(model, X).cost <= m.static_cost_)


def test_bad_params_are_refused():
    X = np.random.default_rng(0).normal(size=(90, 3))
    with pytest.raises(ValueError, match="early_stop"):
        AFRClassifier(early_stop="auc").fit(X, np.arange(90) % 2)
    with pytest.raises(ValueError, match="dims_per_block"):
        AFRClassifier(dims_per_block=0).fit(X, np.arange(90) % 2)


def test_spambase_anytime_curve_with_descriptor_groups():
    """Real data with descriptor groups (docs/afr.md's table): measured
    0.939 in full and 0.930 at budget 25, Greedy Miser 0.932 at cost 27."""
    from skinflint.datasets import load_spambase
    try:
        ds = load_spambase()
    except FileNotFoundError as e:
        pytest.skip(str(e))
    train, te = ds.split(0.3, seed=0)
    tr, va = train.split(0.25, seed=1)
    m = AFRClassifier(feature_costs=ds.costs, random_state=0).fit(tr.X, tr.y, eval_set=(va.X, va.y))
    # 2 points below the measured values: a broken gradient or checkpoint
    # (e.g. w of the wrong checkpoint) costs far more than that
    assert m.score(te.X, te.y) >= 0.92
    assert np.mean(m.predict(te.X, budget=25.0) == te.y) >= 0.91
    costs = [ck["static_cost"] for ck in m.checkpoints_]
    # the first feature of a group pays the group too: any checkpoint after
    # the bias costs at least the cheapest group + feature (2 + 0.5); a
    # trainer that ignored groups would store one at 0.5 or 1
    assert costs[1] >= 2.5
    p = predict(m.model_, te.X, budget=np.full(len(te.y), costs[5]))
    assert np.all(p.cost <= costs[5]) and np.all(p.stage >= 5)


def _quadrants(n, seed):
    """Four classes, the quadrant of (x0, x3) (cost 10 each); x1, x2 are
    cheap noisy copies of x0 and x3 (cost 1 each), x4, x5 noise (cost 5)."""
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, 6))
    X[:, 1] = X[:, 0] + 0.7 * rng.normal(size=n)
    X[:, 2] = X[:, 3] + 0.7 * rng.normal(size=n)
    y = np.array(["a", "b", "c", "d"])[2 * (X[:, 0] > 0) + (X[:, 3] > 0)]
    return X.astype(np.float32), y


@pytest.fixture(scope="module")
def multiclass_fit():
    X, y = _quadrants(1600, 0)
    costs = np.array([10.0, 1.0, 1.0, 10.0, 5.0, 5.0])
    m = AFRClassifier(dims_per_block=2, trees_per_dim=4, n_blocks=4, feature_costs=costs,
                      random_state=0).fit(X[:1000], y[:1000], eval_set=(X[1000:1300], y[1000:1300]))
    return m, X[1300:], y[1300:]


def test_multiclass_learns_with_shared_feature_costs(multiclass_fit):
    """One-vs-all AFR (thesis §2.2.4) over one paid-feature state: a feature
    any class has paid is free for the others, so each feature opens at most
    one global checkpoint (with a state per class there could be one per
    class and feature: up to 4 x 6 here)."""
    m, X, y = multiclass_fit
    model = m.model_
    assert model.task.kind == "multiclass" and model.task.n_outputs == 4
    assert m.score(X, y) >= 0.9           # prior 0.25; the exact quadrant needs x0 and x3; measured 0.99
    costs = [ck["static_cost"] for ck in m.checkpoints_]
    assert costs[0] == 0.0 and all(a < b for a, b in zip(costs[:-2], costs[1:-1]))
    assert costs[-1] >= costs[-2] and costs[-1] == m.static_cost_
    assert len(m.checkpoints_) <= X.shape[1] + 2
    new = [f for ck in m.checkpoints_ for f in ck["new_features"]]
    assert len(new) == len(set(new))
    assert all(ck["new_features"] for ck in m.checkpoints_[1:-1])
    # every class has trees (none starved by another's paid features)
    assert {t["cls"] for t in m.trees_} == {0, 1, 2, 3}
    # anytime: the priors at budget 0, the cheap noisy copies first (measured
    # 0.23, 0.63 at cost 2, 0.99 at 22)
    acc = [np.mean(m.predict(X, budget=B) == y) for B in costs]
    assert acc[0] < 0.4 < acc[1] < 0.8 < acc[-1]
    assert set(m.checkpoints_[1]["new_features"]) <= {"x1", "x2"}


def test_multiclass_platt_is_folded_into_each_checkpoint(multiclass_fit):
    """Column k of checkpoint c is class k's Platt log-odds -(A_k f_k + B_k):
    weights -A_k w_k on class k's segments only, bias -(A_k b_k + B_k)."""
    m, X, y = multiclass_fit
    nodes = m.model_.nodes
    cks = nodes[m.model_.output].checkpoints
    for c, ck in enumerate(m.checkpoints_):
        lin = nodes[cks[c]]
        A = np.array([ab[0] for ab in ck["platt"]])
        B = np.array([ab[1] for ab in ck["platt"]])
        np.testing.assert_array_equal(lin.bias, np.float32(-(A * np.array(ck["b"]) + B)))
        for i in range(lin.n_inputs):
            seg = nodes[lin.input_index[i]]
            k = int(seg.name.split("_class")[1].split("_")[0])
            d = int(seg.name.split("_dim")[1])
            expect = np.zeros(4, np.float32)
            expect[k] = np.float32(-A[k] * ck["w"][k][d])
            np.testing.assert_array_equal(lin.weights[i], expect)
    # checkpoint 0 reads nothing: every row gets the calibrated priors
    p0 = predict(m.model_, X, budget=0.0)
    assert np.all(p0.cost == 0) and np.all(p0.scores == nodes[cks[0]].bias)


def test_multiclass_parity_with_budgets(multiclass_fit):
    """Reference == ONNX == C, bit for bit, at budgets 0, each global
    checkpoint's static cost and none, and at adversarial budgets."""
    m, X, y = multiclass_fit
    X = X[:30]
    budgets = [0.0] + [ck["static_cost"] for ck in m.checkpoints_] + [math.inf]
    Xr = np.tile(X, (len(budgets), 1))
    Br = np.repeat(budgets, len(X))
    report = verify(m.model_, Xr, budget=Br, budgets=None, adversarial=False)
    assert report.ok, report.table()
    report = verify(m.model_, X)
    assert report.ok, report.table()
    for k, B in enumerate(budgets[1:-1]):
        assert np.all(predict(m.model_, X, budget=B).stage >= k)
