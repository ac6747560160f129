import subprocess
import sys

import pytest

from skinflint.cli import main
from tests.conftest import EXAMPLES


def test_inspect_prints_costs(capsys):
    assert main(["inspect", f"{EXAMPLES}/cascade.json"]) == 0
    out = capsys.readouterr().out
    assert "static cost: 61" in out and "stage 0: node 0, exit le -1" in out


def test_predict_with_budget(tmp_path, capsys):
    data = tmp_path / "x.csv"
    data.write_text("a,b,c\n0,-1,0\n1,5,2\n")
    assert main(["predict", f"{EXAMPLES}/trees.json", "--data", str(data), "--budget", "5.5"]) == 0
    out = capsys.readouterr().out.splitlines()
    # by hand (docs/costs.md): row 1 halts at c with cost 1.75, output 0.125 + 3
    assert out[2] == "1,3.125,1.75,0"


@pytest.mark.parametrize("argv, words", [
    (["inspect", "missing.json"], "cannot read"),
    (["predict", f"{EXAMPLES}/trees.json", "--data", "missing.csv"], "missing.csv"),
])
def test_errors_are_one_line(argv, words, capsys):
    assert main(argv) == 1
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and words in err[0] and "Traceback" not in err[0]


def test_wrong_columns_is_one_line(tmp_path, capsys):
    data = tmp_path / "x.csv"
    data.write_text("1,2,3,4,5\n")
    assert main(["predict", f"{EXAMPLES}/trees.json", "--data", str(data)]) == 1
    assert "5 columns, but the model has 3 features" in capsys.readouterr().err


def test_console_script_help():
    r = subprocess.run([sys.executable, "-m", "skinflint", "--help"], capture_output=True, text=True)
    assert r.returncode == 0
    for cmd in ("inspect", "predict", "demo"):
        assert cmd in r.stdout
