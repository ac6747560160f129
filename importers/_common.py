"""What every importer shares: reading the user's costs, building the model."""
from __future__ import annotations

import os

import numpy as np

from ..ir import builders
from ..ir.feature_costs import FeatureCosts
from ..ir.json_io import nodes_version

IMPORTER_VERSION = 2              # 2: LightGBM and scikit-learn trees as float64 banks


def resolve_costs(costs, n_features: int, names=None) -> FeatureCosts:
    """The ``FeatureCosts`` of an imported model with ``n_features`` columns.

    Parameters
    ----------
    costs : FeatureCosts, str or path (a cost CSV), array of float, or None
        None: every feature costs 1.  A ``FeatureCosts`` (or CSV) whose names
        are the model's feature names in another order is rearranged to the
        model's order; otherwise it must have one entry per column.
    n_features : int
        Columns the source model reads.
    names : list of str, optional
        The source model's feature names, if it stores any.
    """
    if costs is None:
        fc = FeatureCosts.uniform(n_features)
        return FeatureCosts.from_arrays(fc.costs, names=names) if names else fc
    if isinstance(costs, (str, os.PathLike)):
        costs = FeatureCosts.from_csv(costs)
    if not isinstance(costs, FeatureCosts):
        return FeatureCosts.from_arrays(np.asarray(costs, np.float64), names=names)
    if names and set(costs.names) == set(names) and list(costs.names) != list(names):
        return costs.reordered(names)
    if costs.n_features != n_features:
        raise ValueError(f"costs: {costs.n_features} feature costs for a model that reads {n_features} "
                         "features; give one cost per column, or a cost file whose names are the "
                         "model's feature names")
    return costs


def bank_model(trees, costs: FeatureCosts, task, *, base_score, source: str, info: dict,
               precision="float32", divisor=1.0):
    """One IR model whose output is one bank of the imported trees.

    ``trees`` are dicts of local arrays (``ir.concat_trees``'s input), in
    the order the source library adds them up.  ``precision="float64"``
    keeps the source's double leaves and base score and sums them in
    double, then divides by ``divisor`` (a forest's mean), as the source
    does.
    """
    bank = builders.concat_trees(trees, base_score=base_score, name=source, precision=precision,
                                 divisor=divisor)
    meta = {"trainer": f"import:{source}", "importer_version": IMPORTER_VERSION,
            "format_version": nodes_version([bank]), "source": dict(info)}
    return builders.model(costs.features(), [bank], 0, task=task, groups=costs.ir_groups(), metadata=meta)


def one_hot_values(leaf: np.ndarray, column: int, width: int) -> np.ndarray:
    """Leaf values [M] as [M, width]: ``leaf`` in ``column``, -0.0 elsewhere.

    -0.0 is the exact additive identity of IEEE arithmetic (x + -0.0 == x
    for every x, -0.0 included), so a multiclass bank's sum for class k is
    bit for bit the sum of class k's trees alone.
    """
    out = np.full((leaf.shape[0], width), -0.0, np.float64)
    out[:, column] = leaf
    return out
