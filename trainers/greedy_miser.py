"""Greedy Miser (Xu et al., thesis §2.1) and stage-wise GBRT.

Each iteration fits a regression tree to the loss gradient with the
impurity of Eq. (2.5),

    g(h_t) = 1/2 sum_i (s_i - h_t(x_i))^2 + lambda sum_a u_a c_a F_at,

where u_a = 1 until the ensemble first uses feature a.  ``cost_tradeoff``
is lambda per training row: a split on an unpaid feature must reduce the
*mean* per-row loss by more than ``cost_tradeoff * c_a`` (the penalty is
lambda * n * c_a, n = sum of sample weights), so lambda does not depend on
the training-set size.  cost_tradeoff=0 is plain stage-wise GBRT.

Refund timing (``refund``):
* "tree": u is updated after each tree, as in the seeds' code; within a
  tree every split on a still-unpaid feature pays again.
* "immediate": a feature is free as soon as any split uses it (the exact
  marginal of Eq. 2.5 within a tree, and LightGBM's CEGB behaviour).

Leaves are Newton steps -G/(H + l2) (``leaf_values="newton"``) or the mean
negative gradient -G/N as in the seeds (``"mean"``); both are multiplied by
``learning_rate`` (the step size eta; the thesis uses 0.1).
"""
from __future__ import annotations

import numpy as np
from tqdm.auto import tqdm

from .. import ir
from .binning import bin_data, find_thresholds, pack_thresholds
from .costs import CostState
from .grower import grow
from .losses import logistic, softmax_class, squared, squared_hinge
from .params import ParamsMixin
from .predictor import add_leaf_values, predict_binned, predict_raw


def _as_X(X):
    X = np.asarray(X)
    if X.ndim != 2:
        raise ValueError(f"X: expected a 2-d array, got shape {X.shape}")
    if X.dtype.kind not in "fiub":
        raise ValueError(f"X: expected numbers, got dtype {X.dtype}")
    X = np.ascontiguousarray(X, np.float32)
    if np.isinf(X).any():
        raise ValueError("X: contains infinity; use NaN for missing values")
    return X


