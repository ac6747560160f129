"""The kernel node's optional per-feature shift and scale: format, loader
checks, and the reference's two float32 roundings."""
import json

import numpy as np
import pytest

from skinflint import ir
from skinflint.runtimes.reference import predict


def _model(shift=None, scale=None, kernel="rbf"):
    rng = np.random.default_rng(0)
    node = ir.kernel(rng.normal(size=(3, 2)), rng.normal(size=3), [0, 2], kernel=kernel, gamma=0.5,
                     degree=2, coef0=1.0, sv_cost=np.ones(3), shift=shift, scale=scale)
    feats = [ir.Feature(f"f{i}", 1.0) for i in range(3)]
    return ir.model(feats, [node], 0, task=ir.binary_task((0, 1), "identity"))


def test_models_without_transform_keep_their_keys():
    d = json.loads(ir.to_json(_model()))
    assert "shift" not in d["nodes"][0] and "scale" not in d["nodes"][0]
    m = _model([1.5, -2.0], [0.25, 3.0])
    d = json.loads(ir.to_json(m))
    assert d["nodes"][0]["shift"] == [1.5, -2.0] and d["nodes"][0]["scale"] == [0.25, 3.0]
    assert ir.to_json(ir.from_json(ir.to_json(m))) == ir.to_json(m)


@pytest.mark.parametrize("edit,match", [
    (lambda n: n.pop("scale"), "give both or neither"),
    (lambda n: n.pop("shift"), "give both or neither"),
    (lambda n: n.update(shift=[1.0]), "shift: expected 2 values"),
    (lambda n: n.update(scale=[1.0, 2.0, 3.0]), "scale: expected 2 values"),
    (lambda n: n.update(scale=[1.0, 1e39]), r"scale\[1\].*not a finite float32"),
    (lambda n: n.update(shift=[1.0, "a"]), "shift"),
])
def test_loader_rejects_bad_transforms_naming_the_field(edit, match):
    d = json.loads(ir.to_json(_model([1.5, -2.0], [0.25, 3.0])))
    edit(d["nodes"][0])
    with pytest.raises(ir.IRError, match=match):
        ir.from_dict(d)


@pytest.mark.parametrize("kernel", ["rbf", "linear", "poly"])
def test_reference_rounds_twice_never_fused(kernel):
    # (x - shift) * scale in float32, then the plain kernel: the same bits
    # as the untransformed kernel on inputs transformed by numpy float32
    # (one rounding per operation).  Values chosen so a fused
    # (x - shift) * scale in float64 rounds differently on some rows.
    rng = np.random.default_rng(1)
    X = (rng.normal(size=(400, 3)) * 100 + 7).astype(np.float32)
    shift = np.array([7.1, 0.0, 3.3], np.float32)[[0, 2]]
    scale = np.array([0.0131, 1.0, 0.0277], np.float32)[[0, 2]]
    m, m0 = _model(shift, scale, kernel), _model(kernel=kernel)
    Xt = X.copy()
    Xt[:, [0, 2]] = (X[:, [0, 2]] - shift) * scale
    a = predict(m, X).scores[:, 0]
    b = predict(m0, Xt).scores[:, 0]
    np.testing.assert_array_equal(a.view(np.uint32), b.view(np.uint32))
    fused = ((X[:, [0, 2]].astype(np.float64) - shift) * scale).astype(np.float32)
    assert np.any(fused != Xt[:, [0, 2]]), "the rows do not tell one rounding from two"
