"""What CSTC and ASTC share around their optimisers: cost items, column
standardisation, IR-exact threshold placement and the export of a trained
tree of linear classifiers to one IR ``classifier_tree``.

Cost items (thesis Eq. 3.9, 3.22, 3.23): an item is a unit paid once per row
(a feature, a group, a tree of a bank) together with the columns of the
basis that need it.  Raw features: feature alpha is (c_alpha, {alpha}) and a
group g is (c_g, {alpha in g}).  A bank of trees (the boosting trick,
thesis §3.6): tree t is (e_t, {t}), feature alpha is (c_alpha, {t : F_alpha,t}),
group g is (c_g, {t : t reads a feature of g}).

Routing (thesis §3.4: "upper iff x^T beta > theta") is the IR's
``margin <= threshold -> left``: lower = IR left, upper = IR right, ties lower.
Thresholds sit at the float32 midpoint of a gap between two distinct
IR-exact margins of the training rows that reach the node, so no training row
is within rounding distance of a threshold (docs/trees.md).
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from ... import ir
from ..linalg import dot
from ._soft_tree_kernels import f32_margins

F32_TINY = float(np.finfo(np.float32).tiny)
F32_MAX = float(np.finfo(np.float32).max)


# ---------------------------------------------------------------- cost items

@dataclass
class CostItems:
    """Items (units paid once per row) and the columns that need them.

    Attributes
    ----------
    cost : float64 [n_items]
    matrix : float64 [n_items, P], 1 where column c needs item m
    col_ptr, col_items : int64, the same map as CSR column -> items
    """

    cost: np.ndarray
    matrix: np.ndarray
    col_ptr: np.ndarray = field(init=False)
    col_items: np.ndarray = field(init=False)

    def __post_init__(self):
        keep = self.cost > 0               # free items change nothing
        self.cost = np.ascontiguousarray(self.cost[keep], np.float64)
        self.matrix = np.ascontiguousarray(self.matrix[keep], np.float64)
        P = self.matrix.shape[1]
        items, cols = np.nonzero(self.matrix.T > 0)      # sorted by column
        self.col_ptr = np.zeros(P + 1, np.int64)
        np.add.at(self.col_ptr, items + 1, 1)
        self.col_ptr = np.cumsum(self.col_ptr)
        self.col_items = cols.astype(np.int64)

    @classmethod
    def from_features(cls, costs) -> CostItems:
        """Items of a linear model over raw features (``costs`` a FeatureCosts)."""
        F = len(costs.costs)
        rows = [np.eye(F)]
        gc = np.asarray(costs.group_costs, np.float64)
        if gc.size:
            rows.append(np.stack([(costs.groups == g).astype(np.float64) for g in range(gc.size)]))
        return cls(np.concatenate([np.asarray(costs.costs, np.float64), gc]), np.concatenate(rows))

    @classmethod
    def from_bank(cls, costs, tree_features, tree_cost) -> CostItems:
        """Items of a linear model over a bank's trees; ``tree_features`` is
        bool [F, T] (F_alpha,t of thesis §3.6), ``tree_cost`` is e_t [T]."""
        Fm = np.asarray(tree_features, np.float64)
        T = Fm.shape[1]
        rows = [np.eye(T), Fm]
        gc = np.asarray(costs.group_costs, np.float64)
        if gc.size:
            rows.append(np.stack([(Fm[costs.groups == g].sum(0) > 0).astype(np.float64)
                                  for g in range(gc.size)]))
        return cls(np.concatenate([np.asarray(tree_cost, np.float64),
                                   np.asarray(costs.costs, np.float64), gc]), np.concatenate(rows))

    def column_cost(self, used_cols: np.ndarray) -> float:
        """Cost of the items that a set of columns (bool [P]) needs."""
        need = self.matrix[:, used_cols].sum(1) > 0
        return float(self.cost[need].sum())


# ---------------------------------------------------------------- scaling

@dataclass
class Standardizer:
    """Column and target standardisation; ``fold`` maps standardised
    (beta, b) back to raw-unit float64 weights and bias (docs/trees.md)."""

    mean: np.ndarray
    scale: np.ndarray
    y_mean: float
    y_scale: float

    @classmethod
    def fit(cls, Phi, y):
        Phi = np.asarray(Phi, np.float64)
        mean = Phi.mean(0)
        sd = Phi.std(0)
        sd = np.where(sd > 0, sd, 1.0)
        ys = float(np.std(y))
        return cls(mean, sd, float(np.mean(y)), ys if ys > 0 else 1.0)

    def columns(self, Phi):
        return (np.asarray(Phi, np.float64) - self.mean) / self.scale

    def columns_t(self, Phi, block=4096):
        """``columns(Phi).T`` as a contiguous [P, n] array (``SoftTree``'s
        ``PhiT``): each entry the same (x - mean_c) / scale_c, computed over
        blocks of ``block`` rows, without [n, P] float64 temporaries."""
        Phi = np.asarray(Phi)
        n = Phi.shape[0]
        out = np.empty((Phi.shape[1], n))
        for i0 in range(0, n, block):
            out[:, i0:i0 + block] = ((np.asarray(Phi[i0:i0 + block], np.float64) - self.mean) / self.scale).T
        return out

    def target(self, y):
        return (np.asarray(y, np.float64) - self.y_mean) / self.y_scale

    def fold(self, beta, b):
        w = np.asarray(beta, np.float64) * self.y_scale / self.scale
        # serial, in feature order (linalg.dot): a BLAS ddot's order depends on the CPU kernel
        return w, self.y_mean + self.y_scale * float(b) - float(dot(w, np.ascontiguousarray(self.mean, np.float64)))

    def margin(self, s):
        """A standardised margin (or threshold) in raw target units."""
        return self.y_mean + self.y_scale * s


# ---------------------------------------------------------------- hard tree

@dataclass
class Scorer:
    """One linear scorer in IR form: columns ascending, float32 weights
    (none zero or subnormal), float32 bias."""

    cols: np.ndarray
    w32: np.ndarray
    b32: np.float32

    @classmethod
    def from_float64(cls, w, b):
        w = np.asarray(w, np.float64)
        w32 = w.astype(np.float32)
        live = np.abs(w32) >= F32_TINY          # flush subnormals: they would pay for nothing
        cols = np.flatnonzero(live).astype(np.int64)
        return cls(cols, np.ascontiguousarray(w32[cols]),
                   np.float32(np.clip(b, -F32_MAX, F32_MAX)))

    def margins(self, Z32, rows):
        """IR-exact float32 margins of ``rows`` of the basis ``Z32``."""
        return f32_margins(Z32, rows, self.cols, self.w32, self.b32)


@dataclass
class HardTree:
    """A trained tree of classifiers, ready for the IR.

    ``scorer[k]`` is node k's scorer; ``child[k] = (lower, upper)``, -1 for a
    terminal element; a pure leaf has both -1; ``threshold[k]`` float32;
    ``exit[(k, side)]`` an optional separate exit scorer of a terminal
    (fine-tuned mixed node), otherwise the terminal reuses node k's scorer.
    """

    scorer: list
    child: np.ndarray
    threshold: np.ndarray
    exit: dict = field(default_factory=dict)

    def is_leaf(self, k):
        return self.child[k, 0] < 0 and self.child[k, 1] < 0


def place_threshold(m32: np.ndarray, theta: float) -> np.float32:
    """A finite float32 threshold that splits the IR margins ``m32`` the way
    ``theta`` does, in a gap between distinct values (ties go lower)."""
    if m32.size == 0:
        return np.float32(np.clip(theta, -F32_MAX, F32_MAX))
    u = np.unique(m32)
    i = int(np.searchsorted(u.astype(np.float64), theta, side="right"))   # u[:i] <= theta
    if i == 0:
        return np.nextafter(u[0], np.float32(-np.inf)) if u[0] > -F32_MAX else u[0]
    if i == u.size:
        return u[-1]
    lo, hi = u[i - 1], u[i]
    mid = np.float32((np.float64(lo) + np.float64(hi)) / 2)
    return mid if lo <= mid < hi else lo


def tie_aware_split(s: np.ndarray, w: np.ndarray) -> float:
    """The weighted median of margins ``s`` placed between two adjacent
    distinct values (never inside a block of ties, docs/trees.md); +inf when
    ``s`` has one distinct value (everything goes lower)."""
    order = np.argsort(s, kind="stable")
    ss, ww = s[order], np.maximum(w[order], 0)
    u, first = np.unique(ss, return_index=True)
    if u.size < 2:
        return np.inf
    cw = np.add.reduceat(ww, first).cumsum()
    half = cw[-1] / 2
    g = int(np.argmin(np.abs(cw[:-1] - half)))        # split after distinct value g
    return float((u[g] + u[g + 1]) / 2)


def route_rows(tree: HardTree, Z32, rows, theta_raw=None):
    """Hard IR routing of ``rows`` top-down; places each internal node's
    float32 threshold from ``theta_raw[k]`` (if given) on the margins of the
    rows that reach it.  Returns the per-node row sets."""
    K = len(tree.scorer)
    reach: list = [None] * K
    reach[0] = rows
    for k in range(K):
        if reach[k] is None or tree.is_leaf(k):
            continue
        m = tree.scorer[k].margins(Z32, reach[k])
        if theta_raw is not None:
            tree.threshold[k] = place_threshold(m, theta_raw[k])
        left = m <= tree.threshold[k]
        for side, sel in ((0, left), (1, ~left)):
            c = tree.child[k, side]
            if c >= 0:
                reach[c] = reach[k][sel]
    return reach


def to_ir_nodes(tree: HardTree, inputs, *, first_index=0, name="tree of classifiers"):
    """IR nodes for ``tree``: the ``linear`` scorers that some path reaches
    (node scorers and exit scorers, in pre-order of first use), then the
    ``classifier_tree``.  ``inputs(col)`` gives the IR input of a basis
    column; ``first_index`` is the IR node index of the first scorer.

    A node without live inputs has a constant margin, so one side is never
    reached: that side becomes a leaf reusing the node's scorer.
    """
    K = len(tree.scorer)
    child = tree.child.copy()
    for k in range(K):
        sc = tree.scorer[k]
        if sc.cols.size == 0 and not tree.is_leaf(k):
            dead = 1 if sc.b32 <= tree.threshold[k] else 0
            child[k, dead] = -1
    lin, index = [], {}

    def scorer_index(key, sc, label):
        if key not in index:
            lin.append(ir.linear([inputs(c) for c in sc.cols], sc.w32.astype(np.float64),
                                 float(sc.b32), name=label))
            index[key] = first_index + len(lin) - 1
        return index[key]

    ctl: list = []

    def emit(k):
        """IR control index of classifier node k (pre-order)."""
        i = len(ctl)
        ctl.append(None)
        own = scorer_index(("node", k), tree.scorer[k], f"node {k}")
        if child[k, 0] < 0 and child[k, 1] < 0:
            ctl[i] = {"scorer": own, "threshold": 0.0, "left": -1, "right": -1}
            return i
        kids = []
        for side in (0, 1):
            if child[k, side] >= 0:
                kids.append(emit(child[k, side]))
                continue
            ex = tree.exit.get((k, side))
            s = own if ex is None else scorer_index(
                ("exit", k, side), ex, f"node {k} exit {'upper' if side else 'lower'}")
            kids.append(len(ctl))
            ctl.append({"scorer": s, "threshold": 0.0, "left": -1, "right": -1})
        ctl[i] = {"scorer": own, "threshold": float(tree.threshold[k]),
                  "left": kids[0], "right": kids[1]}
        return i

    emit(0)
    return lin + [ir.classifier_tree(ctl, name=name)]


def feature_input(col):
    return ir.feature_input(int(col))


def tree_input_of(bank_index):
    def f(col):
        return ir.tree_input(bank_index, int(col))
    return f


def choose(points, tolerance):
    """The selection rule of the validation searches (Cronus, CSCC, CSTC;
    docs/cascades.md, docs/trees.md): among ``points`` [(accuracy, mean cost), ...]
    measured on validation, the cheapest whose accuracy is within
    ``tolerance`` of the best one's (ties: the first).  Returns its index."""
    best = max(a for a, _ in points)
    ok = [i for i, (a, _) in enumerate(points) if a >= best - tolerance]
    return min(ok, key=lambda i: (points[i][1], i))
