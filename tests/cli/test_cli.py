import subprocess
import sys

import numpy as np
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
    for cmd in ("train", "compile", "verify", "inspect", "plot", "predict", "demo"):
        assert cmd in r.stdout


def _write_training_files(tmp_path):
    import numpy as np

    from skinflint.datasets import load_breast_cancer
    d = load_breast_cancer()
    names = [n.replace(" ", "_") for n in d.feature_names]
    data = tmp_path / "bc.csv"
    np.savetxt(data, np.c_[d.X, d.y], delimiter=",", header=",".join(names + ["label"]), comments="",
               fmt="%.9g")
    costs = tmp_path / "costs.csv"
    lines = ["name,cost,group"]
    lines += [f"{n},{c},{d.group_names[g].replace(' ', '_')}" for n, c, g in
              zip(names, d.feature_costs, d.feature_groups)]
    lines += [f"group:{n.replace(' ', '_')},{c}," for n, c in zip(d.group_names, d.group_costs)]
    costs.write_text("\n".join(lines) + "\n")
    return data, costs


def test_train_compile_verify_plot_round_trip(tmp_path, capsys):
    data, costs = _write_training_files(tmp_path)
    model = tmp_path / "m.json"
    assert main(["train", "--data", str(data), "--costs", str(costs), "--lambda", "0.003",
                 "--trees", "30", "-o", str(model)]) == 0
    assert "static cost" in capsys.readouterr().out
    assert main(["compile", str(model), "--target", "c", "-o", str(tmp_path / "c")]) == 0
    assert (tmp_path / "c" / "model.c").exists()
    assert main(["compile", str(model), "--target", "onnx", "-o", str(tmp_path / "m.onnx")]) == 0
    import onnx
    onnx.checker.check_model(onnx.load(str(tmp_path / "m.onnx")), full_check=True)
    assert main(["verify", str(model), "--data", str(data), "--json", str(tmp_path / "r.json")]) == 0
    import json
    assert json.loads((tmp_path / "r.json").read_text())["ok"] is True
    assert main(["plot", "costs", str(model), "--data", str(data), "-o", str(tmp_path / "p.png")]) == 0
    assert (tmp_path / "p.png").exists()


def test_cost_file_that_does_not_match_the_data(tmp_path, capsys):
    data, _ = _write_training_files(tmp_path)
    bad = tmp_path / "bad.csv"
    bad.write_text("name,cost,group\nfoo,1,\n")
    assert main(["train", "--data", str(data), "--costs", str(bad), "-o", str(tmp_path / "m.json")]) == 1
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith(f"skinflint: error: {bad}: feature costs do not match the "
                                                f"columns of {data} by name: only in the costs: ['foo']; "
                                                f"only in the columns of {data}: ['mean_radius', ")
    assert err[0].endswith("... (+20)] (1 costs, 30 columns)")


def test_unknown_target_and_runtime_are_usage_errors_naming_the_choices(capsys):
    with pytest.raises(SystemExit) as e:
        main(["compile", f"{EXAMPLES}/trees.json", "--target", "wasm", "-o", "x"])
    assert e.value.code == 2
    assert "invalid choice: 'wasm'" in capsys.readouterr().err
    with pytest.raises(SystemExit) as e:
        main(["verify", f"{EXAMPLES}/trees.json", "--runtimes", "onnx,tpu"])
    assert e.value.code == 2
    assert "unknown runtime tpu; expected names from reference, onnx, c, c-lazy" in capsys.readouterr().err


def test_verify_legacy_backends_flag_says_what_to_write(capsys):
    assert main(["verify", f"{EXAMPLES}/trees.json", "--backends", "c"]) == 1
    assert capsys.readouterr().err.strip() == "skinflint: error: --backends was renamed: write --runtimes c"


def test_demo_quick_runs_end_to_end(tmp_path, capsys):
    assert main(["demo", "--quick", "--out", str(tmp_path / "demo")]) == 0
    out = capsys.readouterr().out
    assert "parity OK" in out
    assert "c-lazy" in out and "onnx " in out and "MISMATCH" not in out
    assert (tmp_path / "demo" / "model.json").exists()
    assert (tmp_path / "demo" / "model.onnx").exists()
    assert (tmp_path / "demo" / "c" / "spam.c").exists() or (tmp_path / "demo" / "c" / "model.c").exists()


def test_compile_onnx_target_no_ml_ops_has_no_tree_operator(tmp_path):
    onnx = pytest.importorskip("onnx")
    out = tmp_path / "m.onnx"
    assert main(["compile", f"{EXAMPLES}/trees.json", "--target", "onnx", "--onnx-target", "no-ml-ops",
                 "-o", str(out)]) == 0
    domains = {n.domain for n in onnx.load(out).graph.node}
    assert "ai.onnx.ml" not in domains
    default = tmp_path / "d.onnx"
    assert main(["compile", f"{EXAMPLES}/trees.json", "--target", "onnx", "-o", str(default)]) == 0
    assert "ai.onnx.ml" in {n.domain for n in onnx.load(default).graph.node}


