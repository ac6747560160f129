"""Category-set splits (issue 34) through the ONNX backend: bit-exact
scores, cost, stage and features used against the reference runtime, for
every tree operator and both schedules.

The graph turns each categorical decision into a 0/1 column appended to X
(compilers/onnx_trees.py, ``CategoryColumns``), so the models here cover
what that must get right: the three rules ("truncate", "truncate_nonnegative",
"integer", and all three in one graph), sets spanning several 32-bit words,
other_left and missing_left both ways, categorical and numeric splits on the
same features and in the same trees, float64 banks, cascades (first touches
searched per region) and costs that do and do not add exactly in any order.
Rows: every code up to past the largest set's words, negatives (-1, -0.5,
-0.0, one ulp above -1), non-integers, NaN, +-inf, 1e10, each on every
categorical feature; budgets +inf and at and around each row's cost."""
import numpy as np
import pytest

from skinflint.compilers.onnx import compile_onnx
from skinflint.ir import builders
from skinflint.runtimes.onnx import OnnxRuntime
from skinflint.runtimes.reference import predict
from skinflint.verify import verify

TREE_OPS = ["TreeEnsembleRegressor", "TreeEnsemble", "gather"]
RULES = ["truncate", "truncate_nonnegative", "integer"]
N_FEATURES = 5
CAT_FEATURES = (1, 2, 4)        # feature 1 also gets numeric splits
MAX_WORDS = 3                   # sets of 1 to 3 words: codes 0..95


def _tree(rng, depth, values_per_leaf):
    """A complete tree of ``depth`` as a ``concat_trees`` dict, each split
    categorical (half of them) or numeric."""
    n_inner = 2 ** depth - 1
    n = 2 * n_inner + 1
    feature, threshold = np.full(n, -1), np.zeros(n)
    left, right = np.full(n, -1), np.full(n, -1)
    sets, other = [None] * n, np.zeros(n, bool)
    missing = rng.random(n) < 0.5
    for i in range(n_inner):
        left[i], right[i] = 2 * i + 1, 2 * i + 2
        if rng.random() < 0.5:
            feature[i] = rng.choice(CAT_FEATURES)
            words = int(rng.integers(1, MAX_WORDS + 1))
            codes = np.flatnonzero(rng.random(32 * words) < 0.5)
            codes = np.union1d(codes, [32 * words - 1])       # the set spans all its words
            sets[i] = builders.category_set(codes)
            other[i] = rng.random() < 0.5
        else:
            feature[i] = rng.choice([0, 1, 3])
            threshold[i] = rng.choice([rng.normal(), 2.5, -0.5])
    value = rng.normal(size=(n, values_per_leaf)) * (np.arange(n) >= n_inner)[:, None]
    return {"feature": feature, "threshold": threshold, "left": left, "right": right, "value": value,
            "missing_left": missing, "category_sets": sets, "other_left": other}


def _bank(seed, rule, n_trees=12, depth=3, width=1, precision="float32"):
    rng = np.random.default_rng(seed)
    return builders.concat_trees([_tree(rng, depth, width) for _ in range(n_trees)], base_score=[0.25] * width,
                                 precision=precision, divisor=3.0 if precision == "float64" else 1.0,
                                 tree_cost=rng.choice([0.0, 0.5], n_trees).tolist(), category_rule=rule)


def _features(costs):
    c = [1.0, 2.0, 3.0, 4.0, 5.0] if costs == "integer" else [0.1, 0.3, 0.7, 1.1, 0.2]
    return builders.features_from_costs(c, groups=[None, 0, 0, None, None])


def _model(nodes, output, task=None, costs="integer"):
    return builders.model(_features(costs), nodes, output, task=task,
                          groups=builders.groups_from_costs([0.5 if costs == "integer" else 0.15]))


