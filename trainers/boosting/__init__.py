"""Gradient boosting with feature costs: the shared histogram booster and its kernels (binning, histograms, split
finding, partition, grower, predictor, losses, split penalties), and the estimators built on it: Greedy Miser
(thesis §2.1), GBRT (λ = 0) and Early Exit, their rankers (LambdaMART, ranker.py), plus the tree banks the cascades
and trees of classifiers read."""
from .cascade_ranker import CascadeRanker
from .early_exit import EarlyExitClassifier
from .greedy_miser import GreedyMiserClassifier, GreedyMiserRegressor
from .ranker import EarlyExitRanker, GreedyMiserRanker

__all__ = ["CascadeRanker", "EarlyExitClassifier", "GreedyMiserClassifier", "GreedyMiserRegressor",
           "EarlyExitRanker", "GreedyMiserRanker"]
