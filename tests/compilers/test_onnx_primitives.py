"""The onnxruntime behaviours the exact ONNX graph relies on, each checked
directly (compilers/onnx.py explains where each one is used)."""
from fractions import Fraction

import numpy as np
import onnxruntime as ort
import pytest
from onnx import TensorProto, helper

from skinflint.compilers.onnx_cost import exact_in_any_order
from skinflint.compilers.onnx_graph import Graph, expf, first_set_bits
from skinflint.compilers.onnx_trees import Forest, tree_ensemble, tree_walk
from skinflint.runtimes._expf import expf_array

F32, F64, I64, I32 = TensorProto.FLOAT, TensorProto.DOUBLE, TensorProto.INT64, TensorProto.INT32


def run(build, feeds, elem_in, elem_out, ml=None):
    """Build a one-output graph with ``build(g, *input_names)`` and run it."""
    g = Graph()
    names = list(feeds)
    out = build(g, *names)
    inputs = [helper.make_tensor_value_info(n, elem_in, list(feeds[n].shape)) for n in names]
    g.rename(out, "Y")
    graph = helper.make_graph(g.nodes, "t", inputs, [helper.make_tensor_value_info("Y", elem_out, None)],
                              g.inits)
    opsets = [helper.make_opsetid("", 18)] + ([helper.make_opsetid("ai.onnx.ml", ml)] if ml else [])
    model = helper.make_model(graph, opset_imports=opsets)
    model.ir_version = 9
    sess = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    return sess.run(["Y"], feeds)[0]


def test_cumsum_is_sequential_and_copies_the_first_element():
    rng = np.random.default_rng(0)
    x = (rng.standard_normal((64, 3000)) * rng.choice([1e-4, 1.0, 1e5], (64, 3000))).astype(np.float32)
    x[:, 0] = -0.0
    y = run(lambda g, a: g.cumsum(a, 1), {"x": x}, F32, F32)
    seq = np.empty_like(x)
    acc = x[:, 0].copy()
    seq[:, 0] = acc
    for i in range(1, x.shape[1]):
        acc = (acc + x[:, i]).astype(np.float32)
        seq[:, i] = acc
    assert np.array_equal(y.view(np.uint32), seq.view(np.uint32))   # -0.0 kept
    xd = x.astype(np.float64) * 1.1
    yd = run(lambda g, a: g.cumsum(a, 1), {"x": xd}, F64, F64)
    assert np.array_equal(yd, np.cumsum(xd, axis=1))


def test_topk_ascending_breaks_ties_by_index_and_argmax_takes_the_first():
    k = np.array([[5, 2, 2, 9, 2, 1]], np.int64)
    idx = run(lambda g, a: g.op("TopK", a, g.const([6], np.int64), axis=1, largest=0, sorted=1,
                                n_out=2)[1], {"k": k}, I64, I64)
    assert idx.tolist() == [[5, 1, 2, 4, 0, 3]]
    first = run(lambda g, a: g.op("ArgMax", a, axis=1, keepdims=0),
                {"a": np.array([[0, 3, 3, 1]], np.int32)}, TensorProto.INT32, I64)
    assert first.tolist() == [1]


def test_scatter_min_takes_the_smallest_update_per_cell():
    data = np.full((2, 4), 99, np.int64)
    idx = np.array([[0, 0, 2, 1, 1], [3, 3, 3, 0, 1]], np.int64)
    upd = np.array([[5, 3, 7, 9, 2], [1, 0, 4, 6, 8]], np.int64)
    y = run(lambda g, d, i, u: g.op("ScatterElements", d, i, u, axis=1, reduction="min"),
            {"d": data, "i": idx, "u": upd}, I64, I64)
    assert y.tolist() == [[3, 2, 7, 99], [6, 8, 99, 0]]


@pytest.mark.parametrize("n, n_bits, words", [(1, 31, 1), (2, 5, 3), (5, 31, 2), (8, 17, 1), (300, 31, 2)])
def test_first_set_bits_finds_each_bits_first_set(n, n_bits, words):
    # the exact graph finds each feature's first tree this way (compilers/onnx.py)
    rng = np.random.default_rng(n)
    rows = 40
    has = np.zeros((words, rows, n, n_bits), bool)
    for w in range(words):
        for b in range(n_bits):   # sparse and dense bits, some never set in a row
            has[w, :, :, b] = rng.random((rows, n)) < rng.choice([0.0, 0.01, 0.2, 0.9])
    sets = (has.astype(np.int32) << np.arange(n_bits, dtype=np.int32)).sum(3, dtype=np.int32)
    out = run(lambda g, s: first_set_bits(g, s, n, n_bits, words), {"s": sets.reshape(words * rows, n)},
              I32, I32)
    want = np.where(has.any(2), has.argmax(2), n)                    # [words, rows, bits]
    assert np.array_equal(out, np.concatenate(list(want), 1))


