"""Cronus and CSCC on categorical columns (issue #34): ``categorical_features``
reaches the tree bank they build, with GreedyMiserClassifier's meaning."""
import numpy as np
import pytest

from skinflint.runtimes.reference import predict
from skinflint.trainers.cascades.cronus import CronusClassifier, CSCCClassifier
from skinflint.verify import verify

N_CAT = 100
HIDDEN = np.sort(np.random.default_rng(7).choice(N_CAT, 25, replace=False))


def hidden_set_data(n=4000, seed=0):
    """y = 1 iff the category is one of 25 scattered codes of 100 (a threshold
    on the code isolates a run of them per split, one set split takes them
    all), plus a weakly informative numeric feature."""
    rng = np.random.default_rng(seed)
    c = rng.integers(0, N_CAT, n)
    X = np.c_[c, rng.normal(size=n) + 0.3 * np.isin(c, HIDDEN)].astype(np.float32)
    return X, np.isin(c, HIDDEN).astype(int)


FAST = dict(n_stages=2, exit_fraction=0.15, lambda_inflation=1.3, early_stopping=False, fine_tune="none",
            n_estimators=10, max_depth=2, learning_rate=0.3, min_samples_leaf=5, max_cycles=2, cost_tradeoff=1e-5,
            bank="gbrt", random_state=0, verbose=0)


def has_set_splits(model):
    return any(getattr(n, "categories", None) is not None and n.categories.is_categorical.any()
               for n in model.nodes)


@pytest.mark.parametrize("cls", [CronusClassifier, CSCCClassifier])
def test_cascades_take_categorical_columns(cls):
    X, y = hidden_set_data()
    Xt, yt = hidden_set_data(seed=1)
    cat = cls(categorical_features=[0], min_data_per_group=10, **FAST).fit(X, y)
    assert has_set_splits(cat.model_)
    report = verify(cat.model_, Xt[:100], runtimes=("onnx", "c"), max_rows=600)
    assert report.ok, report.table()
    num = cls(**FAST).fit(X, y)
    assert not has_set_splits(num.model_)
    a, b = cat.score(Xt, yt), num.score(Xt, yt)
    # 10 depth-2 trees: one set split takes the 25 categories, thresholds on the code a few runs of them
    # (measured: 1.0 vs 0.84 Cronus, 0.85 CSCC)
    assert a > 0.99 and b < 0.92, (a, b)


def test_a_category_frame_reaches_the_bank():
    """pandas ``category`` columns (``"from_dtype"``): coded by the dtype's
    order at fit and at predict, so the frame and its codes predict alike."""
    pd = pytest.importorskip("pandas")
    X, y = hidden_set_data(3000)
    names = np.array([f"k{i:03d}" for i in range(N_CAT)])
    frame = pd.DataFrame({"kind": pd.Categorical(names[X[:, 0].astype(int)], categories=list(names)),
                          "noise": X[:, 1]})
    m = CronusClassifier(categorical_features="from_dtype", min_data_per_group=10, **FAST).fit(frame, y)
    assert m.is_categorical_.tolist() == [True, False] and has_set_splits(m.model_)
    np.testing.assert_array_equal(m.predict(frame), predict(m.model_, X).output)
