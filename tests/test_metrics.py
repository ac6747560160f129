"""Ranking metrics (skinflint.metrics): hand-computed values, scikit-learn's ndcg_score where the conventions
agree, the stated conventions (ideal DCG 0, one-document queries, ties, non-contiguous queries), and bad input."""
from math import log2

import numpy as np
import pytest
from sklearn.metrics import ndcg_score

from skinflint import metrics
from skinflint.metrics import err, ndcg, parse_metric, precision_at_k, query_groups, ranking_order

# one query: ranked by score the labels read 2, 0, 1, 3
Y1 = np.array([3, 2, 0, 1])
S1 = np.array([0.1, 0.4, 0.3, 0.2])
DCG1 = 3 / log2(2) + 0 / log2(3) + 1 / log2(4) + 7 / log2(5)
IDCG1 = 7 / log2(2) + 3 / log2(3) + 1 / log2(4) + 0 / log2(5)


def test_ndcg_by_hand():
    assert ndcg(Y1, S1, k=5) == pytest.approx(DCG1 / IDCG1, rel=1e-15)
    # cut at 2: labels 2, 0 against the ideal 3, 2
    assert ndcg(Y1, S1, k=2) == pytest.approx((3 / 1 + 0) / (7 / 1 + 3 / log2(3)), rel=1e-15)
    assert ndcg(Y1, Y1.astype(float), k=5) == 1.0          # scored by label: the ideal ranking


def test_two_queries_average_and_per_query():
    y = np.r_[Y1, [0, 1]]
    s = np.r_[S1, [0.9, 0.1]]
    per = ndcg(y, s, [4, 2], k=5, per_query=True)
    second = (0 + 1 / log2(3)) / (1 / log2(2))
    np.testing.assert_allclose(per, [DCG1 / IDCG1, second], rtol=1e-15)
    assert ndcg(y, s, [4, 2]) == pytest.approx((DCG1 / IDCG1 + second) / 2, rel=1e-15)
    # per-row ids give the same groups as sizes
    assert ndcg(y, s, ["a"] * 4 + ["b"] * 2) == ndcg(y, s, [4, 2])


def test_ndcg_agrees_with_scikit_learn_on_exponential_gains():
    # sklearn's gain is the label itself; ours is 2^y - 1, so give it 2^y - 1.  sklearn counts a query with
    # no relevant document 0 (ideal_zero=0.0 here).  Scores are tie-free (sklearn averages over ties).
    rng = np.random.default_rng(0)
    Q, n = 40, 12
    y = rng.choice(5, size=(Q, n), p=[0.5, 0.25, 0.15, 0.07, 0.03])
    y[0] = 0                                            # one query with nothing relevant
    s = rng.permutation(Q * n).reshape(Q, n).astype(float)
    for k in (1, 5, 10, 12):
        want = ndcg_score(2.0 ** y - 1, s, k=k)
        got = ndcg(y.ravel(), s.ravel(), np.full(Q, n), k=k, ideal_zero=0.0)
        assert got == pytest.approx(want, rel=1e-12, abs=1e-15)  # summation order differs: 1e-12 of round-off


def test_ideal_dcg_zero_counts_ideal_zero():
    y, s = np.zeros(3, int), np.array([0.3, 0.1, 0.2])
    assert ndcg(y, s) == 1.0
    assert ndcg(y, s, ideal_zero=0.0) == 0.0


def test_one_document_query():
    assert ndcg([2], [0.5]) == 1.0
    assert ndcg([0], [0.5]) == 1.0 and ndcg([0], [0.5], ideal_zero=0.0) == 0.0
    assert precision_at_k([1], [0.5], k=5) == pytest.approx(1 / 5)
    assert err([4], [0.5]) == pytest.approx(15 / 16)


def test_ties_keep_position_order():
    # equal scores: the earlier document ranks first
    assert ndcg([0, 3], [1.0, 1.0], k=1) == 0.0
    assert ndcg([3, 0], [1.0, 1.0], k=1) == 1.0
    np.testing.assert_array_equal(ranking_order([1.0, 2.0, 1.0, 2.0], [4]), [1, 3, 0, 2])


def test_precision_at_k_threshold():
    y = np.array([4, 0, 3, 2, 1, 3])
    s = np.array([6, 5, 4, 3, 2, 1.0])
    assert precision_at_k(y, s, k=5, threshold=3) == pytest.approx(2 / 5)
    assert precision_at_k(y, s, k=3, threshold=1) == pytest.approx(2 / 3)
    assert precision_at_k(y, s, k=10, threshold=3) == pytest.approx(3 / 10)   # divided by k, not by 6


