"""Run generated C on other targets: cross-compilers under qemu.

``run_on_target(model, X, budgets, target)`` builds a program with the rows
embedded (templates/c/parity_main.c.j2), runs it, and returns the dense and
on-demand results as ``Prediction``s (the on-demand one with its per-row
fetch counts); ``runtimes.c.CRuntime(model, target=...)`` wraps it (this module imports
nothing from ``runtimes.c``: it is the one that imports this).
``target_available(name)`` says whether its toolchain is installed, and why
not.  Bare-metal targets link the start-up code and linker scripts that ship
inside the package (``embedded_dir()``, templates/embedded/).
"""
from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import tempfile
from dataclasses import dataclass, field
from importlib import resources

import numpy as np

from ..compilers.c import C_FLAGS, CORTEX_M_CATEGORY_WORDS, MAX_CATEGORY_WORDS, _env, render
from .prediction import Prediction, as_budget, as_features


def embedded_dir() -> str:
    """The folder of the bare-metal support files installed with the
    package: ``startup.c`` and ``boards/<board>/link.ld``."""
    return str(resources.files("skinflint.templates").joinpath("embedded"))


def bare_metal_files(board) -> dict:
    """{"startup": path, "linker_script": path} for ``board`` (a board of
    templates/embedded/boards, e.g. "mps2-an386" or "microbit")."""
    base = embedded_dir()
    files = {"startup": os.path.join(base, "startup.c"),
             "linker_script": os.path.join(base, "boards", board, "link.ld")}
    missing = [p for p in files.values() if not os.path.isfile(p)]
    if missing:
        raise RuntimeError(f"bare-metal support files missing: {missing}; reinstall skinflint "
                           f"(they ship as package data of skinflint.templates)")
    return files


@dataclass
class Target:
    name: str
    cc: str
    cflags: list
    run: list                 # command prefix; the program path is appended
    needs: list = field(default_factory=list)   # executables that must exist
    bare_metal: str = ""      # examples/embedded board name, if any
    # the most uint32 words one category set may take (compilers.c.compile_c)
    max_category_words: int = MAX_CATEGORY_WORDS


TARGETS = {
    "host-gcc-O2": Target("host-gcc-O2", "gcc", ["-O2"], []),
    "host-gcc-O0": Target("host-gcc-O0", "gcc", ["-O0"], []),
    "host-clang-O2": Target("host-clang-O2", "clang", ["-O2"], []),
    "host-asan-ubsan": Target("host-asan-ubsan", "gcc",
                              ["-O1", "-g", "-fsanitize=address,undefined,float-cast-overflow",
                               "-fno-sanitize-recover=all"], []),
    "aarch64": Target("aarch64", "aarch64-linux-gnu-gcc", ["-O2", "-static"], ["qemu-aarch64"],
                      ["qemu-aarch64"]),
    "armhf": Target("armhf", "arm-linux-gnueabihf-gcc", ["-O2", "-static"], ["qemu-arm"], ["qemu-arm"]),
    "cortex-m4f": Target("cortex-m4f", "arm-none-eabi-gcc",
                         ["-O2", "-mcpu=cortex-m4", "-mthumb", "-mfloat-abi=hard", "-mfpu=fpv4-sp-d16"],
                         ["qemu-system-arm", "-M", "mps2-an386", "-nographic", "-semihosting",
                          "-monitor", "none", "-serial", "none", "-kernel"],
                         ["qemu-system-arm"], "mps2-an386", CORTEX_M_CATEGORY_WORDS),
    "cortex-m0": Target("cortex-m0", "arm-none-eabi-gcc",
                        ["-O2", "-mcpu=cortex-m0", "-mthumb", "-mfloat-abi=soft"],
                        ["qemu-system-arm", "-M", "microbit", "-nographic", "-semihosting",
                         "-monitor", "none", "-serial", "none", "-kernel"],
                        ["qemu-system-arm"], "microbit", CORTEX_M_CATEGORY_WORDS),
}


def target_available(name) -> tuple[bool, str]:
    t = TARGETS[name]
    for exe in [t.cc, *t.needs]:
        if shutil.which(exe) is None:
            return False, f"{exe} is not installed (.ci/run installs the cross toolchains with apt)"
    return True, ""


def _vectors(X, budgets):
    row_bits = ", ".join(f"0x{v:08x}u" for v in X.view(np.uint32).ravel()) or "0u"
    budget_bits = ", ".join(f"0x{v:016x}ull" for v in budgets.view(np.uint64)) or "0ull"
    return row_bits, budget_bits


