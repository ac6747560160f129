"""Query groups in skinflint.datasets: svmlight qid: and LightGBM .query files, a CSV query column, query-wise
splits, and the Yahoo-like synthetic generator."""
import hashlib

import numpy as np
import pytest

from skinflint import datasets

SVM = """2 qid:10 1:0.5 3:1.0
0 qid:10 2:0.25
1 qid:7 1:1.5 # a comment
0 qid:7 3:2.0
4 qid:7 1:0.1 2:0.2
"""


def test_svmlight_keeps_qid(tmp_path):
    p = tmp_path / "train.svm"
    p.write_text(SVM)
    ds = datasets.load_svmlight(p)
    np.testing.assert_array_equal(ds.qid, [10, 10, 7, 7, 7])
    np.testing.assert_array_equal(ds.y, [2, 0, 1, 0, 4])
    np.testing.assert_array_equal(ds.groups_of_queries.offsets, [0, 2, 5])
    assert ds.X.shape == (5, 3) and ds.X[0, 2] == 1.0


def test_svmlight_reads_a_lightgbm_query_file(tmp_path):
    p = tmp_path / "train.svm"
    p.write_text("".join(line.replace(" qid:10", "").replace(" qid:7", "") + "\n"
                         for line in SVM.splitlines()))
    (tmp_path / "train.svm.query").write_text("2\n3\n")        # found next to the data, as LightGBM does
    ds = datasets.load_svmlight(p)
    np.testing.assert_array_equal(ds.qid, [0, 0, 1, 1, 1])
    other = tmp_path / "sizes.txt"
    other.write_text("1\n1\n1\n1\n1\n")                        # five one-document queries, given as sizes
    np.testing.assert_array_equal(datasets.load_svmlight(p, query=other).qid, [0, 1, 2, 3, 4])


def test_svmlight_query_file_must_agree(tmp_path):
    p = tmp_path / "train.svm"
    p.write_text(SVM)
    bad = tmp_path / "bad.query"
    bad.write_text("3\n2\n")
    with pytest.raises(ValueError, match="disagree with the data file's qid"):
        datasets.load_svmlight(p, query=bad)
    bad.write_text("2\n2\n")
    with pytest.raises(ValueError, match="sum to 4 but there are 5 rows"):
        datasets.load_svmlight(p, query=bad)
    bad.write_text("2\n0\n3\n")
    with pytest.raises(ValueError, match="query 1 has size 0"):
        datasets.load_svmlight(p, query=bad)
    good = tmp_path / "good.query"
    good.write_text("2\n3\n")
    np.testing.assert_array_equal(datasets.load_svmlight(p, query=good).qid, [0, 0, 1, 1, 1])


def test_svmlight_refuses_partial_qid(tmp_path):
    p = tmp_path / "t.svm"
    p.write_text("1 qid:1 1:1\n0 1:2\n")
    with pytest.raises(ValueError, match="line 2: some rows have a qid"):
        datasets.load_svmlight(p)


def test_csv_query_column(tmp_path):
    p = tmp_path / "d.csv"
    p.write_text("query,a,b,label\n5,0.1,0.2,1\n5,0.3,0.4,0\n9,0.5,0.6,2\n")
    ds = datasets.load_csv(p, query_column="query")
    assert ds.feature_names == ["a", "b"]
    np.testing.assert_array_equal(ds.qid, [5, 5, 9])
    np.testing.assert_array_equal(datasets.load_csv(p, query_column=0).qid, [5, 5, 9])
    with pytest.raises(ValueError, match="not a header name"):
        datasets.load_csv(p, query_column="qid")
    with pytest.raises(ValueError, match="same column"):
        datasets.load_csv(p, query_column=-1)


def test_yahoo_like_shape_skew_costs_and_determinism():
    ds = datasets.make_yahoo_like(80, 30, seed=3)
    qg = ds.groups_of_queries
    assert qg.n_queries == 80 and qg.order is None and ds.X.shape == (qg.n_rows, 30)
    assert ds.X.dtype == np.float32 and qg.sizes.min() >= 1 and qg.sizes.std() > 0   # sizes vary
    frac = np.bincount(ds.y, minlength=5) / len(ds.y)
    # labels are cut at the quantiles of YAHOO_LABEL_FRACTIONS: equal up to one document per cut
    np.testing.assert_allclose(frac, datasets.YAHOO_LABEL_FRACTIONS, atol=2 / len(ds.y))
    assert set(ds.feature_costs) <= set(datasets.YAHOO_COST_HISTOGRAM)
    again = datasets.make_yahoo_like(80, 30, seed=3)
    assert hashlib.sha256(ds.X.tobytes()).digest() == hashlib.sha256(again.X.tobytes()).digest()
    np.testing.assert_array_equal(ds.y, again.y)
    assert not np.array_equal(datasets.make_yahoo_like(80, 30, seed=4).y[:50], ds.y[:50])


def test_cheap_features_are_noisy_views_of_expensive_ones():
    # every non-noise feature views one latent signal with noise variance 2 / cost: for the most expensive
    # view and a cheap view of the same signal, the expensive one must correlate better with the label
    ds = datasets.make_yahoo_like(300, 200, seed=0)
    names = ds.feature_names
    corr = np.array([abs(np.corrcoef(ds.X[:, f], ds.y)[0, 1]) for f in range(len(names))])
    z0 = [f for f, n in enumerate(names) if n.startswith("z0_")]
    cheap = [f for f in z0 if ds.feature_costs[f] <= 5]
    dear = [f for f in z0 if ds.feature_costs[f] >= 100]
    if not (cheap and dear):
        pytest.skip("this seed drew no cheap and expensive view of signal 0")
    assert corr[dear].max() > corr[cheap].max()


def test_split_queries_keeps_queries_whole():
    ds = datasets.make_yahoo_like(50, 5, seed=1)
    tr, va, te = ds.split_queries(0.2, 0.2, seed=0)
    sets = [set(part.qid) for part in (tr, va, te)]
    assert len(sets[0]) == 30 and len(sets[1]) == 10 and len(sets[2]) == 10
    assert not (sets[0] & sets[1] or sets[0] & sets[2] or sets[1] & sets[2])
    assert len(tr.y) + len(va.y) + len(te.y) == len(ds.y)
    a, b = ds.split(0.2, seed=0)                      # split() of ranking data is by query too
    assert not set(a.qid) & set(b.qid)
    with pytest.raises(ValueError, match="leave a part with no query"):
        ds.split_queries(0.6, 0.5)
