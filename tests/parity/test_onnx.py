"""The ONNX backend: bit-exact scores, cost, stage and features used against
the reference, for every example and trained model, with both tree
operators; plus the graph's contract (validity, inputs, outputs, metadata)."""
import json

import numpy as np
import onnx
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from skinflint import datasets, ir
from skinflint.compilers.onnx import compile_onnx
from skinflint.compilers.onnx_trees import TARGETS
from skinflint.ir.random_model import random_model
from skinflint.runtimes.onnx import OnnxRuntime
from skinflint.runtimes.reference import predict
from skinflint.verify import adversarial_rows, verify
from tests.conftest import example_paths, load_example

TREE_OPS = ["TreeEnsembleRegressor", "TreeEnsemble", "gather"]


def skip_unless_runnable(tree_op):
    """TreeEnsemble needs onnxruntime >= 1.24 (docs/onnx.md: 1.16-1.20 refuse
    it, 1.21-1.23 get rows wrong); the floor's CI run has 1.16."""
    import onnxruntime as ort
    if tree_op == "TreeEnsemble" and tuple(int(x) for x in ort.__version__.split(".")[:2]) < (1, 24):
        pytest.skip(f"TreeEnsemble needs onnxruntime >= 1.24, this is {ort.__version__}")


def onnx_report(model, tree_op, X=None):
    """verify() through an ONNX graph built with ``tree_op``."""
    skip_unless_runnable(tree_op)
    return verify(model, X, runtimes=[OnnxRuntime(model, tree_op=tree_op)])


@pytest.mark.parametrize("tree_op", TREE_OPS)
@pytest.mark.parametrize("path", example_paths(), ids=lambda p: p.rsplit("/", 1)[-1])
def test_examples_match_reference(path, tree_op):
    rep = onnx_report(ir.load(path), tree_op)
    assert rep.ok, rep.table()


@pytest.mark.parametrize("target, op, ml", [("onnxruntime-1.16", "TreeEnsembleRegressor", 3),
                                             ("onnxruntime-1.24", "TreeEnsemble", 5),
                                             ("no-ml-ops", None, None)])
def test_targets_choose_the_tree_operator_and_opsets(target, op, ml):
    for mode in ("exact", "fast"):
        proto = compile_onnx(load_example("trees"), target=target, mode=mode)
        ops = {n.op_type for n in proto.graph.node}
        assert ops & {"TreeEnsemble", "TreeEnsembleRegressor"} == ({op} if op else set())
        assert {o.domain: o.version for o in proto.opset_import} == ({"": 18, "ai.onnx.ml": ml} if ml else {"": 18})
        assert proto.ir_version == 9
        assert {n.domain for n in proto.graph.node} <= ({"", "ai.onnx.ml"} if ml else {""})
    default = compile_onnx(load_example("trees"))
    assert {n.op_type for n in default.graph.node} >= {"TreeEnsembleRegressor"}


@pytest.mark.parametrize("path", example_paths(), ids=lambda p: p.rsplit("/", 1)[-1])
def test_the_form_without_tree_operators_is_exact_in_the_onnx_reference_evaluator(path):
    # onnx's own ReferenceEvaluator (numpy, no onnxruntime): the no-ml-ops
    # graph runs there too, bit for bit; a few rows since it is slow
    from onnx.reference import ReferenceEvaluator
    if tuple(int(x) for x in onnx.__version__.split(".")[:2]) < (1, 23):
        pytest.skip(f"checked with onnx >= 1.23 (onnx 1.16's ReferenceEvaluator fails in Gather); "
                    f"this is {onnx.__version__}")
    m = ir.load(path)
    X = adversarial_rows(m)
    X = X[np.random.default_rng(0).choice(len(X), min(len(X), 40), replace=False)]
    ref = predict(m, X)
    budget = np.where(np.arange(len(X)) % 2, np.inf, ref.cost / 2)
    ref_b = predict(m, X, budget=budget)
    sess = ReferenceEvaluator(compile_onnx(m, target="no-ml-ops"))
    names = [o.name for o in sess.proto_.graph.output]
    for b, want in ((np.full(len(X), np.inf), ref), (budget, ref_b)):
        with np.errstate(all="ignore"):     # inf - inf and NaN rows are meant (adversarial rows)
            got = dict(zip(names, sess.run(None, {"X": X, "budget": b}), strict=True))
        np.testing.assert_array_equal(got["scores"].view(np.uint32 if got["scores"].dtype == np.float32
                                                         else np.uint64),
                                      np.asarray(want.scores, got["scores"].dtype).view(
                                          np.uint32 if got["scores"].dtype == np.float32 else np.uint64))
        np.testing.assert_array_equal(got["cost"], want.cost)
        np.testing.assert_array_equal(got["stage"], want.stage)
        np.testing.assert_array_equal(got["features_used"], want.features_used)


