"""Category-set splits of the histogram booster (issue #34): the search,
the ways ``categorical_features`` is given, pandas ``category`` columns,
the IR export and the routing rule for values that are not known codes."""
import json

import numpy as np
import pytest
from sklearn.base import clone

from skinflint import ir
from skinflint.runtimes.reference import ReferenceRuntime
from skinflint.trainers import GreedyMiserClassifier, GreedyMiserRegressor
from skinflint.trainers.boosting.booster import BinnedData, boost, set_arrays
from skinflint.trainers.boosting.grower import CategoryOptions
from skinflint.trainers.boosting.losses import make_loss
from skinflint.trainers.boosting.predictor import predict_raw_sets

HIDDEN = [3, 17, 42]


def hidden_set_data(n=20_000, n_cat=60, seed=0):
    """y = 1 iff the category is 3, 17 or 42: no threshold on the code
    separates the classes, one set split does."""
    rng = np.random.default_rng(seed)
    c = rng.integers(0, n_cat, n)
    noise = rng.normal(size=n)
    X = np.c_[c, noise].astype(np.float32)
    return X, np.isin(c, HIDDEN).astype(int)


def stump(**kw):
    params = dict(n_estimators=1, max_depth=1, learning_rate=1.0, verbose=0, random_state=0)
    params.update(kw)
    return GreedyMiserClassifier(**params)


def root_codes(model):
    bank = model.model_.nodes[0]
    assert bank.categories is not None, "the root split is numeric"
    return bank.categories.codes(int(bank.roots[0])).tolist()


def test_one_set_split_separates_what_no_threshold_can():
    X, y = hidden_set_data()
    cat = stump(categorical_features=[0]).fit(X, y)
    assert root_codes(cat) == HIDDEN
    assert cat.score(X, y) == 1.0
    # the control: a numeric stump on the same codes cannot: each side of any threshold holds at most
    # 2 of the 3 positive categories among >= 15 others, so both leaves predict 0 (accuracy about 0.95)
    num = stump().fit(X, y)
    assert num.model_.nodes[0].categories is None
    assert num.score(X, y) < 0.97


@pytest.mark.parametrize("spec", [[True, False], np.array([0]), ["code"], "names-from-frame"])
def test_every_form_of_categorical_features_gives_the_same_trees(spec):
    pd = pytest.importorskip("pandas")
    X, y = hidden_set_data(6000)
    ref = stump(categorical_features=[0], min_data_per_group=10).fit(X, y)
    if spec == "names-from-frame":
        frame = pd.DataFrame({"code": X[:, 0], "noise": X[:, 1]})
        m = stump(categorical_features=["code"], min_data_per_group=10).fit(frame, y)
    else:
        m = stump(categorical_features=spec, feature_names=["code", "noise"], min_data_per_group=10).fit(X, y)
    assert root_codes(m) == root_codes(ref) == HIDDEN
    assert m.is_categorical_.tolist() == [True, False]
    a, b = json.loads(ir.to_json(m.model_)), json.loads(ir.to_json(ref.model_))
    assert a["nodes"] == b["nodes"]


def test_from_dtype_reads_pandas_category_columns():
    pd = pytest.importorskip("pandas")
    X, y = hidden_set_data(6000)
    names = np.array([f"k{i:02d}" for i in range(60)])
    frame = pd.DataFrame({"kind": pd.Categorical(names[X[:, 0].astype(int)], categories=list(names)),
                          "noise": X[:, 1]})
    m = stump(categorical_features="from_dtype", min_data_per_group=10).fit(frame, y)
    assert m.is_categorical_.tolist() == [True, False]
    # the categories' order in the dtype is their code: k03, k17, k42 are codes 3, 17, 42
    assert root_codes(m) == HIDDEN
    assert m.score(frame, y) == 1.0
    # a frame whose dtype lists the categories in another order is encoded with the training order
    shuffled = frame.copy()
    shuffled["kind"] = pd.Categorical(frame["kind"].astype(str), categories=list(names[::-1]))
    np.testing.assert_array_equal(m.decision_function(shuffled), m.decision_function(frame))
    # an unseen category and a missing one go right, as the categories outside the set do
    odd = pd.DataFrame({"kind": pd.Categorical(["never-seen", None, "k05", "k03"]), "noise": np.zeros(4)})
    d = m.decision_function(odd)
    assert d[0] == d[1] == d[2] != d[3]
    # without a frame "from_dtype" finds no categorical feature: the numeric model
    plain = stump(categorical_features="from_dtype", min_data_per_group=10).fit(X, y)
    assert plain.model_.nodes[0].categories is None


