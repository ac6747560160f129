"""AFR: anytime feature representations (Xu, Kusner, Huang & Weinberger,
ICML 2013; thesis §2.2, Algorithm 4).

A representation phi(x) in R^S, each dimension [phi]_s = eta sum_t h_s^t(x)
a sum of regression trees, feeds a linear L2-SVM (w, b).  Trees are grown on
the gradient of a smooth validation loss through the SVM solved on the
training rows (paper Eqs. 6-14, thesis Eqs. 2.25-2.33, signs corrected, see
``trainers/linear/linear_svm.py``), with Greedy Miser's cost penalty (paper Eq. 8,
thesis Eq. 2.27).  Whenever a tree is about to pay for a new feature (or
group), the current (phi, w, b) is stored as a *checkpoint*; at test time
the model is an ``anytime`` IR node over those checkpoints, so a row
stopped at any budget answers with the last checkpoint it completed.

Choices the papers leave open (``docs/algorithms/afr-cvm.md`` §1.3,
§1.5) are parameters; the defaults are that digest's proposals:

* ``lambda_units="relative"``: the penalty of an unpaid feature of cost c is
  1/2 lambda c sum_i (r_i - mean r)^2, a share of the gradient's energy,
  because |d loss_V / d phi| has no fixed scale; "absolute" is the thesis'
  lambda c (the grower's gain is 1/2 of the squared-error decrease).
* lambda starts at ``lambda0`` and halves per block (Alg. 4 line 15) for
  ``n_blocks`` blocks (default: until the costliest feature costs 1 % of
  the energy, at most 20).
* Early stopping (Alg. 4 line 7, read as the prose says: stop a dimension
  when the hold-out O gets worse) on the smooth loss over O
  (``early_stop="loss"``) or O accuracy ("accuracy", the paper's).
* A dimension stops when the penalised grower finds no split (line 11's
  "not a descent direction": a least-squares tree is always one otherwise).
* C moves by ``c_step`` times the clipped mean-normalised gradient in log C.
"""
from __future__ import annotations

import math

import numpy as np
from tqdm.auto import tqdm

from ... import ir
from .. import linalg
from ..base import CostSensitiveClassifier
from ..boosting.booster import BinnedData, finish_tree
from ..boosting.grower import grow
from ..boosting.losses import squared_hinge
from ..boosting.predictor import predict_binned
from ..boosting.split_penalty import CostState
from ..common import class_weight_per_class, no_predict_proba, single_thread
from ..linear.linear_svm import afr_gradients, l2svm_newton, sigmoid_loss

C_RANGE = (1e-3, 1e3)


