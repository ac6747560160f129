"""CSTC's model selection on validation (issue 28 item 3): depth by
validation (thesis §3.7.2, at most 10), pruning on the validation rows
(§3.4.5) and fine-tuning kept exit by exit only when validation does not
fall (§3.4.4, early-stopped on validation as §3.7.2); a fixed depth keeps
the model of before."""
import hashlib

import numpy as np
import pytest
from sklearn.base import clone

from skinflint import datasets, ir
from skinflint.ir.json_io import to_json
from skinflint.trainers import TRAINERS, CSTCClassifier, CSTCRegressor


def test_depth_search_chooses_the_tree_the_quadrant_set_needs():
    """make_quadrant: the target needs a root that reads the signs and
    leaves that read one z each (docs/trees.md); one linear node cannot fit
    it.  At a lambda where depth 3 fits it, the search must keep depth 3
    (its validation MSE is an order of magnitude below depth 1's)."""
    q, qv = datasets.make_quadrant(1000, seed=0), datasets.make_quadrant(1000, seed=1)
    est = CSTCRegressor(max_depth=(1, 3), feature_costs=q.feature_costs, steepness=20, verbose=0)
    lam = est.lambda_grid(q.X, q.y)[15]
    est.set_params(cost_tradeoff=lam).fit(q.X, q.y, eval_set=(qv.X, qv.y))
    by = {r["max_depth"]: r for r in est.selection_}
    assert set(by) == {1, 3} and by[3]["chosen"] and not by[1]["chosen"]
    assert est.max_depth_ == 3 and -by[3]["score"] < 0.2 < -by[1]["score"]
    assert est.n_nodes_ > 1


def test_depth_search_keeps_one_node_where_one_suffices():
    """y = [x0 > 0], x0 the cheapest feature: every depth reads x0 alone at
    the same accuracy and cost, so the rule (ties to the first candidate)
    keeps depth 1."""
    r = np.random.default_rng(5)
    X = r.normal(size=(1600, 4)).astype(np.float32)
    y = (X[:, 0] > 0).astype(int)
    est = CSTCClassifier(max_depth="auto", feature_costs=[1.0, 10.0, 10.0, 10.0], cost_tradeoff=0.01,
                         verbose=0).fit(X[:1000], y[:1000], eval_set=(X[1000:], y[1000:]))
    # "auto" fits 1, 2 and 3, and goes deeper only when depth 3 raised the best validation score
    depths = [r["max_depth"] for r in est.selection_]
    scores = [r["score"] for r in est.selection_]
    assert depths[:3] == [1, 2, 3]
    assert depths == [1, 2, 3] if scores[2] <= max(scores[:2]) else depths == [1, 2, 3, 4]
    assert est.max_depth_ == 1 and est.n_nodes_ == 1
    assert est.score(X[1000:], y[1000:]) >= 0.97


@pytest.fixture(scope="module")
def spam():
    ds = datasets.load_spambase()
    tr, te = ds.split(0.3, seed=0)
    rows = np.random.default_rng(0).permutation(len(tr.y))[:1200]
    return tr.X[rows[:900]], tr.y[rows[:900]], tr.X[rows[900:]], tr.y[rows[900:]], ds.feature_costs


def test_fine_tuning_never_lowers_the_validation_score(spam):
    """Pruning and the descent do not depend on fine_tune, so the tree
    without fine-tuning is the starting point of the kept re-fits: the
    fine-tuned tree's validation accuracy is at least its accuracy."""
    X, y, Xv, yv, c = spam
    common = dict(feature_costs=c, cost_tradeoff=0.01, max_cycles=3, cost_reweight_rounds=1, verbose=0)
    none = CSTCClassifier(fine_tune="none", **common).fit(X, y, eval_set=(Xv, yv))
    node = CSTCClassifier(fine_tune="node", **common).fit(X, y, eval_set=(Xv, yv))
    assert none.fine_tuned_exits_ == []
    assert node.score(Xv, yv) >= none.score(Xv, yv)
    assert node.n_nodes_ == none.n_nodes_


def test_holdout_search_is_deterministic_and_clones(spam):
    X, y, _, _, c = spam
    est = CSTCClassifier(max_depth=(1, 2), feature_costs=c, cost_tradeoff=0.01, max_cycles=2,
                         cost_reweight_rounds=0, random_state=0, verbose=0)
    a = to_json(est.fit(X, y).model_)
    assert a == to_json(clone(est).fit(X, y).model_)
    assert clone(est).get_params()["max_depth"] == (1, 2)
    assert sum(r["chosen"] for r in est.selection_) == 1 and est.max_depth_ in (1, 2)


@pytest.mark.parametrize("kw, msg", [(dict(max_depth="deep"), "max_depth must be"),
                                     (dict(max_depth=(2, 11)), "max_depth must be"),
                                     (dict(max_depth=()), "empty tuple"),
                                     (dict(selection_tolerance=-0.1), "selection_tolerance"),
                                     (dict(prune="after"), "prune must be"), (dict(prune=1), "prune must be")])
def test_bad_depth_params_are_clear_errors(spam, kw, msg):
    X, y = spam[0], spam[1]
    with pytest.raises(ValueError, match=msg):
        CSTCClassifier(feature_costs=spam[4], verbose=0, **kw).fit(X, y)


