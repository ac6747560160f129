"""skinflint import: a model file plus a cost CSV gives the same model as the
Python importer, with the file's costs and groups."""
import numpy as np
import pytest

lgb = pytest.importorskip("lightgbm")
xgb = pytest.importorskip("xgboost")

from skinflint import ir  # noqa: E402
from skinflint.cli import main  # noqa: E402
from skinflint.importers import from_lightgbm, from_xgboost  # noqa: E402

from ._rows import data  # noqa: E402

X, Y_BIN, _, _ = data(n=200, F=3)
CSV = "name,cost,group\nColumn_0,1,\nColumn_1,2,g\nColumn_2,3,g\ngroup:g,5,\n"


@pytest.mark.parametrize("source", ["lightgbm", "xgboost"])
def test_import_command(tmp_path, source, capsys):
    costs = tmp_path / "costs.csv"
    costs.write_text(CSV if source == "lightgbm" else CSV.replace("Column_", "f"))
    src = tmp_path / ("m.txt" if source == "lightgbm" else "m.ubj")
    if source == "lightgbm":
        b = lgb.train({"objective": "binary", "num_leaves": 6, "verbose": -1, "num_threads": 1},
                      lgb.Dataset(X, Y_BIN), 5)
        b.save_model(src)
        want = from_lightgbm(b, str(costs))
    else:
        b = xgb.train({"objective": "binary:logistic", "max_depth": 3, "nthread": 1},
                      xgb.DMatrix(X, label=Y_BIN), 5)
        b.save_model(src)
        want = from_xgboost(b, np.array([1.0, 2.0, 3.0]))
    out = tmp_path / "model.json"
    assert main(["import", str(src), "--from", source, "--costs", str(costs), "-o", str(out)]) == 0
    got = ir.load(out)
    assert np.array_equal(got.feature_costs, [1.0, 2.0, 3.0])
    assert [g.cost for g in got.groups] == [5.0] and list(got.feature_groups) == [-1, 0, 0]
    assert np.array_equal(got.nodes[0].threshold, want.nodes[0].threshold)
    assert np.array_equal(got.nodes[0].value, want.nodes[0].value)
    assert "trees" in capsys.readouterr().out


def test_import_command_errors_are_one_line(tmp_path, capsys):
    assert main(["import", str(tmp_path / "none.txt"), "--from", "lightgbm", "-o", str(tmp_path / "m.json")]) == 1
    err = capsys.readouterr().err
    assert err.startswith("skinflint: error:") and "no such LightGBM model file" in err