def build_program(model, X, budgets, target: Target, work_dir, sources=None) -> str:
    """Build the parity program for ``target`` in ``work_dir``: the model's
    C (``sources``: ``compilers.c.render(model, "sfm")``, rendered here if
    not given) and ``X`` with its ``budgets`` embedded.  Returns the
    executable's path."""
    sources = sources or render(model, "sfm", max_category_words=target.max_category_words)
    for name in ("sfm.c", "sfm.h"):
        with open(os.path.join(work_dir, name), "w") as fh:
            fh.write(sources[name])
    row_bits, budget_bits = _vectors(X, budgets)
    F, K, P = model.n_features, model.task.n_outputs, model.task.n_proba
    main = _env.get_template("parity_main.c.j2").render(
        prefix="sfm", n_rows=len(X), row_bits=row_bits, budget_bits=budget_bits, F=F,
        F_arr=max(F, 1), K=K, P=P, wide=model.output_is_float64, chunk=16)
    with open(os.path.join(work_dir, "parity_main.c"), "w") as fh:
        fh.write(main)
    exe = os.path.join(work_dir, "parity")
    cmd = [target.cc, *C_FLAGS, *target.cflags, "-o", exe, os.path.join(work_dir, "parity_main.c"),
           os.path.join(work_dir, "sfm.c")]
    if target.bare_metal:
        files = bare_metal_files(target.bare_metal)
        cmd += [files["startup"], "-T", files["linker_script"], "--specs=rdimon.specs", "-nostartfiles"]
    r = subprocess.run(cmd, capture_output=True, text=True)
    if r.returncode != 0:
        raise RuntimeError(f"build for {target.name} failed ({' '.join(cmd)}):\n{r.stderr[-4000:]}")
    return exe


def prediction(task, scores, proba, label, cost, stage, used, fetches=None) -> Prediction:
    """A ``Prediction`` from the C result fields (label: class index)."""
    if task.kind == "regression":
        output = scores[:, 0].copy() if scores.shape[1] == 1 else scores
    else:
        output = np.asarray(task.classes)[label]
    return Prediction(output=output, scores=scores, proba=proba if task.n_proba else None,
                      cost=cost, stage=np.asarray(stage).astype(np.int64), features_used=used,
                      fetches=fetches)


def _hex32(cols):
    return np.array([[int(c, 16) for c in r] for r in cols], np.uint32)


def _hex64(cols):
    return np.array([[int(c, 16) for c in r] for r in cols], np.uint64)


def _parse(lines, model, n_rows):
    F, K, P = model.n_features, model.task.n_outputs, model.task.n_proba
    out = {}
    for tag in "DL":
        rows = [ln.split() for ln in lines if ln.startswith(tag + " ")]
        if len(rows) != n_rows:
            raise RuntimeError(f"expected {n_rows} '{tag}' lines, got {len(rows)}")
        # a float64 output bank's scores print as 16 hex digits
        if model.output_is_float64:
            scores = _hex64([r[1:1 + K] for r in rows]).view(np.float64).reshape(n_rows, K)
        else:
            scores = _hex32([r[1:1 + K] for r in rows]).view(np.float32).reshape(n_rows, K)
        proba = _hex32([r[1 + K:1 + K + P] for r in rows]).view(np.float32).reshape(n_rows, P) if P else None
        label = _hex32([[r[1 + K + P]] for r in rows]).view(np.int32).ravel()
        cost = _hex64([[r[2 + K + P]] for r in rows]).view(np.float64).ravel()
        stage = _hex32([[r[3 + K + P]] for r in rows]).view(np.int32).ravel().astype(np.int64)
        used = np.array([[c == "1" for c in r[4 + K + P]] for r in rows], bool).reshape(n_rows, F)
        fetches = _hex32([[r[5 + K + P]] for r in rows]).view(np.int32).ravel().astype(np.int64)
        out[tag] = prediction(model.task, scores, proba, label, cost, stage, used,
                              fetches=fetches if tag == "L" else None)
    return out["D"], out["L"]


_last_run: dict = {}   # one program run serves a dense and a lazy CRuntime of one target


def run_on_target(model, X, budgets=None, target="aarch64", timeout=120, sources=None):
    """(dense Prediction, lazy Prediction with its fetch counts) from
    ``target``: one program evaluates every row with both APIs."""
    t = TARGETS[target]
    ok, why = target_available(target)
    if not ok:
        raise RuntimeError(why)
    X = as_features(X, model.n_features, model.feature_names)
    b = as_budget(budgets, len(X))
    sources = sources or render(model, "sfm", max_category_words=t.max_category_words)
    key = hashlib.sha256(b"\0".join([target.encode(), sources["sfm.c"].encode(), X.tobytes(),
                                      b.tobytes()])).hexdigest()
    if key in _last_run:
        return _last_run[key]
    with tempfile.TemporaryDirectory() as work:
        exe = build_program(model, X, b, t, work, sources)
        r = subprocess.run([*t.run, exe], capture_output=True, text=True, timeout=timeout)
        if r.returncode != 0 or "END" not in r.stdout:
            raise RuntimeError(f"{target} run failed (rc {r.returncode}):\n{r.stdout[-1000:]}{r.stderr[-2000:]}")
        result = _parse(r.stdout.splitlines(), model, len(X))
    _last_run.clear()
    _last_run[key] = result
    return result


