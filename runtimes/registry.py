"""The runtimes by name: the one list that ``verify``, ``skinflint.distributed``
and the command line read (``skinflint verify --runtimes``).

A name maps to a factory ``factory(model, *, tables=None, **options)`` that
builds the runtime object from an IR model (``tables``: the model's lowering
when the caller already made it, so several runtimes share one).  Each factory
imports its backend only when called: the C runtime needs a compiler, the ONNX
one onnxruntime, and neither should be a cost of importing skinflint.
"""
from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass


@dataclass(frozen=True)
class RuntimeSpec:
    """A runtime the registry can build: its name, one line of help and the
    factory."""

    name: str
    help: str
    factory: Callable


def _reference(model, *, tables=None, **options):
    from .reference import ReferenceRuntime
    return ReferenceRuntime(model, tables=tables, **options)


def _onnx(model, *, tables=None, **options):
    from .onnx import OnnxRuntime
    return OnnxRuntime(model, tables=tables, **options)


def _c(api):
    def build(model, *, tables=None, **options):
        from .c import CRuntime
        return CRuntime(model, api=api, tables=tables, **options)
    return build


RUNTIMES: dict[str, RuntimeSpec] = {spec.name: spec for spec in (
    RuntimeSpec("reference", "the Python reference (numpy/numba): the definition of truth", _reference),
    RuntimeSpec("onnx", "the exact ONNX graph on onnxruntime", _onnx),
    RuntimeSpec("c", "the generated C, every feature of a row given (dense batch API)", _c("dense")),
    RuntimeSpec("c-lazy", "the generated C fetching each feature on demand through a callback", _c("lazy")),
)}

DEFAULT_CHECKED = ("onnx", "c", "c-lazy")
"""What ``verify`` checks against the reference when not told otherwise."""


def runtime_names() -> tuple[str, ...]:
    """Every registered runtime name, in registry order."""
    return tuple(RUNTIMES)


def make_runtime(name: str, model, *, tables=None, **options):
    """The runtime called ``name`` built from ``model``; ``options`` go to its
    constructor (``threads=`` for onnx, ``cc=``/``target=``/``opt=`` for c)."""
    spec = RUNTIMES.get(name)
    if spec is None:
        raise ValueError(f"unknown runtime {name!r}; expected one of {', '.join(RUNTIMES)}")
    return spec.factory(model, tables=tables, **options)
