"""Linear baselines on raw features: the L2-SVM (also AFR's final classifier) and cost-weighted ℓ1 logistic
regression."""
from .linear_svm import LinearSVMClassifier
from .sparse_linear import SparseLinearClassifier

__all__ = ["LinearSVMClassifier", "SparseLinearClassifier"]
