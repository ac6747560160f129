"""Generated C builds warning-free under -Werror at every optimisation level users pick.

Users compile the generated sources with ``-Wall -Wextra -Werror``; some
warnings exist only at one level (clang's -Wunused-but-set-variable fired
at -Os alone, where ``sf_rows`` walks without its ``has_nan`` test), so one
model set is built by gcc and by clang at -O0, -O2 and -Os with the project's
strict flags (``compilers.c.STRICT_WARNINGS``).  The set covers every branch
of the templates: each node kind as the output, float64 and categorical tree
banks (alone and together), a cascade with ``gap_ge`` exits, both query-exit
builders, and one trained model.  The batch walk is also built at block
sizes narrower than its widest walk (``<PREFIX>_BLOCK_ROWS``), where gcc
-O2 once flagged reads past the block (-Warray-bounds).
"""
import os
import shutil
import subprocess

import numpy as np
import pytest

from skinflint import ir
from skinflint.compilers.c import C_FLAGS, STRICT_WARNINGS, compile_c
from skinflint.ir.codes import EXIT_GAP_GE
from skinflint.ir.lowering import lower
from skinflint.ir.random_model import random_model, with_category_splits, with_float64_banks
from skinflint.runtimes.c import PREFIX, CRuntime
from skinflint.runtimes.reference import predict
from tests.conftest import load_example
from tests.parity.test_c_rank import categorical_query_model
from tests.ranking.test_query_exit import random_bank_model

GOLDEN = os.path.join(os.path.dirname(__file__), "golden")
LEVELS = ["-O0", "-O2", "-Os"]


def _gap_cascade():
    """The first random cascade with a gap_ge exit (and its float64 twin)."""
    for s in range(100):
        m = random_model(s, kinds=("cascade",), gap_exits=True)
        if np.any(lower(m).ctl_rule == EXIT_GAP_GE):
            return m
    raise AssertionError("no seed below 100 gives a gap_ge cascade")


def _models():
    trees, gap = load_example("trees"), _gap_cascade()
    out = {n: load_example(n) for n in ("trees", "multiclass", "groups", "anytime", "cascade", "classifier_tree",
                                        "kernel_poly", "kernel_rbf", "linear", "linear_over_trees")}
    out.update({
        "trees_f64": with_float64_banks(trees),
        "trees_cat": with_category_splits(trees),
        "trees_cat_f64": with_category_splits(with_float64_banks(trees)),
        "random_17": ir.load(os.path.join(GOLDEN, "random_17.json")),
        "greedy_miser": ir.load(os.path.join(GOLDEN, "greedy_miser.json")),   # trained
        "gap_cascade": gap,
        "gap_cascade_f64": with_float64_banks(gap),
        "query_bank": random_bank_model(0),
        "query_cat": categorical_query_model(0),
    })
    return out


MODELS = _models()


def _compilers():
    out = []
    for cc in ("gcc", "clang"):
        mark = pytest.mark.skipif(shutil.which(cc) is None, reason=f"{cc} is not installed")
        out.append(pytest.param(cc, marks=mark, id=cc))
    return out


def _build_all(cc, cwd, commands):
    """Run ``cc C_FLAGS STRICT_WARNINGS <args>`` for each args list, two at a time (CI has 2 cores);
    each must succeed without a word on stderr."""
    for k in range(0, len(commands), 2):
        procs = [(args, subprocess.Popen([cc, *C_FLAGS, *STRICT_WARNINGS, *args], cwd=cwd, stderr=subprocess.PIPE,
                                         text=True)) for args in commands[k:k + 2]]
        for args, p in procs:
            err = p.communicate()[1]
            assert p.returncode == 0 and not err, f"{cc} {' '.join(args)}:\n{err}"


@pytest.mark.parametrize("name", sorted(MODELS))
@pytest.mark.parametrize("cc", _compilers())
def test_generated_c_is_warning_free_at_every_level(cc, name, tmp_path):
    compile_c(MODELS[name], tmp_path)
    _build_all(cc, tmp_path, [[opt, "-c", "-o", f"{src[:-2]}{opt}.o", src] for opt in LEVELS
                              for src in ("model.c", "main.c")])


@pytest.mark.parametrize("name", ["trees", "query_bank"])
@pytest.mark.parametrize("cc", _compilers())
def test_batch_walk_is_warning_free_for_any_block_size(cc, name, tmp_path):
    """<PREFIX>_BLOCK_ROWS is 1 by default past 1637 features (compilers.c._block_rows) and users may set
    it: a walk wider than the block used to read past it at gcc -O2 (-Warray-bounds).  ROW_BY_ROW leaves
    the batch walk out."""
    compile_c(MODELS[name], tmp_path)
    # 1 leaves out the 8- and 4-row walks, 5 the 8-row walk; a query model has no ROW_BY_ROW switch
    defines = ["-DMODEL_BLOCK_ROWS=1", "-DMODEL_BLOCK_ROWS=5"] + (["-DMODEL_ROW_BY_ROW"] if name == "trees" else [])
    _build_all(cc, tmp_path, [[opt, d, "-c", "-o", f"model{i}{opt}.o", "model.c"] for i, d in enumerate(defines)
                              for opt in ("-O2", "-Os")])


@pytest.mark.parametrize("block", [1, 5])
def test_batch_walk_with_a_small_block_equals_the_reference(block):
    """A block narrower than a walk leaves that walk out (#if BLOCK >= w): the rows still come out
    bit-identical to the reference, cost and stage included, with budgets that halt some rows."""
    m = MODELS["trees"]
    rng = np.random.default_rng(block)
    X = rng.choice(np.array([-1.0, 0.0, 0.5, 1.0, 2.0, 5.0, np.nan], np.float32), (41, m.n_features))
    b = rng.choice([0.0, 1.0, 2.5, 4.0, np.inf], 41)
    got = CRuntime(m, flags=[f"-D{PREFIX.upper()}_BLOCK_ROWS={block}"]).predict(X, budget=b)
    want = predict(m, X, b)
    for field in ("scores", "cost", "stage", "features_used"):
        np.testing.assert_array_equal(getattr(got, field), getattr(want, field), err_msg=field)
    assert len(set(want.stage.tolist())) > 1, "the budgets must halt some rows and not others"
