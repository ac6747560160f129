"""Same data and seed, same model bytes, whatever the BLAS build, CPU kernel
and thread counts (issue 35).

Every trainer of the registry is fitted in fresh processes under several
settings (one BLAS/numba/OpenMP thread; all threads; OpenBLAS forced onto
another CPU kernel), and each trainer must give one model hash.  The
reductions a model depends on run in ``trainers/linalg.py``,
``trainers/lbfgs.py`` and ``trainers/kernels/smo.py`` (the kernel SVM's dual,
formerly libsvm's, whose compiled arithmetic differs between x86-64 and
aarch64) in a stated order; the first tests check that order and the
solvers' accuracy directly (the SMO's in tests/trainers/kernels/test_smo.py).
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor

import numpy as np
import pytest

from skinflint.trainers import lbfgs, linalg
from skinflint.trainers.relaxation import design, lemma1_fit, refit


def _serial_dot(a, b):
    s = 0.0
    for x, y in zip(a.tolist(), b.tolist()):
        s += x * y
    return s


def test_products_sum_in_the_stated_order():
    # values of mixed magnitude, so that another summation order would differ
    rng = np.random.default_rng(1)
    A = rng.normal(size=(37, 23)) * 10.0 ** rng.integers(-8, 8, size=(37, 23))
    x = rng.normal(size=23)
    v = rng.normal(size=37)
    w = rng.random(37)
    assert linalg.dot(A[0], x) == _serial_dot(A[0], x)
    assert all(linalg.matvec(A, x)[i] == _serial_dot(A[i], x) for i in range(37))
    assert all(linalg.rmatvec(A, v)[j] == _serial_dot(A[:, j], v) for j in range(23))
    C = linalg.matmul(A, A.T.copy())
    assert all(C[i, j] == _serial_dot(A[i], A[j]) for i in range(0, 37, 5) for j in range(0, 37, 7))
    G = linalg.weighted_gram(A, w)
    assert np.array_equal(G, G.T)
    assert all(G[j, l] == _serial_dot(w * A[:, j], A[:, l]) for j in range(0, 23, 4) for l in range(j, 23, 3))
    assert np.array_equal(linalg.tmatmul(A, A), linalg.weighted_gram(A, np.ones(37)))
    D = linalg.sq_distances(A[:5], A[:7].T.copy())
    assert D[2, 4] == _serial_dot(A[2] - A[4], A[2] - A[4]) and D[3, 3] == 0.0


def test_gram_tiles_keep_every_chain():
    # weighted_gram's 4 x 8 vector tiles, its 4 x 4 tile and its edge cells,
    # across two row blocks and a partial one (n > 2 GRAM_ROWS): every entry of
    # the upper triangle must be the serial chain sum_i (w_i A_ij) A_il, i
    # ascending, and the matrix exactly symmetric, for each width that puts the
    # edges elsewhere (p mod 8 and p mod 4 all taken); mixed magnitudes, so
    # that any other order or a fused multiply-add shows
    rng = np.random.default_rng(5)
    n = 2 * linalg.GRAM_ROWS + 23
    for p in (1, 3, 4, 7, 8, 11, 12, 13, 16, 21):
        A = rng.normal(size=(n, p)) * 10.0 ** rng.integers(-6, 6, size=(n, p))
        w = rng.random(n) * 10.0 ** rng.integers(-3, 3, size=n)
        G = linalg.weighted_gram(A, w)
        assert np.array_equal(G, G.T), p
        bad = [(j, l) for j in range(p) for l in range(j, p) if G[j, l] != _serial_dot(w * A[:, j], A[:, l])]
        assert not bad, (p, bad[:5])
    # a non-contiguous view gives the bits of its copy, a float32 matrix those of its exact float64 widening
    A = rng.normal(size=(n, 30))
    assert np.array_equal(linalg.weighted_gram(A[:, ::2], w), linalg.weighted_gram(A[:, ::2].copy(), w))
    A32 = A.astype(np.float32)
    assert np.array_equal(linalg.weighted_gram(A32, w), linalg.weighted_gram(A32.astype(np.float64), w))
    # a row list read in place from a column prefix of a wider buffer (AFR's Psi): the bits of the copies
    buf = rng.normal(size=(n, 40)) * 10.0 ** rng.integers(-6, 6, size=(n, 40))
    rows = np.sort(rng.choice(n, n // 2, replace=False))
    for p in (5, 13, 29):
        view = buf[:, :p]
        assert np.array_equal(linalg.weighted_gram_rows(view, rows, w[rows]),
                              linalg.weighted_gram(buf[rows, :p], w[rows]))
        x = rng.normal(size=rows.size)
        assert np.array_equal(linalg.rmatvec_rows(view, rows, x), linalg.rmatvec(buf[rows, :p], x))


def test_every_blocked_layout_keeps_the_stated_order():
    # matmul with one column (matvec), tmatmul with few columns (C' accumulated)
    # and many (four rows of C at a time, a remainder row), sq_distances across
    # two column blocks of 64 and a remainder row: each entry must still be the
    # serial sum, at every position of a block
    rng = np.random.default_rng(3)
    A = rng.normal(size=(39, 70)) * 10.0 ** rng.integers(-8, 8, size=(39, 70))
    b = rng.normal(size=(70, 1))
    assert all(linalg.matmul(A, b)[i, 0] == _serial_dot(A[i], b[:, 0]) for i in range(39))
    for cols in (1, 5, 17, 70):
        B = A[:, :cols].copy()
        C = linalg.tmatmul(A, B)
        assert all(C[j, l] == _serial_dot(A[:, j], B[:, l]) for j in range(70) for l in range(0, cols, 4))
    Y = rng.normal(size=(66, 70)) * 10.0 ** rng.integers(-3, 3, size=(66, 70))
    D = linalg.sq_distances(A, Y.T.copy())
    assert all(D[i, j] == _serial_dot(A[i] - Y[j], A[i] - Y[j]) for i in range(39) for j in range(0, 66, 5))


def test_solvers_agree_with_lapack():
    rng = np.random.default_rng(2)
    X = rng.normal(size=(200, 12))
    S = X.T @ X + np.eye(12)                 # condition number ~1e1: 1e-10 relative is ~1e4 ulps of slack
    b = rng.normal(size=12)
    ref = np.linalg.solve(S, b)
    for got in (linalg.spd_solve(S, b), linalg.solve(S, b), linalg.cho_solve(linalg.cholesky(S)[0], b)):
        np.testing.assert_allclose(got, ref, rtol=1e-10, atol=1e-12)
    y = rng.normal(size=200)
    np.testing.assert_allclose(linalg.lstsq(X, y), np.linalg.lstsq(X, y, rcond=None)[0], rtol=1e-10, atol=1e-12)
    assert not linalg.cholesky(-S)[1]
    # a singular PSD system gets the deterministic jitter sequence, not an error
    x1 = linalg.spd_solve(np.ones((3, 3)), np.ones(3))
    assert np.array_equal(x1, linalg.spd_solve(np.ones((3, 3)), np.ones(3))) and np.all(np.isfinite(x1))


def test_lbfgs_reaches_the_rosenbrock_minimum():
    def rosen(x):
        r = x[1:] - x[:-1] ** 2
        g = np.zeros_like(x)
        g[1:] += 200 * r
        g[:-1] += -400 * x[:-1] * r - 2 * (1 - x[:-1])
        return float(np.sum(100 * r * r + (1 - x[:-1]) ** 2)), g
    res = lbfgs.minimize(rosen, np.full(8, -1.0), maxiter=2000, gtol=1e-9, ftol=0.0)
    assert res.message == "gradient below gtol"
    np.testing.assert_allclose(res.x, 1.0, atol=1e-6)   # |g| <= 1e-9 at a minimum with Hessian ~1e2..1e3


def test_lemma1_fit_without_penalties_is_weighted_least_squares():
    rng = np.random.default_rng(3)
    X = rng.normal(size=(150, 6))
    y = X @ rng.normal(size=6) + 0.3 + 0.1 * rng.normal(size=150)
    w = rng.random(150)
    cols = np.arange(6)
    X1, gram, rhs = design(X, cols, w, y)
    M = np.eye(6)
    b, beta, f = lemma1_fit(gram, rhs, X, y, w, M, np.ones(6), np.zeros(6), 1.0, 0.0, 0.0, 0.0, cols,
                            n_iter=5, tol=1e-12, ridge=0.0)
    sw = np.sqrt(w)
    ref = np.linalg.lstsq(X1 * sw[:, None], y * sw, rcond=None)[0]
    np.testing.assert_allclose(np.r_[b, beta], ref, rtol=1e-9, atol=1e-12)   # cond(X1' W X1) ~ 10
    np.testing.assert_allclose(refit(gram, rhs, 0.0), ref, rtol=1e-9, atol=1e-12)
    # a cost term shrinks the weights, and the returned objective is f at the returned point
    b2, beta2, f2 = lemma1_fit(gram, rhs, X, y, w, M, np.ones(6), np.zeros(6), 1.0, 1.0, 0.0, 1e-4, cols,
                               n_iter=50, tol=1e-10)
    r = y - b2 - X @ beta2
    assert f2 == pytest.approx(0.5 * np.sum(w * r * r) + np.sum(np.abs(beta2)), rel=1e-12)
    assert np.abs(beta2).sum() < np.abs(beta).sum()


# ---------------------------------------------------------------- whole trainers in fresh processes

_CHILD = r"""
import hashlib, json, sys
import numpy as np
import threadpoolctl
from skinflint import datasets, ir
from skinflint.trainers import TRAINERS

