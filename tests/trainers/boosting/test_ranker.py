"""Rankers on the shared booster (issue 26): the LambdaMART gradients against a plain re-implementation of
LightGBM's formula, GreedyMiserRanker (groups, tree choice on validation NDCG@5, cost trade-off, scikit-learn's
GroupKFold, parity through verify) and EarlyExitRanker's per-query proximity rule."""
import hashlib
from math import exp, log2

import numpy as np
import pytest
from sklearn.base import clone
from sklearn.model_selection import GroupKFold

from skinflint import datasets, ir
from skinflint.metrics import ndcg, query_groups
from skinflint.runtimes.reference import predict
from skinflint.trainers.boosting.lambdarank import lambdarank_gradients
from skinflint.trainers.boosting.ranker import (
    EarlyExitRanker,
    GreedyMiserRanker,
    checkpoints,
    prefix_model,
    rank_queries,
)

FAST = dict(n_estimators=20, max_depth=3, min_samples_leaf=5, verbose=0, random_state=0)
T = FAST["n_estimators"]


@pytest.fixture(scope="module")
def ltr():
    ds = datasets.make_yahoo_like(90, 30, seed=2)
    tr, va, te = ds.split_queries(0.25, 0.25, seed=0)
    return ds, tr, va, te


@pytest.fixture(scope="module")
def full(ltr):
    """LambdaMART GBRT with Yahoo-like costs, all T trees (no eval set)."""
    ds, tr, va, te = ltr
    return GreedyMiserRanker(feature_costs=ds.feature_costs, **FAST).fit(tr.X, tr.y, tr.qid)


@pytest.fixture(scope="module")
def early_exit(ltr):
    ds, tr, va, te = ltr
    return EarlyExitRanker(feature_costs=ds.feature_costs, exit_every=4, **FAST).fit(tr.X, tr.y, tr.qid)


def _lambdas_by_hand(y, s, trunc=30, sigma=1.0):
    """LightGBM's lambdarank gradients (rank_objective.hpp), one query, written as plainly as possible."""
    n = len(y)
    order = sorted(range(n), key=lambda i: (-s[i], i))
    ideal = sorted(y, reverse=True)
    max_dcg = sum((2 ** ideal[z] - 1) / log2(z + 2) for z in range(min(trunc, n)))
    g, h = [0.0] * n, [0.0] * n
    if max_dcg == 0 or n < 2:
        return g, h
    all_equal = s[order[0]] == s[order[-1]]
    total = 0.0
    for i in range(min(n - 1, trunc)):
        for j in range(i + 1, n):
            a, b = order[i], order[j]
            if y[a] == y[b]:
                continue
            (hr, high), (lr, low) = ((i, a), (j, b)) if y[a] > y[b] else ((j, b), (i, a))
            diff = s[high] - s[low]
            delta = (2 ** y[high] - 2 ** y[low]) * abs(1 / log2(hr + 2) - 1 / log2(lr + 2)) / max_dcg
            if not all_equal:
                delta /= 0.01 + abs(diff)
            rho = 1 / (1 + exp(sigma * diff))
            lam, hess = -sigma * delta * rho, sigma * sigma * delta * rho * (1 - rho)
            g[low] -= lam
            g[high] += lam
            h[low] += hess
            h[high] += hess
            total -= 2 * lam
    f = log2(1 + total) / total if total > 0 else 1.0
    return [x * f for x in g], [x * f for x in h]


def test_lambdarank_gradients_match_lightgbms_formula():
    rng = np.random.default_rng(0)
    sizes = [1, 7, 40, 3, 5]
    y = rng.integers(0, 5, sum(sizes)).astype(float)
    y[-5:] = 2.0                                       # a query with equal labels: no pair
    s = np.round(rng.normal(size=sum(sizes)), 1)       # rounded: ties happen
    s[1:8] = 0.5                                       # a query whose scores are all equal (no score norm)
    off = np.r_[0, np.cumsum(sizes)].astype(np.int64)
    g, h = np.full(len(y), np.nan), np.full(len(y), np.nan)
    lambdarank_gradients(y, s, off, 1.0, 30, True, g, h)
    for a, b in zip(off[:-1], off[1:], strict=True):
        want_g, want_h = _lambdas_by_hand(list(y[a:b]), list(s[a:b]))
        np.testing.assert_allclose(g[a:b], want_g, rtol=1e-12, atol=1e-300)  # summation order alone differs
        np.testing.assert_allclose(h[a:b], want_h, rtol=1e-12, atol=1e-300)
    assert g[0] == 0 and h[0] == 0 and np.all(g[-5:] == 0)                 # one document, equal labels
    # with 40 documents, truncation 30 leaves out pairs of two documents both below rank 30
    g2, h2 = np.zeros(40), np.zeros(40)
    lambdarank_gradients(y[11:51], s[11:51], np.array([0, 40]), 1.0, 3, True, g2, h2)
    np.testing.assert_allclose(g2, _lambdas_by_hand(list(y[11:51]), list(s[11:51]), trunc=3)[0], rtol=1e-12)