def test_fixed_depth_keeps_the_model_of_before():
    """The registry's CSTC test model, the two parameters added since left
    out of its metadata (and verbose, as the pin test does), has the bytes
    pinned before the search existed."""
    ds = datasets.yahoo_like_costs(datasets.load_spambase(), seed=0)
    rows = np.random.default_rng(0).permutation(len(ds.y))[:500]
    spec = TRAINERS["cstc"]
    params = dict(spec.test_params, verbose=0)
    grid = spec.scaled_grid(float(np.mean(ds.feature_costs)))
    params[spec.sweep] = grid[len(grid) // 2]
    m = spec.estimator("classification", feature_costs=ds.feature_costs, **params).fit(
        ds.X[rows], ds.y[rows]).to_ir()
    gone = ("verbose", "validation_fraction", "selection_tolerance")
    meta = dict(m.metadata, params={k: v for k, v in m.metadata["params"].items() if k not in gone})
    m = ir.model(m.features, m.nodes, m.output, task=m.task, groups=m.groups, metadata=meta)
    assert hashlib.sha256(ir.to_json(m).encode()).hexdigest()[:16] == "e85a6920ca300581"


def test_auto_depths_follow_the_work_estimate():
    """"auto" with validation rows: 1, 2, 3 always, deeper while rows x
    columns x nodes^2 fits AUTO_WORK, never past 10; without them depth 3."""
    from skinflint.trainers.trees.cstc import AUTO_WORK
    est = CSTCClassifier()
    assert est._depths(False, 1.0) == (3,)
    assert est._depths(True, AUTO_WORK / 15 ** 2) == (1, 2, 3, 4)            # depth 4: 15 nodes, at the cap
    assert est._depths(True, AUTO_WORK / 15 ** 2 * 1.01) == (1, 2, 3)
    assert est._depths(True, 1e12) == (1, 2, 3)                               # huge data: still the old depth 3
    assert est._depths(True, 1.0) == tuple(range(1, 11))                      # tiny data: capped at 10
    assert CSTCClassifier(max_depth=(2, 5))._depths(True, 1e12) == (2, 5)    # a tuple is honoured as given


def test_auto_without_eval_set_is_depth_three(spam):
    """No validation rows: "auto" is one tree of depth 3, the same tree as
    max_depth=3 (only the parameter in the metadata differs)."""
    X, y, _, _, c = spam
    common = dict(feature_costs=c, cost_tradeoff=0.01, max_cycles=2, cost_reweight_rounds=0, verbose=0)
    a = CSTCClassifier(**common).fit(X, y)
    b = CSTCClassifier(max_depth=3, **common).fit(X, y)
    assert a.max_depth_ == 3 and a.selection_ == []
    assert _no_metadata(a.model_) == _no_metadata(b.model_)
    assert to_json(a.model_) != to_json(b.model_)       # the metadata records max_depth="auto"


def test_fixed_values_are_honoured_with_an_eval_set(spam):
    """A fixed depth is one tree of that depth (no search); prune=False keeps
    the full tree."""
    X, y, Xv, yv, c = spam
    common = dict(feature_costs=c, cost_tradeoff=0.01, max_cycles=2, cost_reweight_rounds=0, verbose=0)
    est = CSTCClassifier(max_depth=2, prune=False, **common).fit(X, y, eval_set=(Xv, yv))
    assert est.max_depth_ == 2 and est.selection_ == [] and est.n_nodes_ == 3


def test_pruning_after_the_descent_never_lowers_the_validation_score(spam):
    """Pruning keeps a variant only when the optimised tree's validation
    score through the IR is not worse, so without fine-tuning (which runs
    after it) the pruned tree scores at least the unpruned one on the
    validation rows, with no more nodes."""
    X, y, Xv, yv, c = spam
    common = dict(feature_costs=c, cost_tradeoff=0.003, max_depth=3, max_cycles=3, cost_reweight_rounds=0,
                  fine_tune="none", verbose=0)
    full = CSTCClassifier(prune=False, **common).fit(X, y, eval_set=(Xv, yv))
    pruned = CSTCClassifier(**common).fit(X, y, eval_set=(Xv, yv))
    assert pruned.score(Xv, yv) >= full.score(Xv, yv)
    assert pruned.n_nodes_ <= full.n_nodes_ == 7


def test_curves_pass_the_validation_rows():
    """cost_accuracy_curve hands eval_set to estimators that choose on
    validation (trainers/curves.py): CSTC says it does."""
    assert CSTCClassifier._selects_on_validation and CSTCRegressor._selects_on_validation


def _no_metadata(m):
    return ir.to_json(ir.model(m.features, m.nodes, m.output, task=m.task, groups=m.groups))


def test_prune_before_is_the_thesis_order_of_before(spam):
    """prune="before" prunes the initialised tree (§3.4.5's order, the
    default before pruning moved after the descent): the same tree as that
    code gave (hash of the model without its metadata, computed with it),
    which pruned 7 nodes to 4 and scores below the default's on validation."""
    import hashlib
    X, y, Xv, yv, c = spam
    common = dict(feature_costs=c, cost_tradeoff=0.003, max_depth=3, max_cycles=3, cost_reweight_rounds=0,
                  verbose=0)
    before = CSTCClassifier(prune="before", **common).fit(X, y, eval_set=(Xv, yv))
    after = CSTCClassifier(**common).fit(X, y, eval_set=(Xv, yv))
    assert hashlib.sha256(_no_metadata(before.model_).encode()).hexdigest()[:16] == "ecef0404e61f39ab"
    assert before.n_nodes_ == 4
    assert after.score(Xv, yv) > before.score(Xv, yv)