def categorical_models():
    """{name: Model} with category-set splits (also run by tests/compat/ort_matrix.py)."""
    out = {}
    for i, rule in enumerate(RULES):
        out[f"cat_{rule}"] = _model([_bank(i, rule)], 0, builders.binary_task())
    out["cat_multiclass_tenths"] = _model([_bank(5, "truncate", width=3)], 0,
                                          builders.multiclass_task([0, 1, 2]), costs="tenths")
    out["cat_float64"] = _model([_bank(6, "integer", precision="float64")], 0)
    banks = [_bank(7 + i, rule, n_trees=6) for i, rule in enumerate(RULES)]
    out["cat_rules_mixed"] = _model(banks + [builders.linear([builders.node_input(j) for j in range(3)],
                                                             [1.0, 0.5, 2.0])], 3)
    out["cat_cascade"] = _model([_bank(10, "integer", n_trees=5), _bank(11, "truncate", n_trees=8),
                                       builders.cascade([(0, "ge", 0.5), (1, "none", 0.0)])], 2,
                                builders.binary_task(), costs="tenths")
    return out


def categorical_rows(model, seed=0):
    """Every code below 32 * MAX_WORDS + 8 and the values around the rules'
    edges on every categorical feature, numeric features random."""
    codes = np.arange(32 * MAX_WORDS + 8, dtype=np.float32)
    special = np.array([-1.0, -0.5, -0.0, 0.0, np.nextafter(np.float32(-1), np.float32(0)), -1.5, -2.0, 0.5, 0.999999,
                        1.25, 31.5, 31.999998, 32.0, 63.75, 95.0, 95.5, 96.0, 1e10, -1e10, 2.0 ** 24, 3e38,
                        np.nan, np.inf, -np.inf, 2.5, -1e-45], np.float32)
    pool = np.concatenate([codes, codes[::7] + np.float32(0.5), special])
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(len(pool), model.n_features)).astype(np.float32)
    for k, j in enumerate(CAT_FEATURES):
        X[:, j] = np.roll(pool, 11 * k)
    X[::9, 0] = np.nan
    X[1::9, 3] = 2.5            # a numeric threshold exactly
    return X


MODELS = categorical_models()


def _check(model, runtime, X):
    rep = verify(model, X, runtimes=[runtime])
    assert rep.ok, rep.table()


def _runnable(tree_op):
    import onnxruntime as ort
    if tree_op == "TreeEnsemble" and tuple(int(x) for x in ort.__version__.split(".")[:2]) < (1, 24):
        pytest.skip(f"TreeEnsemble needs onnxruntime >= 1.24, this is {ort.__version__}")


@pytest.mark.parametrize("tree_op", TREE_OPS)
@pytest.mark.parametrize("name", sorted(MODELS))
def test_categorical_models_match_reference(name, tree_op):
    _runnable(tree_op)
    m = MODELS[name]
    _check(m, OnnxRuntime(m, tree_op=tree_op), categorical_rows(m))


@pytest.mark.parametrize("tree_op", TREE_OPS)
@pytest.mark.parametrize("name", sorted(MODELS))
def test_categorical_models_in_the_latency_schedule(name, tree_op):
    _runnable(tree_op)
    m = MODELS[name]
    proto = compile_onnx(m, tree_op=tree_op, batch_hint=1)
    assert {p.key: p.value for p in proto.metadata_props}["skinflint.schedule"] == "latency"
    _check(m, OnnxRuntime(proto), categorical_rows(m))


@pytest.mark.parametrize("name", ["cat_integer", "cat_float64", "cat_rules_mixed"])
def test_categorical_models_without_budget_input(name):
    m = MODELS[name]
    X = categorical_rows(m)
    got, ref = OnnxRuntime(compile_onnx(m, budget=False)).predict(X), predict(m, X)
    for field in ("scores", "cost", "stage", "features_used"):
        np.testing.assert_array_equal(getattr(got, field), getattr(ref, field), err_msg=field)


