"""Runtimes share ``predict(X, budget=None) -> Prediction``."""
from .prediction import Prediction, Runtime, as_budget, as_features
from .reference import ReferenceRuntime

__all__ = ["Prediction", "Runtime", "ReferenceRuntime", "as_budget", "as_features"]