class _GreedyMiserBase(ParamsMixin):
    _loss_default = "squared"

    def __init__(self, *, loss=None, n_estimators=100, learning_rate=0.1, max_depth=4,
                 min_samples_leaf=20, l2_regularization=0.0, leaf_values="newton", subsample=1.0,
                 max_bins=255, cost_tradeoff=0.0, refund="tree", feature_costs=None,
                 feature_groups=None, group_costs=None, feature_names=None, group_names=None,
                 tree_eval_cost=0.0,
                 max_feature_cost=None, early_stopping=False, validation_fraction=0.1,
                 n_iter_no_change=10, random_state=None, verbose=1):
        self.loss = loss
        self.n_estimators = n_estimators
        self.learning_rate = learning_rate
        self.max_depth = max_depth
        self.min_samples_leaf = min_samples_leaf
        self.l2_regularization = l2_regularization
        self.leaf_values = leaf_values
        self.subsample = subsample
        self.max_bins = max_bins
        self.cost_tradeoff = cost_tradeoff
        self.refund = refund
        self.feature_costs = feature_costs
        self.feature_groups = feature_groups
        self.group_costs = group_costs
        self.feature_names = feature_names
        self.group_names = group_names
        self.tree_eval_cost = tree_eval_cost
        self.max_feature_cost = max_feature_cost
        self.early_stopping = early_stopping
        self.validation_fraction = validation_fraction
        self.n_iter_no_change = n_iter_no_change
        self.random_state = random_state
        self.verbose = verbose

    # ------------------------------------------------------------ checks
    def _check_params(self, F):
        if not (isinstance(self.n_estimators, (int, np.integer)) and self.n_estimators >= 1):
            raise ValueError(f"n_estimators must be a positive integer, got {self.n_estimators!r}")
        if not self.learning_rate > 0:
            raise ValueError(f"learning_rate must be > 0, got {self.learning_rate!r}")
        if not (isinstance(self.max_depth, (int, np.integer)) and 1 <= self.max_depth <= 30):
            raise ValueError(f"max_depth must be an integer in [1, 30], got {self.max_depth!r}")
        if not self.min_samples_leaf >= 1:
            raise ValueError("min_samples_leaf must be >= 1")
        if not (0 < self.subsample <= 1):
            raise ValueError(f"subsample must be in (0, 1], got {self.subsample!r}")
        if not self.cost_tradeoff >= 0:
            raise ValueError(f"cost_tradeoff (lambda) must be >= 0, got {self.cost_tradeoff!r}")
        if self.refund not in ("tree", "immediate"):
            raise ValueError(f"refund must be 'tree' or 'immediate', got {self.refund!r}")
        if self.leaf_values not in ("newton", "mean"):
            raise ValueError(f"leaf_values must be 'newton' or 'mean', got {self.leaf_values!r}")
        costs = np.ones(F) if self.feature_costs is None else np.asarray(self.feature_costs, np.float64)
        if costs.shape != (F,):
            raise ValueError(f"feature_costs: {costs.shape[0] if costs.ndim else 1} costs for {F} features")
        if not np.all(np.isfinite(costs) & (costs >= 0)):
            raise ValueError("feature_costs must be finite and >= 0")
        groups = np.full(F, -1) if self.feature_groups is None else np.asarray(self.feature_groups, np.int64)
        gcosts = np.zeros(0) if self.group_costs is None else np.asarray(self.group_costs, np.float64)
        if groups.shape != (F,):
            raise ValueError(f"feature_groups: {groups.shape} for {F} features")
        if groups.max(initial=-1) >= gcosts.shape[0]:
            raise ValueError(f"feature_groups refers to group {groups.max()} but group_costs has "
                             f"{gcosts.shape[0]} entries")
        if not np.all(np.isfinite(gcosts) & (gcosts >= 0)):
            raise ValueError("group_costs must be finite and >= 0")
        names = [f"x{i}" for i in range(F)] if self.feature_names is None else list(self.feature_names)
        if len(names) != F:
            raise ValueError(f"feature_names: {len(names)} names for {F} features")
        return costs, groups, gcosts, names

    # ------------------------------------------------------------ fit
    def fit(self, X, y, sample_weight=None, eval_set=None):
        """Train.  ``eval_set=(X_val, y_val)`` enables validation-based early
        stopping (or use ``early_stopping=True`` to hold out
        ``validation_fraction`` of the data)."""
        X = _as_X(X)
        N, F = X.shape
        y = np.asarray(y)
        if y.shape[0] != N:
            raise ValueError(f"y: {y.shape[0]} labels for {N} rows")
        costs, groups, gcosts, names = self._check_params(F)
        w = np.ones(N) if sample_weight is None else np.asarray(sample_weight, np.float64)
        if w.shape != (N,) or np.any(w < 0) or not np.all(np.isfinite(w)):
            raise ValueError("sample_weight: expected N finite, non-negative weights")
        rng = np.random.default_rng(self.random_state)
        target = self._encode_target(y)
        if eval_set is None and self.early_stopping:
            perm = rng.permutation(N)
            n_val = max(1, int(self.validation_fraction * N))
            val, tr = perm[:n_val], perm[n_val:]
            eval_set = (X[val], y[val])
            X, target, w, N = X[tr], target[tr], w[tr], len(tr)
        Xv = tv = None
        if eval_set is not None:
            Xv = _as_X(eval_set[0])
            tv = self._encode_target(np.asarray(eval_set[1]))
        self._costs, self._groups, self._gcosts, self._names = costs, groups, gcosts, names
        thresholds = find_thresholds(X, self.max_bins, seed=int(rng.integers(2**31)))
        flat, offsets = pack_thresholds(thresholds)
        binned = bin_data(X, flat, offsets)
        n_bins = np.array([len(t) + 1 for t in thresholds], np.int64)
        active = np.ones(F, np.bool_)
        if self.max_feature_cost is not None:  # the feature-subset baseline
            active &= costs <= self.max_feature_cost
            if not active.any():
                raise ValueError(f"no feature has cost <= max_feature_cost={self.max_feature_cost}")
        K = self._n_trees_per_iter()
        base = self._initial_scores(target, w)
        raw = np.tile(base, (N, 1))
        raw_v = np.tile(base, (len(Xv), 1)) if Xv is not None else None
        g, h = np.zeros(N), np.zeros(N)
        state = CostState(costs, groups, gcosts, self.cost_tradeoff * w.sum())
        self.trees_ = []       # per iteration: list of K (arrays, threshold, class)
        self.base_score_ = base.astype(np.float32)
        importances = np.zeros(F)
        best, best_it, since = np.inf, 0, 0
        self.validation_loss_ = []
        bar = tqdm(range(self.n_estimators), disable=not self.verbose or self.n_estimators < 50,
                   desc=type(self).__name__, unit="tree", leave=False)
        all_rows = np.arange(N, dtype=np.int32)
        for it in bar:
            rows = all_rows
            if self.subsample < 1:
                rows = np.sort(rng.choice(N, max(1, int(self.subsample * N)), replace=False)).astype(np.int32)
            penalty = state.penalty()
            used_in_tree = []

            def on_split(f):
                used_in_tree.append(f)
                if self.refund == "immediate":
                    state.pay(f)
                    return state.penalty()
                return None
            round_trees = []
            for k in range(K):
                self._gradients(target, raw, k, g, h)
                g *= w
                h *= w
                tree = grow(binned, n_bins, rows, g, h, max_depth=self.max_depth,
                            min_samples_leaf=self.min_samples_leaf, l2=self.l2_regularization,
                            penalty=penalty, active=active, on_split=on_split)
                sums = np.array(tree.sums)
                if self.leaf_values == "newton":
                    leaf = -sums[:, 0] / (sums[:, 1] + self.l2_regularization + 1e-300)
                else:
                    leaf = -sums[:, 0] / np.maximum(sums[:, 2], 1.0)
                # rounded to float32 once: training sees the deployed values
                leaf = (self.learning_rate * leaf).astype(np.float32).astype(np.float64)
                feat, sbin, left, right, mleft, value = tree.arrays(leaf)
                thr = np.zeros(feat.shape[0], np.float32)
                inner = feat >= 0
                thr[inner] = flat[offsets[feat[inner]] + sbin[inner]]
                col = raw[:, k].copy()
                if rows is all_rows:   # every row sits in a leaf range: no walk
                    nodes, starts, stops = tree.leaf_ranges()
                    add_leaf_values(tree.order, starts, stops, value[nodes], col)
                else:                  # rows left out of the subsample walk the tree
                    predict_binned(binned, feat, sbin, left, right, mleft, value, col)
                raw[:, k] = col
                if raw_v is not None:
                    colv = raw_v[:, k].copy()
                    predict_raw(Xv, feat, thr, left, right, mleft, value, colv)
                    raw_v[:, k] = colv
                for f, gain in tree.split_gain:
                    importances[f] += gain
                round_trees.append(dict(feature=feat, threshold=thr, left=left, right=right,
                                        missing_left=mleft, value=value.astype(np.float32), k=k))
            for f in used_in_tree:
                state.pay(f)
            self.trees_.append(round_trees)
            if raw_v is not None:
                vl = self._loss_value(tv, raw_v)
                self.validation_loss_.append(vl)
                if vl < best - 1e-12:
                    best, best_it, since = vl, it + 1, 0
                else:
                    since += 1
                    if self.early_stopping or eval_set is not None:
                        if since >= self.n_iter_no_change:
                            break
        bar.close()
        if raw_v is not None and best_it:
            self.trees_ = self.trees_[:best_it]
        self.n_estimators_ = len(self.trees_)
        tot = importances.sum()
        self.feature_importances_ = importances / tot if tot > 0 else importances
        self.n_features_in_ = F
        self._runtime = None
        self.model_ = self.to_ir()
        self.static_cost_ = self.model_.static_cost()
        return self

    # ------------------------------------------------------------ IR
    def to_ir(self, n_iterations=None) -> ir.Model:
        """The trained ensemble (optionally its first ``n_iterations`` rounds)
        as an IR model; its reference predictions are this estimator's."""
        self._check_fitted()
        rounds = self.trees_[: n_iterations or len(self.trees_)]
        K = self._n_outputs()
        trees = []
        for rnd in rounds:
            for t in rnd:
                v = np.zeros((t["value"].shape[0], K), np.float32)
                v[:, t["k"]] = t["value"]
                trees.append(dict(feature=t["feature"], threshold=t["threshold"], left=t["left"],
                                  right=t["right"], missing_left=t["missing_left"], value=v))
        if not trees:  # a model with no trees is its base score
            trees = [dict(feature=[-1], threshold=[0.0], left=[-1], right=[-1],
                          value=np.zeros((1, K), np.float32))]
        bank = ir.concat_trees(trees, tree_cost=np.full(len(trees), float(self.tree_eval_cost)),
                               base_score=self.base_score_, name="ensemble")
        gnames = self.group_names if self.group_names is not None else [f"group{i}" for i in range(len(self._gcosts))]
        if len(gnames) != len(self._gcosts):
            raise ValueError(f"group_names: {len(gnames)} names for {len(self._gcosts)} groups")
        groups = [ir.Group(str(n), float(c)) for n, c in zip(gnames, self._gcosts)]
        feats = ir.features_from_costs(self._costs, names=self._names, groups=self._groups)
        params = {k: (v.tolist() if isinstance(v, np.ndarray) else v) for k, v in self.get_params().items()}
        meta = {"trainer": type(self).__name__, "params": params,
                "n_iterations": len(rounds), "skinflint_version": _version()}
        return ir.model(feats, [bank], 0, task=self._task(), groups=groups, metadata=meta)

    def _rt(self):
        from ..runtimes.reference import ReferenceRuntime
        self._check_fitted()
        if getattr(self, "_runtime", None) is None:
            self._runtime = ReferenceRuntime(self.model_)
        return self._runtime

    def _check_fitted(self):
        if not hasattr(self, "trees_"):
            raise RuntimeError(f"this {type(self).__name__} is not fitted yet; call fit first")

    def decision_function(self, X, budget=None):
        return self._rt().predict(X, budget).scores[:, 0] if self._n_outputs() == 1 else \
            self._rt().predict(X, budget).scores

    def cost(self, X, budget=None) -> np.ndarray:
        """Per-row lazy cost: what an on-demand runtime pays for each row."""
        return self._rt().predict(X, budget).cost

    def staged_decision_function(self, X):
        """Scores after each boosting round, accumulated exactly as the IR
        runtimes do (float32, bank order)."""
        X = _as_X(X)
        K = self._n_outputs()
        acc = np.tile(self.base_score_, (X.shape[0], 1)).astype(np.float32)
        for rnd in self.trees_:
            for t in rnd:
                col = np.zeros(X.shape[0])
                predict_raw(X, t["feature"], t["threshold"], t["left"], t["right"], t["missing_left"],
                            t["value"].astype(np.float64), col)
                # each tree's value is a float32 leaf; add it in float32
                acc[:, t["k"]] = acc[:, t["k"]] + col.astype(np.float32)
            yield acc[:, 0].copy() if K == 1 else acc.copy()


