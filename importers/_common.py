"""What every importer shares: reading the user's costs, building the model."""
from __future__ import annotations

import os
import warnings

import numpy as np

from ..ir import builders
from ..ir.feature_costs import FeatureCosts, match_columns
from ..ir.json_io import nodes_version

IMPORTER_VERSION = 2              # 2: LightGBM and scikit-learn trees as float64 banks


def resolve_costs(feature_costs, n_features: int, names=None, *, by_position=False) -> FeatureCosts:
    """The ``FeatureCosts`` of an imported model with ``n_features`` columns.

    Parameters
    ----------
    feature_costs : FeatureCosts, str or path (a cost CSV), array of float, or None
        None: every feature costs 1.  Matched to the source model's feature
        names by ``ir.feature_costs.match_columns``, the rule training
        follows: named costs by name (rearranged to the model's order; a
        name on one side only is an error listing both), costs without names
        (an array) by position, taking the model's names.
    n_features : int
        Columns the source model reads.
    names : list of str, optional
        The source model's feature names, if it stores any.
    by_position : bool
        Pair named costs with the source's features by position even when
        the names differ (the costs' names are kept): the user's explicit
        choice, never a fallback.
    """
    if isinstance(feature_costs, (str, os.PathLike)):
        feature_costs = FeatureCosts.from_csv(feature_costs)
    elif feature_costs is not None and not isinstance(feature_costs, FeatureCosts):
        feature_costs = FeatureCosts.from_arrays(np.asarray(feature_costs, np.float64))
    return match_columns(feature_costs, names, n_features, by_position=by_position,
                         what="the source model's feature names")


def cost_argument(feature_costs, costs, where: str):
    """``feature_costs``, or the same given by its former name ``costs=``
    (accepted for one release, with a ``DeprecationWarning``)."""
    if costs is None:
        return feature_costs
    warnings.warn(f"{where}(costs=...) is deprecated: write feature_costs=...; costs= goes in the next "
                  "release", DeprecationWarning, stacklevel=3)
    if feature_costs is not None:
        raise TypeError(f"{where}: give feature_costs or costs (its former name), not both")
    return costs


_COST_PARAMETERS = """feature_costs : FeatureCosts, cost CSV path, array [F] or None
        Feature costs and groups (None: every feature costs 1), matched to
        {names} by name when both have names, else
        by position (docs/importers.md); a name on one side only is an error.
    by_position : bool, default False
        Pair named costs with the model's features by position even though
        their names differ (the costs' names are kept).
    costs : deprecated
        The former name of ``feature_costs``."""


def cost_parameters_doc(names: str):
    """Fill an importer docstring's ``{cost_parameters}`` with the cost
    arguments every importer takes, written once (``names``: what the costs
    are matched to)."""
    def fill(fn):
        fn.__doc__ = (fn.__doc__ or "").replace("{cost_parameters}", _COST_PARAMETERS.format(names=names))
        return fn
    return fill


def bank_model(trees, costs: FeatureCosts, task, *, base_score, source: str, info: dict,
               precision="float32", divisor=1.0, category_rule="integer"):
    """One IR model whose output is one bank of the imported trees.

    ``trees`` are dicts of local arrays (``ir.concat_trees``'s input), in
    the order the source library adds them up.  ``precision="float64"``
    keeps the source's double leaves and base score and sums them in
    double, then divides by ``divisor`` (a forest's mean), as the source
    does.  ``category_rule``: which values the source reads as category
    codes, for trees with category-set splits (``ir.CategorySplits``).
    """
    bank = builders.concat_trees(trees, base_score=base_score, name=source, precision=precision,
                                 divisor=divisor, category_rule=category_rule)
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
