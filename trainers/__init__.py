"""Cost-sensitive trainers; each estimator has ``.to_ir()``."""
from .greedy_miser import GreedyMiserClassifier, GreedyMiserRegressor

__all__ = ["GreedyMiserClassifier", "GreedyMiserRegressor"]
