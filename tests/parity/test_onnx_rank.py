"""The ONNX query graph (issue 27, compilers/onnx_query.py): one query per run, against the reference query VM
(runtimes/_query_vm.py) bit for bit: scores, cost, stage, trees done, drops, order and features used.  Models:
hand-built query_exit banks (both rules, tied scores, budgets that halt documents mid-query, queries of one
document, of fewer than keep and of 1,000), costs that are and are not exact in any order, category-set banks,
infinite scores, EarlyExitRanker(exit_rule="query") and CascadeRanker fits; bad input; onnxruntime 1.16 (the
project's floor) through tests/compat/ort_runner.py when its folder is cached."""
import json
import os
import subprocess
import sys
from dataclasses import replace

import numpy as np
import onnx
import pytest

from skinflint import ir
from skinflint.compilers.onnx import compile_onnx
from skinflint.ir.arrays import frozen
from skinflint.runtimes.onnx import OnnxRuntime
from skinflint.runtimes.reference import predict, rank
from skinflint.verify import verify, verify_ranking
from tests.parity.test_c_rank import (
    FIELDS,
    assert_clean,
    assert_same,
    categorical_query_model,
    integer_rows,
    stumps,
    zero_tree_costs,
)
from tests.ranking.fitted import cascade_ranker_model, early_exit_ranker_model, yahoo
from tests.ranking.test_query_exit import grid_rows, random_bank_model


def inexact_costs(m):
    """``m`` with feature, group and tree costs whose float64 sums depend on the order of the additions (0.1,
    0.2, 0.3 ...): the graph must add them in acquisition order (its sort), not in one reduction."""
    rng = np.random.default_rng(7)
    feats = ir.features_from_costs(rng.choice([0.1, 0.2, 0.3, 0.7], m.n_features),
                                   groups=[f.group for f in m.features])
    bank = m.nodes[0]
    bank = replace(bank, tree_cost=frozen(rng.choice([0.0, 0.1, 0.3], bank.n_trees)))
    return ir.model(feats, [bank, m.nodes[1]], 1, groups=ir.groups_from_costs([0.3] * len(m.groups)), task=m.task)


@pytest.mark.parametrize("seed", range(6))
def test_hand_built_query_models_match_the_reference(seed):
    """Mixed proximity / cutoff checkpoints over a grid-valued bank (ties common), random queries of 1 to
    1,000 documents with forced copies, adversarial rows, and budgets at and around each document's cost."""
    m = random_bank_model(seed)
    if seed % 3 == 2:
        m = zero_tree_costs(m)
    if seed % 3 == 1:
        m = inexact_costs(m)
    rep = verify_ranking(m, grid_rows(300, 6, seed), runtimes=[OnnxRuntime(m)], seed=seed)
    assert_clean(rep)
    assert rep.queries >= 8


def test_the_default_query_verify_includes_onnx():
    m = random_bank_model(4)
    rep = verify(m, grid_rows(100, 6, 2), max_rows=200)
    b = {b.backend: b for b in rep.backends}["onnx"]
    assert rep.queries > 0 and not b.error
    assert (b.scores, b.cost, b.stage, b.features_used, b.order) == (0, 0, 0, 0, 0), b


def test_drops_and_halts_mid_query_and_big_queries():
    """One run with every situation at once, compared field by field: queries of 1 document, fewer than
    keep, 40, 140 and 1,000; documents dropped by each rule and halted by their budget between and inside
    checkpoints, and a negative budget (halts at the first unit, even a free one)."""
    m = random_bank_model(11, n_trees=30, checkpoints=[3, 7, 12, 20, 27])
    X = grid_rows(1200, 6, 4)
    group = [1, 2, 40, 17, 140, 1000]
    full = rank(m, X, group)
    budget = full.cost * np.random.default_rng(0).choice([0.3, 0.6, 1.0, np.inf], len(X))
    budget[::97] = -1.0
    ref = rank(m, X, group, budget)
    halted = (ref.n_trees < 30) & ~ref.dropped
    assert ref.dropped.any() and halted.any() and (ref.stage == -1).any() and (ref.stage == 5).any()
    rt = OnnxRuntime(m)
    assert_same(ref, rt.rank(X, group, budget), "budgets")
    assert_same(full, rt.rank(X, group), "no budget")
    assert_same(full, OnnxRuntime(m, budget=False).rank(X, group), "no budget input")


