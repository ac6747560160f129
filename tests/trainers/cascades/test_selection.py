"""Model selection of Cronus and CSCC on validation (issue 28 item 3):
n_stages / exit_fraction / lambda_inflation chosen from the initialisation
(Chen §3.4), Alg. 1's cycles stopped early, CSCC's fine-tuning of every
exiting stage kept only when validation accuracy does not fall (thesis
§3.4.4, §3.7.2); fixed values keep the models of before."""
import hashlib

import numpy as np
import pytest
from sklearn.base import clone

from skinflint import datasets, ir
from skinflint.datasets import make_cheap_rejects
from skinflint.ir.codes import EXIT_ABS_GE, EXIT_LE, EXIT_NONE
from skinflint.ir.json_io import to_json
from skinflint.runtimes.reference import predict
from skinflint.trainers import TRAINERS
from skinflint.trainers.cascades.cronus import AUTO, EXIT_LEVELS, CronusClassifier, CSCCClassifier, choose

CLASSES = (CronusClassifier, CSCCClassifier)
SMALL = dict(n_estimators=20, max_depth=3, min_samples_leaf=5, tree_eval_cost=1.0, random_state=0,
             max_cycles=2, verbose=0)


def test_choose_is_the_cheapest_within_the_tolerance():
    pts = [(0.90, 10.0), (0.907, 5.0), (0.91, 20.0)]
    assert choose(pts, 0.005) == 1            # 0.907 >= 0.91 - 0.005, and cheaper
    assert choose(pts, 0.0) == 2              # no slack: the most accurate
    assert choose(pts, 0.02) == 1             # 0.90 is in too, but 5 < 10
    assert choose([(0.9, 5.0), (0.9, 5.0)], 0.0) == 0     # ties: the first


@pytest.fixture(scope="module")
def rejects():
    ds = make_cheap_rejects(3000, seed=11)
    return ds.X[:1500], ds.y[:1500], ds.X[1500:2000], ds.y[1500:2000], ds.X[2000:], ds.y[2000:], ds.feature_costs


@pytest.mark.parametrize("cls", CLASSES)
def test_search_picks_several_stages_where_cheap_rejects_pay(cls, rejects):
    """make_cheap_rejects: 80 % of the negatives are told apart by a feature
    of cost 1, the rest need one of cost 100.  A single stage pays 100 for
    every row; the search must choose a cascade that exits the easy rows
    early, cheaper than the one-stage candidate at about its accuracy."""
    Xtr, ytr, Xva, yva, Xte, yte, c = rejects
    est = cls(feature_costs=c, cost_tradeoff=4e-4, **SMALL).fit(Xtr, ytr, eval_set=(Xva, yva))
    inits = [r for r in est.selection_ if r["step"] == "init"]
    assert sorted({r["n_stages"] for r in inits}) == sorted(AUTO["n_stages"])
    one = next(r for r in inits if r["n_stages"] == 1)
    chosen = next(r for r in inits if r["chosen"])
    assert est.best_params_["n_stages"] > 1 and est.n_stages_ >= 2
    assert chosen["mean_cost"] < 0.75 * one["mean_cost"]      # the cascade saves >= 1/4 on validation
    p = predict(est.model_, Xte)
    assert (p.stage == 0).mean() >= 0.5                      # most rows leave at the first stage
    assert not p.features_used[p.stage == 0, 1].any()        # ... without the feature of cost 100


@pytest.mark.parametrize("cls", CLASSES)
def test_search_keeps_one_stage_where_one_suffices(cls):
    """y = [x0 > 0] with x0 the cheapest feature and no tree cost: every
    stage of any cascade reads x0 alone, so more stages buy nothing and the
    rule (cheapest within 0.5 point, ties to the first candidate, K = 1)
    keeps one stage."""
    r = np.random.default_rng(5)
    X = r.normal(size=(1600, 4)).astype(np.float32)
    y = (X[:, 0] > 0).astype(int)
    est = cls(feature_costs=[1.0, 10.0, 10.0, 10.0], cost_tradeoff=1e-3, **dict(SMALL, tree_eval_cost=0.0))
    est.fit(X[:1000], y[:1000], eval_set=(X[1000:], y[1000:]))
    assert est.best_params_["n_stages"] == 1 and est.n_stages_ == 1
    assert est.validation_["accuracy"] >= 0.97
    assert est.model_.nodes[0].n_trees > 0