def _fit(kind):
    from skinflint.trainers import EarlyExitClassifier, GreedyMiserClassifier, GreedyMiserRegressor
    ds = datasets.load_breast_cancer()
    costs = dict(feature_costs=ds.feature_costs, feature_groups=ds.feature_groups,
                 group_costs=ds.group_costs, random_state=0, verbose=0)
    if kind == "binary":
        est = GreedyMiserClassifier(n_estimators=30, max_depth=3, cost_tradeoff=1e-4,
                                    tree_eval_cost=0.25, **costs)
        return est.fit(ds.X, ds.y).to_ir(), ds.X
    if kind == "regression":
        est = GreedyMiserRegressor(n_estimators=30, max_depth=4, cost_tradeoff=1e-4, **costs)
        return est.fit(ds.X, ds.X[:, 0] * 2 + ds.y).to_ir(), ds.X
    if kind == "multiclass":
        d = datasets.make_quadrant(600, seed=3)
        y = (d.X[:, 0] > 0).astype(int) + (d.X[:, 1] > 0).astype(int)
        est = GreedyMiserClassifier(n_estimators=15, max_depth=3, cost_tradeoff=1e-3,
                                    feature_costs=d.feature_costs, random_state=0, verbose=0)
        return est.fit(d.X, y).to_ir(), d.X
    est = EarlyExitClassifier(n_estimators=40, max_depth=3, exit_every=5, threshold=1.0, **costs)
    return est.fit(ds.X, ds.y).to_ir(), ds.X


@pytest.mark.parametrize("kind", ["binary", "regression", "multiclass", "early_exit"])
def test_trained_models_match_reference(kind):
    model, X = _fit(kind)
    report = verify(model, X[:300], runtimes=("onnx",))
    assert report.ok, report.table()


# the random models of tests/parity/test_property.py (which runs the default
# target) through the graph without tree operators, on adversarial rows and
# budgets at and around each row's cost
@settings(max_examples=60, deadline=None, derandomize=True, suppress_health_check=[HealthCheck.too_slow])
@given(seed=st.integers(0, 2**31 - 1))
def test_random_models_without_tree_operators(seed):
    m = random_model(seed)
    report = verify(m, runtimes=[OnnxRuntime(m, target="no-ml-ops")])
    assert report.ok, f"seed {seed}\n{report.table()}"


# the latency schedule (batch_hint up to SMALL_BATCH: dense first touches,
# no subsets of rows, the pairwise halt) on every example, adversarial rows
# and budgets at and around each row's cost, and on the random models
@pytest.mark.parametrize("path", example_paths(), ids=lambda p: p.rsplit("/", 1)[-1])
def test_latency_schedule_matches_reference(path):
    m = ir.load(path)
    proto = compile_onnx(m, batch_hint=1)
    assert {p.key: p.value for p in proto.metadata_props}["skinflint.schedule"] == "latency"
    rep = verify(m, runtimes=[OnnxRuntime(proto)])
    assert rep.ok, rep.table()
    X = adversarial_rows(m)
    got, ref = OnnxRuntime(compile_onnx(m, batch_hint=1, budget=False)).predict(X), predict(m, X)
    for field in ("scores", "cost", "stage", "features_used"):
        np.testing.assert_array_equal(getattr(got, field), getattr(ref, field), err_msg=field)


@settings(max_examples=40, deadline=None, derandomize=True, suppress_health_check=[HealthCheck.too_slow])
@given(seed=st.integers(0, 2**31 - 1))
def test_random_models_in_the_latency_schedule(seed):
    m = random_model(seed)
    report = verify(m, runtimes=[OnnxRuntime(m, batch_hint=1)])
    assert report.ok, f"seed {seed}\n{report.table()}"


@pytest.mark.parametrize("name", ["trees", "groups", "cascade"])
def test_latency_schedule_without_the_slot_table(name, monkeypatch):
    # past DENSE_TABLE_BYTES the latency schedule searches first touches with
    # the segment tree of the batch schedule, still without subsets of rows
    from skinflint.compilers import onnx_cost
    m = load_example(name)
    dense = [n.op_type for n in compile_onnx(m, batch_hint=1).graph.node]
    monkeypatch.setattr(onnx_cost, "DENSE_TABLE_BYTES", 0)
    proto = compile_onnx(m, batch_hint=1)
    ops = [n.op_type for n in proto.graph.node]
    assert ops != dense and "NonZero" not in ops
    rep = verify(m, runtimes=[OnnxRuntime(proto)])
    assert rep.ok, rep.table()


