"""The helpers every trainer family shares (trainers/common.py), and one
meaning of ``class_weight`` in every trainer that takes it: a dict keyed by
class *label*, as in scikit-learn."""
import numpy as np
import pytest

from skinflint.ir import FeatureCosts
from skinflint.trainers import AFRClassifier, CronusClassifier, CSCCClassifier, KernelSVMClassifier, LinearSVMClassifier
from skinflint.trainers.common import class_weight_per_class, holdout_rows, positive_grid


def test_class_weight_per_class_by_label():
    classes = np.array(["ham", "spam"])
    idx = np.array([0, 0, 0, 1])
    np.testing.assert_array_equal(class_weight_per_class(None, classes, idx), [1.0, 1.0])
    # "balanced": n / (K n_k) = 4 / (2 * 3), 4 / (2 * 1)
    np.testing.assert_allclose(class_weight_per_class("balanced", classes, idx), [4 / 6, 2.0])
    np.testing.assert_array_equal(class_weight_per_class({"spam": 3.0}, classes, idx), [1.0, 3.0])
    with pytest.raises(ValueError, match="not class labels"):
        class_weight_per_class({1: 3.0}, classes, idx)          # an index is not a label
    with pytest.raises(ValueError, match="'balanced' or a dict"):
        class_weight_per_class("auto", classes, idx)
    with pytest.raises(ValueError, match="finite and > 0"):
        class_weight_per_class({"spam": -1.0}, classes, idx)


def test_holdout_rows_is_a_seeded_partition():
    fit, val = holdout_rows(50, 0.2, 3)
    assert val.size == 10 and fit.size == 40
    np.testing.assert_array_equal(np.sort(np.concatenate([fit, val])), np.arange(50))
    fit2, val2 = holdout_rows(50, 0.2, np.random.default_rng(3))
    np.testing.assert_array_equal(val, val2)
    with pytest.raises(ValueError, match="validation_fraction"):
        holdout_rows(50, 1.0, 0)


def test_positive_grid_takes_a_number_or_a_sequence_and_refuses_the_rest():
    np.testing.assert_array_equal(positive_grid(2, "C"), [2.0])
    np.testing.assert_array_equal(positive_grid((0.1, 1, 10), "C"), [0.1, 1.0, 10.0])
    for bad in (0, -1.0, [], [1.0, np.inf], [[1.0]], np.nan):
        with pytest.raises(ValueError, match="C must be a positive number or a non-empty sequence"):
            positive_grid(bad, "C")
    # the trainers that take a grid of C refuse the same values with the same message
    X, y = _string_labelled()
    for est in (LinearSVMClassifier(C=[1.0, 0.0], verbose=0), KernelSVMClassifier(C=[], verbose=0)):
        with pytest.raises(ValueError, match="C must be a positive number"):
            est.fit(X, y)


def test_eval_set_is_checked_as_the_training_data_by_every_trainer_that_takes_one():
    X, y = _string_labelled()
    y_val = y[:40].copy()
    y_val[0] = "eggs"                                   # a label the training rows do not have
    for est in (LinearSVMClassifier(C=[0.1, 1.0], verbose=0), KernelSVMClassifier(C=[0.1, 1.0], verbose=0),
                AFRClassifier(n_blocks=2, verbose=0, random_state=0)):
        with pytest.raises(ValueError, match="labels not seen in training"):
            est.fit(X, y, eval_set=(X[:40], y_val))
        with pytest.raises(ValueError, match="features"):
            est.fit(X, y, eval_set=(X[:40, :3], y[:40]))  # one column short


def _string_labelled(seed=0, n=160):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, 4)).astype(np.float32)
    y = np.where(X[:, 0] + 0.8 * rng.normal(size=n) > 0.3, "spam", "ham")
    return X, y


ESTIMATORS = [
    lambda: LinearSVMClassifier(),
    lambda: KernelSVMClassifier(C=1.0),
    lambda: CronusClassifier(n_stages=2, n_estimators=20, max_cycles=2, verbose=0, random_state=0),
    lambda: CSCCClassifier(n_stages=2, n_estimators=20, max_cycles=2, verbose=0, random_state=0),
    lambda: AFRClassifier(n_blocks=2, verbose=0, random_state=0),
]


@pytest.mark.parametrize("make", ESTIMATORS, ids=["linear_svm", "kernel_svm", "cronus", "cscc", "afr"])
def test_class_weight_by_label_changes_every_model(make):
    X, y = _string_labelled()
    costs = FeatureCosts.from_arrays([1.0, 2.0, 3.0, 4.0])
    plain = make().set_params(feature_costs=costs).fit(X, y)
    heavy = make().set_params(feature_costs=costs, class_weight={"spam": 20.0}).fit(X, y)
    assert plain.to_ir().hash() != heavy.to_ir().hash()
    # weighting spam up predicts spam at least as often
    assert np.mean(heavy.predict(X) == "spam") >= np.mean(plain.predict(X) == "spam")
    with pytest.raises(ValueError, match="not class labels"):
        make().set_params(feature_costs=costs, class_weight={1: 20.0}).fit(X, y)
