"""ASTC: Approximately Submodular Tree of Classifiers (Kusner et al. 2014).

The tree is built top-down in BFS order (Alg. 1).  Each node greedily picks
columns by R^2 gain per unit of new cost (eq. (7), (8), with the fast
Gram-Schmidt gain of eq. (9)-(11), ``_soft_tree_kernels.greedy_select``),
within its new-cost budget B_k: columns an ancestor uses are free and taken
first, the greedy sequence stops at its largest feasible prefix G<T>.  With
``greedy="both"`` the node also runs the plain-gain greedy within B_k and
keeps whichever of the two column sets has the larger R^2 = z_k of eq. (8).
Theorem 2.2 compares G<T> with the best set of G<T>'s own cost T, which can
be far below B_k (on Spambase a root budget of 6.5 stopped at 2.5); for a
submodular set function the better of the two runs is within (1 - 1/e)/2 of
the best set of cost B_k (Leskovec et al. 2007, CELF).  z_k is only
approximately submodular, so that bound is a guide here.  "both" suits
budgets that are targets (CSTC's per-node costs, ``node_budgets_from``); the
default "ratio" (the paper) gives the better cost/accuracy curve when one
budget is the cost knob for every node (docs/trees.md).  The
node's classifier is the weighted least-squares fit on its columns; an
internal node's threshold sends half of its (weighted) rows each way
(Fig. 2), placed between distinct IR-exact float32 margins.  Hard mode
(the paper's Alg. 1; line 11 tests the prediction, not p_i^k, a typo):
children get the rows on their side.  Soft mode ("ASTC, soft", Results):
p^u = p^k sigma(gamma_a (s - theta) / sd(s)).  Budgets: one number for every
node (the paper), one per depth, or one per node (the paper's timing
protocol; ``node_budgets_from`` reads them off a CSTC tree).
"""
from __future__ import annotations

import numpy as np
from scipy.special import expit

from .. import linalg
from ..base import CostSensitiveClassifier, CostSensitiveRegressor
from ..common import progress_bar, single_thread
from ._soft_tree_kernels import centred_rows, greedy_select
from .cstc import _SquaredBinary, _SquaredRegression, _TreeIR
from .tree_ir import HardTree, Scorer, place_threshold, tie_aware_split

MODES = ("hard", "soft")
RULES = ("prefix", "skip")
GREEDY = ("ratio", "both")


def node_budgets(budget, max_depth) -> np.ndarray:
    """Per-node budgets [2**max_depth - 1] from a scalar, a per-depth
    sequence (length max_depth) or a per-node sequence."""
    K = 2 ** max_depth - 1
    b = np.asarray(budget, np.float64)
    if b.ndim == 0:
        out = np.full(K, float(b))
    elif b.shape == (K,):
        out = b.copy()
    elif b.shape == (max_depth,):
        depth = np.floor(np.log2(np.arange(K) + 1)).astype(int)
        out = b[depth]
    else:
        raise ValueError(f"budget: expected a number, {max_depth} per-depth values or {K} "
                         f"per-node values, got shape {b.shape}")
    if not np.all(np.isfinite(out) & (out >= 0)):
        raise ValueError("budget: every node budget must be finite and >= 0")
    return out