def test_ranker_learns_and_chooses_trees_on_validation_ndcg(ltr, full):
    ds, tr, va, te = ltr
    m = GreedyMiserRanker(feature_costs=ds.feature_costs, n_iter_no_change=None, **FAST)
    m.fit(tr.X, tr.y, tr.qid, eval_set=(va.X, va.y, va.qid))
    assert len(m.validation_ndcg_) == T
    assert m.n_estimators_ == int(np.argmax(m.validation_ndcg_)) + 1
    # the curve is the reference runtime's: NDCG@5 of the full model's prefixes, recomputed independently
    for n in (1, 7, T):
        p = predict(full.to_ir(n), va.X)
        assert ndcg(va.y, p.scores[:, 0], va.qid) == m.validation_ndcg_[n - 1]
    # it ranks: far above a random ordering (NDCG@5 of random scores on this set is ~0.5)
    random = ndcg(te.y, np.random.default_rng(0).normal(size=len(te.y)), te.qid)
    assert m.score(te.X, te.y, te.qid) > random + 0.15
    assert m.score(te.X, te.y, te.qid) == ndcg(te.y, m.predict(te.X), te.qid)


def test_pointwise_objective_and_cost_tradeoff(ltr, full):
    ds, tr, va, te = ltr
    pw = GreedyMiserRanker(objective="squared", feature_costs=ds.feature_costs, **FAST).fit(tr.X, tr.y, tr.qid)
    assert pw.score(te.X, te.y, te.qid) > 0.65
    base = pw.model_.nodes[0].base_score[0]
    assert base == np.float32(np.mean(tr.y))           # pointwise starts from the mean relevance
    lam = GreedyMiserRanker(feature_costs=ds.feature_costs, cost_tradeoff=0.3, **FAST).fit(tr.X, tr.y, tr.qid)
    assert lam.cost(te.X).mean() < 0.5 * full.cost(te.X).mean()


def test_group_forms_give_the_same_model(ltr, full):
    ds, tr, va, te = ltr
    # ids and sizes: the same queries, so the same model bytes (a second fit: also determinism)
    by_sizes = GreedyMiserRanker(feature_costs=ds.feature_costs, **FAST).fit(tr.X, tr.y,
                                                                            tr.groups_of_queries.sizes)
    assert hashlib.sha256(ir.to_json(full.model_).encode()).digest() == \
        hashlib.sha256(ir.to_json(by_sizes.model_).encode()).digest()
    # interleaved query rows are regrouped (stably): the same rows in the same order within each query
    perm = np.argsort(np.arange(len(tr.y)) % 3, kind="stable")
    qg = query_groups(tr.qid[perm], len(perm))
    assert qg.order is not None
    mixed = GreedyMiserRanker(**FAST).fit(tr.X[perm], tr.y[perm], tr.qid[perm])
    assert mixed.score(te.X, te.y, te.qid) > 0.65


@pytest.mark.parametrize("y, group, message", [
    (lambda y: y - 1.0, None, "non-negative integers"),
    (lambda y: y + 0.5, None, "non-negative integers"),
    (lambda y: np.where(np.arange(len(y)) == 3, np.nan, y), None, "NaN"),
    (lambda y: y, [5, 5], "sum to 10 but there are"),
    (lambda y: y, "empty", "has size 0"),
])
def test_bad_input(ltr, y, group, message):
    ds, tr, va, te = ltr
    X, yy = tr.X, y(tr.y.astype(float))
    if group == "empty":
        group = np.r_[tr.groups_of_queries.sizes, 0]
    with pytest.raises(ValueError, match=message):
        GreedyMiserRanker(**FAST).fit(X, yy, group if group is not None else tr.qid)


def test_group_kfold_and_clone(ltr):
    ds, tr, va, te = ltr
    proto = GreedyMiserRanker(objective="squared", **dict(FAST, n_estimators=8))
    scores = []
    for fit_rows, test_rows in GroupKFold(n_splits=3).split(ds.X, ds.y, groups=ds.qid):
        est = clone(proto).fit(ds.X[fit_rows], ds.y[fit_rows], ds.qid[fit_rows])
        assert not set(ds.qid[fit_rows]) & set(ds.qid[test_rows])
        scores.append(est.score(ds.X[test_rows], ds.y[test_rows], ds.qid[test_rows]))
    assert min(scores) > 0.6 and clone(proto).get_params()["objective"] == "squared"


def test_trained_ranker_verifies_exactly(ltr, full):
    from skinflint.verify import verify
    ds, tr, va, te = ltr
    report = verify(full.model_, te.X[:150], runtimes=("onnx", "c", "c-lazy"), max_rows=600)
    assert report.ok, report


