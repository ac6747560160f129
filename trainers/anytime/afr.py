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

from ... import ir
from ..base import CostSensitiveClassifier
from ..common import no_predict_proba, progress_bar, single_thread
from .afr_fit import AFRFit
from .afr_multiclass import OneVsAllFit, multiclass_nodes


class AFRClassifier(CostSensitiveClassifier):
    """Anytime feature representations: an SVM over boosted trees, exported
    as an ``anytime`` IR node with one ``linear`` checkpoint per newly paid
    feature (paper §4.1, Fig. 1).  With more than two classes, one AFR per
    class (one-vs-all) in lockstep over one paid-feature state, Platt-scaled
    (thesis §2.2.4; ``afr_multiclass.py``).

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
    verbose : int, default 1
        A progress bar over the representation's blocks.

    Attributes
    ----------
    checkpoints_ : list of dict
        Per checkpoint: n_trees, w, b, C, lam (at the time it was stored),
        static_cost and new_features (names of the features it reads that
        the previous checkpoint does not), both from the IR.  Multiclass:
        n_trees, w, b, C and lam are lists over the classes, and platt
        holds each class's Platt (A, B).
    trees_ : list of dict
        Every tree in training order with its dimension ``dim`` (and class
        ``cls`` when multiclass).
    n_dims_ : int or list of int
        Dimensions of the final representation (per class when multiclass).
    C_ : float or list of float
        The SVM's learned C (per class when multiclass).
    """

    def __init__(self, *, dims_per_block=20, trees_per_dim=10, lambda0=0.1, lambda_units="relative",
                 n_blocks=None, append_dims=True, learning_rate=0.1, max_depth=3, min_samples_leaf=20,
                 max_bins=255, sigmoid_a=5.0, class_weight=None, C0=1.0, c_step=0.5, early_stop="loss",
                 fit_rows="TV", val_fraction=0.5, holdout_fraction=0.2, feature_costs=None,
                 feature_groups=None, group_costs=None, feature_names=None, group_names=None,
                 tree_eval_cost=0.0, random_state=None, verbose=1):
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
            Two classes, or more (one-vs-all, Platt-scaled: thesis §2.2.4).
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
            Xe, ie = self._validate_eval_set(eval_set)
            rows["O"] = np.arange(X.shape[0], X.shape[0] + Xe.shape[0])
            X, idx = np.concatenate([X, Xe]), np.concatenate([idx, ie])
        # small dense systems ([S+1]^2) and histograms of a few thousand rows
        # per tree: one thread is faster.  On the busy 2-core machine, many
        # BLAS threads were measured 35x slower and parallel numba split
        # searches 100x slower (16 ms against 0.14 ms per call)
        self._ir_nodes = None
        with single_thread(numba_threads=True):
            if len(self.classes_) == 2:
                fit = AFRFit(self, X, idx, rows, rng)
                with progress_bar(self.verbose, fit.n_blocks, "AFR", "block") as bar:
                    fit.run(bar)
                self.trees_, self.checkpoints_, self.n_dims_, self.C_ = fit.trees, fit.checkpoints, fit.nd, fit.C
            else:
                ova = OneVsAllFit(self, X, idx, rows, rng)
                with progress_bar(self.verbose, ova.n_blocks, "AFR", "block") as bar:
                    ova.run(bar)
                self.trees_, self.checkpoints_ = ova.results()
                self.n_dims_ = [f.nd for f in ova.fits]
                self.C_ = [f.C for f in ova.fits]
        self.split_sizes_ = {k: len(v) for k, v in rows.items()}
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
        parts: dict = {"T": [], "V": [], "O": []}
        for k in range(len(self.classes_)):
            r = rng.permutation(np.flatnonzero(idx == k))
            n_vp = int(round(self.val_fraction * len(r)))
            n_o = 0 if have_eval else int(round(self.holdout_fraction * n_vp))
            parts["O"].append(r[:n_o])
            parts["V"].append(r[n_o:n_vp])
            parts["T"].append(r[n_vp:])
        out = {k: np.sort(np.concatenate(v)) for k, v in parts.items()}
        if not have_eval and len(out["O"]) == 0 and len(out["V"]) >= 2:
            # many small classes round every class's share of O to 0 rows:
            # O takes one row of V (a split that was refused before)
            out["O"], out["V"] = out["V"][-1:], out["V"][:-1]
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
        """(nodes, index of the first checkpoint node), built once per fit."""
        if getattr(self, "_ir_nodes", None) is None:
            if len(self.classes_) == 2:
                self._ir_nodes = self._binary_nodes()
            else:
                self._ir_nodes = multiclass_nodes(self.trees_, self.checkpoints_, len(self.classes_),
                                                  self.tree_eval_cost)
        return self._ir_nodes

    def _binary_nodes(self):
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
        # binary margins are SVM scores, not log-odds: no probabilistic
        # transform; multiclass scores are each class's Platt log-odds, whose
        # softmax would not be the calibrated probabilities: identity too
        if len(self.classes_) == 2:
            return ir.binary_task(self._ir_classes(), "identity")
        return ir.multiclass_task(self._ir_classes(), "identity")

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
            s = predict(self.checkpoint_model(k), X).scores
            yield s[:, 0] if s.shape[1] == 1 else s

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
