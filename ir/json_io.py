"""Versioned JSON: ``to_json``/``from_json``/``save``/``load``.

Floats round-trip bit-exactly: a float32 parameter is written as the decimal
of the float64 it equals (see ``nodes._floats``); costs are float64 and use
Python's shortest round-trip repr.  ``load`` raises only ``IRError``.
"""
from __future__ import annotations

import json
import os

from .arrays import scalar_cost, scalar_int
from .canonical import file_version, model_hash, nodes_version, to_dict, to_json
from .codes import (
    FORMAT,
    FORMAT_VERSION_CATEGORICAL,
    FORMAT_VERSION_FLOAT64,
    FORMAT_VERSION_GAP,
    FORMAT_VERSION_QUERY,
    FORMAT_VERSIONS,
)
from .errors import IRError
from .model import MAX_NODES, Feature, Group, Model, Task
from .nodes import CascadeNode, QueryExitNode, TreesNode, node_from_dict

__all__ = ["file_version", "from_dict", "from_json", "load", "model_hash", "nodes_version", "parse_json",
           "read_limited", "save", "to_dict", "to_json"]

MAX_FILE_BYTES = 1 << 30


def from_dict(d) -> Model:
    if not isinstance(d, dict):
        raise IRError(f"(top level): expected a JSON object, got {type(d).__name__}")
    if d.get("format") != FORMAT:
        raise IRError(f"format: expected {FORMAT!r}, got {d.get('format')!r}")
    version = d.get("version")
    if version not in FORMAT_VERSIONS or isinstance(version, bool) or not isinstance(version, int):
        raise IRError(f"version: unknown version {version!r}; this skinflint reads versions "
                      f"{', '.join(map(str, FORMAT_VERSIONS))}")
    for key in ("features", "task", "nodes", "output"):
        if key not in d:
            raise IRError(f"{key}: missing")
    feats, groups = d["features"], d.get("groups", [])
    if not isinstance(feats, list):
        raise IRError("features: expected a list")
    if not isinstance(groups, list):
        raise IRError("groups: expected a list")
    features = []
    for i, f in enumerate(feats):
        if not isinstance(f, dict) or "name" not in f:
            raise IRError(f"features[{i}]: expected an object with a name")
        g = f.get("group")
        features.append(Feature(
            name=f["name"], cost=scalar_cost(f.get("cost", 0.0), f"features[{i}].cost"),
            group=None if g is None else scalar_int(g, f"features[{i}].group", low=0, high=len(groups))))
    group_objs = []
    for i, g in enumerate(groups):
        if not isinstance(g, dict) or "name" not in g:
            raise IRError(f"groups[{i}]: expected an object with a name")
        group_objs.append(Group(name=g["name"], cost=scalar_cost(g.get("cost", 0.0), f"groups[{i}].cost")))
    t = d["task"]
    if not isinstance(t, dict):
        raise IRError("task: expected an object")
    classes = t.get("classes", [])
    if not isinstance(classes, list) or not all(
            isinstance(c, (str, int, float)) and not isinstance(c, bool) for c in classes):
        raise IRError("task.classes: expected a list of numbers or strings")
    task = Task(kind=str(t.get("kind")),   # validate_model names an unknown kind
                n_outputs=scalar_int(t.get("n_outputs", 1), "task.n_outputs", low=1, high=1 << 16),
                classes=tuple(classes), transform=t.get("transform", "identity"))
    nodes = d["nodes"]
    if not isinstance(nodes, list):
        raise IRError("nodes: expected a list")
    if len(nodes) > MAX_NODES:
        raise IRError(f"nodes: {len(nodes)} nodes exceeds the limit {MAX_NODES}")
    node_objs = [node_from_dict(n, f"nodes[{i}]", len(features)) for i, n in enumerate(nodes)]
    if version < FORMAT_VERSION_FLOAT64:
        for i, n in enumerate(node_objs):
            if isinstance(n, TreesNode) and n.is_float64:
                raise IRError(f"nodes[{i}].precision: float64 tree banks need format version "
                              f"{FORMAT_VERSION_FLOAT64}; this file says version {version}")
    if version < FORMAT_VERSION_QUERY:
        for i, n in enumerate(node_objs):
            if isinstance(n, QueryExitNode):
                raise IRError(f"nodes[{i}].kind: a query_exit node needs format version "
                              f"{FORMAT_VERSION_QUERY}; this file says version {version}")
    if version < FORMAT_VERSION_CATEGORICAL:
        for i, n in enumerate(node_objs):
            if isinstance(n, TreesNode) and n.has_categories:
                raise IRError(f"nodes[{i}].category_rule: category-set splits need format version "
                              f"{FORMAT_VERSION_CATEGORICAL}; this file says version {version}")
    if version < FORMAT_VERSION_GAP:
        for i, n in enumerate(node_objs):
            if isinstance(n, CascadeNode) and n.has_gap_rule:
                raise IRError(f"nodes[{i}].stages: the gap_ge exit rule needs format version "
                              f"{FORMAT_VERSION_GAP}; this file says version {version}")
    meta = d.get("metadata", {})
    if not isinstance(meta, dict):
        raise IRError("metadata: expected an object")
    output = scalar_int(d["output"], "output", low=0, high=max(len(node_objs), 1))
    return Model(features=features, groups=group_objs, task=task, nodes=node_objs,
                 output=output, metadata=meta)


