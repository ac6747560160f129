"""Run generated C on the host through ctypes.

``CRuntime(model)`` renders the model's C (``compilers.c``), builds a shared
library into a cache keyed by the source text, compiler and flags, and loads
it.  ``predict(X, budget, api="dense")`` uses the flat batch entry point;
``api="lazy"`` drives the on-demand API row by row with a fetch callback
that counts calls (``last_fetch_counts``).
"""
from __future__ import annotations

import ctypes
import hashlib
import os
import shutil
import subprocess
import tempfile

import numpy as np

from ..compilers.c import C_FLAGS, render
from .prediction import Prediction, as_budget, as_features

PREFIX = "sfm"


def cache_root() -> str:
    return os.environ.get("SKINFLINT_CACHE") or os.path.join(
        os.path.expanduser("~"), ".cache", "skinflint")


def find_cc(preferred=None):
    for cc in ([preferred] if preferred else []) + [os.environ.get("CC"), "cc", "gcc", "clang"]:
        if cc and shutil.which(cc):
            return cc
    raise RuntimeError("no C compiler found: install gcc or clang, or set CC")


def build_shared(sources: dict, cc: str, flags: list[str]) -> str:
    """Compile the generated sources to a shared library (cached)."""
    key = hashlib.sha256("\0".join([cc, *flags, sources[f"{PREFIX}.c"], sources[f"{PREFIX}.h"]])
                         .encode()).hexdigest()[:24]
    out_dir = os.path.join(cache_root(), "c", key)
    lib = os.path.join(out_dir, f"lib{PREFIX}.so")
    if os.path.exists(lib):
        return lib
    os.makedirs(os.path.dirname(out_dir), exist_ok=True)
    tmp = tempfile.mkdtemp(dir=os.path.dirname(out_dir))
    for name in (f"{PREFIX}.c", f"{PREFIX}.h"):
        with open(os.path.join(tmp, name), "w") as fh:
            fh.write(sources[name])
    cmd = [cc, *C_FLAGS, *flags, "-shared", "-fPIC", "-o", os.path.join(tmp, f"lib{PREFIX}.so"),
           os.path.join(tmp, f"{PREFIX}.c")]
    r = subprocess.run(cmd, capture_output=True, text=True)
    if r.returncode != 0:
        shutil.rmtree(tmp, ignore_errors=True)
        raise RuntimeError(f"C build failed ({' '.join(cmd)}):\n{r.stderr[-4000:]}")
    try:
        os.rename(tmp, out_dir)
    except OSError:  # another process built it first
        shutil.rmtree(tmp, ignore_errors=True)
    return lib


class CRuntime:
    """Host C backend: same ``predict(X, budget=None)`` as the reference."""

    def __init__(self, model, *, cc=None, opt="-O2", flags=()):
        self.model = model
        self.cc = find_cc(cc)
        self.flags = [opt, *flags]
        self.sources = render(model, PREFIX)
        self.library_path = build_shared(self.sources, self.cc, self.flags)
        self._lib = ctypes.CDLL(self.library_path)
        self._bind()
        self.last_fetch_counts = None

    def _bind(self):
        m, lib = self.model, self._lib
        K = m.task.n_outputs
        self._P = m.task.n_proba
        ptr = ctypes.c_void_p
        lib.sfm_predict_flat.argtypes = [ptr, ctypes.c_int32, ptr, ptr, ptr, ptr, ptr, ptr, ptr]
        lib.sfm_predict_flat.restype = None
        lib.sfm_workspace_size.restype = ctypes.c_uint32

        class Result(ctypes.Structure):
            _fields_ = [("scores", ctypes.c_float * K), ("proba", ctypes.c_float * max(self._P, 1)),
                        ("label", ctypes.c_int32), ("cost", ctypes.c_double), ("stage", ctypes.c_int32)]
        self._Result = Result
        self._Fetch = ctypes.CFUNCTYPE(ctypes.c_float, ctypes.c_void_p, ctypes.c_int32)
        lib.sfm_predict_lazy.argtypes = [self._Fetch, ptr, ctypes.c_double, ptr, ctypes.POINTER(Result)]
        lib.sfm_predict_lazy.restype = ctypes.c_int32

    def predict(self, X, budget=None, api="dense") -> Prediction:
        m = self.model
        X = as_features(X, m.n_features)
        N = X.shape[0]
        b = as_budget(budget, N)
        if api == "lazy":
            return self._predict_lazy(X, b)
        if api != "dense":
            raise ValueError(f"api must be 'dense' or 'lazy', not {api!r}")
        F = m.n_features
        scores, proba, label, cost, stage = self._buffers(N)
        used = np.zeros((N, max(F, 1)), np.uint8)
        p = lambda a: a.ctypes.data_as(ctypes.c_void_p)
        if N:
            self._lib.sfm_predict_flat(p(X), N, p(b), p(scores), p(proba), p(label), p(cost), p(stage), p(used))
        return self._prediction(scores, proba, label, cost, stage, used[:, :F].astype(bool))

    def _predict_lazy(self, X, b) -> Prediction:
        m = self.model
        N, F = X.shape[0], m.n_features
        ws = ctypes.create_string_buffer(self._lib.sfm_workspace_size())
        fetched = np.zeros(N, np.int64)
        state = {"row": 0}

        def fetch(_ctx, j):
            if not 0 <= j < F:
                raise IndexError(f"feature {j} requested; the model has {F}")
            fetched[state["row"]] += 1
            return float(X[state["row"], j])
        cb = self._Fetch(fetch)
        res = self._Result()
        scores, proba, label, cost, stage = self._buffers(N)
        used = np.zeros((N, F), bool)
        words = (F + 31) // 32 or 1
        for i in range(N):
            state["row"] = i
            self._lib.sfm_predict_lazy(cb, None, float(b[i]), ws, ctypes.byref(res))
            scores[i] = np.ctypeslib.as_array(res.scores)
            proba[i] = np.ctypeslib.as_array(res.proba)
            label[i], cost[i], stage[i] = res.label, res.cost, res.stage
            # feature_bits is the workspace's first member
            bits = np.frombuffer(ws.raw[:4 * words], dtype="<u4")
            used[i] = ((bits[np.arange(F) // 32] >> (np.arange(F) % 32)) & 1).astype(bool)
        self.last_fetch_counts = fetched
        return self._prediction(scores, proba, label, cost, stage, used)

    def _buffers(self, N):
        """Zeroed per-row outputs as sfm_result lays them out: scores, proba,
        label, cost, stage."""
        return (np.zeros((N, self.model.task.n_outputs), np.float32),
                np.zeros((N, max(self._P, 1)), np.float32), np.zeros(N, np.int32),
                np.zeros(N, np.float64), np.zeros(N, np.int32))

    def _prediction(self, scores, proba, label, cost, stage, used) -> Prediction:
        task = self.model.task
        if task.kind == "regression":
            output = scores[:, 0].copy() if scores.shape[1] == 1 else scores
        else:
            output = np.asarray(task.classes)[label]
        return Prediction(output=output, scores=scores, proba=proba if self._P else None,
                          cost=cost, stage=stage.astype(np.int64), features_used=used)
