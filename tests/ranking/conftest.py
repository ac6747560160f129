"""Fixtures shared by the ranking tests."""
import importlib.util
import sys
from pathlib import Path

import pytest

BENCH = Path(__file__).resolve().parents[2] / "benchmarks"


@pytest.fixture(scope="module")
def bench():
    """benchmarks/bench_rank.py as a module, fresh for each test module."""
    sys.path.insert(0, str(BENCH))          # bench_rank imports benchmarks/common.py as "common"
    try:
        spec = importlib.util.spec_from_file_location("bench_rank", BENCH / "bench_rank.py")
        mod = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(mod)
        yield mod
    finally:
        sys.path.remove(str(BENCH))