def parse_json(text, what="the format"):
    """JSON text (str, or UTF-8 bytes) as Python objects.  Every failure is
    an ``IRError`` starting "(file):": not UTF-8, not valid JSON, nested too
    deeply, or a NaN / Infinity constant (``what`` needs finite numbers)."""
    if isinstance(text, (bytes, bytearray)):
        try:
            text = text.decode("utf-8")
        except UnicodeDecodeError as e:
            raise IRError(f"(file): not UTF-8 ({e})") from None
    if not isinstance(text, str):
        raise IRError("(file): expected JSON text")

    def reject_constant(name):
        raise IRError(f"(file): {name} is not allowed; {what} needs finite numbers")
    try:
        return json.loads(text, parse_constant=reject_constant)
    except IRError:
        raise
    except RecursionError:
        raise IRError("(file): JSON nested too deeply") from None
    except ValueError as e:
        raise IRError(f"(file): not valid JSON ({e})") from None


def read_limited(path) -> bytes:
    """The bytes of the file at ``path``, refused (``IRError``) past
    ``MAX_FILE_BYTES`` or when it cannot be read."""
    try:
        size = os.path.getsize(path)
        if size > MAX_FILE_BYTES:
            raise IRError(f"{os.fspath(path)}: {size} bytes exceeds the limit {MAX_FILE_BYTES}")
        with open(path, "rb") as fh:
            return fh.read()
    except OSError as e:
        raise IRError(f"{os.fspath(path)}: cannot read: {e.strerror}") from None


# What other tools' model files look like, so that passing one where a
# skinflint model is expected is named, not reported as broken JSON.
FOREIGN_KINDS = {
    "onnx": ("an ONNX model", "skinflint reads the JSON models that 'train' and 'import' write"),
    "lightgbm": ("a LightGBM text model", "import it: skinflint import FILE --from lightgbm"),
    "xgboost": ("an XGBoost model", "import it: skinflint import FILE --from xgboost"),
    "sklearn-json": ("a scikit-learn model in sklearn-json",
                     "import it: skinflint import FILE --from sklearn-json"),
}


def sniff_kind(data: bytes):
    """What model file ``data`` (its first bytes suffice) looks like:
    "skinflint", "onnx", "lightgbm", "xgboost" (JSON or UBJSON),
    "sklearn-json", or None when none of these."""
    head = bytes(data[:4096])
    text = head.lstrip()
    if text.startswith((b"tree\n", b"tree\r\n")) or b"\nversion=v" in head[:256]:
        return "lightgbm"
    # XGBoost UBJSON: an object whose first key is "learner" (a length marker before it)
    if text[:1] == b"{" and text[1:2] in (b"i", b"U", b"I", b"l", b"L") and b"learner" in text[:24]:
        return "xgboost"
    if text[:1] == b"{":
        for kind, mark in (("skinflint", b'"format": "' + FORMAT.encode() + b'"'),
                           ("skinflint", b'"format":"' + FORMAT.encode() + b'"'),
                           ("sklearn-json", b'"skinflint-sklearn-json"'), ("xgboost", b'"learner"')):
            if mark in head:
                return kind
        return None
    # ONNX: a protobuf ModelProto opens with field 1 (ir_version, a small varint)
    if head[:1] == b"\x08" and len(head) > 1 and 0 < head[1] < 32 and b"\x3a" in head:
        return "onnx"
    return None


def _refuse_foreign(data: bytes):
    kind = sniff_kind(data)
    if kind in FOREIGN_KINDS:
        what, hint = FOREIGN_KINDS[kind]
        raise IRError(f"(file): this is {what}, not a skinflint model; {hint}")


def from_json(text) -> Model:
    d = parse_json(text)
    try:
        return from_dict(d)
    except IRError:
        raise
    except RecursionError:
        raise IRError("(file): structure nested too deeply") from None
    except (ValueError, TypeError, KeyError, IndexError, AttributeError, OverflowError,
            MemoryError) as e:
        # Safety net: validation above should name the field first.
        raise IRError(f"(file): malformed model ({type(e).__name__}: {e})") from None


def save(model: Model, path) -> None:
    """Write ``model`` to ``path`` whole or not at all: the text goes to a
    temporary file beside it, renamed over ``path`` at the end and removed
    on any failure (an interrupt included).  A missing folder or a folder
    at ``path`` is an ``IRError`` naming ``path``."""
    text = to_json(model)
    path = os.fspath(path)
    folder = check_writable(path)
    # hidden, and unique to this process, so two writers never share one
    tmp = os.path.join(folder, f".{os.path.basename(path)}.{os.getpid()}.tmp")
    try:
        with open(tmp, "w", encoding="utf-8") as fh:
            fh.write(text)
        os.replace(tmp, path)  # never leave a half-written model behind
    except BaseException as e:
        if os.path.lexists(tmp):
            os.unlink(tmp)
        if isinstance(e, OSError):
            raise IRError(f"{path}: cannot write: {e.strerror or e}") from None
        raise


def check_writable(path) -> str:
    """The folder a file at ``path`` goes into; an ``IRError`` naming
    ``path`` when that folder is missing or ``path`` is a folder (checked
    before a long job, so that it does not fail at the end)."""
    path = os.fspath(path)
    folder = os.path.dirname(os.path.abspath(path))
    if os.path.isdir(path):
        raise IRError(f"{path}: is a folder; give a file name")
    if not os.path.isdir(folder):
        raise IRError(f"{path}: the folder {folder} does not exist")
    return folder


def load(path) -> Model:
    """The model in the file at ``path``.  Every error is an ``IRError``
    starting with ``path``; another tool's model file is named as such."""
    where = os.fspath(path)
    data = read_limited(path)   # its errors name the path already
    try:
        _refuse_foreign(data)
        return from_json(data)
    except IRError as e:
        msg = str(e)
        msg = msg[len("(file): "):] if msg.startswith("(file): ") else msg
        raise IRError(f"{where}: {msg}") from None
