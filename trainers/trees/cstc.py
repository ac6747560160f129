"""CSTC: the Cost-Sensitive Tree of Classifiers (Xu's thesis §3.4-3.6).

A tree of linear classifiers, each over raw features or over the trees of a
bank (the boosting trick, §3.6), trained by the mixed-norm relaxation T(3.13)
/ T(3.24) with block coordinate descent (``soft_tree.SoftTree``), pruned on
``eval_set`` (§3.4.5), optionally reweighted towards the l0 cost (an
extension, ``cost_reweight_rounds``; 0 is the thesis' objective) and
fine-tuned (§3.4.4).  The IR is a ``classifier_tree`` of ``linear`` scorers;
every reported number comes from it (docs/trees.md).
"""
from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from ... import ir
from ...runtimes.reference import predict as ref_predict
from .. import linalg
from ..base import CostSensitiveClassifier, CostSensitiveRegressor
from ..boosting.booster import tree_outputs
from ..boosting.tree_bank import bank_features
from ..common import holdout_rows, no_predict_proba, progress_bar, single_thread
from .soft_tree import LEAF, TERM, SoftTree
from .tree_ir import (
    CostItems,
    HardTree,
    Scorer,
    Standardizer,
    choose,
    feature_input,
    route_rows,
    to_ir_nodes,
    tree_input_of,
)

FINE_TUNE = ("none", "node", "path")
# max_depth="auto" with validation rows: depths 1, 2 and 3 always (3 was the fixed default), then one level
# deeper while the last depth raised the best validation score and the full tree's estimated work
# (rows x columns x nodes^2: every node's solve runs a forward pass over the whole tree) stays within
# AUTO_WORK, about depth 4 on compare.py's Spambase, MAGIC and letter; never past 10 (thesis §3.7.2)
AUTO_ALWAYS = (1, 2, 3)
AUTO_WORK = 4e7
MAX_DEPTH = 10


class _Basis:
    """The columns node scorers read: raw features, or a bank's tree outputs."""

    def __init__(self, bank, costs):
        self.bank = bank
        self.costs = costs

    def items(self):
        if self.bank is None:
            return CostItems.from_features(self.costs)
        return CostItems.from_bank(self.costs, bank_features(self.bank, len(self.costs.costs)),
                                   self.bank.tree_cost)

    def matrix(self, X):
        """float32 [N, P]: X itself or the bank's per-tree outputs."""
        if self.bank is None:
            return np.ascontiguousarray(X, np.float32)
        return tree_outputs(self.bank, X)

    def inputs(self):
        return feature_input if self.bank is None else tree_input_of(0)


class _TreeIR:
    """IR export shared by CSTC and ASTC (``tree_``, ``_basis``, ``_costs`` fitted)."""

    # set by fit, or provided by the estimator classes this mixes into
    tree_: HardTree
    _basis: _Basis
    _costs: Any
    _ir_model: Callable[..., ir.Model]
    _task: Callable[[], Any]
    _val_score: Callable[..., float]     # the task mixin's validation score (accuracy, or -MSE)

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        # a linear scorer over raw features cannot route NaN; a bank can
        tags.input_tags.allow_nan = self.bank is not None
        return tags

    def _validate_X(self, X, *, reset):
        X = super()._validate_X(X, reset=reset)
        if self.bank is None and np.isnan(X).any():
            raise ValueError("X: NaN found; this tree's linear scorers read raw features and cannot "
                             "route a missing value; impute it first")
        return X

    def _ir_from(self, ht: HardTree) -> ir.Model:
        first = 0 if self._basis.bank is None else 1
        nodes = to_ir_nodes(ht, self._basis.inputs(), first_index=first,
                            name=type(self).__name__)
        if first:
            nodes = [self._basis.bank] + nodes
        return self._ir_model(nodes, len(nodes) - 1, self._task(), self._costs)

    def to_ir(self) -> ir.Model:
        """The fitted tree as an IR model (a ``classifier_tree`` of ``linear``
        scorers, over a ``trees`` bank when one was given)."""
        return self._ir_from(self.tree_)

    def _prepare(self, X, y):
        """(float32 X, target in training units, FeatureCosts, basis)."""
        X, y = self._validate_X_y(X, y)
        costs = self._cost_spec(X.shape[1])
        if self.bank is None and np.isnan(X).any():
            raise ValueError("X: NaN found; linear scorers over raw features cannot route a "
                             "missing value; impute it, or pass a tree bank (bank=...) that "
                             "routes NaN inside its trees")
        return X, self._encode_target(y), costs, _Basis(self.bank, costs)