@pytest.mark.parametrize("cls", CLASSES)
def test_fixed_values_and_grids_are_honoured(cls, rejects):
    Xtr, ytr, Xva, yva, _, _, c = rejects
    est = cls(feature_costs=c, n_stages=3, exit_fraction=0.1, lambda_inflation=2.0, early_stopping=False,
              fine_tune="none", retrofit_exits=False, **SMALL).fit(Xtr, ytr)
    assert est.selection_ == []                     # nothing chosen, nothing held out
    assert est.best_params_ == {"n_stages": 3, "exit_fraction": 0.1, "lambda_inflation": 2.0,
                                "n_cycles": len(est.objective_history_) - 1, "exit_level": None}
    est = cls(feature_costs=c, n_stages=(2, 4), exit_fraction=0.1, lambda_inflation=(1.3,), **SMALL)
    est.fit(Xtr, ytr, eval_set=(Xva, yva))
    assert {(r["n_stages"], r["exit_fraction"]) for r in est.selection_ if r["step"] == "init"} == {
        (2, 0.1), (4, 0.1)}
    assert est.best_params_["n_stages"] in (2, 4) and est.n_stages_ <= est.best_params_["n_stages"]


@pytest.mark.parametrize("cls", CLASSES)
def test_early_stopping_and_fine_tuning_follow_validation(cls, rejects):
    """The kept cycle is the rule's choice among the cycles measured, and
    CSCC's fine-tuning never lowers the validation accuracy of that cycle
    (a re-fit is kept only when validation accuracy does not fall)."""
    Xtr, ytr, Xva, yva, _, _, c = rejects
    est = cls(feature_costs=c, cost_tradeoff=4e-4, n_stages=4, **SMALL).fit(Xtr, ytr, eval_set=(Xva, yva))
    cycles = [r for r in est.selection_ if r["step"] == "cycle"]
    assert len(cycles) == len(est.objective_history_)       # the init and every cycle run
    kept = [r for r in cycles if r["chosen"]]
    assert len(kept) == 1 and kept[0]["cycle"] == est.n_cycles_
    best = max(r["accuracy"] for r in cycles)
    assert kept[0]["accuracy"] >= best - est.selection_tolerance
    assert all(r["mean_cost"] >= kept[0]["mean_cost"] for r in cycles if r["accuracy"] >= best - 0.005)
    tuned = [r for r in est.selection_ if r["step"] == "fine_tune"]
    if cls is CronusClassifier:
        assert tuned == [] and est.fine_tuned_stages_ == []
    else:
        assert [r["stage"] for r in tuned if r["chosen"]] == est.fine_tuned_stages_
        assert est.validation_["accuracy"] >= kept[0]["accuracy"]


@pytest.mark.parametrize("cls", CLASSES)
def test_holdout_then_refit_is_deterministic_and_clones(cls, rejects):
    """Without eval_set the choice holds out validation_fraction (seeded by
    random_state) and refits on every row: same seed, same bytes; clone and
    get_params keep "auto" and tuples."""
    Xtr, ytr, _, _, _, _, c = rejects
    est = cls(feature_costs=c, cost_tradeoff=4e-4, n_stages=(1, 3), **SMALL)
    a = to_json(est.fit(Xtr, ytr).model_)
    b = to_json(clone(est).fit(Xtr, ytr).model_)
    assert a == b
    assert est.selection_ and any(r["chosen"] for r in est.selection_)
    params = clone(est).get_params()
    assert params["n_stages"] == (1, 3) and params["exit_fraction"] == "auto"
    assert params["early_stopping"] is True and params["validation_fraction"] == 0.2
    other = to_json(clone(est).set_params(random_state=1).fit(Xtr, ytr).model_)
    assert other != a                          # another hold-out (and bank seed): another model


