"""Scale out on Dask: cost/accuracy sweeps, batch scoring and parity checks.

Three functions mirror their single-machine twins and give the same results
bit for bit:

- ``cost_accuracy_curve(estimator, param_grid, ..., client=None)`` fits each
  grid point as one Dask task (``trainers.curves.cost_accuracy_curve`` on a
  one-point grid); the rows come back in grid order with the same models.
- ``predict(model, X, budget=None, runtime="reference")`` scores a Dask array
  or DataFrame partition by partition and returns a ``Prediction`` whose
  fields are Dask arrays (``compute`` gathers them in one pass).
- ``verify(model, X, budget=None, runtimes=("onnx", "c", "c-lazy"))`` checks
  every partition against the reference and merges the partition reports
  into the report of the whole collection.

Models travel as their JSON text (``ir.to_json``), once per graph: it is one
key of the graph, moved to each worker once.  Each worker builds a runtime
once per (model, runtime, options) and keeps it in a small per-process cache
(``worker_runtime``), so a task carries only the rows.  Per-row budgets
travel with the rows: a Dask array chunked like X's rows, or a column of the
DataFrame.  Dask is an optional dependency: ``pip install 'skinflint[dask]'``.
"""
from __future__ import annotations

import dataclasses
import hashlib
import operator
import threading
import time
from collections import OrderedDict

import numpy as np

from . import ir
from .runtimes.prediction import Prediction, as_budget, as_features
from .runtimes.registry import DEFAULT_CHECKED, make_runtime

__all__ = ["cost_accuracy_curve", "submit_curve", "gather_curve", "predict", "compute", "verify", "worker_runtime",
           "warm_workers", "runtime_cache_info"]

def _dask():
    try:
        import dask
        import dask.array as da
    except ImportError:  # pragma: no cover - the extra is installed in CI
        raise ImportError("skinflint.distributed needs Dask: pip install 'skinflint[dask]'") from None
    return dask, da


# ---------------------------------------------------------------- the model as text

def _model_text(model) -> str:
    """The model's JSON text (what travels), from a Model or JSON text."""
    if isinstance(model, str):
        return model
    if isinstance(model, ir.Model):
        return ir.to_json(model)
    raise TypeError(f"model: expected an ir.Model or its JSON text, got {type(model).__name__}")


