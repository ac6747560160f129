"""LightGBM import (issue 19): on float32 rows (test rows and verify's
adversarial rows: every threshold, +-1 ulp, NaN, the zero band) the
imported model's float64 margin is LightGBM's ``predict(raw_score=True)``
bit for bit, which is the sequential double sum of the leaves LightGBM
reports with pred_leaf; labels agree on every row; every backend equals
the reference."""
import numpy as np
import pytest

lgb = pytest.importorskip("lightgbm")

from skinflint import ir  # noqa: E402
from skinflint.importers.lightgbm import from_lightgbm  # noqa: E402
from skinflint.ir import FeatureCosts  # noqa: E402
from skinflint.runtimes.reference import ReferenceRuntime  # noqa: E402
from skinflint.verify import verify  # noqa: E402

from ._rows import check_rows, data, proba_bound, same_bits64  # noqa: E402

X, Y_BIN, Y_REG, Y_3 = data()
BASE = {"num_leaves": 8, "verbose": -1, "num_threads": 1, "min_data_in_leaf": 5}


def _leaf_values(b, R):
    """[N, T] LightGBM's own leaf value for each row in each tree."""
    leaves = b.predict(R, pred_leaf=True)
    T = leaves.shape[1]
    table = [np.array([b.get_leaf_output(t, j) for j in range(leaves[:, t].max() + 1)]) for t in range(T)]
    return np.stack([table[t][leaves[:, t]] for t in range(T)], axis=1)


def check_against_lightgbm(b, m, R):
    """The margins are LightGBM's raw score over the bank's divisor (1, or
    the iterations in random-forest mode, where raw_score=True is the
    undivided sum), bit for bit; the raw score is the sequential double sum
    of the leaves LightGBM reports."""
    pred = ReferenceRuntime(m).predict(R)
    scores = pred.scores
    raw = b.predict(R, raw_score=True).reshape(len(R), -1)
    div = m.nodes[0].divisor                        # x / 1.0 == x bit for bit
    assert scores.dtype == np.float64 and same_bits64(scores, raw / div)
    vals = _leaf_values(b, R)
    K = scores.shape[1]
    for k in range(K):
        v = vals[:, k::K]
        d64 = np.zeros(len(R))
        for t in range(v.shape[1]):
            d64 = d64 + v[:, t]
        # LightGBM's raw score is this sequential double sum, undivided
        # even in random-forest mode
        assert same_bits64(d64, raw[:, k])
    if m.task.kind != "regression":                 # labels on every row
        lab = (raw[:, 0] > 0) if m.task.kind == "binary" else raw.argmax(1)   # div > 0: same labels
        assert np.array_equal(np.asarray(pred.output, np.int64), np.asarray(lab, np.int64))
    if pred.proba is not None:                      # the bound against LightGBM's own transform
        src = b.predict(R).reshape(len(R), -1)
        src = np.concatenate([1 - src, src], 1) if src.shape[1] == 1 else src
        assert np.all(np.abs(pred.proba - src) <= proba_bound(scores, src.shape[1]))
    return scores, raw


@pytest.mark.parametrize("params,y,verified", [
    ({"objective": "binary"}, Y_BIN, True),
    ({"objective": "regression"}, Y_REG, True),
    ({"objective": "multiclass", "num_class": 3}, Y_3, True),
    ({"objective": "binary", "use_missing": False}, Y_BIN, False),
    ({"objective": "huber"}, Y_REG, False),
    ({"objective": "binary", "boosting": "dart", "drop_rate": 0.3}, Y_BIN, False),
    ({"objective": "binary", "boosting": "goss"}, Y_BIN, False),
    ({"objective": "multiclassova", "num_class": 3}, Y_3, False),
], ids=["binary", "regression", "multiclass", "no-missing", "huber", "dart", "goss", "ova"])
def test_margins_are_lightgbms_raw_score_bit_for_bit(params, y, verified):
    b = lgb.train({**BASE, **params}, lgb.Dataset(X, y), 15)
    m = from_lightgbm(b)
    assert m.nodes[0].precision == "float64" and ir.to_dict(m)["version"] == 2
    R = check_rows(m, X, finite=False)
    check_against_lightgbm(b, m, R)
    if verified:
        rep = verify(m, X[:64])
        assert rep.ok, rep.table()


