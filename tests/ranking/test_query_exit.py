"""The query-level exit (issue 27): the IR node (format 3, validation, old files), the per-row backends'
refusal, and the reference runtime's rank() against a plain-Python statement of the rule (tests/ranking/oracle.py)
on random queries of 1 to 1,000 documents with forced ties and budgets around each document's cost."""
import json

import numpy as np
import pytest

from skinflint import ir
from skinflint.ir.lowering import lower
from skinflint.runtimes.reference import ReferenceRuntime, predict, rank
from skinflint.verify import random_queries, verify, verify_ranking
from tests.ranking.oracle import OracleRanker

GRID = np.array([-1.0, -0.5, 0.0, 0.5, 1.0], np.float32)


def random_bank_model(seed, *, n_trees=12, n_features=6, checkpoints=None):
    """A float32 bank whose leaves and thresholds come from a 5-value grid (scores tie often, rows sit on
    thresholds), features with costs and one group, tree costs, and a query_exit with mixed rules."""
    rng = np.random.default_rng(seed)
    f, t, lft, rgt, v, ml, roots = [], [], [], [], [], [], []

    def grow(depth):
        i = len(f)
        f.append(-1)
        t.append(0.0)
        lft.append(-1)
        rgt.append(-1)
        v.append([float(rng.choice(GRID))])
        ml.append(bool(rng.integers(2)))
        if depth < 3 and rng.random() < 0.7:
            f[i] = int(rng.integers(n_features))
            t[i] = float(rng.choice(GRID))
            lft[i] = grow(depth + 1)
            rgt[i] = grow(depth + 1)
        return i

    for _ in range(n_trees):
        roots.append(grow(0))
    bank = ir.trees_from_arrays(f, t, lft, rgt, v, roots=roots, missing_left=ml,
                                tree_cost=rng.choice([0.0, 0.5, 1.0], n_trees), base_score=0.25)
    groups = [0, 0, None] + [None] * (n_features - 3)
    feats = ir.features_from_costs(rng.choice([0.0, 1.0, 5.0, 20.0], n_features), groups=groups)
    after = checkpoints or sorted(rng.choice(np.arange(1, n_trees), 4, replace=False).tolist())
    rules = [("proximity" if rng.random() < 0.6 else "cutoff") for _ in after]
    keep = rng.integers(1, 6, len(after))
    gap = [float(rng.choice([0.0, 0.5, 1.0, 2.5])) for _ in after]
    q = ir.query_exit(0, after, rule=rules, keep=keep, gap=gap)
    return ir.model(feats, [bank, q], 1, groups=ir.groups_from_costs([3.0]))


def grid_rows(n, n_features, seed):
    """Rows on the threshold grid (and NaN): equal documents and exact threshold hits are common."""
    rng = np.random.default_rng(seed)
    X = rng.choice(np.r_[GRID, np.nan].astype(np.float32), size=(n, n_features))
    return np.ascontiguousarray(X, np.float32)


def assert_same_ranking(a, b):
    np.testing.assert_array_equal(a.scores.view(np.uint32), b.scores.view(np.uint32))
    np.testing.assert_array_equal(a.cost.view(np.uint64), b.cost.view(np.uint64))
    for name in ("stage", "features_used", "order", "n_trees", "dropped"):
        np.testing.assert_array_equal(getattr(a, name), getattr(b, name), err_msg=name)


# ---------------------------------------------------------------- the IR

def test_query_exit_round_trips_as_format_3_and_older_files_still_load():
    m = random_bank_model(0)
    d = ir.to_dict(m)
    assert d["version"] == 3
    assert d["nodes"][1]["kind"] == "query_exit"
    back = ir.from_json(ir.to_json(m))
    assert ir.to_json(back) == ir.to_json(m) and back.scores_queries
    # the same bank without the exit keeps version 1 and loads as before
    plain = ir.model(m.features, [m.nodes[0]], 0, groups=m.groups)
    assert ir.to_dict(plain)["version"] == 1
    old = ir.to_dict(plain)
    assert not ir.from_dict(json.loads(json.dumps(old))).scores_queries
    # a version-2 file (float64 bank) still loads
    wide = ir.trees_from_arrays([-1], [0.0], [-1], [-1], [[1.5]], precision="float64")
    d2 = ir.to_dict(ir.model(ir.features_from_costs([1.0]), [wide], 0))
    assert d2["version"] == 2 and ir.from_dict(d2).output_is_float64


