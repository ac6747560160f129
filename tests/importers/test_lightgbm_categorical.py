"""LightGBM categorical splits (issue 34): on float32 rows (test rows, every
category code, codes past the largest and past each bitset word, large
codes, negatives, -0.0, non-integers, NaN, +-inf, and verify's adversarial
rows) the imported model's float64 margin is LightGBM's
``predict(raw_score=True)`` bit for bit, for models trained with
``categorical_feature`` under several cat_l2 / cat_smooth / one-hot
settings and with 300+ categories (bitsets of 11 words); a hand-written
model checks each edge value against LightGBM's documented rule; damaged
category sets are refused naming the tree and the field."""
import re

import numpy as np
import pytest

lgb = pytest.importorskip("lightgbm")

from skinflint import ir  # noqa: E402
from skinflint.cli import main  # noqa: E402
from skinflint.importers.lightgbm import from_lightgbm  # noqa: E402
from skinflint.runtimes.reference import ReferenceRuntime  # noqa: E402
from skinflint.verify import verify  # noqa: E402

from ._categorical_rows import categorical_rows, special_values  # noqa: E402
from ._rows import check_rows, same_bits64  # noqa: E402
from .test_lightgbm import check_against_lightgbm  # noqa: E402

BASE = {"num_leaves": 12, "verbose": -1, "num_threads": 1, "min_data_in_leaf": 5, "min_data_per_group": 5}
CAT = [0, 2, 3]                                     # categorical columns of cat_data


def cat_data(n=3000, n_cat=40, seed=0):
    """float32 X [n, 5]: column 0 has n_cat categories, 2 has 7, 3 has 3
    (one-hot splits), 1 and 4 are numeric; NaN in every column and a few
    negative codes (LightGBM trains them as missing).  y_reg, y_bin, y_3."""
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, 5)).astype(np.float32)
    X[:, 0] = rng.integers(0, n_cat, n)
    X[:, 2] = rng.integers(0, 7, n)
    X[:, 3] = rng.integers(0, 3, n)
    effect = rng.normal(size=n_cat)
    y = effect[X[:, 0].astype(int)] + 0.5 * X[:, 1] + (X[:, 2] == 3) - 0.7 * (X[:, 3] == 1)
    y = y + 0.1 * rng.normal(size=n)
    X[rng.random(X.shape) < 0.04] = np.nan
    X[rng.random(n) < 0.01, 0] = -1.0
    return X, y, (y > np.median(y)).astype(int), np.digitize(y, np.quantile(y, [1 / 3, 2 / 3]))


X, Y_REG, Y_BIN, Y_3 = cat_data()
XW, YW_REG, YW_BIN, _ = cat_data(n=6000, n_cat=340, seed=1)


def _rows(m, X, n_cat, seed=0):
    """X, every code and edge value in each categorical column, and
    verify's adversarial rows (every threshold, +-1 ulp, NaN, +-inf)."""
    R = categorical_rows(X, CAT, [n_cat, 7, 3], np.random.default_rng(seed))
    return np.concatenate([X, R, check_rows(m, X, finite=False)])


def _n_categorical(b):
    """LightGBM's own count of categorical splits over the model's trees."""
    return sum(int(v) for v in re.findall(r"^num_cat=(\d+)$", b.model_to_string(), re.M))


@pytest.mark.parametrize("params,wide", [
    ({"objective": "binary"}, False),
    ({"objective": "regression", "cat_l2": 1.0, "cat_smooth": 1.0}, False),
    ({"objective": "regression", "cat_l2": 0.1, "cat_smooth": 50.0, "max_cat_to_onehot": 8}, False),
    ({"objective": "multiclass", "num_class": 3}, False),
    ({"objective": "binary", "zero_as_missing": True}, False),
    ({"objective": "regression", "use_missing": False}, False),
    ({"objective": "regression", "boosting": "rf", "bagging_freq": 1, "bagging_fraction": 0.5}, False),
    ({"objective": "regression", "cat_l2": 1.0, "cat_smooth": 1.0, "max_cat_threshold": 128,
      "min_data_per_group": 2}, True),
    ({"objective": "binary", "cat_l2": 0.0, "cat_smooth": 0.0, "max_cat_threshold": 200,
      "min_data_per_group": 1}, True),
], ids=["binary", "cat_l2-cat_smooth", "onehot-8", "multiclass", "zero-as-missing", "no-missing", "rf",
        "340-categories", "340-categories-binary"])
