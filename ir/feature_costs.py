"""One cost specification: what each feature and each group costs.

Every trainer, the CLI and ``skinflint.datasets`` read feature costs through
``FeatureCosts``, so the rules (finite, non-negative, one group per feature,
every group priced) are checked in one place.  Cost units are the user's
(milliseconds, joules, index lookups): the IR only adds them up
(docs/costs.md).  A group is a descriptor: the first feature fetched from
it pays the group's cost once, then each feature its own.

Names are the key wherever names exist (``match_columns``): costs with names
are matched to the data's column names by name, in Python, on the command
line and in the importers alike; costs without names (the default ``x0``,
``x1``, ...) are matched to the columns by position and take their names.
"""
from __future__ import annotations

import csv
import math
import os
from dataclasses import dataclass

import numpy as np

from .model import Feature, Group


@dataclass(frozen=True, eq=False)
class FeatureCosts:
    """Feature costs, optional groups (descriptors) and names.

    Attributes
    ----------
    costs : ndarray of float64, shape (n_features,)
        Each feature's own cost, paid the first time a row fetches it.
    groups : ndarray of int64, shape (n_features,)
        Index into ``group_costs`` of each feature's group, or -1 for none.
    group_costs : ndarray of float64, shape (n_groups,)
        Paid once per row, the first time any feature of the group is fetched.
    names, group_names : tuple of str
        Feature and group names (``x0``, ``x1``, ... and ``group0``, ... by
        default); they go into the IR, the ONNX metadata and the C header.
    """

    costs: np.ndarray
    groups: np.ndarray
    group_costs: np.ndarray
    names: tuple
    group_names: tuple

    # ------------------------------------------------------------ builders
    @classmethod
    def from_arrays(cls, costs, groups=None, group_costs=None, names=None,
                    group_names=None) -> FeatureCosts:
        """Validate and build from plain arrays (``groups`` -1 = no group)."""
        c = np.array(costs, np.float64, ndmin=1)
        if c.ndim != 1:
            raise ValueError(f"feature_costs: expected a 1-d array, got shape {c.shape}")
        F = c.shape[0]
        if not np.all(np.isfinite(c) & (c >= 0)):
            bad = int(np.flatnonzero(~(np.isfinite(c) & (c >= 0)))[0])
            raise ValueError(f"feature_costs must be finite and >= 0 (feature {bad} costs {c[bad]})")
        g = np.full(F, -1, np.int64) if groups is None else np.array(groups, np.int64, ndmin=1)
        if g.shape != (F,):
            raise ValueError(f"feature_groups: {g.shape} for {F} features")
        gc = np.zeros(0) if group_costs is None else np.array(group_costs, np.float64, ndmin=1)
        if gc.ndim != 1:
            raise ValueError(f"group_costs: expected a 1-d array, got shape {gc.shape}")
        if g.max(initial=-1) >= gc.shape[0] or g.min(initial=-1) < -1:
            raise ValueError(f"feature_groups refers to group {int(g.max())} but group_costs has "
                             f"{gc.shape[0]} entries")
        if not np.all(np.isfinite(gc) & (gc >= 0)):
            raise ValueError("group_costs must be finite and >= 0")
        names = tuple(f"x{i}" for i in range(F)) if names is None else tuple(str(n) for n in names)
        if len(names) != F:
            raise ValueError(f"feature_names: {len(names)} names for {F} features")
        gnames = (tuple(f"group{i}" for i in range(gc.shape[0])) if group_names is None
                  else tuple(str(n) for n in group_names))
        if len(gnames) != gc.shape[0]:
            raise ValueError(f"group_names: {len(gnames)} names for {gc.shape[0]} groups")
        for a in (c, g, gc):
            a.setflags(write=False)
        return cls(c, g, gc, names, gnames)

    @classmethod
    def uniform(cls, n_features, cost=1.0) -> FeatureCosts:
        """Every feature costs ``cost``; no groups."""
        return cls.from_arrays(np.full(int(n_features), float(cost)))

    @classmethod
    def from_csv(cls, path) -> FeatureCosts:
        """Read a cost CSV with header ``name,cost,group``.  A row named
        ``group:G`` sets the cost of group G; ``group`` may be empty.  Groups
        are numbered in sorted name order."""
        names: list[str] = []
        costs: list[float] = []
        member: list[str] = []
        gcost: dict[str, float] = {}
        first: dict[str, int] = {}
        with open(path, newline="") as fh:
            reader = csv.DictReader(fh)
            if reader.fieldnames is None or not {"name", "cost"} <= {f.strip() for f in reader.fieldnames}:
                raise ValueError(f"{path}: expected a header 'name,cost,group'")
            for ln, row in enumerate(reader, 2):
                row = {k.strip(): (v or "").strip() for k, v in row.items() if k}
                try:
                    c = float(row["cost"])
                except ValueError:
                    raise ValueError(f"{path}: line {ln}: cost {row['cost']!r} is not a number") from None
                if not math.isfinite(c) or c < 0:
                    raise ValueError(f"{path}: line {ln}: cost {c} must be finite and >= 0")
                if not row["name"]:
                    raise ValueError(f"{path}: line {ln}: empty name")
                if row["name"] in first:
                    raise ValueError(f"{path}: line {ln}: duplicate name {row['name']!r} "
                                     f"(first on line {first[row['name']]})")
                first[row["name"]] = ln
                if row["name"].startswith("group:"):
                    gcost[row["name"][6:]] = c
                else:
                    names.append(row["name"])
                    costs.append(c)
                    member.append(row.get("group", ""))
        missing = sorted({g for g in member if g and g not in gcost})
        if missing:
            raise ValueError(f"{os.fspath(path)}: groups without a 'group:NAME' cost row: "
                             f"{', '.join(missing)}")
        gnames = sorted(gcost)
        groups = [gnames.index(g) if g else -1 for g in member]
        return cls.from_arrays(costs, groups, [gcost[g] for g in gnames], names, gnames)

    @classmethod
    def from_model(cls, model) -> FeatureCosts:
        """The costs an IR model carries."""
        return cls.from_arrays(model.feature_costs, model.feature_groups,
                               model.group_costs, [f.name for f in model.features],
                               [g.name for g in model.groups])

    # ------------------------------------------------------------ queries
    @property
    def n_features(self) -> int:
        return int(self.costs.shape[0])

    def check_n_features(self, n_features):
        """Raise unless these costs describe ``n_features`` columns."""
        if n_features != self.n_features:
            raise ValueError(f"feature_costs: {self.n_features} costs for {n_features} features")
        return self

    @property
    def named(self) -> bool:
        """False when the names are the defaults ``x0``, ``x1``, ... (costs
        given without names), which ``match_columns`` matches by position."""
        return self.names != default_names(self.n_features)

    def reordered(self, names) -> FeatureCosts:
        """The same costs, rearranged to follow the column ``names`` (every
        name on both sides; see ``match_columns``)."""
        names = [str(n) for n in names]
        _refuse_duplicates(names, "the data's columns")
        _refuse_duplicates(self.names, "the feature costs")
        if sorted(names) != sorted(self.names):
            raise ValueError(mismatch_message(self.names, names))
        where = {n: i for i, n in enumerate(self.names)}
        order = [where[n] for n in names]
        return FeatureCosts.from_arrays(self.costs[order], self.groups[order], self.group_costs,
                                        names, self.group_names)

    def renamed(self, names) -> FeatureCosts:
        """The same costs in the same order under other feature ``names``."""
        return FeatureCosts.from_arrays(self.costs, self.groups, self.group_costs, names, self.group_names)

    def match_columns(self, columns, n_features=None, *, by_position=False,
                      what="the data's columns") -> FeatureCosts:
        """These costs in the order of the data's columns (``match_columns``)."""
        return match_columns(self, columns, n_features, by_position=by_position, what=what)

    def features(self) -> list:
        """The ``ir.Feature`` list of a model with these costs."""
        return [Feature(n, float(c), None if g < 0 else int(g))
                for n, c, g in zip(self.names, self.costs, self.groups)]

    def ir_groups(self) -> list:
        """The ``ir.Group`` list of a model with these costs."""
        return [Group(n, float(c)) for n, c in zip(self.group_names, self.group_costs)]

    def to_dict(self) -> dict:
        """A JSON-ready dict (used when an estimator's parameters are written
        into a model's metadata)."""
        return {"costs": self.costs.tolist(), "groups": self.groups.tolist(),
                "group_costs": self.group_costs.tolist(), "names": list(self.names),
                "group_names": list(self.group_names)}

    def __eq__(self, other):
        if not isinstance(other, FeatureCosts):
            return NotImplemented
        return (self.names == other.names and self.group_names == other.group_names
                and np.array_equal(self.costs, other.costs) and np.array_equal(self.groups, other.groups)
                and np.array_equal(self.group_costs, other.group_costs))

    __hash__ = None   # type: ignore[assignment]  # mutable-looking arrays inside: not a dict key

    def __repr__(self):
        return (f"FeatureCosts({self.n_features} features, {self.group_costs.shape[0]} groups, "
                f"total {float(self.costs.sum() + self.group_costs.sum()):g})")