def test_sklearn_wrapper_file_and_string(tmp_path):
    clf = lgb.LGBMClassifier(n_estimators=8, num_leaves=6, verbose=-1, n_jobs=1).fit(X, Y_3 + 10)
    m = from_lightgbm(clf, FeatureCosts.from_arrays(np.arange(6.0)))
    assert m.task.classes == (10, 11, 12)
    assert np.array_equal(ReferenceRuntime(m).predict(X).output, clf.predict(X))
    path = tmp_path / "m.txt"
    clf.booster_.save_model(path)
    want = ReferenceRuntime(m).predict(X).scores
    assert same_bits64(ReferenceRuntime(from_lightgbm(path)).predict(X).scores, want)
    assert same_bits64(ReferenceRuntime(from_lightgbm(clf.booster_.model_to_string())).predict(X).scores, want)
    # the file is read by the importer (not LightGBM's loader): num_iteration
    # keeps LightGBM's meaning, iterations of num_tree_per_iteration trees
    part = from_lightgbm(clf.booster_, num_iteration=3)
    assert ir.to_json(from_lightgbm(path, num_iteration=3)) == ir.to_json(part)
    assert same_bits64(ReferenceRuntime(part).predict(X).scores,
                       clf.booster_.predict(X, raw_score=True, num_iteration=3))


def test_zero_as_missing_splits_follow_lightgbm_in_and_around_the_zero_band():
    Xz = np.where(np.isnan(X), 0, X).astype(np.float32)
    Xz[::3, 1] = 0.0
    b = lgb.train({**BASE, "objective": "binary", "zero_as_missing": True}, lgb.Dataset(Xz, Y_BIN), 10)
    assert any(int(d) >> 2 & 3 == 1 for line in b.model_to_string().split("\n")
               if line.startswith("decision_type=") for d in line[14:].split())   # Zero splits exist
    m = from_lightgbm(b)
    z = np.float32(1e-35)
    band = np.float32([0.0, -0.0, z, -z, np.nextafter(z, np.float32(1)), np.nextafter(-z, np.float32(1)),
                       np.nextafter(z, np.float32(-1)), np.nextafter(-z, np.float32(-1)), 1e-36, -1e-36,
                       np.nan, 1e-30, -1e-30])
    rows = [Xz.copy() for _ in band]
    for r, v in zip(rows, band):
        r[:, :] = np.where(np.random.default_rng(1).random(r.shape) < 0.5, v, r)
    check_against_lightgbm(b, m, np.concatenate(rows + [check_rows(m, Xz, finite=False)]))
    rep = verify(m, Xz[:32])
    assert rep.ok, rep.table()


def test_zero_band_reads_as_zero_in_every_split():
    """LightGBM's predictor leaves |x| <= 1e-35f out of a row, so x reads as
    0.0 even in NaN- and None-missing splits whose threshold lies in the band."""
    Xz = np.where(np.isnan(X), 0, X).astype(np.float32)
    z = np.float32(1e-35)
    Xz[::4, 2] = z
    Xz[1::4, 2] = -z
    Xz[2::8, 2] = np.nextafter(-z, np.float32(-1))
    for miss in ({}, {"use_missing": False}):
        b = lgb.train({**BASE, "objective": "regression", **miss}, lgb.Dataset(Xz, Y_REG), 20)
        m = from_lightgbm(b)
        R = np.concatenate([Xz, check_rows(m, Xz, finite=False)])
        check_against_lightgbm(b, m, R)


def test_random_forest_mode_divides_by_the_iterations():
    """boosting='rf': LightGBM's predict() divides the sum of the trees by
    the number of iterations (raw_score=True returns the undivided sum); the
    margin is that mean, bit for bit."""
    b = lgb.train({**BASE, "objective": "regression", "boosting": "rf", "bagging_freq": 1,
                   "bagging_fraction": 0.5}, lgb.Dataset(X, Y_REG), 12)
    m = from_lightgbm(b)
    assert m.nodes[0].divisor == 12.0
    R = check_rows(m, X, finite=False)
    got = ReferenceRuntime(m).predict(R).scores[:, 0]
    assert same_bits64(got, b.predict(R))
    assert same_bits64(got, b.predict(R, raw_score=True) / 12.0)
    check_against_lightgbm(b, m, R)
    assert "/ iterations" in m.metadata["source"]["exact"]
    b3 = lgb.train({**BASE, "objective": "multiclass", "num_class": 3, "boosting": "rf", "bagging_freq": 1,
                    "bagging_fraction": 0.5}, lgb.Dataset(X, Y_3), 7)
    m3 = from_lightgbm(b3)
    assert m3.nodes[0].divisor == 7.0
    R3 = check_rows(m3, X, finite=False)
    pred = ReferenceRuntime(m3).predict(R3)
    raw = b3.predict(R3, raw_score=True)
    assert same_bits64(pred.scores, raw / 7.0)
    assert np.array_equal(pred.output, raw.argmax(1))
    rep = verify(m3, X[:32])
    assert rep.ok, rep.table()