@pytest.mark.parametrize("spec, message", [
    ("everything", "categorical_features: expected None, 'from_dtype'"),
    ([True], "a bool mask needs 2 entries"),
    ([2], r"indices must lie in \[0, 2\)"),
    (["nope"], "unknown feature name 'nope'"),
])
def test_bad_categorical_features_are_one_line_errors(spec, message):
    X, y = hidden_set_data(500)
    with pytest.raises(ValueError, match=message):
        stump(categorical_features=spec, feature_names=["code", "noise"]).fit(X, y)


def test_ir_round_trip_and_reference_runtime_equal_the_trainer():
    # 300 categories of about 27 rows: LightGBM's rule keeps those covering 99% of the rows (297), more than
    # 255 bins, so the rows are binned as uint16 (a few codes, ~1% of the rows, stay in the "other" bin)
    X, y = hidden_set_data(8000, n_cat=300, seed=1)
    rng = np.random.default_rng(2)
    y = np.where(rng.random(len(y)) < 0.1, 1 - y, y)   # label noise: many trees, many set splits
    assert BinnedData.from_X(X, categorical=np.array([True, False])).binned.dtype == np.uint16
    est = GreedyMiserClassifier(n_estimators=20, max_depth=3, categorical_features=[0], verbose=0,
                                min_data_per_group=20, random_state=0)
    m = est.fit(X, y)
    bank = m.model_.nodes[0]
    assert bank.categories.is_categorical.sum() >= 20
    text = ir.to_json(m.model_)
    back = ir.from_json(text)
    assert ir.to_json(back) == text
    Xt, _ = hidden_set_data(3000, n_cat=400, seed=3)   # codes 300..399 were never seen
    Xt[::7, 0] = np.nan
    Xt[1::7, 0] = -2.0
    Xt[2::7, 0] += 0.5
    runtime = ReferenceRuntime(back).predict(Xt).scores[:, 0]
    # the trainer's own predictor (staged_decision_function walks the trees in numba, in float32 as the VM)
    *_, trainer = m.staged_decision_function(Xt)
    np.testing.assert_array_equal(runtime, trainer)
    np.testing.assert_array_equal(m.decision_function(Xt), trainer)


def test_values_that_are_not_known_codes_go_right():
    """The rule (docs: other_left False): NaN, negative, non-integer,
    unseen and rarer-than-kept codes all take the right branch, where the
    categories outside the set go."""
    X, y = hidden_set_data()
    m = stump(categorical_features=[0]).fit(X, y)
    bank = m.model_.nodes[0]
    r = int(bank.roots[0])
    assert not bank.missing_left[r] and not bank.categories.other_left[r]
    probe = np.array([[np.nan, 0], [-3.0, 0], [3.5, 0], [17.0001, 0], [1e6, 0], [95.0, 0], [3e38, 0],
                      [5.0, 0], [3.0, 0]], np.float32)
    d = m.decision_function(probe)
    outside, inside = d[-2], d[-1]
    assert inside != outside
    assert np.all(d[:-2] == outside), d


def test_rare_categories_in_the_other_bin_train_and_export_alike():
    """With max_bins=8 the 7 most frequent codes get a bin, then (LightGBM's
    rule) the next ones while the kept cover < 99% of the coded rows and
    have >= 3 rows; the long tail, NaN and negative values share the other
    / missing bins and go right.
    The booster's training scores (from the binned rows) equal the
    exported trees walked on the raw values, bit for bit, also with row
    subsampling (rows outside the sample walk the binned tree)."""
    rng = np.random.default_rng(5)
    n = 4000
    c = rng.zipf(1.6, n).astype(np.float32) - 1       # skewed: a few frequent codes, a long tail
    c[rng.random(n) < 0.05] = np.nan
    c[rng.random(n) < 0.03] = -1.0
    X = np.c_[c, rng.normal(size=n)].astype(np.float32)
    y = ((np.nan_to_num(c, nan=7) % 3 == 0) ^ (X[:, 1] > 1)).astype(np.float64)
    data = BinnedData.from_X(X, 8, categorical=np.array([True, False]))
    assert data.n_bins[0] == 1 + lightgbm_kept(c, 8) < np.unique(c[c >= 0]).size + 1   # some tail is pooled
    opts = CategoryOptions(np.array([True, False]), min_data_per_group=5, max_cat_to_onehot=1)
    res = boost(data, make_loss("logistic"), y, 10, max_depth=3, subsample=0.7,
                rng=np.random.default_rng(0), categories=opts)
    raw = np.full(n, make_loss("logistic").initial_scores(y, np.ones(n))[0])
    n_sets = 0
    for (t,) in res.rounds:
        assert "category_sets" in t
        n_sets += sum(s is not None for s in t["category_sets"])
        predict_raw_sets(X, t["feature"], t["threshold"], t["left"], t["right"], t["missing_left"],
                         *set_arrays(t["category_sets"]), t["other_left"], t["value"].astype(np.float64), raw)
    assert n_sets >= 10
    np.testing.assert_array_equal(raw, res.raw[:, 0])


