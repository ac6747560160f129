"""Helpers every trainer family shares, written once.

* ``single_thread``: BLAS (and, where a fit's reductions run in numba threads,
  numba) pinned to one thread, so a model's bytes do not depend on the thread
  count, and node-sized products gain nothing from threads anyway.
* ``holdout_rows``: the seeded hold-out split of the trainers that carve a
  validation set out of the training rows.
* ``positive_grid``: a parameter that is a positive number or a grid of them
  (chosen on validation rows), checked once with one message.
* ``class_weight_per_class``: scikit-learn's ``class_weight`` (None,
  ``"balanced"`` or a dict keyed by class *label*), resolved once for every
  trainer that takes it.
* ``no_predict_proba``: the ``predict_proba`` of a model whose margin is not a
  probability (an SVM score, a squared-loss score): absent, so that
  ``hasattr(est, "predict_proba")`` is False as scikit-learn expects, and the
  reason is in the error.
* ``progress_bar``: the progress bar of a fit's outer loop, one rule for
  every trainer's ``verbose``.
"""
from __future__ import annotations

import contextlib

import numba
import numpy as np
from sklearn.utils.metaestimators import available_if
from threadpoolctl import threadpool_limits
from tqdm.auto import tqdm

# no delay before a bar appears: with tqdm's delay, a Ctrl-C during a fit was lost now and then
# (a test run's interrupt ended nothing and the fit ran to the end; with no delay it never did)
PROGRESS_DELAY_S = 0.0


@contextlib.contextmanager
def single_thread(*, numba_threads=False):
    """One BLAS thread (and one numba thread with ``numba_threads=True``) for
    the block; usable as ``with single_thread():`` or ``@single_thread()``."""
    with threadpool_limits(limits=1, user_api="blas"):
        if not numba_threads:
            yield
            return
        threads = numba.get_num_threads()
        numba.set_num_threads(1)
        try:
            yield
        finally:
            numba.set_num_threads(threads)


def holdout_rows(n, fraction, rng):
    """A seeded ``(fit_rows, validation_rows)`` split of ``range(n)``.

    ``rng`` is a seed or a ``numpy.random.Generator`` (one permutation is drawn
    from it); the validation part has ``max(1, floor(fraction * n))`` rows."""
    if not 0 < fraction < 1:
        raise ValueError(f"validation_fraction must be in (0, 1), got {fraction!r}")
    if not isinstance(rng, np.random.Generator):
        rng = np.random.default_rng(rng)
    perm = rng.permutation(n)
    n_val = max(1, int(fraction * n))
    return perm[n_val:], perm[:n_val]


def positive_grid(value, name):
    """``value``, a positive number or a non-empty sequence of them, as a 1-d
    float64 array: one value is the parameter, several a grid to choose from
    on validation rows.  ``name`` is the parameter's, for the error."""
    grid = np.atleast_1d(np.asarray(value, np.float64))
    if grid.ndim != 1 or grid.size == 0 or not np.all(np.isfinite(grid) & (grid > 0)):
        raise ValueError(f"{name} must be a positive number or a non-empty sequence of them, got {value!r}")
    return grid


def class_weight_per_class(class_weight, classes, idx):
    """Weight of each class of ``classes`` (in ``classes`` order), float64.

    ``class_weight`` is None (all 1), ``"balanced"`` (n / (K * n_k), as
    scikit-learn) or a dict keyed by class label (classes not named weigh 1).
    ``idx`` holds the training rows' class indices (for ``"balanced"``)."""
    classes = np.asarray(classes)
    K = len(classes)
    if class_weight is None:
        return np.ones(K)
    if isinstance(class_weight, str):
        if class_weight != "balanced":
            raise ValueError(f"class_weight must be None, 'balanced' or a dict, got {class_weight!r}")
        counts = np.bincount(np.asarray(idx), minlength=K).astype(np.float64)
        return len(idx) / (K * np.maximum(counts, 1.0))
    if not isinstance(class_weight, dict):
        raise ValueError(f"class_weight must be None, 'balanced' or a dict, got {class_weight!r}")
    labels = [c.item() if hasattr(c, "item") else c for c in classes]
    unknown = [k for k in class_weight if k not in labels]
    if unknown:
        raise ValueError(f"class_weight: {unknown!r} are not class labels; the classes are {labels!r}")
    per = np.array([float(class_weight.get(c, 1.0)) for c in labels])
    if not (np.all(np.isfinite(per)) and np.all(per > 0)):
        raise ValueError(f"class_weight: weights must be finite and > 0, got {per.tolist()}")
    return per


def no_predict_proba(reason):
    """A ``predict_proba`` that is never available: ``hasattr`` is False, and
    calling it through the class says ``reason``."""
    @available_if(lambda est: False)
    def predict_proba(self, X, budget=None):  # pragma: no cover - never available
        raise AttributeError(f"{type(self).__name__} has no predict_proba: {reason}")
    return predict_proba


def progress_bar(verbose, total, desc, unit, iterable=None):
    """A tqdm bar (rate and ETA) over a fit's outer loop of at most ``total``
    steps (or over ``iterable``), shown when ``verbose``; it disappears when
    the fit ends.  Loops that may
    stop early (a converged objective, early stopping) end short of ``total``."""
    return tqdm(iterable, total=total, disable=not verbose, desc=desc, unit=unit, leave=False,
                delay=PROGRESS_DELAY_S)
