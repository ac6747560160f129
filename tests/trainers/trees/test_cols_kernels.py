"""The column kernels on a transposed basis (linalg.cols_matvec, cols_rmatvec,
cols_bias_gram; CSTC's products) must give the bits of the plain kernels on
the gathered columns, or CSTC models would change: exact comparisons, no
tolerance."""
import numpy as np
import pytest

from skinflint.trainers import linalg
from skinflint.trainers.relaxation import design, design_t


@pytest.mark.parametrize("n,P,m", [(1, 3, 1), (203, 12, 7), (2500, 40, 17), (1031, 9, 9), (300, 30, 0)])
def test_column_kernels_are_the_gathered_products_bits(n, P, m):
    rng = np.random.default_rng(n + P + m)
    A = rng.normal(size=(n, P)) * rng.uniform(0.1, 1e3, P)        # mixed scales: rounding that order would show
    A[rng.random((n, P)) < 0.3] = 0.0
    At = np.ascontiguousarray(A.T)
    cols = np.sort(rng.choice(P, m, replace=False)).astype(np.int64)
    x, v, w = rng.normal(size=m), rng.normal(size=n), rng.uniform(0, 2, n)
    Ac = np.ascontiguousarray(A[:, cols])
    assert np.array_equal(linalg.cols_matvec(At, cols, x), linalg.matvec(Ac, x))
    assert np.array_equal(linalg.cols_rmatvec(At, cols, v), linalg.rmatvec(Ac, v))
    y = rng.normal(size=n)
    _, gram, rhs = design(A, cols, w, y)
    gram_t, rhs_t = design_t(At, cols, w, y)
    assert np.array_equal(gram_t, gram)
    assert np.array_equal(rhs_t, rhs)


def test_zero_weights_left_out_of_cols_matvec_change_no_bit():
    # SoftTree.scores multiplies only the non-zero weights: a row's sum starts at +0.0 and adding a
    # +-0 product never changes it, so the result is the full product's
    rng = np.random.default_rng(1)
    A = rng.normal(size=(517, 23))
    beta = rng.normal(size=23)
    beta[rng.random(23) < 0.6] = 0.0
    beta[3] = -0.0
    nz = np.flatnonzero(beta)
    got = linalg.cols_matvec(np.ascontiguousarray(A.T), nz, beta[nz])
    assert np.array_equal(got, linalg.matvec(A, beta))


def test_astc_node_rows_are_the_numpy_expressions_bits():
    # ASTC's node means and centred rows come from the float32 basis by row index, without the float64
    # copy; they must be the bits of the expressions they replace (astc._fit_node before)
    from skinflint.trainers.trees._soft_tree_kernels import centred_rows
    rng = np.random.default_rng(2)
    Z32 = (rng.normal(size=(777, 13)) * rng.uniform(0.01, 1e4, 13)).astype(np.float32)
    sel = np.sort(rng.choice(777, 301, replace=False)).astype(np.int64)
    w = rng.uniform(0, 3, sel.size)
    Zk = np.asarray(Z32[sel], np.float64)
    xm = linalg.rmatvec_rows(Z32, sel, w) / w.sum()
    assert np.array_equal(xm, linalg.rmatvec(Zk, w) / w.sum())
    rw = np.sqrt(w)
    buf = np.full((777, 13), np.nan)
    got = centred_rows(Z32, sel, xm, rw, buf)
    assert got.shape == (301, 13)
    assert np.array_equal(got, np.ascontiguousarray((Zk - xm) * rw[:, None]))


def test_internal_rows_and_narrow_rmatvec_are_the_plain_expressions_bits():
    # SoftTree.internal_objective's per-row terms in one numba pass: the bits of the numpy expressions
    # (and linalg.dot's sums) that they replace
    from skinflint.trainers.relaxation import routing
    from skinflint.trainers.trees._soft_tree_kernels import internal_rows
    rng = np.random.default_rng(3)
    n, g = 1237, 50.0
    s, y, w = rng.normal(size=n), rng.normal(size=n), rng.uniform(0, 1e-3, n)
    Al, Au = rng.uniform(0, 5, n), rng.uniform(0, 5, n)
    sig = routing(s, 0.1, g)
    fw, ds, wd = internal_rows(s, y, sig, w, Al, Au, g)
    r = s - y
    assert fw == linalg.dot(w, 0.5 * r * r + sig * Au + (1 - sig) * Al)
    dsig = g * sig * (1 - sig) * (Au - Al)
    assert np.array_equal(ds, w * (r + dsig))
    assert wd == linalg.dot(w, dsig)
    for T in (1, 2, 3, 4, 5, 9):     # rmatvec's register path for narrow matrices (< 8 columns) and the wide one
        R = rng.uniform(size=(n, T))
        want = np.zeros(T)
        for j in range(T):           # each column one chain over the rows in order, from 0.0 (Python floats)
            for i in range(n):
                want[j] += float(R[i, j]) * float(w[i])
        assert np.array_equal(linalg.rmatvec(R, w), want)
