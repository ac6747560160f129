"""Run generated C through the common ``predict(X, budget=None)``.

``CRuntime(model, api="dense"|"lazy", cc=None, target=None)`` renders the
model's C (``compilers.c``) once.  On the host (``target=None``) it builds a
shared library into a cache keyed by the source text, compiler and flags,
and loads it: ``api="dense"`` uses the flat batch entry point (a
model whose output is a tree bank walks blocks of rows through each tree;
``api="rows"`` builds it to walk one row at a time), ``api="lazy"``
drives the on-demand API row by row with a fetch callback
that counts its calls (``Prediction.fetches``).  With ``target`` (a name in
``runtimes.c_targets.TARGETS``: a cross compiler under qemu, a sanitizer
build) each ``predict`` builds a program with the rows embedded and runs it
there.

A model whose output is a query-level exit ranks whole queries:
``CRuntime(model).rank(X, group, budget=None)`` (``api="dense"`` calls
``<prefix>_rank_query``, ``api="lazy"`` ``<prefix>_rank_query_lazy`` with a
fetch callback that counts its calls) returns the reference's ``Ranking``.
"""
from __future__ import annotations

import ctypes
import hashlib
import os
import shutil
import subprocess
import tempfile

import numpy as np

from ..compilers.c import C_FLAGS, MAX_CATEGORY_WORDS, render
from .c_targets import TARGETS, prediction, run_on_target, run_rank_on_target
from .prediction import Prediction, Ranking, as_budget, as_features, as_group_sizes, finish

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


def _ptr(a):
    return a.ctypes.data_as(ctypes.c_void_p)


