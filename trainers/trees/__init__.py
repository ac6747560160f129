"""Trees of linear classifiers: CSTC (thesis §3.4-3.6, a relaxed joint optimisation) and ASTC (Kusner et al. 2014,
approximately submodular greedy selection), exported as one IR ``classifier_tree``."""
from .astc import ASTCClassifier, ASTCRegressor, node_budgets_from
from .cstc import CSTCClassifier, CSTCRegressor

__all__ = ["ASTCClassifier", "ASTCRegressor", "CSTCClassifier", "CSTCRegressor", "node_budgets_from"]