def _text_key(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()[:24]


# ---------------------------------------------------------------- per-worker runtimes

_CACHE_SIZE = 8
_cache: OrderedDict = OrderedDict()
_builds: dict = {}
_lock = threading.Lock()


def _runtime_key(runtime, options) -> str:
    name = runtime if isinstance(runtime, str) else f"{runtime.__module__}.{runtime.__qualname__}"
    return f"{name}{sorted((options or {}).items())!r}"


def _build(model, runtime, options):
    """A runtime object for ``model``: a name in ``runtimes.RUNTIMES`` or a
    callable ``runtime(model, **options)``."""
    options = dict(options or {})
    if callable(runtime):
        return runtime(model, **options)
    return make_runtime(runtime, model, **options)


def worker_runtime(key: str, text: str, runtime="reference", options=None):
    """The runtime for the model whose JSON text is ``text`` (``key`` names
    it), built on first use in this process and cached (LRU, 8 entries), so
    every later task on the worker reuses it: the ONNX session is made and
    the C library compiled once per worker."""
    rkey = (key, _runtime_key(runtime, options))
    with _lock:
        rt = _cache.get(rkey)
        if rt is not None:
            _cache.move_to_end(rkey)
            return rt
        rt = _build(ir.from_json(text), runtime, options)
        _builds[rkey] = _builds.get(rkey, 0) + 1
        _cache[rkey] = rt
        while len(_cache) > _CACHE_SIZE:
            _cache.popitem(last=False)
        return rt


def runtime_cache_info() -> dict:
    """Runtime builds in this process: ``{"model key|runtime": times built}``
    (run it on the workers with ``client.run(runtime_cache_info)``)."""
    return {f"{k}|{r}": n for (k, r), n in _builds.items()}


def _warm(key, text, runtime, options):
    worker_runtime(key, text, runtime, options)   # the runtime itself stays on the worker


def warm_workers(model, runtime="reference", runtime_options=None, *, client=None) -> dict:
    """Build the runtime on every worker now (for ``runtime="c"``, compile
    there), so that the first partitions do not wait for it; returns
    ``{worker address: times this runtime was built there}`` (1 once warm).
    Default client: ``distributed.default_client()``."""
    from distributed import default_client
    client = client or default_client()
    text = _model_text(model)
    key = _text_key(text)
    rkey = f"{key}|{_runtime_key(runtime, runtime_options)}"
    client.run(_warm, key, text, runtime, runtime_options)
    return {w: info.get(rkey, 0) for w, info in client.run(runtime_cache_info).items()}


# ---------------------------------------------------------------- partitions

def _split_budget(part, budget):
    """(features, budget) of one partition; ``budget`` is None, a number, an
    array of the partition's rows, or the name of a DataFrame column."""
    if isinstance(budget, str):
        if not hasattr(part, "columns") or budget not in part.columns:
            raise ValueError(f"budget: no column {budget!r} in the partition")
        return part.drop(columns=[budget]), part[budget].to_numpy()
    return part, budget


def _with_partition(e: Exception, index: int) -> Exception:
    """The same exception, its message prefixed with the partition."""
    try:
        return type(e)(f"partition {index}: {e}")
    except Exception:  # an exception type whose constructor takes other arguments
        return e


def _predict_partition(key, text, runtime, options, index, part, budget) -> Prediction:
    X, b = _split_budget(part, budget)
    rt = worker_runtime(key, text, runtime, options)
    try:
        return rt.predict(X, b)
    except (ValueError, TypeError) as e:
        raise _with_partition(e, index) from None


def _partitions(X, budget):
    """Delayed (rows, budget) per partition of a Dask array or DataFrame,
    and each partition's row count (NaN where Dask does not know it)."""
    dask, da = _dask()
    if isinstance(X, da.Array):
        if X.ndim != 2:
            raise ValueError(f"X: expected a 2-d Dask array [rows, features], got {X.ndim} dimensions")
        X = X.rechunk({1: -1})
        rows = X.to_delayed()[:, 0]
        counts = list(X.chunks[0])
        if isinstance(budget, da.Array) or (budget is not None and np.ndim(budget) == 1):
            b = budget if isinstance(budget, da.Array) else da.from_array(np.asarray(budget, np.float64),
                                                                          chunks=(X.chunks[0],))
            if b.shape != (X.shape[0],):
                raise ValueError(f"budget: expected a scalar or {X.shape[0]} values, got shape {b.shape}")
            budgets = list(b.rechunk((X.chunks[0],)).to_delayed())
        elif isinstance(budget, str):
            raise ValueError("budget: a column name needs a Dask DataFrame; give a Dask array of budgets")
        else:
            budgets = [budget] * len(rows)
        return list(rows), budgets, counts
    if hasattr(X, "to_delayed") and hasattr(X, "npartitions"):
        rows = list(X.to_delayed())
        counts = [np.nan] * len(rows)
        if budget is not None and hasattr(budget, "to_delayed"):
            if getattr(budget, "npartitions", None) != X.npartitions:
                raise ValueError(f"budget: a Dask series needs X's {X.npartitions} partitions; "
                                 "better, make the budgets a column of X and pass its name")
            budgets = list(budget.to_delayed())
        elif budget is not None and np.ndim(budget) > 0 and not isinstance(budget, str):
            raise ValueError("budget: per-row budgets of a Dask DataFrame travel with its rows: "
                             "make them a column and pass its name (or a Dask series)")
        else:
            budgets = [budget] * len(rows)
        return rows, budgets, counts
    raise TypeError(f"X: expected a Dask array or DataFrame, got {type(X).__name__}; "
                    "for rows in memory use skinflint.runtimes (or dask.array.from_array)")


def _model_delayed(text):
    dask, _ = _dask()
    key = _text_key(text)
    return key, dask.delayed(text, name=f"skinflint-model-{key}")


def predict(model, X, budget=None, *, runtime="reference", runtime_options=None) -> Prediction:
    """Score a Dask collection partition by partition, lazily.

    Parameters
    ----------
    model : ir.Model or str
        The model (sent to the workers as its JSON text, once).
    X : dask.array.Array [N, F] or dask.dataframe.DataFrame
        Rows; float64 is rounded to float32 on the worker, as locally.
    budget : None, float, dask.array.Array [N], numpy array [N] or str
        Per-row cost budget (None: no limit).  An array is chunked like X's
        rows; for a DataFrame, the name of its budget column (the other
        columns are the features) or a Dask series with X's partitions.
    runtime : str or callable, default "reference"
        "reference", "onnx", "c", "c-lazy", or ``runtime(model, **options)``
        returning an object with ``predict(X, budget) -> Prediction``.
    runtime_options : dict, optional
        Keyword options for the runtime (``{"cc": "clang"}``, ...).

    Returns
    -------
    Prediction
        Its fields are Dask arrays over X's rows (None where the runtime
        gives none).  ``compute(prediction)`` gathers all of them in one
        pass; computing fields one by one scores the rows once per field.
    """
    dask, da = _dask()
    text = _model_text(model)
    key, dmodel = _model_delayed(text)
    rows, budgets, counts = _partitions(X, budget)
    task = dask.delayed(_predict_partition, pure=True)
    preds = [task(key, dmodel, runtime, runtime_options, i, r, b)
             for i, (r, b) in enumerate(zip(rows, budgets))]
    # dtypes and trailing shapes from a zero-row prediction by the same runtime
    n_features = (model if isinstance(model, ir.Model) else ir.from_json(text)).n_features
    meta = dask.compute(task(key, dmodel, runtime, runtime_options, -1,
                             np.zeros((0, n_features), np.float32), None))[0]
    fields: dict = {}
    for name in _fields():
        m = getattr(meta, name)
        if m is None:
            fields[name] = None
            continue
        get = operator.attrgetter(name)
        blocks = [da.from_delayed(dask.delayed(get, pure=True)(p), shape=(n, *m.shape[1:]), dtype=m.dtype)
                  for p, n in zip(preds, counts)]
        fields[name] = da.concatenate(blocks) if blocks else da.from_array(m)
    return Prediction(**fields)


def _fields():
    return [f.name for f in dataclasses.fields(Prediction)]


def compute(prediction: Prediction) -> Prediction:
    """A lazy ``predict`` result as numpy arrays, every partition scored once."""
    dask, _ = _dask()
    names = [f for f in _fields() if getattr(prediction, f) is not None]
    values = dask.compute(*[getattr(prediction, f) for f in names])
    return dataclasses.replace(prediction, **dict(zip(names, values)))


# ---------------------------------------------------------------- verify

def _verify_partition(key, text, runtimes, options, index, part, budget, worst):
    """``verify.compare``'s report of each runtime on one partition (rows
    numbered from 0), or the runtime's error as a report."""
    from .verify import BackendReport, compare
    Xp, b = _split_budget(part, budget)
    reference = worker_runtime(key, text, "reference")
    model = reference.model
    try:
        X = as_features(Xp, model.n_features, model.feature_names)
        b = as_budget(b, len(X))
        ref = reference.predict(X, b)
    except (ValueError, TypeError) as e:
        raise _with_partition(e, index) from None
    reports = []
    for spec in runtimes:
        name = _spec_name(spec)
        try:
            got = worker_runtime(key, text, spec, options.get(name)).predict(X, b)
        except (NotImplementedError, RuntimeError) as e:
            reports.append(BackendReport(backend=name, rows=len(X), error=str(e)))
            continue
        reports.append(compare(model, X, ref, got, name, worst=worst))
    return len(X), reports


def _spec_name(spec) -> str:
    if isinstance(spec, str):
        return spec
    return str(getattr(spec, "name", None) or getattr(spec, "__name__", type(spec).__name__))


def _merge(model, n_rows, label, names, parts, worst):
    """The partitions' reports as the report of all rows (``verify.merge_reports``
    after numbering each partition's rows from its offset in the collection)."""
    from .verify import ParityReport, merge_reports
    offset = 0
    for n, reports in parts:
        for rep in reports:
            for w in rep.worst_rows:
                w["row"] += offset
        offset += n
    reports = [merge_reports([reports[j] for _, reports in parts], worst) for j in range(len(names))]
    return ParityReport(model_hash=ir.model_hash(model)[:16], rows=n_rows, budgets=label, backends=reports)


def verify(model, X, budget=None, *, runtimes=DEFAULT_CHECKED, runtime_options=None, worst=3):
    """The parity report of a whole Dask collection, checked partition by
    partition on the workers and merged exactly.

    It equals ``skinflint.verify.verify(model, X_all, runtimes=runtimes,
    budget=budget_all, budgets=None, adversarial=False)`` on the same rows
    gathered into memory: mismatch counts add up, ``max_ulp`` is the
    largest, and the worst rows are the first ``worst`` of all partitions
    (row numbers of the whole collection).  Adversarial rows and budgets
    around each row's cost are for one machine (``skinflint verify``); here
    the rows are yours and a budget travels with each row.

    Parameters
    ----------
    model : ir.Model or str
    X : dask.array.Array or dask.dataframe.DataFrame
    budget : as for ``predict`` (None, a number, per-row array or column name)
    runtimes : sequence of str or callables, default ("onnx", "c", "c-lazy")
        Built once per worker; "reference" is skipped (it is the reference).
    runtime_options : dict, optional
        ``{runtime name: options}``.
    worst : int, default 3
        Worst rows kept per runtime.

    Returns
    -------
    skinflint.verify.ParityReport
    """
    dask, _ = _dask()
    text = _model_text(model)
    model = ir.from_json(text) if isinstance(model, str) else model
    key, dmodel = _model_delayed(text)
    specs = [r for r in ([runtimes] if isinstance(runtimes, str) or callable(runtimes) else runtimes)
             if r != "reference"]
    rows, budgets, _ = _partitions(X, budget)
    task = dask.delayed(_verify_partition, pure=True)
    parts = dask.compute(*[task(key, dmodel, specs, runtime_options or {}, i, r, b, worst)
                           for i, (r, b) in enumerate(zip(rows, budgets))])
    n_rows = sum(n for n, _ in parts)
    if budget is None:
        label = "none"
    elif isinstance(budget, str) or np.ndim(budget) or hasattr(budget, "to_delayed"):
        label = "per row"
    else:
        label = f"{float(budget):g}"
    return _merge(model, n_rows, label, [_spec_name(s) for s in specs], parts, worst)


# ---------------------------------------------------------------- sweeps

def _fit_point(estimator, params, X_train, y_train, X_val, y_val, X_test, y_test, label, choose_rounds):
    """One grid point on a worker: its curve row, the model as JSON text."""
    from .trainers.curves import cost_accuracy_curve as curve
    row = curve(estimator, [{k: [v] for k, v in params.items()}], X_train, y_train, X_val, y_val,
                X_test, y_test, label=label, choose_rounds=choose_rounds, verbose=0)[0]
    row["model"] = ir.to_json(row["model"])
    return row


def submit_curve(estimator, param_grid, X_train, y_train, X_val, y_val, X_test, y_test, *,
                 client=None, label=None, choose_rounds=True) -> list:
    """Submit one task per grid point (grid order) and return the futures
    without waiting; ``gather_curve`` turns them into the curve's rows.
    Arguments as ``cost_accuracy_curve``."""
    from distributed import default_client
    from sklearn.model_selection import ParameterGrid
    client = client or default_client()
    # a copy on every worker (each fit reads all of it anyway): scattered data
    # has no task to recompute it from, so a lone copy would die with its worker
    data = client.scatter([X_train, y_train, X_val, y_val, X_test, y_test], hash=True, broadcast=True)
    token = time.time_ns()
    return [client.submit(_fit_point, estimator, p, *data, label, choose_rounds, pure=False,
                          key=f"skinflint-curve-{token}-{i}")
            for i, p in enumerate(ParameterGrid(param_grid))]


def gather_curve(futures, *, client=None, verbose=1) -> list[dict]:
    """The rows of ``submit_curve``'s futures, in grid order, each model
    read back from its JSON text."""
    from distributed import as_completed, default_client
    from tqdm.auto import tqdm
    client = client or default_client()
    with tqdm(total=len(futures), disable=not verbose, desc="cost/accuracy curve (dask)", leave=False) as bar:
        for _ in as_completed(futures):
            bar.update()
    rows = client.gather(futures)
    for r in rows:
        r["model"] = ir.from_json(r["model"])
    return rows


def cost_accuracy_curve(estimator, param_grid, X_train, y_train, X_val, y_val, X_test, y_test, *,
                        client=None, label=None, choose_rounds=True, verbose=1) -> list[dict]:
    """``trainers.cost_accuracy_curve`` with each grid point fitted as one
    Dask task.

    The rows, in grid order, equal the single-process rows (the models'
    JSON, accuracy, costs, rounds kept) except ``fit_time``, which is each
    point's own fit time on its worker.  The six arrays are scattered to
    every worker once; each task returns its model as JSON text.  A task lost
    with its worker runs again (Dask's ``distributed.scheduler.allowed-failures``,
    default 3, bounds how often).

    Parameters
    ----------
    client : dask.distributed.Client, optional
        Default: the current client (``distributed.default_client()``).
    Others
        As ``trainers.cost_accuracy_curve``; ``verbose`` shows a progress
        bar over finished points.

    Returns
    -------
    list of dict
        As ``trainers.cost_accuracy_curve``.
    """
    futures = submit_curve(estimator, param_grid, X_train, y_train, X_val, y_val, X_test, y_test,
                           client=client, label=label, choose_rounds=choose_rounds)
    return gather_curve(futures, client=client, verbose=verbose)