ds = datasets.yahoo_like_costs(datasets.load_spambase(), seed=0)
rows = np.random.default_rng(0).permutation(len(ds.y))[:int(sys.argv[1])]
X, y = ds.X[rows], ds.y[rows]
mean_cost = float(np.mean(ds.feature_costs))
out = {}
for name, spec in TRAINERS.items():
    params = dict(spec.test_params)
    if not spec.fixed and not spec.anytime:   # a grid value from the middle: the cost term is active
        grid = spec.scaled_grid(mean_cost)
        params[spec.sweep] = grid[len(grid) // 2]
    est = spec.estimator("classification", feature_costs=ds.feature_costs, **params).fit(X, y)
    out[name] = hashlib.sha256(ir.to_json(est.to_ir()).encode()).hexdigest()[:16]
blas = [d for d in threadpoolctl.threadpool_info() if d.get("user_api") == "blas"]
print(json.dumps({"hashes": out, "blas": [[d.get("internal_api"), d.get("architecture"), d.get("num_threads")]
                                           for d in blas]}))
"""

_THREAD_VARS = ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS", "NUMBA_NUM_THREADS",
                "OPENBLAS_CORETYPE")
_ROWS = "500"


def _run(extra):
    env = {k: v for k, v in os.environ.items() if k not in _THREAD_VARS}
    env.update(extra)
    r = subprocess.run([sys.executable, "-c", _CHILD, _ROWS], env=env, capture_output=True, text=True,
                       timeout=600)
    assert r.returncode == 0, r.stderr[-3000:]
    return json.loads(r.stdout.strip().splitlines()[-1])


def _native_blas():
    """(internal_api, architecture) of numpy's BLAS in this process."""
    import threadpoolctl
    blas = [d for d in threadpoolctl.threadpool_info() if d.get("user_api") == "blas"]
    return (blas[0].get("internal_api"), blas[0].get("architecture")) if blas else (None, None)


@pytest.fixture(scope="module")
def runs():
    one = dict(OPENBLAS_NUM_THREADS="1", OMP_NUM_THREADS="1", MKL_NUM_THREADS="1", NUMBA_NUM_THREADS="1")
    many = str(max(2, os.cpu_count() or 2))
    settings = {"1 thread": one,
                f"{many} threads": dict(OPENBLAS_NUM_THREADS=many, OMP_NUM_THREADS=many, NUMBA_NUM_THREADS=many)}
    api, arch = _native_blas()
    if api == "openblas":
        # a kernel every x86-64 OpenBLAS has (another one if the CPU already is it)
        core = "Prescott" if arch != "Prescott" else "Nehalem"
        settings[f"OPENBLAS_CORETYPE={core}"] = dict(OPENBLAS_CORETYPE=core)
    with ThreadPoolExecutor(len(settings)) as pool:     # the children run side by side
        return dict(zip(settings, pool.map(_run, settings.values())))


def test_every_registry_trainer_gives_one_model_whatever_the_blas_kernel_and_threads(runs):
    from skinflint.trainers import TRAINERS
    first = next(iter(runs.values()))["hashes"]
    assert set(first) == set(TRAINERS)
    differ = {name: {s: r["hashes"][name] for s, r in runs.items()}
              for name in TRAINERS if len({r["hashes"][name] for r in runs.values()}) > 1}
    assert not differ, f"model bytes depend on the setting: {differ}"


def test_the_coretype_setting_really_changes_the_blas_kernel(runs):
    one = runs["1 thread"]["blas"]
    if not one or one[0][0] != "openblas":
        pytest.skip(f"numpy's BLAS is not OpenBLAS ({one}): OPENBLAS_CORETYPE does not apply")
    assert len(runs) >= 3
    other = [r["blas"] for s, r in runs.items() if s.startswith("OPENBLAS_CORETYPE")][0]
    assert {b[1] for b in other} != {b[1] for b in one}, (one, other)


def test_aarch64_under_qemu_gives_the_same_models(runs):
    """The same child under an aarch64 CPython (qemu-user emulates the aarch64
    instructions, FMA and numpy's ARMv8/SVE OpenBLAS kernels included) must give
    the x86-64 hashes.  Skipped unless SKINFLINT_AARCH64_PYTHON names such a
    Python with skinflint's dependencies; to build one from package registries
    (Debian bookworm's arm64 python3.11, the venv's versions of the aarch64
    wheels) and run this test::

        tests/trainers/aarch64_python.sh /tmp/a64       # prints /tmp/a64/python
        SKINFLINT_AARCH64_PYTHON=/tmp/a64/python NUMBA_CACHE_DIR=/tmp/a64/numba \
            pytest tests/trainers/test_determinism.py -k aarch64

    (root, debootstrap and qemu-user needed; the wrapper imports the checkout
    the script was given).  Under emulation the registry takes several times
    its native fit time: see the script's header."""
    py = os.environ.get("SKINFLINT_AARCH64_PYTHON")
    if not py or not os.path.exists(py):
        pytest.skip("no aarch64 Python under qemu-user: set SKINFLINT_AARCH64_PYTHON to one with skinflint's "
                    "dependencies to compare across instruction sets (tests/trainers/aarch64_python.sh builds one)")
    r = subprocess.run([py, "-c", _CHILD, _ROWS], capture_output=True, text=True, timeout=3600)
    assert r.returncode == 0, r.stderr[-3000:]
    got = json.loads(r.stdout.strip().splitlines()[-1])
    machine = subprocess.run([py, "-c", "import platform; print(platform.machine())"], capture_output=True,
                             text=True).stdout.strip()
    assert machine == "aarch64", f"SKINFLINT_AARCH64_PYTHON runs on {machine!r}, not aarch64"
    x86 = runs["1 thread"]["hashes"]
    assert set(got["hashes"]) == set(x86)
    differ = {name: {"x86-64": x86[name], "aarch64": got["hashes"][name]}
              for name in x86 if got["hashes"][name] != x86[name]}
    assert not differ, f"model bytes differ on aarch64 ({got['blas']}): {differ}"


def test_the_compared_models_are_distinct(runs):
    # guards the guard: one hash per trainer means something only if the
    # trainers built real, different models (GBRT and feature-subset GBRT may coincide)
    hashes = runs["1 thread"]["hashes"]
    assert len(set(hashes.values())) >= len(hashes) - 1, hashes
