"""Category-set splits in the IR (docs/ir.md, "Categorical splits"): the
file format, its validation, and the reference runtime's routing, checked
against expectations written out by hand from the rules."""
import json

import numpy as np
import pytest

from skinflint import ir
from skinflint.ir.lowering import lower
from skinflint.runtimes.reference import ReferenceRuntime, rank

# the set {0, 3, 33, 40}: two words, bits 0 and 3 of word 0, bits 1 and 8 of word 1
SET = ir.category_set([0, 3, 33, 40])

# x, and whether it is a code in the set / a code not in the set / no code, per rule
# (truncate: x > -1 reads trunc(x); truncate_nonnegative: x >= 0 reads trunc(x);
# integer: x >= 0 and integral); the set's range is [0, 64)
ROWS = [
    # x        truncate  nonneg    integer
    (0.0,     "in",     "in",     "in"),
    (3.0,     "in",     "in",     "in"),
    (33.0,    "in",     "in",     "in"),
    (40.0,    "in",     "in",     "in"),
    (1.0,     "out",    "out",    "out"),
    (39.0,    "out",    "out",    "out"),
    (63.0,    "out",    "out",    "out"),
    (64.0,    "other",  "other",  "other"),
    (-0.5,    "in",     "other",  "other"),     # truncate: code 0
    (-1.0,    "other",  "other",  "other"),
    (-0.0,    "in",     "in",     "in"),        # -0.0 >= 0, code 0
    (3.5,     "in",     "in",     "other"),
    (0.5,     "in",     "in",     "other"),
    (39.75,   "out",    "out",    "other"),
    (np.inf,  "other",  "other",  "other"),
    (-np.inf, "other",  "other",  "other"),
    (1e10,    "other",  "other",  "other"),
    (np.nan,  "nan",    "nan",    "nan"),
]
RULES = ("truncate", "truncate_nonnegative", "integer")


def stump(rule, other_left, missing_left, set_words=SET):
    """One categorical split on feature 0: leaf value 1 left, 2 right."""
    bank = ir.concat_trees([dict(feature=[0, -1, -1], threshold=[0, 0, 0], left=[1, -1, -1],
                                 right=[2, -1, -1], value=[0.0, 1.0, 2.0],
                                 missing_left=[missing_left, True, True],
                                 category_sets=[set_words, None, None],
                                 other_left=[other_left, False, False])], category_rule=rule)
    return ir.model(ir.features_from_costs([1.0]), [bank], 0, task=ir.regression_task())


@pytest.mark.parametrize("rule_index", range(3))
@pytest.mark.parametrize("other_left", [False, True])
@pytest.mark.parametrize("missing_left", [False, True])
def test_routing_follows_the_rule(rule_index, other_left, missing_left):
    m = stump(RULES[rule_index], other_left, missing_left)
    X = np.array([[r[0]] for r in ROWS], np.float32)
    goes_left = {"in": True, "out": False, "other": other_left, "nan": missing_left}
    want = np.array([1.0 if goes_left[r[1 + rule_index]] else 2.0 for r in ROWS], np.float32)
    got = ReferenceRuntime(m).predict(X).scores.ravel()
    np.testing.assert_array_equal(got, want)


def test_category_set_words_and_codes():
    assert SET.dtype == np.uint32
    assert SET.tolist() == [(1 << 0) | (1 << 3), (1 << 1) | (1 << 8)]
    assert ir.category_set([]).tolist() == [0]
    assert ir.category_set([31]).tolist() == [1 << 31]
    cs = stump("integer", False, False).nodes[0].categories
    assert cs.codes(0).tolist() == [0, 3, 33, 40]
    assert cs.codes(1).tolist() == []
    with pytest.raises(ir.IRError, match="codes must lie"):
        ir.category_set([-1])


