"""Issue 28 item 4: the cascade exit rule ``gap_ge`` (multiclass Early Exit's
maximum-likelihood rule, format version 5).  A stage exits when its largest
margin minus its second largest, one float32 subtraction, is >= theta (0 when
the two are equal; never when a margin is NaN).  Checked against a hand
computation, then through every backend bit for bit (reference, ONNX, host C
dense and on demand) on rows with tied, infinite, NaN and exactly-theta gaps,
with budgets; plus the format version and the probability bound."""
import math

import numpy as np
import pytest

from skinflint import ir
from skinflint.ir import builders
from skinflint.ir.codes import EXIT_GAP_GE, FORMAT_VERSION_GAP
from skinflint.ir.errors import IRError
from skinflint.ir.random_model import random_model
from skinflint.runtimes.reference import ReferenceRuntime
from skinflint.verify import verify

THETA = 0.5
INF, NAN = np.inf, np.nan


def _gap_model(theta=THETA, K=3):
    """Stage 0: margin_k = 2 a_k + 2 b_k over features a_0..a_{K-1},
    b_0..b_{K-1} (cost 1 each); stage 1: a one-tree bank on the last feature
    (cost 2, tree cost 1) that always answers (base score 7, 0, ...)."""
    feats = builders.features_from_costs([1.0] * (2 * K) + [2.0])
    w = np.concatenate([2 * np.eye(K), 2 * np.eye(K)])
    s0 = builders.linear([builders.feature_input(j) for j in range(2 * K)], w, bias=np.zeros(K))
    bank = builders.trees_from_arrays([2 * K, -1, -1], [0.0, 0, 0], [1, -1, -1], [2, -1, -1], np.zeros((3, K)),
                                      tree_cost=[1.0], base_score=[7.0] + [0.0] * (K - 1))
    casc = builders.cascade([(0, "gap_ge", theta, 0), (1, "none", 0.0, 0)])
    return builders.model(feats, [s0, bank, casc], 2, task=builders.multiclass_task(list("abcd"[:K])))


def _rows(margins):
    """Feature rows whose stage-0 margins are ``margins`` ([N, K]): a finite
    m as a = m / 2 (exact for these values), +-inf as a = +-3e38 (2a
    overflows), NaN as a = 3e38, b = -3e38 (inf + -inf)."""
    M = np.asarray(margins, np.float32)
    a = np.where(np.isfinite(M), M / np.float32(2), np.where(np.isnan(M), 3e38, np.sign(M) * 3e38))
    b = np.where(np.isnan(M), -3e38, 0.0)
    return np.concatenate([a, b, np.zeros((len(M), 1))], axis=1).astype(np.float32)


def _linear_margins(X, K=3):
    """The linear node by its definition (docs/ir.md): bias, then each input
    times its weight row, in input order, every step rounded to float32."""
    W = np.concatenate([2 * np.eye(K), 2 * np.eye(K)]).astype(np.float32)
    acc = np.zeros((len(X), K), np.float32)
    with np.errstate(over="ignore", invalid="ignore"):
        for j in range(2 * K):
            acc = acc + X[:, j:j + 1] * W[j]
    return acc


def _hand_exit(v, theta):
    """The rule written out from its definition in docs/ir.md, independent of
    the runtimes: sort, take the two largest, subtract in float32."""
    v = np.asarray(v, np.float32)
    if np.isnan(v).any():
        return False
    a, b = np.sort(v)[::-1][:2]
    gap = np.float32(0) if a == b else np.float32(a - b)
    return bool(gap >= np.float32(theta))


# stage-0 margins: ties at the top, exact gaps of theta and just under,
# infinities (tied and not), NaN margins, a tie below the top, an
# overflowing subtraction, a subnormal gap
MARGINS = np.array([
    [3.0, 1.0, 0.0],              # gap 2: exits
    [1.0, 1.0, 0.0],              # tied top: gap 0, goes on
    [1.0, 0.5, 0.5],              # gap exactly theta: exits (>=)
    [1.0, np.nextafter(np.float32(0.5), np.float32(1)), 0.0],   # gap one ulp under theta
    [0.5, 1.0, 1.0],              # the tie at the top in the last two components
    [2.0, 0.0, 0.0],              # a tie below the top: gap 2, exits
    [INF, INF, 0.0],              # tied infinities: gap 0, not inf - inf = NaN
    [INF, 1.0, 0.0],              # gap inf: exits
    [-INF, -INF, -INF],           # all -inf: tied, gap 0
    [1.0, -INF, -INF],            # gap inf: exits
    [NAN, 5.0, 0.0],              # a NaN margin never exits
    [5.0, 0.0, NAN],
    [3e38, -3e38, 0.0],           # the float32 subtraction overflows to inf: exits
    [2.8e-45, 0.0, 0.0],          # a subnormal gap
], np.float32)
ROWS = _rows(MARGINS)


def test_rule_matches_the_hand_computation():
    m = _gap_model()
    got = _linear_margins(ROWS)
    assert np.array_equal(got, MARGINS, equal_nan=True)      # the rows build the margins meant
    pred = ReferenceRuntime(m).predict(ROWS)
    with np.errstate(over="ignore"):
        want = np.array([_hand_exit(r, THETA) for r in MARGINS])
    assert want.tolist() == [True, False, True, False, False, True, False, True, False, True, False, False,
                             True, False]      # the table above, written out
    assert np.array_equal(pred.stage == 0, want)
    # an exit pays only the six margin features; going on also pays the last feature and the tree
    assert np.array_equal(pred.cost, np.where(want, 6.0, 9.0))
    assert np.array_equal(pred.scores[want], MARGINS[want])


