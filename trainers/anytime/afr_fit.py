"""One run of thesis Algorithm 4 (paper Algorithm 1) for one binary problem,
ambiguities resolved as in ``docs/algorithms/afr-cvm.md`` §1.3.

``AFRFit`` holds one problem's representation Phi, its SVM, its trees and its
checkpoints.  The row split, the bins and the paid-feature state may be shared
with other problems: the one-vs-all models of a multiclass AFR
(``afr_multiclass.py``) run in lockstep over one ``CostState``, so a feature
one class has paid is free for every other (paper §5, Scene-15: "descriptor
costs zero once used").
"""
from __future__ import annotations

import itertools
import math

import numpy as np

from .. import linalg
from ..boosting.booster import BinnedData, finish_tree
from ..boosting.grower import grow
from ..boosting.losses import squared_hinge
from ..boosting.predictor import predict_binned
from ..boosting.split_penalty import CostState
from ..common import class_weight_per_class
from ..linear.linear_svm import afr_adjoint, l2svm_newton, sigmoid_loss

C_RANGE = (1e-3, 1e3)


def default_n_blocks(lambda0, state: CostState) -> int:
    """min(20, ceil(log2(lambda0 c_max / 0.01)) + 1): halve lambda until the
    costliest feature (with its group) costs 1 % of the gradient energy."""
    unpaid = state.penalty()
    return min(20, max(1, math.ceil(math.log2(
        max(lambda0 * max(float(unpaid.max(initial=0.0)), 1e-300) / 0.01, 1.0))) + 1))


def gradient_column(sol, Phi_T, y_T, mu_T, Phi_V, y_V, mu_V, C, a, s, biased=False):
    """Column ``s`` of ``linear_svm.afr_gradients``' d_phi_T and d_phi_V (thesis
    Eqs. 2.28-2.33, paper Eqs. 9-14), and its d log C: the same factors
    (``linear_svm.afr_adjoint``) and products, so the same bits (tests/trainers/anytime), without the
    [nT, S] and [nV, S] matrices, of which Algorithm 4 reads one column per
    tree (at 190k T rows and 400 dimensions, three temporaries of 600 MB each).
    ``biased``: Phi_T and Phi_V end with the bias column (``AFRFit.psi``).
    Returns (d_phi_T[:, s], d_phi_V[:, s], d log C)."""
    w = sol.w
    _, d, v, residual_T, Psi_T_v, coef = afr_adjoint(sol, Phi_T, y_T, mu_T, Phi_V, y_V, mu_V, a, biased)
    # outer(u, x)[:, s] is u * x[s], one product per entry, as np.outer computes it
    col_T = coef * (residual_T * v[s] - Psi_T_v * w[s])
    return col_T, d * w[s], linalg.dot(v[:-1], w) / C


def binned_data(est, X, rows, rng) -> BinnedData:
    """The bins every problem of one fit shares (thresholds from T and V)."""
    train = np.concatenate([rows["T"], rows["V"]])     # thresholds from training rows only
    return BinnedData.from_X(X, est.max_bins, seed=int(rng.integers(2**31)), threshold_rows=np.sort(train))


def cost_state(est) -> CostState:
    c = est._costs
    return CostState(c.costs, c.groups, c.group_costs, 1.0)