def test_json_round_trip_is_version_4_and_numeric_models_keep_their_version():
    m = stump("truncate", True, False)
    d = json.loads(ir.to_json(m))
    assert d["version"] == 4
    node = d["nodes"][0]
    assert node["category_rule"] == "truncate"
    assert node["category_begin"] == [0, -1, -1]
    assert node["category_words"] == [2, 0, 0]
    assert node["category_bits"] == [9, 258]
    assert node["other_left"] == [True, False, False]
    back = ir.from_json(ir.to_json(m))
    assert ir.to_json(back) == ir.to_json(m)
    assert ir.model_hash(back) == ir.model_hash(m)
    numeric = ir.concat_trees([dict(feature=[0, -1, -1], threshold=[0.5, 0, 0], left=[1, -1, -1],
                                    right=[2, -1, -1], value=[0.0, 1.0, 2.0])])
    assert numeric.categories is None
    d = json.loads(ir.to_json(ir.model(ir.features_from_costs([1.0]), [numeric], 0,
                                       task=ir.regression_task())))
    assert d["version"] == 1 and "category_rule" not in d["nodes"][0]


def _dict(**change):
    d = json.loads(ir.to_json(stump("integer", False, True)))
    d["nodes"][0].update(change)
    return d


@pytest.mark.parametrize("change, words", [
    (dict(category_rule="floor"), ("category_rule", "unknown rule")),
    (dict(category_words=[2, 1, 0]), ("tree node 1", "leaf")),
    (dict(category_begin=[1, -1, -1]), ("tree node 0", "outside category_bits")),
    (dict(category_begin=[0, 0, -1]), ("tree node 1", "category_begin -1")),
    (dict(other_left=[False, True, False]), ("tree node 1", "other_left false")),
    (dict(threshold=[0.5, 0.0, 0.0]), ("tree node 0", "threshold must be 0")),
    (dict(category_bits=[9, -1]), ("category_bits[1]", "unsigned 32-bit")),
    (dict(category_bits=[9, 2 ** 32]), ("category_bits[1]", "unsigned 32-bit")),
    (dict(category_bits=[9, 1.5]), ("category_bits[1]", "unsigned 32-bit")),
    (dict(category_words=[0, 0, 0], category_begin=[-1, -1, -1]), ("no node splits on a category set",)),
    (dict(other_left=[False, False]), ("other_left", "expected 3 values")),
])
def test_malformed_category_splits_are_refused_naming_the_field(change, words):
    with pytest.raises(ir.IRError) as e:
        ir.from_dict(_dict(**change))
    for w in words:
        assert w in str(e.value), str(e.value)


def test_a_missing_category_key_and_an_old_version_are_refused():
    d = _dict()
    del d["nodes"][0]["category_bits"]
    with pytest.raises(ir.IRError, match=r"nodes\[0\]\.category_bits: missing"):
        ir.from_dict(d)
    d = _dict()
    d["version"] = 3
    with pytest.raises(ir.IRError, match="category-set splits need format version 4"):
        ir.from_dict(d)


def test_lowering_rebases_each_banks_sets():
    """Two banks: the second bank's set offsets follow the first bank's words."""
    a = stump("truncate", True, False).nodes[0]
    b = stump("integer", False, True, set_words=ir.category_set([5])).nodes[0]
    m = ir.model(ir.features_from_costs([1.0]), [a, b, ir.linear([ir.node_input(0), ir.node_input(1)], [1.0, 10.0])],
                 2, task=ir.regression_task())
    t = lower(m)
    assert t.tn_cat.tolist() == [0, -1, -1, 2, -1, -1]
    assert t.tn_cat_words.tolist() == [2, 0, 0, 1, 0, 0]
    assert t.tn_cat_rule.tolist() == [0, 0, 0, 2, 2, 2]
    assert t.tn_other_left.tolist() == [1, 0, 0, 0, 0, 0]
    assert t.cat_bits.tolist() == [9, 258, 32]
    X = np.array([[5.0], [0.0], [-0.5], [np.nan]], np.float32)
    # bank a (truncate; set {0,3,33,40}; NaN right): 5 -> 2, 0 -> 1, -0.5 -> 1, NaN -> 2
    # bank b (integer; set {5}; other right; NaN left): 5 -> 1, 0 -> 2, -0.5 -> 2, NaN -> 1
    np.testing.assert_array_equal(ReferenceRuntime(m).predict(X).scores.ravel(), [12.0, 21.0, 21.0, 12.0])
    lone = ir.model(ir.features_from_costs([1.0]), [b], 0, task=ir.regression_task())
    np.testing.assert_array_equal(ReferenceRuntime(lone).predict(X).scores.ravel(), [1.0, 2.0, 2.0, 1.0])