# ---------------------------------------------------------------- names


def default_names(n_features) -> tuple:
    """The names of features given without names: ``x0``, ``x1``, ..."""
    return tuple(f"x{i}" for i in range(int(n_features)))


def _listed(names, limit=10) -> str:
    names = list(names)
    shown = ", ".join(repr(n) for n in names[:limit])
    return f"[{shown}{f', ... (+{len(names) - limit})' if len(names) > limit else ''}]"


def _refuse_duplicates(names, what):
    seen = set()
    for n in names:
        if n in seen:
            raise ValueError(f"{what}: duplicate name {n!r}; names must be unique to match costs by name")
        seen.add(n)


def mismatch_message(cost_names, columns, what="the data's columns") -> str:
    """One line saying which names are on one side only, listing both sides."""
    column_set, cost_set = set(columns), set(cost_names)
    only_costs = [n for n in cost_names if n not in column_set]
    only_data = [n for n in columns if n not in cost_set]
    return (f"feature costs do not match {what} by name: only in the costs: {_listed(only_costs)}; "
            f"only in {what}: {_listed(only_data)} ({len(cost_names)} costs, {len(columns)} columns)")


def match_columns(costs, columns, n_features=None, *, by_position=False,
                  what="the data's columns") -> FeatureCosts:
    """The one rule that pairs feature costs with data columns.

    Parameters
    ----------
    costs : FeatureCosts or None
        None: every feature costs 1.
    columns : sequence of str or None
        The data's column names (a DataFrame's columns, a CSV header, a
        source model's feature names); None when the data have no names.
    n_features : int, optional
        The number of columns (default: ``len(columns)``).
    by_position : bool
        Pair named costs with named columns by position even when the names
        differ (the costs' names are kept).  Only on the user's explicit
        request: the importers' ``by_position=True``, ``--by-position``.
    what : str
        How errors name the columns' side.

    Returns
    -------
    FeatureCosts
        The costs in the columns' order:

        - named costs on named columns: matched by name and rearranged to the
          columns' order; a name on one side only is an error listing both;
        - costs without names (``x0``, ``x1``, ... : ``FeatureCosts.named`` is
          False) on named columns: matched by position, one cost per column,
          and named after the columns;
        - any costs on columns without names: by position, one per column;
        - no costs: unit costs named after the columns, if they have names.
    """
    if columns is not None:
        columns = [str(c) for c in columns]
    n = len(columns) if n_features is None and columns is not None else n_features
    if n is None:
        raise ValueError("match_columns: give columns or n_features")
    if columns is not None and len(columns) != n:
        raise ValueError(f"{what}: {len(columns)} names for {n} columns")
    if costs is None:
        costs = FeatureCosts.uniform(n)
        return costs.renamed(columns) if columns is not None else costs
    if columns is None or by_position:
        return costs.check_n_features(n)
    _refuse_duplicates(columns, what)
    if not costs.named and set(costs.names) != set(columns):
        # unnamed costs (x0, x1, ...) go by position; but columns that are
        # themselves called x0, x1, ... in another order are matched by name
        return costs.check_n_features(n).renamed(columns)
    if list(costs.names) == columns:
        return costs
    if sorted(costs.names) != sorted(columns):
        raise ValueError(mismatch_message(costs.names, columns, what))
    return costs.reordered(columns)