def test_tied_scores_go_by_position():
    """Copies of one document tie everywhere: a cutoff keeps the first keep by position, and the order is
    position order (expected values written out, not read from a runtime)."""
    bank = stumps([(1.0, 2.0)] * 3, tree_cost=[1.0, 1.0, 1.0])
    m = ir.model(ir.features_from_costs([2.0]), [bank, ir.query_exit(0, [1, 2], rule="cutoff", keep=[5, 3])],
                 1)
    X = np.ones((12, 1), np.float32)
    got = OnnxRuntime(m).rank(X, [12])
    assert got.dropped.tolist() == [False] * 3 + [True] * 9
    assert got.n_trees.tolist() == [3] * 3 + [2] * 2 + [1] * 7
    assert got.stage.tolist() == [2] * 3 + [1] * 2 + [0] * 7
    assert got.order.tolist() == list(range(12))
    assert got.cost.tolist() == [5.0] * 3 + [4.0] * 2 + [3.0] * 7
    assert_same(rank(m, X, [12]), got)


def test_ties_at_the_kth_score_with_zero_gap_and_signed_zeros():
    """Scores +0.0 and -0.0 tie (as in the reference's sort) and a gap of 0 drops a document tied with the
    kth: five documents, keep 2, the first two by position stay (expected values written out)."""
    bank = stumps([(0.0, -0.0), (1.0, 1.0)])
    m = ir.model(ir.features_from_costs([1.0]), [bank, ir.query_exit(0, [1], keep=2, gap=0.0)], 1)
    X = np.array([[1.0], [0.0], [1.0], [0.0], [0.0]], np.float32)     # scores -0.0, 0.0, -0.0, 0.0, 0.0
    got = OnnxRuntime(m).rank(X, [5])
    assert got.dropped.tolist() == [False, False, True, True, True]
    assert got.order.tolist() == [0, 1, 2, 3, 4]
    assert_same(rank(m, X, [5]), got)


def test_the_proximity_gap_is_a_float64_subtraction_of_float32_scores():
    """kth - score >= gap decided in float64: scores 1 and 2**-30 differ by 1 - 2**-30 in float64 (exactly)
    but by 1 in float32, so a gap of 1 keeps the second document (a float32 subtraction would drop it),
    1 - 2**-30 drops it and the next float64 above that keeps it."""
    bank = stumps([(2.0 ** -30, 1.0), (0.0, 0.0)])
    X = np.array([[0.0], [1.0]], np.float32)   # scores 2**-30, 1
    diff = 1.0 - 2.0 ** -30
    for gap, drop in ((1.0, False), (diff, True), (np.nextafter(diff, 2.0), False)):
        m = ir.model(ir.features_from_costs([1.0]), [bank, ir.query_exit(0, [1], keep=1, gap=gap)], 1)
        got = OnnxRuntime(m).rank(X, [2])
        assert got.dropped.tolist() == [drop, False], gap
        assert_same(rank(m, X, [2]), got)


@pytest.mark.parametrize("rule", ["proximity", "cutoff"])
def test_infinite_scores_rank_as_the_reference(rule):
    """Leaves near the float32 limit make sums of +-inf: infinite scores tie by position, and kth - score is
    infinite, or NaN for inf - inf (never >= gap)."""
    big = 3e38
    bank = stumps([(big, -big), (big, -big), (-big, big), (1.0, 0.0)], features=[0, 1, 2, 0])
    gap = None if rule == "cutoff" else [0.0, 1.0, 1e30]
    m = ir.model(ir.features_from_costs([1.0, 2.0, 4.0]),
                 [bank, ir.query_exit(0, [1, 2, 3], rule=rule, keep=[6, 3, 2], gap=gap)], 1)
    codes = np.array([[(c >> i) & 1 for i in range(3)] for c in range(8)], np.float32)
    X = np.concatenate([codes, codes[::-1], codes[[3, 3, 5, 5, 0, 0]]])
    group = [8, 8, 6]
    ref = rank(m, X, group)
    assert (ref.scores == np.inf).any() and (ref.scores == -np.inf).any()
    assert_same(ref, OnnxRuntime(m).rank(X, group))


@pytest.mark.parametrize("seed", [0, 9])
def test_category_set_banks(seed):
    m = categorical_query_model(seed)
    assert any(getattr(n, "categories", None) is not None for n in m.nodes)
    assert_clean(verify_ranking(m, integer_rows(400, m.n_features, seed), runtimes=[OnnxRuntime(m)], seed=seed))