def run_fuzzer(model, seconds=20, work_dir=None) -> tuple[bool, str]:
    """Build the libFuzzer harness (clang, ASan + UBSan) and run it for a
    bounded time.  Returns (clean, log tail)."""
    if shutil.which("clang") is None:
        raise RuntimeError("clang is not installed")
    own = work_dir is None
    work_dir = work_dir or tempfile.mkdtemp()
    try:
        sources = render(model, "sfm")
        for name in ("sfm.c", "sfm.h"):
            with open(os.path.join(work_dir, name), "w") as fh:
                fh.write(sources[name])
        F = model.n_features
        with open(os.path.join(work_dir, "fuzz_main.c"), "w") as fh:
            fh.write(_env.get_template("fuzz_main.c.j2").render(prefix="sfm", F=F, F_arr=max(F, 1),
                                                                   query=model.scores_queries))
        exe = os.path.join(work_dir, "fuzz")
        cmd = ["clang", *C_FLAGS, "-O1", "-g", "-fsanitize=fuzzer,address,undefined,float-cast-overflow",
               "-fno-sanitize-recover=all", "-o", exe, os.path.join(work_dir, "fuzz_main.c"),
               os.path.join(work_dir, "sfm.c")]
        r = subprocess.run(cmd, capture_output=True, text=True)
        if r.returncode != 0:
            raise RuntimeError(f"fuzzer build failed: {r.stderr[-3000:]}")
        r = subprocess.run([exe, f"-max_total_time={seconds}", "-seed=1", "-print_final_stats=0"],
                           capture_output=True, text=True, cwd=work_dir, timeout=seconds + 60)
        return r.returncode == 0, (r.stdout + r.stderr)[-3000:]
    finally:
        if own:
            shutil.rmtree(work_dir, ignore_errors=True)


def run_rank_on_target(model, X, group, budgets=None, target="host-asan-ubsan", timeout=300):
    """(dense Ranking, lazy Ranking with per-document fetch counts, {bad
    call: return code}) of a model with a query-level exit, ranked on
    ``target`` by a program (templates/c/rank_main.c.j2) that gives every
    query a workspace and outputs of exactly the sizes asked for, so a
    sanitizer build catches any write past them."""
    from .prediction import Ranking, as_group_sizes, finish
    t = TARGETS[target]
    if t.bare_metal:
        raise NotImplementedError(f"rank on {target}: the ranking program runs on hosted targets (it allocates "
                                  f"each query's buffers), not bare metal")
    ok, why = target_available(target)
    if not ok:
        raise RuntimeError(why)
    X = as_features(X, model.n_features, model.feature_names)
    N, F = X.shape[0], model.n_features
    offsets = as_group_sizes(group, N)
    b = as_budget(budgets, N)
    sources = render(model, "sfm", max_category_words=t.max_category_words)
    row_bits, budget_bits = _vectors(X, b)
    main = _env.get_template("rank_main.c.j2").render(
        prefix="sfm", PREFIX="SFM", n_rows=N, n_queries=len(offsets) - 1, F=F, row_bits=row_bits,
        budget_bits=budget_bits, sizes=", ".join(str(int(s)) for s in np.diff(offsets)))
    with tempfile.TemporaryDirectory() as work:
        for name, text in (("sfm.c", sources["sfm.c"]), ("sfm.h", sources["sfm.h"]), ("rank_main.c", main)):
            with open(os.path.join(work, name), "w") as fh:
                fh.write(text)
        exe = os.path.join(work, "rank")
        cmd = [t.cc, *C_FLAGS, *t.cflags, "-o", exe, os.path.join(work, "rank_main.c"), os.path.join(work, "sfm.c")]
        r = subprocess.run(cmd, capture_output=True, text=True)
        if r.returncode != 0:
            raise RuntimeError(f"build for {target} failed ({' '.join(cmd)}):\n{r.stderr[-4000:]}")
        r = subprocess.run([*t.run, exe], capture_output=True, text=True, timeout=timeout)
        if r.returncode != 0 or "END" not in r.stdout:
            raise RuntimeError(f"{target} run failed (rc {r.returncode}):\n{r.stdout[-1000:]}{r.stderr[-3000:]}")
    lines = r.stdout.splitlines()
    out = []
    for tag in "DL":
        rows = [ln.split() for ln in lines if ln.startswith(tag + " ")]
        if len(rows) != N:
            raise RuntimeError(f"expected {N} '{tag}' lines, got {len(rows)}")
        scores = _hex32([[r[1]] for r in rows]).view(np.float32).reshape(N, 1)
        output, proba = finish(model.task, scores)
        out.append(Ranking(output=output, scores=scores, proba=proba,
                           cost=_hex64([[r[2]] for r in rows]).view(np.float64).ravel(),
                           stage=np.array([int(r[3]) for r in rows], np.int64),
                           n_trees=np.array([int(r[4]) for r in rows], np.int64),
                           dropped=np.array([r[5] == "1" for r in rows], bool),
                           order=np.array([int(r[6]) for r in rows], np.int64),
                           features_used=np.array([[c == "1" for c in r[7]] for r in rows], bool).reshape(N, F),
                           fetches=np.array([int(r[8]) for r in rows], np.int64) if tag == "L" else None))
    errors = {ln.split()[1]: int(ln.split()[2]) for ln in lines if ln.startswith("E ")}
    return out[0], out[1], errors
