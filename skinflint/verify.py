"""The parity harness: the same rows through every runtime, compared to the
reference bit for bit (``skinflint verify``).

``verify(model, X=None, runtimes=("onnx", "c", "c-lazy"), budget=None,
budgets="around")`` returns a ``ParityReport``; ``report.ok`` is True only
when every runtime matches the reference in output, scores, probabilities,
cost, stage, features-used and (for on-demand runtimes) fetch counts on
every row.  A runtime is an object with ``name`` and ``predict(X,
budget=None) -> Prediction`` (``ReferenceRuntime``, ``OnnxRuntime``,
``CRuntime``, built once from the model) or one of the names "onnx", "c",
"c-lazy", built here; the model is lowered once for all of them.

Rows default to adversarial ones: every threshold of the model exactly, one
float32 ulp below and above, NaN and +-inf per feature.  ``budget`` means
what it means to ``predict``: None (no limit), one number for every row, or
one per row.  ``budgets="around"`` (the default) runs every row a second
time with budgets at and around its own cost, the sweep that finds halting
bugs; ``budgets=None`` runs the rows once, with ``budget``.

A model with a query-level exit (``model.scores_queries``, docs/ranking.md)
is checked by ``verify_ranking``: the rows are cut into random queries
(sizes 1 to 1,000, with tied documents forced in), every runtime that can
``rank`` must give the reference's scores, order, per-document cost, stage,
features used, trees done and drops bit for bit; a runtime that cannot rank
is reported with its error (it fails).  The default runtimes all rank:
"onnx" (the query graph, one query per run: compilers/onnx_query.py), "c"
and "c-lazy" (``<prefix>_rank_query``).
"""
from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field

import numpy as np

from .runtimes.prediction import Prediction, as_budget, as_features
from .runtimes.registry import DEFAULT_CHECKED, make_runtime


def _wide(a, b) -> bool:
    """Compare as float64: a float64 tree bank's scores (docs/numerics.md)."""
    return np.asarray(a).dtype == np.float64 or np.asarray(b).dtype == np.float64


def ulp_distance(a, b) -> np.ndarray:
    """Float32 steps between a and b (float64 steps when either is float64:
    a float64 bank's scores); 0 when both are NaN, huge when one is.

    The bit patterns are mapped to integers ordered like the floats (a
    negative float's magnitude bits negated) and subtracted exactly as
    unsigned 64-bit integers: going through float64 would round float64 step
    counts past 2**53 and call values 1 or 2 ulp apart equal."""
    ft: type[np.floating]
    it: type[np.signedinteger]
    if _wide(a, b):
        ft, it, mask = np.float64, np.int64, 0x7FFFFFFFFFFFFFFF
    else:
        ft, it, mask = np.float32, np.int32, 0x7FFFFFFF
    huge = 2**62 if ft is np.float64 else 2**32
    a = np.asarray(a, ft)
    b = np.asarray(b, ft)
    ia = a.view(it).astype(np.int64)
    ib = b.view(it).astype(np.int64)
    ia = np.where(ia < 0, -(ia & mask), ia)
    ib = np.where(ib < 0, -(ib & mask), ib)
    # the difference of two such int64s fits in uint64; wrap-around there is exact
    ua, ub = ia.view(np.uint64), ib.view(np.uint64)
    d = np.where(ia >= ib, ua - ub, ub - ua)
    d = np.minimum(d, np.uint64(huge)).astype(np.int64)   # far-apart float64s saturate
    na, nb = np.isnan(a), np.isnan(b)
    return np.where(na & nb, 0, np.where(na | nb, huge, d))


def _per_row(a):
    """``a`` as [rows, values] (also for zero rows, where reshape(0, -1) fails)."""
    return a.reshape(len(a), int(np.prod(a.shape[1:])))


def _same_bits(a, b):
    """Per-row equality bit for bit (NaNs are canonical): float32 arrays, or
    float64 ones when either is float64."""
    ft, ut = (np.float64, np.uint64) if _wide(a, b) else (np.float32, np.uint32)
    a, b = _per_row(np.ascontiguousarray(a, ft)), _per_row(np.ascontiguousarray(b, ft))
    return np.all(a.view(ut) == b.view(ut), axis=1)


