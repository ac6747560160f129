"""Kernel machines with support-vector costs: the full kernel SVM, CVM (thesis §4: LARS selection and gradient
support vectors), LARS-SVM and the Reduced-SVM baseline, with their float64 training numerics."""
from .cvm import CVMClassifier, LARSSVMClassifier
from .kernel_svm import KernelSVMClassifier
from .reduced_svm import ReducedSVMClassifier

__all__ = ["CVMClassifier", "KernelSVMClassifier", "LARSSVMClassifier", "ReducedSVMClassifier"]
