"""Bit-exact parity of generated C with the reference on every build:
host gcc/clang at -O2 and -O0, ASan+UBSan, aarch64 and armhf under
qemu-user, Cortex-M4F and Cortex-M0 bare metal under qemu-system-arm."""
import numpy as np
import pytest

from skinflint import ir
from skinflint.ir.random_model import random_model
from skinflint.runtimes.c_targets import TARGETS, run_on_target, target_available
from skinflint.runtimes.reference import predict
from skinflint.verify import adversarial_rows, budgets_around, compare
from tests.conftest import example_paths

MODELS = {p.rsplit("/", 1)[-1][:-5]: p for p in example_paths()}


def _check(model, target):
    ok, why = target_available(target)
    if not ok:
        pytest.skip(why)
    X = adversarial_rows(model, max_rows=600)
    b = budgets_around(predict(model, X).cost)
    X2 = np.concatenate([X, X])
    B2 = np.concatenate([np.full(len(X), np.inf), b])
    ref = predict(model, X2, B2)
    dense, (lazy, fetches) = run_on_target(model, X2, B2, target)
    for rep in (compare(model, X2, ref, dense, target), compare(model, X2, ref, lazy, target + "-lazy", fetches)):
        assert rep.ok, rep.worst_rows


@pytest.mark.parametrize("target", list(TARGETS))
@pytest.mark.parametrize("name", sorted(MODELS))
def test_examples_on_target(target, name):
    _check(ir.load(MODELS[name]), target)


@pytest.mark.parametrize("target", ["host-asan-ubsan", "aarch64", "armhf", "cortex-m4f", "cortex-m0"])
def test_random_models_on_target(target):
    for seed in range(1000, 1006):
        _check(random_model(seed), target)


@pytest.fixture(scope="module")
def trained_model():
    from skinflint import datasets
    from skinflint.trainers import GreedyMiserClassifier
    ds = datasets.load_breast_cancer()
    return GreedyMiserClassifier(n_estimators=25, max_depth=3, cost_tradeoff=1e-4, verbose=0,
                                 feature_costs=ds.feature_costs, feature_groups=ds.feature_groups,
                                 group_costs=ds.group_costs, random_state=0).fit(ds.X, ds.y).model_


@pytest.mark.parametrize("target", list(TARGETS))
def test_trained_model_on_target(target, trained_model):
    _check(trained_model, target)
