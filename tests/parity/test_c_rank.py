"""The generated C's query-level entry points (issue 27): <prefix>_rank_query and _rank_query_lazy against the
reference query VM (runtimes/_query_vm.py), bit for bit: scores, cost, stage, trees done, drops, order, features
used, and one fetch per used feature on demand.  Models: EarlyExitRanker(exit_rule="query") and CascadeRanker fits,
hand-built query_exit banks (both rules, tied scores, budgets that halt documents mid-query, queries of one
document and of more than keep or BLOCK documents), category-set banks; the documented return codes of bad calls;
everything again under ASan + UBSan with workspaces and outputs of exactly the sizes asked for."""
import ctypes
import shutil
import subprocess
from dataclasses import replace

import numpy as np
import pytest

from skinflint import ir
from skinflint.compilers.c import C_FLAGS, STRICT_WARNINGS, compile_c
from skinflint.ir.arrays import frozen
from skinflint.ir.random_model import random_model, with_category_splits
from skinflint.runtimes.c import CRuntime
from skinflint.runtimes.c_targets import run_rank_on_target, target_available
from skinflint.runtimes.reference import rank
from skinflint.verify import verify_ranking
from tests.ranking.fitted import cascade_ranker_model, early_exit_ranker_model, yahoo
from tests.ranking.test_query_exit import grid_rows, random_bank_model

FIELDS = ("scores", "cost", "stage", "n_trees", "dropped", "order", "features_used")
# the return codes the generated header documents (SFM_RANK_*)
OK, EDOCS, ENULL, ESPACE, EBUDGET = 0, -1, -2, -3, -4


def assert_same(ref, got, what=""):
    for f in FIELDS:
        a, b = np.asarray(getattr(ref, f)), np.asarray(getattr(got, f))
        assert a.shape == b.shape, f"{what} {f}: shape {b.shape}, reference {a.shape}"
        if a.dtype.kind == "f":   # bit patterns: -0.0, NaN payloads and all
            assert a.dtype == b.dtype and np.array_equal(a.view(np.uint8), b.view(np.uint8)), f"{what} {f}"
        else:
            assert np.array_equal(a, b), f"{what} {f}: {np.flatnonzero(a != b)[:5]}"
    if got.fetches is not None:   # on demand: each used feature fetched once, nothing else
        assert np.array_equal(got.fetches, ref.features_used.sum(1)), f"{what} fetches"


def assert_clean(rep):
    for b in rep.backends:
        assert not b.error, b.error
        assert (b.scores, b.cost, b.stage, b.features_used, b.fetches, b.order) == (0, 0, 0, 0, 0, 0), b


def zero_tree_costs(m):
    """``m`` with every tree free: the batch walk's zero-cost shortcut (no charge, no halt) runs."""
    bank = m.nodes[0]
    return ir.model(m.features, [replace(bank, tree_cost=frozen(np.zeros(bank.n_trees))), m.nodes[1]], 1,
                    groups=m.groups, task=m.task)


def categorical_query_model(seed):
    """A random one-output trees model (ir.random_model) wrapped in a query_exit over every tree, with about
    half its splits made category sets."""
    for s in range(seed, seed + 200):
        base = random_model(s, kinds=("trees",))
        bank = base.nodes[base.output]
        if bank.n_outputs == 1 and bank.n_trees >= 2 and not bank.is_float64:
            break
    T = bank.n_trees
    q = ir.query_exit(base.output, list(range(1, T)), rule=(["cutoff", "proximity"] * T)[:T - 1], keep=2, gap=0.5)
    nodes = list(base.nodes) + [q]
    return with_category_splits(ir.model(base.features, nodes, len(nodes) - 1, groups=base.groups,
                                         task=base.task), fraction=0.6)