def test_latency_schedule_has_fewer_ops_and_takes_small_chunks():
    m = load_example("trees")
    batch, latency = compile_onnx(m), compile_onnx(m, batch_hint=1)
    assert len(latency.graph.node) < len(batch.graph.node)
    ops = {n.op_type for n in latency.graph.node}
    assert not ops & {"NonZero", "GatherND", "ScatterND", "TopK"}      # no subset of rows, no sort
    assert OnnxRuntime(latency).chunk_rows < OnnxRuntime(batch).chunk_rows
    assert "skinflint.schedule" not in {p.key for p in batch.metadata_props}
    with pytest.raises(ValueError, match="batch_hint"):
        compile_onnx(m, batch_hint=0)


@pytest.mark.parametrize("name", ["trees", "groups", "linear_over_trees", "multiclass"])
def test_tree_operator_counts_path_features(name):
    # where votes cost less than gathering bit sets (compilers/onnx_cost.py,
    # touch_votes), the tree operator itself counts, per feature, the reached
    # leaves that split on it: more targets than packed leaf numbers alone,
    # no union of bit sets, and the same outputs
    m = load_example(name)
    proto = compile_onnx(m)
    names = [n.name for n in proto.graph.node]
    assert not any(x.startswith("touch/union/BitwiseOr") for x in names), name     # these paths have few features
    X = adversarial_rows(m)
    got, ref = OnnxRuntime(proto).predict(X, np.full(len(X), np.inf)), predict(m, X)
    for field in ("scores", "cost", "stage", "features_used"):
        np.testing.assert_array_equal(getattr(got, field), getattr(ref, field), err_msg=f"{name}: {field}")


def test_trained_model_with_the_fallback_operator():
    model, X = _fit("binary")
    rep = onnx_report(model, "TreeEnsembleRegressor", X[:200])
    assert rep.ok, rep.table()


@pytest.mark.parametrize("target", list(TARGETS))
def test_graph_is_valid_standard_and_loop_free(target):
    for path in example_paths():
        proto = compile_onnx(ir.load(path), target=target)
        onnx.checker.check_model(proto, full_check=True)
        onnx.shape_inference.infer_shapes(proto, check_type=True, strict_mode=True)
        assert {o.domain for o in proto.opset_import} <= {"", "ai.onnx.ml"}
        ops = {n.op_type for n in proto.graph.node}
        assert not ops & {"Loop", "If", "Scan"}, path


def test_outputs_inputs_and_metadata():
    m = load_example("groups")
    proto = compile_onnx(m)
    assert [i.name for i in proto.graph.input] == ["X", "budget"]
    names = [o.name for o in proto.graph.output]
    assert names[-4:] == ["scores", "cost", "stage", "features_used"]
    assert names[0] in ("label", "variable")
    meta = {p.key: p.value for p in proto.metadata_props}
    assert meta["skinflint.model_hash"] == m.hash()
    feats = json.loads(meta["skinflint.features"])
    assert [f["name"] for f in feats] == m.feature_names
    assert [f["cost"] for f in feats] == list(m.feature_costs)
    assert [g["name"] for g in json.loads(meta["skinflint.groups"])] == [g.name for g in m.groups]
    assert "skinflint.version" in meta
    classifier = compile_onnx(load_example("multiclass"))
    assert [o.name for o in classifier.graph.output][:2] == ["label", "probabilities"]


def test_without_budget_input():
    m = load_example("trees")
    proto = compile_onnx(m, budget=False, features_used=False)
    assert [i.name for i in proto.graph.input] == ["X"]
    assert "features_used" not in [o.name for o in proto.graph.output]
    rt = OnnxRuntime(proto)
    X = adversarial_rows(m)
    got, ref = rt.predict(X), predict(m, X)
    np.testing.assert_array_equal(got.cost, ref.cost)
    with pytest.raises(ValueError, match="without a budget input"):
        rt.predict(X, budget=1.0)


@pytest.mark.parametrize("name", ["trees", "groups", "linear_over_trees"])
def test_without_a_budget_no_first_touch_search_or_sort(name):
    # costs that add exactly in any order and one route through the trees:
    # a row within its budget needs only the union of its paths' features
    # (compilers/onnx_cost.py, halt_lazy), so a graph without a budget input
    # builds no first-touch search and no sort, and still gives everything
    m = load_example(name)
    proto = compile_onnx(m, budget=False)
    ops = [n.op_type for n in proto.graph.node]
    assert "TopK" not in ops and "ArgMax" not in ops, name
    X = adversarial_rows(m)
    got, ref = OnnxRuntime(proto).predict(X), predict(m, X)
    for field in ("scores", "cost", "stage", "features_used"):
        np.testing.assert_array_equal(getattr(got, field), getattr(ref, field), err_msg=f"{name}: {field}")