class _SquaredRegression:
    def _encode_target(self, y, reset=True):
        y = np.asarray(y, np.float64)
        if not np.all(np.isfinite(y)):
            raise ValueError("y: regression targets must be finite")
        return y

    def _task(self):
        return ir.regression_task()

    def _decode_target(self, t):
        return t

    @staticmethod
    def _val_score(model, Xv, yv):
        return -float(np.mean((ref_predict(model, Xv).output - np.asarray(yv, np.float64)) ** 2))


class _SquaredBinary:
    # thesis §3.4 and Kusner et al. define CSTC/ASTC for two classes (or regression)
    _binary_only = True
    def _encode_target(self, y, reset=True):
        return 2.0 * self._encode_labels(y, reset=reset) - 1.0

    def _task(self):
        return ir.binary_task(self._ir_classes(), "identity")

    def _decode_target(self, t):
        return self.classes_[(np.asarray(t) > 0).astype(int)]

    predict_proba = no_predict_proba("its squared-loss margin is not a log-odds; use decision_function")

    @staticmethod
    def _val_score(model, Xv, yv):
        return float(np.mean(ref_predict(model, Xv).output == yv))


class _CSTCMixin(_TreeIR):
    """
    Parameters
    ----------
    cost_tradeoff : float [0.01]
        lambda of T(3.13), per row on the standardised target.  ``lambda_grid``
        gives the values worth trying.
    max_depth : int, tuple of int or "auto" ["auto"]
        Levels of classifier nodes of the full tree (2**max_depth - 1 nodes),
        at most 10 (thesis §3.7.2).  A tuple fits one tree per depth and
        keeps the one the selection rule prefers on validation (thesis
        §3.7.2: "CSTC depth by validation performance").  "auto": with an
        ``eval_set``, depths 1, 2, 3, then deeper one level at a time while
        the last depth raised the best validation score and the tree's
        estimated work (rows x columns x nodes^2) stays within ``AUTO_WORK``
        (about depth 4 on 10,000 rows x 16 features), never past 10; without
        an ``eval_set``, depth 3 (no rows are held out of the tree).
    rho : float [1e-3]
        l1 weight (T(3.1)), standardised units.
    steepness : float [50]
        gamma of the soft routing sigma(gamma (s - theta)); T(3.5) has 1,
        which fails the thesis' own quadrant set (docs/trees.md).
    cost_reweight_rounds : int [3]
        Rounds of reweighting the path norm towards l0 after convergence (an
        extension); 0 is the thesis' objective.
    reweight_eps : float [0.03]
    fine_tune : {"none", "node", "path"} ["node"]
        Re-fit the exit classifiers without the cost term on their frozen
        support (thesis §3.4.4); "path" lets an exit use every column its path
        already paid for (same cost by construction).  With validation rows
        (``eval_set``, or the hold-out of a depth search) each exit's re-fit
        is kept only when the validation score does not fall (thesis §3.7.2
        stops fine-tuning early on validation).
    prune : bool or "before" [True]
        Prune on the validation rows (thesis §3.4.5), when there are some:
        after the descent.  "before" prunes the initialised tree, the
        thesis' order, whose validation score says little about the
        optimised tree (on Spambase it cut 7 nodes to 2 and lost 9 points;
        docs/trees.md).
    validation_fraction : float [0.2]
        Share of the training rows held out (seeded by ``random_state``) as
        validation rows when depths are searched and ``fit`` gets no
        ``eval_set``; the tree is then trained on the other rows (pruning and
        fine-tuning keep using the held-out ones).
    selection_tolerance : float [0.005]
        The depth rule's slack: the cheapest tree (validation mean cost)
        whose validation accuracy is within this of the best one's (for a
        regressor: whose validation MSE is within this fraction of the best).
    max_cycles : int [10]; tol : float [1e-6]
        Block coordinate descent stops (Alg. 5's epsilon).
    bank : ir TreesNode or None [None]
        None: linear scorers over raw features.  A bank: scorers over its
        trees (the boosting trick), tree t costing ``bank.tree_cost[t]``.
    feature_costs, feature_groups, group_costs, feature_names, group_names
        As Greedy Miser.
    random_state : int or None
        Seeds the hold-out of a depth search (the fit itself is deterministic).
    verbose : int, default 1
        A progress bar over the block-coordinate-descent cycles.
    """

    # cost_accuracy_curve passes the validation rows as eval_set (depth, pruning, fine-tuning)
    _selects_on_validation = True

    def __init__(self, *, cost_tradeoff=0.01, max_depth="auto", rho=1e-3, steepness=50.0,
                 cost_reweight_rounds=3, reweight_eps=0.03, fine_tune="node", prune=True,
                 max_cycles=10, tol=1e-6, bank=None, feature_costs=None, feature_groups=None,
                 group_costs=None, feature_names=None, group_names=None, random_state=None, verbose=1,
                 validation_fraction=0.2, selection_tolerance=0.005):
        self.validation_fraction = validation_fraction
        self.selection_tolerance = selection_tolerance
        self.verbose = verbose
        self.cost_tradeoff = cost_tradeoff
        self.max_depth = max_depth
        self.rho = rho
        self.steepness = steepness
        self.cost_reweight_rounds = cost_reweight_rounds
        self.reweight_eps = reweight_eps
        self.fine_tune = fine_tune
        self.prune = prune
        self.max_cycles = max_cycles
        self.tol = tol
        self.bank = bank
        self.feature_costs = feature_costs
        self.feature_groups = feature_groups
        self.group_costs = group_costs
        self.feature_names = feature_names
        self.group_names = group_names
        self.random_state = random_state

    # ------------------------------------------------------------ checks
    def _depths(self, validated=False, work=0.0):
        """The candidate depths.  ``"auto"``: (3,) without validation rows;
        with them, 1..10 that fit the work estimate ``work`` (rows x columns)
        x nodes^2 <= AUTO_WORK, 1, 2 and 3 always (``fit`` stops early)."""
        d = self.max_depth
        if isinstance(d, str):
            if d != "auto":
                raise ValueError(f"max_depth must be an integer in 1..10, a tuple of them or 'auto', got {d!r}")
            if not validated:
                return (3,)
            return AUTO_ALWAYS + tuple(x for x in range(AUTO_ALWAYS[-1] + 1, MAX_DEPTH + 1)
                                       if work * (2 ** x - 1) ** 2 <= AUTO_WORK)
        ds = tuple(d) if isinstance(d, (tuple, list)) else (d,)
        if not ds:
            raise ValueError("max_depth: an empty tuple of candidates")
        for x in ds:
            if not (isinstance(x, (int, np.integer)) and not isinstance(x, bool) and 1 <= x <= 10):
                raise ValueError(f"max_depth must be an integer in 1..10, got {x!r}")
        return tuple(int(x) for x in ds)

    def _check_params(self):
        self._depths()
        if not (np.isfinite(self.selection_tolerance) and self.selection_tolerance >= 0):
            raise ValueError(f"selection_tolerance must be a number >= 0, got {self.selection_tolerance!r}")
        for name in ("cost_tradeoff", "rho", "reweight_eps"):
            v = getattr(self, name)
            if not (np.isfinite(v) and v >= 0):
                raise ValueError(f"{name} must be a finite number >= 0, got {v!r}")
        if not (np.isfinite(self.steepness) and self.steepness > 0):
            raise ValueError(f"steepness must be > 0, got {self.steepness!r}")
        self._prune_when()
        if self.fine_tune not in FINE_TUNE:
            raise ValueError(f"fine_tune must be one of {FINE_TUNE}, got {self.fine_tune!r}")
        if not (isinstance(self.cost_reweight_rounds, (int, np.integer)) and self.cost_reweight_rounds >= 0):
            raise ValueError(f"cost_reweight_rounds must be an integer >= 0, got {self.cost_reweight_rounds!r}")

    def _prune_when(self):
        """"after" (the descent), "before" (it; the thesis' order) or None."""
        p = self.prune
        if isinstance(p, str) and p == "before":
            return "before"
        if isinstance(p, (bool, np.bool_)):
            return "after" if p else None
        raise ValueError(f"prune must be True, False or 'before', got {p!r}")

    # ------------------------------------------------------------ fitting
    def fit(self, X, y, eval_set=None):
        """Train the tree (thesis §3.4.3-3.4.5).

        Parameters
        ----------
        X : array-like (n_samples, n_features)
        y : array-like (n_samples,)
        eval_set : (X_val, y_val), optional
            Validation data for pruning (thesis §3.4.5).
        """
        self._check_params()
        X, t, costs, basis = self._prepare(X, y)
        self._costs, self._basis = costs, basis
        auto = isinstance(self.max_depth, str)
        n_columns = X.shape[1] if basis.bank is None else len(basis.bank.tree_cost)
        depths = self._depths(eval_set is not None, float(X.shape[0]) * n_columns)
        val = None
        if eval_set is not None:
            val = (self._validate_X(eval_set[0], reset=False), np.asarray(eval_set[1]))
        elif len(depths) > 1:
            tr, va = holdout_rows(len(t), self.validation_fraction, self.random_state)
            val = (X[va], self._decode_target(t[va]))
            X, t = X[tr], t[tr]
        self.selection_ = []
        with single_thread():
            if len(depths) == 1:
                return self._fit(X, t, basis, val, depths[0])
            fits, points = [], []
            for d in depths:
                if auto and d > AUTO_ALWAYS[-1] and points[-1][0] <= max(sc for sc, _ in points[:-1]):
                    break          # the last depth did not raise the best validation score: stop
                self._fit(X, t, basis, val, d)
                p = ref_predict(self.model_, val[0])
                score = self._val_score(self.model_, val[0], val[1])
                fits.append((self.tree_, self.objective_history_, self.n_nodes_, self._soft, self._std,
                             self.fine_tuned_exits_))
                points.append((score, float(p.cost.mean())))
                self.selection_.append({"max_depth": d, "score": score, "mean_cost": points[-1][1],
                                        "n_nodes": self.n_nodes_, "chosen": False})
            i = self._choose(points)
            self.selection_[i]["chosen"] = True
            (self.tree_, self.objective_history_, self.n_nodes_, self._soft, self._std,
             self.fine_tuned_exits_) = fits[i]
            self.max_depth_ = depths[i]
            return self._set_model(self.to_ir())

    def _choose(self, points):
        """``cronus.choose`` on (score, cost): accuracy within
        ``selection_tolerance`` of the best; for a regressor (score = -MSE),
        MSE within that fraction of the best."""
        if isinstance(self, CostSensitiveRegressor):
            best = max(s for s, _ in points)
            ok = [(0.0 if s >= best * (1 + self.selection_tolerance) else -1.0, c) for s, c in points]
            return choose(ok, 0.0)
        return choose(points, self.selection_tolerance)

    def _fit(self, X, t, basis, val, depth):
        Z32 = basis.matrix(X)
        self._std = std = Standardizer.fit(Z32, t)
        tree = SoftTree(None, std.target(t), basis.items(), depth, self.cost_tradeoff, self.rho,
                        self.steepness, PhiT=std.columns_t(Z32))
        tree.initialise()
        prune = self._prune_when() if val is not None and tree.K > 1 else None
        if prune == "before":
            self._prune(tree, Z32, *val)
        rounds = int(self.cost_reweight_rounds)
        with progress_bar(self.verbose, int(self.max_cycles) * (1 + rounds), f"CSTC depth {depth}",
                          "cycle") as bar:
            tree.bcd(self.max_cycles, self.tol, bar)
            for _ in range(rounds):
                tree.reweight(self.reweight_eps)
                tree.bcd(self.max_cycles, self.tol, bar)
        if prune == "after":
            # §3.4.5 prunes before the descent; judged there, the initialised tree's validation score
            # misled it (Spambase: 7 nodes cut to 2, 9 points lost; docs/trees.md), so the optimised
            # tree is pruned: a variant is kept only when the validation score is not worse
            self._prune(tree, Z32, *val)
        self.tree_ = self._export(tree, Z32, fine_tune=self.fine_tune, val=val)
        self.objective_history_ = list(tree.history)
        self.n_nodes_ = int(tree.alive.sum())
        self.max_depth_ = depth
        self._soft = tree
        return self._set_model(self.to_ir())

    def _export(self, tree: SoftTree, Z32, fine_tune="none", val=None) -> HardTree:
        """Hard tree in raw units: scorers folded, thresholds placed between
        distinct IR margins of the training rows (``Z32``, the float32
        basis), exits fine-tuned (with validation rows ``val``, each re-fit
        kept only when the validation score does not fall)."""
        K, std = tree.K, self._std
        scorers = [Scorer.from_float64(*std.fold(tree.beta[k], tree.bias[k])) for k in range(K)]
        ht = HardTree(scorers, tree.child.copy(), np.zeros(K, np.float32))
        theta_raw = np.array([std.margin(th) for th in tree.theta])
        self.fine_tuned_exits_ = []
        if fine_tune != "none" and val is None:
            self._fine_tune(tree, ht, fine_tune)
        route_rows(ht, Z32, np.arange(Z32.shape[0]), theta_raw)
        if fine_tune != "none" and val is not None:
            # exits and leaves do not route, so the thresholds placed above stay right
            self._fine_tune(tree, ht, fine_tune, val)
        return ht

    def _fine_tune(self, tree: SoftTree, ht: HardTree, how, val=None):
        """Thesis §3.4.4: exits re-fit without the cost term, support frozen
        (node) or the path's paid columns (path); with validation rows, one
        exit at a time, kept when the validation score does not fall
        (thesis §3.7.2)."""
        if val is not None:
            best = self._val_score(self._ir_from(ht), *val)
        p, s = tree.forward()
        std = self._std
        for (k, side) in tree.terminals():
            if how == "path":
                cols = np.flatnonzero(np.any(tree.beta[tree.path(k)] != 0, axis=0))
            else:
                cols = np.flatnonzero(tree.beta[k] != 0)
            w = tree.exit_weight(k, side, p, s) / tree.n
            if w.sum() <= 0:
                continue
            beta, b = tree.refit(w, cols)
            sc = Scorer.from_float64(*std.fold(beta, b))
            before = ht.scorer[k] if side == LEAF else ht.exit.get((k, side))
            if side == LEAF:
                ht.scorer[k] = sc
            else:
                ht.exit[(k, side)] = sc
            if val is None:
                self.fine_tuned_exits_.append((int(k), int(side)))
                continue
            score = self._val_score(self._ir_from(ht), *val)
            if score >= best:
                best = score
                self.fine_tuned_exits_.append((int(k), int(side)))
            elif side == LEAF:
                ht.scorer[k] = before
            elif before is None:
                del ht.exit[(k, side)]
            else:
                ht.exit[(k, side)] = before

    def _prune(self, tree: SoftTree, Z32, Xv, yv):
        """Bottom-up: at a node whose children are leaves or terminals, try
        removing both, the lower or the upper child; keep the best variant if
        the validation score (through the IR) is not worse, fewer nodes first."""
        def score():
            return self._val_score(self._ir_from(self._export(tree, Z32)), Xv, yv)
        self.fine_tuned_exits_ = []
        best = score()
        changed = True
        while changed:
            changed = False
            for k in reversed(tree.nodes()):
                if tree.is_leaf(k):
                    continue
                kids = [c for c in tree.child[k] if c != TERM]
                if any(not tree.is_leaf(c) for c in kids):
                    continue
                saved = (tree.child.copy(), tree.alive.copy())
                options = []
                for sides in ((0, 1), (0,), (1,)):
                    if all(tree.child[k, sd] == TERM for sd in sides):
                        continue
                    for sd in sides:
                        tree.remove_child(k, sd)
                    options.append((score(), -int(tree.alive.sum()), sides))
                    tree.child[:], tree.alive[:] = saved[0], saved[1]
                if not options:
                    continue
                sc, _, sides = max(options, key=lambda o: (o[0], o[1]))
                if sc >= best:
                    for sd in sides:
                        tree.remove_child(k, sd)
                    best, changed = sc, True

    # ------------------------------------------------------------ lambda
    def lambda_grid(self, X, y, n=21):
        """The lambda values worth trying: lambda_max, the group-lasso KKT bound
        at which the root's initialisation is all zero,
        max_m ||Phi_m^T (y - mean y) / n||_2 / c_m, then half-octave steps down.

        Returns
        -------
        float64 [n], decreasing
        """
        X, t, costs, basis = self._prepare(X, y)
        Z = basis.matrix(X)
        std = Standardizer.fit(Z, t)
        Phi, ys = std.columns(Z), std.target(t)
        g = linalg.rmatvec(Phi, ys) / Phi.shape[0]
        items = basis.items()
        norms = np.sqrt(linalg.matvec(np.asarray(items.matrix, np.float64), g * g))
        lam_max = float(np.max(norms / items.cost)) if items.cost.size else 1.0
        return lam_max * 2.0 ** (-np.arange(n) / 2)


class CSTCRegressor(_CSTCMixin, _SquaredRegression, CostSensitiveRegressor):
    """CSTC for regression, squared loss (thesis §3.4)."""

    __doc__ += "\n\n" + (_CSTCMixin.__doc__ or "")


class CSTCClassifier(_CSTCMixin, _SquaredBinary, CostSensitiveClassifier):
    """Binary CSTC: squared loss on targets -1 / +1 (as the thesis and
    Kusner et al.); the IR margin is the score, the label is classes_[1] iff
    margin > 0 (identity output transform)."""

    __doc__ += "\n\n" + (_CSTCMixin.__doc__ or "")