def test_expf_graph_is_the_portable_expf_bit_for_bit():
    # every 2^-11 of the float32 bit patterns (2M values over the whole line),
    # plus the range limits, their neighbours, zeros, infinities and NaN
    bits = np.arange(0, 2**32, 2**11, dtype=np.uint64).astype(np.uint32)
    x = bits.view(np.float32)
    edges = np.array([88.72283, -103.97208, 0.0, -0.0, np.inf, -np.inf, np.nan, 1e-30, -1e-30], np.float32)
    x = np.concatenate([x, edges, np.nextafter(edges, np.float32(np.inf)),
                        np.nextafter(edges, np.float32(-np.inf))])[None, :]
    y = run(lambda g, a: expf(g, a), {"x": x}, F32, F32)
    want = expf_array(x)
    nan = np.isnan(want)
    assert np.array_equal(np.isnan(y), nan)
    assert np.array_equal(y[~nan].view(np.uint32), want[~nan].view(np.uint32))


def test_topk_breaks_ties_by_index_on_long_rows():
    # the cost sort relies on it at any width: groups sort before their feature
    rng = np.random.default_rng(5)
    k = rng.integers(0, 6, (50, 300)).astype(np.int64)
    idx = run(lambda g, a: g.op("TopK", a, g.const([300], np.int64), axis=1, largest=0, sorted=1,
                                n_out=2)[1], {"k": k}, I64, I64)
    assert np.array_equal(idx, np.argsort(k, axis=1, kind="stable"))


def test_sum_ensemble_adds_packed_integer_votes_exactly():
    # 24 one-split trees on 8 targets: each target sums 3 votes, each below
    # 2^24 and their total too; the sums must be the exact integers
    rng = np.random.default_rng(2)
    T, n = 24, 200
    x = rng.normal(size=(n, T)).astype(np.float32)
    w = rng.integers(0, 64, (T, 2)) * (2.0 ** (6 * (np.arange(T) // 8)))[:, None]
    z = np.zeros
    tree = np.repeat(np.arange(T), 3)
    feature = np.tile([0, -1, -1], T) + np.repeat(np.arange(T), 3) * np.tile([1, 0, 0], T)
    left = np.tile([1, -1, -1], T) + np.repeat(3 * np.arange(T), 3) * np.tile([1, 0, 0], T)
    right = left + np.tile([1, 0, 0], T)
    target = np.where(feature < 0, np.repeat(np.arange(T) % 8, 3), -1)
    weight = np.zeros(3 * T, np.float32)
    weight[1::3], weight[2::3] = w[:, 0], w[:, 1]
    forest = Forest(tree, feature, z(3 * T, np.float32), z(3 * T, np.int64), left, right, target, weight,
                    np.arange(3 * T))
    # TreeEnsemble from onnxruntime 1.24 (docs/onnx.md): older ones refuse it or misread it
    new = tuple(int(v) for v in ort.__version__.split(".")[:2]) >= (1, 24)
    for op, ml in ((("TreeEnsemble", 5),) if new else ()) + (("TreeEnsembleRegressor", 3),):
        y = run(lambda g, a, op=op: tree_ensemble(g, a, forest, 8, op), {"x": x}, F32, F32, ml=ml)
        want = np.zeros((n, 8))
        for t in range(T):
            want[:, t % 8] += np.where(x[:, t] <= 0, w[t, 0], w[t, 1])
        assert np.array_equal(y.astype(np.float64), want), op


def test_min_ensemble_gives_the_smallest_vote_and_zero_without_one():
    # the latency graph's first touches (Values.first_slots): 120 one-split
    # trees (more than onnxruntime's per-tree parallel threshold) on 9
    # targets; target k gets a vote from the trees t = k mod 40 on their
    # left leaf and, for k < 3, t = k + 20 mod 40 on their right, negative integers
    # (slot - never); a target no reached leaf votes for reads 0, whatever
    # the rows, on one thread and on two
    rng = np.random.default_rng(3)
    T, K, n = 120, 9, 64
    x = rng.normal(size=(n, T)).astype(np.float32)
    x[rng.random((n, T)) < 0.9] = 1.0           # most rows go right: many targets unvoted
    z = np.zeros
    tree = np.repeat(np.arange(T), 3)
    feature = np.tile([0, -1, -1], T) + np.repeat(np.arange(T), 3) * np.tile([1, 0, 0], T)
    left = np.tile([1, -1, -1], T) + np.repeat(3 * np.arange(T), 3) * np.tile([1, 0, 0], T)
    right = left + np.tile([1, 0, 0], T)
    votes = {(t, side, k): -float(rng.integers(1, 5000)) for t in range(T) for k in range(K) for side in (0, 1)
             if t % 40 == (k if side == 0 else k + 20) and (side == 0 or k < 3)}
    leaf, tg, w = (np.array(c) for c in zip(*[(3 * t + 1 + side, k, v) for (t, side, k), v in votes.items()],
                                              strict=True))
    # every leaf's own vote: 0 for target K, left out below
    forest = Forest(tree, feature, z(3 * T, np.float32), z(3 * T, np.int64), left, right,
                    np.where(feature < 0, K, -1), z(3 * T, np.float32), np.arange(3 * T), extra=(leaf, tg, w))
    want = np.zeros((n, K))
    for r in range(n):
        for k in range(K):
            got = [v for (t, side, kk), v in votes.items() if kk == k and side == int(x[r, t] > 0)]
            want[r, k] = min(got) if got else 0.0
    assert (want == 0).any() and (want < 0).any()
    for threads in (1, 2):
        g = Graph()
        g.rename(g.slice(tree_ensemble(g, "x", forest, K + 1, "TreeEnsembleRegressor", aggregate="MIN"), 0, K, 1),
                 "Y")
        graph = helper.make_graph(g.nodes, "t", [helper.make_tensor_value_info("x", F32, [None, T])],
                                  [helper.make_tensor_value_info("Y", F32, None)], g.inits)
        model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 18),
                                                        helper.make_opsetid("ai.onnx.ml", 3)])
        model.ir_version = 9
        opts = ort.SessionOptions()
        opts.intra_op_num_threads = threads
        sess = ort.InferenceSession(model.SerializeToString(), opts, providers=["CPUExecutionProvider"])
        assert np.array_equal(sess.run(["Y"], {"x": x})[0].astype(np.float64), want), threads
        for r in range(3):          # single rows take their own path in the operator
            assert np.array_equal(sess.run(["Y"], {"x": x[r:r + 1]})[0][0].astype(np.float64), want[r]), threads