@dataclass
class BackendReport:
    backend: str
    rows: int
    output: int = 0
    scores: int = 0
    max_ulp: int = 0
    proba: int = 0
    cost: int = 0
    stage: int = 0
    features_used: int = 0
    fetches: int = 0          # on-demand only: rows whose fetch count != features used
    order: int = 0            # ranking only: rows whose place in the ranking, trees done or drop differs
    worst_rows: list = field(default_factory=list)
    error: str = ""
    # each worst row's place in the worst-first order (``sort_keys``), so that
    # reports of parts of the rows merge into the report of all of them
    worst_keys: list = field(default_factory=list, repr=False)

    @property
    def mismatches(self) -> int:
        return (self.output + self.scores + self.proba + self.cost + self.stage
                + self.features_used + self.fetches + self.order + (1 if self.error else 0))

    @property
    def ok(self) -> bool:
        return self.mismatches == 0


@dataclass
class ParityReport:
    model_hash: str
    rows: int
    budgets: str
    backends: list
    queries: int = 0          # a ranking check (verify_ranking): the number of queries

    @property
    def ok(self) -> bool:
        return all(b.ok for b in self.backends)

    def table(self) -> str:
        head = (f"{'backend':<10} {'rows':>6} {'output':>7} {'scores':>7} {'max ulp':>8} {'proba':>6} "
                f"{'cost':>6} {'stage':>6} {'used':>6} {'fetch':>6}  result")
        lines = [f"parity vs reference: {self.rows} rows, budgets: {self.budgets}", head]
        if self.queries:
            lines[0] += f", in {self.queries} queries (ranking: order mismatches below)"
        for b in self.backends:
            if b.error:
                lines.append(f"{b.backend:<10} {'':>6} error: {b.error}")
                continue
            lines.append(f"{b.backend:<10} {b.rows:>6} {b.output:>7} {b.scores:>7} {b.max_ulp:>8} "
                         f"{b.proba:>6} {b.cost:>6} {b.stage:>6} {b.features_used:>6} {b.fetches:>6}  "
                         f"{'OK' if b.ok else 'MISMATCH'}")
        if self.queries:
            lines += [f"  {b.backend} ranking: {b.order} rows placed differently (order, trees done or drop)"
                      for b in self.backends if not b.error]
        for b in self.backends:
            for w in b.worst_rows:
                lines.append(f"  {b.backend} row {w['row']}: {w['what']}; reference {w['reference']} vs "
                             f"{w['backend']}; decided by {w['features']}")
        return "\n".join(lines)

    def to_json(self) -> str:
        d = asdict(self)
        d["ok"] = self.ok
        for b in d["backends"]:
            b.pop("worst_keys", None)
        return json.dumps(d, indent=1, default=str)


def adversarial_rows(model, X=None, *, seed=0, max_rows=4000) -> np.ndarray:
    """Rows that sit on every decision boundary of the model: each tree
    threshold and kernel coordinate exactly, one ulp below and above; for a
    category-set split every code of its range, the first past it, members
    +- 0.5 and values that are no code (negatives, -0.0, huge); NaN,
    +inf and -inf per feature; all-NaN and all-inf rows.  Other features take
    values from ``X`` (or standard normals)."""
    from .ir.nodes import KernelNode, TreesNode
    rng = np.random.default_rng(seed)
    F = model.n_features
    base = as_features(X, F) if X is not None else rng.normal(size=(64, F)).astype(np.float32)
    feats, values = [np.zeros(0, np.int64)], [np.zeros(0, np.float32)]    # (feature, boundary) pairs
    cat_feats, cat_values = [np.zeros(0, np.int64)], [np.zeros(0, np.float32)]
    for n in model.nodes:
        if isinstance(n, TreesNode):
            inner = n.feature >= 0
            feats.append(n.feature[inner].astype(np.int64))
            values.append(n.threshold[inner].astype(np.float32))
            if n.categories is not None:
                f, v = _category_values(n)
                cat_feats.append(f)
                cat_values.append(v)
        elif isinstance(n, KernelNode):
            feats.append(np.repeat(n.features.astype(np.int64)[None, :], len(n.support_vectors), 0).ravel())
            values.append(np.asarray(n.support_vectors, np.float32).ravel())
    feat, value = np.concatenate(feats), np.concatenate(values)
    rows = []
    specials = np.array([np.nan, np.inf, -np.inf], np.float32)
    for j in range(F):
        v = np.unique(value[feat == j])
        with np.errstate(over="ignore"):    # +-FLT_MAX thresholds step to +-inf, wanted
            v = np.concatenate([v, np.nextafter(v, np.float32(-np.inf)), np.nextafter(v, np.float32(np.inf)), specials])
        r = base[rng.integers(len(base), size=len(v))].copy()
        r[:, j] = v
        rows.append(r)
    rows.append(np.full((1, F), np.nan, np.float32))
    rows.append(np.full((1, F), np.inf, np.float32))
    rows.append(np.full((1, F), -np.inf, np.float32))
    out = np.concatenate(rows + [base]) if rows else base
    # category values side by side, every categorical feature in the same rows, and kept whole
    # by the cut below (up to max_rows): each set's codes are all reached
    cat_feat = np.concatenate(cat_feats)
    cats = _category_rows(cat_feat, np.concatenate(cat_values), base, rng)[:max_rows] if cat_feat.size \
        else np.zeros((0, F), np.float32)
    room = max_rows - len(cats)
    if len(out) > room:
        out = out[rng.choice(len(out), room, replace=False)]
    return np.ascontiguousarray(np.concatenate([cats, out]), np.float32)