class AFRClassifier(CostSensitiveClassifier):
    """Anytime feature representations: an SVM over boosted trees, exported
    as an ``anytime`` IR node with one ``linear`` checkpoint per newly paid
    feature (paper §4.1, Fig. 1).  Binary classification only.

    Parameters
    ----------
    dims_per_block : int, default 20
        S, the dimensions learned per lambda (paper §5: 20; the XOR demo: 2).
    trees_per_dim : int, default 10
        T, trees per dimension per block (paper §5: 10).
    lambda0 : float, default 0.1
        Starting lambda (relative units by default; the paper's absolute
        values are 10 on Yahoo and 2^10 on Scene-15).
    lambda_units : {"relative", "absolute"}, default "relative"
        See the module docstring.
    n_blocks : int, optional
        Number of lambda values (lambda0, lambda0/2, ...).  Default
        min(20, ceil(log2(lambda0 c_max / 0.01)) + 1), c_max the costliest
        feature with its group.
    append_dims : bool, default True
        True: every block appends S new dimensions, each started by a
        Greedy Miser tree (Alg. 4 line 3).  False: the first block's S
        dimensions are refined in every block (the paper's XOR demo).
    learning_rate : float, default 0.1
        eta, the step of every tree (leaves are eta times the mean negative
        gradient, rounded once to float32).
    max_depth : int, default 3
    min_samples_leaf : int, default 20
    max_bins : int, default 255
    sigmoid_a : float, default 5
        a of the smooth 0-1 loss sigma_a(z) = 1 / (1 + e^{a z}) (paper §4).
    class_weight : None, "balanced" or dict
        beta_y of paper Eq. (6), also weighting the SVM's loss.
    C0 : float, default 1
        The SVM's starting C; C is learned (paper Alg. 1 line 9) in
        [1e-3, 1e3].
    c_step : float, default 0.5
        gamma_C, the step in log C (times the gradient of the mean loss,
        clipped to +-1).
    early_stop : {"loss", "accuracy"}, default "loss"
        What the hold-out O must not get worse at.
    fit_rows : {"TV", "V", "T"}, default "TV"
        Rows the trees are grown on (paper: T and V).
    val_fraction : float, default 0.5
        Share of the training rows in V' (= V + O); the rest is T (paper:
        50/50).
    holdout_fraction : float, default 0.2
        Share of V' in O (paper: 80/20).  With ``eval_set`` in ``fit``, O is
        the eval set and all of V' is V.
    feature_costs, feature_groups, group_costs, feature_names, group_names
        The cost specification (``FeatureCosts``); unit costs by default.
    tree_eval_cost : float, default 0
        c_e, the cost of evaluating one tree.
    random_state : int or None
        Seeds the T / V / O split and the binning sample.
    verbose : int, default 0
        1: a progress bar over blocks.

    Attributes
    ----------
    checkpoints_ : list of dict
        Per checkpoint: n_trees, w, b, C, lam (at the time it was stored),
        static_cost and new_features (names of the features it reads that
        the previous checkpoint does not), both from the IR.
    trees_ : list of dict
        Every tree in training order with its dimension ``dim``.
    n_dims_ : int
        Dimensions of the final representation.
    """

    def __init__(self, *, dims_per_block=20, trees_per_dim=10, lambda0=0.1, lambda_units="relative",
                 n_blocks=None, append_dims=True, learning_rate=0.1, max_depth=3, min_samples_leaf=20,
                 max_bins=255, sigmoid_a=5.0, class_weight=None, C0=1.0, c_step=0.5, early_stop="loss",
                 fit_rows="TV", val_fraction=0.5, holdout_fraction=0.2, feature_costs=None,
                 feature_groups=None, group_costs=None, feature_names=None, group_names=None,
                 tree_eval_cost=0.0, random_state=None, verbose=0):
        self.dims_per_block = dims_per_block
        self.trees_per_dim = trees_per_dim
        self.lambda0 = lambda0
        self.lambda_units = lambda_units
        self.n_blocks = n_blocks
        self.append_dims = append_dims
        self.learning_rate = learning_rate
        self.max_depth = max_depth
        self.min_samples_leaf = min_samples_leaf
        self.max_bins = max_bins
        self.sigmoid_a = sigmoid_a
        self.class_weight = class_weight
        self.C0 = C0
        self.c_step = c_step
        self.early_stop = early_stop
        self.fit_rows = fit_rows
        self.val_fraction = val_fraction
        self.holdout_fraction = holdout_fraction
        self.feature_costs = feature_costs
        self.feature_groups = feature_groups
        self.group_costs = group_costs
        self.feature_names = feature_names
        self.group_names = group_names
        self.tree_eval_cost = tree_eval_cost
        self.random_state = random_state
        self.verbose = verbose

    _binary_only = True

    predict_proba = no_predict_proba("AFR margins are SVM scores, not probabilities; use decision_function")

    # ------------------------------------------------------------ checks
    def _check_params(self):
        def pos_int(name):
            v = getattr(self, name)
            if not (isinstance(v, (int, np.integer)) and v >= 1):
                raise ValueError(f"{name} must be a positive integer, got {v!r}")
        for name in ("dims_per_block", "trees_per_dim", "min_samples_leaf"):
            pos_int(name)
        if self.n_blocks is not None:
            pos_int("n_blocks")
        if not (isinstance(self.max_depth, (int, np.integer)) and 1 <= self.max_depth <= 30):
            raise ValueError(f"max_depth must be an integer in [1, 30], got {self.max_depth!r}")
        for name in ("lambda0", "learning_rate", "sigmoid_a", "C0"):
            if not (isinstance(getattr(self, name), (int, float, np.number)) and getattr(self, name) > 0):
                raise ValueError(f"{name} must be a number > 0, got {getattr(self, name)!r}")
        if not self.c_step >= 0:
            raise ValueError(f"c_step must be >= 0, got {self.c_step!r}")
        if not self.tree_eval_cost >= 0 or not math.isfinite(self.tree_eval_cost):
            raise ValueError(f"tree_eval_cost must be finite and >= 0, got {self.tree_eval_cost!r}")
        choices = dict(lambda_units=("relative", "absolute"), early_stop=("loss", "accuracy"),
                       fit_rows=("TV", "V", "T"))
        for name, ok in choices.items():
            if getattr(self, name) not in ok:
                raise ValueError(f"{name} must be one of {ok}, got {getattr(self, name)!r}")
        for name in ("val_fraction", "holdout_fraction"):
            if not 0 < getattr(self, name) < 1:
                raise ValueError(f"{name} must be in (0, 1), got {getattr(self, name)!r}")

    # ------------------------------------------------------------ fit
    def fit(self, X, y, eval_set=None):
        """Learn the representation, the SVMs and the checkpoints.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Training rows (NaN = missing); split into T / V / O inside.
        y : array-like of shape (n_samples,)
            Two classes.
        eval_set : (X_val, y_val), optional
            The hold-out O for early stopping (otherwise carved out of X).

        Returns
        -------
        self
        """
        X, y = self._validate_X_y(X, y)
        idx = self._encode_labels(y)
        self._check_params()
        self._costs = self._cost_spec(X.shape[1])
        rng = np.random.default_rng(self.random_state)
        rows = self._split(idx, rng, eval_set is not None)
        if eval_set is not None:
            Xe = self._validate_X(eval_set[0], reset=False)
            ie = self._encode_labels(eval_set[1], reset=False)
            rows["O"] = np.arange(X.shape[0], X.shape[0] + Xe.shape[0])
            X, idx = np.concatenate([X, Xe]), np.concatenate([idx, ie])
        # small dense systems ([S+1]^2) and histograms of a few thousand rows
        # per tree: one thread is faster.  On the busy 2-core machine, many
        # BLAS threads were measured 35x slower and parallel numba split
        # searches 100x slower (16 ms against 0.14 ms per call)
        with single_thread(numba_threads=True):
            _Fit(self, X, idx, rows, rng).run()
        self._set_model(self.to_ir())
        seen = np.zeros(X.shape[1], bool)
        for k, ck in enumerate(self.checkpoints_):
            m = self.checkpoint_model(k)
            ck["static_cost"] = m.static_cost()
            feats = ir.reachable_units(m).features
            ck["new_features"] = [self._costs.names[f] for f in np.flatnonzero(feats & ~seen)]
            seen |= feats
        return self

    def _split(self, idx, rng, have_eval):
        """Stratified T / V / O row indices (paper §4: 50/50, then 80/20)."""
        parts = {"T": [], "V": [], "O": []}
        for k in (0, 1):
            r = rng.permutation(np.flatnonzero(idx == k))
            n_vp = int(round(self.val_fraction * len(r)))
            n_o = 0 if have_eval else int(round(self.holdout_fraction * n_vp))
            parts["O"].append(r[:n_o])
            parts["V"].append(r[n_o:n_vp])
            parts["T"].append(r[n_vp:])
        out = {k: np.sort(np.concatenate(v)) for k, v in parts.items()}
        for k, v in out.items():
            if len(v) == 0 and not (k == "O" and have_eval):
                raise ValueError(f"AFRClassifier: too few rows to split off a non-empty {k} "
                                 f"(val_fraction={self.val_fraction}, holdout_fraction="
                                 f"{self.holdout_fraction}); pass more rows or an eval_set")
        return out

    # ------------------------------------------------------------ IR
    def _segments(self):
        """(dim, first tree, stop) runs of consecutive trees of one dimension,
        cut at every checkpoint boundary."""
        cuts = {ck["n_trees"] for ck in self.checkpoints_}
        segs, start = [], 0
        for i in range(1, len(self.trees_) + 1):
            if i == len(self.trees_) or i in cuts or self.trees_[i]["dim"] != self.trees_[start]["dim"]:
                segs.append((self.trees_[start]["dim"], start, i))
                start = i
        return segs

    def _nodes(self):
        segs = self._segments()
        nodes = []
        for j, (d, a, b) in enumerate(segs):
            nodes.append(ir.concat_trees(self.trees_[a:b], tree_cost=np.full(b - a, float(self.tree_eval_cost)),
                                         base_score=[0.0], name=f"segment{j}_dim{d}"))
        first_ck = len(nodes)
        for k, ck in enumerate(self.checkpoints_):
            inputs = [(j, ck["w"][d]) for j, (d, a, b) in enumerate(segs) if b <= ck["n_trees"]]
            nodes.append(ir.linear([ir.node_input(j) for j, _ in inputs], [w for _, w in inputs],
                                   ck["b"], name=f"checkpoint{k}"))
        nodes.append(ir.anytime(list(range(first_ck, len(nodes))), name="afr"))
        return nodes, first_ck

    def to_ir(self) -> ir.Model:
        """The anytime model: tree-bank segments, a bias-only checkpoint 0,
        one ``linear`` checkpoint per stored (phi_k, w_k, b_k) reading the
        segments of phi_k, and an ``anytime`` output over them."""
        if not hasattr(self, "checkpoints_"):
            from sklearn.exceptions import NotFittedError
            raise NotFittedError("this AFRClassifier is not fitted yet; call fit first")
        nodes, _ = self._nodes()
        return self._ir_model(nodes, len(nodes) - 1, self._task(), self._costs,
                              n_checkpoints=len(self.checkpoints_), n_trees=len(self.trees_))

    def _task(self):
        # margins are SVM scores, not log-odds: no probabilistic transform
        return ir.binary_task(self._ir_classes(), "identity")

    def checkpoint_model(self, k) -> ir.Model:
        """Checkpoint k alone as a model (its margins, its static cost)."""
        nodes, first = self._nodes()
        return self._ir_model(nodes[:-1], first + k, self._task(), self._costs)

    def checkpoint_costs(self) -> list:
        """Static cost of every checkpoint (all its features, groups and
        trees), from the IR: with this budget every row completes it."""
        return [self.checkpoint_model(k).static_cost() for k in range(len(self.checkpoints_))]

    def staged_decision_function(self, X):
        """Margins of each checkpoint in turn (from the IR, reference runtime)."""
        from ...runtimes.reference import predict
        X = self._validate_X(X, reset=False)
        for k in range(len(self.checkpoints_)):
            yield predict(self.checkpoint_model(k), X).scores[:, 0]

    def anytime_curve(self, X, y, budgets=None) -> list:
        """Accuracy and mean lazy cost at each budget (default: every
        checkpoint's static cost, then no limit), from the exported model on
        the reference runtime.  Rows: dicts budget, accuracy, mean_cost,
        mean_stage."""
        X = self._validate_X(X, reset=False)
        y = np.asarray(y)
        if budgets is None:
            budgets = [ck["static_cost"] for ck in self.checkpoints_] + [math.inf]
        out = []
        for B in budgets:
            p = self._prediction(X, None if math.isinf(B) else B)
            out.append(dict(budget=float(B), accuracy=float(np.mean(p.output == y)),
                            mean_cost=float(p.cost.mean()), mean_stage=float(p.stage.mean())))
        return out


