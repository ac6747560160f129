"""Helpers shared by the benchmark scripts."""
import time


def timed(fn):
    """(result, seconds) of fn()."""
    t = time.perf_counter()
    out = fn()
    return out, time.perf_counter() - t


def timed_wall_cpu(fn):
    """(result, wall seconds, process CPU seconds) of fn(): on a shared machine
    the CPU seconds are the steadier figure."""
    w, c = time.perf_counter(), time.process_time()
    out = fn()
    return out, time.perf_counter() - w, time.process_time() - c
