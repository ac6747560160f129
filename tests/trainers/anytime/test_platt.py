"""Platt scaling (trainers/anytime/platt.py), which calibrates multiclass
AFR's one-vs-all margins."""
import numpy as np

from skinflint.trainers.anytime.platt import platt_fit


def test_recovers_a_known_sigmoid():
    """Labels drawn from p = 1 / (1 + exp(A f + B)) with A = -2, B = 0.5:
    the fit finds them.  With 20 000 rows the maximum-likelihood estimates'
    standard errors are about 0.03 (A) and 0.02 (B); 0.1 is over 3 of them,
    and Platt's smoothed targets move them by O(1/n) only."""
    rng = np.random.default_rng(0)
    f = rng.normal(size=20000) * 1.5
    y = rng.random(f.size) < 1.0 / (1.0 + np.exp(-2.0 * f + 0.5))
    A, B = platt_fit(f, y)
    assert abs(A + 2.0) < 0.1 and abs(B - 0.5) < 0.1


def test_is_the_smoothed_likelihood_optimum():
    """At the optimum the two first-order conditions of the log-likelihood
    hold: sum (t - p) f = 0 and sum (t - p) = 0, with Platt's targets t."""
    rng = np.random.default_rng(1)
    f = rng.normal(size=300)
    y = (f + rng.normal(size=300) > 0.3).astype(int)
    A, B = platt_fit(f, y)
    n_pos, n_neg = y.sum(), (1 - y).sum()
    t = np.where(y == 1, (n_pos + 1) / (n_pos + 2), 1 / (n_neg + 2))
    p = 1 / (1 + np.exp(A * f + B))
    # Newton stops at gradients below 1e-10 (sums over 300 rows of O(1) terms)
    assert abs(np.sum((t - p) * f)) < 1e-8 and abs(np.sum(t - p)) < 1e-8
    assert A < 0            # larger margins mean the positive class


def test_separable_and_constant_margins_stay_finite():
    f = np.r_[-np.ones(50), np.ones(50)]
    y = np.r_[np.zeros(50), np.ones(50)]
    A, B = platt_fit(f, y)
    # separable: the smoothed targets 51/52 and 1/52 are met exactly at
    # A f + B = -+log(51), so A = -log(51), B = 0
    assert np.isclose(A, -np.log(51), rtol=1e-6) and abs(B) < 1e-6
    # no spread: nothing to rank by, so p is the mean of the smoothed targets
    A, B = platt_fit(np.zeros(80), np.r_[np.ones(20), np.zeros(60)])
    t_mean = (20 * 21 / 22 + 60 * 1 / 62) / 80
    assert A == 0.0 and np.isclose(1 / (1 + np.exp(B)), t_mean)