def lightgbm_kept(col, max_bins):
    """How many codes LightGBM's BinMapper::FindBin (categorical branch) gives
    a bin, written as its loop (here always keeping the first max_bins - 1)."""
    x = col[~np.isnan(col)]
    x = x[(x >= 0) & (x == np.floor(x))].astype(np.int64)
    codes, counts = np.unique(x, return_counts=True)
    ranked = sorted(zip(-counts, codes))
    cut = int(np.floor(0.99 * len(x) + 0.5))
    used = kept = 0
    for neg, _ in ranked:
        if kept >= max_bins - 1 and not (used < cut and -neg >= 3):
            break
        used += -neg
        kept += 1
    return kept


def test_one_hot_for_few_categories():
    rng = np.random.default_rng(0)
    c = rng.integers(0, 3, 3000)
    y = (c == 1).astype(int)
    X = c[:, None].astype(np.float32)
    m = stump(categorical_features=[0], max_cat_to_onehot=4).fit(X, y)
    assert root_codes(m) == [1]


def test_a_set_split_charges_its_feature_once():
    X, y = hidden_set_data(6000)
    m = GreedyMiserClassifier(n_estimators=5, max_depth=2, categorical_features=[0], min_data_per_group=10,
                              feature_costs=[7.0, 100.0], cost_tradeoff=0.01, verbose=0).fit(X, y)
    assert m.model_.features_used() == [0]
    np.testing.assert_array_equal(m.cost(X[:50]), np.full(50, 7.0))


def test_regressor_and_sklearn_clone():
    X, y = hidden_set_data(6000)
    r = GreedyMiserRegressor(n_estimators=3, max_depth=1, learning_rate=1.0, categorical_features=[0],
                             min_data_per_group=10, cat_l2=0.0, verbose=0).fit(X, y.astype(float))
    assert root_codes(r) == HIDDEN
    est = GreedyMiserClassifier(categorical_features=["code"], cat_smooth=5.0, max_cat_threshold=8)
    twin = clone(est)
    assert twin.get_params() == est.get_params()
    assert twin.get_params()["categorical_features"] == ["code"]
    assert twin.set_params(cat_l2=1.0).cat_l2 == 1.0


def test_defaults_leave_the_metadata_as_before():
    X, y = hidden_set_data(500)
    params = stump().fit(X, y).model_.metadata["params"]
    assert not {"categorical_features", "cat_l2", "cat_smooth", "max_cat_threshold", "min_data_per_group",
                "max_cat_to_onehot"} & set(params)
    with_cat = stump(categorical_features=[0]).fit(X, y).model_.metadata["params"]
    assert with_cat["categorical_features"] == [0]


def test_tree_banks_carry_category_sets():
    """The cascades' tree banks: ``tiered_bank`` grows set splits when given
    the option, ``subset_bank`` keeps them, and ``tree_outputs`` (the
    dictionary h(x)) walks them as the reference runtime does."""
    from skinflint.ir import FeatureCosts
    from skinflint.trainers.boosting.booster import tree_outputs
    from skinflint.trainers.boosting.tree_bank import subset_bank, tiered_bank
    X, y = hidden_set_data(6000)
    opts = CategoryOptions(np.array([True, False]), min_data_per_group=10)
    bank = tiered_bank(X, 2.0 * y - 1, FeatureCosts.from_arrays([1.0, 1.0]), tiers=[], n_estimators=6,
                       max_depth=2, random_state=0, categories=opts)
    assert bank.categories is not None and bank.categories.is_categorical.any()
    m = GreedyMiserClassifier(n_estimators=6, max_depth=2, categorical_features=[0], min_data_per_group=10,
                              verbose=0).fit(X, y)
    H = tree_outputs(m.model_.nodes[0], X)
    acc = np.full(len(X), m.base_score_[0], np.float32)
    for t in range(H.shape[1]):    # float32 sums in tree order, as the runtimes add
        acc = acc + H[:, t]
    np.testing.assert_array_equal(acc, m.decision_function(X))
    keep = [1, 4]
    sub = subset_bank(bank, keep)
    np.testing.assert_array_equal(tree_outputs(sub, X), tree_outputs(bank, X)[:, keep])


