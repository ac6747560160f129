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


def test_a_type_checker_resolves_the_subpackages(tmp_path):
    """skinflint.ir lives in ir/: the link tree `make` writes lets mypy (and
    pyright, via pyproject.toml) see the installed layout."""
    from skinflint._static_tree import write_tree
    write_tree(tmp_path / "static", REPO)
    probe = tmp_path / "probe.py"
    probe.write_text("from skinflint.ir import FeatureCosts\n"
                     "from skinflint.trainers.booster import boost\n"
                     "reveal_type(FeatureCosts.from_csv)\nreveal_type(boost)\n")
    env = {**os.environ, "MYPYPATH": str(tmp_path / "static")}
    r = subprocess.run([sys.executable, "-m", "mypy", "--config-file=", "--follow-imports=silent",
                        "--no-incremental", str(probe)], capture_output=True, text=True, env=env,
                       cwd=str(tmp_path))
    assert r.returncode == 0, r.stdout + r.stderr
    assert "-> skinflint.ir.feature_costs.FeatureCosts" in r.stdout, r.stdout
    assert "skinflint.trainers.booster.BoostResult" in r.stdout, r.stdout
    # and the example the Makefile's typecheck target runs
    r = subprocess.run([sys.executable, "-m", "mypy", "--config-file=", "--follow-imports=silent",
                        "--no-incremental", os.path.join(REPO, "examples", "typecheck_imports.py")],
                       capture_output=True, text=True, env=env, cwd=str(tmp_path))
    assert r.returncode == 0, r.stdout + r.stderr
