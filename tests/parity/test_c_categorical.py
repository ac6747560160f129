"""Category-set splits in generated C (issue 34): the dense batch walk, the
per-row evaluator, the on-demand API and the -Os walk route every value as
the reference runtime does (``runtimes/_vm.py``, ``category_left``), bit
for bit, scores and cost, with budgets that halt rows; the same on the
sanitizer build and a Cortex-M; a set too large for the target is refused
by name."""
import shutil
import subprocess

import numpy as np
import pytest

from skinflint import ir
from skinflint.compilers.c import C_FLAGS, CORTEX_M_CATEGORY_WORDS, STRICT_WARNINGS, compile_c, render
from skinflint.runtimes.c import CRuntime
from skinflint.runtimes.c_targets import run_fuzzer, target_available
from skinflint.runtimes.reference import predict
from skinflint.verify import verify

RULES = ["truncate", "truncate_nonnegative", "integer"]
N_CAT, N_NUM = 3, 2          # features 0..2 hold categories, 3..4 numbers
MAX_WORDS = 4                # sets of 1 to 4 words (codes below 128)


def _same(a, b, what):
    """Bit-for-bit equality of two Predictions (NaN equal to NaN)."""
    for name in ("scores", "proba", "cost", "stage", "features_used"):
        x, y = getattr(a, name), getattr(b, name)
        if x is None or y is None:
            assert x is None and y is None, (what, name)
            continue
        x, y = np.asarray(x), np.asarray(y)
        assert x.dtype == y.dtype and x.shape == y.shape, (what, name)
        same = np.array_equal(x.view(np.uint8), y.view(np.uint8)) if x.dtype.kind == "f" else np.array_equal(x, y)
        if not same:
            bad = np.flatnonzero((x != y).reshape(len(x), -1).any(1) if x.dtype.kind != "f" else
                                 (x.view(np.uint8) != y.view(np.uint8)).reshape(len(x), -1).any(1))
            raise AssertionError(f"{what}: {name} differs on rows {bad[:10].tolist()}")


def _set(rng):
    """A random left set of 1 to MAX_WORDS words whose last word is used
    (so the set has exactly that many words), sometimes empty or full."""
    words = int(rng.integers(1, MAX_WORDS + 1))
    kind = rng.random()
    if kind < 0.1:
        return ir.category_set([]) if words == 1 else ir.category_set([32 * words - 1])
    if kind < 0.2:
        return ir.category_set(np.arange(32 * words))
    codes = np.flatnonzero(rng.random(32 * words) < 0.5)
    return ir.category_set(np.append(codes, 32 * (words - 1) + rng.integers(0, 32)))


def _tree(rng, max_depth, p_split, p_cat, K):
    """A random tree, nodes depth first, with leaves on every level; a split
    is categorical (on features 0..N_CAT-1) with probability p_cat, else
    numeric on any feature; missing and other values go either way."""
    nodes = []

    def grow(level):
        i = len(nodes)
        nodes.append(None)
        if level < max_depth and (level == 0 or rng.random() < p_split):
            cat = rng.random() < p_cat
            f = int(rng.integers(0, N_CAT)) if cat else int(rng.integers(0, N_CAT + N_NUM))
            s = _set(rng) if cat else None
            thr = 0.0 if cat else float(rng.normal() if f >= N_CAT else rng.integers(0, 40) + 0.5)
            left = grow(level + 1)
            right = grow(level + 1)
            nodes[i] = (f, thr, left, right, s, bool(rng.random() < 0.5) if cat else False)
        else:
            nodes[i] = (-1, 0.0, -1, -1, None, False)
        return i
    grow(0)
    n = len(nodes)
    return dict(feature=[nd[0] for nd in nodes], threshold=np.float32([nd[1] for nd in nodes]),
                left=[nd[2] for nd in nodes], right=[nd[3] for nd in nodes],
                value=rng.normal(size=(n, K)), missing_left=rng.random(n) < 0.5,
                category_sets=[nd[4] for nd in nodes], other_left=np.array([nd[5] for nd in nodes]))


def _leaf(K):
    return dict(feature=[-1], threshold=np.float32([0.0]), left=[-1], right=[-1], value=np.full((1, K), 0.25))