def test_runtime_loads_paths_and_bytes(tmp_path):
    m = load_example("cascade")
    proto = compile_onnx(m)
    onnx.save(proto, tmp_path / "m.onnx")
    X = adversarial_rows(m)
    ref = predict(m, X)
    for src in (tmp_path / "m.onnx", str(tmp_path / "m.onnx"), proto.SerializeToString()):
        np.testing.assert_array_equal(OnnxRuntime(src).predict(X).cost, ref.cost)
    with pytest.raises(ValueError, match="not a skinflint ONNX graph"):
        bare = onnx.ModelProto()
        bare.CopyFrom(proto)
        del bare.metadata_props[:]
        OnnxRuntime(bare)


@pytest.mark.parametrize("tree_op", TREE_OPS)
def test_fast_mode_predicts_without_cost(tree_op):
    skip_unless_runnable(tree_op)
    model, X = _fit("binary")
    proto = compile_onnx(model, mode="fast", tree_op=tree_op)
    assert [o.name for o in proto.graph.output] == ["label", "probabilities", "scores"]
    got, ref = OnnxRuntime(proto).predict(X), predict(model, X)
    assert got.cost is None and got.stage is None
    # onnxruntime sums the trees in its own order: floating-point summation of
    # n terms errs by at most (n - 1) * 2^-24 * sum|term| (Higham, Thm 4.4);
    # the terms are the base score and each tree's leaf, bounded by its max |leaf|.
    bank = model.nodes[model.output]
    owner = bank.tree_ranges()
    biggest = np.zeros(bank.n_trees)
    np.maximum.at(biggest, owner, np.abs(bank.value[:, 0]))
    bound = bank.n_trees * 2.0 ** -24 * (abs(float(bank.base_score[0])) + biggest.sum())
    assert np.max(np.abs(got.scores.astype(np.float64) - ref.scores)) <= bound
    with pytest.raises(ValueError, match="tree bank"):
        compile_onnx(load_example("cascade"), mode="fast")


def test_bad_options_are_errors():
    m = load_example("trees")
    with pytest.raises(ValueError, match="opset"):
        compile_onnx(m, opset=17)
    with pytest.raises(ValueError, match="mode"):
        compile_onnx(m, mode="approximate")
    with pytest.raises(ValueError, match="tree_op"):
        compile_onnx(m, tree_op="TreeEnsembleClassifier")
    assert compile_onnx(m, opset=20).opset_import[0].version == 20


def _complete_tree(depth, n_features, rng):
    """A complete tree in heap order: node i splits on a random feature at a
    random threshold, children 2i+1 and 2i+2; leaves carry random values."""
    n_inner, n = 2 ** depth - 1, 2 ** (depth + 1) - 1
    i = np.arange(n)
    inner = i < n_inner
    return dict(feature=np.where(inner, rng.integers(0, n_features, n), -1),
                threshold=np.where(inner, rng.normal(size=n), 0.0).astype(np.float32),
                left=np.where(inner, 2 * i + 1, -1), right=np.where(inner, 2 * i + 2, -1),
                value=rng.normal(size=(n, 1)).astype(np.float32),
                missing_left=rng.random(n) < 0.5)


@pytest.mark.parametrize("tree_op", ["TreeEnsembleRegressor", "gather"])
@pytest.mark.parametrize("depths", [[13, 3, 12], [11] * 5, [1] * 30 + [2]])
def test_leaf_packing_at_its_limits(depths, tree_op):
    # 8192 leaves leave room for one tree per float32 target, 2048 for two
    # (the last target half empty), two leaves for 24 (a second target)
    rng = np.random.default_rng(len(depths))
    F = 6
    bank = ir.concat_trees([_complete_tree(d, F, rng) for d in depths], base_score=[0.25])
    model = ir.model(ir.features_from_costs(rng.uniform(0.5, 3, F)), [bank], 0, task=ir.binary_task())
    X = rng.normal(size=(400, F)).astype(np.float32)
    rep = onnx_report(model, tree_op, X)
    assert rep.ok, rep.table()


def test_many_features_are_searched_a_few_words_at_a_time():
    # 300 features make 10 bit-set words, searched 4 at a time
    # (compilers/onnx.py, WORDS_PER_STEP); deep trees over all of them, one
    # feature repeated along paths, costs not exact in every order
    rng = np.random.default_rng(11)
    F, trees = 300, []

    def grow(t, d):
        k = len(t["feature"])
        for key, v in (("feature", -1), ("threshold", 0.0), ("left", -1), ("right", -1),
                       ("value", float(rng.normal()))):
            t[key].append(v)
        if d < 5:
            t["feature"][k] = int(rng.integers(F)) if rng.random() < 0.8 else 7
            t["threshold"][k] = float(np.float32(rng.normal()))
            t["left"][k] = grow(t, d + 1)
            t["right"][k] = grow(t, d + 1)
        return k
    for _ in range(60):
        tree = {key: [] for key in ("feature", "threshold", "left", "right", "value")}
        grow(tree, 0)
        trees.append(tree)
    model = ir.model(ir.features_from_costs(rng.choice([0.1, 0.3, 1.7], F)), [ir.concat_trees(trees)], 0,
                     task=ir.binary_task())
    X = rng.normal(size=(400, F)).astype(np.float32)
    report = verify(model, X, runtimes=("onnx",))
    assert report.ok, report.table()