def test_tree_walk_reaches_the_reference_leaf():
    # two trees of depth 2 and a lone leaf; thresholds hit exactly, one ulp
    # either side, NaN (missing goes left on some splits only), +-inf
    t = np.float32([0.5, -1.0, 2.0])
    forest = Forest(tree=np.array([0, 0, 0, 0, 0, 1, 1, 1, 2]), feature=np.array([0, 1, -1, -1, -1, 1, -1, -1, -1]),
                    threshold=np.r_[t[0], t[1], 0, 0, 0, t[2], 0, 0, 0].astype(np.float32),
                    missing_left=np.array([1, 0, 0, 0, 0, 1, 0, 0, 0]),
                    left=np.array([1, 3, -1, -1, -1, 6, -1, -1, -1]), right=np.array([2, 4, -1, -1, -1, 7, -1, -1, -1]),
                    target=np.zeros(9, np.int64), weight=np.zeros(9, np.float32), node=np.arange(9))
    v = np.array([-np.inf, np.inf, np.nan, *t, *np.nextafter(t, np.float32(np.inf)),
                  *np.nextafter(t, np.float32(-np.inf))], np.float32)
    x = np.stack(np.meshgrid(v, v), -1).reshape(-1, 2)
    got = run(lambda g, a: tree_walk(g, a, forest), {"x": x}, F32, TensorProto.INT32)

    def left(xv, thr, nan_left):
        return xv <= thr or (np.isnan(xv) and nan_left)
    want = [[(3 if left(a, t[1], False) else 4) if left(a0, t[0], True) else 2,
             6 if left(a, t[2], True) else 7, 8] for a0, a in x]
    assert np.array_equal(got, np.array(want))


def test_exact_in_any_order_holds_only_where_the_order_cannot_matter():
    # the exact graph adds such costs with one MatMul instead of in
    # acquisition order (compilers/onnx.py, _pay)
    assert exact_in_any_order([1.0, 5.0, 20.0, 0.25, 0.0]) and exact_in_any_order([])
    assert not exact_in_any_order([0.1, 0.2, 0.3])
    assert (0.1 + 0.2) + 0.3 != 0.1 + (0.2 + 0.3)              # why: the order shows
    big = [2.0 ** 53, 1.0, 1.0]
    assert not exact_in_any_order(big)
    assert (big[0] + big[1]) + big[2] != big[0] + (big[1] + big[2])
    rng = np.random.default_rng(0)
    for _ in range(200):   # when it says yes, every order gives the same bits
        c = rng.integers(0, 2 ** 20, 12) * 2.0 ** rng.integers(-30, 10)
        assert exact_in_any_order(c)
        sums = {np.add.reduce(rng.permutation(c).astype(np.float64)) for _ in range(20)}
        assert len(sums) == 1 and sums.pop() == sum(map(Fraction, c))
