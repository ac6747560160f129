"""Cronus (Chen et al. 2012) and CSCC (Xu's thesis §3.5): cost-sensitive
classifier cascades over a tree dictionary.

Both learn K linear stages over the trees of a bank and a threshold per
stage with the soft-cascade engine (``soft_cascade``); they differ in the
relaxed cost term (Cronus Eq. 8: one mixed norm over all stages weighted by
the fraction d_k reaching each stage; CSCC Eq. 3.25: the expected cost over
exit paths) and in CSCC's fine-tuning of the last stage (thesis §3.4.4).

The exported IR is one ``trees`` bank (``tree_cost`` = e_t), one ``linear``
node per kept stage over tree inputs, and one ``cascade`` whose stages exit
with ``le``: a row leaves at the first stage whose float32 margin is <= its
threshold and is predicted by **that stage's own margin** (label: margin > 0).
That is what both training losses score (Chen Eq. 8 and thesis Eq. 3.20
weight stage k's squared error on its own prediction by the exit
probability); Chen §3.2's prose ("a rejected input predicts -1") is not the
loss's model, and the trained stages use the freedom: some learn thresholds
above 0 and exit confident positives.  The sigmoids are training-only.

Thresholds are placed on the IR-exact float32 margins of the training rows
that reach each stage (``tree_ir.place_threshold``), so the deployed cascade
routes the training rows exactly as the hard version of the trained one.
"""
from __future__ import annotations

import hashlib

import numpy as np

from ... import ir
from ...runtimes.reference import predict as ref_predict
from ..base import CostSensitiveClassifier
from ..boosting.booster import tree_outputs
from ..boosting.greedy_miser import CategoricalInputs
from ..boosting.tree_bank import bank_features, subset_bank, tiered_bank
from ..common import class_weight_per_class, holdout_rows, no_predict_proba, progress_bar
from ..trees.tree_ir import CostItems, Scorer, choose, place_threshold
from .soft_cascade import (
    Cascade,
    Problem,
    Settings,
    fine_tune_last,
    fine_tune_stage,
    init_cascade,
    lambda_max,
    optimize,
)

BANKS = ("tiers", "gbrt", "greedy_miser")
FINE_TUNE = ("none", "last", "all")
# the candidates "auto" tries (Chen §3.4 and thesis §3.7.2 choose the cascade
# length, keep ratio and discount on validation, with at most 10 stages)
AUTO = {"n_stages": (1, 3, 10), "exit_fraction": (0.05, 0.15), "lambda_inflation": (1.3, 2.5)}
# the levels s of the two-sided exits retrofitted on validation (|margin| >= s, as Early Exit's rule):
# the stages are squared-loss predictors of y = +-1, so a margin's size is comparable across stages;
# multiples of 1/8, exact in float32, so every backend compares against the same number
EXIT_LEVELS = (0.25, 0.375, 0.5, 0.625, 0.75, 0.875, 1.0, 1.25)


def _candidates(name, value):
    """The values to try for ``name``: "auto" (``AUTO``), a tuple/list of
    candidates, or one number (fixed)."""
    if isinstance(value, str):
        if value != "auto":
            raise ValueError(f"{name} must be a number, a tuple of numbers or 'auto', got {value!r}")
        return AUTO[name]
    if isinstance(value, (tuple, list)):
        if not value:
            raise ValueError(f"{name}: an empty tuple of candidates")
        return tuple(value)
    return (value,)