def _category_rows(feat, value, base, rng) -> np.ndarray:
    """Rows carrying every category value (and one float either side of it)
    of each categorical feature, all such features side by side (a shorter
    list repeats), other features from ``base``."""
    lists = {}
    for j in np.unique(feat):
        v = np.unique(value[feat == j])
        lists[int(j)] = np.concatenate([v, np.nextafter(v, np.float32(-np.inf)), np.nextafter(v, np.float32(np.inf))])
    n = max((len(v) for v in lists.values()), default=0)
    rows = base[rng.integers(len(base), size=n)].copy()
    for j, v in lists.items():
        rows[:, j] = np.resize(v, n)
    return rows


# values that are no category code under some rule (docs/ir.md): negatives
# on either side of -1, negative zero, past XGBoost's exact range, past int32
_NOT_CODES = np.array([-1.5, -1.0, -0.5, -0.0, 2.0 ** 24, 2.0 ** 31, 1e10], np.float32)


# a set's codes listed one by one up to this many (XGBoost's sets reach 2**24 codes)
_MAX_CODES = 1024


def _category_values(bank):
    """(feature, value) pairs for a bank's category-set splits: every code
    of each set's range (the first ``_MAX_CODES``, its last code and the
    first past it for a larger range), set members +- 0.5 (the first and last
    ``_MAX_CODES`` of a larger set) and values that are no code (``_NOT_CODES``)."""
    cs = bank.categories
    feats, values = [], []
    for m in np.flatnonzero(cs.is_categorical):
        span = 32 * int(cs.words[m])
        members = cs.codes(m).astype(np.float32)
        if members.shape[0] > 2 * _MAX_CODES:
            members = np.concatenate([members[:_MAX_CODES], members[-_MAX_CODES:]])
        codes = np.arange(min(span, _MAX_CODES), dtype=np.float32)
        v = np.concatenate([codes, np.array([span - 1, span], np.float32), members - 0.5, members + 0.5,
                            _NOT_CODES])
        feats.append(np.full(v.shape[0], bank.feature[m], np.int64))
        values.append(v)
    return np.concatenate(feats), np.concatenate(values)


def budgets_around(costs: np.ndarray, seed=0) -> np.ndarray:
    """For rows of known cost c, budgets that cut at and around each step:
    c, the double just below c, half of c, 0, and uniform in [0, c]."""
    rng = np.random.default_rng(seed)
    pick = rng.integers(5, size=len(costs))
    below = np.nextafter(costs, -np.inf)
    return np.choose(pick, [costs, below, costs / 2, np.zeros_like(costs), rng.random(len(costs)) * costs])


def runtime(name, model, tables=None, **options):
    """The runtime called ``name`` (``runtimes.registry``), built from
    ``model`` (``tables``: its lowering, when already made)."""
    return make_runtime(name, model, tables=tables, **options)


def sort_keys(ref: Prediction, got: Prediction) -> np.ndarray:
    """Each row's place in the worst-first order of a report: cost
    mismatches first, then the largest ulp distance; rows in order among
    equal keys (a stable sort)."""
    ulp = _per_row(ulp_distance(ref.scores, got.scores)).max(1, initial=0)
    bad_cost = ref.cost.view(np.uint64) != np.asarray(got.cost, np.float64).view(np.uint64)
    return -ulp - bad_cost * 1e12