def test_compile_onnx_batch_hint_builds_the_latency_graph(tmp_path, capsys):
    onnx = pytest.importorskip("onnx")
    from skinflint import ir
    from skinflint.compilers.onnx import compile_onnx
    m = ir.load(f"{EXAMPLES}/trees.json")
    out = tmp_path / "l.onnx"
    assert main(["compile", f"{EXAMPLES}/trees.json", "--target", "onnx", "--batch-hint", "1", "-o", str(out)]) == 0
    got = onnx.load(out)
    want = compile_onnx(m, batch_hint=1)
    assert len(got.graph.node) == len(want.graph.node) != len(compile_onnx(m).graph.node)
    assert main(["compile", f"{EXAMPLES}/trees.json", "--target", "onnx", "--batch-hint", "0", "-o", str(out)]) == 1
    assert "batch_hint" in capsys.readouterr().err


def test_compress_is_a_command(tmp_path, capsys):
    sklearn_ensemble = pytest.importorskip("sklearn.ensemble")
    from skinflint.importers.sklearn_json import to_json
    rng = np.random.default_rng(5)
    X = rng.normal(size=(300, 3)).astype(np.float32)
    y = (X[:, 0] > 0).astype(int)
    to_json(sklearn_ensemble.RandomForestClassifier(8, max_depth=3, random_state=0).fit(X, y), tmp_path / "f.json")
    np.savetxt(tmp_path / "val.csv", np.c_[X, y], delimiter=",")
    out = tmp_path / "small.json"
    assert main(["compress", str(tmp_path / "f.json"), "--from", "sklearn-json", "--data", str(tmp_path / "val.csv"),
                 "--lambda", "0.05", "-o", str(out)]) == 0
    assert "before (val)" in capsys.readouterr().out and out.exists()


def test_train_a_ranker_from_an_svmlight_ltr_file_with_a_cost_file(tmp_path, capsys):
    """README's ranking workflow: svmlight with qid:, a cost file, --objective lambdarank;
    the model reports NDCG@5 (its exported model's, on the reference) and verifies exactly."""
    from skinflint import datasets, ir
    from skinflint.metrics import ndcg
    from skinflint.runtimes.reference import ReferenceRuntime
    ds = datasets.make_yahoo_like(n_queries=40, n_features=12, mean_docs=10, seed=1)
    lines = [f"{int(y)} qid:{int(q)} " + " ".join(f"{j + 1}:{v:.9g}" for j, v in enumerate(x) if v != 0)
             for x, y, q in zip(ds.X, ds.y, ds.qid)]
    (tmp_path / "train.svm").write_text("\n".join(lines) + "\n")
    (tmp_path / "costs.csv").write_text("name,cost,group\n" + "".join(
        f"x{j},{c:g},\n" for j, c in enumerate(ds.feature_costs)))
    out = tmp_path / "rank.json"
    assert main(["train", "--data", str(tmp_path / "train.svm"), "--costs", str(tmp_path / "costs.csv"),
                 "--objective", "lambdarank", "--trees", "15", "--depth", "3", "-o", str(out)]) == 0
    text = capsys.readouterr().out
    assert "(ranking)" in text and "NDCG@5" in text
    reported = float(text.split("NDCG@5 ")[1].split()[0])
    m = ir.load(out)
    scores = ReferenceRuntime(m).predict(ds.X).scores[:, 0]
    assert reported == pytest.approx(ndcg(ds.y, scores, ds.qid, k=5), abs=5e-5)   # printed to 4 decimals
    assert main(["verify", str(out), "--runtimes", "c,c-lazy"]) == 0
    # without query groups a ranker is refused in one line
    (tmp_path / "plain.svm").write_text("\n".join(ln.replace(f" qid:{int(q)}", "") for ln, q in zip(lines, ds.qid)))
    assert main(["train", "--data", str(tmp_path / "plain.svm"), "--objective", "lambdarank", "-o",
                 str(tmp_path / "x.json")]) == 1
    assert "ranking needs query groups" in capsys.readouterr().err
    # Early Exit's ranker: the per-query rule is a query-level model the C compiler ranks with
    # <prefix>_rank_query and the ONNX compiler with its query graph, one query per run; --exit-rule row
    # gives a per-row cascade that every backend compiles and verifies
    args = ["train", "--data", str(tmp_path / "train.svm"), "--costs", str(tmp_path / "costs.csv"),
            "--objective", "lambdarank", "--trainer", "early-exit", "--trees", "20", "--depth", "3"]
    assert main(args + ["-o", str(tmp_path / "q.json")]) == 0
    note = capsys.readouterr().out
    assert "the generated C (<prefix>_rank_query) and ONNX" in note and "per-row predict refuses it" in note
    assert ir.load(tmp_path / "q.json").scores_queries
    assert main(["compile", str(tmp_path / "q.json"), "--target", "c", "-o", str(tmp_path / "qc")]) == 0
    capsys.readouterr()
    assert "_rank_query(" in "".join(p.read_text() for p in (tmp_path / "qc").glob("*.h"))
    assert main(["compile", str(tmp_path / "q.json"), "--target", "onnx", "-o", str(tmp_path / "q.onnx")]) == 0
    capsys.readouterr()
    import onnx
    q_onnx = onnx.load(str(tmp_path / "q.onnx"))
    assert [o.name for o in q_onnx.graph.output][-3:] == ["order", "n_trees", "dropped"]
    assert main(args + ["--exit-rule", "row", "-o", str(tmp_path / "r.json")]) == 0
    assert "note:" not in capsys.readouterr().out
    assert not ir.load(tmp_path / "r.json").scores_queries
    assert main(["verify", str(tmp_path / "r.json"), "--runtimes", "c"]) == 0