def _shape_tensors(proto):
    """Outputs of Shape, and of ops over shapes and constants only: shape
    arithmetic, which may be legitimately empty (the shape of a scalar's
    tail), unlike a batch of rows."""
    shapes = {t.name for t in proto.graph.initializer}
    consts = set(shapes)
    for n in proto.graph.node:
        if n.op_type == "Shape" or all(i in shapes for i in n.input):
            shapes.update(n.output)
    return shapes - consts


def _with_every_tensor_as_output(proto):
    """The graph with every node's output also a graph output (types from
    shape inference), so one run shows every intermediate's shape."""
    inferred = onnx.shape_inference.infer_shapes(proto)
    known = {v.name: v for v in inferred.graph.value_info}
    out = onnx.ModelProto()
    out.CopyFrom(proto)
    have = {o.name for o in out.graph.output}
    for n in out.graph.node:
        for o in n.output:
            if o not in have and o in known:
                out.graph.output.append(known[o])
    return out


@pytest.mark.parametrize("path", example_paths(), ids=lambda p: p.rsplit("/", 1)[-1])
def test_no_op_sees_an_empty_batch(path):
    # onnxruntime 1.16-1.30 dies with SIGFPE on TopK over an empty batch
    # (the over-budget subset when no budget binds); the graph pads one row
    # so that no intermediate is ever empty: checked here on every
    # intermediate, for zero rows and for one row whose budget never binds
    m = ir.load(path)
    proto = compile_onnx(m)
    probe = _with_every_tensor_as_output(proto)
    sess = __import__("onnxruntime").InferenceSession(probe.SerializeToString(),
                                                      providers=["CPUExecutionProvider"])
    finals = {o.name for o in proto.graph.output}
    shapes = _shape_tensors(proto)
    X1 = adversarial_rows(m)[:1]
    for X in (X1[:0], X1):
        got = sess.run(None, {"X": X, "budget": np.full(len(X), np.inf)})
        for o, v in zip(sess.get_outputs(), got, strict=True):
            if o.name in finals:
                assert v.shape[0] == len(X), o.name
            elif not o.name.startswith("out/") and o.name not in shapes:      # out/: the final slices
                assert v.size > 0, (o.name, v.shape)
    runtimes = [OnnxRuntime(proto)] + ([OnnxRuntime(m, mode="fast")] if m.nodes[m.output].kind == "trees" else [])
    for X in (X1[:0], X1):
        for rt in runtimes:
            got, ref = rt.predict(X, budget=np.full(len(X), np.inf)) if rt.mode == "exact" else rt.predict(X), \
                predict(m, X)
            assert got.scores.shape == ref.scores.shape
            np.testing.assert_array_equal(got.output, ref.output)
            if rt.mode == "exact":
                np.testing.assert_array_equal(got.cost, ref.cost)
                np.testing.assert_array_equal(got.stage, ref.stage)


@pytest.mark.parametrize("path", example_paths(), ids=lambda p: p.rsplit("/", 1)[-1])
def test_latency_graph_takes_an_empty_batch(path):
    """The latency schedule (batch_hint <= 16) pads no row where no op needs
    it, so its ops do see zero rows: zero rows and one row give the
    reference's outputs (onnxruntime 1.16-1.31 refused one form of its
    pairwise halt on zero rows; make onnx-compat runs this at the floor)."""
    m = ir.load(path)
    rt = OnnxRuntime(compile_onnx(m, batch_hint=1))
    X1 = adversarial_rows(m)[:1]
    for X in (X1[:0], X1):
        got, ref = rt.predict(X, budget=np.full(len(X), np.inf)), predict(m, X)
        assert got.scores.shape == ref.scores.shape
        np.testing.assert_array_equal(got.output, ref.output)
        np.testing.assert_array_equal(got.scores.view(np.uint32 if got.scores.dtype == np.float32 else np.uint64),
                                      ref.scores.view(np.uint32 if ref.scores.dtype == np.float32 else np.uint64))
        np.testing.assert_array_equal(got.cost, ref.cost)
        np.testing.assert_array_equal(got.stage, ref.stage)


def _span(a, b):
    """Every float32 from a to b (either order)."""
    lo, hi = sorted(np.array([a, b], np.float32).view(np.int32).tolist())
    return np.arange(lo, hi + 1, dtype=np.int32).view(np.float32)