def test_a_frame_with_early_stopping_fits_without_warnings():
    """The held-out rows are rows of the validated X: checking them again
    as a frame-less array made scikit-learn warn about feature names."""
    import warnings
    pd = pytest.importorskip("pandas")
    X, y = hidden_set_data(3000)
    frame = pd.DataFrame({"kind": pd.Categorical(X[:, 0].astype(int)), "noise": X[:, 1]})
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        m = GreedyMiserClassifier(n_estimators=5, max_depth=2, categorical_features="from_dtype", verbose=0,
                                  min_data_per_group=10, early_stopping=True, random_state=0).fit(frame, y)
    assert len(m.validation_loss_) == 5


def test_boost_refuses_categories_the_data_was_not_binned_for():
    X, y = hidden_set_data(500)
    data = BinnedData.from_X(X)
    with pytest.raises(ValueError, match="categorical features .* and categories.is_cat differ"):
        boost(data, make_loss("logistic"), y.astype(float), 1, categories=CategoryOptions(np.array([True, False])))


@pytest.mark.parametrize("fraction_seed", [3, 8])
def test_prefix_models_and_tree_outputs_keep_every_rule_of_category_sets(fraction_seed):
    """An imported-style bank (any rule, not only the booster's "integer"):
    the first t trees of prefix_model score as the reference runtime scores
    them, and tree_outputs' columns add up to the reference's scores."""
    from skinflint.ir.random_model import random_model, with_category_splits
    from skinflint.trainers.boosting.booster import tree_outputs
    from skinflint.trainers.boosting.ranker import output_bank, prefix_model
    from skinflint.verify import adversarial_rows
    seeds = [s for s in range(200) if s % 10 == fraction_seed % 10]
    rules = set()
    for seed in seeds:
        base = random_model(seed, kinds=("trees",))
        bank0 = base.nodes[base.output]
        if bank0.is_float64 or bank0.n_outputs != 1 or bank0.n_trees < 2:
            continue
        m = with_category_splits(base, 0.9)
        bank = output_bank(m)
        if bank.categories is None:
            continue
        rules.add(bank.categories.rule)
        X = adversarial_rows(m, max_rows=500)
        t = bank.n_trees - 1
        cut = prefix_model(m, t)
        kept_sets = bool(bank.categories.is_categorical[:int(bank.roots[t])].any())
        assert (output_bank(cut).categories is not None) == kept_sets
        H = tree_outputs(bank, X)
        want = ReferenceRuntime(cut).predict(X).scores[:, 0]
        got = np.full(len(X), bank.base_score[0], np.float32)
        for j in range(t):
            got = got + H[:, j]
        np.testing.assert_array_equal(got, want)
    assert len(rules) >= 2    # the seeds cover more than the booster's own rule


# ---------------------------------------------------------------- high cardinality (uint16 bins)

def many_categories(n=12_000, n_cat=600, seed=0):
    """600 categories, each with its own effect (so every category matters),
    a numeric feature with NaN, and NaN / negative / non-integer codes."""
    rng = np.random.default_rng(seed)
    c = rng.integers(0, n_cat, n).astype(np.float32)
    effect = np.random.default_rng(99).normal(size=n_cat)
    x = rng.normal(size=n).astype(np.float32)
    logit = effect[c.astype(int)] + 0.5 * x
    y = (rng.random(n) < 1 / (1 + np.exp(-logit))).astype(int)
    x[rng.random(n) < 0.05] = np.nan
    c[rng.random(n) < 0.02] = np.nan
    c[rng.random(n) < 0.01] = -3.0
    c[rng.random(n) < 0.01] += 0.5
    return np.c_[c, x].astype(np.float32), y