def test_margins_are_lightgbms_raw_score_bit_for_bit(params, wide):
    Xt, n_cat = (XW, 340) if wide else (X, 40)
    y = {"binary": YW_BIN if wide else Y_BIN, "multiclass": Y_3}.get(params["objective"],
                                                                      YW_REG if wide else Y_REG)
    if params.get("zero_as_missing"):                 # zeros in the numeric column, around the band
        Xt = Xt.copy()
        Xt[::5, 1] = 0.0
    b = lgb.train({**BASE, **params}, lgb.Dataset(Xt, y, categorical_feature=CAT), 12)
    m = from_lightgbm(b)
    cats = m.nodes[0].categories
    assert cats is not None and cats.rule == "truncate"
    assert int(cats.is_categorical.sum()) >= _n_categorical(b) > 0
    assert not cats.other_left.any() and not m.nodes[0].missing_left[cats.is_categorical].any()
    if wide:                                          # a set reaches past category 320: 11 words
        assert cats.words.max() >= 11
    R = _rows(m, Xt, n_cat)
    check_against_lightgbm(b, m, R)


def test_categorical_nodes_are_lightgbms_splits():
    """Without zero_as_missing every LightGBM node is one IR node in order:
    the categorical nodes are LightGBM's decision_type bit-0 nodes, their
    sets LightGBM's own words."""
    b = lgb.train({**BASE, "objective": "regression"}, lgb.Dataset(X, Y_REG, categorical_feature=CAT), 3)
    d = b.dump_model()
    node = 0
    m = from_lightgbm(b)
    cats = m.nodes[0].categories
    for tree in d["tree_info"]:
        stack = [tree["tree_structure"]]
        while stack:                                   # split_index: LightGBM's node index
            s = stack.pop()
            if "split_index" not in s:
                continue
            m_node = node + s["split_index"]
            if s["decision_type"] == "==":
                want = sorted(int(c) for c in s["threshold"].split("||"))
                assert cats.codes(m_node).tolist() == want
                assert m.nodes[0].feature[m_node] == s["split_feature"]
            else:
                assert cats.words[m_node] == 0
            stack += [s["left_child"], s["right_child"]]
        node += 2 * tree["num_leaves"] - 1


# -- a hand-written model: each edge value against LightGBM's documented rule --------------------

SET = (0, 1, 5, 31, 32, 63, 64, 95)                  # 3 words, bit 31 set in each (words >= 2**31)


def _model_text(words_per_tree):
    """A LightGBM text model of one feature and one tree per entry: a
    categorical root whose bitset is the entry (uint32 words), leaves 1 (left)
    and -1 (right); tree_sizes counts each tree's bytes as LightGBM's writer."""
    blocks = []
    for i, w in enumerate(words_per_tree):
        body = (f"Tree={i}\nnum_leaves=2\nnum_cat=1\nsplit_feature=0\nsplit_gain=1\nthreshold=0\n"
                f"decision_type=1\nleft_child=-1\nright_child=-2\nleaf_value=1 -1\nleaf_weight=1 1\n"
                f"leaf_count=1 1\ninternal_value=0\ninternal_weight=2\ninternal_count=2\n"
                f"cat_boundaries=0 {len(w)}\ncat_threshold={' '.join(str(int(x)) for x in w)}\n"
                f"is_linear=0\nshrinkage=1\n\n\n")
        blocks.append(body)
    head = ("tree\nversion=v4\nnum_class=1\nnum_tree_per_iteration=1\nlabel_index=0\nmax_feature_idx=0\n"
            "objective=regression\nfeature_names=c\nfeature_infos=0:1\n"
            f"tree_sizes={' '.join(str(len(b)) for b in blocks)}\n\n")
    return (head + "".join(blocks) + "end of trees\n\nfeature_importances:\n\nparameters:\n"
            "[objective: regression]\nend of parameters\n\npandas_categorical:null\n")