def _version():
    from skinflint import __version__
    return __version__


class GreedyMiserRegressor(_GreedyMiserBase):
    """Greedy Miser for regression (squared loss by default)."""

    def _encode_target(self, y):
        y = np.asarray(y, np.float64)
        if not np.all(np.isfinite(y)):
            raise ValueError("y: regression targets must be finite")
        return y

    def _loss_name(self):
        return self.loss or "squared"

    def _n_trees_per_iter(self):
        return 1

    def _n_outputs(self):
        return 1

    def _initial_scores(self, y, w):
        return np.array([np.average(y, weights=w)])

    def _gradients(self, y, raw, k, g, h):
        if self._loss_name() != "squared":
            raise ValueError(f"loss {self._loss_name()!r} is not a regression loss; use 'squared'")
        squared(y, raw[:, 0].copy(), g, h)

    def _loss_value(self, y, raw):
        return float(np.mean((raw[:, 0] - y) ** 2))

    def _task(self):
        return ir.regression_task()

    def predict(self, X, budget=None):
        return self._rt().predict(X, budget).output

    def staged_predict(self, X):
        yield from self.staged_decision_function(X)

    def score(self, X, y):
        """R^2 of the predictions."""
        p = self.predict(X)
        y = np.asarray(y, np.float64)
        return 1 - np.sum((y - p) ** 2) / np.sum((y - y.mean()) ** 2)