class CRuntime:
    """Generated C: the same ``predict(X, budget=None) -> Prediction`` as
    the reference.  ``api``: "dense" (every feature of a row given) or
    "lazy" (features fetched on demand; the prediction carries the per-row
    fetch counts).  ``cc`` picks the host compiler; ``target`` runs on
    another target instead (``c_targets.TARGETS``).  ``tables``:
    ``ir.lowering.lower(model)`` when the caller has it already."""

    def __init__(self, model, *, api="dense", cc=None, target=None, opt="-O2", flags=(), tables=None):
        if api not in ("dense", "lazy", "rows"):
            raise ValueError(f"api must be 'dense', 'lazy' or 'rows', not {api!r}")
        if api == "rows" and target is not None:
            raise ValueError("api='rows' runs on the host only (a target's dense run is the batch walk)")
        self.model, self.api, self.target = model, api, target
        self.name = {"dense": "c", "lazy": "c-lazy", "rows": "c-rows"}[api] + (f"@{target}" if target else "")
        # a target's own limit on category sets (a microcontroller's flash)
        limit = TARGETS[target].max_category_words if target in TARGETS else MAX_CATEGORY_WORDS
        self.sources = render(model, PREFIX, tables=tables, max_category_words=limit)
        self._P = model.task.n_proba
        # a float64 output bank returns double scores (docs/numerics.md)
        self._score_dtype = np.float64 if model.output_is_float64 else np.float32
        if target is not None:
            if target not in TARGETS:
                raise ValueError(f"target {target!r}: expected one of {sorted(TARGETS)}")
            if cc is not None or flags:
                raise ValueError("target sets its own compiler and flags: pass cc/flags only for the host")
            return
        self.cc = find_cc(cc)
        # "rows": the dense entry points built to walk one row at a time
        # (<PREFIX>_ROW_BY_ROW), the evaluator the batch walk must equal
        self.flags = [opt, *flags] + ([f"-D{PREFIX.upper()}_ROW_BY_ROW"] if api == "rows" else [])
        self.library_path = build_shared(self.sources, self.cc, self.flags)
        self._lib = ctypes.CDLL(self.library_path)
        self._bind()

    def _bind(self):
        m, lib = self.model, self._lib
        K = m.task.n_outputs
        ptr = ctypes.c_void_p
        lib.sfm_predict_flat.argtypes = [ptr, ctypes.c_int32, ptr, ptr, ptr, ptr, ptr, ptr, ptr]
        lib.sfm_predict_flat.restype = None
        lib.sfm_workspace_size.restype = ctypes.c_uint32

        score_t = ctypes.c_double if self._score_dtype == np.float64 else ctypes.c_float

        class Result(ctypes.Structure):
            _fields_ = [("scores", score_t * K), ("proba", ctypes.c_float * max(self._P, 1)),
                        ("label", ctypes.c_int32), ("cost", ctypes.c_double), ("stage", ctypes.c_int32)]
        self._Result = Result
        self._Fetch = ctypes.CFUNCTYPE(ctypes.c_float, ctypes.c_void_p, ctypes.c_int32)
        lib.sfm_predict_lazy.argtypes = [self._Fetch, ptr, ctypes.c_double, ptr, ctypes.POINTER(Result)]
        lib.sfm_predict_lazy.restype = ctypes.c_int32
        if m.scores_queries:
            out = [ptr] * 9   # scores, cost, stage, n_trees, dropped, order, used, workspace + its bytes
            out[-1] = ctypes.c_size_t
            lib.sfm_rank_query.argtypes = [ptr, ctypes.c_int32, ptr, *out]
            lib.sfm_rank_query.restype = ctypes.c_int32
            self._DocFetch = ctypes.CFUNCTYPE(ctypes.c_float, ctypes.c_void_p, ctypes.c_int32, ctypes.c_int32)
            lib.sfm_rank_query_lazy.argtypes = [self._DocFetch, ptr, ctypes.c_int32, ptr, *out]
            lib.sfm_rank_query_lazy.restype = ctypes.c_int32
            for f in (lib.sfm_rank_query_workspace_bytes, lib.sfm_rank_query_lazy_workspace_bytes):
                f.argtypes = [ctypes.c_int32]
                f.restype = ctypes.c_size_t

    def rank(self, X, group, budget=None) -> Ranking:
        """Whole queries through ``<prefix>_rank_query`` (``api="lazy"``:
        ``_rank_query_lazy``, fetches counted per document), one call per
        query with a workspace sized for the longest; the same ``Ranking``
        as the reference runtime's ``rank``."""
        m = self.model
        if not m.scores_queries:
            raise ValueError("rank: this model has no query-level exit; its rows are scored independently: "
                             "use predict(X)")
        if self.api == "rows":
            raise NotImplementedError("rank: api 'rows' is the per-row batch walk; rank with 'dense' or 'lazy'")
        if self.target is not None:   # a program with the queries embedded (a sanitizer build, qemu)
            dense, lazy, _ = run_rank_on_target(m, X, group, budget, self.target)
            return lazy if self.api == "lazy" else dense
        X = as_features(X, m.n_features, m.feature_names)
        N, F = X.shape[0], m.n_features
        offsets = as_group_sizes(group, N)
        b = as_budget(budget, N)
        scores = np.zeros((N, 1), np.float32)
        cost = np.zeros(N, np.float64)
        stage, trees, order = (np.zeros(N, np.int32) for _ in range(3))
        dropped = np.zeros(N, np.uint8)
        used = np.zeros((N, max(F, 1)), np.uint8)
        fetched = np.zeros(N, np.int64)
        lazy = self.api == "lazy"
        sizes = np.diff(offsets)
        nbytes = 0
        if N:
            need = self._lib.sfm_rank_query_lazy_workspace_bytes if lazy else self._lib.sfm_rank_query_workspace_bytes
            nbytes = need(int(sizes.max()))
            if nbytes == 0:
                raise ValueError(f"group: a query of {int(sizes.max())} documents is more than the C API takes")
        ws = ctypes.create_string_buffer(max(nbytes, 1))
        state = {"a": 0}

        def fetch(_ctx, doc, j):
            if not (0 <= j < F and 0 <= doc < sizes[state["q"]]):
                raise IndexError(f"document {doc}, feature {j} requested")
            fetched[state["a"] + doc] += 1
            return float(X[state["a"] + doc, j])
        cb = self._DocFetch(fetch) if lazy else None
        for q in range(len(sizes)):
            a, n = int(offsets[q]), int(sizes[q])
            state.update(a=a, q=q)
            outs = [_ptr(v[a:]) for v in (scores, cost, stage, trees, dropped, order, used)]
            if lazy:
                rc = self._lib.sfm_rank_query_lazy(cb, None, n, _ptr(b[a:]), *outs, ws, nbytes)
            else:
                rc = self._lib.sfm_rank_query(_ptr(X[a:]), n, _ptr(b[a:]), *outs, ws, nbytes)
            if rc != 0:
                raise RuntimeError(f"sfm_rank_query returned {rc} on query {q} ({n} documents)")
            order[a:a + n] += a
        output, proba = finish(m.task, scores)
        return Ranking(output=output, scores=scores, proba=proba, cost=cost, stage=stage.astype(np.int64),
                       features_used=used[:, :F].astype(bool), order=order.astype(np.int64),
                       n_trees=trees.astype(np.int64), dropped=dropped.astype(bool),
                       fetches=fetched if lazy else None)

    def predict(self, X, budget=None) -> Prediction:
        m = self.model
        if m.scores_queries:
            raise ValueError("predict: this model has a query-level exit and ranks whole queries "
                             "(docs/ranking.md); call rank(X, group) instead of scoring rows independently")
        X = as_features(X, m.n_features, m.feature_names)
        N = X.shape[0]
        b = as_budget(budget, N)
        if self.target is not None:
            dense, lazy = run_on_target(m, X, b, self.target, sources=self.sources)
            return lazy if self.api == "lazy" else dense
        if self.api == "lazy":
            return self._predict_lazy(X, b)
        F = m.n_features
        scores, proba, label, cost, stage = self._buffers(N)
        used = np.zeros((N, max(F, 1)), np.uint8)
        if N:
            self._lib.sfm_predict_flat(_ptr(X), N, *map(_ptr, (b, scores, proba, label, cost, stage, used)))
        return prediction(m.task, scores, proba, label, cost, stage, used[:, :F].astype(bool))

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
        return prediction(m.task, scores, proba, label, cost, stage, used, fetches=fetched)

    def _buffers(self, N):
        """Zeroed per-row outputs as sfm_result lays them out: scores, proba,
        label, cost, stage."""
        return (np.zeros((N, self.model.task.n_outputs), self._score_dtype),
                np.zeros((N, max(self._P, 1)), np.float32), np.zeros(N, np.int32),
                np.zeros(N, np.float64), np.zeros(N, np.int32))