@pytest.mark.parametrize("edit,field,match", [
    (lambda d: d.update(version=2), "nodes[1].kind", "needs format version 3"),
    (lambda d: d["nodes"][1]["checkpoints"][1].update(after=1), "nodes[1].checkpoints[1].after",
     "must be greater than"),
    (lambda d: d["nodes"][1]["checkpoints"][0].update(keep=0), "nodes[1].checkpoints[0].keep", "out of range"),
    (lambda d: d["nodes"][1]["checkpoints"][0].update(rule="top"), "nodes[1].checkpoints[0].rule",
     "unknown rule"),
    (lambda d: d["nodes"][1]["checkpoints"][0].update(rule="proximity", gap=-1.0),
     "nodes[1].checkpoints[0].gap", "finite number >= 0"),
    (lambda d: d["nodes"][1]["checkpoints"][0].update(rule="cutoff", gap=1.0), "nodes[1].checkpoints[0].gap",
     "has no gap"),
    (lambda d: d["nodes"][1]["checkpoints"][-1].update(after=12), "nodes[1].checkpoints[3].after",
     "below the bank's 12 trees"),
    (lambda d: d["nodes"][1].update(scorer=5), "nodes[1].scorer[0]", "out of range"),
    (lambda d: d["nodes"][1].update(checkpoints=[]), "nodes[1].checkpoints", "non-empty"),
])
def test_bad_query_exits_are_refused_naming_the_field(edit, field, match):
    d = ir.to_dict(random_bank_model(0, checkpoints=[2, 5, 7, 9]))
    edit(d)
    with pytest.raises(ir.IRError, match=match) as e:
        ir.from_dict(d)
    assert str(e.value).startswith(field)


def test_a_query_exit_reads_one_float32_one_output_bank():
    m = random_bank_model(0)
    lin = ir.linear([ir.tree_input(0, 0)], [1.0])
    with pytest.raises(ir.IRError, match="nodes\\[2\\].scorer: node 1 is a linear node"):
        ir.model(m.features, [m.nodes[0], lin, ir.query_exit(1, [1], keep=1, rule="cutoff")], 2, groups=m.groups)
    wide = ir.trees_from_arrays([-1, -1], [0.0, 0.0], [-1, -1], [-1, -1], [[1.0], [2.0]], roots=[0, 1],
                                precision="float64")
    with pytest.raises(ir.IRError, match="float64 bank"):
        ir.model(ir.features_from_costs([1.0]), [wide, ir.query_exit(0, [1], keep=1, rule="cutoff")], 1)


def test_builders_schedule():
    assert ir.every(10, 35) == [10, 20, 30]
    assert ir.proximity_gaps(2.0, [10, 20], 21) == [2.0 * 11 / 20, 2.0 * 1 / 20]
    with pytest.raises(ir.IRError, match="needs a gap"):
        ir.query_exit(0, [1], rule="proximity")


# ---------------------------------------------------------------- backends that score rows refuse

def test_per_row_backends_refuse_a_query_model():
    """The per-row lowering refuses a query-level model (the generated C and
    the ONNX query graph rank it: tests/parity/test_c_rank.py,
    tests/parity/test_onnx_rank.py)."""
    m = random_bank_model(1)
    with pytest.raises(ir.IRError, match="query_exit node ranks whole queries"):
        lower(m)
    with pytest.raises(ValueError, match="call rank\\(X, group\\)"):
        predict(m, grid_rows(3, 6, 0))
    with pytest.raises(ValueError, match="no query-level exit"):
        ReferenceRuntime(ir.model(m.features, [m.nodes[0]], 0, groups=m.groups)).rank(grid_rows(3, 6, 0), [3])


def test_verify_reports_a_backend_that_cannot_rank():
    class RowsOnly:          # a runtime that scores rows independently and has no rank
        name = "rows-only"

        def predict(self, X, budget=None):
            raise AssertionError("verify must not score a query model's rows independently")

    m = random_bank_model(2)
    rep = verify(m, grid_rows(40, 6, 1), runtimes=[RowsOnly()], max_rows=200)
    assert not rep.ok and rep.queries > 0
    assert "cannot rank whole queries" in rep.backends[0].error


# ---------------------------------------------------------------- the rule, by hand

