"""The README's Python snippet runs and prints what the README says."""
import contextlib
import io
import os
import re

from tests.conftest import REPO


def test_readme_python_snippet(tmp_path, monkeypatch):
    text = open(os.path.join(REPO, "README.md")).read()
    code = re.findall(r"```python\n(.*?)```", text, re.S)[0]
    monkeypatch.chdir(tmp_path)
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        exec(compile(code, "README.md", "exec"), {})
    # the comments after each print say what it prints
    claimed = re.findall(r"print\(.*\)\s+# (.*)", code)
    lines = out.getvalue().splitlines()
    assert len(lines) == len(claimed)
    for got, want in zip(lines, claimed):
        assert got.strip() == want.split(":")[0].strip()
    assert (tmp_path / "model.json").exists()