def test_err_by_hand():
    y, s = np.array([2, 4, 0]), np.array([3.0, 2.0, 1.0])
    r1, r2 = 3 / 16, 15 / 16
    assert err(y, s) == pytest.approx(r1 + (1 - r1) * r2 / 2, rel=1e-15)
    assert err(y, s, k=1) == pytest.approx(r1, rel=1e-15)
    with pytest.raises(ValueError, match="exceeds max_grade"):
        err([5, 0], [1, 0])


def test_non_contiguous_query_rows_are_regrouped():
    rng = np.random.default_rng(1)
    y = rng.integers(0, 5, 60)
    s = rng.normal(size=60)
    qid = np.repeat(np.arange(6), 10)
    perm = rng.permutation(60)
    per_sorted = ndcg(y, s, qid, per_query=True)
    qg = query_groups(qid[perm], 60)
    assert qg.order is not None
    per_shuffled = ndcg(y[perm], s[perm], qid[perm], per_query=True)
    # queries are numbered by first appearance in the shuffled rows
    np.testing.assert_array_equal(per_shuffled, per_sorted[qg.ids])
    order = ranking_order(s[perm], qid[perm])
    assert ndcg(y[perm], s[perm], qid[perm], order=order) == ndcg(y, s, qid)
    # row_query: each shuffled row's query index, i.e. the position of its id among the first appearances
    np.testing.assert_array_equal(qg.ids[qg.row_query()], qid[perm])


def test_query_groups_forms():
    qg = query_groups([2, 3], 5)
    np.testing.assert_array_equal(qg.offsets, [0, 2, 5])
    assert qg.order is None and qg.n_queries == 2
    np.testing.assert_array_equal(query_groups([7, 7, 1, 1, 1], 5).offsets, [0, 2, 5])
    np.testing.assert_array_equal(query_groups(None, 4).offsets, [0, 4])


@pytest.mark.parametrize("group, n, message", [
    ([2, 2], 5, "sum to 4 but there are 5 rows"),
    ([2, 0, 3], 5, "query 1 has size 0"),
    ([2.5, 2.5], 5, "not integers"),
    ([1.0, np.nan, 1.0], 3, "NaN"),
    (np.zeros((2, 2)), 4, "1-d"),
    ([1], 0, "no rows"),
])
def test_bad_groups(group, n, message):
    with pytest.raises(ValueError, match=message):
        query_groups(group, n)


@pytest.mark.parametrize("y, message", [
    ([1, -1, 0], "non-negative integers"),
    ([1, 0.5, 0], "non-negative integers"),
    ([1, np.nan, 0], "NaN"),
    ([1, 0], "expected 3 labels"),
])
def test_bad_labels(y, message):
    with pytest.raises(ValueError, match=message):
        ndcg(y, [0.1, 0.2, 0.3])


def test_bad_scores_and_k():
    with pytest.raises(ValueError, match="scores are NaN"):
        ndcg([1, 0], [np.nan, 0.1])
    with pytest.raises(ValueError, match="k must be a positive integer"):
        ndcg([1, 0], [0.2, 0.1], k=0)
    with pytest.raises(ValueError, match="group: describes 5 rows but there are 3 scores"):
        ndcg([1, 0, 1], [0.2, 0.1, 0.3], group=query_groups([5], 5))
    # P@k accepts real-valued labels (only the threshold matters) but not NaN
    assert precision_at_k([0.5, 3.5], [1.0, 0.0], k=1, threshold=0.4) == 1.0
    with pytest.raises(ValueError, match="NaN"):
        precision_at_k([np.nan, 1.0], [1.0, 0.0])


def test_parse_metric():
    assert parse_metric("NDCG@5") == (ndcg, 5, True)
    assert parse_metric("p@10") == (precision_at_k, 10, True)
    assert parse_metric("err") == (err, None, True)
    assert parse_metric("accuracy") == (None, None, False)
    with pytest.raises(ValueError, match="unknown metric"):
        parse_metric("ndcg")
    assert "ndcg@k" in metrics.METRICS


def test_ranking_order_refuses_nan_scores():
    from skinflint.metrics import ranking_order
    with pytest.raises(ValueError, match="1 scores are NaN"):
        ranking_order([0.5, float("nan"), 0.1], [3])
