"""The README's Python snippets run, and print what their comments say."""
import contextlib
import io
import os
import re

import pytest

from tests.conftest import REPO

BLOCKS = re.findall(r"```python\n(.*?)```", open(os.path.join(REPO, "README.md")).read(), re.S)


def _run(code, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        exec(compile(code, "README.md", "exec"), {})
    return out.getvalue().splitlines()


def test_first_snippet_prints_what_it_claims(tmp_path, monkeypatch):
    code = BLOCKS[0]
    lines = _run(code, tmp_path, monkeypatch)
    claimed = re.findall(r"print\(.*\)\s+# (.*)", code)
    assert len(lines) == len(claimed)
    for got, want in zip(lines, claimed):
        assert got.strip() == want.split(":")[0].strip()
    assert (tmp_path / "model.json").exists()


def test_training_snippet_runs_and_verifies(tmp_path, monkeypatch):
    from skinflint.datasets import _keel_file
    try:
        _keel_file("spambase")
    except FileNotFoundError as e:
        pytest.skip(str(e))
    lines = _run(BLOCKS[1], tmp_path, monkeypatch)
    acc, mean_cost, static = (float(v) for v in lines[0].split())
    assert 0.9 < acc <= 1 and 0 < mean_cost <= static
    assert "c-lazy" in "\n".join(lines) and "MISMATCH" not in "\n".join(lines)
    assert (tmp_path / "out" / "spam.c").exists()


def test_tuning_snippet_searches_lambda_and_tabulates_curves(tmp_path, monkeypatch):
    from skinflint.datasets import _keel_file
    try:
        _keel_file("spambase")
    except FileNotFoundError as e:
        pytest.skip(str(e))
    lines = _run(BLOCKS[2], tmp_path, monkeypatch)
    assert lines[0].startswith("{'cost_tradeoff': ")
    table = lines[1:]
    assert table[0].split()[0] == "model" and len(table) == 5
    assert [ln.split(")")[0] + ")" for ln in table[1:]] == [
        "Greedy Miser (lambda=0)", "Greedy Miser (lambda=0.001)", "Early Exit (s=1)", "Early Exit (s=4)"]