def _stumps():
    """Three one-tree-per-feature stumps: x_j <= 0 gives leaf -j - 1, else +1; costs 1, 2, 4."""
    f, t, lft, rgt, v, roots = [], [], [], [], [], []
    for j in range(3):
        b = len(f)
        roots.append(b)
        f += [j, -1, -1]
        t += [0.0, 0.0, 0.0]
        lft += [b + 1, -1, -1]
        rgt += [b + 2, -1, -1]
        v += [[0.0], [-(j + 1.0)], [1.0]]
    return ir.features_from_costs([1.0, 2.0, 4.0]), ir.trees_from_arrays(f, t, lft, rgt, v, roots=roots)


def test_proximity_rule_by_hand():
    feats, bank = _stumps()
    # checkpoint after tree 1: keep 1, gap 1.5: the 1st best is +1; -1 is 2 below (drops), 1 ties (stays)
    m = ir.model(feats, [bank, ir.query_exit(0, [1], keep=1, gap=1.5)], 1)
    X = np.array([[1, 1, 1], [-1, 1, 1], [1, -1, -1]], np.float32)
    r = rank(m, X, [3])
    assert r.scores[:, 0].tolist() == [3.0, -1.0, -4.0]
    assert r.dropped.tolist() == [False, True, False]
    assert r.n_trees.tolist() == [3, 1, 3] and r.stage.tolist() == [1, 0, 1]
    assert r.cost.tolist() == [7.0, 1.0, 7.0]
    assert r.features_used.tolist() == [[True] * 3, [True, False, False], [True] * 3]
    # survivors first by score (0, then 2 at -4 above the dropped 1 at -1)
    assert r.order.tolist() == [0, 2, 1]


def test_ties_go_by_position():
    feats, bank = _stumps()
    X = np.ones((5, 3), np.float32)              # five equal documents
    prox = ir.model(feats, [bank, ir.query_exit(0, [1, 2], keep=2, gap=0.0)], 1)
    r = rank(prox, X, [5])                       # gap 0: a tie with the 2nd best is "at least 0 below"
    assert r.dropped.tolist() == [False, False, True, True, True]
    assert r.order.tolist() == [0, 1, 2, 3, 4]
    cut = ir.model(feats, [bank, ir.query_exit(0, [1, 2], keep=[4, 3], rule="cutoff")], 1)
    r = rank(cut, X, [5])
    assert r.dropped.tolist() == [False, False, False, True, True]
    assert r.n_trees.tolist() == [3, 3, 3, 2, 1] and r.stage.tolist() == [2, 2, 2, 1, 0]
    assert r.order.tolist() == [0, 1, 2, 3, 4]


def test_a_budget_stops_a_document_inside_its_query():
    feats, bank = _stumps()
    m = ir.model(feats, [bank, ir.query_exit(0, [1], keep=1, rule="cutoff")], 1)
    X = np.ones((2, 3), np.float32)
    # document 0 cannot pay its first feature: it completes no checkpoint and does not compete, so
    # document 1, alone at the checkpoint, is kept and runs every tree
    r = rank(m, X, [2], budget=[0.5, np.inf])
    assert r.n_trees.tolist() == [0, 3] and r.stage.tolist() == [-1, 1]
    assert r.dropped.tolist() == [False, False] and r.cost.tolist() == [0.0, 7.0]
    assert r.scores[:, 0].tolist() == [0.0, 3.0] and r.order.tolist() == [1, 0]


@pytest.mark.parametrize("group,match", [
    ([2, 0, 1], "query 1 has 0 documents"),
    ([2, 2], "sum to 4 but X has 3 rows"),
    ([1.5, 1.5], "whole numbers"),
    (None, "query sizes are needed"),
])
def test_bad_groups_are_one_clear_error(group, match):
    m = random_bank_model(3)
    with pytest.raises(ValueError, match=match):
        rank(m, grid_rows(3, 6, 0), group)


def test_nan_budget_is_one_clear_error():
    m = random_bank_model(3)
    with pytest.raises(ValueError, match="NaN is not a budget"):
        rank(m, grid_rows(3, 6, 0), [3], budget=[1.0, np.nan, 1.0])


# ---------------------------------------------------------------- against the oracle

@pytest.mark.parametrize("seed", range(6))
def test_reference_rank_equals_the_oracle_on_random_queries(seed):
    m = random_bank_model(seed)
    rows, sizes = random_queries(grid_rows(1300, 6, seed), seed)
    assert sizes[:4].tolist() == [1, 2, 3, 1000]
    oracle = OracleRanker(m)
    ref = rank(m, rows, sizes)
    assert_same_ranking(ref, oracle.rank(rows, sizes))
    assert ref.dropped.any() and not ref.dropped.all()     # the rule did something
    # budgets at and around each document's own cost (and inside it)
    rng = np.random.default_rng(seed)
    c = ref.cost
    for b in (c, np.nextafter(c, -np.inf), c / 2, np.zeros_like(c), rng.random(len(c)) * c):
        assert_same_ranking(rank(m, rows, sizes, b), oracle.rank(rows, sizes, b))


