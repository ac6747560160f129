"""Cost-sensitive trainers; each estimator has ``.to_ir()``.

``TRAINERS`` (``trainers.registry``) names every trainer for the CLI, the
demo and the curve helper.
"""
from .anytime.afr import AFRClassifier
from .base import CostSensitiveClassifier, CostSensitiveRegressor
from .boosting.cascade_ranker import CascadeRanker
from .boosting.early_exit import EarlyExitClassifier
from .boosting.greedy_miser import GreedyMiserClassifier, GreedyMiserRegressor
from .boosting.ranker import EarlyExitRanker, GreedyMiserRanker
from .cascades.cronus import CronusClassifier, CSCCClassifier
from .curves import cost_accuracy_curve, format_table
from .kernels.cvm import CVMClassifier, LARSSVMClassifier
from .kernels.kernel_svm import KernelSVMClassifier
from .kernels.reduced_svm import ReducedSVMClassifier
from .linear.linear_svm import LinearSVMClassifier
from .linear.sparse_linear import SparseLinearClassifier
from .registry import ESTIMATORS, TRAINERS, TrainerSpec
from .trees.astc import ASTCClassifier, ASTCRegressor, node_budgets_from
from .trees.cstc import CSTCClassifier, CSTCRegressor

__all__ = [
    "CostSensitiveClassifier", "CostSensitiveRegressor",
    "GreedyMiserClassifier", "GreedyMiserRegressor", "GreedyMiserRanker", "EarlyExitClassifier", "EarlyExitRanker",
    "CascadeRanker",
    "CronusClassifier", "CSCCClassifier", "CSTCClassifier", "CSTCRegressor", "ASTCClassifier", "ASTCRegressor",
    "node_budgets_from", "AFRClassifier", "LinearSVMClassifier", "SparseLinearClassifier", "KernelSVMClassifier",
    "CVMClassifier", "LARSSVMClassifier", "ReducedSVMClassifier", "cost_accuracy_curve", "format_table",
    "TRAINERS", "ESTIMATORS", "TrainerSpec",
]
