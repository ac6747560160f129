import numpy as np
import pytest

from skinflint import ir
from skinflint.runtimes.c import CRuntime
from skinflint.runtimes.c_targets import run_fuzzer
from skinflint.verify import verify
from tests.conftest import example_paths, load_example


@pytest.mark.parametrize("path", example_paths(), ids=lambda p: p.rsplit("/", 1)[-1])
def test_examples_dense_and_lazy_match_reference(path):
    report = verify(ir.load(path), runtimes=("c", "c-lazy"))
    assert report.ok, report.table()


def test_lazy_fetches_only_what_the_path_needs():
    m = load_example("classifier_tree")
    X = np.array([[1, -1, 9, 5.5, 7, 8]] * 3, np.float32)
    p = CRuntime(m, api="lazy").predict(X, budget=[np.inf, 11, 0])
    # full path: sign_x, sign_z, z_+-; budget 11 stops before the 10-cost leaf feature
    np.testing.assert_array_equal(p.fetches, [3, 2, 0])
    np.testing.assert_array_equal(p.cost, [12, 2, 0])


@pytest.mark.parametrize("name", ["cascade", "kernel_rbf", "multiclass"])
def test_libfuzzer_finds_nothing(name):
    import shutil
    if shutil.which("clang") is None:
        pytest.skip("clang is not installed (.ci/run installs it)")
    try:
        clean, log = run_fuzzer(load_example(name), seconds=7)
    except RuntimeError as e:
        if "fuzzer build failed" in str(e) and "libclang_rt" in str(e):
            pytest.skip("clang's fuzzer runtime is missing (apt package libclang-rt-dev)")
        raise
    assert clean, log
