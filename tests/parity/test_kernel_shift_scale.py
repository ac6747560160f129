"""Exact parity (reference == ONNX == C dense == C on-demand) of kernels
that read (x - shift) * scale, with budgets, on both ONNX kernel layouts
(one [N, S, D] block, and one [N, S] sum per feature for large kernels)."""
import numpy as np
import pytest

from skinflint import ir
from skinflint.compilers.onnx_values import KERNEL_3D_LIMIT
from skinflint.verify import verify


# (5, 4): the [N, S, D] block; the second has S * D > KERNEL_3D_LIMIT: one sum per feature
@pytest.mark.parametrize("S,D", [(5, 4), (KERNEL_3D_LIMIT // 40 + 1, 40)])
@pytest.mark.parametrize("kernel", ["rbf", "linear", "poly"])
def test_scaled_kernels_are_exact_with_budgets(S, D, kernel):
    rng = np.random.default_rng(S + D)
    X = (rng.normal(size=(48, D)) * 20 + 5).astype(np.float32)
    shift = rng.normal(size=D).astype(np.float32) * 5
    scale = rng.uniform(0.02, 0.2, size=D).astype(np.float32)
    node = ir.kernel(rng.normal(size=(S, D)), rng.normal(size=(S, 3)), list(range(D)), kernel=kernel,
                     gamma=1.0 / D, degree=2, coef0=1.0, sv_cost=rng.choice([0.5, 1.0], S),
                     shift=shift, scale=scale)
    feats = [ir.Feature(f"f{i}", float(c)) for i, c in enumerate(rng.choice([0.0, 1.0, 2.5], D))]
    model = ir.model(feats, [node], 0, task=ir.multiclass_task((0, 1, 2), "softmax"))
    report = verify(model, X, adversarial=False)
    assert report.ok, report.table()


def test_two_class_softmax_is_a_softmax_in_c():
    # a multiclass task with 2 classes has 2 probabilities like a logistic
    # binary task, but they are softmax(scores), not logistic(scores[0])
    rng = np.random.default_rng(0)
    node = ir.kernel(rng.normal(size=(3, 2)), rng.normal(size=(3, 2)), [0, 1], gamma=0.5, sv_cost=np.ones(3))
    model = ir.model([ir.Feature("a", 1.0), ir.Feature("b", 1.0)], [node], 0,
                     task=ir.multiclass_task((0, 1), "softmax"))
    report = verify(model, rng.normal(size=(32, 2)).astype(np.float32), runtimes=("c", "c-lazy"),
                    adversarial=False)
    assert report.ok, report.table()
