"""The property test of issue 7: random valid IR models of every node kind,
with groups, tree costs and budgets, through every backend."""
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from skinflint.ir.random_model import random_model, with_category_splits
from skinflint.verify import verify


# 200 random models per run: reference vs ONNX (onnxruntime) and host C
# (dense and on-demand), each on adversarial rows (thresholds exactly and one
# ulp either side, NaN, +-inf) without a budget and with budgets at and
# around each row's cost.
@settings(max_examples=200, deadline=None, derandomize=True,
          suppress_health_check=[HealthCheck.too_slow])
@given(seed=st.integers(0, 2**31 - 1))
def test_random_models_match_reference_on_every_backend(seed):
    report = verify(random_model(seed), runtimes=("onnx", "c", "c-lazy"))
    assert report.ok, f"seed {seed}\n{report.table()}"


# 40 random models with about half their tree splits turned into category
# sets (issue 34: every rule, sets of one to three words, other_left and
# missing_left both ways), through the same backends on verify's rows, which
# add every code of each set's range, the first past it, members +- 0.5,
# negatives, -0.0 and huge values.  Fewer than above: each model compiles C
# and ONNX, and the numeric paths are the 200 models' work.
@settings(max_examples=40, deadline=None, derandomize=True,
          suppress_health_check=[HealthCheck.too_slow])
@given(seed=st.integers(0, 2**31 - 1))
def test_random_categorical_models_match_reference_on_every_backend(seed):
    model = with_category_splits(random_model(seed))
    report = verify(model, runtimes=("onnx", "c", "c-lazy"))
    assert report.ok, f"seed {seed}\n{report.table()}"