class _CascadeClassifier(CategoricalInputs, CostSensitiveClassifier):
    """
    Parameters
    ----------
    cost_tradeoff : float [1e-3]
        lambda, per training row in cost units (the loss is a weighted mean).
        Its useful range moves by orders of magnitude between data sets:
        ``lambda_grid(X, y)`` returns the values worth trying.
    n_stages : int, tuple of int or "auto" ["auto"]
        K, the maximum number of stages (Chen §3.4, thesis §3.7.4); stages
        that exit no training row are dropped at export.  "auto" chooses K
        among (1, 3, 10) on validation, a tuple among its values, a number
        fixes it.
    exit_fraction : float, tuple or "auto" ["auto"]
        epsilon of the initialisation: each stage exits this share of the
        rows that reach it (Chen §3.4; 1 - epsilon is the "keep ratio").
        "auto": chosen among (0.05, 0.15) on validation.
    lambda_inflation : float, tuple or "auto" ["auto"]
        delta (the "discount"): stage k's initialisation uses
        lambda * delta**(K - k) (Chen §3.3.2, with its exponent's sign fixed;
        CSCC: the same rule).  "auto": chosen among (1.3, 2.5) on validation.
    early_stopping : bool [True]
        Keep the Alg. 1 cycle (0 = the initialisation) that the selection
        rule prefers on validation, and stop cycling at the first cycle it
        does not prefer (Chen §3.4, thesis §3.7.2: early stopping on
        validation).  False: every cycle runs and the last one is kept.
    validation_fraction : float [0.2]
        Share of the training rows held out (seeded by ``random_state``) as
        the validation set when something is chosen on validation and
        ``fit`` gets no ``eval_set``.  The bank and the cascade are then
        trained on the other rows only.
    selection_tolerance : float [0.005]
        The selection rule's slack, in accuracy (see Notes: model selection).
    retrofit_exits : bool or float [True]
        After training, try replacing the trained one-sided exits (margin <=
        theta_k) of every stage but the last by one two-sided exit ``|margin| >= s``
        for each s of ``EXIT_LEVELS`` (Early Exit's rule, on the cascade's own
        stages), and keep what the selection rule prefers on validation (the
        trained exits are a candidate).  An extension: neither paper has it.
        A number s > 0 fixes the level (no validation needed); False: the
        trained exits, as before.
    steepness : float [50]
        gamma of the training sigmoids (Chen §3.2; the thesis has 1).
    rho : float or (float, float) [1e-5]
        l1 weight of every stage, or (rho_1, rho_K): rho_1 for stages before
        the last (Chen §3.4).  Loss units per row.
    class_weight : None, "balanced" or dict [None]
        omega (Cronus) / mu (CSCC) per class; None is 1 for both.
    bank : "tiers", "gbrt", "greedy_miser", an ir TreesNode or Model ["tiers"]
        The tree dictionary: cost-tiered (default), plain GBRT, a Greedy
        Miser bank (lambda ``bank_cost_tradeoff``), or a bank you pass (its
        own ``tree_cost`` is charged).
    tiers : list of float or None [None]
        Cost caps of the tiers (``tree_bank.auto_tiers`` when None).
    n_estimators, max_depth, learning_rate, min_samples_leaf, max_bins : [300, 4, 0.1, 20, 255]
        Of the bank's trees.
    bank_cost_tradeoff : float [1e-3]
        Greedy Miser's lambda for ``bank="greedy_miser"``.
    max_cycles : int [5]; tol : float [1e-6]
        Alg. 1 stops after ``max_cycles`` or when the objective falls by less
        than ``tol`` (relative).
    fine_tune : None, "none", "last" or "all" [None]
        Thesis §3.4.4: re-fit classifiers that make final predictions without
        the cost term on their frozen support.  "last": the last stage only
        (no validation needed).  "all": every stage with trees, in order, a
        re-fit kept only when validation accuracy does not fall (thesis
        §3.7.2 early-stops fine-tuning on validation); an earlier stage's
        threshold moves so that the share of rows it passes on stays.  None:
        "all" for CSCC, "none" for Cronus.  True / False mean "last" / "none".
    feature_costs, feature_groups, group_costs, feature_names, group_names
        As GreedyMiserClassifier.
    categorical_features, cat_l2, cat_smooth, max_cat_threshold, min_data_per_group, max_cat_to_onehot
        As GreedyMiserClassifier: the trees of a bank built here split
        categorical features on category sets (a bank you pass is used as
        it is).
    tree_eval_cost : float [0]
        e_t of each tree of a bank built here.
    random_state : int or None
        Seeds the bank's threshold sample (the engine is deterministic).
    verbose : int, [1]
        A progress bar over the search: the initialisations tried, Alg. 1's
        cycles and the fine-tuned stages.

    Notes
    -----
    **Model selection.** Chen §3.4 chooses the hyper-parameters "on a validation set" from the
    initialisation alone (Alg. 2, "without further training"); thesis
    §3.7.2-3.7.3 set Cronus' cascade length, keep ratio, discount and early
    stopping on validation too.  Every candidate (K, epsilon, delta) of the
    product of the parameters' candidates is initialised, exported and run by
    the reference runtime on the validation rows (``eval_set``, or the
    ``validation_fraction`` hold-out); Alg. 1 then starts from the chosen
    initialisation.  The rule, at each choice (candidates, cycles): the
    cheapest model whose validation accuracy is within
    ``selection_tolerance`` of the best one's.  Why not the best accuracy:
    lambda is the cost knob the user sweeps; these settings shape how the
    optimiser reaches a trade-off, and between settings that differ by less
    than validation noise (0.5 point is about 2 standard errors on 2000
    rows) the cheaper one is the better point of lambda's curve.  Why not
    validation Eq. 8: its relaxed cost (mixed norms of weights) is not in
    cost units, so it cannot be measured on validation rows.

    Fitted attributes: ``best_params_`` (n_stages, exit_fraction,
    lambda_inflation, n_cycles chosen), ``n_cycles_``, ``exit_fraction_``,
    ``lambda_inflation_``, ``fine_tuned_stages_`` and ``selection_``, one
    dict per model measured on validation (step "init" / "cycle" /
    "fine_tune", its settings, accuracy, mean_cost, chosen); empty when
    nothing was chosen.  ``n_stages_`` is the number of exported stages
    (<= the chosen K).
    """

    # cost_accuracy_curve passes its validation rows as eval_set: the model selection above is
    # meant to run on them (Chen et al. 2012 §3.4), not on a small hold-out of the training rows
    _selects_on_validation = True

    _binary_only = True
    _mode: str | None = None

    def __init__(self, *, cost_tradeoff=1e-3, n_stages="auto", exit_fraction="auto", lambda_inflation="auto",
                 early_stopping=True, validation_fraction=0.2, selection_tolerance=0.005, retrofit_exits=True,
                 steepness=50.0,
                 rho=1e-5, class_weight=None, bank="tiers", tiers=None,
                 n_estimators=300, max_depth=4, learning_rate=0.1, min_samples_leaf=20, max_bins=255,
                 bank_cost_tradeoff=1e-3, max_cycles=5, tol=1e-6, fine_tune=None, feature_costs=None,
                 feature_groups=None, group_costs=None, feature_names=None, group_names=None,
                 tree_eval_cost=0.0, random_state=None, verbose=1, categorical_features=None, cat_l2=10.0,
                 cat_smooth=10.0, max_cat_threshold=32, min_data_per_group=100, max_cat_to_onehot=4):
        self.cost_tradeoff = cost_tradeoff
        self.n_stages = n_stages
        self.exit_fraction = exit_fraction
        self.lambda_inflation = lambda_inflation
        self.early_stopping = early_stopping
        self.validation_fraction = validation_fraction
        self.selection_tolerance = selection_tolerance
        self.retrofit_exits = retrofit_exits
        self.steepness = steepness
        self.rho = rho
        self.class_weight = class_weight
        self.bank = bank
        self.tiers = tiers
        self.n_estimators = n_estimators
        self.max_depth = max_depth
        self.learning_rate = learning_rate
        self.min_samples_leaf = min_samples_leaf
        self.max_bins = max_bins
        self.bank_cost_tradeoff = bank_cost_tradeoff
        self.max_cycles = max_cycles
        self.tol = tol
        self.fine_tune = fine_tune
        self.feature_costs = feature_costs
        self.feature_groups = feature_groups
        self.group_costs = group_costs
        self.feature_names = feature_names
        self.group_names = group_names
        self.tree_eval_cost = tree_eval_cost
        self.random_state = random_state
        self.verbose = verbose
        self.categorical_features = categorical_features
        self.cat_l2 = cat_l2
        self.cat_smooth = cat_smooth
        self.max_cat_threshold = max_cat_threshold
        self.min_data_per_group = min_data_per_group
        self.max_cat_to_onehot = max_cat_to_onehot

    # ------------------------------------------------------------ checks
    def _grid(self):
        """The (K, epsilon, delta) candidates, checked; K = 1 has no exits, so
        epsilon and delta do not matter there and it is tried once."""
        Ks = _candidates("n_stages", self.n_stages)
        for K in Ks:
            if not (isinstance(K, (int, np.integer)) and not isinstance(K, bool) and K >= 1):
                raise ValueError(f"n_stages must be a positive integer, got {K!r}")
        eps = _candidates("exit_fraction", self.exit_fraction)
        for e in eps:
            if not (isinstance(e, (int, float, np.number)) and 0 < e < 1):
                raise ValueError(f"exit_fraction must be in (0, 1), got {e!r}")
        dels = _candidates("lambda_inflation", self.lambda_inflation)
        for d in dels:
            if not (isinstance(d, (int, float, np.number)) and d >= 1):
                raise ValueError(f"lambda_inflation must be >= 1, got {d!r}")
        grid = []
        for K in Ks:
            for e in eps:
                for d in dels:
                    if K == 1 and any(g[0] == 1 for g in grid):
                        continue
                    grid.append((int(K), float(e), float(d)))
        return grid

    def _fine_tune_mode(self):
        f = self.fine_tune
        if f is None:
            return "all" if self._mode == "cscc" else "none"
        if isinstance(f, (bool, np.bool_)):
            return "last" if f else "none"
        if f not in FINE_TUNE:
            raise ValueError(f"fine_tune must be None, True, False or one of {FINE_TUNE}, got {f!r}")
        return f

    def _settings(self, lam=None, K=None, eps=None, delta=None):
        if K is None:
            K, eps, delta = self._grid()[0]
        lam = self.cost_tradeoff if lam is None else lam
        if not (np.isfinite(lam) and lam >= 0):
            raise ValueError(f"cost_tradeoff (lambda) must be finite and >= 0, got {lam!r}")
        if not self.steepness > 0:
            raise ValueError(f"steepness must be > 0, got {self.steepness!r}")
        if not (isinstance(self.max_cycles, (int, np.integer)) and self.max_cycles >= 0):
            raise ValueError(f"max_cycles must be an integer >= 0, got {self.max_cycles!r}")
        r = np.atleast_1d(np.asarray(self.rho, np.float64))
        if r.size not in (1, 2) or not np.all(np.isfinite(r) & (r >= 0)):
            raise ValueError(f"rho must be a number >= 0 or a pair (rho_1, rho_K), got {self.rho!r}")
        rho = np.full(K, r[0])
        rho[-1] = r[-1]
        return Settings(mode=self._mode, n_stages=K, lam=float(lam), rho=rho, gamma=float(self.steepness),
                        eps=float(eps), delta=float(delta),
                        max_cycles=int(self.max_cycles), tol=float(self.tol))

    def _row_weights(self, yi):
        """Per-row weights w_i of Chen Eq. 8 (class weight / n)."""
        return class_weight_per_class(self.class_weight, self.classes_, yi)[yi] / yi.shape[0]

    # ------------------------------------------------------------ the dictionary
    def _bank_for(self, X, y_pm, costs):
        """The tree bank: passed, or built (and cached for the same data and
        bank parameters, so ``lambda_grid`` then ``fit`` grow it once)."""
        b = self.bank
        if isinstance(b, ir.Model):
            trees = [n for n in b.nodes if isinstance(n, ir.TreesNode)]
            if len(trees) != 1:
                raise ValueError("bank: a Model passed as bank must hold exactly one trees node")
            b = trees[0]
        if isinstance(b, ir.TreesNode):
            if b.n_outputs != 1:
                raise ValueError("bank: the trees node must have one output")
            return b
        if b not in BANKS:
            raise ValueError(f"bank must be one of {BANKS}, an ir.TreesNode or an ir.Model, got {b!r}")
        key = hashlib.sha1(X.tobytes() + np.asarray(y_pm).tobytes() + repr(
            (b, self.tiers, self.n_estimators, self.max_depth, self.learning_rate, self.min_samples_leaf,
             self.max_bins, self.bank_cost_tradeoff, self.tree_eval_cost, self.random_state,
             costs.to_dict())).encode() + self._categories_key()).hexdigest()
        cached = getattr(self, "_bank_cache", None)
        if cached is not None and cached[0] == key:
            return cached[1]
        bank = tiered_bank(X, y_pm, costs, tiers=[] if b != "tiers" else self.tiers,
                           n_estimators=self.n_estimators,
                           cost_tradeoff=self.bank_cost_tradeoff if b == "greedy_miser" else 0.0,
                           max_depth=self.max_depth, learning_rate=self.learning_rate,
                           min_samples_leaf=self.min_samples_leaf, max_bins=self.max_bins,
                           tree_eval_cost=self.tree_eval_cost, random_state=self.random_state,
                           categories=getattr(self, "_categories", None))
        self._bank_cache = (key, bank)
        return bank

    def _categories_key(self) -> bytes:
        """The categorical options of the bank, for the bank cache's key."""
        cats = getattr(self, "_categories", None)
        if cats is None:
            return b""
        return np.asarray(cats.is_cat).tobytes() + repr((cats.cat_l2, cats.cat_smooth, cats.max_cat_threshold,
                                                        cats.min_data_per_group, cats.max_cat_to_onehot)).encode()

    def _training_X_y(self, X, y):
        """Validated training rows; a DataFrame's ``category`` columns become
        codes, and ``_categories`` (the bank's CategoryOptions) is set."""
        X_raw = X
        X, y = self._validate_X_y(self._encode_frame(X, reset=True), y)
        self._categories = self._category_options(X_raw, X.shape[1])
        return X, y

    def _problem(self, X, y):
        """(Problem, bank, costs, H32) for training rows X, y."""
        X, y = self._training_X_y(X, y)
        return self._problem_of(X, self._encode_labels(y, reset=True))

    def _problem_of(self, X, yi):
        """(Problem, bank, costs, H32) for validated rows X, class indices yi."""
        costs = self._cost_spec(X.shape[1])
        y_pm = 2.0 * yi - 1.0
        bank = self._bank_for(X, y_pm, costs)
        H32 = tree_outputs(bank, X)
        items = CostItems.from_bank(costs, bank_features(bank, X.shape[1]), np.zeros(bank.n_trees))
        prob = Problem(H32.astype(np.float64), y_pm, self._row_weights(yi),
                       np.asarray(bank.tree_cost, np.float64), items.matrix, items.cost)
        return prob, bank, costs, H32

    def lambda_grid(self, X, y, n_points=12):
        """The lambda values worth trying on this data: lambda_max * 2**-j,
        j = 0 .. n_points - 1, where lambda_max is the smallest lambda at
        which the single-stage problem (Chen Eq. 7) keeps no tree.

        Parameters
        ----------
        X, y : training data (the bank is grown once and reused by ``fit``).
        n_points : int, default 12

        Returns
        -------
        ndarray of float, descending.
        """
        prob, *_ = self._problem(X, y)
        top = lambda_max(prob, self._settings(lam=0.0))
        return top * 2.0 ** -np.arange(n_points)

    # ------------------------------------------------------------ fit
    def fit(self, X, y, eval_set=None):
        """Grow (or take) the bank, initialise (Alg. 2) every candidate
        setting and keep the one validation prefers, optimise (Alg. 1,
        stopped early on validation), fine-tune, and export.

        Parameters
        ----------
        X : array-like (n_samples, n_features); y : binary labels.
        eval_set : (X_val, y_val), optional
            Validation rows for the choices (see Model selection);
            ``validation_`` records the exported model's accuracy and mean
            cost on them (the reference runtime).  Without it, a choice holds
            out ``validation_fraction`` of X.

        Returns
        -------
        self
        """
        grid = self._grid()
        tune = self._fine_tune_mode()
        if not (np.isfinite(self.selection_tolerance) and self.selection_tolerance >= 0):
            raise ValueError(f"selection_tolerance must be a number >= 0, got {self.selection_tolerance!r}")
        r = self.retrofit_exits
        if not (isinstance(r, (bool, np.bool_)) or (isinstance(r, (int, float, np.number)) and np.isfinite(r)
                                                     and r > 0)):
            raise ValueError(f"retrofit_exits must be True, False or a number > 0, got {r!r}")
        self._settings(*([None] + list(grid[0])))          # checks the other parameters before any work
        X, y = self._training_X_y(X, y)
        yi = self._encode_labels(y, reset=True)
        validate = len(grid) > 1 or bool(self.early_stopping) or tune == "all" or self._retrofit_search()
        self.selection_ = []
        name = "Cronus" if self._mode == "cronus" else "CSCC"
        if not validate:
            with progress_bar(self.verbose, int(self.max_cycles), name, "cycle") as bar:
                c, setting, n_cycles, tuned, level, bank, H32 = self._search(X, yi, None, grid, tune,
                                                                             int(self.max_cycles), bar)
        elif eval_set is not None:
            val = (self._validate_X(eval_set[0], reset=False), np.asarray(eval_set[1]))
            with progress_bar(self.verbose, self._n_steps(grid, tune), name, "step") as bar:
                c, setting, n_cycles, tuned, level, bank, H32 = self._search(X, yi, val, grid, tune,
                                                                             int(self.max_cycles), bar)
        else:
            # choose on a hold-out, then refit the choice on every row (scikit-learn's refit):
            # same setting, the chosen number of cycles, the same stages fine-tuned
            tr, va = holdout_rows(len(yi), self.validation_fraction, self.random_state)
            with progress_bar(self.verbose, self._n_steps(grid, tune) + int(self.max_cycles), name,
                              "step") as bar:
                _, setting, n_cycles, tuned, level, _, _ = self._search(X[tr], yi[tr], (X[va], y[va]), grid,
                                                                        tune, int(self.max_cycles), bar)
                c, _, _, tuned, level, bank, H32 = self._search(X, yi, None, [setting], tuned, n_cycles, bar,
                                                                level)
        K, e, d = setting
        self.best_params_ = {"n_stages": K, "exit_fraction": e, "lambda_inflation": d, "n_cycles": n_cycles,
                             "exit_level": level}
        self.exit_fraction_, self.lambda_inflation_, self.n_cycles_ = e, d, n_cycles
        self.exit_level_ = level
        self.fine_tuned_stages_ = tuned
        self.cascade_ = c
        self._objective = self.objective_history_[min(n_cycles, len(self.objective_history_) - 1)]
        self._export(c, bank, H32)     # _search left _exit_level at the chosen level
        self._set_model(self.to_ir())
        if eval_set is not None:
            p = self._prediction(eval_set[0])
            self.validation_ = {"accuracy": float(np.mean(p.output == np.asarray(eval_set[1]))),
                                "mean_cost": float(p.cost.mean())}
        return self

    def _n_steps(self, grid, tune):
        return (len(grid) if len(grid) > 1 else 0) + int(self.max_cycles) + (
            max(g[0] for g in grid) if tune == "all" else 0) + (len(EXIT_LEVELS) if self._retrofit_search() else 0)

    def _search(self, X, yi, val, grid, tune, max_cycles, bar, level=None):
        """Fit on rows X, yi, choosing on ``val`` (None: no choice; ``grid``
        has one setting, ``tune`` is "none", "last" or the list of stages
        to fine-tune, and ``level`` the retrofitted exits' s or None).
        Returns (cascade, setting, n_cycles, fine-tuned stages, exit level,
        bank, H32)."""
        prob, bank, costs, H32 = self._problem_of(X, yi)
        self._costs = costs
        # the exits every candidate is measured with: the trained ones, or the fixed level
        self._exit_level = self._fixed_level()
        c0 = None
        if len(grid) > 1:          # Chen §3.4: choose on validation from the initialisation alone
            # with retrofit_exits=True each initialisation is measured with each exit rule too (a
            # cascade whose trained exits pass nearly every row on can be the cheapest retrofitted)
            inits, points, cands = [], [], []
            start = len(self.selection_)
            for K, e, d in grid:
                c = init_cascade(prob, self._settings(K=K, eps=e, delta=d))
                inits.append(c)
                levels = self._levels() if K > 1 else (self._exit_level,)
                for s, pt in zip(levels, self._scores(c, bank, H32, val, levels)):
                    points.append(pt)
                    cands.append((len(inits) - 1, s))
                    self._record("init", (K, e, d), 0, None, pt, level=s)
                bar.update()
            i = choose(points, self.selection_tolerance)
            self.selection_[start + i]["chosen"] = True
            K, e, d = grid[cands[i][0]]
            c0 = inits[cands[i][0]]
            self._exit_level = cands[i][1]      # Alg. 1's cycles are measured with the chosen exits
        else:
            K, e, d = grid[0]
        cfg = self._settings(K=K, eps=e, delta=d)
        cfg.max_cycles = max_cycles
        on_cycle = None
        early = val is not None and bool(self.early_stopping)
        if early:
            snaps = [c0 if c0 is not None else init_cascade(prob, cfg)]
            pts = [self._score(snaps[0], bank, H32, val)]
            self._record("cycle", (K, e, d), 0, None, pts[0], level=self._exit_level)
            c0 = snaps[0]

            def on_cycle(c):
                snaps.append(c.copy())
                pts.append(self._score(c, bank, H32, val))
                self._record("cycle", (K, e, d), len(snaps) - 1, None, pts[-1], level=self._exit_level)
                return False
        c = optimize(prob, cfg, c0, bar=bar, on_cycle=on_cycle)
        self.objective_history_ = [float(f) for f in c.history]
        n_cycles = len(c.history) - 1
        if early:
            j = choose(pts, self.selection_tolerance)
            self.selection_[len(self.selection_) - len(pts) + j]["chosen"] = True
            c, n_cycles = snaps[j], j
        tuned = []
        if tune == "last" and np.any(c.B[-1]):
            c = fine_tune_last(prob, cfg, c)
            tuned.append(K - 1)
        elif isinstance(tune, list):      # a refit: the stages validation kept
            for k in tune:
                if np.any(c.B[k]):
                    c = fine_tune_stage(prob, cfg, c, k)
                    tuned.append(k)
        elif tune == "all":
            cur = self._score(c, bank, H32, val)
            for k in range(K):
                if np.any(c.B[k]):
                    cand = fine_tune_stage(prob, cfg, c, k)
                    pt = self._score(cand, bank, H32, val)
                    keep = choose([pt, cur], 0.0) == 0      # not less accurate; if as accurate, not dearer
                    self._record("fine_tune", (K, e, d), n_cycles, k, pt, keep, level=self._exit_level)
                    if keep:
                        c, cur = cand, pt
                        tuned.append(k)
                bar.update()
        if self._retrofit_search():
            if val is not None:
                level = self._retrofit(c, bank, H32, val, (K, e, d), n_cycles, bar)
        else:
            level = self._fixed_level()
        self._exit_level = level
        return c, (K, e, d), n_cycles, tuned, level, bank, H32

    def _retrofit_search(self):
        """True when the exits' level is chosen on validation (``retrofit_exits=True``)."""
        r = self.retrofit_exits
        return isinstance(r, (bool, np.bool_)) and bool(r)

    def _fixed_level(self):
        """The level ``retrofit_exits`` fixes, or None (the trained exits, also while searching)."""
        r = self.retrofit_exits
        return None if isinstance(r, (bool, np.bool_)) else float(r)

    def _levels(self):
        """The exit rules a candidate is measured with: the trained exits and every level
        (``retrofit_exits=True``), or the one rule ``retrofit_exits`` fixes."""
        return (None,) + EXIT_LEVELS if self._retrofit_search() else (self._fixed_level(),)

    def _retrofit(self, c: Cascade, bank, H32, val, setting, n_cycles, bar):
        """The exits retrofitted on validation (``retrofit_exits``): the
        trained one-sided exits against one two-sided exit ``|margin| >= s`` on
        every stage but the last, for each s of ``EXIT_LEVELS``, chosen by
        the selection rule.  Returns the chosen s, or None (trained exits)."""
        levels = self._levels()
        pts = self._scores(c, bank, H32, val, levels)
        for s, pt in zip(levels, pts):
            self._record("exits", setting, n_cycles, None, pt, level=s)
        bar.update(len(EXIT_LEVELS))
        j = choose(pts, self.selection_tolerance)
        self.selection_[len(self.selection_) - len(pts) + j]["chosen"] = True
        return levels[j]

    def _score(self, c: Cascade, bank, H32, val):
        """(accuracy, mean cost) of cascade ``c``, exported with the current
        exits (``_exit_level``), on the validation rows (reference runtime)."""
        return self._scores(c, bank, H32, val, (self._exit_level,))[0]

    def _scores(self, c: Cascade, bank, H32, val, levels):
        """(accuracy, mean cost) of cascade ``c`` on the validation rows with
        each exit rule of ``levels`` (None: the trained exits); leaves
        ``_exit_level`` as it found it."""
        self._export(c, bank, H32)
        self._objective = 0.0      # metadata only; the fitted model carries the chosen cycle's
        keep, out = self._exit_level, []
        for s in levels:
            self._exit_level = s
            p = ref_predict(self.to_ir(), val[0])
            out.append((float(np.mean(p.output == val[1])), float(p.cost.mean())))
        self._exit_level = keep
        return out

    def _record(self, step, setting, cycle, stage, point, chosen=False, level=None):
        K, e, d = setting
        self.selection_.append({"step": step, "n_stages": K, "exit_fraction": e, "lambda_inflation": d,
                                "cycle": cycle, "stage": stage, "exit_level": level, "accuracy": point[0],
                                "mean_cost": point[1], "chosen": bool(chosen)})

    def _export(self, c: Cascade, bank, H32):
        """float32 stages and thresholds, dummy stages dropped (Chen §4 and
        thesis §3.7.4 observe them): a stage is kept when it exits some
        training row; the first stage that exits every row that reaches it
        becomes the last.  Each threshold sits in a gap of the IR-exact
        float32 margins of the training rows that reach the stage."""
        K = c.B.shape[0]
        reach = np.arange(H32.shape[0], dtype=np.int64)
        stages: list = []
        for k in range(K):
            sc = Scorer.from_float64(c.B[k], c.b[k])
            if k == K - 1 or reach.size == 0:
                stages.append((sc, None))
                break
            m = sc.margins(H32, reach)
            th = place_threshold(m, float(c.theta[k]))
            out = m <= th
            if not out.any():
                continue
            if out.all():
                stages.append((sc, None))
                break
            stages.append((sc, th))
            reach = reach[~out]
        used = np.unique(np.concatenate([sc.cols for sc, _ in stages] + [np.zeros(0, np.int64)]))
        self._stages = stages
        self._used_trees = used
        self.bank_ = bank
        self.n_stages_ = len(stages)

    # ------------------------------------------------------------ IR
    def to_ir(self) -> ir.Model:
        """The cascade as IR: a bank of the trees some stage reads, K'
        linear stages over them, one cascade (``le`` exits, last stage
        ``none``)."""
        if not hasattr(self, "_stages"):
            from sklearn.exceptions import NotFittedError
            raise NotFittedError(f"this {type(self).__name__} is not fitted yet; call fit first")
        sub = subset_bank(self.bank_, self._used_trees)
        pos = np.searchsorted(self._used_trees, np.arange(self.bank_.n_trees))
        nodes: list = [sub]
        ctl = []
        level = getattr(self, "_exit_level", None)
        for i, (sc, th) in enumerate(self._stages):
            nodes.append(ir.linear([ir.tree_input(0, int(pos[t])) for t in sc.cols],
                                   sc.w32.astype(np.float64), float(sc.b32), name=f"stage {i + 1}"))
            if th is None:
                ctl.append((len(nodes) - 1, "none", 0.0))
            elif level is None:
                ctl.append((len(nodes) - 1, "le", float(th)))
            elif sc.cols.size:          # retrofitted: Early Exit's two-sided rule at level s
                ctl.append((len(nodes) - 1, "abs_ge", float(level)))
            else:                       # a stage without trees has one margin for every row: it passes all on
                ctl.append((len(nodes) - 1, "none", 0.0))
        nodes.append(ir.cascade(ctl, name=self._mode))
        return self._ir_model(nodes, len(nodes) - 1, ir.binary_task(self._ir_classes(), "identity"),
                              self._costs, n_stages=len(self._stages),
                              objective=self._objective)


    # the stages are squared-loss scores (the IR task has the identity transform)
    predict_proba = no_predict_proba("its margins are squared-loss scores, not log-odds; use decision_function")


class CronusClassifier(_CascadeClassifier):
    """Cronus: a cost-sensitive classifier cascade (Chen, Xu, Weinberger,
    Chapelle, Kedem, AISTATS 2012): Eq. 8, initialised by Alg. 2, optimised
    by Alg. 1.  Binary classification only."""

    __doc__ += "\n\n" + (_CascadeClassifier.__doc__ or "")
    _mode = "cronus"


class CSCCClassifier(_CascadeClassifier):
    """CSCC: the cost-sensitive cascade of classifiers (Xu's thesis §3.5,
    Eq. 3.25 with the tree costs of Eqs. 3.22-3.23, block coordinate descent
    of §3.4.3, fine-tuning of §3.4.4).  Binary classification only."""

    __doc__ += "\n\n" + (_CascadeClassifier.__doc__ or "")
    _mode = "cscc"
