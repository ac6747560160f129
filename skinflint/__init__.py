"""skinflint: test-time-budgeted machine learning, compiled to ONNX and C.

The top-level namespace is what the API reference documents (docs/api/):
``FeatureCosts``, the estimators, ``load``/``save``/``Model``, ``predict``
and ``ReferenceRuntime``, ``verify``, the compilers, ``OnnxRuntime`` and the
importers.  ``skinflint.verify`` is the function; the parity harness's
module stays importable by path (``from skinflint.verify import compare``).
"""
__version__ = "0.1.0"

from . import ir  # noqa: E402  (the subpackages are installed beside this one)
from .ir import FeatureCosts, IRError, Model, load, save  # noqa: E402
from .runtimes.reference import ReferenceRuntime, predict  # noqa: E402
from .verify import verify  # noqa: E402  (the function shadows the module as an attribute, on purpose)

# Imported on first use, so `import skinflint` stays light (PEP 562).
_LAZY = {
    "compile_onnx": ("skinflint.compilers.onnx", "compile_onnx"),
    "compile_c": ("skinflint.compilers.c", "compile_c"),
    "OnnxRuntime": ("skinflint.runtimes.onnx", "OnnxRuntime"),
    "from_lightgbm": ("skinflint.importers", "from_lightgbm"),
    "from_xgboost": ("skinflint.importers", "from_xgboost"),
    "from_sklearn": ("skinflint.importers", "from_sklearn"),
    "from_sklearn_json": ("skinflint.importers", "from_sklearn_json"),
    "GreedyMiserClassifier": ("skinflint.trainers", "GreedyMiserClassifier"),
    "GreedyMiserRegressor": ("skinflint.trainers", "GreedyMiserRegressor"),
    "EarlyExitClassifier": ("skinflint.trainers", "EarlyExitClassifier"),
    "GreedyMiserRanker": ("skinflint.trainers", "GreedyMiserRanker"),
    "EarlyExitRanker": ("skinflint.trainers", "EarlyExitRanker"),
    "CascadeRanker": ("skinflint.trainers", "CascadeRanker"),
    "CronusClassifier": ("skinflint.trainers", "CronusClassifier"),
    "CSCCClassifier": ("skinflint.trainers", "CSCCClassifier"),
    "CSTCClassifier": ("skinflint.trainers", "CSTCClassifier"),
    "CSTCRegressor": ("skinflint.trainers", "CSTCRegressor"),
    "ASTCClassifier": ("skinflint.trainers", "ASTCClassifier"),
    "ASTCRegressor": ("skinflint.trainers", "ASTCRegressor"),
    "AFRClassifier": ("skinflint.trainers", "AFRClassifier"),
    "LinearSVMClassifier": ("skinflint.trainers", "LinearSVMClassifier"),
    "SparseLinearClassifier": ("skinflint.trainers", "SparseLinearClassifier"),
    "KernelSVMClassifier": ("skinflint.trainers", "KernelSVMClassifier"),
    "CVMClassifier": ("skinflint.trainers", "CVMClassifier"),
    "LARSSVMClassifier": ("skinflint.trainers", "LARSSVMClassifier"),
    "ReducedSVMClassifier": ("skinflint.trainers", "ReducedSVMClassifier"),
}


def __getattr__(name):
    if name in _LAZY:
        import importlib
        module, attr = _LAZY[name]
        return getattr(importlib.import_module(module), attr)
    raise AttributeError(f"module 'skinflint' has no attribute {name!r}")


def __dir__():
    # the lazy names too, so dir(skinflint) and tab completion list the estimators
    return sorted({*globals(), *_LAZY})


__all__ = ["ir", "IRError", "FeatureCosts", "Model", "load", "save", "ReferenceRuntime", "predict", "verify",
           "__version__", *_LAZY]