class _Fit:
    """One run of thesis Algorithm 4 (paper Algorithm 1), ambiguities
    resolved as in ``docs/algorithms/afr-cvm.md`` §1.3."""

    def __init__(self, est: AFRClassifier, X, idx, rows, rng):
        self.est = est
        self.N, self.F = X.shape
        self.T, self.V, self.O = rows["T"], rows["V"], rows["O"]
        fit_rows = {"TV": np.concatenate([self.T, self.V]), "V": self.V, "T": self.T}[est.fit_rows]
        self.fit_rows = np.sort(fit_rows).astype(np.int32)
        self.y01 = idx.astype(np.float64)
        self.y = 2.0 * self.y01 - 1.0
        self.mu = class_weight_per_class(est.class_weight, est.classes_, idx)[idx]
        train = np.concatenate([self.T, self.V])     # thresholds from training rows only
        self.data = BinnedData.from_X(X, est.max_bins, seed=int(rng.integers(2**31)),
                                      threshold_rows=np.sort(train))
        c = self.est._costs
        self.state = CostState(c.costs, c.groups, c.group_costs, 1.0)
        S = est.dims_per_block
        unpaid = self.state.penalty()
        self.n_blocks = est.n_blocks or min(20, max(1, math.ceil(math.log2(
            max(est.lambda0 * max(float(unpaid.max(initial=0.0)), 1e-300) / 0.01, 1.0))) + 1))
        max_dims = S * (self.n_blocks if est.append_dims else 1)
        self.Phi = np.zeros((self.N, max_dims))
        self.nd = 0
        self.C = float(est.C0)
        self.trees: list = []
        self.checkpoints: list = []
        self.ones = np.ones(self.N)

    # -------------------------------------------------------- pieces
    def solve(self, theta0=None):
        T, nd = self.T, self.nd
        if theta0 is not None and theta0.shape[0] < nd + 1:   # new dims start at weight 0
            theta0 = np.concatenate([theta0[:-1], np.zeros(nd + 1 - theta0.shape[0]), theta0[-1:]])
        return l2svm_newton(self.Phi[T, :nd], self.y[T], self.mu[T], 1.0 / self.C, theta0)

    def stat_O(self, sol):
        """Higher is better: -loss_O (smooth) or accuracy on O."""
        O = self.O
        m = self.y[O] * (linalg.matvec(self.Phi[O, :self.nd], sol.w) + sol.b)
        if self.est.early_stop == "accuracy":
            return float(np.mean(m > 0))
        return -sigmoid_loss(m, self.mu[O], self.est.sigmoid_a)[0]

    def snapshot(self, sol, lam):
        return dict(n_trees=len(self.trees), w=sol.w.copy(), b=sol.b, C=self.C, lam=lam)

    def emit(self, snap):
        if not self.checkpoints or self.checkpoints[-1] is not snap:
            self.checkpoints.append(snap)

    def fit_tree(self, g, lam, active):
        """A tree fit to -g on the fitting rows with the Eq. (2.27) penalty, or
        None if no split pays.  Returns (tree dict, its value per row, unpaid
        features it uses)."""
        est, rows = self.est, self.fit_rows
        r = g[rows]
        rms = float(np.sqrt(np.mean(r * r)))
        if not rms > 0:
            return None
        gs = g / rms              # unit scale: the grower's 1e-12 gain floor stays negligible
        unpaid = self.state.penalty()
        if est.lambda_units == "relative":
            rs = gs[rows]
            pen = 0.5 * lam * float(np.sum((rs - rs.mean()) ** 2)) * unpaid
        else:
            pen = 0.5 * lam * unpaid / (rms * rms)
        tree = grow(self.data.binned, self.data.n_bins, rows, gs, self.ones, max_depth=est.max_depth,
                    min_samples_leaf=est.min_samples_leaf, l2=0.0, penalty=pen, active=active)
        if len(tree.feature) == 1:
            return None
        sums = np.array(tree.sums)
        leaf = -rms * sums[:, 0] / np.maximum(sums[:, 2], 1.0)
        feat, sbin, left, right, mleft, value, thr = finish_tree(tree, est.learning_rate * leaf, self.data)
        col = np.zeros(self.N)
        predict_binned(self.data.binned, feat, sbin, left, right, mleft, value, col)
        used = np.unique(feat[feat >= 0])
        new = [int(f) for f in used if unpaid[f] > 0]     # the tree raises the static cost
        t = dict(feature=feat, threshold=thr, left=left, right=right, missing_left=mleft,
                 value=value.astype(np.float32))
        return t, col, used, new

    def accept(self, dim, res, lam, sol, snap):
        """Store tree ``res`` of dimension ``dim``; emit the previous state as
        a checkpoint if the tree pays a new feature (paper §4.1)."""
        t, _, used, new = res
        if new:
            self.emit(snap)
        for f in used:
            self.state.pay(int(f))
        t["dim"] = dim
        self.trees.append(t)
        return self.snapshot(sol, lam)

    def init_dimension(self, H, lam, sol, snap):
        """Alg. 4 line 3: a Greedy Miser tree on the squared hinge of the
        labels starts a new dimension."""
        g, h = np.zeros(self.N), np.zeros(self.N)
        squared_hinge(self.y01, H, g, h)
        g *= self.mu
        res = self.fit_tree(g, lam, np.ones(self.F, np.bool_))
        if res is None:   # nothing pays at this lambda: the cheapest features, free
            unpaid = np.where(self.state.paid_f, np.inf, self.state.penalty())
            active = self.state.paid_f | (unpaid == unpaid.min())
            res = self.fit_tree(g, 0.0, active)
        s = self.nd
        self.nd += 1
        if res is None:
            return sol, snap
        self.Phi[:, s] = res[1]
        H += res[1]
        sol = self.solve(sol.theta)
        return sol, self.accept(s, res, lam, sol, snap)

    # -------------------------------------------------------- Algorithm 4
    def run(self):
        est = self.est
        T, V = self.T, self.V
        a = est.sigmoid_a
        muV_sum = float(self.mu[V].sum())
        sol = self.solve()
        lam = float(est.lambda0)
        snap = self.snapshot(sol, lam)          # checkpoint 0: the bias alone
        self.emit(snap)
        fit = self.fit_rows
        H = np.full(self.N, np.sum(self.mu[fit] * self.y[fit]) / np.sum(self.mu[fit]))
        S = est.dims_per_block
        lo, hi = math.log(C_RANGE[0]), math.log(C_RANGE[1])
        bar = tqdm(range(self.n_blocks), disable=not est.verbose, desc="AFR", unit="block", leave=False)
        for block in bar:
            if block == 0 or est.append_dims:
                first = self.nd
                for _ in range(S):
                    sol, snap = self.init_dimension(H, lam, sol, snap)
                dims = range(first, self.nd)
            else:
                dims = range(self.nd)
            for s in dims:
                sol = self.solve(sol.theta)
                base = self.stat_O(sol)
                for _ in range(est.trees_per_dim):
                    gr = afr_gradients(sol, self.Phi[T, :self.nd], self.y[T], self.mu[T],
                                       self.Phi[V, :self.nd], self.y[V], self.mu[V], self.C, a)
                    step = float(np.clip(gr.d_log_C / muV_sum, -1.0, 1.0))
                    self.C = math.exp(min(hi, max(lo, math.log(self.C) - est.c_step * step)))
                    g = np.zeros(self.N)
                    g[T] = gr.d_phi_T[:, s]
                    g[V] = gr.d_phi_V[:, s]
                    res = self.fit_tree(g, lam, np.ones(self.F, np.bool_))
                    if res is None:
                        break
                    old = self.Phi[:, s].copy()
                    self.Phi[:, s] += res[1]
                    new_sol = self.solve(sol.theta)
                    stat = self.stat_O(new_sol)
                    if stat < base:             # O got worse: undo, next dimension
                        self.Phi[:, s] = old
                        sol = self.solve(sol.theta)
                        break
                    sol, base = new_sol, stat
                    snap = self.accept(s, res, lam, sol, snap)
            lam /= 2.0
        bar.close()
        self.emit(snap)
        est.trees_ = self.trees
        est.checkpoints_ = self.checkpoints
        est.n_dims_ = self.nd
        est.C_ = self.C
        est.split_sizes_ = dict(T=len(T), V=len(V), O=len(self.O))