def test_negative_theta_exits_every_row_without_nan():
    pred = ReferenceRuntime(_gap_model(theta=-1.0)).predict(ROWS)
    assert np.array_equal(pred.stage == 0, ~np.isnan(MARGINS).any(axis=1))


@pytest.mark.parametrize("theta", [THETA, 0.0, 2.0])
def test_hand_model_matches_on_every_backend(theta):
    m = _gap_model(theta)
    rng = np.random.default_rng(0)
    X = np.concatenate([ROWS, rng.choice([-1.0, 0.0, 0.25, 0.5, 1.0], size=(200, 7)).astype(np.float32)])
    report = verify(m, X, runtimes=("onnx", "c", "c-lazy"))
    assert report.ok, report.table()


# the seeds whose random cascade gets at least one gap_ge stage
GAP_SEEDS = [s for s in range(400)
             if (n := random_model(s, kinds=("cascade",), gap_exits=True).nodes[-1]).kind == "cascade"
             and n.has_gap_rule][:16]


def test_enough_random_gap_models():
    assert len(GAP_SEEDS) == 16


@pytest.mark.parametrize("seed", GAP_SEEDS)
def test_random_gap_models_match_on_every_backend(seed):
    m = random_model(seed, kinds=("cascade",), gap_exits=True)
    report = verify(m, runtimes=("onnx", "c", "c-lazy"))
    assert report.ok, f"seed {seed}\n{report.table()}"


def test_version_5_only_for_the_new_rule():
    m = _gap_model()
    d = ir.to_dict(m)
    assert d["version"] == FORMAT_VERSION_GAP and d["nodes"][2]["stages"][0]["exit"] == "gap_ge"
    back = ir.from_json(ir.to_json(m))
    assert back.nodes[2].exit_rule[0] == EXIT_GAP_GE and ir.to_json(back) == ir.to_json(m)
    # an older version naming the rule is refused, naming the field
    with pytest.raises(IRError, match=r"nodes\[2\]\.stages: the gap_ge exit rule needs format version 5"):
        ir.from_dict(dict(d, version=4))
    # the same cascade with abs_ge keeps version 1
    d1 = ir.to_dict(builders.model(m.features, list(m.nodes[:2]) + [builders.cascade(
        [(0, "abs_ge", THETA, 0), (1, "none", 0.0, 0)])], 2, task=m.task))
    assert d1["version"] == 1


def test_invalid_gap_stages_are_one_clear_error():
    m = _gap_model()
    d = ir.to_dict(m)
    d["nodes"][2]["stages"][0]["output"] = 1
    with pytest.raises(IRError, match=r"stages\[0\]\.output: the gap_ge rule reads the whole vector"):
        ir.from_dict(d)
    feats = builders.features_from_costs([1.0])
    one = builders.linear([builders.feature_input(0)], np.ones(1))
    with pytest.raises(IRError, match="gap_ge exit rule needs scorers at least 2 wide, got 1"):
        builders.model(feats, [one, one, builders.cascade([(0, "gap_ge", 1.0, 0), (1, "none", 0.0, 0)])], 2,
                       task=builders.binary_task())


@pytest.mark.parametrize("K, s", [(K, s) for K in (2, 3, 10, 26) for s in (0.5, 0.6, 0.9, 0.99) if s > 1 / K])
def test_probability_bound(K, s):
    """docs/ir.md: a gap >= theta = log((K - 1) s / (1 - s)) certifies a
    softmax maximum probability >= 1 / (1 + (K - 1) e^-theta) = s; the
    worst case is every other class at the second margin, where it is equal
    (K = 2: always)."""
    theta = math.log((K - 1) * s / (1 - s))
    assert 1 / (1 + (K - 1) * math.exp(-theta)) == pytest.approx(s, rel=1e-12)   # float64 rounding only
    rng = np.random.default_rng(K)
    for _ in range(200):
        z = rng.normal(size=K) * 3
        gap = np.sort(z)[-1] - np.sort(z)[-2]
        p = np.exp(z - z.max()) / np.exp(z - z.max()).sum()
        if gap >= theta:
            assert p.max() >= s - 1e-12                 # float64 softmax of float64 margins
    worst = np.r_[theta, np.zeros(K - 1)]
    p = np.exp(worst) / np.exp(worst).sum()
    assert p.max() == pytest.approx(s, rel=1e-12)


@pytest.mark.parametrize("seed", GAP_SEEDS[:4])
def test_random_gap_models_with_float64_banks_match_on_every_backend(seed):
    """A gap_ge stage over a float64 bank reads the bank rounded once to
    float32 (docs/numerics.md), as every other exit does."""
    from skinflint.ir.random_model import with_float64_banks
    m = with_float64_banks(random_model(seed, kinds=("cascade",), gap_exits=True))
    report = verify(m, runtimes=("onnx", "c", "c-lazy"))
    assert report.ok, f"seed {seed}\n{report.table()}"
