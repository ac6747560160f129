"""The soft cascade's normal equations (``Problem.design``, the tiled
``bias_design`` kernel) are ``relaxation.design``'s over every column, bit for
bit: the kernel only reorders the loops around each entry's sum, never the
sum (so Cronus' and CSCC's models stay byte-identical)."""
import numpy as np
import pytest

from skinflint.trainers.cascades.soft_cascade import Problem
from skinflint.trainers.relaxation import design


def _bits(a):
    return np.ascontiguousarray(a).view(np.uint64)


# shapes around the kernel's edges: T not a multiple of the 4 x 4 tile, n not a multiple of the 128-row
# block, one column, one row, a T below the tile size
@pytest.mark.parametrize("n, T", [(300, 20), (257, 7), (129, 1), (1, 5), (1000, 3), (640, 33)])
def test_design_is_relaxation_design_bit_for_bit(n, T):
    rng = np.random.default_rng(n * 100 + T)
    # tree outputs: few distinct float32 leaf values per column, some exact zeros
    H = rng.choice(np.float32([-0.7, -0.125, 0.0, 0.3, 1.1]), size=(n, T)).astype(np.float64)
    y = np.where(rng.random(n) < 0.3, 1.0, -1.0)
    w = rng.random(n) / n
    w[::5] = 0.0                  # rows no stage reaches
    prob = Problem(H, y, w, np.ones(T), np.ones((1, T)), np.ones(1))
    _, G0, r0 = design(H, np.arange(T), w, y)
    G1, r1 = prob.design(w)
    assert G1.shape == G0.shape and r1.shape == r0.shape
    assert np.array_equal(_bits(G1), _bits(G0))
    assert np.array_equal(_bits(r1), _bits(r0))
    G2, r2 = prob.base_design()                   # the first stage's, kept
    assert np.array_equal(_bits(G2), _bits(G0)) and np.array_equal(_bits(r2), _bits(r0))
    assert prob.base_design()[0] is G2            # computed once
    with pytest.raises(ValueError):               # and nobody can change it under the next candidate
        G2[0, 0] = 1.0


def test_design_is_exactly_symmetric():
    rng = np.random.default_rng(3)
    H = rng.normal(size=(500, 13))
    G, _ = Problem(H, np.sign(H[:, 0]), rng.random(500), np.ones(13), np.ones((1, 13)), np.ones(1)).design(
        rng.random(500))
    assert np.array_equal(G, G.T)


def test_bias_design_reads_any_layout_as_its_copy():
    # the kernel's vector loads read four adjacent doubles of a row: a strided or reversed view of H must give
    # the bits of its C-contiguous copy, not read the wrong entries (or past the buffer's end)
    from skinflint.trainers.cascades._soft_cascade_kernels import bias_design
    rng = np.random.default_rng(8)
    big = rng.normal(size=(70, 24))
    y = np.where(rng.random(70) < 0.4, 1.0, -1.0)
    w = rng.random(70)
    for H in (big[:, ::2], big[:, ::-1], np.asfortranarray(big[:, :13])):
        G, r = bias_design(H, w, y)
        G0, r0 = bias_design(np.ascontiguousarray(H), w, y)
        assert np.array_equal(_bits(G), _bits(G0)) and np.array_equal(_bits(r), _bits(r0))
