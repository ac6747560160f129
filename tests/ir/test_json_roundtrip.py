import json

import numpy as np
import pytest

from skinflint import ir
from skinflint.runtimes.reference import predict
from tests.conftest import example_paths


@pytest.mark.parametrize("path", example_paths(), ids=lambda p: p.rsplit("/", 1)[-1])
def test_examples_load_and_costs_are_bounded(path, rng):
    m = ir.load(path)
    X = rng.normal(size=(300, m.n_features)).astype(np.float32) * 3
    X[rng.random(X.shape) < 0.1] = np.nan
    p = predict(m, X)
    static = m.static_cost()
    assert np.all(p.cost >= 0) and np.all(p.cost <= static)
    for b in (0.0, 0.5 * static, static):
        pb = predict(m, X, budget=b)
        assert np.all(pb.cost <= b)
    # more budget never buys fewer checkpoints
    lo, hi = predict(m, X, budget=0.3 * static), predict(m, X, budget=0.7 * static)
    assert np.all(lo.stage <= hi.stage) or m.nodes[m.output].kind == "classifier_tree"


def _random_bits_model(rng, n_trees=20):
    """Thresholds and values drawn from raw float32 bit patterns: subnormals,
    extremes, negative zero."""
    bits = rng.integers(0, 2**32, size=10_000, dtype=np.uint64).astype(np.uint32).view(np.float32)
    finite = bits[np.isfinite(bits)]
    finite[:3] = [np.float32(-0.0), np.float32(1e-45), np.finfo(np.float32).max]
    trees, k = [], 0
    for _ in range(n_trees):
        trees.append(dict(feature=[0, 1, -1, -1, -1], threshold=finite[k:k + 5],
                          left=[1, 3, -1, -1, -1], right=[2, 4, -1, -1, -1], value=finite[k + 5:k + 10]))
        k += 10
    bank = ir.concat_trees(trees, tree_cost=rng.random(n_trees) / 3, base_score=[finite[k]])
    feats = ir.features_from_costs(rng.random(2) * 0.1)
    return ir.model(feats, [bank], 0)


def test_float32_parameters_round_trip_bit_exactly(rng, tmp_path):
    m = _random_bits_model(rng)
    path = tmp_path / "m.json"
    ir.save(m, path)
    m2 = ir.load(path)
    a, b = m.nodes[0], m2.nodes[0]
    for field in ("threshold", "value", "base_score"):
        x, y = getattr(a, field), getattr(b, field)
        assert x.dtype == y.dtype == np.float32
        np.testing.assert_array_equal(x.view(np.uint32), y.view(np.uint32))
    np.testing.assert_array_equal(a.tree_cost.view(np.uint64), b.tree_cost.view(np.uint64))
    assert ir.to_json(m2) == ir.to_json(m)
    assert m2.hash() == m.hash()


def test_file_carries_format_and_version(tmp_path):
    from tests.conftest import load_example
    d = json.loads(ir.to_json(load_example("trees")))
    assert d["format"] == "skinflint-ir" and d["version"] == 1


def test_save_does_not_leave_partial_files(tmp_path):
    from tests.conftest import load_example
    ir.save(load_example("trees"), tmp_path / "m.json")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["m.json"]