@pytest.mark.parametrize("tree_op", ["TreeEnsemble", "gather"])
def test_other_tree_operators(tree_op):
    from tests.parity.test_onnx import skip_unless_runnable
    skip_unless_runnable(tree_op)       # the floor's onnxruntime 1.16 refuses TreeEnsemble (docs/onnx.md)
    m = random_bank_model(5)
    assert_clean(verify_ranking(m, grid_rows(200, 6, 5), runtimes=[OnnxRuntime(m, tree_op=tree_op)], seed=5))


def test_early_exit_ranker_query_rule():
    te = yahoo()[3]
    m = early_exit_ranker_model()
    assert m.scores_queries
    rep = verify_ranking(m, te.X, runtimes=[OnnxRuntime(m)])
    assert_clean(rep)
    ref = rank(m, te.X, np.unique(te.qid, return_counts=True)[1])
    assert ref.dropped.any()       # the rule drops documents here: the parity above covers drops


def test_cascade_ranker():
    te = yahoo()[3]
    m = cascade_ranker_model()
    assert m.scores_queries
    assert_clean(verify_ranking(m, te.X, runtimes=("onnx",)))


def test_bad_input_is_one_clear_error():
    m = random_bank_model(2)
    rt = OnnxRuntime(m)
    X = grid_rows(6, m.n_features, 0)
    with pytest.raises(ValueError, match="query 1 has 0 documents"):
        rt.rank(X, [3, 0, 3])
    with pytest.raises(ValueError, match="sum to 7 but X has 6 rows"):
        rt.rank(X, [3, 4])
    with pytest.raises(ValueError, match="NaN is not a budget"):
        rt.rank(X, [6], np.r_[np.ones(5), np.nan])
    with pytest.raises(ValueError, match="call rank"):
        rt.predict(X)
    with pytest.raises(ValueError, match="no query-level exit"):
        OnnxRuntime(ir.model(m.features, [m.nodes[0]], 0, groups=m.groups)).rank(X, [6])
    with pytest.raises(ValueError, match="compiled without a budget input"):
        OnnxRuntime(m, budget=False).rank(X, [6], np.ones(6))
    with pytest.raises(ValueError, match="exact graph only"):
        compile_onnx(m, mode="fast")
    with pytest.raises(ValueError, match="batch_hint"):
        compile_onnx(m, batch_hint=1)


def test_zero_rows_and_one_document():
    """No query: empty outputs of the right types, and no op sees an empty batch (the padding row); a query
    of one document is never dropped (nothing ranks past keep >= 1)."""
    m = random_bank_model(6)
    rt = OnnxRuntime(m)
    got = rt.rank(np.zeros((0, m.n_features), np.float32), [])
    ref = rank(m, np.zeros((0, m.n_features), np.float32), [])
    for f in FIELDS:
        assert np.asarray(getattr(got, f)).shape == np.asarray(getattr(ref, f)).shape, f
    X = grid_rows(1, m.n_features, 3)
    one = rt.rank(X, [1])
    assert one.dropped.tolist() == [False] and one.n_trees.tolist() == [12] and one.order.tolist() == [0]
    assert_same(rank(m, X, [1]), one)


def test_the_graph_is_flat_and_per_row_graphs_are_unchanged():
    """Standard ops only, no Loop / If / Scan (checkpoints unrolled), opsets as the per-row graph's; a model
    without a query exit compiles to the per-row graph (its pins: tests/compilers/test_golden_hashes.py)."""
    m = random_bank_model(0)
    p = compile_onnx(m)
    ops = {n.op_type for n in p.graph.node}
    assert not ops & {"Loop", "If", "Scan"}
    assert "TopK" in ops
    assert [(o.domain, o.version) for o in p.opset_import] == [("", 18), ("ai.onnx.ml", 3)]
    assert [o.name for o in p.graph.output][-3:] == ["order", "n_trees", "dropped"]
    purposes = ("in/", "leaf/", "value/", "touch/", "pay/", "query/", "out/")    # tests/compilers/test_onnx_names.py
    names = [n.name for n in p.graph.node]
    assert all(n.startswith(purposes) for n in names), [n for n in names if not n.startswith(purposes)]
    assert len(set(names)) == len(names)
    assert {n.name.split("/")[0] for n in p.graph.node if n.op_type == "TopK"} == {"pay", "query"}
    meta = {x.key: x.value for x in p.metadata_props}
    assert json.loads(meta["skinflint.query"])["after"] == m.nodes[1].after.tolist()
    rows = ir.model(m.features, [m.nodes[0]], 0, groups=m.groups)
    assert "skinflint.query" not in {x.key for x in compile_onnx(rows).metadata_props}


