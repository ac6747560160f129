"""examples/embedded builds with its own Makefile and runs on both boards
under qemu-system-arm; every printed result equals the reference runtime's."""
import os
import re
import shutil
import subprocess
import sys

import numpy as np
import pytest

from skinflint.runtimes.reference import predict
from tests.conftest import REPO, load_example

EMBEDDED = os.path.join(REPO, "examples", "embedded")


@pytest.mark.parametrize("board", ["mps2-an386", "microbit"])
def test_bare_metal_example_matches_reference(board, tmp_path):
    for exe in ("arm-none-eabi-gcc", "qemu-system-arm", "make"):
        if shutil.which(exe) is None:
            pytest.skip(f"{exe} is not installed (.ci/run installs it with apt)")
    work = tmp_path / "embedded"
    shutil.copytree(EMBEDDED, work, ignore=shutil.ignore_patterns("build"))
    skinflint = f"{sys.executable} -m skinflint"
    model = os.path.join(REPO, "examples", "models", "groups.json")
    r = subprocess.run(["make", "-s", "run", f"BOARD={board}", f"SKINFLINT={skinflint}", f"MODEL={model}",
                        f"PYTHON={sys.executable}"],
                       cwd=work, capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stdout[-2000:] + r.stderr[-2000:]
    got = re.findall(r"row (\d+): (\w+), margin (-?\d+)/1000, cost (\d+)/1000, stage (-?\d+), (\d+) fetches",
                     r.stdout)
    assert len(got) == 3
    X = np.array([[0, 0, 5], [1, 1, 0], [0, 9, 1]], np.float32)
    ref = predict(load_example("groups"), X, budget=[1e9, 1e9, 21.5])
    for i, (_row, label, margin, cost, stage, fetches) in enumerate(got):
        assert label == ref.output[i]
        assert int(margin) == int(ref.scores[i, 0] * 1000)
        assert int(cost) == int(ref.cost[i] * 1000)
        assert int(stage) == ref.stage[i]
        assert int(fetches) == ref.features_used[i].sum()


@pytest.mark.parametrize("board", ["mps2-an386", "microbit"])
def test_bare_metal_support_files_come_from_the_package(board):
    # the start-up code and linker scripts are package data (found through
    # importlib.resources), so an installed wheel can build bare-metal code
    from skinflint.runtimes.c_targets import TARGETS, bare_metal_files, embedded_dir
    files = bare_metal_files(board)
    assert os.path.dirname(files["startup"]) == embedded_dir()
    assert "Reset_Handler" in open(files["startup"]).read()
    assert "MEMORY" in open(files["linker_script"]).read()
    assert board in {t.bare_metal for t in TARGETS.values()}
    if shutil.which("make") is None:
        pytest.skip("make is not installed")
    r = subprocess.run(["make", "-n", f"BOARD={board}", f"PYTHON={sys.executable}", "SKINFLINT=true",
                        "build/" + board + "/app.elf"], cwd=EMBEDDED, capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    assert f"-T {files['linker_script']}" in r.stdout and files["startup"] in r.stdout
