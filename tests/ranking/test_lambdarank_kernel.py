"""The LambdaMART gradient kernel (trainers/boosting/lambdarank.py) against a plain-Python loop written from the
module docstring's formulas, the way the kernel computed them before it was restructured (labels' constants once
per fit, insertion sort, rank-ordered copies): bit for bit, so models stay byte-identical."""
import math

import numpy as np
import pytest

from skinflint.trainers.boosting.lambdarank import LambdaRankLoss, LambdaRankWork, RankTarget, lambdarank_gradients


def plain_lambdas(y, raw, offsets, sigma, truncation, norm):
    """Straightforward per-query loop: stable descending sort, ideal DCG, every pair with one document in the
    top ``truncation``, accumulated in pair order."""
    g, h = np.zeros(len(y)), np.zeros(len(y))
    for a, b in zip(offsets[:-1], offsets[1:], strict=True):
        n = b - a
        if n < 2:
            continue
        order = sorted(range(n), key=lambda i: -raw[a + i])        # Python's sort is stable
        ideal = sorted(y[a:b], reverse=True)
        max_dcg = 0.0
        for z in range(min(truncation, n)):
            max_dcg += (2.0 ** ideal[z] - 1.0) / math.log2(z + 2.0)
        if max_dcg <= 0.0:
            continue
        inv = 1.0 / max_dcg
        best, worst = raw[a + order[0]], raw[a + order[-1]]
        total = 0.0
        for i in range(min(n - 1, truncation)):
            for j in range(i + 1, n):
                yi, yj = y[a + order[i]], y[a + order[j]]
                if yi == yj:
                    continue
                hi, lo = (i, j) if yi > yj else (j, i)
                high, low = a + order[hi], a + order[lo]
                diff = raw[high] - raw[low]
                delta = ((2.0 ** y[high] - 1.0) - (2.0 ** y[low] - 1.0)) * inv * \
                    abs(1.0 / math.log2(hi + 2.0) - 1.0 / math.log2(lo + 2.0))
                if norm and best != worst:
                    delta /= 0.01 + abs(diff)
                rho = 1.0 / (1.0 + math.exp(sigma * diff))
                lam = -sigma * delta * rho
                hess = sigma * sigma * delta * rho * (1.0 - rho)
                g[low] -= lam
                h[low] += hess
                g[high] += lam
                h[high] += hess
                total -= 2.0 * lam
        if norm and total > 0.0:
            f = math.log2(1.0 + total) / total
            g[a:b] *= f
            h[a:b] *= f
    return g, h


def queries(seed):
    """Sizes 1 to 150 (insertion sort up to 64, mergesort past it), Yahoo-like skewed labels, scores with ties
    (rounded), a query with no relevant document, one with every score equal, one with every label equal."""
    rng = np.random.default_rng(seed)
    sizes = list(rng.integers(1, 40, 30)) + [1, 2, 64, 65, 150, 12, 9, 7]
    offsets = np.concatenate([[0], np.cumsum(sizes)]).astype(np.int64)
    N = offsets[-1]
    y = rng.choice(5, N, p=[0.45, 0.3, 0.15, 0.07, 0.03]).astype(np.float64)
    raw = np.round(rng.normal(size=N), 1)
    a, b = offsets[-4], offsets[-3]
    y[a:b] = 0.0
    a, b = offsets[-3], offsets[-2]
    raw[a:b] = 0.25
    a, b = offsets[-2], offsets[-1]
    y[a:b] = 2.0
    return y, raw, offsets


@pytest.mark.parametrize("seed,sigma,truncation,norm", [(0, 1.0, 30, True), (1, 1.0, 3, True),
                                                        (2, 2.0, 30, False), (3, 0.5, 200, True)])
def test_kernel_is_the_plain_loop_bit_for_bit(seed, sigma, truncation, norm):
    y, raw, offsets = queries(seed)
    g, h = np.full(len(y), np.nan), np.full(len(y), np.nan)      # every row is written
    lambdarank_gradients(y, raw, offsets, sigma, truncation, norm, g, h)
    eg, eh = plain_lambdas(y, raw, offsets, sigma, truncation, norm)
    assert np.array_equal(g.view(np.uint64), eg.view(np.uint64))
    assert np.array_equal(h.view(np.uint64), eh.view(np.uint64))
    assert np.abs(g).max() > 0                                    # the test data have pairs


def test_work_is_reused_across_rounds_and_renewed_for_new_data():
    """The loss keeps one LambdaRankWork per training set: later rounds (new scores) reuse it and still equal the
    plain loop; another training set gets its own constants."""
    loss = LambdaRankLoss()
    works = []
    for seed in (4, 5):
        y, raw, offsets = queries(seed)
        t = RankTarget(y, offsets)
        for shift in (0.0, 0.3, 1.1):                    # three rounds' scores
            r = raw + (shift * np.arange(len(y))) % 1.7
            g, h = np.empty(len(y)), np.empty(len(y))
            loss.gradients(t, r[:, None], 0, g, h)
            eg, eh = plain_lambdas(y, r, offsets, 1.0, 30, True)
            assert np.array_equal(g, eg) and np.array_equal(h, eh)
            works.append(loss._work[2])
    assert works[0] is works[1] is works[2] and works[3] is not works[0] and works[3] is works[5]


def test_work_holds_no_query_size_limit():
    """One query larger than any table a fixed size would give (the discount table follows the largest query)."""
    y = np.zeros(3000)
    y[::97] = 3.0
    raw = np.linspace(1.0, 0.0, 3000)
    g, h = np.empty(3000), np.empty(3000)
    LambdaRankWork(y, np.array([0, 3000]), 30).gradients(raw, 1.0, 30, True, g, h)
    eg, eh = plain_lambdas(y, raw, np.array([0, 3000]), 1.0, 30, True)
    assert np.array_equal(g, eg) and np.array_equal(h, eh)


def test_lambdamart_greedy_miser_model_is_byte_identical_to_the_pinned_one():
    """A LambdaMART Greedy Miser fit with validation; the hash was recorded with the kernel as it was before the
    restructure (per-query sort and ideal DCG every round, direct scatter)."""
    import hashlib

    from skinflint import datasets, ir
    from skinflint.trainers.boosting.ranker import GreedyMiserRanker
    tr, va, _ = datasets.make_yahoo_like(60, 20, seed=0).split_queries(0.2, 0.2, seed=0)
    m = GreedyMiserRanker(objective="lambdarank", cost_tradeoff=2e-5, feature_costs=tr.feature_costs, verbose=0,
                          random_state=0, n_estimators=30, max_depth=4, min_samples_leaf=5)
    m.fit(tr.X, tr.y, tr.qid, eval_set=(va.X, va.y, va.qid))
    assert (hashlib.sha256(ir.to_json(m.model_).encode()).hexdigest()[:16], m.n_estimators_) == \
        ("d96aa29ad1294f61", 21)
