"""EarlyExitRanker's two exit rules (issue 27): the per-query proximity rule exported as the IR's query_exit
(checked against the plain-Python oracle through verify_ranking) and the per-row stand-in exported as a cascade
(checked against the rule computed by hand from the reference runtime's prefix models)."""
import numpy as np
import pytest

from skinflint import datasets, ir
from skinflint.runtimes.reference import predict
from skinflint.trainers.boosting.ranker import EarlyExitRanker, prefix_model, staged_scores
from skinflint.verify import verify_ranking
from tests.ranking.oracle import OracleRanker

FAST = dict(n_estimators=20, max_depth=3, min_samples_leaf=5, verbose=0, random_state=0, exit_every=4)
T = FAST["n_estimators"]


@pytest.fixture(scope="module")
def data():
    ds = datasets.make_yahoo_like(60, 20, seed=3)
    return ds, *ds.split_queries(0.25, 0.25, seed=0)


@pytest.fixture(scope="module")
def fitted(data):
    ds, tr, va, te = data
    return EarlyExitRanker(feature_costs=ds.feature_costs, tree_eval_cost=1.0, **FAST).fit(tr.X, tr.y, tr.qid)


def test_the_query_rule_is_in_the_ir_and_matches_the_oracle(data, fitted):
    ds, tr, va, te = data
    m = fitted.to_ir()
    assert m.scores_queries and ir.to_dict(m)["version"] == 3
    q = m.nodes[m.output]
    assert q.after.tolist() == [4, 8, 12, 16] and q.keep.tolist() == [5] * 4
    assert q.gap.tolist() == [1.0 * (T - c) / (T - 1) for c in (4, 8, 12, 16)]
    assert ir.to_json(ir.from_json(ir.to_json(m))) == ir.to_json(m)
    rep = verify_ranking(m, te.X, runtimes=[OracleRanker(m)], max_rows=500)
    assert rep.ok, rep.table()
    # model_ stays the full bank: predict and cost score rows independently
    assert not fitted.model_.scores_queries
    r = fitted.rank(te.X, te.qid, 0.0)
    assert r.n_trees.min() < T and r.cost.mean() < fitted.cost(te.X).mean()


def test_the_row_rule_is_a_cascade_every_row_decides_alone(data, fitted):
    ds, tr, va, te = data
    ee = EarlyExitRanker(**{**fitted.get_params(), "exit_rule": "row"}).fit(tr.X, tr.y, tr.qid)
    # the reference: the training queries' mean 5th best after each tree (the worst when a query has fewer)
    S = staged_scores(ee.model_, tr.X)
    by_q = [S[tr.qid == q] for q in np.unique(tr.qid)]
    want = np.array([np.mean([float(np.sort(s[:, t])[::-1][min(5, len(s)) - 1]) for s in by_q])
                     for t in range(T)])
    np.testing.assert_allclose(ee.row_reference_, want, rtol=1e-12)   # sums in another order: 1e-12 relative
    s = 0.5
    ee.set_params(threshold=s)
    m = ee.to_ir()
    assert isinstance(m.nodes[m.output], ir.CascadeNode)
    ends = [4, 8, 12, 16]
    theta = [np.float32(ee.row_reference_[c - 1] - s * (T - c) / (T - 1)) for c in ends]
    np.testing.assert_array_equal(m.nodes[m.output].threshold[:-1], theta)
    # by hand: a document leaves at the first checkpoint where its prefix score is <= theta
    staged = {c: predict(prefix_model(ee.model_, c), te.X) for c in ends + [T]}
    exit_at = np.full(len(te.y), T)
    for c, th in zip(reversed(ends), reversed(theta), strict=True):
        exit_at[staged[c].scores[:, 0] <= th] = c
    r = ee.rank(te.X, te.qid)
    np.testing.assert_array_equal(r.n_trees, exit_at)
    assert 0 < np.sum(exit_at < T) < len(exit_at)
    for c in np.unique(exit_at):
        rows = exit_at == c
        np.testing.assert_array_equal(r.cost[rows], staged[int(c)].cost[rows])
        np.testing.assert_array_equal(r.scores[rows], staged[int(c)].scores[rows, 0])


@pytest.mark.parametrize("rule", ["query", "row"])
def test_a_huge_s_is_the_full_model(data, fitted, rule):
    ds, tr, va, te = data
    ee = EarlyExitRanker(**{**fitted.get_params(), "exit_rule": rule}).fit(tr.X, tr.y, tr.qid)
    r = ee.rank(te.X, te.qid, 1e9)
    full = predict(ee.model_, te.X)
    assert np.all(r.n_trees == T)
    np.testing.assert_array_equal(r.cost, full.cost)
    np.testing.assert_array_equal(r.scores, full.scores[:, 0])


def test_budgets_pass_through_to_each_document(data, fitted):
    ds, tr, va, te = data
    r = fitted.rank(te.X, te.qid, 0.5, budget=30.0)
    assert np.all(r.cost <= 30.0) and r.n_trees.min() < 4


def test_bad_exit_rule_is_one_clear_error(data):
    ds, tr, va, te = data
    with pytest.raises(ValueError, match="exit_rule must be 'query' or 'row'"):
        EarlyExitRanker(exit_rule="doc", **FAST).fit(tr.X, tr.y, tr.qid)
    with pytest.raises(ValueError, match="threshold \\(s\\) must be a finite number >= 0"):
        EarlyExitRanker(threshold=-1.0, **FAST).fit(tr.X, tr.y, tr.qid)