def _left_by_lightgbms_rule(x, codes):
    """LightGBM 4's Tree::CategoricalDecision, written out: NaN right; the C
    cast (int)x truncates toward 0; negative ints right (x <= -1; x >= 2**31
    and +-inf, where the cast is undefined, give INT_MIN on x86 and INT_MAX
    on ARM, negative or past every bitset, right either way); left iff the
    int is in the set."""
    x = float(x)
    if np.isnan(x) or x <= -1 or x >= 2.0 ** 31:
        return False
    return int(x) in codes


def test_every_edge_value_goes_where_lightgbm_sends_it():
    one = np.zeros(1, np.uint32)
    one[0] = 1                                         # {0}: -0.5, -0.0, 1e-36 are code 0
    words = [np.bitwise_or.reduce([np.uint32(1) << np.uint32(c % 32) if c // 32 == k else np.uint32(0)
                                   for c in SET]) for k in range(3)]
    text = _model_text([np.array(words, np.uint32), one, np.zeros(1, np.uint32)])
    b = lgb.Booster(model_str=text)
    m = from_lightgbm(text)
    assert m.nodes[0].categories.words.tolist() == [3, 0, 0, 1, 0, 0, 1, 0, 0]
    x = np.concatenate([np.arange(200, dtype=np.float32), special_values(96), special_values(1),
                        np.float32([2.0 ** 31 - 128, -0.999999, 95.99, 96.0, 4e9])])[:, None]
    got = ReferenceRuntime(m).predict(x).scores[:, 0]
    raw = b.predict(x, raw_score=True)
    assert same_bits64(got, raw)
    # the sides, from the rule alone: tree 0 (SET), tree 1 ({0}), tree 2 (empty: all right)
    want = np.array([(1.0 if _left_by_lightgbms_rule(v, SET) else -1.0)
                     + (1.0 if _left_by_lightgbms_rule(v, {0}) else -1.0) - 1.0 for v in x[:, 0]])
    assert np.array_equal(raw, want), x[raw != want, 0]


def test_a_set_wider_than_the_ir_holds_is_refused():
    from skinflint.ir.codes import MAX_CATEGORY_WORDS
    wide = np.zeros(MAX_CATEGORY_WORDS + 1, np.uint32)
    wide[-1] = 1
    with pytest.raises(ValueError, match="node 0 of tree 0 tests categories up to"):
        from_lightgbm(_model_text([wide]))


# -- verify, the CLI, damaged files ---------------------------------------------------------------

@pytest.fixture(scope="module")
def booster():
    return lgb.train({**BASE, "objective": "multiclass", "num_class": 3, "num_leaves": 6},
                     lgb.Dataset(X, Y_3, categorical_feature=CAT), 4)


def test_verify_round_trip(booster):
    m = from_lightgbm(booster)
    assert ir.to_dict(m)["version"] == 4
    again = ir.from_json(ir.to_json(m))
    R = _rows(m, X[:200], 40)
    assert same_bits64(ReferenceRuntime(again).predict(R).scores, booster.predict(R, raw_score=True))
    rep = verify(m, R[::3])
    assert rep.ok, rep.table()


def test_import_command(booster, tmp_path, capsys):
    src, out = tmp_path / "m.txt", tmp_path / "model.json"
    booster.save_model(src)
    assert main(["import", str(src), "--from", "lightgbm", "-o", str(out)]) == 0
    assert "trees" in capsys.readouterr().out
    got = ir.load(out)
    assert ir.to_json(got) == ir.to_json(from_lightgbm(booster))
    R = _rows(got, X[:100], 40)
    assert same_bits64(ReferenceRuntime(got).predict(R).scores, booster.predict(R, raw_score=True))


def _damaged(text):
    """(mutant, tree, field) for each categorical line of each tree: the line
    removed, one number removed, an offset or a set index past the end."""
    lines = text.split("\n")
    tree = None
    out = []
    for j, ln in enumerate(lines):
        if ln.startswith("Tree="):
            tree = int(ln[5:])
        key, _, val = ln.partition("=")
        if key not in ("cat_boundaries", "cat_threshold", "num_cat") or tree is None:
            continue
        put = lambda new, j=j: "\n".join(lines[:j] + ([new] if new is not None else []) + lines[j + 1:])  # noqa: E731
        toks = val.split(" ")
        out.append((put(None), tree, key))
        if len(toks) > 1:
            out.append((put(key + "=" + " ".join(toks[1:])), tree, key))
        if key == "cat_boundaries":                    # same length: only the checks can tell
            out.append((put(key + "=" + " ".join(toks[:-1] + [str(int(toks[-1]) + 1)[-len(toks[-1]):]])),
                        tree, "cat_"))
            out.append((put(key + "=1" + val[1:]), tree, "cat_boundaries"))
        if key == "num_cat":
            out.append((put(key + "=" + str(int(val) + 1)[-len(val):]), tree, "num_cat"))
    return out


