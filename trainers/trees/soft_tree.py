"""The soft tree of classifiers behind CSTC (thesis §3.4-3.6).

A binary tree of linear classifier nodes (BFS numbering: node k has lower
child 2k+1 and upper child 2k+2), each slot holding a classifier or a
*terminal element* (an exit returning the parent's prediction).  During
training rows are routed softly, T(3.5) with a steepness gamma:
p(upper | x, k) = sigma(gamma (s_k(x) - theta_k)).  The relaxed objective,
T(3.13) with the boosting trick T(3.24) and groups, on standardised columns
and target:

    J = sum_k [ (1/n) sum_i p_i^k 1/2 (s_i^k - y_i)^2 + rho sum_c |beta_c^k| ]
        + lambda sum_l P_l sum_m ct_lm sqrt( sum_{j in path(l)} sum_{c in m} (beta_c^j)^2 )

with P_l the exit mass of terminal l (T(3.10)) and ct_lm the item cost c_m
(reweighted towards l0 by ``reweight``, an extension; docs/trees.md).

Optimisation (thesis §3.4.3, Alg. 5): top-down initialisation (each node as
a leaf, closed form T(3.17)), then block coordinate descent: leaves by the
closed form with Lemma-1 auxiliaries T(3.16); internal and mixed nodes by
L-BFGS over (b, beta, theta) with the gradient of ``internal_objective``.
The Gamma of T(3.17) uses the path mass P_l (the thesis prints p_i^k, a
typo: Gamma cannot depend on the row).

The closed form, its auxiliaries, the soft routing and the fine-tuning refit
are ``trainers/relaxation.py``'s (shared with the soft cascades); L-BFGS is
``trainers/lbfgs.py``'s and every product ``trainers/linalg.py``'s, in a
fixed order, so a tree does not depend on the BLAS build or thread count.
"""
from __future__ import annotations

import numpy as np

from .. import lbfgs, linalg
from ..relaxation import design_t, lemma1_fit, refit, routing
from ._soft_tree_kernels import internal_rows
from .tree_ir import CostItems, tie_aware_split

TERM = -1          # a slot holding a terminal element
LEAF = 2           # the side of a pure leaf's single terminal


