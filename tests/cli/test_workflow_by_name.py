"""Issue 32 item 4: the README's command-line workflow on a CSV with a
header, a cost file listing the features in another order, and test rows
whose columns are swapped; every output is checked by feature name."""
import json
import re

import numpy as np
import pytest

from skinflint import ir
from skinflint.cli import main

NAMES = ["age", "income", "blood_test", "mri"]
COSTS = {"age": 1.0, "income": 2.0, "blood_test": 10.0, "mri": 50.0}


def _files(tmp_path):
    rng = np.random.default_rng(0)
    X = rng.normal(size=(600, 4))
    # the label needs the cheap age and the costly mri; income and blood_test are noise
    y = (X[:, 0] + X[:, 3] > 0).astype(int)
    header = ",".join(NAMES + ["label"])
    train, test, swapped = tmp_path / "train.csv", tmp_path / "test.csv", tmp_path / "swapped.csv"
    np.savetxt(train, np.c_[X[:400], y[:400]], delimiter=",", header=header, comments="", fmt="%.9g")
    np.savetxt(test, np.c_[X[400:], y[400:]], delimiter=",", header=header, comments="", fmt="%.9g")
    order = [3, 0, 2, 1]   # mri, age, blood_test, income; then the label
    np.savetxt(swapped, np.c_[X[400:, order], y[400:]], delimiter=",",
               header=",".join([NAMES[i] for i in order] + ["label"]), comments="", fmt="%.9g")
    costs = tmp_path / "costs.csv"   # another order than the data's columns, and a group
    costs.write_text("name,cost,group\nmri,50,scan\nblood_test,10,\nincome,2,\nage,1,\ngroup:scan,5\n")
    return train, test, swapped, costs


def test_the_readme_workflow_goes_by_name(tmp_path, capsys):
    train, test, swapped, costs = _files(tmp_path)
    model_path = tmp_path / "model.json"
    # train: the cost file is matched to the header by name
    assert main(["train", "--data", str(train), "--costs", str(costs), "--lambda", "1e-3", "--trees", "20",
                 "-o", str(model_path)]) == 0
    capsys.readouterr()
    m = ir.load(model_path)
    assert m.feature_names == NAMES
    assert dict(zip(m.feature_names, m.feature_costs.tolist())) == COSTS
    assert [(f.name, None if f.group is None else m.groups[f.group].name) for f in m.features] == [
        ("age", None), ("income", None), ("blood_test", None), ("mri", "scan")]
    # inspect names the features and their costs
    assert main(["inspect", str(model_path)]) == 0
    out = capsys.readouterr().out
    used = dict(re.findall(r"^  (\w+): ([\d.]+)", out, re.M))
    assert used and all(float(c) == COSTS[n] for n, c in used.items())
    assert "mri" in used and "[group scan]" in out
    # compile to C: index constants and a names table in the header, by name
    assert main(["compile", str(model_path), "--target", "c", "-o", str(tmp_path / "c")]) == 0
    capsys.readouterr()
    header = (tmp_path / "c" / "model.h").read_text()
    for i, n in enumerate(NAMES):
        assert re.search(rf"#define MODEL_FEATURE_{n.upper()}\s+{i}\b", header), n
    source = (tmp_path / "c" / "model.c").read_text()
    assert re.search(r'model_feature_names\[\d+\]\s*=\s*\{\s*"age",\s*"income",\s*"blood_test",\s*"mri"',
                     source)
    # compile to ONNX: the names and costs in the metadata
    assert main(["compile", str(model_path), "--target", "onnx", "-o", str(tmp_path / "m.onnx")]) == 0
    capsys.readouterr()
    import onnx
    props = {p.key: p.value for p in onnx.load(str(tmp_path / "m.onnx")).metadata_props}
    assert [(f["name"], f["cost"]) for f in json.loads(props["skinflint.features"])] == list(COSTS.items())
    # predict: swapped columns (header and data) give the same rows as the original order
    assert main(["predict", str(model_path), "--data", str(test)]) == 0
    straight = capsys.readouterr().out
    assert main(["predict", str(model_path), "--data", str(swapped)]) == 0
    assert capsys.readouterr().out == straight and len(straight.splitlines()) == 201
    # read by position, the swapped file would give other answers: the check above can fail
    from skinflint.datasets import read_csv_matrix
    M, _ = read_csv_matrix(swapped)
    from skinflint.runtimes.reference import predict
    by_position = predict(m, M[:, :4].astype(np.float32))
    rows = [ln.split(",") for ln in straight.splitlines()[1:]]
    assert any(float(r[2]) != c for r, c in zip(rows, by_position.cost))
    # verify with the swapped rows
    assert main(["verify", str(model_path), "--data", str(swapped), "--runtimes", "onnx",
                 "--json", str(tmp_path / "r.json")]) == 0
    assert json.loads((tmp_path / "r.json").read_text())["ok"] is True
    capsys.readouterr()
    # plot where the cost goes, from the swapped rows
    pytest.importorskip("matplotlib")
    assert main(["plot", "costs", str(model_path), "--data", str(swapped), "-o", str(tmp_path / "p.png")]) == 0
    assert (tmp_path / "p.png").stat().st_size > 0


def test_a_header_that_does_not_name_the_features_is_refused_naming_them(tmp_path, capsys):
    train, test, swapped, costs = _files(tmp_path)
    model_path = tmp_path / "model.json"
    assert main(["train", "--data", str(train), "--costs", str(costs), "--trees", "3", "-o", str(model_path)]) == 0
    bad = tmp_path / "bad.csv"
    bad.write_text("age,income,blood,mri\n1,2,3,4\n")
    capsys.readouterr()
    assert main(["predict", str(model_path), "--data", str(bad)]) == 1
    err = capsys.readouterr().err.strip()
    assert err == (f"skinflint: error: {bad}: the header does not name the model's features: missing "
                   "['blood_test']; not in the model: ['blood'] (one extra column, last, is taken as a label)")


def test_a_cost_file_naming_other_features_is_refused_listing_both_sides(tmp_path, capsys):
    train, _, _, _ = _files(tmp_path)
    costs = tmp_path / "other.csv"
    costs.write_text("name,cost\nmri,50\nblood,10\nincome,2\nage,1\n")
    assert main(["train", "--data", str(train), "--costs", str(costs), "-o", str(tmp_path / "m.json")]) == 1
    err = capsys.readouterr().err.strip()
    assert err == (f"skinflint: error: {costs}: feature costs do not match the columns of {train} by name: "
                   f"only in the costs: ['blood']; only in the columns of {train}: ['blood_test'] "
                   "(4 costs, 4 columns)")
    assert not (tmp_path / "m.json").exists()
