"""Runtimes are objects built once from a model, with one
``predict(X, budget=None) -> Prediction``; ``verify`` takes them or their
names, one budget of predict's meaning plus the "around" sweep, and lowers
the model once (issue 14)."""
import numpy as np
import pytest

from skinflint.runtimes.c import CRuntime
from skinflint.runtimes.onnx import OnnxRuntime
from skinflint.runtimes.prediction import Prediction
from skinflint.runtimes.reference import ReferenceRuntime, predict
from skinflint.verify import adversarial_rows, verify
from tests.conftest import load_example


def test_every_runtime_predicts_a_prediction_and_only_on_demand_ones_count_fetches():
    m = load_example("groups")
    X = adversarial_rows(m, max_rows=200)
    ref = predict(m, X, 21.5)
    for rt in (ReferenceRuntime(m), OnnxRuntime(m), CRuntime(m), CRuntime(m, api="lazy")):
        got = rt.predict(X, 21.5)
        assert isinstance(got, Prediction)
        np.testing.assert_array_equal(got.cost, ref.cost)
        if rt.name == "c-lazy":
            # each feature fetched once, when first used; never one it could not pay
            np.testing.assert_array_equal(got.fetches, ref.features_used.sum(1))
        else:
            assert got.fetches is None
    assert [r.name for r in (ReferenceRuntime(m), OnnxRuntime(m), CRuntime(m), CRuntime(m, api="lazy"))] == \
        ["reference", "onnx", "c", "c-lazy"]


def test_bad_runtime_options_are_errors():
    m = load_example("trees")
    with pytest.raises(ValueError, match="api"):
        CRuntime(m, api="eager")
    with pytest.raises(ValueError, match="target"):
        CRuntime(m, target="pdp11")
    with pytest.raises(ValueError, match="host"):
        CRuntime(m, target="aarch64", cc="gcc")
    proto = OnnxRuntime(m).proto
    with pytest.raises(ValueError, match="need a Model"):
        OnnxRuntime(proto, tree_op="TreeEnsembleRegressor")


def test_verify_takes_objects_and_names_and_lowers_once(monkeypatch):
    import skinflint.compilers.c as cc
    import skinflint.compilers.onnx as co
    import skinflint.ir.lowering as lowering
    import skinflint.runtimes.reference as rr
    m = load_example("linear_over_trees")
    calls = []
    real = lowering.lower

    def counting(model):
        calls.append(model)
        return real(model)
    for mod in (lowering, cc, co, rr):
        monkeypatch.setattr(mod, "lower", counting)
    report = verify(m, runtimes=["onnx", "c", "c-lazy"])
    assert report.ok, report.table()
    assert len(calls) == 1
    assert [b.backend for b in report.backends] == ["onnx", "c", "c-lazy"]
    monkeypatch.undo()
    mixed = verify(m, runtimes=[OnnxRuntime(m, tree_op="TreeEnsembleRegressor"), "c"])
    assert mixed.ok and [b.backend for b in mixed.backends] == ["onnx (TreeEnsembleRegressor)", "c"]


class _OffByOneUlp:
    """A runtime that is wrong in the last bit of one row's score."""
    name = "off-by-one-ulp"

    def __init__(self, model):
        self.inner = ReferenceRuntime(model)

    def predict(self, X, budget=None):
        p = self.inner.predict(X, budget)
        p.scores[5] = np.nextafter(p.scores[5], np.float32(np.inf))
        return p


def test_verify_reports_a_runtime_object_that_differs():
    m = load_example("trees")
    report = verify(m, runtimes=[_OffByOneUlp(m)])
    assert not report.ok
    b = report.backends[0]
    # verify runs both passes (no budget, budgets around) in one predict call:
    # only row 5 of that call differs, by one ulp
    assert (b.backend, b.scores, b.max_ulp) == ("off-by-one-ulp", 1, 1)
    assert b.worst_rows[0]["row"] == 5


