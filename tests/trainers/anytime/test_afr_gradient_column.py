"""AFR's per-tree gradient reads one column of d loss_V / d phi: the
column-only computation must give exactly the bits of the full matrices'
column (linear_svm.afr_gradients), or AFR models would change."""
import numpy as np
import pytest

from skinflint.trainers import linalg
from skinflint.trainers.anytime.afr_fit import gradient_column
from skinflint.trainers.linear.linear_svm import afr_gradients, l2svm_newton


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_gradient_column_is_the_full_gradients_column_bit_for_bit(seed):
    rng = np.random.default_rng(seed)
    nT, nV, S = 300, 120, 7
    PT, PV = rng.normal(size=(nT, S)), rng.normal(size=(nV, S))
    w_true = rng.normal(size=S)
    yT = np.where(PT @ w_true + rng.normal(size=nT) > 0, 1.0, -1.0)
    yV = np.where(PV @ w_true + rng.normal(size=nV) > 0, 1.0, -1.0)
    muT, muV = rng.uniform(0.5, 2.0, nT), rng.uniform(0.5, 2.0, nV)
    C, a = 0.7, 5.0
    sol = l2svm_newton(PT, yT, muT, 1 / C)
    assert 0 < sol.active.sum() < nT            # both kinds of T rows: the coef mask matters
    full = afr_gradients(sol, PT, yT, muT, PV, yV, muV, C, a)
    for s in range(S):
        col_T, col_V, d_log_C = gradient_column(sol, PT, yT, muT, PV, yV, muV, C, a, s)
        # exact: the same float64 operations in the same order, no tolerance
        assert np.array_equal(col_T, full.d_phi_T[:, s])
        assert np.array_equal(col_V, full.d_phi_V[:, s])
        assert d_log_C == full.d_log_C


def test_biased_prefix_view_gives_the_copies_bits():
    # AFR solves on a column prefix of a wider [Phi, 1] buffer (biased=True) and reuses the solver's margins in
    # the adjoint: the same bits as the plain path, which copies Phi and recomputes Psi theta
    rng = np.random.default_rng(4)
    nT, nV, S = 250, 90, 6
    PT, PV = rng.normal(size=(nT, S)), rng.normal(size=(nV, S))
    yT, yV = np.where(rng.random(nT) < 0.5, 1.0, -1.0), np.where(rng.random(nV) < 0.5, 1.0, -1.0)
    muT, muV = rng.uniform(0.5, 2.0, nT), rng.uniform(0.5, 2.0, nV)

    def buffer(P):
        buf = np.full((P.shape[0], S + 4), np.nan)     # columns past the prefix must never be read
        buf[:, :S], buf[:, S] = P, 1.0
        return buf[:, :S + 1]
    BT, BV = buffer(PT), buffer(PV)
    for max_iter in (1, 2, 100):                       # the unconverged exit as well
        ref = l2svm_newton(PT, yT, muT, 1 / 0.7, max_iter=max_iter)
        got = l2svm_newton(BT, yT, muT, 1 / 0.7, max_iter=max_iter, biased=True)
        assert np.array_equal(got.theta, ref.theta) and np.array_equal(got.chol, ref.chol)
        assert np.array_equal(got.active, ref.active)
        # the margins handed to the adjoint are Psi theta as linalg.matvec sums it, on the copy
        assert np.array_equal(got.margins, linalg.matvec(np.hstack([PT, np.ones((nT, 1))]), got.theta))
        for s in (0, S - 1):
            a = gradient_column(ref, PT, yT, muT, PV, yV, muV, 0.7, 5.0, s)
            b = gradient_column(got, BT, yT, muT, BV, yV, muV, 0.7, 5.0, s, biased=True)
            assert np.array_equal(a[0], b[0]) and np.array_equal(a[1], b[1]) and a[2] == b[2]