def test_verify_ranking_passes_the_oracle_and_catches_a_wrong_tie_rule():
    m = random_bank_model(7)
    X = grid_rows(300, 6, 7)
    rep = verify_ranking(m, X, runtimes=[OracleRanker(m)], max_rows=300)
    assert rep.ok, rep.table()
    assert rep.queries > 0 and "ranking" in rep.table()

    class ReversedTies(OracleRanker):
        name = "reversed-ties"

        def rank(self, X, group, budget=None):
            r = super().rank(X, group, budget)
            a = 0
            for n in group:                       # reverse each query's order: ties (and all else) flip
                r.order[a:a + n] = r.order[a:a + n][::-1].copy()
                a += n
            return r

    bad = verify_ranking(m, X, runtimes=[ReversedTies(m)], max_rows=300)
    assert not bad.ok and bad.backends[0].order > 0


def test_mutated_query_exits_raise_only_irerror_and_valid_ones_rank():
    from tests.ir.test_load_fuzz import mutate
    doc = ir.to_dict(random_bank_model(0))
    rng = np.random.default_rng(0)
    X, sizes = grid_rows(12, 6, 0), [1, 4, 7]
    outcomes = {"error": 0, "valid": 0}
    for _ in range(200):
        bad = json.loads(json.dumps(doc))
        # the mutation lands in the query_exit node (it may delete the node itself: then {} is left)
        bad["nodes"][1] = mutate({"node": bad["nodes"][1]}, rng).get("node", {})
        try:
            m = ir.from_dict(bad)
        except ir.IRError:
            outcomes["error"] += 1
            continue
        outcomes["valid"] += 1
        if m.scores_queries:                      # what loads, ranks: no crash, no write out of bounds
            r = rank(m, X, sizes)
            assert sorted(r.order.tolist()) == list(range(12))
    assert outcomes["error"] > 50 and outcomes["valid"] > 10


def test_without_drops_rank_is_the_per_row_runtime_bit_for_bit_budgets_included():
    """Two independent evaluators: with gaps nobody can meet, every document runs as the per-row runtime runs
    the bank's rows, halting on its budget at the same unit."""
    m = random_bank_model(11)
    q = m.nodes[1]
    never = ir.model(m.features, [m.nodes[0], ir.query_exit(0, q.after, keep=1, gap=1e300)], 1, groups=m.groups)
    plain = ir.model(m.features, [m.nodes[0]], 0, groups=m.groups)
    rows, sizes = random_queries(grid_rows(600, 6, 11), 11)
    full = predict(plain, rows)
    for b in (None, full.cost, full.cost / 2, np.nextafter(full.cost, -np.inf)):
        p, r = predict(plain, rows, b), rank(never, rows, sizes, b)
        assert not r.dropped.any()
        np.testing.assert_array_equal(r.scores.view(np.uint32), p.scores.view(np.uint32))
        np.testing.assert_array_equal(r.cost.view(np.uint64), p.cost.view(np.uint64))
        np.testing.assert_array_equal(r.features_used, p.features_used)
        np.testing.assert_array_equal(r.n_trees, p.stage + 1)


def test_verify_ranking_takes_given_queries_and_refuses_a_fixed_budget():
    m = random_bank_model(12)
    X = grid_rows(30, 6, 12)
    rep = verify_ranking(m, X, [10, 20], runtimes=[OracleRanker(m)], budgets=None)
    assert rep.ok and rep.rows == 30 and rep.queries == 2
    with pytest.raises(ValueError, match="budgets around each document's cost"):
        verify(m, X, budget=5.0, runtimes=[])


def test_checkpoint_lists_of_the_wrong_length_are_named():
    from skinflint.ir.errors import IRError
    with pytest.raises(IRError, match=r"keep: 2 values for 3 checkpoints"):
        ir.query_exit(0, [2, 4, 6], keep=[1, 2], gap=0.5)
    with pytest.raises(IRError, match=r"gap: 3 values for 2 checkpoints"):
        ir.query_exit(0, [2, 4], gap=[0.1, 0.2, 0.3])