def test_verify_budget_has_predicts_meaning_and_around_is_a_mode():
    m = load_example("groups")
    X = adversarial_rows(m, max_rows=100)
    seen = []

    class Recorder:
        name = "recorder"

        def __init__(self):
            self.inner = ReferenceRuntime(m)

        def predict(self, X, budget=None):
            seen.append(np.array(budget, np.float64))
            return self.inner.predict(X, budget)
    assert verify(m, X, runtimes=[Recorder()], budget=21.5, budgets=None, adversarial=False).ok
    np.testing.assert_array_equal(seen[-1], np.full(len(X), 21.5))
    per_row = np.linspace(0, 30, len(X))
    assert verify(m, X, runtimes=[Recorder()], budget=per_row, budgets=None, adversarial=False).ok
    np.testing.assert_array_equal(seen[-1], per_row)
    report = verify(m, X, runtimes=[Recorder()], adversarial=False)      # budgets="around"
    assert report.rows == 2 * len(X)
    free = predict(m, X).cost
    np.testing.assert_array_equal(seen[-1][:len(X)], np.inf)
    assert np.all(seen[-1][len(X):] <= free)
    with pytest.raises(ValueError, match="per-row budgets need adversarial=False"):
        verify(m, X, runtimes=[Recorder()], budget=per_row)
    with pytest.raises(ValueError, match="around"):
        verify(m, X, runtimes=[Recorder()], budgets="sometimes")


def test_legacy_verify_arguments_are_refused_saying_what_to_write():
    m = load_example("cascade")
    with pytest.raises(TypeError, match=r"write verify\(model, X, runtimes=\(...\)\)"):
        verify(m, backends=("c-lazy",))
    with pytest.raises(ValueError, match="write budgets='around'"):
        verify(m, runtimes=("c-lazy",), budgets="auto")
    with pytest.raises(ValueError, match="write verify\\(model, X, budget=B, budgets=None\\)"):
        verify(m, runtimes=("c",), budgets=2.5)
    fixed = verify(m, runtimes=("c",), budget=2.5, budgets=None)
    assert fixed.ok and fixed.budgets == "2.5"


def test_runtime_registry_builds_every_name_and_refuses_others():
    from skinflint.runtimes import RUNTIMES, make_runtime
    m = load_example("cascade")
    X = np.random.default_rng(0).normal(size=(20, m.n_features)).astype(np.float32)
    want = make_runtime("reference", m).predict(X)
    for name in RUNTIMES:
        got = make_runtime(name, m).predict(X)
        np.testing.assert_array_equal(got.cost, want.cost)
    with pytest.raises(ValueError, match="unknown runtime 'tpu'; expected one of reference, onnx, c, c-lazy"):
        make_runtime("tpu", m)


def test_merged_partition_reports_equal_the_report_of_all_rows():
    """verify's report on rows in parts, merged, is its report on all rows
    (the contract skinflint.distributed relies on)."""
    from skinflint.verify import compare, merge_reports, runtime
    m = load_example("cascade")
    X = adversarial_rows(m, seed=1)
    ref = runtime("reference", m).predict(X)
    got = runtime("reference", m).predict(X)
    got.cost[::7] += 1.0                     # mismatches spread over every part
    got.scores[::5] = np.nextafter(got.scores[::5], np.float32(np.inf))
    whole = compare(m, X, ref, got, "broken", worst=5)
    cuts = [0, 13, 13, 31, 52, len(X)]       # an empty part too, as Dask makes them
    assert len(X) > 52
    parts = [compare(m, X[a:b], _rows(ref, a, b), _rows(got, a, b), "broken", worst=5, row_offset=a)
             for a, b in zip(cuts[:-1], cuts[1:], strict=True)]
    merged = merge_reports(parts, worst=5)
    assert whole.mismatches > 5
    assert merged == whole


def _rows(p, a, b):
    import dataclasses
    return dataclasses.replace(p, **{f.name: getattr(p, f.name)[a:b] for f in dataclasses.fields(p)
                                     if getattr(p, f.name) is not None})


@pytest.mark.parametrize("make", [ReferenceRuntime, OnnxRuntime, lambda m: CRuntime(m, api="dense"),
                                  lambda m: CRuntime(m, api="lazy")], ids=["reference", "onnx", "c", "c-lazy"])
def test_every_runtime_reads_a_dataframe_by_column_name(make):
    pd = pytest.importorskip("pandas")
    m = load_example("cascade")
    names = m.feature_names
    assert names != [f"x{j}" for j in range(m.n_features)]     # the example's features are named
    X = np.random.default_rng(2).normal(size=(30, m.n_features)).astype(np.float32)
    rt = make(m)
    want = rt.predict(X)
    swapped = pd.DataFrame(X, columns=names)[names[::-1]]      # same data, columns reversed
    got = rt.predict(swapped)
    np.testing.assert_array_equal(got.scores, want.scores)
    np.testing.assert_array_equal(got.cost, want.cost)
    with pytest.raises(ValueError, match="missing"):
        rt.predict(pd.DataFrame(X[:, :-1], columns=names[:-1]))
    with pytest.raises(ValueError, match="not in the model"):
        rt.predict(pd.DataFrame(X, columns=names[:-1] + ["zzz"]))