def test_a_non_numeric_cell_is_named_with_its_line_and_column(tmp_path, capsys):
    data = tmp_path / "d.csv"
    data.write_text("a,b,label\n1,2,0\n\n3,oops,1\n")       # the blank line still counts as a line
    assert main(["train", "--data", str(data), "-o", str(tmp_path / "m.json")]) == 1
    err = capsys.readouterr().err.strip()
    assert err == f"skinflint: error: {data}: line 4, column 2: 'oops' is not a number"


def _category_csv(tmp_path):
    """A label that is the category's membership in {3, 17, 42} (no threshold
    on the code separates it) plus a noise column; header names."""
    rng = np.random.default_rng(0)
    code = rng.integers(0, 60, 3000)
    noise = rng.normal(size=3000)
    y = np.isin(code, [3, 17, 42]).astype(int)
    data = tmp_path / "cat.csv"
    np.savetxt(data, np.c_[code, noise, y], delimiter=",", fmt="%.6g", header="shop,noise,label", comments="")
    return data


def test_train_with_categorical_columns_learns_a_set_split(tmp_path, capsys):
    from skinflint import ir
    data = _category_csv(tmp_path)
    out = tmp_path / "m.json"
    assert main(["train", "--data", str(data), "--trainer", "gbrt", "--categorical", "shop", "--trees", "20",
                 "--learning-rate", "0.5", "--depth", "2", "-o", str(out)]) == 0
    model = ir.load(out)
    bank = model.nodes[model.output]
    assert bank.categories is not None
    # the root of the first tree splits "shop" on a set; the 3 members lie on one side
    cat = np.flatnonzero(bank.categories.is_categorical)
    assert bank.feature[cat].tolist() and set(bank.feature[cat].tolist()) == {0}
    root = int(bank.roots[0])
    assert bank.categories.is_categorical[root]
    codes = set(bank.categories.codes(root).tolist())
    assert {3, 17, 42} <= codes or not ({3, 17, 42} & codes)
    line = capsys.readouterr().out.splitlines()[0]
    assert float(line.rsplit(" ", 1)[1]) > 0.99   # the training score: a set split separates the classes


@pytest.mark.parametrize("argv, words", [
    (["--trainer", "gbrt", "--categorical", "colour"], "--categorical: no column 'colour'"),
    (["--trainer", "cstc", "--categorical", "shop"], "--categorical: cstc has no category-set splits"),
])
def test_train_categorical_errors_are_one_line(tmp_path, capsys, argv, words):
    data = _category_csv(tmp_path)
    assert main(["train", "--data", str(data), "-o", str(tmp_path / "m.json"), *argv]) == 1
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and words in err[0], err
    assert not (tmp_path / "m.json").exists()


class _Built(Exception):
    """Stops `train` once its estimator is built: the test looks at the parameters, not the fit."""


@pytest.mark.parametrize("trainer", ["cstc", "astc", "afr", "cronus", "early-exit"])
def test_train_options_left_out_are_the_trainers_own_defaults(trainer, tmp_path, monkeypatch):
    # `--depth 4`, `--trees 100`, ... used to be the command's defaults and overrode every trainer's own
    # (CSTC's depth "auto", chosen on validation, was never used from the command line)
    from skinflint.trainers import TRAINERS, registry
    built = {}
    real = registry.TrainerSpec.estimator

    def capture(self, task="classification", **params):
        built["est"] = real(self, task, **params)
        raise _Built
    monkeypatch.setattr(registry.TrainerSpec, "estimator", capture)
    data = _category_csv(tmp_path)
    with pytest.raises(_Built):
        main(["train", "--data", str(data), "--trainer", trainer, "-o", str(tmp_path / "m.json")])
    got = built["est"].get_params()
    own = TRAINERS[trainer].classifier().get_params()
    for name in ("max_depth", "n_estimators", "learning_rate", "threshold"):
        if name in own:
            assert got[name] == own[name], (trainer, name)
    with pytest.raises(_Built):
        main(["train", "--data", str(data), "--trainer", trainer, "--depth", "2", "-o", str(tmp_path / "m.json")])
    assert built["est"].get_params()["max_depth"] == 2
