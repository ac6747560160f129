"""Query-level models fitted once per test session on a small Yahoo-shaped
set, shared by the C and ONNX rank parity tests (each backend is checked on
the same fits)."""
from functools import lru_cache

from skinflint import datasets


@lru_cache(maxsize=1)
def yahoo():
    """(data set, train, validation, test), split by query."""
    ds = datasets.make_yahoo_like(60, 20, seed=3)
    return ds, *ds.split_queries(0.25, 0.25, seed=0)


@lru_cache(maxsize=1)
def early_exit_ranker_model():
    """EarlyExitRanker with the papers' per-query rule, exported."""
    from skinflint.trainers.boosting.ranker import EarlyExitRanker
    ds, tr, _, _ = yahoo()
    return EarlyExitRanker(feature_costs=ds.feature_costs, tree_eval_cost=1.0, n_estimators=20, max_depth=3,
                           min_samples_leaf=5, verbose=0, random_state=0, exit_every=4,
                           exit_rule="query").fit(tr.X, tr.y, tr.qid).to_ir()


@lru_cache(maxsize=1)
def cascade_ranker_model():
    """CascadeRanker with cutoffs chosen on the validation queries, exported."""
    from skinflint.trainers.boosting.cascade_ranker import CascadeRanker
    ds, tr, va, _ = yahoo()
    return CascadeRanker(feature_costs=ds.feature_costs, tolerance=0.01, n_estimators=24, max_depth=3,
                         min_samples_leaf=5, verbose=0, random_state=0, cost_tradeoff=1e-4, tree_eval_cost=1.0,
                         n_stages=3, keep_grid=(3, 6, 12)).fit(tr.X, tr.y, tr.qid,
                                                               eval_set=(va.X, va.y, va.qid)).to_ir()
