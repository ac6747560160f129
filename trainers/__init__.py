"""Cost-sensitive trainers; each estimator has ``.to_ir()``.

``TRAINERS`` (``trainers.registry``) names every trainer for the CLI, the
demo and the curve helper.
"""
from .afr import AFRClassifier
from .astc import ASTCClassifier, ASTCRegressor, node_budgets_from
from .base import CostSensitiveClassifier, CostSensitiveRegressor
from .cascade import CronusClassifier, CSCCClassifier
from .curves import cost_accuracy_curve, format_table
from .cstc import CSTCClassifier, CSTCRegressor
from .cvm import CVMClassifier, LARSSVMClassifier
from .early_exit import EarlyExitClassifier
from .greedy_miser import GreedyMiserClassifier, GreedyMiserRegressor
from .kernel_svm import KernelSVMClassifier
from .linear_svm import LinearSVMClassifier
from .reduced_svm import ReducedSVMClassifier
from .sparse_linear import SparseLinearClassifier
from .registry import ESTIMATORS, TRAINERS, TrainerSpec

__all__ = ["CostSensitiveClassifier", "CostSensitiveRegressor", "GreedyMiserClassifier",
           "GreedyMiserRegressor", "EarlyExitClassifier", "CronusClassifier", "CSCCClassifier", "CSTCClassifier", "CSTCRegressor",
           "ASTCClassifier", "ASTCRegressor", "node_budgets_from", "AFRClassifier", "LinearSVMClassifier",
           "SparseLinearClassifier", "KernelSVMClassifier", "CVMClassifier", "LARSSVMClassifier",
           "ReducedSVMClassifier", "cost_accuracy_curve", "format_table",
           "TRAINERS", "ESTIMATORS", "TrainerSpec"]
