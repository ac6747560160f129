"""Make trained models cheaper without retraining (docs/compress.md).

``budget_prune`` prunes a forest to minimise error plus lambda times the
mean cost per row (Nan, Wang & Saligrama, NIPS 2016); ``prune_to_budget``
finds the lambda that meets a mean cost; ``prune_curve`` sweeps lambda;
``retrofit_exits`` places Early Exit checkpoints on a trained booster.
"""
from .budget_prune import PruneResult, budget_prune, prune_to_budget
from .curve import prune_curve
from .exits import ExitResult, cheap_first_order, retrofit_exits

__all__ = ["ExitResult", "PruneResult", "budget_prune", "cheap_first_order", "prune_curve", "prune_to_budget",
           "retrofit_exits"]