def stumps(leaves, tree_cost=None, features=None):
    """A bank of T stumps at 0.5 (on feature ``features[t]``, default 0), tree t's leaves ``leaves[t]``
    (left, right)."""
    f, thr, lft, rgt, v = [], [], [], [], []
    for i, (a, b) in enumerate(leaves):
        f += [0 if features is None else features[i], -1, -1]
        thr += [0.5, 0.0, 0.0]
        lft += [3 * i + 1, -1, -1]
        rgt += [3 * i + 2, -1, -1]
        v += [[0.0], [a], [b]]
    return ir.trees_from_arrays(f, thr, lft, rgt, v, roots=[3 * i for i in range(len(leaves))],
                                tree_cost=tree_cost)


def integer_rows(n, F, seed):
    """Small integer codes, halves and NaN: category-set members, values outside the sets and missing."""
    rng = np.random.default_rng(seed)
    X = rng.choice(np.r_[np.arange(-2, 40), [0.5, 2.5, np.nan]].astype(np.float32), size=(n, F))
    return np.ascontiguousarray(X, np.float32)


@pytest.mark.parametrize("seed", range(6))
@pytest.mark.parametrize("api", ["dense", "lazy"])
def test_hand_built_query_models_match_the_reference(seed, api):
    """Mixed proximity / cutoff checkpoints over a grid-valued bank (ties common), random queries of 1 to
    1,000 documents with forced copies, and budgets at and around each document's cost."""
    m = random_bank_model(seed)
    if seed % 3 == 2:
        m = zero_tree_costs(m)
    rep = verify_ranking(m, grid_rows(300, 6, seed), runtimes=[CRuntime(m, api=api)], seed=seed)
    assert_clean(rep)
    assert rep.queries >= 8


def test_drops_and_halts_mid_query_and_big_queries():
    """One run with every situation at once, compared field by field: queries of 1 document, fewer than
    keep, more than BLOCK (16) and 1,000; documents dropped by each rule and halted by their budget between
    and inside checkpoints."""
    m = random_bank_model(11, n_trees=30, checkpoints=[3, 7, 12, 20, 27])
    X = grid_rows(1200, 6, 4)
    group = [1, 2, 40, 17, 140, 1000]
    full = rank(m, X, group)
    budget = full.cost * np.random.default_rng(0).choice([0.3, 0.6, 1.0, np.inf], len(X))
    ref = rank(m, X, group, budget)
    halted = (ref.n_trees < 30) & ~ref.dropped
    assert ref.dropped.any() and halted.any() and (ref.stage == -1).any() and (ref.stage == 5).any()
    for api in ("dense", "lazy"):
        assert_same(ref, CRuntime(m, api=api).rank(X, group, budget), api)
        assert_same(full, CRuntime(m, api=api).rank(X, group), api + " no budget")


def test_tied_scores_go_by_position():
    """Copies of one document tie everywhere: a cutoff keeps the first keep by position, and the order is
    position order (expected values written out, not read from a runtime)."""
    bank = stumps([(1.0, 2.0)] * 3, tree_cost=[1.0, 1.0, 1.0])
    m = ir.model(ir.features_from_costs([2.0]), [bank, ir.query_exit(0, [1, 2], rule="cutoff", keep=[5, 3])],
                 1)
    X = np.ones((12, 1), np.float32)
    for api in ("dense", "lazy"):
        got = CRuntime(m, api=api).rank(X, [12])
        assert got.dropped.tolist() == [False] * 3 + [True] * 9
        assert got.n_trees.tolist() == [3] * 3 + [2] * 2 + [1] * 7
        assert got.stage.tolist() == [2] * 3 + [1] * 2 + [0] * 7
        assert got.order.tolist() == list(range(12))
        assert got.cost.tolist() == [5.0] * 3 + [4.0] * 2 + [3.0] * 7
        assert_same(rank(m, X, [12]), got, api)


def test_the_proximity_gap_is_a_float64_subtraction_of_float32_scores():
    """kth - score >= gap decided in float64: scores 1 and 2**-30 differ by 1 - 2**-30 in float64 (exactly)
    but by 1 in float32, so a gap of 1 keeps the second document (a float32 subtraction would drop it),
    1 - 2**-30 drops it and the next float64 above that keeps it."""
    bank = stumps([(2.0 ** -30, 1.0), (0.0, 0.0)])
    X = np.array([[0.0], [1.0]], np.float32)   # scores 2**-30, 1
    diff = 1.0 - 2.0 ** -30
    for gap, drop in ((1.0, False), (diff, True), (np.nextafter(diff, 2.0), False)):
        m = ir.model(ir.features_from_costs([1.0]), [bank, ir.query_exit(0, [1], keep=1, gap=gap)], 1)
        for api in ("dense", "lazy"):
            got = CRuntime(m, api=api).rank(X, [2])
            assert got.dropped.tolist() == [drop, False], (gap, api)
            assert_same(rank(m, X, [2]), got, api)


