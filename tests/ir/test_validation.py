"""Each malformed model raises IRError whose message names the field."""
import json

import pytest

from skinflint import ir
from tests.conftest import load_example


def base(name="trees"):
    return json.loads(ir.to_json(load_example(name)))


def expect(d, *words):
    with pytest.raises(ir.IRError) as e:
        ir.from_dict(d)
    msg = str(e.value)
    for w in words:
        assert w in msg, msg
    return msg


def test_index_out_of_range():
    d = base()
    d["nodes"][0]["left"][0] = 99
    expect(d, "nodes[0].left[0]", "out of range")
    d = base()
    d["nodes"][0]["feature"][0] = 7
    expect(d, "nodes[0].feature", "out of range")
    d = base()
    d["output"] = 4
    expect(d, "output", "out of range")


def test_cycle_between_nodes_and_self_loop():
    d = base("linear_over_trees")
    d["nodes"][1]["inputs"].append({"node": 1, "output": 0})
    d["nodes"][1]["weights"].append(1.0)
    expect(d, "nodes[1].inputs[2]", "self-loop")
    d = base("anytime")
    # checkpoint 1 reads node 2 and node 2 reads node 1
    d["nodes"][1]["inputs"].append({"node": 2})
    d["nodes"][1]["weights"].append(1.0)
    d["nodes"][2]["inputs"].append({"node": 1})
    d["nodes"][2]["weights"].append(1.0)
    expect(d, "cycle")


def test_not_a_tree():
    d = base()
    d["nodes"][0]["right"][1] = 3  # node 3 gets two parents
    expect(d, "nodes[0]", "parents")
    d = base()
    d["nodes"][0]["left"][0] = 0   # points back to the root
    expect(d, "nodes[0]")
    d = base()
    d["nodes"][0]["roots"] = [0]
    d["nodes"][0]["tree_cost"] = [0.5]  # tree 1 unreachable
    expect(d, "nodes[0]", "no root")


@pytest.mark.parametrize("bad", [-1.0, float("nan"), float("inf"), 1e400])
def test_bad_costs(bad):
    d = base()
    d["features"][1]["cost"] = bad
    expect(d, "features[1].cost")
    d = base()
    d["nodes"][0]["tree_cost"][0] = bad
    expect(d, "nodes[0].tree_cost[0]")


def test_wrong_lengths_and_types():
    d = base()
    d["nodes"][0]["threshold"].pop()
    expect(d, "nodes[0].threshold", "expected 8 values")
    d = base()
    d["nodes"][0]["value"] = "oops"
    expect(d, "nodes[0].value", "expected a list")
    d = base()
    d["nodes"][0]["threshold"][2] = "1.0"
    expect(d, "nodes[0].threshold[2]", "expected a number")
    d = base()
    d["nodes"][0]["left"][1] = 1.5
    expect(d, "nodes[0].left[1]", "integer")
    d = base()
    d["nodes"][0]["threshold"][0] = [1, 2]
    expect(d, "nodes[0].threshold[0]")


def test_unknown_kind_version_and_missing_parts():
    d = base()
    d["nodes"][0]["kind"] = "forest"
    expect(d, "nodes[0].kind", "unknown node kind")
    d = base()
    d["version"] = 6          # 2: float64 banks (issue 19); 3: query-level exits (27); 4: category sets (34);
    #                           5: the gap_ge cascade exit (28)
    expect(d, "version", "unknown version")
    d = base()
    d["version"] = "1"
    expect(d, "version", "unknown version")
    d = base()
    del d["output"]
    expect(d, "output", "missing")
    d = base()
    d["format"] = "onnx"
    expect(d, "format")


def test_absurd_sizes_rejected_without_allocating():
    d = base()
    d["nodes"][0]["n_outputs"] = 10**12
    expect(d, "nodes[0].n_outputs", "out of range")
    d = base("kernel_poly")
    d["nodes"][0]["degree"] = 10**9
    expect(d, "nodes[0].degree")


def test_control_nodes_only_at_the_output():
    d = base("cascade")
    d["output"] = 1
    d["nodes"][1]["inputs"].append({"node": 2})
    d["nodes"][1]["weights"].append(1.0)
    expect(d, "nodes[")


def test_builders_validate_too():
    with pytest.raises(ir.IRError, match="left/right"):
        ir.trees_from_arrays([0, -1, -1], [0, 0, 0], [1, -1, -1], [-1, -1, -1], [0, 1, 2])
    with pytest.raises(ir.IRError, match="unknown kernel"):
        ir.kernel([[0.0]], [1.0], [0], kernel="sigmoid")


def test_loading_a_missing_file_is_an_irerror(tmp_path):
    with pytest.raises(ir.IRError, match="cannot read"):
        ir.load(tmp_path / "nope.json")


def test_float32_overflow_is_rejected():
    d = base("kernel_rbf")
    d["nodes"][0]["gamma"] = 1e300
    expect(d, "nodes[0].gamma", "overflows float32")
    d = base()
    d["nodes"][0]["threshold"][0] = 1e39
    expect(d, "nodes[0].threshold[0]", "finite float32")


def test_random_model_is_public_and_valid_for_every_kind():
    from skinflint.ir.random_model import ALL_KINDS
    for kind in ALL_KINDS:
        for seed in range(5):
            m = ir.random_model(seed, kinds=(kind,))
            assert m.nodes[m.output].kind == kind
            assert ir.from_json(ir.to_json(m)).hash() == m.hash()


def _float64_bank(d):
    """The example bank as a float64 one (format version 2)."""
    d["version"] = 2
    d["nodes"][0]["precision"] = "float64"
    return d


@pytest.mark.parametrize("edit,words", [
    (lambda n: n["value"].__setitem__(1, 1e39), ("nodes[0].value[1]", "float32's range")),
    (lambda n: n["value"].__setitem__(1, -3.5e38), ("nodes[0].value[1]", "float32's range")),
    (lambda n: n.update(base_score=[-1e300]), ("nodes[0].base_score[0]", "float32's range")),
    # base within float32, base / divisor (what a reading node rounds) not
    (lambda n: n.update(base_score=[3e38], divisor=0.5), ("nodes[0].base_score / divisor[0]",)),
])
def test_float64_bank_values_beyond_float32_are_refused(edit, words):
    d = _float64_bank(base())
    edit(d["nodes"][0])
    expect(d, *words)


def test_float64_bank_at_float32s_largest_value_is_accepted():
    import numpy as np
    top = float(np.finfo(np.float32).max)
    d = _float64_bank(base())
    d["nodes"][0]["value"][1] = -top
    d["nodes"][0]["base_score"] = [top]
    assert ir.from_dict(d).nodes[0].value.ravel()[1] == -top
    with pytest.raises(ir.IRError, match="float32's range"):
        ir.trees_from_arrays([-1], [0.0], [-1], [-1], [np.nextafter(top, np.inf)], precision="float64")