def test_more_than_255_categories_get_uint16_bins_and_numeric_features_keep_theirs():
    X, y = many_categories()
    mask = np.array([True, False])
    wide = BinnedData.from_X(X, categorical=mask)
    narrow = BinnedData.from_X(X)
    assert narrow.binned.dtype == np.uint8 and narrow.n_slots == 256
    assert wide.binned.dtype == np.uint16
    assert wide.n_bins[0] == 1 + lightgbm_kept(X[:, 0], 255) > 256
    assert wide.n_slots == wide.n_bins[0] + 1 and wide.missing_bin == wide.n_slots - 1
    # the numeric feature: the same bins, its NaN in the wide missing bin
    num = narrow.binned[1].astype(np.int64)
    np.testing.assert_array_equal(wide.binned[1], np.where(num == 255, wide.missing_bin, num))
    # each kept code has its bin, NaN the missing bin, everything else the other bin
    codes = wide.cat_codes[0]
    col = X[:, 0]
    pos = {int(k): b for b, k in enumerate(codes)}
    want = [wide.missing_bin if np.isnan(v) else pos.get(int(v), len(codes)) if v >= 0 and v == int(v)
            else len(codes) for v in col]
    np.testing.assert_array_equal(wide.binned[0], want)


@pytest.mark.parametrize("subsample", [1.0, 0.7])
def test_uint16_bins_train_as_they_export(subsample):
    """The booster's scores on the binned rows (leaf ranges, or the binned
    walk for rows outside the subsample) equal the exported trees walked on
    the raw values, bit for bit, and the reference runtime agrees."""
    X, y = many_categories()
    opts = CategoryOptions(np.array([True, False]), min_data_per_group=20)
    data = BinnedData.from_X(X, categorical=opts.is_cat)
    assert data.binned.dtype == np.uint16
    res = boost(data, make_loss("logistic"), y.astype(float), 8, max_depth=4, subsample=subsample,
                rng=np.random.default_rng(0), categories=opts)
    raw = np.full(len(y), make_loss("logistic").initial_scores(y.astype(float), np.ones(len(y)))[0])
    big = 0
    for (t,) in res.rounds:
        predict_raw_sets(X, t["feature"], t["threshold"], t["left"], t["right"], t["missing_left"],
                         *set_arrays(t["category_sets"]), t["other_left"], t["value"].astype(np.float64), raw)
        big += sum(s is not None and len(s) > 8 for s in t["category_sets"])   # > 8 words: codes >= 256
    np.testing.assert_array_equal(raw, res.raw[:, 0])
    assert big > 0


def test_high_cardinality_model_verifies_and_uses_the_rare_categories():
    """A model on 600 categories verifies exactly (reference, C, ONNX, with
    verify's adversarial rows at every code), and beats the same fit on
    the codes pooled as the uint8 bins pooled them: only the 254 most
    frequent kept, every other code made a non-code (-1, the other bin)."""
    from skinflint.verify import verify
    X, y = many_categories()
    Xt, yt = many_categories(6000, seed=1)
    est = GreedyMiserClassifier(n_estimators=30, max_depth=4, categorical_features=[0], min_data_per_group=20,
                                verbose=0, random_state=0).fit(X, y)
    report = verify(est.model_, Xt[:100], runtimes=("onnx", "c"), max_rows=800)
    assert report.ok, report.table()
    # the control: codes outside the 254 most frequent made non-codes (-1), as the uint8 bins pooled them
    codes, counts = np.unique(X[:, 0][X[:, 0] >= 0].astype(int), return_counts=True)
    top = codes[np.argsort(-counts, kind="stable")[:254]]

    def pool(A):
        A = A.copy()
        A[~np.isin(A[:, 0], top) & ~np.isnan(A[:, 0]), 0] = -1.0
        return A
    pooled = GreedyMiserClassifier(n_estimators=30, max_depth=4, categorical_features=[0], min_data_per_group=20,
                                   verbose=0, random_state=0).fit(pool(X), y)
    from sklearn.metrics import roc_auc_score
    a = roc_auc_score(yt, est.decision_function(Xt))
    b = roc_auc_score(yt, pooled.decision_function(pool(Xt)))
    # 346 of 600 categories (half the rows) pooled into one bin lose their effects (measured AUC 0.727 vs 0.661)
    assert a > b + 0.03, (a, b)


def test_the_category_cap_warns():
    rng = np.random.default_rng(0)
    from skinflint.trainers.boosting.binning import MAX_CATEGORY_BINS
    n_cat = MAX_CATEGORY_BINS + 100
    c = np.repeat(np.arange(n_cat), 4)[rng.permutation(4 * n_cat)].astype(np.float32)
    X = np.c_[c, rng.normal(size=c.size)].astype(np.float32)
    with pytest.warns(UserWarning, match=f"feature 0 has {n_cat} categories: the {MAX_CATEGORY_BINS} most frequent"):
        data = BinnedData.from_X(X, categorical=np.array([True, False]))
    assert data.n_bins[0] == MAX_CATEGORY_BINS + 1 and data.n_slots == MAX_CATEGORY_BINS + 2
