"""Cost-sensitive trainers; each estimator has ``.to_ir()``."""
from .curves import cost_accuracy_curve, format_table
from .early_exit import EarlyExitClassifier
from .greedy_miser import GreedyMiserClassifier, GreedyMiserRegressor

__all__ = ["GreedyMiserClassifier", "GreedyMiserRegressor", "EarlyExitClassifier",
           "cost_accuracy_curve", "format_table"]