@pytest.mark.parametrize("cls", CLASSES)
def test_retrofitted_exits_follow_validation(cls, rejects):
    """retrofit_exits (the default): the trained one-sided exits and one
    two-sided exit |margin| >= s per level are measured on validation after
    everything else, the selection rule picks one, and the exported cascade
    has that rule; with the other values fixed the stages are those of
    retrofit_exits=False, whose model keeps the trained exits."""
    Xtr, ytr, Xva, yva, _, _, c = rejects
    kw = dict(feature_costs=c, cost_tradeoff=4e-4, n_stages=10, exit_fraction=0.15, lambda_inflation=1.3,
              early_stopping=False, fine_tune="none", **SMALL)
    est = cls(**kw).fit(Xtr, ytr, eval_set=(Xva, yva))
    off = cls(retrofit_exits=False, **kw).fit(Xtr, ytr, eval_set=(Xva, yva))
    ex = [r for r in est.selection_ if r["step"] == "exits"]
    assert [r["exit_level"] for r in ex] == [None, *EXIT_LEVELS]
    assert not [r for r in off.selection_ if r["step"] == "exits"] and off.exit_level_ is None
    pts = [(r["accuracy"], r["mean_cost"]) for r in ex]
    j = choose(pts, est.selection_tolerance)
    assert [r["chosen"] for r in ex] == [i == j for i in range(len(ex))]
    assert est.exit_level_ == ex[j]["exit_level"] == est.best_params_["exit_level"]
    # the chosen model is the one measured: the fitted model's validation accuracy and cost
    assert (est.validation_["accuracy"], est.validation_["mean_cost"]) == pts[j]
    assert off.validation_["accuracy"] == pts[0][0] and off.validation_["mean_cost"] == pts[0][1]
    rules = est.model_.nodes[-1].exit_rule
    stages_on, stages_off = est.model_.nodes[1:-1], off.model_.nodes[1:-1]
    assert [n.to_dict() for n in stages_on] == [n.to_dict() for n in stages_off]      # the same stages
    assert set(off.model_.nodes[-1].exit_rule[:-1].tolist()) <= {EXIT_LE}
    if est.exit_level_ is None:
        assert set(rules[:-1].tolist()) <= {EXIT_LE}
    else:
        assert set(rules[:-1].tolist()) <= {EXIT_ABS_GE, EXIT_NONE} and EXIT_ABS_GE in rules.tolist()
        thr = est.model_.nodes[-1].threshold
        assert np.all(thr[rules == EXIT_ABS_GE] == est.exit_level_)


@pytest.mark.parametrize("cls", CLASSES)
def test_initialisations_are_measured_with_every_exit_rule(cls, rejects):
    """With retrofit_exits=True the choice among initialisations is over
    (setting, exits) pairs: every setting with K > 1 is measured with the
    trained exits and each level, K = 1 (no exits) once; the cycles are then
    measured with the chosen pair's exits."""
    Xtr, ytr, Xva, yva, _, _, c = rejects
    est = cls(feature_costs=c, cost_tradeoff=4e-4, **SMALL).fit(Xtr, ytr, eval_set=(Xva, yva))
    inits = [r for r in est.selection_ if r["step"] == "init"]
    per = {}
    for r in inits:
        per.setdefault((r["n_stages"], r["exit_fraction"], r["lambda_inflation"]), []).append(r["exit_level"])
    assert per.pop((1, AUTO["exit_fraction"][0], AUTO["lambda_inflation"][0])) == [None]
    assert len(per) == 8 and all(v == [None, *EXIT_LEVELS] for v in per.values())
    i = choose([(r["accuracy"], r["mean_cost"]) for r in inits], est.selection_tolerance)
    assert [r["chosen"] for r in inits] == [j == i for j in range(len(inits))]
    cycles = [r for r in est.selection_ if r["step"] == "cycle"]
    assert cycles and {r["exit_level"] for r in cycles} == {inits[i]["exit_level"]}
    assert cycles[0]["accuracy"] == inits[i]["accuracy"] and cycles[0]["mean_cost"] == inits[i]["mean_cost"]


