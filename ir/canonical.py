"""A model as canonical JSON data and text, and its hash.

What ``Model`` needs of the file format (``Model.hash``) without the loader:
this module reads a model's attributes and imports nothing of ``model.py``, so
``model -> canonical`` and ``json_io -> model, canonical`` have no circle.
"""
from __future__ import annotations

import hashlib
import json
from typing import TYPE_CHECKING

from .codes import FORMAT, FORMAT_VERSION_CATEGORICAL, FORMAT_VERSION_FLOAT64, FORMAT_VERSION_GAP, FORMAT_VERSION_QUERY
from .codes import FORMAT_VERSION as VERSION
from .errors import IRError
from .nodes import CascadeNode, QueryExitNode, TreesNode

if TYPE_CHECKING:
    from .model import Model


def nodes_version(nodes) -> int:
    """The lowest format version that holds these nodes: 5 with a cascade
    stage exiting by ``gap_ge``, 4 with a category-set split, 3 with a
    query-level exit, 2 with a float64 tree bank, else 1 (so every model
    keeps the bytes it always had)."""
    if any(isinstance(n, CascadeNode) and n.has_gap_rule for n in nodes):
        return FORMAT_VERSION_GAP
    if any(isinstance(n, TreesNode) and n.has_categories for n in nodes):
        return FORMAT_VERSION_CATEGORICAL
    if any(isinstance(n, QueryExitNode) for n in nodes):
        return FORMAT_VERSION_QUERY
    return FORMAT_VERSION_FLOAT64 if any(isinstance(n, TreesNode) and n.is_float64 for n in nodes) \
        else VERSION


def file_version(model: Model) -> int:
    """The lowest format version that holds ``model`` (``nodes_version``)."""
    return nodes_version(model.nodes)


def to_dict(model: Model) -> dict:
    return {
        "format": FORMAT, "version": file_version(model),
        "features": [{"name": f.name, "cost": float(f.cost), "group": f.group} for f in model.features],
        "groups": [{"name": g.name, "cost": float(g.cost)} for g in model.groups],
        "task": {"kind": model.task.kind, "n_outputs": model.task.n_outputs,
                 "classes": list(model.task.classes), "transform": model.task.transform},
        "nodes": [n.to_dict() for n in model.nodes],
        "output": model.output,
        "metadata": model.metadata,
    }


def to_json(model: Model, indent=None) -> str:
    try:
        return json.dumps(to_dict(model), indent=indent, allow_nan=False, sort_keys=False)
    except (TypeError, ValueError) as e:
        raise IRError(f"metadata: not JSON-serialisable ({e})") from None


def model_hash(model: Model) -> str:
    """SHA-256 of the canonical JSON, without metadata (which does not change
    predictions); the first 16 hex digits name caches and C builds."""
    d = to_dict(model)
    d.pop("metadata")
    return hashlib.sha256(json.dumps(d, sort_keys=True).encode()).hexdigest()
