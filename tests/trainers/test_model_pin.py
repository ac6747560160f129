"""Greedy Miser's model bytes are pinned across refactors (issue 13, point 4).

The hashes were recorded from the trainer *before* the round loop moved into
``trainers/boosting/booster.py`` and the estimators moved onto ``trainers/base.py``;
the refactor must not change one byte of any model.  They cover binary
(Greedy Miser with groups, "tree" and "immediate" refunds, subsampling, mean
leaves, an eval set), Early Exit, regression and multiclass with early
stopping.  Byte identity also needs thread-count independence, which the
trainers guarantee (root sums are serial); a model that changes here changed
for every user.
"""
import hashlib

import pytest

from skinflint import datasets, ir
from skinflint.trainers import EarlyExitClassifier, GreedyMiserClassifier, GreedyMiserRegressor


def _hash(model):
    return hashlib.sha256(ir.to_json(model).encode()).hexdigest()[:16]


@pytest.fixture(scope="module")
def spam():
    ds = datasets.load_spambase()
    tr, te = ds.split(0.3, seed=0)
    common = dict(feature_costs=ds.feature_costs, feature_groups=ds.feature_groups,
                  group_costs=ds.group_costs, feature_names=ds.feature_names,
                  group_names=ds.group_names, verbose=0)
    return tr, te, common


def test_greedy_miser_models_are_byte_identical_to_the_pinned_ones(spam):
    tr, te, common = spam
    got = {
        "spam_gm": GreedyMiserClassifier(n_estimators=40, cost_tradeoff=1e-3, random_state=0,
                                         **common).fit(tr.X, tr.y),
        "spam_gm_imm_sub": GreedyMiserClassifier(
            n_estimators=30, cost_tradeoff=3e-4, refund="immediate", subsample=0.7,
            leaf_values="mean", random_state=1, **common).fit(tr.X, tr.y, eval_set=(te.X, te.y)),
        "spam_ee": EarlyExitClassifier(n_estimators=30, exit_every=5, threshold=1.5, random_state=0,
                                       **common).fit(tr.X, tr.y),
    }
    q = datasets.make_quadrant(800, seed=0)
    got["quad_reg"] = GreedyMiserRegressor(n_estimators=25, cost_tradeoff=1e-3,
                                           feature_costs=q.feature_costs, random_state=0,
                                           verbose=0).fit(q.X, q.y)
    from sklearn.datasets import load_digits
    d = load_digits()
    got["digits_multi"] = GreedyMiserClassifier(n_estimators=8, max_depth=3, random_state=0, verbose=0,
                                                early_stopping=True).fit(d.data, d.target)
    pinned = {"spam_gm": "4784cc39a8fb45d1", "spam_gm_imm_sub": "58c4c6c0ac94799a",
              "spam_ee": "2e3da8af8006ed02", "quad_reg": "4c294422e660c17c",
              "digits_multi": "02d41697e57cd530"}
    assert {k: _hash(est.to_ir()) for k, est in got.items()} == pinned
