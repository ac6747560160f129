"""Bit-exact parity of generated C with the reference on every build:
host gcc/clang at -O2 and -O0, ASan+UBSan, aarch64 and armhf under
qemu-user, Cortex-M4F and Cortex-M0 bare metal under qemu-system-arm."""
import pytest

from skinflint import ir
from skinflint.ir.random_model import random_model
from skinflint.runtimes.c import CRuntime
from skinflint.runtimes.c_targets import TARGETS, target_available
from skinflint.verify import verify
from tests.conftest import example_paths

MODELS = {p.rsplit("/", 1)[-1][:-5]: p for p in example_paths()}


def _check(model, target):
    ok, why = target_available(target)
    if not ok:
        pytest.skip(why)
    # one program run on the target serves both APIs (c_targets caches it)
    report = verify(model, runtimes=[CRuntime(model, target=target), CRuntime(model, api="lazy", target=target)],
                    max_rows=600)
    assert report.ok, report.table()


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
