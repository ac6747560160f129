"""The kernels that replaced numpy steps of BudgetPrune (issue 31 item 1)
give exactly what the numpy steps gave: the (unit, row) grouping is a
stable argsort of the keys, and the misclassification counts from leaf
class counts are the per-row walk's."""
import numpy as np
import pytest

from skinflint.compress._routing import (
    _group_dense,
    _group_sparse,
    category_arrays,
    error_counts,
    group_triples,
    labels_of,
    path_errors,
    route_bank,
)

pytest.importorskip("sklearn")
from sklearn.ensemble import RandomForestClassifier  # noqa: E402

from skinflint.compress._prune_kernels import preorder  # noqa: E402
from skinflint.importers import from_sklearn  # noqa: E402


def _dense(n_chunks):
    return lambda node, key, n_units, N: _group_dense(node, key, n_units, N, n_chunks)


# the dense counting sort with 1, 2 and 3 ranges of triples (threads) and the sparse one: the same arrays
GROUPINGS = {"dispatch": group_triples, "sparse": _group_sparse, "dense1": _dense(1), "dense2": _dense(2),
             "dense3": _dense(3)}


@pytest.mark.parametrize("how", sorted(GROUPINGS))
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_grouping_is_a_stable_argsort_of_the_keys(seed, how):
    rng = np.random.default_rng(seed)
    n_units, N, S = 7, 50, 2000
    key = rng.integers(0, n_units * N, S).astype(np.int64)
    key[:5] = key[5]                                   # a few certain ties
    node = rng.integers(0, 10 ** 6, S).astype(np.int32)
    seg, seg_unit, node_k, seg_of = GROUPINGS[how](node, key, n_units, N)
    by = np.argsort(key, kind="stable")
    sk = key[by]
    starts = np.flatnonzero(np.r_[True, sk[1:] != sk[:-1]])
    assert np.array_equal(seg, np.r_[starts, S])
    assert np.array_equal(seg_unit, sk[starts] // N)
    assert np.array_equal(node_k, node[by])
    want = np.empty(S, np.int64)
    want[by] = np.repeat(np.arange(len(starts)), np.diff(np.r_[starts, S]))
    assert np.array_equal(seg_of, want)


def test_error_counts_equal_the_walk_per_row():
    rng = np.random.default_rng(4)
    X = rng.normal(size=(500, 5)).astype(np.float32)
    X[rng.random(X.shape) < 0.05] = np.nan
    y = (np.nan_to_num(X[:, 0]) + rng.normal(size=500) > 0).astype(int) + (np.nan_to_num(X[:, 1]) > 1)
    rf = RandomForestClassifier(8, max_depth=5, random_state=0).fit(np.nan_to_num(X[:250]), y[:250])
    bank = from_sklearn(rf).nodes[0]
    f, lft, rgt = (np.asarray(a, np.int64) for a in (bank.feature, bank.left, bank.right))
    roots = bank.roots.astype(np.int64)
    per_tree = np.bincount(bank.tree_ranges(), minlength=bank.n_trees)
    order, ooff = preorder(roots, lft, rgt, f, per_tree)
    Xv = np.ascontiguousarray(X[250:])
    _, leaf_of, *_ = route_bank(f, bank.threshold, lft, rgt, bank.missing_left, category_arrays(bank), roots, Xv,
                                np.arange(5, dtype=np.int64), np.full(5, -1, np.int64), 5)
    value = np.asarray(bank.value, np.float64)
    yv = y[250:].astype(np.int64)
    walk = path_errors(f, bank.threshold, lft, rgt, bank.missing_left, category_arrays(bank), roots, Xv,
                       value, yv,
                       np.zeros(250), 0)
    got = error_counts(order, ooff, lft, rgt, f, leaf_of, yv, labels_of(value), 3)
    assert np.array_equal(got, walk) and got.sum() > 0


def test_parallel_node_charges_are_the_sequential_sums_bit_for_bit():
    import sys

    from skinflint.compress import _prune_kernels as K
    from skinflint.ir import FeatureCosts
    bp = sys.modules["skinflint.compress.budget_prune"]
    rng = np.random.default_rng(6)
    X = rng.normal(size=(600, 6)).astype(np.float32)
    y = (X[:, 0] + X[:, 1] * X[:, 2] + rng.normal(size=600) > 0).astype(int)
    costs = FeatureCosts.from_arrays([1.0, 2.0, 0.5, 4.0, 3.0, 1.5], groups=[0, 0, 1, -1, 1, -1],
                                     group_costs=[5.0, 2.0])
    rf = RandomForestClassifier(12, max_depth=6, random_state=0).fit(X[:300], y[:300])
    p = bp._Problem(from_sklearn(rf, costs), X[300:], y[300:])
    cap = 1e-3 * p.unit_cost / p.N
    share = rng.random(p.node_k.shape[0])
    M = p.bank.feature.shape[0]
    got = K.node_charges(p.useg, 6, p.seg, p.node_k, cap, share, M)
    # one sequential pass in (unit, row) order: np.add.at adds unbuffered, in index order
    want = np.zeros(M)
    np.add.at(want, p.node_k, cap[np.repeat(p.seg_unit, np.diff(p.seg))] * share)
    assert (p.seg_unit >= 6).any()                       # group units are charged too
    assert np.array_equal(got.view(np.int64), want.view(np.int64))


def _full_pass_dual_step(seg, node_k, kept, share, eta):
    """The dual step as first written: Michelot's passes over the whole
    segment every time (plain Python, the same additions in the same order)."""
    used = np.zeros(len(seg) - 1, bool)
    for j in range(len(seg) - 1):
        a, b = seg[j], seg[j + 1]
        total = 0.0
        for p in range(a, b):
            k = bool(kept[node_k[p]])
            used[j] |= k
            share[p] = share[p] + (eta if k else 0.0)
            total += share[p]
        if total <= 1.0:
            continue
        theta, active = (total - 1.0) / (b - a), b - a
        for _ in range(b - a):
            above = [float(share[p]) for p in range(a, b) if share[p] > theta]
            s = 0.0
            for v in above:
                s += v
            theta = (s - 1.0) / len(above)
            if len(above) == active:
                break
            active = len(above)
        for p in range(a, b):
            share[p] = max(share[p] - theta, 0.0)
    return used


def test_dual_step_and_its_fused_charges_are_the_full_pass_step_bit_for_bit():
    import sys

    from skinflint.compress import _prune_kernels as K
    from skinflint.ir import FeatureCosts
    bp = sys.modules["skinflint.compress.budget_prune"]
    rng = np.random.default_rng(7)
    X = rng.normal(size=(400, 6)).astype(np.float32)
    y = (X[:, 0] + X[:, 1] * X[:, 2] + rng.normal(size=400) > 0).astype(int)
    costs = FeatureCosts.from_arrays([1.0, 2.0, 0.5, 4.0, 3.0, 1.5], groups=[0, 0, 1, -1, 1, -1],
                                     group_costs=[5.0, 2.0])
    rf = RandomForestClassifier(30, max_depth=6, random_state=0).fit(X[:200], y[:200])
    p = bp._Problem(from_sklearn(rf, costs), X[200:], y[200:])
    M = p.bank.feature.shape[0]
    cap = 1e-3 * p.unit_cost / p.N
    want = np.repeat(1.0 / np.diff(p.seg), np.diff(p.seg))
    got, fused = want.copy(), want.copy()
    projected = 0
    for k in range(6):                                   # steps that shrink, with ties and long segments
        kept = rng.random(M) < 0.7
        eta = 0.5 / np.sqrt(k + 1.0)
        before = want.copy()
        used_want = _full_pass_dual_step(p.seg, p.node_k, kept, want, eta)
        projected += int(np.sum(want != before + eta * kept[p.node_k]))
        used = K.dual_step(p.seg, p.node_k, kept, got, eta)
        used_f, B = K.dual_step_charges(p.useg, *p.bins, p.seg, p.node_k, kept, fused, eta, cap, M)
        assert np.array_equal(used, used_want) and np.array_equal(used_f, used_want)
        assert np.array_equal(got.view(np.int64), want.view(np.int64))
        assert np.array_equal(fused.view(np.int64), want.view(np.int64))
        B_want = K.node_charges(p.useg, 6, p.seg, p.node_k, cap, want, M)
        assert np.array_equal(B.view(np.int64), B_want.view(np.int64))
    assert projected > 0                                 # the projection ran, not only the step