def test_damaged_category_sets_are_refused_naming_tree_and_field(booster, tmp_path):
    text = booster.model_to_string()
    mutants = _damaged(text)
    # a categorical node's threshold (its set's index) past num_cat
    for t in re.finditer(r"^Tree=(\d+)\n(?:.*\n)*?threshold=(.*)\ndecision_type=(.*)\n", text, re.M):
        dts = t.group(3).split(" ")
        k = next((i for i, d in enumerate(dts) if int(d) & 1), None)
        if k is None:
            continue
        thr = t.group(2).split(" ")
        if len(thr[k]) == 1:
            thr[k] = "9"
            a, b = t.span(2)
            mutants.append((text[:a] + " ".join(thr) + text[b:], int(t.group(1)), "threshold"))
    assert len(mutants) >= 20
    path = tmp_path / "m.txt"
    for mutant, tree, field in mutants:
        path.write_text(mutant)
        with pytest.raises(ValueError) as e:
            from_lightgbm(path)
        msg = str(e.value)
        assert msg.startswith("LightGBM model:") and re.search(rf"\btree {tree}\b", msg), msg
        assert field in msg or "bytes" in msg, msg
        # a removed line or number is also caught without the byte count
        if field in ("cat_boundaries", "cat_threshold") and "bytes" in msg:
            pytest.fail(msg)


def test_random_damage_is_refused_or_the_same_model(booster, tmp_path):
    """As tests/importers/test_damaged_files.py, on a model with category
    sets: cut short anywhere, a line removed, a number removed; each mutant
    is refused naming the tree it damaged (or the one before, whose block
    runs on when a 'Tree=' line goes), or imports to the very same model."""
    text = booster.model_to_string()
    clean = ir.to_json(from_lightgbm(text))
    rng = np.random.default_rng(34)
    lines = text.split("\n")
    start = [j for j, ln in enumerate(lines) if ln.startswith("Tree=")]
    end = lines.index("end of trees")

    def tree_at(j):
        k = int(np.searchsorted(start, j, side="right")) - 1
        return k if k >= 0 and j < end else None

    mutants = [(text[:c], tree_at(text.count("\n", 0, c)) if text[c - 1] != "\n" else None)
               for c in rng.integers(1, len(text), 60)]
    mutants += [("\n".join(lines[:j] + lines[j + 1:]), tree_at(j) if lines[j] else None)
                for j in rng.integers(0, len(lines), 60)]
    cat_lines = [j for j, ln in enumerate(lines) if ln.startswith(("cat_threshold=", "cat_boundaries="))]
    for j in list(rng.choice(cat_lines, 30)) + list(rng.integers(0, end, 30)):
        key, _, val = lines[j].partition("=")
        toks = val.split(" ")
        if not val:
            continue
        t = int(rng.integers(len(toks)))
        mutants.append(("\n".join(lines[:j] + [key + "=" + " ".join(toks[:t] + toks[t + 1:])] + lines[j + 1:]),
                        tree_at(j)))
    refused = 0
    path = tmp_path / "m.txt"
    for mutant, tree in mutants:
        if mutant == text:
            continue
        path.write_text(mutant)
        try:
            m = from_lightgbm(path)
        except ValueError as e:
            msg = str(e)
            assert msg.startswith("LightGBM model:"), msg
            if tree is not None:
                named = {int(n) for n in re.findall(r"\btrees?\[?\s?(\d+)", msg)}
                assert named & {tree, tree - 1}, (tree, msg)
            refused += 1
            continue
        assert ir.to_json(m) == clean, "a damaged file imported as a different model"
    assert refused >= 100, refused