class GreedyMiserClassifier(_GreedyMiserBase):
    """Greedy Miser for classification: binary log-loss (or the squared
    hinge with ``loss="squared_hinge"``), multiclass log-loss with one tree
    per class per round."""

    def _encode_target(self, y):
        if not hasattr(self, "classes_") or getattr(self, "_encoding_fitted", False) is False:
            self.classes_ = np.unique(y)
            self._encoding_fitted = True
            if len(self.classes_) < 2:
                raise ValueError("y: a classifier needs at least 2 classes")
        idx = np.searchsorted(self.classes_, y)
        if np.any(idx >= len(self.classes_)) or np.any(self.classes_[np.minimum(idx, len(self.classes_) - 1)] != y):
            raise ValueError("y: labels not seen in training")
        if len(self.classes_) == 2:
            return idx.astype(np.float64)
        Y = np.zeros((len(y), len(self.classes_)))
        Y[np.arange(len(y)), idx] = 1.0
        return Y

    def fit(self, X, y, sample_weight=None, eval_set=None):
        self._encoding_fitted = False
        return super().fit(X, y, sample_weight, eval_set)

    def _loss_name(self):
        if len(self.classes_) > 2:
            return "multiclass"
        return self.loss or "logistic"

    def _n_trees_per_iter(self):
        return 1 if len(self.classes_) == 2 else len(self.classes_)

    def _n_outputs(self):
        return self._n_trees_per_iter()

    def _initial_scores(self, t, w):
        if len(self.classes_) == 2:
            p = np.clip(np.average(t, weights=w), 1e-6, 1 - 1e-6)
            return np.array([np.log(p / (1 - p)) if self._loss_name() == "logistic" else 2 * p - 1])
        p = np.clip(np.average(t, axis=0, weights=w), 1e-6, None)
        return np.log(p) - np.log(p).mean()

    def _gradients(self, t, raw, k, g, h):
        name = self._loss_name()
        if name == "multiclass":
            softmax_class(t, raw, k, g, h)
        elif name == "logistic":
            logistic(t, raw[:, 0].copy(), g, h)
        elif name == "squared_hinge":
            squared_hinge(t, raw[:, 0].copy(), g, h)
        else:
            raise ValueError(f"loss {name!r} is not a classification loss")

    def _loss_value(self, t, raw):
        if t.ndim == 2:
            m = raw.max(axis=1, keepdims=True)
            lse = m[:, 0] + np.log(np.exp(raw - m).sum(axis=1))
            return float(np.mean(lse - (raw * t).sum(axis=1)))
        if self._loss_name() == "squared_hinge":
            return float(np.mean(np.maximum(0, 1 - (2 * t - 1) * raw[:, 0]) ** 2))
        z = raw[:, 0]
        return float(np.mean(np.logaddexp(0, z) - t * z))

    def _task(self):
        classes = [c.item() if hasattr(c, "item") else c for c in self.classes_]
        if len(classes) == 2:
            return ir.binary_task(classes, "logistic" if self._loss_name() == "logistic" else "identity")
        return ir.multiclass_task(classes)

    def predict(self, X, budget=None):
        return self._rt().predict(X, budget).output

    def predict_proba(self, X, budget=None):
        p = self._rt().predict(X, budget).proba
        if p is None:
            raise AttributeError("predict_proba needs the logistic or multiclass loss")
        return p

    def staged_predict(self, X):
        for s in self.staged_decision_function(X):
            yield self.classes_[(s > 0).astype(int)] if s.ndim == 1 else self.classes_[np.argmax(s, axis=1)]

    def score(self, X, y):
        return float(np.mean(self.predict(X) == np.asarray(y)))