def _compat_folder(version):
    cache = os.environ.get("SKINFLINT_COMPAT_CACHE", os.path.expanduser("~/.cache/skinflint-compat"))
    ort_dir, deps = os.path.join(cache, f"onnxruntime-{version}"), os.path.join(cache, "deps")
    ok = all(os.path.exists(os.path.join(d, ".complete")) for d in (ort_dir, deps))
    return (ort_dir, deps) if ok else None


def test_onnxruntime_1_16_ranks_bit_for_bit(tmp_path):
    """The project's floor: the query graphs (both rules, budgets, category sets, inexact costs) run on
    onnxruntime 1.16.3 in its own folder (``make onnx-compat`` installs it) and give the reference's ranks."""
    folders = _compat_folder("1.16.3")
    if folders is None:
        pytest.skip("onnxruntime 1.16.3 is not in the compat cache (python -m tests.compat.ort_matrix fills it)")
    cases, refs = [], {}
    models = [random_bank_model(0), inexact_costs(random_bank_model(1)), zero_tree_costs(random_bank_model(2)),
              categorical_query_model(0)]
    for i, m in enumerate(models):
        onnx.save(compile_onnx(m), str(tmp_path / f"g{i}.onnx"))
        X = integer_rows(300, m.n_features, i) if i == 3 else grid_rows(300, m.n_features, i)
        sizes = [1, 2, 5, 40, 252]
        full = rank(m, X, sizes)
        budget = full.cost * np.random.default_rng(i).choice([0.3, 0.6, 1.0, np.inf], len(X))
        feeds = []
        for b_name, b in (("inf", np.full(len(X), np.inf)), ("around", budget)):
            a = 0
            for q, n in enumerate(sizes):
                f = f"g{i}_{b_name}_{q}.npz"
                np.savez(tmp_path / f, X=X[a:a + n], budget=b[a:a + n])
                refs[f] = rank(m, X[a:a + n], [n], b[a:a + n])
                feeds.append(f)
                a += n
        cases.append({"graph": f"g{i}.onnx", "feeds": feeds})
    (tmp_path / "cases.json").write_text(json.dumps(cases))
    out = tmp_path / "out"
    out.mkdir()
    runner = os.path.join(os.path.dirname(__file__), "..", "compat", "ort_runner.py")
    r = subprocess.run([sys.executable, "-I", runner, str(tmp_path), str(out), "--path", folders[0],
                        "--path", folders[1], "--expect-version", "1.16.3"], capture_output=True, text=True,
                       timeout=600)
    assert r.returncode == 0 and "DONE" in r.stdout, r.stdout[-2000:] + r.stderr[-2000:]
    assert "ERROR" not in r.stdout and "REFUSED" not in r.stdout, r.stdout
    for f, ref in refs.items():
        with np.load(out / (f[:-4] + ".out.npz")) as z:
            got = {k: z[k] for k in z.files}
        for name in FIELDS:
            a, b = np.asarray(getattr(ref, name)), got[name]
            assert a.dtype == b.dtype and np.array_equal(a.view(np.uint8), b.view(np.uint8)), (f, name)


@pytest.mark.parametrize("which", ["lazy", "inexact"])
def test_no_op_sees_an_empty_batch(which):
    """onnxruntime 1.16-1.30 dies with SIGFPE on TopK over an empty batch: every intermediate of the query
    graph (the checkpoints' sorts, the subset of dropped documents included) is non-empty for zero documents
    and for one document whose budget never binds (tests/parity/test_onnx.py checks the per-row graphs)."""
    import onnxruntime as ort

    from tests.parity.test_onnx import _shape_tensors, _with_every_tensor_as_output
    m = random_bank_model(8) if which == "lazy" else inexact_costs(random_bank_model(8))
    proto = compile_onnx(m)
    sess = ort.InferenceSession(_with_every_tensor_as_output(proto).SerializeToString(),
                                providers=["CPUExecutionProvider"])
    finals, shapes = {o.name for o in proto.graph.output}, _shape_tensors(proto)
    X1 = grid_rows(1, m.n_features, 0)
    for X in (X1[:0], X1):
        got = sess.run(None, {"X": X, "budget": np.full(len(X), np.inf)})
        seen = 0
        for o, v in zip(sess.get_outputs(), got, strict=True):
            if o.name in finals:
                assert v.shape[0] == len(X), o.name
            elif not o.name.startswith("out/") and o.name not in shapes:      # out/: the final slices
                assert v.size > 0, (o.name, v.shape)
                seen += o.name.startswith("query/")
        assert seen > 20