def compare(model, X, ref: Prediction, got: Prediction, name: str, worst=3, row_offset=0) -> BackendReport:
    """How ``got`` differs from the reference's ``ref`` on rows ``X``, row
    by row; on-demand predictions (``got.fetches``) must fetch each used
    feature exactly once.  The first ``worst`` mismatching rows in
    ``sort_keys`` order are described, numbered from ``row_offset``."""
    N = len(ref.cost)
    rep = BackendReport(backend=name, rows=N)
    bad_scores = ~_same_bits(ref.scores, got.scores)
    rep.scores = int(bad_scores.sum())
    rep.max_ulp = int(ulp_distance(ref.scores, got.scores).max()) if N else 0
    if ref.output.dtype.kind == "f":
        bad_out = ~_same_bits(ref.output, got.output)
    else:
        bad_out = _per_row(np.asarray(ref.output != got.output)).any(1)
    rep.output = int(bad_out.sum())
    bad_proba = np.zeros(N, bool)
    if ref.proba is not None:
        bad_proba = ~_same_bits(ref.proba, got.proba) if got.proba is not None else np.ones(N, bool)
    rep.proba = int(bad_proba.sum())
    bad_cost = ref.cost.view(np.uint64) != np.asarray(got.cost, np.float64).view(np.uint64)
    rep.cost = int(bad_cost.sum())
    bad_stage = ref.stage != got.stage
    rep.stage = int(bad_stage.sum())
    bad_used = (ref.features_used != got.features_used).any(1)
    rep.features_used = int(bad_used.sum())
    bad_fetch = np.zeros(N, bool)
    if got.fetches is not None:
        bad_fetch = got.fetches != ref.features_used.sum(1)
        rep.fetches = int(bad_fetch.sum())
    bad = bad_scores | bad_out | bad_proba | bad_cost | bad_stage | bad_used | bad_fetch
    key = sort_keys(ref, got)
    order = np.argsort(key, kind="stable")
    for i in order[bad[order]][:worst]:
        what = ("scores" if bad_scores[i] else "output" if bad_out[i] else "proba" if bad_proba[i]
                else "cost" if bad_cost[i] else "stage" if bad_stage[i] else "features_used"
                if bad_used[i] else "fetches")
        used = np.flatnonzero(ref.features_used[i] | got.features_used[i])
        rep.worst_rows.append({
            "row": int(i) + row_offset, "what": what,
            "reference": f"scores={ref.scores[i].tolist()} cost={float(ref.cost[i])!r} stage={int(ref.stage[i])}",
            "backend": f"scores={np.asarray(got.scores[i]).tolist()} cost={float(got.cost[i])!r} "
                       f"stage={int(got.stage[i])}",
            "features": {model.features[j].name: float(X[i, j]) for j in used[:8]}})
        rep.worst_keys.append(float(key[i]))
    return rep


def merge_reports(parts, worst=3) -> BackendReport:
    """The reports of one runtime on consecutive parts of the rows (each made
    by ``compare`` with its ``row_offset``) as the report on all of them:
    counts add, ``max_ulp`` is the largest, the worst rows are the first
    ``worst`` of all parts by (sort key, row), exactly what ``compare`` gives
    on the rows at once.  The first part's error, if any, is the report."""
    for rep in parts:
        if rep.error:
            return BackendReport(backend=rep.backend, rows=sum(r.rows for r in parts), error=rep.error)
    merged = BackendReport(backend=parts[0].backend, rows=sum(r.rows for r in parts))
    for f in ("output", "scores", "proba", "cost", "stage", "features_used", "fetches"):
        setattr(merged, f, sum(getattr(r, f) for r in parts))
    merged.max_ulp = max(r.max_ulp for r in parts)
    cands = sorted(((k, w["row"], w) for r in parts for k, w in zip(r.worst_keys, r.worst_rows, strict=True)),
                   key=lambda c: (c[0], c[1]))[:worst]
    merged.worst_rows = [w for _, _, w in cands]
    merged.worst_keys = [k for k, _, _ in cands]
    return merged


def _refuse_legacy(legacy, budgets):
    """The arguments ``verify`` took before the runtime registry, refused
    with what to write instead."""
    if "backends" in legacy:
        raise TypeError("verify(backends=...) was renamed: write verify(model, X, runtimes=(...)) "
                        "with names from skinflint.runtimes.RUNTIMES")
    if legacy:
        raise TypeError(f"verify() got unexpected keyword arguments: {', '.join(sorted(legacy))}")
    if budgets == "auto":
        raise ValueError("verify(budgets='auto') was renamed: write budgets='around'")
    if budgets is not None and budgets != "around":
        raise ValueError(f"verify(budgets={budgets!r}): budgets is 'around' or None; for one budget on every "
                         "row write verify(model, X, budget=B, budgets=None)")


