"""The soft-cascade engine (trainers/cascades/soft_cascade.py) on small tree-output
matrices: gradients against finite differences, the surrogate's
majorisation, the monotone objective, and the K = 1 convex baseline."""
import numpy as np
import pytest

from skinflint.trainers.cascades.soft_cascade import (
    MODES,
    Cascade,
    Problem,
    Settings,
    StageProblem,
    _apply,
    init_cascade,
    lambda_max,
    objective,
    optimize,
    scores,
)


def _problem(n=200, T=20, m=5, seed=0):
    rng = np.random.default_rng(seed)
    H = rng.normal(size=(n, T)) * 0.3
    y = np.where(H[:, 0] + H[:, 1] + 0.3 * rng.normal(size=n) > 0, 1.0, -1.0)
    F = (rng.random((m, T)) < 0.4).astype(float)
    return Problem(H, y, np.full(n, 1.0 / n), rng.uniform(0, 1, T), F, rng.uniform(1, 10, m))


def _random_cascade(T, K, seed=1):
    rng = np.random.default_rng(seed)
    c = Cascade(rng.normal(size=(K, T)) * 0.5, rng.normal(size=K) * 0.1, rng.normal(size=K) * 0.2)
    c.B[1, :5] = 0.0          # an inactive block: those weights are not variables
    return c


@pytest.mark.parametrize("mode", MODES)
def test_stage_gradient_matches_central_differences(mode):
    prob = _problem()
    K = 4
    # gamma = 5 keeps the sigmoids smooth on the finite-difference scale
    cfg = Settings(mode=mode, n_stages=K, lam=0.01, rho=0.001, gamma=5.0)
    c = _random_cascade(prob.T, K)
    S = scores(prob, c)
    rng = np.random.default_rng(2)
    for k in range(K):
        sp = StageProblem(prob, cfg, c, k, S)
        x = sp.x0(c) + 0.05 * rng.normal(size=sp.x0(c).shape)
        _, g = sp(x)
        num = np.array([(sp(x + e)[0] - sp(x - e)[0]) / 2e-6 for e in np.eye(x.size) * 1e-6])
        # central differences with h = 1e-6 on O(1) values: truncation ~h^2,
        # rounding ~1e-16/1e-6 = 1e-10 relative; 1e-5 leaves a wide margin
        # while a wrong term (e.g. a missing routing gradient) is O(1e-2)
        assert np.max(np.abs(num - g)) <= 1e-5 * np.max(np.abs(g)), (mode, k)


@pytest.mark.parametrize("mode", MODES)
def test_stage_surrogate_is_tight_and_majorises(mode):
    """Lemma 1 (Chen Eq. 10): with the auxiliaries at their optimum the
    surrogate equals Eq. 8 / 3.25; anywhere else it is above it."""
    prob = _problem()
    K = 3
    cfg = Settings(mode=mode, n_stages=K, lam=0.05, rho=0.001, gamma=5.0)
    c = _random_cascade(prob.T, K)
    S = scores(prob, c)
    rng = np.random.default_rng(3)
    for k in range(K):
        sp = StageProblem(prob, cfg, c, k, S)
        f0 = objective(prob, cfg, c)
        # equal up to float64 rounding of sums of ~100 terms of size O(1)
        assert sp(sp.x0(c))[0] == pytest.approx(f0, rel=1e-12, abs=1e-12)
        for _ in range(5):
            x = sp.x0(c) + 0.3 * rng.normal(size=sp.x0(c).shape)
            assert sp(x)[0] >= objective(prob, cfg, _apply(c, sp, x)) - 1e-12


@pytest.mark.parametrize("mode", MODES)
def test_objective_history_never_increases(mode):
    prob = _problem(n=400, T=30, seed=4)
    cfg = Settings(mode=mode, n_stages=4, lam=0.003, rho=1e-4, max_cycles=4, tol=0.0)
    c = optimize(prob, cfg)
    h = np.array(c.history)
    assert len(h) >= 2
    assert np.all(np.diff(h) <= 0), h          # exact: every accepted step is checked
    assert objective(prob, cfg, c) == h[-1]
    assert h[-1] < h[0]                        # the cycles did something


def test_single_stage_is_the_convex_problem():
    """K = 1 is Chen Eq. 7: the IRLS init and the L-BFGS cycles, from two
    different starts, reach the same objective."""
    prob = _problem(n=300, T=15, seed=5)
    cfg = Settings(mode="cronus", n_stages=1, lam=0.002, rho=1e-4, max_cycles=30, tol=1e-12)
    a = optimize(prob, cfg)                                   # closed-form start
    zero = Cascade(np.full((1, prob.T), 0.3), np.zeros(1), np.zeros(1))
    b = optimize(prob, cfg, zero)                             # a dense, wrong start
    fa, fb = objective(prob, cfg, a), objective(prob, cfg, b)
    # the IRLS / variational iterations converge linearly; 1e-6 relative is
    # far below the gap between distinct supports (>1e-3 here)
    assert fa == pytest.approx(fb, rel=1e-6)
    # and both modes are the same problem for one stage (d_1 = P_1 = 1)
    cs = Settings(mode="cscc", n_stages=1, lam=0.002, rho=1e-4)
    assert objective(prob, cs, a) == pytest.approx(fa, rel=1e-12)


def test_lambda_max_zeroes_the_single_stage_and_half_does_not():
    prob = _problem(n=300, T=15, seed=6)
    cfg = Settings(mode="cronus", n_stages=1, rho=1e-4)
    top = lambda_max(prob, cfg)
    at = init_cascade(prob, Settings(mode="cronus", n_stages=1, lam=top * 1.02, rho=1e-4))
    below = init_cascade(prob, Settings(mode="cronus", n_stages=1, lam=top / 2, rho=1e-4))
    assert not at.B.any()
    assert below.B.any()


def test_init_threshold_decays_reach_by_eps():
    """Alg. 2 line 7: d_{k+1} = (1 - eps) d_k in the soft cascade."""
    from skinflint.trainers.cascades.soft_cascade import chain
    prob = _problem(n=400, T=20, seed=7)
    cfg = Settings(mode="cronus", n_stages=4, lam=1e-3, eps=0.2, rho=1e-4)
    c = init_cascade(prob, cfg)
    p, _, _ = chain(scores(prob, c), c.theta, cfg.gamma)
    d = p.mean(axis=0)
    # 80 bisection steps: exact to float64 rounding of the mean
    np.testing.assert_allclose(d[1:] / d[:-1], 0.8, rtol=1e-9)