# ---------------------------------------------------------------- Early Exit

def _rule_by_hand(model, X, sizes, s, every, k):
    """The proximity rule from the reference runtime's prefix-model scores, one query at a time."""
    T = model.nodes[0].n_trees
    ends = list(range(every, T, every)) + [T]
    staged = {e: predict(prefix_model(model, e), X).scores[:, 0] for e in ends}
    exit_at = np.full(len(X), T)
    a = 0
    for n in sizes:
        alive = list(range(a, a + n))
        for e in ends[:-1]:
            if len(alive) <= k:
                continue
            ranked = sorted(alive, key=lambda d: (-staged[e][d], d))
            kth = float(staged[e][ranked[k - 1]])
            gap = s * (T - e) / (T - 1)
            drop = [d for d in ranked[k:] if kth - float(staged[e][d]) >= gap]
            for d in drop:
                exit_at[d] = e
            alive = [d for d in alive if d not in drop]
        a += n
    return exit_at


@pytest.mark.parametrize("s", [0.0, 0.3, 1.0])
def test_proximity_rule_matches_a_plain_reimplementation(ltr, early_exit, s):
    ds, tr, va, te = ltr
    ee = early_exit
    r = ee.rank(te.X, te.qid, s)
    sizes = te.groups_of_queries.sizes
    np.testing.assert_array_equal(r.n_trees, _rule_by_hand(ee.model_, te.X, sizes, s, 4, 5))
    np.testing.assert_array_equal(r.checkpoints, checkpoints(T, 4))
    # a document's cost and score are the reference runtime's for the trees it ran
    for e in np.unique(r.n_trees):
        rows = r.n_trees == e
        p = predict(prefix_model(ee.model_, int(e)), te.X[rows])
        np.testing.assert_array_equal(r.cost[rows], p.cost)
        np.testing.assert_array_equal(r.scores[rows], p.scores[:, 0])
    # every query keeps at least its top 5 (or all its documents)
    kept = np.bincount(np.searchsorted(np.unique(te.qid), te.qid), weights=r.n_trees == T)
    assert np.all(kept >= np.minimum(5, sizes))


def test_early_exit_saves_cost_and_large_s_is_the_full_model(ltr, early_exit):
    ds, tr, va, te = ltr
    ee = early_exit
    full = ee.cost(te.X).mean()
    curve = ee.exit_curve(te.X, te.y, te.qid, thresholds=(0.0, 1e9))
    assert curve[0]["mean_cost"] < full and curve[0]["mean_trees"] < T
    assert curve[1]["mean_cost"] == full and curve[1]["mean_trees"] == T
    assert curve[1]["metric"] == GreedyMiserRanker.score(ee, te.X, te.y, te.qid)
    # survivors rank above dropped documents: the order is survivors first within each query
    r = ee.rank(te.X, te.qid, 0.0)
    q_of = np.searchsorted(np.unique(te.qid), te.qid)
    for q in range(3):
        ranked = [d for d in r.order if q_of[d] == q]
        trees = r.n_trees[ranked]
        assert np.all(np.diff(trees) <= 0)


def test_early_exit_regroups_non_contiguous_queries(ltr, early_exit):
    ds, tr, va, te = ltr
    ee = early_exit
    perm = np.random.default_rng(0).permutation(len(te.y))
    a = ee.rank(te.X, te.qid, 0.2)
    b = ee.rank(te.X[perm], te.qid[perm], 0.2)
    # per document the same exit and cost: shuffling changes the position order inside a query, which only
    # breaks ties, and these scores have none at the k-th place
    np.testing.assert_array_equal(b.n_trees, a.n_trees[perm])
    np.testing.assert_array_equal(b.cost, a.cost[perm])


# ---------------------------------------------------------------- curves and registry