def verify(model, X=None, *, runtimes=None, budget=None, budgets="around", adversarial=True, seed=0,
           max_rows=4000, **legacy) -> ParityReport:
    """Run ``X`` (plus adversarial rows unless ``adversarial=False``)
    through each runtime and compare with the reference.

    Parameters
    ----------
    model : ir.Model
    X : array [N, F], optional
        Rows to check (float32 after rounding); None: adversarial rows only.
    runtimes : sequence of runtime objects or names, optional
        Names from ``skinflint.runtimes.RUNTIMES``; default ("onnx", "c",
        "c-lazy").  "reference" is skipped (it is the reference).
    budget : None, float or array [rows]
        Per-row budget, as ``predict`` takes it (None: no limit).  Per-row
        budgets need ``adversarial=False`` (the rows are then exactly X).
    budgets : "around" or None
        "around" (default): every row again with budgets at and around its
        own cost (``budgets_around``).  None: the rows once, with ``budget``.
    adversarial, seed, max_rows
        Whether to add ``adversarial_rows(model, X, seed=seed,
        max_rows=max_rows)``.

    Returns
    -------
    ParityReport
    """
    from .ir.json_io import model_hash
    from .ir.lowering import lower
    from .runtimes.reference import ReferenceRuntime
    _refuse_legacy(legacy, budgets)
    if model.scores_queries:
        if budget is not None:
            raise ValueError("budget: a ranking model is verified with budgets around each document's cost "
                             "(verify_ranking); pass budgets='around' or None")
        return verify_ranking(model, X, runtimes=runtimes, budgets=budgets, adversarial=adversarial, seed=seed,
                              max_rows=max_rows)
    if X is not None:
        X = as_features(X, model.n_features, model.feature_names)
    rows = _rows_to_check(model, X, adversarial, seed, max_rows)
    tables = lower(model)
    reference = ReferenceRuntime(model, tables=tables)
    b = as_budget(budget, len(rows)) if np.ndim(budget) == 0 or not adversarial else None
    if b is None:
        raise ValueError("budget: per-row budgets need adversarial=False (the rows are then exactly X)")
    label = "none" if budget is None else ("per row" if np.ndim(budget) else f"{float(budget):g}")
    if budgets == "around":
        around = budgets_around(reference.predict(rows).cost, seed)
        X2, B2 = np.concatenate([rows, rows]), np.concatenate([b, around])
        label += ", and at/around each row's cost"
    else:
        X2, B2 = rows, b
    ref = reference.predict(X2, B2)
    reports = []
    for name, rt in _compared_runtimes(runtimes):
        try:
            if isinstance(rt, str):
                rt = runtime(rt, model, tables)
            got = rt.predict(X2, B2)
        except (NotImplementedError, RuntimeError) as e:
            reports.append(BackendReport(backend=name, rows=len(X2), error=str(e)))
            continue
        reports.append(compare(model, X2, ref, got, name))
    return ParityReport(model_hash=model_hash(model)[:16], rows=len(X2), budgets=label, backends=reports)


def _rows_to_check(model, X, adversarial, seed, max_rows):
    """The rows a parity check runs: ``X`` as given with ``adversarial=False``,
    else ``X`` (if any) followed by ``adversarial_rows``."""
    if not adversarial and X is not None:
        return X
    rows = adversarial_rows(model, X, seed=seed, max_rows=max_rows)
    return rows if X is None else np.concatenate([X, rows])


def _compared_runtimes(runtimes):
    """(name, runtime or its registry name) of each runtime to compare with
    the reference (``DEFAULT_CHECKED`` when None; the reference itself is
    skipped)."""
    runtimes = DEFAULT_CHECKED if runtimes is None else runtimes
    if isinstance(runtimes, str) or not hasattr(runtimes, "__iter__"):
        runtimes = [runtimes]
    for rt in runtimes:
        name = rt if isinstance(rt, str) else getattr(rt, "name", type(rt).__name__)
        if name != "reference":
            yield name, rt


# ---------------------------------------------------------------- query-level parity (docs/ranking.md)

MAX_QUERY = 1000


