"""Cost-sensitive trainers; each estimator has ``.to_ir()``.

``TRAINERS`` (``trainers.registry``) names every trainer for the CLI, the
demo and the curve helper.
"""
from .base import CostSensitiveClassifier, CostSensitiveRegressor
from .curves import cost_accuracy_curve, format_table
from .early_exit import EarlyExitClassifier
from .greedy_miser import GreedyMiserClassifier, GreedyMiserRegressor
from .registry import ESTIMATORS, TRAINERS, TrainerSpec

__all__ = ["CostSensitiveClassifier", "CostSensitiveRegressor", "GreedyMiserClassifier",
           "GreedyMiserRegressor", "EarlyExitClassifier", "cost_accuracy_curve", "format_table",
           "TRAINERS", "ESTIMATORS", "TrainerSpec"]