def node_budgets_from(estimator) -> np.ndarray:
    """The new-item cost each node of a fitted CSTC (or ASTC) tree pays
    beyond its ancestors (Kusner et al., "Training time speed-up": ASTC at
    CSTC's per-node budgets).  Nodes the tree does not have get 0."""
    ht, items = estimator.tree_, estimator._basis.items()
    K = len(ht.scorer)
    out = np.zeros(K)
    reached = np.zeros(K, bool)
    reached[0] = True
    need = np.zeros((K, items.cost.size), bool)
    for k in range(K):
        if not reached[k]:
            continue
        cols = np.zeros(items.matrix.shape[1], bool)
        cols[ht.scorer[k].cols] = True
        mine = items.matrix[:, cols].sum(1) > 0
        parent = need[(k - 1) // 2] if k else np.zeros_like(mine)
        out[k] = float(items.cost[mine & ~parent].sum())
        need[k] = mine | parent
        for c in ht.child[k]:
            if c >= 0:
                reached[c] = True
    return out


class _ASTCMixin(_TreeIR):
    """
    Parameters
    ----------
    budget : float or sequence [16.0]
        New-item cost budget of a node: one number for every node (the
        paper), ``max_depth`` values (one per depth) or ``2**max_depth - 1``
        values (one per BFS node).
    max_depth : int [5] (the paper's depth)
    mode : {"hard", "soft"} ["hard"]
    soft_steepness : float [4]
        gamma_a of soft routing, in units of the node margin's weighted sd.
    budget_rule : {"prefix", "skip"} ["prefix"]
        "prefix": stop at the first best column that does not fit (G<T> of
        Theorem 2.2); "skip": pass over it and go on (an extension).
    greedy : {"ratio", "both"} ["ratio"]
        "ratio": eq. (7) only (the paper's Alg. 1).  "both": also run the
        greedy on gain alone among the columns that fit the budget, and keep
        the column set with the larger R^2 (eq. (8)); ties keep eq. (7)'s.
        Guards against G<T> stopping far below a per-node budget that is a
        target (the matched-budget protocol); with one budget as the cost
        knob it spends more for less on Spambase (docs/trees.md).
    min_samples_split : int [20]
        A node with fewer (hard) rows becomes a leaf.
    bank : ir TreesNode or None [None]
        None: linear scorers over raw features; a bank: over its trees.
    feature_costs, feature_groups, group_costs, feature_names, group_names
        As Greedy Miser.
    random_state : unused (ASTC is deterministic); kept for the common API.
    verbose : int, default 1
        A progress bar over the tree's nodes.

    The approximation guarantee of Theorem 2.2 is for raw features without
    groups; with groups or a bank the greedy rule is the same but the bound
    no longer applies (paper, Conclusion).
    """

    def __init__(self, *, budget=16.0, max_depth=5, mode="hard", soft_steepness=4.0,
                 budget_rule="prefix", greedy="ratio", min_samples_split=20, bank=None,
                 feature_costs=None, feature_groups=None, group_costs=None, feature_names=None,
                 group_names=None, random_state=None, verbose=1):
        self.verbose = verbose
        self.budget = budget
        self.max_depth = max_depth
        self.mode = mode
        self.soft_steepness = soft_steepness
        self.budget_rule = budget_rule
        self.greedy = greedy
        self.min_samples_split = min_samples_split
        self.bank = bank
        self.feature_costs = feature_costs
        self.feature_groups = feature_groups
        self.group_costs = group_costs
        self.feature_names = feature_names
        self.group_names = group_names
        self.random_state = random_state

    def _check_params(self):
        if not (isinstance(self.max_depth, (int, np.integer)) and 1 <= self.max_depth <= 12):
            raise ValueError(f"max_depth must be an integer in 1..12, got {self.max_depth!r}")
        if self.mode not in MODES:
            raise ValueError(f"mode must be one of {MODES}, got {self.mode!r}")
        if self.budget_rule not in RULES:
            raise ValueError(f"budget_rule must be one of {RULES}, got {self.budget_rule!r}")
        if self.greedy not in GREEDY:
            raise ValueError(f"greedy must be one of {GREEDY}, got {self.greedy!r}")
        if not (np.isfinite(self.soft_steepness) and self.soft_steepness > 0):
            raise ValueError(f"soft_steepness must be > 0, got {self.soft_steepness!r}")
        return node_budgets(self.budget, int(self.max_depth))

    def fit(self, X, y, eval_set=None):
        """Build the tree top-down (Kusner et al. Alg. 1).

        Parameters
        ----------
        X : array-like (n_samples, n_features)
        y : array-like (n_samples,)
        eval_set : ignored (ASTC has no validation step); accepted for the
            common ``fit`` signature.
        """
        budgets = self._check_params()
        X, t, costs, basis = self._prepare(X, y)
        self._costs, self._basis = costs, basis
        with single_thread():
            return self._fit(X, t, basis, budgets)

    def _fit(self, X, t, basis, budgets):
        Z32 = basis.matrix(X)
        # no float64 copy of the whole basis: each node widens its own rows (_fit_node), the same
        # values (float32 -> float64 is exact); at 200k rows x 200 bank trees that copy was 320 MB
        items = basis.items()
        n, P = Z32.shape
        K = 2 ** int(self.max_depth) - 1
        ht = HardTree([Scorer(np.zeros(0, np.int64), np.zeros(0, np.float32), np.float32(0))] * K,
                      np.full((K, 2), -1, np.int64), np.zeros(K, np.float32))
        soft = self.mode == "soft"
        rows = [None] * K                  # hard reach (IR routing)
        wts = [None] * K                   # soft weights over all rows
        paid = [None] * K
        inh = [None] * K
        rows[0], wts[0] = np.arange(n), np.ones(n)
        paid[0], inh[0] = np.zeros(items.cost.size, bool), np.zeros(P, bool)
        max_sel = P
        xbuf = np.empty((n, P))            # every node's centred rows, in turn (_fit_node)
        self.gains_ = {}
        # closed on Ctrl-C too: a bar left open runs into the "interrupted" line
        with progress_bar(self.verbose, K, "ASTC", "node", iterable=range(K)) as bar:
            for k in bar:
                if rows[k] is None:
                    continue
                if soft:
                    sel = np.flatnonzero(wts[k] > 1e-12)
                    w = wts[k][sel]
                else:
                    sel, w = rows[k], np.ones(rows[k].size)
                if sel.size == 0 or w.sum() <= 0:
                    sc = ht.scorer[(k - 1) // 2] if k else ht.scorer[0]
                    cols = np.zeros(0, np.int64)
                    pk = paid[k].copy()
                else:
                    pk = paid[k].copy()
                    cols, gains, sc = self._fit_node(Z32, sel, t[sel], w, items, pk, inh[k],
                                                     budgets[k], max_sel, xbuf)
                    self.gains_[k] = gains
                ht.scorer[k] = sc
                left, right = 2 * k + 1, 2 * k + 2
                if right >= K or rows[k].size < self.min_samples_split:
                    continue
                m = sc.margins(Z32, rows[k])
                if soft:
                    ms = sc.margins(Z32, sel).astype(np.float64)
                    theta = tie_aware_split(ms, w)
                else:
                    theta = tie_aware_split(m.astype(np.float64), np.ones(m.size))
                ht.threshold[k] = place_threshold(m, theta)
                ht.child[k] = (left, right)
                lo = m <= ht.threshold[k]
                rows[left], rows[right] = rows[k][lo], rows[k][~lo]
                if soft:
                    ms = sc.margins(Z32, np.arange(n)).astype(np.float64)
                    sd = np.sqrt(np.average((ms[sel] - np.average(ms[sel], weights=w)) ** 2, weights=w))
                    up = expit(self.soft_steepness * (ms - float(ht.threshold[k])) / max(sd, 1e-12))
                    wts[left], wts[right] = wts[k] * (1 - up), wts[k] * up
                used = np.zeros(P, bool)
                used[cols] = True
                for c in (left, right):
                    paid[c], inh[c] = pk.copy(), inh[k] | used
        self.tree_ = ht
        self.node_budgets_ = budgets
        self.n_nodes_ = int(sum(r is not None for r in rows))
        return self._set_model(self.to_ir())

    def _fit_node(self, Z32, sel, tk, w, items, paid, inherited, budget, max_sel, xbuf):
        """Greedy selection (eq. (7), and with ``greedy="both"`` the
        plain-gain greedy too, keeping the larger R^2 of eq. (8)), then
        weighted OLS with intercept on the node's rows ``sel`` of the basis
        ``Z32`` (their centred, scaled float64 copy in the first rows of
        ``xbuf``).  ``paid`` is updated in place with the items of the kept
        columns."""
        sw = w.sum()
        sel = np.asarray(sel, np.int64)
        # fixed-order sums and QR (trainers/linalg.py), not BLAS/LAPACK: the
        # node's scorer must not depend on the CPU kernel or thread count
        xm = linalg.rmatvec_rows(Z32, sel, w) / sw
        ym = linalg.dot(w, np.asarray(tk, np.float64)) / sw
        rw = np.sqrt(w)
        Xc = centred_rows(Z32, sel, xm, rw, xbuf)
        yc = (tk - ym) * rw
        runs = [(True, self.budget_rule == "skip")]
        if self.greedy == "both":
            runs.append((False, True))
        best = None
        for ratio, skip in runs:
            pk = paid.copy()
            order, gains, _ = greedy_select(Xc, yc, items.col_ptr, items.col_items, items.cost,
                                            pk, inherited, float(budget), skip, max_sel, 1e-10,
                                            ratio)
            # each gain is the R^2 increase of its step (eq. (11)), so the sum
            # is z_k of the whole set; strictly larger wins, ties keep eq. (7)
            if best is None or gains.sum() > best[1].sum():
                best = (order, gains, pk)
        order, gains, pk = best
        paid[:] = pk
        cols = np.sort(order)
        beta = np.zeros(Z32.shape[1])
        if cols.size:
            beta[cols] = linalg.lstsq(Xc[:, cols], yc)
        return cols, gains, Scorer.from_float64(beta, ym - linalg.dot(beta, xm))


class ASTCRegressor(_ASTCMixin, _SquaredRegression, CostSensitiveRegressor):
    """ASTC for regression, squared loss (Kusner et al. 2014)."""

    __doc__ += "\n\n" + (_ASTCMixin.__doc__ or "")


class ASTCClassifier(_ASTCMixin, _SquaredBinary, CostSensitiveClassifier):
    """Binary ASTC: squared loss on targets -1 / +1 (the paper's Yahoo
    binary set); label classes_[1] iff the IR margin > 0."""

    __doc__ += "\n\n" + (_ASTCMixin.__doc__ or "")
