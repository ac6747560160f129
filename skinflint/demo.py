"""``skinflint demo``: what a newcomer sees first.

Evaluates the bundled example models (examples/models, also shipped as
built-in builders) with the reference runtime, showing predictions, lazy
cost per row against the static cost, and what a budget does.
"""
from __future__ import annotations

import os

import numpy as np


def _example_models():
    from . import ir
    here = os.path.dirname(os.path.abspath(__file__))
    folder = os.path.join(os.path.dirname(here), "examples", "models")
    if not os.path.isdir(folder):
        return {}
    return {f[:-5]: ir.load(os.path.join(folder, f)) for f in sorted(os.listdir(folder)) if f.endswith(".json")}


def run_demo(out_dir="skinflint-demo", quick=False):
    from .runtimes.reference import predict
    rng = np.random.default_rng(0)
    models = _example_models()
    if not models:
        print("the example models are not available (run from a source checkout)")
        return
    print(f"{'model':<20} {'rows':>5} {'static cost':>12} {'mean lazy cost':>15} "
          f"{'budget':>8} {'mean cost':>10} {'rows cut':>9}")
    for name, m in models.items():
        X = rng.normal(size=(200, m.n_features)).astype(np.float32) * 2
        p = predict(m, X)
        static = m.static_cost()
        b = 0.5 * static
        pb = predict(m, X, budget=b)
        cut = int(np.sum(pb.stage < p.stage))
        print(f"{name:<20} {len(X):>5} {static:>12g} {p.cost.mean():>15.3f} {b:>8g} "
              f"{pb.cost.mean():>10.3f} {cut:>9}")
