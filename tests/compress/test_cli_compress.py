"""``skinflint compress`` (skinflint/compress/cli.py): import, prune, print
the before/after table, write the model atomically."""
import argparse
import os

import numpy as np
import pytest

pytest.importorskip("sklearn")
from sklearn.ensemble import RandomForestClassifier  # noqa: E402

from skinflint import ir  # noqa: E402
from skinflint.compress import cli  # noqa: E402
from skinflint.importers.sklearn_json import to_json  # noqa: E402
from skinflint.runtimes.reference import ReferenceRuntime  # noqa: E402

RNG = np.random.default_rng(5)
X = RNG.normal(size=(400, 4)).astype(np.float32)
Y = (X[:, 0] + X[:, 1] > 0).astype(int)


def _parse(argv):
    p = argparse.ArgumentParser()
    cli.add_parser(p.add_subparsers(dest="command"))
    return p.parse_args(["compress", *argv])


@pytest.fixture()
def files(tmp_path):
    rf = RandomForestClassifier(15, max_depth=4, random_state=0).fit(X[:200], Y[:200])
    src = tmp_path / "forest.json"
    to_json(rf, src)
    costs = tmp_path / "costs.csv"
    costs.write_text("name,cost,group\nx0,1,\nx1,5,\nx2,2,\nx3,3,\n")
    val = tmp_path / "val.csv"
    np.savetxt(val, np.c_[X[200:], Y[200:]], delimiter=",")
    return src, costs, val


def test_compress_from_sklearn_json(files, tmp_path, capsys):
    src, costs, val = files
    out = tmp_path / "small.json"
    args = _parse([str(src), "--from", "sklearn-json", "--data", str(val), "--costs", str(costs),
                   "--lambda", "0.01", "--test", str(val), "-o", str(out)])
    assert args.func(args) == 0
    text = capsys.readouterr().out
    assert "before (val)" in text and "after (test)" in text and "accuracy" in text
    m = ir.load(out)
    assert m.metadata["trainer"] == "compress:budget_prune"
    after = float(text.split("after (val)")[1].split()[0])
    before = float(text.split("before (val)")[1].split()[0])
    assert after < before
    assert np.mean(ReferenceRuntime(m).predict(X[200:]).cost) == pytest.approx(after, rel=1e-5)  # %.6g
    assert sorted(os.listdir(tmp_path)) == ["costs.csv", "forest.json", "small.json", "val.csv"]


def test_compress_to_a_budget_and_a_failed_write_leaves_nothing(files, tmp_path, capsys):
    src, costs, val = files
    out = tmp_path / "b.json"
    args = _parse([str(src), "--from", "sklearn-json", "--data", str(val), "--costs", str(costs),
                   "--budget", "4", "-o", str(out)])
    args.func(args)
    assert np.mean(ReferenceRuntime(ir.load(out)).predict(X[200:]).cost) <= 4
    # an IR model as input, written where the folder is missing: refused, no temp file
    missing = tmp_path / "no" / "c.json"
    args = _parse([str(out), "--data", str(val), "--lambda", "0.1", "-o", str(missing)])
    with pytest.raises(FileNotFoundError):
        args.func(args)
    assert not (tmp_path / "no").exists()
    assert not [f for f in os.listdir(tmp_path) if f.endswith(".tmp")]


def test_write_atomically_removes_its_temporary_file_on_failure(files, tmp_path, monkeypatch):
    src, _, _ = files
    from skinflint.importers.sklearn_json import from_sklearn_json
    m = from_sklearn_json(src)

    def broken(a, b):
        raise OSError("disk full")
    monkeypatch.setattr(cli.os, "replace", broken)
    with pytest.raises(OSError, match="disk full"):
        cli.write_atomically(m, tmp_path / "x.json")
    assert sorted(os.listdir(tmp_path)) == ["costs.csv", "forest.json", "val.csv"]


def test_compress_reads_a_header_by_name(files, tmp_path, capsys):
    """Swapped columns under a header give the same table as the file in order
    (the CSV is read by name, as skinflint predict reads it)."""
    src, costs, _ = files
    names = ["x0", "x1", "x2", "x3"]
    inorder, swapped = tmp_path / "in.csv", tmp_path / "sw.csv"
    inorder.write_text(",".join(names + ["label"]) + "\n" + "\n".join(
        ",".join(f"{v:.9g}" for v in row) + f",{lab}" for row, lab in zip(X[200:], Y[200:])))
    perm = [3, 1, 0, 2]
    swapped.write_text(",".join([names[j] for j in perm] + ["label"]) + "\n" + "\n".join(
        ",".join(f"{row[j]:.9g}" for j in perm) + f",{lab}" for row, lab in zip(X[200:], Y[200:])))
    outs = []
    for data in (inorder, swapped):
        args = _parse([str(src), "--from", "sklearn-json", "--data", str(data), "--costs", str(costs),
                       "--lambda", "0.01", "-o", str(tmp_path / f"{data.stem}.json")])
        assert args.func(args) == 0
        outs.append(capsys.readouterr().out)
    assert outs[0] == outs[1].replace("sw.json", "in.json")