def test_cost_accuracy_curve_with_ranking_metrics(ltr):
    from skinflint.metrics import precision_at_k
    from skinflint.trainers import GreedyMiserClassifier, cost_accuracy_curve
    ds, tr, va, te = ltr
    groups = (tr.qid, va.qid, te.qid)
    proto = GreedyMiserRanker(feature_costs=ds.feature_costs, **dict(FAST, n_estimators=10))
    rows = cost_accuracy_curve(proto, {"cost_tradeoff": [0.0, 0.3]}, tr.X, tr.y, va.X, va.y, te.X, te.y,
                               metric="ndcg@5", groups=groups, verbose=0)
    for row in rows:
        assert row["metric"] == "ndcg@5"
        assert row["accuracy"] == ndcg(te.y, predict(row["model"], te.X).scores[:, 0], te.qid)
    assert rows[1]["mean_cost"] < rows[0]["mean_cost"]
    # the rounds kept are the best validation NDCG@5 of the refitted model's prefixes
    est = clone(proto).set_params(cost_tradeoff=0.0).fit(tr.X, tr.y, tr.qid)
    val = [ndcg(va.y, predict(est.to_ir(n), va.X).scores[:, 0], va.qid) for n in range(1, 11)]
    assert rows[0]["n_iterations"] == int(np.argmax(val)) + 1
    # the skewed binary task (relevance >= 3) ranked by a classifier's margin, scored by P@5
    yb = (ds.y >= 3).astype(int)
    ytr, yva, yte = (tr.y >= 3).astype(int), (va.y >= 3).astype(int), (te.y >= 3).astype(int)
    assert 0 < yb.mean() < 0.1
    clf = GreedyMiserClassifier(**dict(FAST, n_estimators=8))
    (row,) = cost_accuracy_curve(clf, {"cost_tradeoff": [0.0]}, tr.X, ytr, va.X, yva, te.X, yte, metric="p@5",
                                 groups=groups, verbose=0)
    assert row["accuracy"] == precision_at_k(yte, predict(row["model"], te.X).scores[:, 0], te.qid, 5)
    with pytest.raises(ValueError, match="unknown metric"):
        cost_accuracy_curve(clf, {"cost_tradeoff": [0.0]}, tr.X, ytr, va.X, yva, te.X, yte, metric="ndcg")


def test_registry_knows_the_rankers():
    from skinflint.trainers.registry import RANKING, TRAINERS
    assert TRAINERS["greedy-miser"].estimator("ranking", n_estimators=3).__class__ is GreedyMiserRanker
    assert TRAINERS["early-exit"].ranker is EarlyExitRanker
    assert {n for n, s in RANKING.items() if s.on_ranking == "binary"} == {"cronus", "cscc", "afr"}
    assert {n for n, s in RANKING.items() if s.on_ranking == "regression"} == {"cstc", "astc"}
    with pytest.raises(ValueError, match="has no ranking estimator"):
        TRAINERS["svm"].estimator("ranking")


def test_early_stopping_with_one_query_is_one_clear_error():
    from skinflint.trainers import GreedyMiserRanker
    rng = np.random.default_rng(0)
    X = rng.normal(size=(40, 3)).astype(np.float32)
    y = rng.integers(0, 3, 40)
    with pytest.raises(ValueError, match="holds out whole queries, but the data have 1 query"):
        GreedyMiserRanker(n_estimators=3, early_stopping=True, verbose=0).fit(X, y)


def test_early_stopping_holds_out_whole_queries():
    from skinflint import datasets
    from skinflint.trainers import GreedyMiserRanker
    ds = datasets.make_yahoo_like(n_queries=30, n_features=8, mean_docs=8, seed=2)
    est = GreedyMiserRanker(n_estimators=20, max_depth=2, early_stopping=True, validation_fraction=0.2,
                            n_iter_no_change=3, random_state=0, verbose=0).fit(ds.X, ds.y, group=ds.qid)
    # rounds chosen on the held-out queries' NDCG@5: at least one, at most all
    assert 1 <= est.n_estimators_ <= 20
    assert 0.0 <= est.score(ds.X, ds.y, ds.qid) <= 1.0


def test_cost_accuracy_curve_sweeps_the_per_query_exit(ltr):
    from skinflint.trainers import cost_accuracy_curve
    ds, tr, va, te = ltr
    groups = (tr.qid, va.qid, te.qid)
    proto = EarlyExitRanker(feature_costs=ds.feature_costs, exit_every=2, **dict(FAST, n_estimators=10))
    rows = cost_accuracy_curve(proto, {"threshold": [1e-3, 1e30]}, tr.X, tr.y, va.X, va.y, te.X, te.y,
                               groups=groups, choose_rounds=False, verbose=0)
    assert [r["metric"] for r in rows] == ["ndcg@5", "ndcg@5"]
    assert all(r["model"].scores_queries for r in rows)
    tiny, never = (rank_queries(r["model"], te.X, te.qid) for r in rows)
    # s = 1e30 drops nobody: every document runs all 10 trees and the ranking is the plain
    # score order, so NDCG@5 needs no order of the runtime's
    assert np.all(never.n_trees == 10)
    assert rows[1]["accuracy"] == ndcg(te.y, never.scores, te.qid)
    assert rows[1]["mean_cost"] == float(never.cost.mean())
    # a tiny s drops documents early: less cost, and the metric reads the query order, in
    # which dropped documents follow the survivors whatever their score
    assert np.any(tiny.n_trees < 10)
    assert rows[0]["mean_cost"] == float(tiny.cost.mean()) < rows[1]["mean_cost"]
    assert rows[0]["accuracy"] == ndcg(te.y, tiny.scores, te.qid, order=tiny.order)
