"""Classifier cascades over a tree dictionary: Cronus (Chen et al. 2012) and CSCC (thesis §3.3), trained by the
soft-cascade engine (sigmoid relaxation of the exits)."""
from .cronus import CronusClassifier, CSCCClassifier

__all__ = ["CronusClassifier", "CSCCClassifier"]
