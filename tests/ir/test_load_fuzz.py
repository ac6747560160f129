"""Hundreds of random corruptions of the example files: load raises IRError
(or succeeds on a still-valid model), quickly, and never anything else."""
import copy
import json
import time

import numpy as np
import pytest

from skinflint import ir
from tests.conftest import example_paths

BAD_VALUES = [None, True, -1, -(2**40), 2**31, 2**63, 1e308, -1e308, 1e-320, 0.5, "x", "", [], {},
              [1, [2]], {"a": 1}, float("nan"), float("inf")]


def _paths(obj, prefix=()):
    yield prefix
    if isinstance(obj, dict):
        for k, v in obj.items():
            yield from _paths(v, prefix + (k,))
    elif isinstance(obj, list):
        for i, v in enumerate(obj[:6]):
            yield from _paths(v, prefix + (i,))


def _get(obj, path):
    for p in path:
        obj = obj[p]
    return obj


def mutate(doc, rng):
    doc = copy.deepcopy(doc)
    paths = [p for p in _paths(doc) if p]
    path = paths[rng.integers(len(paths))]
    parent, key = _get(doc, path[:-1]), path[-1]
    op = rng.integers(6)
    if op == 0:  # delete
        del parent[key]
    elif op == 1:  # bad value
        parent[key] = BAD_VALUES[rng.integers(len(BAD_VALUES))]
    elif op == 2 and isinstance(parent[key], list):  # truncate / extend a list
        parent[key] = parent[key][: rng.integers(len(parent[key]) + 1)] if rng.random() < 0.5 \
            else parent[key] + parent[key][:1] * 3
    elif op == 3 and isinstance(parent[key], (int, float)) and not isinstance(parent[key], bool):
        parent[key] = parent[key] * -1 - 1 if rng.random() < 0.5 else parent[key] + 10**6
    elif op == 4 and isinstance(parent[key], int) and not isinstance(parent[key], bool):
        parent[key] = path[-1] if isinstance(path[-1], int) else 0  # self-loops in index lists
    else:
        parent[key] = int(rng.integers(-3, 1000))
    return doc


@pytest.mark.parametrize("path", example_paths(), ids=lambda p: p.rsplit("/", 1)[-1])
def test_mutations_raise_only_irerror(path):
    rng = np.random.default_rng(abs(hash(path.rsplit("/", 1)[-1])) % 2**32)
    doc = json.loads(open(path).read())
    text = json.dumps(doc)
    t0 = time.perf_counter()
    outcomes = {"error": 0, "valid": 0}
    for i in range(60):
        bad = mutate(doc, rng)
        if rng.random() < 0.5:
            bad = mutate(bad, rng)
        s = json.dumps(bad)
        if i % 10 == 0:
            s = s[: rng.integers(len(s))]  # truncated JSON
        try:
            ir.from_json(s)
            outcomes["valid"] += 1
        except ir.IRError:
            outcomes["error"] += 1
    assert outcomes["error"] > 20
    assert time.perf_counter() - t0 < 30
    ir.from_json(text)  # the original still loads


@pytest.mark.parametrize("text", [b"\xff\xfe", "", "[]", "{" * 100000, "[" * 100000 + "]" * 100000,
                                  '{"format": "skinflint-ir", "version": 1e999}', "NaN"])
def test_garbage_raises_irerror(text):
    with pytest.raises(ir.IRError):
        ir.from_json(text)
