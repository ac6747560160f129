"""Runtimes share ``predict(X, budget=None) -> Prediction``; ``registry``
names them (``make_runtime("c", model)``)."""
from .prediction import Prediction, Runtime, as_budget, as_features
from .reference import ReferenceRuntime
from .registry import RUNTIMES, make_runtime, runtime_names

__all__ = ["Prediction", "Runtime", "ReferenceRuntime", "RUNTIMES", "as_budget", "as_features", "make_runtime",
           "runtime_names"]