def random_queries(X, seed=0, *, max_size=MAX_QUERY) -> tuple[np.ndarray, np.ndarray]:
    """``X``'s rows cut into random queries, as (rows, sizes): sizes 1, 2, 3
    and ``max_size`` first (as far as the rows go), then random ones, and in
    about half of the queries copies of one document placed at random
    positions, so ties at the rank that decides a drop are common (ties go by
    position, docs/ranking.md).  Every row of X is used at least once."""
    rng = np.random.default_rng(seed)
    X = np.ascontiguousarray(X, np.float32)
    left = rng.permutation(len(X))
    out, sizes = [], []
    fixed = [1, 2, 3, max_size]
    while left.size:
        n = fixed.pop(0) if fixed else int(min(max_size, rng.geometric(1 / 24)))
        n = min(n, left.size)
        q = X[left[:n]].copy()
        left = left[n:]
        if n > 1 and rng.random() < 0.5:   # ties: copies of one document among the others
            k = int(rng.integers(1, max(2, n // 2) + 1))
            q[rng.choice(n, k, replace=False)] = q[int(rng.integers(n))]
        out.append(q)
        sizes.append(n)
    if not out:
        return np.zeros((0, X.shape[1]), np.float32), np.zeros(0, np.int64)
    return np.concatenate(out), np.array(sizes, np.int64)


def _compare_ranking(model, X, ref, got, name) -> BackendReport:
    """``compare`` per document plus each row's place in the order, trees done and drop."""
    rep = compare(model, X, ref, got, name)
    N = len(ref.cost)
    place_ref, place_got = np.empty(N, np.int64), np.full(N, -1, np.int64)
    place_ref[ref.order] = np.arange(N)
    got_order = np.asarray(got.order, np.int64)
    if got_order.shape == (N,) and np.all((got_order >= 0) & (got_order < N)):
        place_got[got_order] = np.arange(N)
    bad = (place_ref != place_got) | (np.asarray(got.n_trees) != ref.n_trees) | \
        (np.asarray(got.dropped) != ref.dropped)
    rep.order = int(bad.sum())
    return rep


def verify_ranking(model, X=None, group=None, *, runtimes=None, budgets="around", adversarial=True, seed=0,
                   max_rows=4000) -> ParityReport:
    """Query-level parity of a model with a query-level exit (module docstring).

    ``X`` with ``group`` (query sizes) is checked as given; otherwise the
    rows (``X`` and, unless ``adversarial=False``, ``adversarial_rows``) are
    cut into ``random_queries``.  ``budgets="around"`` runs every query again
    with per-document budgets at and around each document's own cost.  A
    runtime is a name (``runtimes.RUNTIMES``) or an object with ``name`` and
    ``rank(X, group, budget=None)``; one that cannot rank is reported with
    its error."""
    from .ir.json_io import model_hash
    from .runtimes.reference import ReferenceRuntime
    if budgets not in ("around", None):
        raise ValueError(f"verify_ranking(budgets={budgets!r}): budgets is 'around' or None")
    reference = ReferenceRuntime(model)
    if X is not None:
        X = as_features(X, model.n_features, model.feature_names)
    if X is not None and group is not None:
        rows, sizes = X, np.asarray(group)
    else:
        rows, sizes = random_queries(_rows_to_check(model, X, adversarial, seed, max_rows), seed)
    runs: list[tuple[np.ndarray, np.ndarray, np.ndarray | None]] = [(rows, sizes, None)]
    label = "none"
    if budgets == "around":
        around = budgets_around(reference.rank(rows, sizes).cost, seed)
        runs.append((rows, sizes, around))
        label += ", and at/around each document's cost"
    refs = [reference.rank(x, g, b) for x, g, b in runs]
    reports = []
    for name, rt in _compared_runtimes(runtimes):
        try:
            if isinstance(rt, str):
                rt = runtime(rt, model)
            if not hasattr(rt, "rank"):
                raise NotImplementedError(f"the {name} runtime cannot rank whole queries")
            parts = [_compare_ranking(model, x, ref, rt.rank(x, g, b), name)
                     for (x, g, b), ref in zip(runs, refs, strict=True)]
        except (NotImplementedError, RuntimeError, ValueError) as e:
            reports.append(BackendReport(backend=name, rows=len(rows) * len(runs), error=str(e)))
            continue
        merged = merge_reports(parts)
        merged.order = sum(p.order for p in parts)
        reports.append(merged)
    return ParityReport(model_hash=model_hash(model)[:16], rows=len(rows) * len(runs), budgets=label,
                        backends=reports, queries=len(sizes) * len(runs))
