"""``skinflint train --categorical`` with the trainers built on the booster's
tree banks (issue #34): Early Exit, Cronus and CSCC take the option as GBRT
does, and a trainer without set splits names those that have them."""
import numpy as np
import pytest

from skinflint.cli import main


def _category_csv(tmp_path):
    """A label that is the category's membership in 25 scattered codes of
    100 (no threshold on the code separates it) plus a noise column."""
    rng = np.random.default_rng(0)
    code = rng.integers(0, 100, 3000)
    hidden = np.random.default_rng(7).choice(100, 25, replace=False)
    y = np.isin(code, hidden).astype(int)
    data = tmp_path / "cat.csv"
    np.savetxt(data, np.c_[code, rng.normal(size=3000), y], delimiter=",", fmt="%.6g", header="shop,noise,label",
               comments="")
    return data


@pytest.mark.parametrize("trainer", ["early-exit", "cronus", "cscc"])
def test_train_categorical_with_tree_bank_trainers(tmp_path, capsys, trainer):
    from skinflint import ir
    data = _category_csv(tmp_path)
    out = tmp_path / "m.json"
    assert main(["train", "--data", str(data), "--trainer", trainer, "--categorical", "shop", "--trees", "10",
                 "--learning-rate", "0.5", "--depth", "2", "--lambda", "1e-6", "-o", str(out)]) == 0
    model = ir.load(out)
    assert any(getattr(n, "categories", None) is not None and n.categories.is_categorical.any()
               for n in model.nodes)
    line = capsys.readouterr().out.splitlines()[0]
    # the training score: set splits separate the classes (a numeric 10-tree model of depth 2 cannot)
    assert float(line.rsplit(" ", 1)[1]) > 0.99, line


def test_a_trainer_without_set_splits_names_those_with_them(tmp_path, capsys):
    data = _category_csv(tmp_path)
    assert main(["train", "--data", str(data), "--trainer", "cstc", "--categorical", "shop",
                 "-o", str(tmp_path / "m.json")]) == 1
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "cstc has no category-set splits" in err[0], err
    for name in ("cronus", "cscc", "early-exit", "gbrt", "greedy-miser"):
        assert name in err[0]