class AFRFit:
    """Algorithm 4 for labels ``y01`` (1 = the positive class) on rows
    ``rows`` (T, V, O).  ``start``, then ``block(0 .. n_blocks-1)``, then
    ``finish``; ``run`` does all three.  ``on_new_feature(fit, snap)`` is
    called before a tree that pays a new feature is stored, with the state
    before it (default: store that state as a checkpoint, paper §4.1).

    The representation Phi is held as Psi = [Phi, 1] per part of the rows
    (``Psi["T"]``, ``"V"``, ``"O"``: C-contiguous buffers of the widest Psi,
    the bias column at index ``nd``), so that the SVM, its gradient and the
    hold-out read column prefixes ``psi(part)`` in place: at 473k rows and
    200 dimensions, copying Phi's rows and adding the bias column took half
    of each tree's time (a fresh 400 MB array per copy)."""

    def __init__(self, est, X, idx, rows, rng, *, y01=None, data=None, state=None, n_blocks=None,
                 on_new_feature=None, seq=None, margins_O=False):
        self.est = est
        self.N, self.F = X.shape
        self.T, self.V, self.O = rows["T"], rows["V"], rows["O"]
        fit_rows = {"TV": np.concatenate([self.T, self.V]), "V": self.V, "T": self.T}[est.fit_rows]
        self.fit_rows = np.sort(fit_rows).astype(np.int32)
        self.y01 = (idx if y01 is None else y01).astype(np.float64)
        self.y = 2.0 * self.y01 - 1.0
        self.mu = class_weight_per_class(est.class_weight, est.classes_, idx)[idx]
        self.data = data if data is not None else binned_data(est, X, rows, rng)
        self.state = state if state is not None else cost_state(est)
        self.n_blocks = n_blocks or est.n_blocks or default_n_blocks(est.lambda0, self.state)
        S = est.dims_per_block
        max_dims = S * (self.n_blocks if est.append_dims else 1)
        self.parts = {"T": self.T, "V": self.V, "O": self.O}
        self.Psi = {k: np.zeros((len(r), max_dims + 1)) for k, r in self.parts.items()}
        for buf in self.Psi.values():
            buf[:, 0] = 1.0          # no dimension yet: Psi is the bias column
        self.y_part = {k: self.y[r] for k, r in self.parts.items()}
        self.mu_part = {k: self.mu[r] for k, r in self.parts.items()}
        self.nd = 0
        self.C = float(est.C0)
        self.trees: list = []
        self.checkpoints: list = []
        self.ones = np.ones(self.N)
        self.on_new_feature = on_new_feature or (lambda fit, snap: fit.emit(snap))
        self.seq = seq if seq is not None else itertools.count()
        self.margins_O = margins_O       # keep each snapshot's float64 margins on O (Platt scaling)

    # -------------------------------------------------------- pieces
    def psi(self, part):
        """[Phi, 1] on the part's rows: a view of its buffer."""
        return self.Psi[part][:, :self.nd + 1]

    def column(self, s):
        """Phi[:, s] per part (copies)."""
        return {k: buf[:, s].copy() for k, buf in self.Psi.items()}

    def set_column(self, s, col, add=False):
        """Phi[:, s] = col (or += col, the same sum per row as before) on
        every part; ``col`` is a length-N vector or ``column``'s dict."""
        for k, buf in self.Psi.items():
            v = col[k] if isinstance(col, dict) else col[self.parts[k]]
            if add:
                buf[:, s] += v
            else:
                buf[:, s] = v

    def new_dimension(self):
        """Append a dimension (all zeros): the bias column moves right."""
        s = self.nd
        for buf in self.Psi.values():
            buf[:, s] = 0.0
            buf[:, s + 1] = 1.0
        self.nd += 1
        return s

    def solve(self, theta0=None):
        nd = self.nd
        if theta0 is not None and theta0.shape[0] < nd + 1:   # new dims start at weight 0
            theta0 = np.concatenate([theta0[:-1], np.zeros(nd + 1 - theta0.shape[0]), theta0[-1:]])
        return l2svm_newton(self.psi("T"), self.y_part["T"], self.mu_part["T"], 1.0 / self.C, theta0, biased=True)

    def margin_O(self, sol):
        return linalg.matvec(self.Psi["O"][:, :self.nd], sol.w) + sol.b

    def stat_O(self, sol):
        """Higher is better: -loss_O (smooth) or accuracy on O."""
        m = self.y_part["O"] * self.margin_O(sol)
        if self.est.early_stop == "accuracy":
            return float(np.mean(m > 0))
        return -sigmoid_loss(m, self.mu_part["O"], self.est.sigmoid_a)[0]

    def snapshot(self, sol, lam):
        snap = dict(n_trees=len(self.trees), w=sol.w.copy(), b=sol.b, C=self.C, lam=lam)
        if self.margins_O:
            snap["f_O"] = self.margin_O(sol)
        return snap

    def emit(self, snap):
        if not self.checkpoints or self.checkpoints[-1] is not snap:
            self.checkpoints.append(snap)

    def fit_tree(self, g, lam, active):
        """A tree fit to -g on the fitting rows with the Eq. (2.27) penalty, or
        None if no split pays.  Returns (tree dict, its value per row, features
        it uses, unpaid features it uses)."""
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
        """Store tree ``res`` of dimension ``dim``; report the previous state
        if the tree pays a new feature (paper §4.1)."""
        t, _, used, new = res
        if new:
            self.on_new_feature(self, snap)
        for f in used:
            self.state.pay(int(f))
        t["dim"] = dim
        t["seq"] = next(self.seq)
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
        s = self.new_dimension()
        if res is None:
            return sol, snap
        self.set_column(s, res[1])
        H += res[1]
        sol = self.solve(sol.theta)
        return sol, self.accept(s, res, lam, sol, snap)

    # -------------------------------------------------------- Algorithm 4
    def start(self):
        est = self.est
        self.muV_sum = float(self.mu[self.V].sum())
        self.sol = self.solve()
        self.lam = float(est.lambda0)
        self.snap = self.snapshot(self.sol, self.lam)          # checkpoint 0: the bias alone
        self.emit(self.snap)
        fit = self.fit_rows
        self.H = np.full(self.N, np.sum(self.mu[fit] * self.y[fit]) / np.sum(self.mu[fit]))

    def block(self, block):
        """One lambda of Alg. 4 (lines 3-15), then lambda halves."""
        for _ in self.block_steps(block):
            pass

    def block_steps(self, block):
        """``block`` as a generator that pauses after each dimension's first
        tree and after each dimension's refinement, so that the classes of a
        multiclass fit can take their steps in turn."""
        est = self.est
        T, V = self.T, self.V
        yp, mup = self.y_part, self.mu_part
        sol, snap, lam = self.sol, self.snap, self.lam
        a = est.sigmoid_a
        lo, hi = math.log(C_RANGE[0]), math.log(C_RANGE[1])
        if block == 0 or est.append_dims:
            first = self.nd
            for _ in range(est.dims_per_block):
                sol, snap = self.init_dimension(self.H, lam, sol, snap)
                self.sol, self.snap = sol, snap
                yield
            dims = range(first, self.nd)
        else:
            dims = range(self.nd)
        for s in dims:
            sol = self.solve(sol.theta)
            base = self.stat_O(sol)
            for _ in range(est.trees_per_dim):
                g_T, g_V, d_log_C = gradient_column(sol, self.psi("T"), yp["T"], mup["T"],
                                                    self.psi("V"), yp["V"], mup["V"], self.C, a, s, biased=True)
                step = float(np.clip(d_log_C / self.muV_sum, -1.0, 1.0))
                self.C = math.exp(min(hi, max(lo, math.log(self.C) - est.c_step * step)))
                g = np.zeros(self.N)
                g[T] = g_T
                g[V] = g_V
                res = self.fit_tree(g, lam, np.ones(self.F, np.bool_))
                if res is None:
                    break
                old = self.column(s)
                self.set_column(s, res[1], add=True)
                new_sol = self.solve(sol.theta)
                stat = self.stat_O(new_sol)
                if stat < base:             # O got worse: undo, next dimension
                    self.set_column(s, old)
                    sol = self.solve(sol.theta)
                    break
                sol, base = new_sol, stat
                snap = self.accept(s, res, lam, sol, snap)
                self.snap = snap
            self.sol = sol
            yield
        self.sol, self.snap, self.lam = sol, snap, lam / 2.0

    def finish(self):
        self.emit(self.snap)

    def run(self, bar=None):
        self.start()
        for b in range(self.n_blocks):
            self.block(b)
            if bar is not None:
                bar.update()
        self.finish()
