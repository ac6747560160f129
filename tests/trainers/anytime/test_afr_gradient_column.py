"""AFR's per-tree gradient reads one column of d loss_V / d phi: the
column-only computation must give exactly the bits of the full matrices'
column (linear_svm.afr_gradients), or AFR models would change."""
import numpy as np
import pytest

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