def _model(rule, precision="float32", K=1, seed=0, tree_cost=True):
    """A bank of random mixed trees (one of them a leaf) under ``rule``;
    features in two groups, costs that make budgets halt rows."""
    rng = np.random.default_rng(seed)
    trees = [_tree(rng, 5, 0.75, 0.6, K) for _ in range(9)] + [_leaf(K)] + [_tree(rng, 3, 0.9, 0.9, K)
                                                                          for _ in range(4)]
    bank = ir.concat_trees(trees, tree_cost=rng.choice([0.0, 0.5], len(trees)) if tree_cost else None,
                           base_score=np.full(K, 0.125), precision=precision, category_rule=rule,
                           name=f"cat_{rule}")
    assert bank.categories is not None and int(bank.categories.words.max()) > 1
    F = N_CAT + N_NUM
    feats = ir.features_from_costs(rng.choice([0.5, 1.0, 2.0], F), groups=[0, 0, -1, 1, 1])
    task = ir.regression_task() if K == 1 else ir.multiclass_task(list(range(K)))
    return ir.model(feats, [bank], 0, task=task, groups=ir.groups_from_costs([1.5, 0.25]))


def _specials():
    """Values at every edge of the three rules (float32)."""
    f = np.float32
    hi = 32 * MAX_WORDS
    v = [-1.0, np.nextafter(f(-1), f(0)), np.nextafter(f(-1), f(-2)), -0.5, -0.0, 0.0, 0.5, 0.99999994, 1.5,
         31.5, 31.999998, 32.5, 63.75, hi - 0.5, hi, hi + 0.5, hi + 1, hi + 31, hi + 32, 2.0 ** 24, 2.0 ** 31,
         2.0 ** 32, -(2.0 ** 31), -2.0, -33.0, 1e10, -1e10, 3.4e38, -3.4e38, 1e-45, -1e-45, np.nan, np.inf,
         -np.inf]
    return np.array(v, np.float32)


def _rows(model, seed=1):
    """Rows where each categorical feature takes every code below
    32 * MAX_WORDS + 3 and every special value (the other features random
    codes, specials or numbers), then random mixes; with budgets none,
    negative, zero, and fractions of each row's own cost."""
    rng = np.random.default_rng(seed)
    pool = np.concatenate([np.arange(32 * MAX_WORDS + 3, dtype=np.float32), _specials()])
    blocks = []
    for f in range(N_CAT):
        X = np.empty((pool.size, N_CAT + N_NUM), np.float32)
        X[:, :N_CAT] = rng.choice(pool, (pool.size, N_CAT))
        X[:, N_CAT:] = rng.normal(size=(pool.size, N_NUM))
        X[:, f] = pool
        blocks.append(X)
    mix = np.empty((97, N_CAT + N_NUM), np.float32)
    mix[:, :N_CAT] = rng.choice(pool, (97, N_CAT))
    mix[:, N_CAT:] = rng.choice(np.concatenate([rng.normal(size=20), _specials()]).astype(np.float32),
                                (97, N_NUM))
    X = np.concatenate(blocks + [mix])
    full = predict(model, X).cost
    b = full * rng.choice([0.0, 0.3, 0.6, 0.99, 1.0, 2.0], len(X))
    b[rng.random(len(X)) < 0.2] = np.inf
    b[:3] = [-1.0, 0.0, np.inf]
    return X, b


CASES = [(rule, prec, K, seed) for seed, (rule, prec, K) in enumerate(
    [(r, "float32", 1) for r in RULES] + [(r, "float64", 1) for r in RULES]
    + [("truncate_nonnegative", "float32", 3), ("truncate", "float64", 3), ("integer", "float32", 3)])]


@pytest.mark.parametrize("rule,precision,K,seed", CASES, ids=[f"{r}-{p}-K{k}" for r, p, k, _ in CASES])
def test_categorical_splits_match_the_reference(rule, precision, K, seed):
    m = _model(rule, precision, K, seed, tree_cost=seed % 2 == 0)
    X, b = _rows(m, seed)
    ref = predict(m, X, b)
    # the budgets must bite (a test of cost parity that never halts a row would be weaker)
    assert (ref.stage < m.nodes[0].n_trees - 1).any() and (ref.stage == m.nodes[0].n_trees - 1).any()
    src = render(m, "sfm")["sfm.c"]
    assert "static const uint32_t cat_bits[]" in src and "malloc" not in src
    runtimes = {"batch": CRuntime(m), "batch-Os": CRuntime(m, opt="-Os"), "rows": CRuntime(m, api="rows"),
                "lazy": CRuntime(m, api="lazy")}
    for name, rt in runtimes.items():
        _same(rt.predict(X, budget=b), ref, name)
        # NaN-free blocks take the batch walk's other step (no missing test)
        clean = np.where(np.isnan(X), np.float32(7), X)
        _same(rt.predict(clean, budget=b), predict(m, clean, b), name + " (no NaN)")
    # on demand, each feature a row pays for is fetched once, and no other
    got = runtimes["lazy"].predict(X, budget=b)
    np.testing.assert_array_equal(got.fetches, got.features_used.sum(1))
    # and verify's own rows (every code of each set, members +- 0.5) with budgets at and just below each cost
    report = verify(m, runtimes=list(runtimes.values()), max_rows=600)
    assert report.ok, report.table()


