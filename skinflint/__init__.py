"""skinflint: test-time-budgeted machine learning, compiled to ONNX and C."""
__version__ = "0.1.0"

from . import ir  # noqa: E402  (the subpackages are installed beside this one)
from .ir import IRError, Model, load, save  # noqa: E402
from .runtimes.reference import ReferenceRuntime, predict  # noqa: E402

__all__ = ["ir", "IRError", "Model", "load", "save", "ReferenceRuntime", "predict", "__version__"]