@pytest.mark.parametrize("rule", ["proximity", "cutoff"])
def test_infinite_scores_rank_as_the_reference(rule):
    """Leaves near the float32 limit make sums of +-inf (finite leaves never make a NaN score): infinite
    scores tie by position, and kth - score is infinite, or NaN for inf - inf (never >= gap)."""
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
    for api in ("dense", "lazy"):
        assert_same(ref, CRuntime(m, api=api).rank(X, group), api)


@pytest.mark.parametrize("seed", [0, 5, 9])
def test_category_set_banks(seed):
    m = categorical_query_model(seed)
    assert any(getattr(n, "categories", None) is not None for n in m.nodes)
    X = integer_rows(400, m.n_features, seed)
    for api in ("dense", "lazy"):
        assert_clean(verify_ranking(m, X, runtimes=[CRuntime(m, api=api)], seed=seed))


def test_early_exit_ranker_query_rule():
    te = yahoo()[3]
    m = early_exit_ranker_model()
    assert m.scores_queries
    for api in ("dense", "lazy"):
        assert_clean(verify_ranking(m, te.X, runtimes=[CRuntime(m, api=api)]))


def test_cascade_ranker():
    te = yahoo()[3]
    m = cascade_ranker_model()
    assert m.scores_queries
    assert_clean(verify_ranking(m, te.X, runtimes=("c",)))


def test_return_codes_of_bad_calls():
    """Each bad call returns its documented code and writes nothing (the outputs keep a sentinel)."""
    m = random_bank_model(2)
    rt = CRuntime(m)
    lib = rt._lib
    n, F = 5, m.n_features
    X = grid_rows(n, F, 0)
    need = lib.sfm_rank_query_workspace_bytes(n)
    assert need > 0 and lib.sfm_rank_query_lazy_workspace_bytes(n) > 0
    for bad in (0, -1, 2 ** 24 + 1):
        assert lib.sfm_rank_query_workspace_bytes(bad) == 0 and lib.sfm_rank_query_lazy_workspace_bytes(bad) == 0
    ws = ctypes.create_string_buffer(need)
    scores = np.full(n, 7.0, np.float32)
    order = np.full(n, 7, np.int32)
    nan_budget = np.r_[np.ones(n - 1), np.nan]

    def p(a):
        return a.ctypes.data_as(ctypes.c_void_p)
    x0, s0, o0 = p(X), p(scores), p(order)

    def call(x=x0, k=n, budget=None, s=s0, o=o0, w=ws, nbytes=need):
        return lib.sfm_rank_query(x, k, budget, s, None, None, None, None, o, None, w, nbytes)
    assert call(k=0) == EDOCS and call(k=-4) == EDOCS and call(k=2 ** 24 + 1) == EDOCS
    assert call(x=None) == ENULL and call(s=None) == ENULL and call(o=None) == ENULL and call(w=None) == ENULL
    assert call(nbytes=need - 1) == ESPACE
    assert call(budget=p(nan_budget)) == EBUDGET
    assert scores.tolist() == [7.0] * n and order.tolist() == [7] * n
    assert lib.sfm_rank_query_lazy(rt._DocFetch(), None, n, None, p(scores), None, None, None, None, p(order), None, ws,
                                   need) == ENULL
    assert call() == OK and sorted(order.tolist()) == list(range(n))


