"""Anytime models: AFR, the anytime feature representation (Xu et al. 2013; thesis §2.2), exported as an IR
``anytime`` node whose checkpoints a budget truncates."""
from .afr import AFRClassifier

__all__ = ["AFRClassifier"]