@pytest.mark.parametrize("params,match", [
    ({"linear_tree": True}, "linear"),
    ({"objective": "poisson"}, "raw_margin=True"),
])
def test_refused_with_a_message(params, match):
    Xf = np.nan_to_num(X)
    b = lgb.train({**BASE, "objective": "regression", **params}, lgb.Dataset(Xf, np.abs(Y_REG)), 3)
    with pytest.raises(ValueError, match=match):
        from_lightgbm(b)


def test_init_score_in_front():
    b = lgb.train({**BASE, "objective": "regression"}, lgb.Dataset(X, Y_REG), 5)
    m = from_lightgbm(b, init_score=0.5)
    v = _leaf_values(b, X)
    s = np.full(len(X), 0.5)
    for t in range(v.shape[1]):
        s = s + v[:, t]
    assert same_bits64(ReferenceRuntime(m).predict(X).scores[:, 0], s)


def test_a_model_with_one_leaf_trees_imports_and_matches_lightgbm():
    """LightGBM writes ``leaf_weight=`` empty for a tree that never split; such
    a model is whole, not damaged (CEGB at a high tradeoff makes them)."""
    rng = np.random.default_rng(3)
    X = rng.random((60, 3)).astype(np.float32)
    y = np.zeros(60)
    y[0] = 1.0
    b = lgb.train({"objective": "regression", "min_data_in_leaf": 100, "verbose": -1}, lgb.Dataset(X, y), 2)
    text = b.model_to_string()
    assert "num_leaves=1\n" in text and "leaf_weight=\n" in text
    m = from_lightgbm(text)
    np.testing.assert_array_equal(ReferenceRuntime(m).predict(X).scores[:, 0],
                                  b.predict(X, raw_score=True).astype(np.float64))


def test_one_leaf_trees_among_split_trees_match_lightgbm_bit_for_bit():
    """A class no training row has: its gradient is the same on every row in
    the first rounds, so LightGBM writes a one-leaf tree for it (empty
    ``leaf_weight=``) between the other classes' split trees; the import is
    LightGBM's raw score bit for bit on test rows and verify's rows."""
    rng = np.random.default_rng(0)
    R = rng.random((300, 4)).astype(np.float32)
    y = (R[:, 0] > 0.5).astype(int)
    b = lgb.train({**BASE, "objective": "multiclass", "num_class": 3, "num_leaves": 4}, lgb.Dataset(R, y), 4)
    text = b.model_to_string()
    leaves = [int(t.split("\n", 1)[0]) for t in text.split("num_leaves=")[1:]]
    assert 1 in leaves and max(leaves) > 1 and "leaf_weight=\n" in text
    m = from_lightgbm(b)
    check_against_lightgbm(b, m, check_rows(m, R, finite=False))
    rep = verify(m, R[:32])
    assert rep.ok, rep.table()


def test_cegb_lazy_ranker_with_a_one_leaf_model_imports():
    """CEGB's lazy penalty at a high tradeoff leaves lambdarank a one-leaf
    first tree (training stops there): the ranking benchmark's case."""
    rng = np.random.default_rng(1)
    R = rng.random((600, 6)).astype(np.float32)
    y = np.clip((3 * R[:, 0] + R[:, 1]).round(), 0, 4).astype(int)
    m = lgb.LGBMRanker(n_estimators=5, num_leaves=8, min_child_samples=5, verbose=-1, num_threads=1,
                       cegb_tradeoff=1.0, cegb_penalty_feature_lazy=[1, 5, 20, 50, 100, 150])
    m.fit(R, y, group=[15] * 40)
    assert "num_leaves=1\n" in m.booster_.model_to_string()
    imp = from_lightgbm(m, [1, 5, 20, 50, 100, 150])
    check_against_lightgbm(m.booster_, imp, check_rows(imp, R, finite=False))