@pytest.mark.parametrize("after", [[], [12], [3, 12], [0, 4], [5, 5], [7, 4]])
def test_checkpoints_the_ir_forbids_are_refused_by_the_graph(after):
    """Hand-made tables (compile_onnx's ``tables``) bypass the IR's checks: checkpoints must be strictly
    increasing in [1, T - 1], at least one.  A checkpoint after the last tree would drop documents that the
    graph then reports as survivors (``dropped`` is "stopped before tree T", ``stage`` J), and none at all
    leaves the sorts nothing to sort; one clear error instead of a wrong or crashing graph."""
    from skinflint.ir.lowering import lower_query
    m = random_bank_model(3)       # 12 trees
    tab, q = lower_query(m)
    J = len(after)
    bad = replace(q, after=np.array(after, np.int64), keep=np.full(J, 2, np.int64), rule=np.zeros(J, np.int32),
                  gap=np.zeros(J))
    with pytest.raises(ValueError, match="checkpoints"):
        compile_onnx(m, tables=(tab, bad))


def _cost_after(m, X, a):
    """Per document, what the first ``a`` trees of the bank cost it with no budget and no exit: the per-row
    reference's cost of the bank cut to those trees (so the budgets below are not read from a rank)."""
    bank = m.nodes[0]
    cut = replace(bank, roots=frozen(bank.roots[:a]), tree_cost=frozen(bank.tree_cost[:a]))
    return predict(ir.model(m.features, [cut], 0, groups=m.groups), X).cost


@pytest.mark.parametrize("seed", [0, 1, 2, 3])
def test_budgets_at_each_checkpoints_cost(seed):
    """Budgets exactly at a document's cost when it finishes a checkpoint's trees, one ulp below (it halts
    inside the checkpoint's last tree: not in that checkpoint's ranking) and one ulp above (it is ranked
    there, may be dropped, else halts at the next unit it cannot pay), costs exact and not in any order."""
    rng = np.random.default_rng(seed)
    m = random_bank_model(seed, n_trees=14, checkpoints=[2, 5, 9, 13])
    if seed % 2:
        m = inexact_costs(m)
    sizes = [1, 3, 8, 25, 60]
    X = grid_rows(sum(sizes), m.n_features, seed)
    X[1::2] = X[0::2][:len(X[1::2])]        # copies: ties at every checkpoint
    at = np.array([_cost_after(m, X, a) for a in m.nodes[1].after.tolist()])
    rt = OnnxRuntime(m)
    seen_halt_at_cp = seen_drop = 0
    for _ in range(4):
        c = at[rng.integers(len(at), size=len(X)), np.arange(len(X))]
        b = np.choose(rng.integers(3, size=len(X)), [c, np.nextafter(c, -np.inf), np.nextafter(c, np.inf)])
        ref = rank(m, X, sizes, b)
        assert_same(ref, rt.rank(X, sizes, b))
        seen_halt_at_cp += int((np.isin(ref.n_trees, m.nodes[1].after) & ~ref.dropped).sum())
        seen_drop += int(ref.dropped.sum())
    assert seen_halt_at_cp and seen_drop      # both situations happened


def test_without_the_features_used_output():
    """compile_onnx(features_used=False): the rank has no features used and every other field as the
    reference's."""
    m = random_bank_model(7)
    X = grid_rows(120, m.n_features, 7)
    group = [1, 4, 15, 100]
    budget = rank(m, X, group).cost * np.random.default_rng(0).choice([0.5, 1.0, np.inf], len(X))
    ref = rank(m, X, group, budget)
    got = OnnxRuntime(m, features_used=False).rank(X, group, budget)
    assert got.features_used is None and ref.dropped.any() and ((ref.n_trees < 12) & ~ref.dropped).any()
    for f in FIELDS:
        if f != "features_used":
            a, b = np.asarray(getattr(ref, f)), np.asarray(getattr(got, f))
            assert a.dtype == b.dtype and np.array_equal(a.view(np.uint8), b.view(np.uint8)), f