def _two_rules():
    """A cascade of two banks of different rules (the C keeps a per-split
    rule table)."""
    m = _model("integer", seed=21)
    stage2 = _model("truncate", seed=22).nodes[0]
    casc = ir.cascade([(0, "le", 0.1), (1, "none", 0.0)])
    return ir.model(m.features, [m.nodes[0], stage2, casc], 2, task=m.task, groups=m.groups)


def test_categorical_splits_inside_a_cascade():
    """Categorical banks as cascade stages, two rules in one model: the
    per-row evaluator (the batch walk serves a model whose output is a tree
    bank)."""
    m = _two_rules()
    assert "static const uint8_t cat_rule[]" in render(m, "sfm")["sfm.c"]
    X, b = _rows(m, 3)
    ref = predict(m, X, b)
    for name, rt in (("dense", CRuntime(m)), ("lazy", CRuntime(m, api="lazy"))):
        _same(rt.predict(X, budget=b), ref, name)


@pytest.mark.parametrize("cc", [cc for cc in ("gcc", "clang") if shutil.which(cc)])
def test_categorical_c_compiles_cleanly_under_strict_warnings(cc, tmp_path):
    for i, m in enumerate([_model(*case) for case in CASES] + [_two_rules()]):
        out = tmp_path / str(i)
        compile_c(m, out)
        r = subprocess.run([cc, *C_FLAGS, *STRICT_WARNINGS, "-O2", "-c", "-o", str(out / "model.o"),
                            str(out / "model.c")], capture_output=True, text=True)
        assert r.returncode == 0, r.stderr


@pytest.mark.parametrize("target", ["host-asan-ubsan", "host-clang-O2", "cortex-m4f", "cortex-m0"])
def test_categorical_splits_on_target(target):
    """ASan + UBSan with float-cast-overflow (the float -> int conversion of
    a category code happens only in range), clang, and bare-metal Cortex-M
    (the sets are static const tables, in flash) under qemu."""
    ok, why = target_available(target)
    if not ok:
        pytest.skip(why)
    m = _model("truncate", "float64", 1, seed=4)
    X, b = _rows(m, 4)
    ref = predict(m, X, b)
    for api in ("dense", "lazy"):
        _same(CRuntime(m, api=api, target=target).predict(X, budget=b), ref, f"{target} {api}")


def test_libfuzzer_finds_nothing_in_categorical_splits():
    """Any float bit pattern (libFuzzer, ASan + UBSan with float-cast-overflow)
    at splits of two rules ("truncate" converts (-1, 0) to code 0)."""
    if shutil.which("clang") is None:
        pytest.skip("clang is not installed (.ci/run installs it)")
    try:
        clean, log = run_fuzzer(_two_rules(), seconds=5)
    except RuntimeError as e:
        if "fuzzer build failed" in str(e) and "libclang_rt" in str(e):
            pytest.skip("clang's fuzzer runtime is missing (apt package libclang-rt-dev)")
        raise
    assert clean, log


def _wide_model(words):
    """One categorical split whose set has ``words`` words."""
    tree = dict(feature=[0, -1, -1], threshold=np.float32([0, 0, 0]), left=[1, -1, -1], right=[2, -1, -1],
                value=np.float32([0, 1, 2]), category_sets=[ir.category_set([32 * words - 1]), None, None])
    bank = ir.concat_trees([_leaf(1), tree], name="wide")
    return ir.model(ir.features_from_costs([1.0]), [bank], 0)


def test_a_set_too_large_for_a_cortex_m_is_refused_by_name(tmp_path):
    """A set over the Cortex-M limit (CORTEX_M_CATEGORY_WORDS words, 16 KiB
    of flash) compiles for the host and is refused for a Cortex-M target
    with its node named, before any toolchain runs."""
    big = _wide_model(CORTEX_M_CATEGORY_WORDS + 1)
    compile_c(big, tmp_path / "host")
    with pytest.raises(ValueError, match=r"trees node 'wide', tree 1 \(bank node 1\): its category set has 4097 words"
                                         r".*over the limit of 4096 words"):
        compile_c(big, tmp_path / "m0", max_category_words=CORTEX_M_CATEGORY_WORDS)
    with pytest.raises(ValueError, match="over the limit of 4096 words"):
        CRuntime(big, target="cortex-m0")
    # the largest set the limit allows compiles
    compile_c(_wide_model(CORTEX_M_CATEGORY_WORDS), tmp_path / "ok", max_category_words=CORTEX_M_CATEGORY_WORDS)