@pytest.mark.parametrize("bound", [np.inf, 79.99])
def test_graph_logistic_is_the_reference_logistic_bit_for_bit(bound):
    """The exact graph's logistic (34 ops since issue 30) against the
    reference's 1 / (1 + expf(-s)) on 2M random bit patterns, expf's range
    edges and one ulp either side, and every float32 where the rounding is
    hardest (near the underflow and overflow ends).  With a ``bound`` on
    |s| below 80 (scores of a tree bank with finite leaves, in the latency
    schedule) it has no clamps (25 ops, 2^n by Pow): the same inputs within the bound,
    and every float32 within 0.01 of +-bound and of n's first steps."""
    import onnxruntime as ort
    from onnx import TensorProto, helper

    from skinflint.compilers.onnx_graph import Graph, logistic, match_constant_ranks
    from skinflint.runtimes import _expf
    g = Graph()
    g.op("Identity", logistic(g, "s", bound), out="p")
    assert len(g.nodes) == (32 if bound == np.inf else 26)     # with the Identity
    graph = helper.make_graph(g.nodes, "logistic", [helper.make_tensor_value_info("s", TensorProto.FLOAT, ["N", 1])],
                              [helper.make_tensor_value_info("p", TensorProto.FLOAT, ["N", 1])], g.inits)
    proto = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 18)])
    proto.ir_version = 9
    match_constant_ranks(proto)
    sess = ort.InferenceSession(proto.SerializeToString(), providers=["CPUExecutionProvider"])
    rng = np.random.default_rng(0)
    bits = rng.integers(0, 2 ** 32, 2_000_000, dtype=np.uint64).astype(np.uint32).view(np.float32)
    edges = np.array([88.72283172607421875, -88.72283172607421875, 103.972084045410156, -103.972084045410156,
                      0.0, -0.0, np.inf, -np.inf, 90, -90, 110, -110], np.float32)
    s = np.concatenate([bits, edges, np.nextafter(edges, np.float32(np.inf)), np.nextafter(edges, np.float32(-np.inf)),
                        _span(-88.3, -88.8), _span(-86.0, -86.9), _span(103.5, 104.1),
                        np.linspace(-120, 120, 200_001, dtype=np.float32)])
    if bound < np.inf:
        s = np.concatenate([s, _span(-bound, -bound + 0.01), _span(bound - 0.01, bound),
                            _span(-0.35, -0.34), _span(0.34, 0.35)])     # n = 0 to +-1: s = +-ln(2) / 2
        s = s[np.abs(s) <= bound]
    s = s[~np.isnan(s)][:, None]
    want = _expf.logistic(s.copy())
    got = sess.run(None, {"s": s})[0]
    np.testing.assert_array_equal(got.view(np.uint32), want.view(np.uint32))


def test_ort_format_for_mobile_runs_exact(tmp_path):
    # ORT Mobile reads the ORT format: every example's default graph
    # converts with onnxruntime's own tool, and the .ort runs bit for bit
    import subprocess
    import sys

    import onnxruntime as ort
    models = {p.rsplit("/", 1)[-1][:-5]: ir.load(p) for p in example_paths()}
    for name, m in models.items():
        onnx.save(compile_onnx(m), tmp_path / f"{name}.onnx")
    subprocess.run([sys.executable, "-m", "onnxruntime.tools.convert_onnx_models_to_ort", str(tmp_path)],
                   check=True, capture_output=True)
    for name, m in models.items():
        rt = OnnxRuntime(m)
        rt.session = ort.InferenceSession(str(tmp_path / f"{name}.ort"), providers=["CPUExecutionProvider"])
        rep = verify(m, runtimes=[rt])
        assert rep.ok, (name, rep.table())


def _binary_trees(leaf, costs=(1.0, 2.0, 3.0)):
    """Three depth-2 trees over 3 features whose leaves are +-leaf and
    +-leaf / 10: scores from -3 leaf to 3 leaf, plus the bias 0.5 (float32 bank)."""
    trees = [dict(feature=np.array([f, (f + 1) % 3, (f + 2) % 3, -1, -1, -1, -1]),
                  threshold=np.array([0.0, -0.5, 0.5, 0, 0, 0, 0], np.float32),
                  left=np.array([1, 3, 5, -1, -1, -1, -1]), right=np.array([2, 4, 6, -1, -1, -1, -1]),
                  value=np.array([0, 0, 0, -leaf, -leaf / 10, leaf / 10, leaf], np.float32),
                  missing_left=np.array([True, False, True, False, False, False, False])) for f in range(3)]
    bank = ir.concat_trees(trees, base_score=0.5)
    return ir.model(ir.features_from_costs(np.array(costs)), [bank], 0, task=ir.binary_task())