def test_python_errors_are_one_clear_error():
    m = random_bank_model(2)
    rt = CRuntime(m)
    X = grid_rows(6, m.n_features, 0)
    with pytest.raises(ValueError, match="group"):
        rt.rank(X, [3, 0, 3])
    with pytest.raises(ValueError, match="group"):
        rt.rank(X, [3, 4])
    with pytest.raises(ValueError, match="NaN"):
        rt.rank(X, [6], np.r_[np.ones(5), np.nan])
    with pytest.raises(ValueError, match="rank"):
        rt.predict(X)


@pytest.mark.parametrize("cc", ["gcc", "clang"])
def test_query_c_compiles_under_strict_warnings(cc, tmp_path):
    if shutil.which(cc) is None:
        pytest.skip(f"{cc} is not installed")
    for i, m in enumerate([random_bank_model(0), zero_tree_costs(random_bank_model(2)), categorical_query_model(0)]):
        out = tmp_path / str(i)
        compile_c(m, out)
        r = subprocess.run([cc, *C_FLAGS, *STRICT_WARNINGS, "-O2", "-c", "-o", str(out / "model.o"),
                            str(out / "model.c")], capture_output=True, text=True)
        assert r.returncode == 0, r.stderr


@pytest.mark.parametrize("which", ["grid", "zero-cost", "categorical"])
def test_under_asan_ubsan(which):
    """Dense and on-demand ranking with workspaces and outputs malloc'd at exactly the sizes asked for (the
    workspace one byte off alignment), budgets halting documents, queries past BLOCK; and the bad calls."""
    ok, why = target_available("host-asan-ubsan")
    if not ok:
        pytest.skip(why)
    if which == "categorical":
        m = categorical_query_model(5)
        X = integer_rows(260, m.n_features, 1)
    else:
        m = random_bank_model(3) if which == "grid" else zero_tree_costs(random_bank_model(5))
        X = grid_rows(260, m.n_features, 1)
    group = [1, 2, 40, 17, 200]
    budget = rank(m, X, group).cost * np.random.default_rng(1).choice([0.4, 1.0, np.inf], len(X))
    ref = rank(m, X, group, budget)
    dense, lazy, errors = run_rank_on_target(m, X, group, budget, "host-asan-ubsan")
    assert_same(ref, dense, "dense")
    assert_same(ref, lazy, "lazy")
    assert errors == {"zero_docs": EDOCS, "negative_docs": EDOCS, "too_many_docs": EDOCS, "null_x": ENULL,
                      "null_scores": ENULL, "null_order": ENULL, "null_workspace": ENULL, "small_workspace": ESPACE,
                      "nan_budget": EBUDGET, "null_fetch": ENULL, "lazy_small_workspace": ESPACE, "bytes_zero": 1,
                      "bytes_too_many": 1}


def test_models_without_a_query_exit_have_no_rank_entry_point(tmp_path):
    m = random_model(3, kinds=("trees",))
    paths = compile_c(m, tmp_path)
    assert "rank_query" not in open(paths["model.h"]).read()


def test_libfuzzer_finds_nothing_in_rank_query():
    """Queries of 1 to 40 documents of any float bit patterns (libFuzzer, ASan + UBSan): dense and on-demand
    ranking agree bit for bit, the order is a permutation, fetches match features used, budgets hold."""
    from skinflint.runtimes.c_targets import run_fuzzer
    if shutil.which("clang") is None:
        pytest.skip("clang is not installed (.ci/run installs it)")
    try:
        clean, log = run_fuzzer(categorical_query_model(5), seconds=5)
    except RuntimeError as e:
        if "fuzzer build failed" in str(e) and "libclang_rt" in str(e):
            pytest.skip("clang's fuzzer runtime is missing (apt package libclang-rt-dev)")
        raise
    assert clean, log


@pytest.mark.parametrize("target", ["aarch64", "host-clang-O2"])
def test_rank_on_other_targets(target):
    """The ranking program under qemu (aarch64) and built by clang: CRuntime(target=...).rank."""
    ok, why = target_available(target)
    if not ok:
        pytest.skip(why)
    m = categorical_query_model(9)
    rts = [CRuntime(m, target=target), CRuntime(m, api="lazy", target=target)]
    assert_clean(verify_ranking(m, integer_rows(150, m.n_features, 2), runtimes=rts, max_rows=200))