def test_reading_a_categorical_feature_charges_it_once():
    """Two splits on the same categorical feature (root and its left child)
    and a budget: the feature is paid once (cost 3), and a budget below it
    halts the row before the first tree's split."""
    bank = ir.concat_trees([dict(feature=[0, 0, -1, -1, -1], threshold=[0, 0, 0, 0, 0],
                                 left=[1, 3, -1, -1, -1], right=[2, 4, -1, -1, -1],
                                 value=[0.0, 0.0, 1.0, 2.0, 3.0],
                                 category_sets=[ir.category_set([1, 2]), ir.category_set([1]), None, None, None])],
                           category_rule="integer")
    m = ir.model(ir.features_from_costs([3.0]), [bank], 0, task=ir.regression_task())
    X = np.array([[1.0], [2.0], [7.0]], np.float32)
    p = ReferenceRuntime(m).predict(X)
    np.testing.assert_array_equal(p.scores.ravel(), [2.0, 3.0, 1.0])
    np.testing.assert_array_equal(p.cost, [3.0, 3.0, 3.0])
    p = ReferenceRuntime(m).predict(X, budget=np.full(3, 2.5))
    np.testing.assert_array_equal(p.cost, [0.0, 0.0, 0.0])


def test_query_runtime_routes_category_sets_as_the_row_runtime():
    """A query-level exit over a categorical bank: with no document dropped
    (keep larger than any query) each document's score is its per-row one."""
    trees = []
    rng = np.random.default_rng(0)
    for t in range(6):
        trees.append(dict(feature=[t % 2, -1, -1], threshold=[0.0, 0.0, 0.0], left=[1, -1, -1], right=[2, -1, -1],
                          value=[0.0, float(t + 1), -float(t + 1)],
                          category_sets=[ir.category_set(rng.choice(70, 9, replace=False)), None, None],
                          other_left=[bool(t % 3 == 0), False, False], missing_left=[bool(t % 2), True, True]))
    bank = ir.concat_trees(trees, category_rule="truncate_nonnegative")
    feats = ir.features_from_costs([1.0, 2.0])
    row_model = ir.model(feats, [bank], 0, task=ir.regression_task())
    query_model = ir.model(feats, [bank, ir.query_exit(0, [2, 4], rule="cutoff", keep=100)], 1,
                           task=ir.regression_task())
    X = np.column_stack([rng.choice([0, 3, 17, 69, 70, -0.5, 2.5, np.nan], 40),
                         rng.choice([1, 5, 64, 96, -1, np.nan], 40)]).astype(np.float32)
    group = np.full(4, 10)                          # four queries of ten documents (group sizes)
    r = rank(query_model, X, group)
    p = ReferenceRuntime(row_model).predict(X)
    np.testing.assert_array_equal(r.scores.ravel(), p.scores.ravel())
    np.testing.assert_array_equal(r.cost, p.cost)


def test_inspect_names_the_category_splits():
    text = ir.inspect(stump("truncate", True, False))
    assert "1 category-set splits (truncate rule) on {f0}, sets of up to 64 codes" in text


def test_verify_rows_reach_every_code_of_every_set():
    """Three categorical features with 1024-code sets: the adversarial rows,
    cut to 4000, still carry each feature's every code (they sit side by side
    and are kept whole), the first code past each set, and non-codes."""
    from skinflint.verify import adversarial_rows
    trees = [dict(feature=[j, -1, -1], threshold=[0, 0, 0], left=[1, -1, -1], right=[2, -1, -1], value=[0, 1, 2],
                  category_sets=[ir.category_set(np.arange(0, 1024, 3)), None, None]) for j in range(3)]
    m = ir.model(ir.features_from_costs([1.0] * 3), [ir.concat_trees(trees)], 0, task=ir.regression_task())
    R = adversarial_rows(m, max_rows=4000)
    assert len(R) == 4000
    for j in range(3):
        assert np.isin(np.arange(1025, dtype=np.float32), R[:, j]).all()
        assert np.isin(np.array([-0.5, -1.0, 2.0 ** 31], np.float32), R[:, j]).all()
