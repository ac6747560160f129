"""benchmarks/bench_rank.py --ee-gm: the per-query Early Exit and cascade part on a chosen Greedy Miser bank."""
import math

import numpy as np

from skinflint import datasets
from skinflint.metrics import ndcg
from skinflint.trainers.boosting.ranker import GreedyMiserRanker, proximity_exit


def test_pointwise_bank_rows_named_apart_and_not_refit_on_resume(bench, tmp_path):
    tr, va, te = datasets.make_yahoo_like(60, 12, seed=1).split_queries(0.2, 0.2, seed=1)
    costs = np.asarray(tr.feature_costs, np.float64)
    tree = dict(n_estimators=8, max_depth=2)
    path = tmp_path / "r.jsonl"
    rows = bench.Rows(str(path))
    bench.run_gm_cascades(tr, va, te, costs, tree, rows, "squared", 2e-5)
    fams = [r["family"] for r in rows]
    assert fams.count("Greedy Miser pointwise") == 1
    assert fams.count("Cascade on Greedy Miser pointwise lambda=2e-05") == len(bench.CASCADE_TOLERANCES)
    ee = [r for r in rows if r["family"] == "Early Exit per query on Greedy Miser pointwise lambda=2e-05"]
    assert [r["s"] for r in ee] == list(bench.EE_GRID[:5])
    # the validation NDCG@5 of each s, recomputed here from an independently fitted bank (same seed: same trees)
    m = GreedyMiserRanker(objective="squared", cost_tradeoff=2e-5, feature_costs=costs, tree_eval_cost=1.0,
                          verbose=0, random_state=0, n_iter_no_change=50, **tree).fit(
        tr.X, tr.y, tr.qid, eval_set=(va.X, va.y, va.qid))
    for r in ee:
        v = proximity_exit(m.model_, va.X, va.qid, r["s"], exit_every=10)
        assert r["val_ndcg5"] == ndcg(va.y, v.scores, va.qid, order=v.order)
        assert not math.isnan(r["val_ndcg5"])
    n = len(rows)
    again = bench.Rows(str(path), resume=True)
    bench.run_gm_cascades(tr, va, te, costs, tree, again, "squared", 2e-5)       # all five exits there: no refit
    assert len(again) == n and sum(1 for _ in open(path)) == n