@pytest.mark.parametrize("cls", CLASSES)
def test_a_fixed_exit_level_needs_no_validation(cls, rejects):
    """retrofit_exits=s fixes the two-sided exits at s: with every other value
    fixed nothing is held out, and the model is retrofit_exits=False's with
    |margin| >= s on every stage with trees but the last."""
    Xtr, ytr, _, _, _, _, c = rejects
    kw = dict(feature_costs=c, cost_tradeoff=4e-4, n_stages=4, exit_fraction=0.15, lambda_inflation=1.3,
              early_stopping=False, fine_tune="none", **SMALL)
    a = cls(retrofit_exits=0.5, **kw).fit(Xtr, ytr)
    b = cls(retrofit_exits=False, **kw).fit(Xtr, ytr)
    assert a.selection_ == [] and a.exit_level_ == 0.5
    assert a.n_stages_ == b.n_stages_ >= 2
    rules = a.model_.nodes[-1].exit_rule
    assert rules[-1] == EXIT_NONE and EXIT_ABS_GE in rules[:-1].tolist()
    np.testing.assert_array_equal(a.model_.nodes[-1].threshold[rules == EXIT_ABS_GE], 0.5)
    assert [n.to_dict() for n in a.model_.nodes[:-1]] == [n.to_dict() for n in b.model_.nodes[:-1]]


def test_bad_selection_params_are_clear_errors(rejects):
    Xtr, ytr = rejects[0], rejects[1]
    for kw, msg in ((dict(n_stages="best"), "n_stages must be"), (dict(n_stages=(3, 0)), "n_stages must be"),
                    (dict(exit_fraction=(0.1, 1.5)), "exit_fraction must be"),
                    (dict(lambda_inflation=()), "empty tuple"), (dict(fine_tune="sometimes"), "fine_tune must be"),
                    (dict(selection_tolerance=-1.0), "selection_tolerance"),
                    (dict(retrofit_exits=-0.5), "retrofit_exits"), (dict(retrofit_exits="auto"), "retrofit_exits"),
                    (dict(validation_fraction=1.5), "validation_fraction")):
        with pytest.raises(ValueError, match=msg):
            CSCCClassifier(**dict(SMALL, n_estimators=3), **kw).fit(Xtr, ytr)


# the pins the registry's test models had before the search became the default
# (tests/trainers/test_model_pin.py); their fixed values must still give these bytes
_BEFORE = {"cronus": "fdf880d937635e64", "cscc": "b268e60ff720a8a8"}
_NEW_PARAMS = ("early_stopping", "validation_fraction", "selection_tolerance", "retrofit_exits")


@pytest.mark.parametrize("name", sorted(_BEFORE))
def test_fixed_values_reproduce_the_models_of_before(name):
    """The old defaults written out (epsilon 0.15, delta 1.3, no early
    stopping, CSCC's last-stage fine-tuning) give the old model bytes, the
    parameters added since left out of the metadata and ``fine_tune`` shown
    as it was (None)."""
    ds = datasets.yahoo_like_costs(datasets.load_spambase(), seed=0)
    rows = np.random.default_rng(0).permutation(len(ds.y))[:500]
    spec = TRAINERS[name]
    grid = spec.scaled_grid(float(np.mean(ds.feature_costs)))
    params = dict(spec.test_params, exit_fraction=0.15, lambda_inflation=1.3, early_stopping=False,
                  fine_tune="last" if name == "cscc" else "none", retrofit_exits=False)
    params[spec.sweep] = grid[len(grid) // 2]
    m = spec.estimator("classification", feature_costs=ds.feature_costs, **params).fit(
        ds.X[rows], ds.y[rows]).to_ir()
    kept = {k: v for k, v in m.metadata["params"].items() if k not in _NEW_PARAMS}
    assert kept["fine_tune"] in ("last", "none")
    kept["fine_tune"] = None
    m = ir.model(m.features, m.nodes, m.output, task=m.task, groups=m.groups,
                 metadata=dict(m.metadata, params=kept))
    assert hashlib.sha256(ir.to_json(m).encode()).hexdigest()[:16] == _BEFORE[name]
