"""Helpers shared by the benchmark scripts."""
import time


def timed(fn):
    """(result, seconds) of fn()."""
    t = time.perf_counter()
    out = fn()
    return out, time.perf_counter() - t
