"""A non-editable install lays out the skinflint.* subpackages and templates."""
import os
import subprocess
import sys

import pytest

from tests.conftest import REPO


@pytest.mark.slow
def test_pip_install_into_a_fresh_target(tmp_path):
    target = tmp_path / "site"
    r = subprocess.run([sys.executable, "-m", "pip", "install", "--no-deps", "--no-build-isolation",
                        "-q", "--target", str(target), REPO], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr[-2000:]
    code = ("import skinflint, skinflint.ir, skinflint.runtimes.reference, skinflint.datasets, "
            "skinflint.trainers, skinflint.compilers, skinflint.templates; "
            "print(skinflint.__file__)")
    env = {**os.environ, "PYTHONPATH": str(target)}
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env,
                       cwd=str(tmp_path))
    assert r.returncode == 0, r.stderr[-2000:]
    assert r.stdout.strip().startswith(str(target))
    assert (target / "skinflint" / "ir" / "model.py").exists()


def test_top_level_exports_the_public_api():
    import skinflint
    from skinflint.compilers.onnx import compile_onnx
    from skinflint.trainers import GreedyMiserClassifier
    assert skinflint.compile_onnx is compile_onnx
    assert skinflint.GreedyMiserClassifier is GreedyMiserClassifier
    for name in skinflint.__all__:
        assert getattr(skinflint, name) is not None
    import pytest
    with pytest.raises(AttributeError):
        skinflint.no_such_thing