class SoftTree:
    """Parameters and optimiser of one CSTC tree.

    Parameters
    ----------
    Phi : float64 [n, P] or None
        Standardised basis (raw features or tree outputs); None with ``PhiT``.
    y : float64 [n]
        Standardised target.
    items : CostItems
    depth : int
        Levels of classifier nodes (a full tree has 2**depth - 1 nodes).
    lam : float
        lambda of T(3.13), per row on the standardised target.
    rho : float
        l1 weight of T(3.1).
    steepness : float
        gamma of the soft routing (1 in T(3.5)).
    clamp : float
        |beta| below this is set to 0 for good (thesis §3.4.3: 1e-4).
    PhiT : float64 [P, n] or None
        The basis transposed (``Standardizer.columns_t``), which the tree
        keeps instead of ``Phi``: every product reads the columns it needs
        as contiguous rows (``linalg.cols_*``, the bits of the products on
        gathered columns), so no node or solve copies its active columns
        (at 284k rows x 519 features each copy was 1.2 GB of fresh pages)
        and a sparse node reads only its non-zero columns.
    """

    def __init__(self, Phi, y, items: CostItems, depth, lam, rho=1e-3, steepness=50.0,
                 clamp=1e-4, *, PhiT=None):
        if PhiT is None:
            PhiT = np.asarray(Phi, np.float64).T
        self.PhiT = np.ascontiguousarray(PhiT, np.float64)
        self.y = np.asarray(y, np.float64)
        self.P, self.n = self.PhiT.shape
        self.items = items
        self.M = np.ascontiguousarray(items.matrix, np.float64)
        self.lam, self.rho, self.gamma, self.clamp_at = float(lam), float(rho), float(steepness), clamp
        K = 2 ** depth - 1
        self.K = K
        self.child = np.full((K, 2), TERM, np.int64)
        for k in range(K):
            if 2 * k + 2 < K:
                self.child[k] = (2 * k + 1, 2 * k + 2)
        self.parent = np.array([-1] + [(k - 1) // 2 for k in range(1, K)], np.int64)
        self.alive = np.ones(K, bool)
        self.beta = np.zeros((K, self.P))
        self.bias = np.zeros(K)
        self.theta = np.zeros(K)
        self.active = np.ones((K, self.P), bool)
        self.ct: dict = {}                  # terminal -> item weights (default: item cost)
        self.history: list = []             # (round, J)
        self.round = 0
        self._scores: dict = {}             # node -> (beta^k, b^k, its scores): see scores()

    @property
    def Phi(self):
        """The basis [n, P] (a view of ``PhiT``)."""
        return self.PhiT.T

    # ------------------------------------------------------------ structure
    def nodes(self):
        """Alive classifier nodes, BFS order (parents before children)."""
        return [k for k in range(self.K) if self.alive[k]]

    def is_leaf(self, k):
        return self.child[k, 0] == TERM and self.child[k, 1] == TERM

    def path(self, k):
        """Classifier nodes from the root to k, k included."""
        out = []
        while k >= 0:
            out.append(k)
            k = self.parent[k]
        return out[::-1]

    def terminals(self):
        """Terminal elements as (node, side); side LEAF for a pure leaf."""
        out = []
        for k in self.nodes():
            if self.is_leaf(k):
                out.append((k, LEAF))
            else:
                out.extend((k, s) for s in (0, 1) if self.child[k, s] == TERM)
        return out

    def remove_child(self, k, side):
        """Prune the subtree in slot ``side`` of node k (thesis §3.4.5)."""
        stack = [self.child[k, side]]
        while stack:
            j = stack.pop()
            if j == TERM:
                continue
            self.alive[j] = False
            stack.extend(self.child[j])
        self.child[k, side] = TERM

    def ctilde(self, term):
        return self.ct.get(term, self.items.cost)

    # ------------------------------------------------------------ forward
    def scores(self, k):
        """b^k + Phi beta^k [n] (read-only), kept per node until beta^k or b^k
        change: block coordinate descent moves one node at a time, and every
        ``forward`` reads all K (at 10k rows x 200 bank trees, depth 3, it was
        half of CSTC's fit).  Columns with a zero weight are left out of the
        product: a row's sum starts at +0 and adds the products in ascending
        column order, and adding a +-0 product to such a sum never changes
        it, so the bits are those of the full ``matvec``."""
        beta, b = self.beta[k], self.bias[k]
        hit = self._scores.get(k)
        if hit is not None and hit[1] == b and np.array_equal(hit[0], beta):
            return hit[2]
        nz = np.flatnonzero(beta)
        out = b + linalg.cols_matvec(self.PhiT, nz, beta[nz])
        out.setflags(write=False)
        self._scores[k] = (beta.copy(), float(b), out)
        return out

    def forward(self):
        """Reach probabilities p [K, n] and margins s [K, n] of alive nodes."""
        p = np.zeros((self.K, self.n))
        s = np.zeros((self.K, self.n))
        p[0] = 1.0
        for k in self.nodes():
            s[k] = self.scores(k)
            if self.is_leaf(k):
                continue
            up = routing(s[k], self.theta[k], self.gamma)
            for side, q in ((0, 1.0 - up), (1, up)):
                c = self.child[k, side]
                if c != TERM:
                    p[c] = p[k] * q
        return p, s

    def exit_weight(self, k, side, p, s):
        """Per-row probability of leaving through terminal (k, side)."""
        if side == LEAF:
            return p[k]
        up = routing(s[k], self.theta[k], self.gamma)
        return p[k] * (up if side == 1 else 1.0 - up)

    def item_sq(self, k):
        """sum_{c in m} (beta_c^k)^2 per item m."""
        return linalg.matvec(self.M, self.beta[k] ** 2)

    def path_sq(self, k, skip=-1):
        """G_m summed over path(k), leaving out node ``skip``."""
        g = np.zeros(self.M.shape[0])
        for j in self.path(k):
            if j != skip:
                g += self.item_sq(j)
        return g

    def objective(self):
        """J of T(3.13) (exact square roots, no auxiliaries)."""
        p, s = self.forward()
        J = 0.0
        for k in self.nodes():
            J += linalg.dot(p[k], 0.5 * (s[k] - self.y) ** 2) / self.n
            J += self.rho * float(np.abs(self.beta[k]).sum())
        for term in self.terminals():
            k, side = term
            P = float(self.exit_weight(k, side, p, s).mean())
            J += self.lam * P * linalg.dot(self.ctilde(term), np.sqrt(self.path_sq(k)))
        return J

    def record(self):
        self.history.append((self.round, self.objective()))

    # ------------------------------------------------------------ leaves
    def _clamp(self, k):
        small = np.abs(self.beta[k]) < self.clamp_at
        self.beta[k, small] = 0.0
        self.active[k] &= ~small

    def closed_form(self, k, w, P, G_other, ct, n_iter, tol, ridge_start=False):
        """Minimise over (beta^k, b^k), node k treated as a leaf:
        sum_i w_i 1/2 (s_i - y_i)^2 + rho |beta| + lam P sum_m ct_m sqrt(G_other_m + g_m(beta))
        by alternating T(3.16)'s auxiliaries with T(3.17)'s closed form
        (``relaxation.lemma1_fit``: Omega = diag(w), w = p^k / n;
        Gamma_c = rho/gamma_c + lam P sum_{m ni c} ct_m/eta_m), from the
        ridge solution (``ridge_start``) or the node's current weights."""
        A = np.flatnonzero(self.active[k])
        gram, rhs = design_t(self.PhiT, A, w, self.y)
        start = None if ridge_start else (self.bias[k], self.beta[k, A])
        b, beta, _ = lemma1_fit(gram, rhs, None, self.y, w, self.M, ct, G_other, 1.0, self.lam * P,
                                self.rho, self.clamp_at, A, n_iter=n_iter, tol=tol, start=start, Xt=self.PhiT)
        self.beta[k], self.bias[k] = beta, b
        self._clamp(k)

    # ------------------------------------------------------------ internal
    def _slot_parts(self, k, side, s):
        """Loss part L [n], relative exit probabilities R [n, T] and the
        terminals below slot ``side`` of node k (fixed while k is optimised)."""
        c = self.child[k, side]
        if c == TERM:
            return np.zeros(self.n), np.ones((self.n, 1)), [(k, side)]
        return self._node_parts(c, s)

    def _node_parts(self, j, s):
        loss = 0.5 * (s[j] - self.y) ** 2
        if self.is_leaf(j):
            return loss, np.ones((self.n, 1)), [(j, LEAF)]
        up = routing(s[j], self.theta[j], self.gamma)
        Ll, Rl, tl = self._slot_parts(j, 0, s)
        Lu, Ru, tu = self._slot_parts(j, 1, s)
        return (loss + up * Lu + (1 - up) * Ll,
                np.hstack([(1 - up)[:, None] * Rl, up[:, None] * Ru]), tl + tu)

    def internal_problem(self, k):
        """Everything node k's internal objective needs, auxiliaries fixed at
        the current parameters (thesis §3.4.3 "Intermediate nodes")."""
        p, s = self.forward()
        A = np.flatnonzero(self.active[k])
        sides = []
        for side in (0, 1):
            L, R, terms = self._slot_parts(k, side, s)
            Go = np.stack([self.path_sq(t[0], skip=k) for t in terms])
            eta = np.sqrt(Go + self.item_sq(k)[None, :])
            ct = np.stack([self.ctilde(t) for t in terms])
            sides.append((L, R, Go, eta, ct))
        gam = np.abs(self.beta[k, A])
        return dict(k=k, A=A, w=p[k] / self.n,
                    MA=np.ascontiguousarray(self.M[:, A]),
                    sides=sides, rho_over=(self.rho / gam) if self.rho > 0 else np.zeros(A.size))

    def internal_objective(self, z, prob):
        """F and its gradient in z = (b, beta_A, theta) (docs/trees.md):
        f = sum_i w_i [1/2 (s_i-y_i)^2 + sig_i A_i^u + (1-sig_i) A_i^l] + 1/2 sum_c (rho/gamma_c) beta_c^2,
        A^s = L^s + lam R^s C^s, C_l = 1/2 sum_m ct_lm (G_lm/eta_lm + eta_lm)."""
        b, beta, th = z[0], z[1:-1], z[-1]
        w, g = prob["w"], self.gamma
        s = b + linalg.cols_matvec(self.PhiT, prob["A"], beta)    # = Phi[:, A] beta, columns ascending
        sig = routing(s, th, g)
        gk = linalg.matvec(prob["MA"], beta * beta)
        Aside, coef = [], np.zeros(prob["MA"].shape[0])
        wside = (w * (1 - sig), w * sig)
        for (L, R, Go, eta, ct), ws in zip(prob["sides"], wside):
            inv = np.divide(ct, eta, out=np.zeros_like(eta), where=eta > 0)
            C = 0.5 * ((Go + gk[None, :]) * inv).sum(1) + 0.5 * (ct * eta).sum(1)
            Aside.append(L + self.lam * linalg.matvec(R, C))
            coef += self.lam * linalg.rmatvec(inv, linalg.rmatvec(R, ws))   # lam sum_l P_l ct_lm / eta_lm
        Al, Au = Aside
        # r = s - y; fw = w . (r^2 / 2 + sig Au + (1 - sig) Al); dsig = g sig (1 - sig) (Au - Al);
        # ds = w (r + dsig); wd = w . dsig: one pass, the bits of those numpy expressions
        fw, ds, wd = internal_rows(s, self.y, sig, w, Al, Au, float(g))
        f = fw + 0.5 * linalg.dot(prob["rho_over"], beta * beta)
        grad = np.empty_like(z)
        grad[0] = ds.sum()
        grad[1:-1] = (linalg.cols_rmatvec(self.PhiT, prob["A"], ds) + prob["rho_over"] * beta
                      + linalg.rmatvec(prob["MA"], coef) * beta)
        grad[-1] = -wd
        return f, grad

    def internal_solve(self, k, rounds=3, maxiter=60):
        for _ in range(rounds):
            prob = self.internal_problem(k)
            A = prob["A"]
            z0 = np.r_[self.bias[k], self.beta[k, A], self.theta[k]]
            f0, _ = self.internal_objective(z0, prob)
            res = lbfgs.minimize(lambda z, prob=prob: self.internal_objective(z, prob), z0, maxiter=maxiter)
            if res.fun <= f0:
                self.bias[k], self.beta[k, A], self.theta[k] = res.x[0], res.x[1:-1], res.x[-1]
            self._clamp(k)

    # ------------------------------------------------------------ the loop
    def leaf_solve(self, k, rounds=3):
        p, s = self.forward()
        self.closed_form(k, p[k] / self.n, float(p[k].mean()), self.path_sq(k, skip=k),
                         self.ctilde((k, LEAF)), rounds, 0.0)

    def initialise(self):
        """Top-down (thesis §3.4.3 "Node initialization"): each node as a leaf
        with its descendants cut off; theta by a tie-aware weighted median."""
        for k in self.nodes():
            p, s = self.forward()
            self.closed_form(k, p[k] / self.n, float(p[k].mean()), self.path_sq(k, skip=k),
                             self.items.cost, 200, 1e-7, ridge_start=True)
            if not self.is_leaf(k):
                t = tie_aware_split(self.scores(k), p[k])
                self.theta[k] = t if np.isfinite(t) else float(self.scores(k).max()) + 1.0
        self.record()

    def bcd(self, max_cycles=10, tol=1e-6, bar=None):
        """Thesis Alg. 5: cycles over the nodes until J stalls; ``bar`` (a
        progress bar) advances once a cycle."""
        prev = self.objective()
        for _ in range(max_cycles):
            for k in self.nodes():
                if self.is_leaf(k):
                    self.leaf_solve(k)
                else:
                    self.internal_solve(k)
            self.record()
            if bar is not None:
                bar.update()
            J = self.history[-1][1]
            if prev - J <= tol * abs(J):
                break
            prev = J

    def reweight(self, eps=0.1):
        """ct_lm = c_m (1 + eps) / (eta_lm + eps) at the current solution:
        one majorisation step of sum_m c_m log(eta + eps), towards l0."""
        self.round += 1
        self.ct = {t: self.items.cost * (1 + eps) / (np.sqrt(self.path_sq(t[0])) + eps)
                   for t in self.terminals()}

    def refit(self, w, cols, rho=None, n_iter=30):
        """Weighted least squares on ``cols`` (+ bias) without the cost term,
        l1 by IRLS (thesis §3.4.4 fine-tuning; ``relaxation.refit``).
        Returns (beta [P], b)."""
        rho = self.rho if rho is None else rho
        gram, rhs = design_t(self.PhiT, cols, w, self.y)
        z = refit(gram, rhs, rho, n_iter=n_iter)
        beta = np.zeros(self.P)
        beta[cols] = z[1:]
        return beta, float(z[0])