def _stump_pairs(n_features, cost):
    """One depth-2 tree per feature f (splits on f, then on f + 1), every
    feature at ``cost``: each feature is a paid unit that some row reaches."""
    F = n_features
    trees = [dict(feature=np.array([f, (f + 1) % F, (f + 1) % F, -1, -1, -1, -1]),
                  threshold=np.array([0.0, -0.5, 0.5, 0, 0, 0, 0], np.float32),
                  left=np.array([1, 3, 5, -1, -1, -1, -1]), right=np.array([2, 4, 6, -1, -1, -1, -1]),
                  value=np.array([0, 0, 0, -0.3, -0.1, 0.1, 0.3], np.float32),
                  missing_left=np.array([True, False, True, False, False, False, False])) for f in range(F)]
    bank = ir.concat_trees(trees, base_score=0.5)
    return ir.model(ir.features_from_costs(np.full(F, cost)), [bank], 0, task=ir.binary_task())


@pytest.mark.parametrize("n_features", [64, 65, 70])
def test_latency_graph_sorted_halt_past_the_pairwise_limit(n_features):
    """The sorted halt is not bounded by the pairwise search's 64 units:
    with equal costs and more than 64 features, the tree operator's voted
    first touches (float32) go to the TopK halt, not to the int64 pairwise
    or general halt (65 features failed to compile when the two choices
    disagreed).  Exact against the reference under halting budgets."""
    m = _stump_pairs(n_features, 2.0)
    proto = compile_onnx(m, batch_hint=1)
    assert any(n.name.startswith("pay/guarded/TopK") for n in proto.graph.node)
    rt = OnnxRuntime(proto)
    rep = verify(m, runtimes=[rt])
    assert rep.ok, rep.table()
    noise = np.random.default_rng(1).normal(size=(300, n_features)).astype(np.float32)
    X = np.concatenate([adversarial_rows(m), noise])
    full = predict(m, X).cost
    for budget in (full, full / 2, full - 1.0, np.zeros(len(X)), np.full(len(X), -1.0)):
        got, ref = rt.predict(X, budget=budget), predict(m, X, budget=budget)
        for field in ("scores", "cost", "stage", "features_used", "proba"):
            np.testing.assert_array_equal(getattr(got, field), getattr(ref, field), err_msg=field)
    assert (predict(m, X, budget=full / 2).stage < predict(m, X).stage).any()   # some rows halt


@pytest.mark.parametrize("leaf", [1.0, 26.0, 27.0, 40.0, 2e38])
def test_latency_graph_drops_nan_work_only_where_scores_cannot_be_nan(leaf):
    """The latency schedule bounds |score| by the tree bank's leaves: scores
    within 80 take the logistic without clamps, larger ones (up to float32
    overflow, +-inf, for 2e38) the clamped one; a tree bank's finite leaves
    and bias never sum to NaN (inf + finite is inf), so its scores get no
    NaN masks, while a linear output keeps them.  All match the reference
    bit for bit on adversarial and random rows, probabilities included."""
    from skinflint.compilers.onnx_values import Setup, Values
    from skinflint.ir.lowering import lower
    m = _binary_trees(leaf)
    proto = compile_onnx(m, batch_hint=1)
    bound = Values(Setup(m, lower(m), None, "TreeEnsembleRegressor", small=True)).score_bound()
    ops = [n.op_type for n in proto.graph.node]
    assert "IsNaN" not in ops
    assert (bound < 80) == (leaf <= 26)          # 3 trees of |leaf| at most, plus the bias: 78.5 / 81.5
    assert ("GreaterOrEqual" in ops) == (leaf > 26)   # the logistic's clamps
    rep = verify(m, runtimes=[OnnxRuntime(proto)])
    assert rep.ok, rep.table()
    X = np.concatenate([adversarial_rows(m), np.random.default_rng(0).normal(size=(500, 3)).astype(np.float32)])
    got, ref = OnnxRuntime(proto).predict(X), predict(m, X)
    np.testing.assert_array_equal(got.scores.view(np.uint32), ref.scores.view(np.uint32))
    np.testing.assert_array_equal(got.proba.view(np.uint32), ref.proba.view(np.uint32))
    assert np.isinf(ref.scores).any() == (leaf == 2e38)
    linear = load_example("linear_over_trees")
    assert "IsNaN" in {n.op_type for n in compile_onnx(linear, batch_hint=1).graph.node}


@pytest.mark.parametrize("name", ["trees", "groups"])
def test_latency_graph_takes_first_touches_from_the_tree_operator(name):
    """With a budget, one region and the TreeEnsembleRegressor, the latency
    graph's first touches are the tree operator's MIN-aggregated votes
    (no [rows, trees, features] Gather and ReduceMin); the other targets
    keep the slot table.  Exact against the reference on adversarial rows
    and budgets either way."""
    m = load_example(name)
    for target, voted in (("onnxruntime-1.16", True), ("no-ml-ops", False)):
        proto = compile_onnx(m, batch_hint=1, target=target)
        searched = any(n.op_type == "ReduceMin" and n.name.startswith("touch/") for n in proto.graph.node)
        agg = {a.s for n in proto.graph.node for a in n.attribute if a.name == "aggregate_function"}
        assert (agg == {b"MIN"}) == voted and searched == (not voted)
        rep = verify(m, runtimes=[OnnxRuntime(proto)])
        assert rep.ok, (target, rep.table())