def column_order(model_names, columns, *, what="the data") -> np.ndarray:
    """Which column of a table with a header feeds each of a model's features.

    Parameters
    ----------
    model_names : sequence of str
        The model's feature names, in the model's order.
    columns : sequence of str
        The table's header.

    Returns
    -------
    ndarray of int64, shape (n_features,)
        ``X[:, order]`` are the model's features in the model's order.  One
        column more than the model reads, last and not a feature (a label),
        is left out; a model whose names are the defaults (``x0``, ...) reads
        the columns by position.  Any other missing or extra name is an error
        naming them.
    """
    model_names, columns = [str(n) for n in model_names], [str(c) for c in columns]
    F = len(model_names)
    _refuse_duplicates(columns, what)
    if tuple(model_names) == default_names(F) and not set(model_names) & set(columns):
        if len(columns) in (F, F + 1):
            return np.arange(F, dtype=np.int64)
        raise ValueError(f"{what}: {len(columns)} columns, but the model has {F} features")
    where = {c: i for i, c in enumerate(columns)}
    missing = [n for n in model_names if n not in where]
    model_set = set(model_names)
    extra = [c for c in columns if c not in model_set]
    label = extra == [columns[-1]] and len(columns) == F + 1
    if missing or (extra and not label):
        raise ValueError(f"{what}: the header does not name the model's features: missing "
                         f"{_listed(missing)}; not in the model: {_listed(extra)} (one extra column, "
                         f"last, is taken as a label)")
    return np.array([where[n] for n in model_names], np.int64)
