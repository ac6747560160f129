"""Retrofitted Early Exit (issue 31 item 2): checkpoints on a trained
LightGBM booster, thresholds chosen on validation rows so that at most
``tolerance`` of them change label (measured through the runtime), rows
that reach the end get the source's margin, and the model verifies."""
import numpy as np
import pytest

from skinflint.compress import cheap_first_order, retrofit_exits
from skinflint.ir import FeatureCosts
from skinflint.runtimes.reference import ReferenceRuntime
from skinflint.verify import verify

lgb = pytest.importorskip("lightgbm")
from skinflint.importers.lightgbm import from_lightgbm  # noqa: E402

RNG = np.random.default_rng(7)
X = RNG.normal(size=(900, 6)).astype(np.float32)
Y = ((X[:, 0] + 0.5 * X[:, 1] - X[:, 4] * X[:, 5] + 0.3 * RNG.normal(size=900)) > 0).astype(int)
COSTS = FeatureCosts.from_arrays([20.0, 1.0, 5.0, 2.0, 50.0, 1.0])


@pytest.fixture(scope="module")
def booster():
    b = lgb.train({"objective": "binary", "num_leaves": 6, "verbose": -1, "num_threads": 1, "seed": 0},
                  lgb.Dataset(X[:500], Y[:500]), 40)
    return from_lightgbm(b, COSTS)


@pytest.mark.parametrize("order", ["source", "cheap-first"])
@pytest.mark.parametrize("tolerance", [0.0, 0.03])
def test_thresholds_keep_the_labels_within_the_tolerance(booster, order, tolerance):
    Xv = X[500:]
    r = retrofit_exits(booster, Xv, every=5, tolerance=tolerance, order=order)
    src = ReferenceRuntime(booster).predict(Xv)
    got = ReferenceRuntime(r.model).predict(Xv)
    changed = np.mean(np.asarray(got.output) != np.asarray(src.output))
    assert changed <= tolerance and r.agreement == 1 - changed
    assert np.mean(got.cost) == r.cost <= np.mean(src.cost)
    # rows that reach the last stage get the source's float64 margin rounded once
    last = got.stage == len(r.thresholds)
    assert last.any() or tolerance > 0
    assert np.array_equal(got.scores[last, 0].astype(np.float32), src.scores[last, 0].astype(np.float32))
    if tolerance > 0:
        assert (got.stage < len(r.thresholds)).any()       # someone exits early


def test_cheap_first_order_and_auto_and_verify(booster):
    perm = cheap_first_order(booster, booster.nodes[0])
    assert sorted(perm.tolist()) == list(range(booster.nodes[0].n_trees))
    r = retrofit_exits(booster, X[500:], every=5, tolerance=0.02)
    other = retrofit_exits(booster, X[500:], every=5, tolerance=0.02,
                           order="source" if r.order == "cheap-first" else "cheap-first")
    assert r.cost <= other.cost                               # auto keeps the cheaper order
    rep = verify(r.model, X[500:564])
    assert rep.ok, rep.table()


def test_refused(booster):
    with pytest.raises(ValueError, match="every"):
        retrofit_exits(booster, X[500:], every=0)
    with pytest.raises(ValueError, match="order"):
        retrofit_exits(booster, X[500:], order="random")


def test_multiclass_booster_is_refused_with_one_clear_error():
    b3 = lgb.train({"objective": "multiclass", "num_class": 3, "num_leaves": 4, "verbose": -1, "num_threads": 1},
                   lgb.Dataset(X[:300], (X[:300, 0] > 0).astype(int) + (X[:300, 1] > 1)), 4)
    with pytest.raises(ValueError, match="retrofit_exits: boosted ensembles are supported for a binary task "
                                         r"\(one margin\) only; this model is a multiclass booster with 3 outputs"):
        retrofit_exits(from_lightgbm(b3), X[500:], every=2)