@pytest.mark.parametrize("tree_op", TREE_OPS)
def test_fast_mode_routes_categories(tree_op):
    # fast mode sums the trees in the operator's order: the scores are within
    # the summation bound of docs/numerics.md, (n - 1) 2^-24 sum|term| with
    # terms the base and each tree's largest |leaf| (tests/compat/ort_matrix.py)
    from tests.compat.ort_matrix import fast_bound
    _runnable(tree_op)
    m = MODELS["cat_truncate"]
    X = categorical_rows(m)
    got = OnnxRuntime(compile_onnx(m, tree_op=tree_op, mode="fast")).predict(X)
    ref = predict(m, X)
    err = np.abs(np.asarray(got.scores, np.float64) - ref.scores)
    assert np.all(err <= fast_bound(m)[None])


def test_rows_reach_every_kind_of_decision():
    # the rows are adversarial for these models: each categorical node sees
    # codes in and out of its set, non-codes and NaN (else the parity tests
    # above would prove less than they say)
    from skinflint.ir.lowering import lower
    m = MODELS["cat_rules_mixed"]
    t = lower(m)
    X = categorical_rows(m)
    cat = np.flatnonzero(t.tn_cat >= 0)
    assert {int(r) for r in t.tn_cat_rule[cat]} == {0, 1, 2}
    assert set(np.asarray(t.tn_other_left[cat], bool).tolist()) == {False, True}
    assert set(np.asarray(t.tn_missing_left[cat], bool).tolist()) == {False, True}
    assert int(t.tn_cat_words[cat].max()) == MAX_WORDS
    for j in CAT_FEATURES:
        x = X[:, j]
        assert np.isnan(x).any() and np.isinf(x).any() and (x == 1e10).any()
        assert np.isin(np.arange(32 * MAX_WORDS + 1), x).all()
        assert ((x > -1) & (x < 0)).any() and (np.signbit(x) & (x == 0)).any() and (x == 7.5).any()


def test_only_categorical_graphs_get_the_decision_columns():
    # a numeric model's graph is unchanged (its bytes are pinned by
    # tests/compilers/test_golden_hashes.py); a categorical one appends one
    # column per distinct decision, computed in standard ops: per (feature,
    # rule) a code, then one row of a table by code
    from tests.conftest import load_example
    numeric = compile_onnx(load_example("trees"))
    assert not any("categories" in n.name for n in numeric.graph.node)
    for target in ("onnxruntime-1.16", "no-ml-ops"):
        proto = compile_onnx(MODELS["cat_rules_mixed"], target=target)
        ops = {n.op_type for n in proto.graph.node if "/categories/" in n.name}
        assert ops == {"Gather", "Greater", "GreaterOrEqual", "Less", "And", "Or", "Where", "Cast", "Equal",
                       "IsNaN", "Concat"}, ops
        # per emission (the rows over budget get a tree operator of their own):
        # one Gather of the columns, then per (feature, rule) one of its code
        # and one of its table's row: 3 features x 3 rules
        cat = [n.op_type for n in proto.graph.node if "/categories/" in n.name]
        assert cat.count("Gather") == cat.count("Concat") * (1 + 2 * 3 * len(CAT_FEATURES))


@pytest.mark.parametrize("tree_op", ["TreeEnsembleRegressor", "gather"])
@pytest.mark.parametrize("name", ["cat_rules_mixed", "cat_cascade"])
def test_sets_past_the_table_bound_read_the_words(name, tree_op, monkeypatch):
    # past MEMBER_TABLE_BYTES the sets stay uint32 words (BitShift, BitwiseAnd)
    # and decisions are tested one by one instead of a table row by code;
    # the same outputs
    from skinflint.compilers import onnx_trees
    m = MODELS[name]
    monkeypatch.setattr(onnx_trees, "MEMBER_TABLE_BYTES", 0)
    proto = compile_onnx(m, tree_op=tree_op)
    assert {"BitShift", "BitwiseAnd"} <= {n.op_type for n in proto.graph.node if "/categories/" in n.name}
    _check(m, OnnxRuntime(proto), categorical_rows(m))
