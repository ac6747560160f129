"""CascadeRanker (issue 27, stretch): rank cutoffs on a Greedy Miser LambdaMART bank, chosen on validation
NDCG@5: the choice follows its stated rule, the exported cascade is the IR's cutoff query_exit (checked against
the plain-Python oracle) and it saves cost."""
import numpy as np
import pytest

from skinflint import datasets
from skinflint.metrics import ndcg
from skinflint.runtimes.reference import predict
from skinflint.trainers.boosting.cascade_ranker import CascadeRanker, stage_checkpoints
from skinflint.verify import verify_ranking
from tests.ranking.oracle import OracleRanker

FAST = dict(n_estimators=24, max_depth=3, min_samples_leaf=5, verbose=0, random_state=0, cost_tradeoff=1e-4,
            tree_eval_cost=1.0, n_stages=3, keep_grid=(3, 6, 12))


@pytest.fixture(scope="module")
def data():
    ds = datasets.make_yahoo_like(80, 20, seed=5)
    return ds, *ds.split_queries(0.3, 0.3, seed=0)


@pytest.fixture(scope="module")
def cascade(data):
    ds, tr, va, te = data
    return CascadeRanker(feature_costs=ds.feature_costs, tolerance=0.01, **FAST).fit(
        tr.X, tr.y, tr.qid, eval_set=(va.X, va.y, va.qid))


def test_stage_checkpoints():
    assert stage_checkpoints(24, 3).tolist() == [8, 16]
    assert stage_checkpoints(2, 3).tolist() == [1]
    assert stage_checkpoints(10, 1).tolist() == []


def test_each_cutoff_is_the_smallest_within_tolerance(data, cascade):
    c = cascade
    T = c.n_estimators_
    assert c.after_.tolist() == stage_checkpoints(T, 3).tolist()
    bar = c.validation_full_ndcg_ - 0.01
    cap = None
    for j, a in enumerate(c.after_):
        tried = [r for r in c.validation_curve_ if r["checkpoint"] == a]
        grid = [k for k in (3, 6, 12) if cap is None or k <= cap]
        assert [r["keep"] for r in tried] == grid[:len(tried)]
        # every candidate before the last tried missed the bar; the last met it (then it is the choice) or not
        assert all(r["ndcg"] < bar for r in tried[:-1])
        if tried[-1]["ndcg"] >= bar:
            assert c.keep_[j] == tried[-1]["keep"]
            cap = c.keep_[j]
        else:
            assert c.keep_[j] == 0 and len(tried) == len(grid)
    assert np.any(c.keep_ > 0), "the tolerance lets at least one cutoff through on this set"


def test_the_cascade_is_a_cutoff_query_exit_that_saves_cost(data, cascade):
    ds, tr, va, te = data
    m = cascade.to_ir()
    assert m.scores_queries
    q = m.nodes[m.output]
    assert q.rule.tolist() == [1] * q.n_checkpoints and q.keep.tolist() == [k for k in cascade.keep_ if k > 0]
    rep = verify_ranking(m, te.X, runtimes=[OracleRanker(m)], max_rows=400)
    assert rep.ok, rep.table()
    r = cascade.rank(te.X, te.qid)
    full = predict(cascade.model_, te.X)
    assert r.cost.mean() < full.cost.mean()
    # a query keeps at most keep documents past each cutoff
    q_of = np.searchsorted(np.unique(te.qid), te.qid)
    last_keep = int(q.keep[-1])
    survivors = np.bincount(q_of, weights=r.n_trees == cascade.n_estimators_)
    assert np.all(survivors <= last_keep)
    assert cascade.score(te.X, te.y, te.qid) == ndcg(te.y, r.scores, te.qid, order=r.order)


def test_bad_parameters_are_one_clear_error(data):
    ds, tr, va, te = data
    for bad, match in ((dict(n_stages=0), "n_stages"), (dict(keep_grid=(0, 5)), "keep_grid"),
                       (dict(tolerance=-1.0), "tolerance")):
        with pytest.raises(ValueError, match=match):
            CascadeRanker(**{**FAST, **bad}).fit(tr.X, tr.y, tr.qid)
