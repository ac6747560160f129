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
    r = subprocess.run(["make", "-s", "run", f"BOARD={board}", f"SKINFLINT={skinflint}", f"MODEL={model}"],
                       cwd=work, capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stdout[-2000:] + r.stderr[-2000:]
    got = re.findall(r"row (\d+): (\w+), margin (-?\d+)/1000, cost (\d+)/1000, stage (-?\d+), (\d+) fetches",
                     r.stdout)
    assert len(got) == 3
    X = np.array([[0, 0, 5], [1, 1, 0], [0, 9, 1]], np.float32)
    ref = predict(load_example("groups"), X, budget=[1e9, 1e9, 21.5])
    for i, (row, label, margin, cost, stage, fetches) in enumerate(got):
        assert label == ref.output[i]
        assert int(margin) == int(ref.scores[i, 0] * 1000)
        assert int(cost) == int(ref.cost[i] * 1000)
        assert int(stage) == ref.stage[i]
        assert int(fetches) == ref.features_used[i].sum()