@pytest.mark.parametrize("cost", [1.0, 0.25, 3.0])
def test_latency_graph_sorts_equal_costs_instead_of_comparing_pairs(cost):
    """Equal feature costs, first touches voted by the tree operator: the
    halt sorts the row's first touches (TopK along axis 0 of [features,
    rows], which onnxruntime 1.16-1.30 runs on zero rows, so no padding row
    in the graph) instead of the [rows, units, units] comparisons.  Exact against
    the reference on adversarial rows, budgets at and around each row's
    cost, negative, zero and +inf, on zero rows and one."""
    m = _binary_trees(1.0, costs=(cost,) * 3)
    proto = compile_onnx(m, batch_hint=1)
    names = [n.name for n in proto.graph.node]
    assert any(n.startswith("pay/guarded/TopK") for n in names) and not any("pairwise" in n for n in names)
    assert [i.name for i in proto.graph.input] == ["X", "budget"] and "in/" not in "".join(names)   # no padding row
    rt = OnnxRuntime(proto)
    rep = verify(m, runtimes=[rt])
    assert rep.ok, rep.table()
    X = adversarial_rows(m)
    ref_cost = predict(m, X).cost
    for budget in (ref_cost, ref_cost - cost / 2, np.full(len(X), -1.0), np.zeros(len(X)), np.full(len(X), np.inf)):
        got, ref = rt.predict(X, budget=budget), predict(m, X, budget=budget)
        for field in ("scores", "cost", "stage", "features_used", "proba"):
            np.testing.assert_array_equal(getattr(got, field), getattr(ref, field), err_msg=field)
    for rows in (X[:0], X[:1]):
        got, ref = rt.predict(rows, budget=np.zeros(len(rows))), predict(m, rows, budget=np.zeros(len(rows)))
        np.testing.assert_array_equal(got.stage, ref.stage)
        np.testing.assert_array_equal(got.cost, ref.cost)


def test_latency_graph_output_tail_and_unit_cost_halt():
    """The latency graph's leaner tail: the label is the first ArgMax of
    [0, score] (ties give class 0, as score > 0 does: +0, -0 and the
    smallest float32 on either side of 0 are leaves here), probabilities
    [1, 0] - [p, -p] with no Concat, unit costs counted on features_used
    (ReduceSum) and the stage looked up by GatherND from [N, 1] slots.
    Exact against the reference, labels included, under halting budgets,
    on zero rows and one; the batch graph keeps the Greater label."""
    tiny = np.float32(1e-45)
    trees = [dict(feature=np.array([f, (f + 1) % 3, (f + 2) % 3, -1, -1, -1, -1]),
                  threshold=np.array([0.0, -0.5, 0.5, 0, 0, 0, 0], np.float32),
                  left=np.array([1, 3, 5, -1, -1, -1, -1]), right=np.array([2, 4, 6, -1, -1, -1, -1]),
                  value=np.array([0, 0, 0, -0.0, tiny, -tiny, 0.0], np.float32) * (f + 1),
                  missing_left=np.array([True, False, True, False, False, False, False])) for f in range(3)]
    m = ir.model(ir.features_from_costs(np.ones(3)), [ir.concat_trees(trees, base_score=0.0)], 0,
                 task=ir.binary_task())
    proto = compile_onnx(m, batch_hint=1)
    ops = {n.name.rsplit("_", 1)[0] for n in proto.graph.node}
    assert {"out/ArgMax", "route/stage/GatherND", "pay/guarded/ReduceSum"} <= ops and "out/proba/Concat" not in ops
    assert not any(n.name.startswith("out/ArgMax") for n in compile_onnx(m).graph.node)
    rt = OnnxRuntime(proto)
    rep = verify(m, runtimes=[rt])
    assert rep.ok, rep.table()
    X = adversarial_rows(m)
    ref_scores = predict(m, X).scores
    assert (ref_scores > 0).any() and (ref_scores == 0).any() and (ref_scores < 0).any()
    full = predict(m, X).cost
    for budget in (full, full - 1.0, np.zeros(len(X)), np.full(len(X), -1.0), np.full(len(X), np.inf)):
        for rows in (slice(None), slice(0, 0), slice(0, 1)):
            got, ref = rt.predict(X[rows], budget=budget[rows]), predict(m, X[rows], budget=budget[rows])
            for field in ("output", "scores", "cost", "stage", "features_used", "proba"):
                np.testing.assert_array_equal(getattr(got, field), getattr(ref, field), err_msg=field)
