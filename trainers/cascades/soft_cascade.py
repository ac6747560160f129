"""The soft-cascade engine shared by Cronus and CSCC.

Both algorithms learn K linear stages over a fixed tree dictionary
h(x) = [h_1(x), ..., h_T(x)] (the boosting trick) and a threshold per stage;
a row leaves at the first stage k < K whose score s^k = b^k + h(x)^T beta^k
is <= theta^k and is predicted by that stage's own score.  Training replaces
the hard exits by sigmoids (training only):

    I_i^k = sigma(gamma (s_i^k - theta^k))    probability of passing stage k
    p_i^k = prod_{j<k} I_i^j                  probability of reaching stage k
    q_i^k = p_i^k (1 - I_i^k), q_i^K = p_i^K  probability of exiting at stage k

and minimises (Chen et al. 2012, Eq. 8; thesis Eq. 3.25)

    1/2 sum_i w_i sum_k q_i^k (y_i - s_i^k)^2 + sum_k rho_k ||beta^k||_1 + lambda * cost

with w_i = class weight / n (the loss is a weighted *mean*, so lambda is per
training row, as Greedy Miser's ``cost_tradeoff``) and the relaxed cost

* ``mode="cronus"`` (Eq. 8): sum_t e_t sqrt(sum_k (beta_t^k d_k)^2)
  + sum_u c_u sqrt(sum_k sum_t (F_ut beta_t^k d_k)^2), d_k = mean_i p_i^k;
* ``mode="cscc"`` (Eqs. 3.22-3.25): sum_l P_l [sum_t e_t sqrt(sum_{j<=l}
  (beta_t^j)^2) + sum_u c_u sqrt(sum_{j<=l} sum_t (F_ut beta_t^j)^2)],
  P_l = mean_i q_i^l, the expected cost over exit paths.

The units u are the features and (an extension: no paper has groups) the
feature groups, F_ut = 1 iff tree t reads unit u; e_t is the tree's
evaluation cost.  The bias b^k (the paper's constant tree) is not penalised.

Optimisation: initialisation by Alg. 2 (Chen §3.3.2: each stage in turn is
treated as the last one, closed form Eq. 14 with the auxiliaries of Eq. 11,
threshold so that d_{k+1} = (1 - eps) d_k, lambda inflated for early stages),
then the cyclic optimisation of Alg. 1 (Chen §3.3.1: one stage at a time,
auxiliaries in closed form, L-BFGS on the stage's weights, bias and
threshold).  A stage update is accepted only when the full objective does not
increase, so ``history`` never increases.

Choices the papers leave open (measured in docs/cascades.md):

* lambda inflation: the paper's lambda_1 = lambda delta^-K deflates
  (a typo against its own text); we use lambda_k = lambda delta^(K-k), so
  lambda_K = lambda.  CSCC's init is unspecified; it uses the same rule.
* clamp: weights with |beta| < ``clamp`` (1e-4, thesis §3.4.3) become 0 and
  stay 0 (the auxiliary sigma = 0 is an infinite penalty: inherent to the
  variational trick).
* the inner solver is L-BFGS (``trainers/lbfgs.py``; the paper uses
  Polak-Ribiere CG), a few auxiliary rounds per stage and cycle.

The closed form, its auxiliaries, the soft routing and the last stage's refit
are ``trainers/relaxation.py``'s (shared with CSTC's soft trees); every
product and solve is ``trainers/linalg.py``'s, in a fixed order, so a model's
bytes do not depend on the BLAS build or the thread count.
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from .. import lbfgs, linalg
from ..relaxation import design, lemma1_fit, refit, routing
from ._soft_cascade_kernels import bias_design, stage_pass, stage_route_grad

MODES = ("cronus", "cscc")


_FLOOR = 1e-150     # floor of the auxiliaries kappa, eta: a stage nobody reaches (d_k = 0) costs 0, not nan


@dataclass
class Problem:
    """A cascade training problem over a fixed tree dictionary.

    Parameters
    ----------
    H : float64 [n, T] tree outputs (float32 leaf values, exactly).
    y : float64 [n], labels in {-1, +1}.
    w : float64 [n], row loss weights (class weight / n).
    tree_cost : float64 [T], e_t.
    F : float64 [m, T], 1 where tree t reads unit u (feature or group).
    unit_cost : float64 [m], c_u.
    """

    H: np.ndarray
    y: np.ndarray
    w: np.ndarray
    tree_cost: np.ndarray
    F: np.ndarray
    unit_cost: np.ndarray

    def __post_init__(self):
        # the relaxation's items (trainers/relaxation.py): each tree's own
        # evaluation, then the units; M [T + m, T], ct [T + m]
        self.M = np.vstack([np.eye(self.H.shape[1]), self.F])
        self.ct = np.concatenate([self.tree_cost, self.unit_cost])
        self.Ft = np.ascontiguousarray(self.F.T)
        self.Ht = np.ascontiguousarray(self.H.T)    # H beta as rmatvec(Ht, beta): same bits, vectorised

    def design(self, w):
        """(Gram, rhs) of [1, H] with row weights ``w``: ``relaxation.design``
        over every column, bit for bit (``bias_design``, no [1, H] copy)."""
        return bias_design(self.H, w, self.y)

    def base_design(self):
        """``design(w)`` at the rows' own weights, which every candidate's
        first stage (Alg. 2: d_1 = 1, so Omega = w exactly) and ``lambda_max``
        use: computed once per problem and kept read-only."""
        if getattr(self, "_base_design", None) is None:
            G, rhs = self.design(self.w)
            G.flags.writeable = False
            rhs.flags.writeable = False
            self._base_design = (G, rhs)
        return self._base_design

    @property
    def n(self):
        return self.H.shape[0]

    @property
    def T(self):
        return self.H.shape[1]


@dataclass
class Settings:
    """Hyper-parameters of the engine (see the estimators for defaults).

    mode : "cronus" | "cscc"; n_stages : K; lam : lambda (cost units per
    row); rho : [K] l1 weights; gamma : sigmoid steepness; eps : init exit
    fraction per stage; delta : init lambda inflation; clamp : weights below
    it are zeroed; max_cycles, tol : Alg. 1 stopping; aux_rounds,
    inner_maxiter : per stage and cycle; init_iters : IRLS steps per stage in
    Alg. 2.
    """

    mode: str = "cronus"
    n_stages: int = 10
    lam: float = 0.0
    rho: np.ndarray = None  # type: ignore[assignment]  # per-stage rho, filled in by __post_init__
    gamma: float = 50.0
    eps: float = 0.15
    delta: float = 1.3
    clamp: float = 1e-4
    max_cycles: int = 5
    tol: float = 1e-6
    aux_rounds: int = 3
    inner_maxiter: int = 60
    init_iters: int = 50

    def __post_init__(self):
        if self.mode not in MODES:
            raise ValueError(f"mode must be one of {MODES}, got {self.mode!r}")
        rho = np.zeros(self.n_stages) if self.rho is None else np.asarray(self.rho, np.float64)
        self.rho = np.broadcast_to(rho, (self.n_stages,)).astype(np.float64)


@dataclass
class Cascade:
    """Stage weights B [K, T], biases b [K], thresholds theta [K]
    (theta[K-1] is unused: the last stage always exits)."""

    B: np.ndarray
    b: np.ndarray
    theta: np.ndarray
    history: list = field(default_factory=list)

    def copy(self):
        return Cascade(self.B.copy(), self.b.copy(), self.theta.copy(), list(self.history))


# ------------------------------------------------------------------ objective

def chain(S, theta, gamma):
    """Soft routing (Chen §3.2): reach p [n, K] and exit q [n, K]
    probabilities, and the pass probabilities I [n, K-1], by products (never
    by division: p underflows on long cascades)."""
    n, K = S.shape
    p = np.ones((n, K))
    q = np.empty((n, K))
    I = routing(S[:, :-1], theta[:-1], gamma)
    if K > 1:
        p[:, 1:] = np.cumprod(I, axis=1)
        q[:, :-1] = p[:, :-1] * routing(-S[:, :-1], -theta[:-1], gamma)
    q[:, -1] = p[:, -1]
    return p, q, I


def relaxed_cost(prob, B, p, q, mode):
    """The relaxed cost term (without lambda): Chen Eq. 8's tree-cost and
    feature-cost, or thesis Eq. 3.25's expected path cost."""
    B2 = B * B
    U = linalg.matmul(B2, prob.Ft)           # [K, m]: sum_t F_ut beta_t^2
    e, cu = prob.tree_cost, prob.unit_cost
    if mode == "cronus":
        d2 = p.mean(axis=0) ** 2
        return linalg.dot(e, np.sqrt(linalg.rmatvec(B2, d2))) + linalg.dot(cu, np.sqrt(linalg.rmatvec(U, d2)))
    P = q.mean(axis=0)
    C = linalg.matvec(np.sqrt(np.cumsum(B2, axis=0)), e) + linalg.matvec(np.sqrt(np.cumsum(U, axis=0)), cu)
    return linalg.dot(P, C)


def scores(prob, c: Cascade):
    """S [n, K], s_ik = b_k + sum_t H_it B_kt (t ascending)."""
    return c.b[None, :] + np.column_stack([linalg.rmatvec(prob.Ht, c.B[k]) for k in range(c.B.shape[0])])


def objective(prob: Problem, cfg: Settings, c: Cascade, S=None) -> float:
    """Chen Eq. 8 (mode "cronus") or thesis Eq. 3.25 (mode "cscc")."""
    S = scores(prob, c) if S is None else S
    p, q, _ = chain(S, c.theta, cfg.gamma)
    loss = 0.5 * linalg.dot(prob.w, np.sum(q * (prob.y[:, None] - S) ** 2, axis=1))
    l1 = linalg.dot(cfg.rho, np.abs(c.B).sum(axis=1))
    return loss + l1 + cfg.lam * relaxed_cost(prob, c.B, p, q, cfg.mode)


# ------------------------------------------------------------------ one stage, others fixed

class StageProblem:
    """The objective of stage k with every other stage and the auxiliaries
    fixed (Chen Eqs. 9-11; thesis Eqs. 3.14-3.19), as a smooth function of
    x = [b^k, beta^k on the active set A, theta^k (not for the last stage)].

    Its value is the full objective up to a constant; at the point where the
    auxiliaries were taken it majorises the true objective (Lemma 1), so a
    decrease here is a decrease of Eq. 8 / 3.25 before clamping.
    """

    def __init__(self, prob: Problem, cfg: Settings, c: Cascade, k: int, S: np.ndarray):
        n, K = S.shape
        self.prob, self.cfg, self.k, self.K = prob, cfg, k, K
        self.last = k == K - 1
        self.A = np.flatnonzero(c.B[k])
        self.HA = np.ascontiguousarray(prob.H[:, self.A])
        self.HAt = np.ascontiguousarray(prob.Ht[self.A])
        p, q, I = chain(S, c.theta, cfg.gamma)
        self.pk = p[:, k].copy()
        y = prob.y
        # downstream: r_ij = prod_{k<m<j} I_im, exit factor (1 - I_ij) or 1 for j = K
        J = K - 1 - k
        r = np.ones((n, J))
        ex = np.ones((n, J))
        for jj in range(J):
            j = k + 1 + jj
            if jj > 0:
                r[:, jj] = r[:, jj - 1] * I[:, j - 1]
            if j < K - 1:
                ex[:, jj] = routing(-S[:, j], -c.theta[j], cfg.gamma)
        L = (y[:, None] - S[:, k + 1:]) ** 2
        self.a = np.sum(r * ex * L, axis=1) if J else np.zeros(n)
        base_Z = self.pk[:, None] * r
        self.Z = np.ascontiguousarray(base_Z if cfg.mode == "cronus" else base_Z * ex)
        beta = c.B[k, self.A]
        self.sigma = np.abs(beta)
        B2 = c.B * c.B
        U = linalg.matmul(B2, prob.Ft)
        e, cu = prob.tree_cost, prob.unit_cost
        if cfg.mode == "cronus":
            d = p.mean(axis=0)
            d2 = d * d
            kappa = np.maximum(np.sqrt(linalg.rmatvec(B2, d2)), _FLOOR)
            eta = np.maximum(np.sqrt(linalg.rmatvec(U, d2)), _FLOOR)
            u = e / kappa + linalg.rmatvec(prob.F, cu / eta)      # [T]
            self.u_direct = d2[k] * u[self.A]
            W = linalg.matvec(B2, u)                              # [K]
            self.W_down = W[k + 1:]
            self.const = 0.5 * cfg.lam * (linalg.dot(d2[:k], W[:k]) + linalg.dot(e, kappa)
                                          + linalg.dot(cu, eta))
        else:
            P = q.mean(axis=0)
            Gt = np.cumsum(B2, axis=0)
            Gu = np.cumsum(U, axis=0)
            C = linalg.matvec(np.sqrt(Gt), e) + linalg.matvec(np.sqrt(Gu), cu)
            kap = np.maximum(np.sqrt(Gt[k:]), _FLOOR)             # paths l >= k
            et = np.maximum(np.sqrt(Gu[k:]), _FLOOR)
            ul = e / kap + linalg.matmul(cu / et, prob.F)         # [K-k, T]
            # V_l = V0_l + 1/2 sum_t ul_t beta_t^2 (the path-l surrogate)
            Gt_ex = Gt[k:] - B2[k]
            Gu_ex = Gu[k:] - U[k]
            self.V0 = 0.5 * (linalg.matvec(Gt_ex / kap + kap, e) + linalg.matvec(Gu_ex / et + et, cu))
            self.ulA = np.ascontiguousarray(ul[:, self.A])
            self.const = cfg.lam * linalg.dot(P[:k], C[:k])
        self.rho = cfg.rho[k]
        # constants that make the surrogate equal Eq. 8 / 3.25 at the point the
        # auxiliaries were taken: the loss of rows exiting before k, other stages' l1
        self.const += 0.5 * linalg.dot(prob.w, np.sum(q[:, :k] * (y[:, None] - S[:, :k]) ** 2, axis=1))
        self.const += linalg.dot(cfg.rho, np.abs(c.B).sum(axis=1)) - cfg.rho[k] * float(self.sigma.sum())
        self.n = n
        self._gs = np.empty(n)
        self._I = np.empty(n)
        self._dI = np.empty(n)

    def x0(self, c: Cascade):
        x = [np.array([c.b[self.k]]), c.B[self.k, self.A]]
        if not self.last:
            x.append(np.array([c.theta[self.k]]))
        return np.concatenate(x)

    def unpack(self, x):
        nA = self.A.shape[0]
        return x[0], x[1:1 + nA], (x[1 + nA] if not self.last else 0.0)

    def __call__(self, x):
        """(value, gradient) of the stage surrogate at x."""
        cfg, lam = self.cfg, self.cfg.lam
        b, beta, theta = self.unpack(x)
        s = b + linalg.rmatvec(self.HAt, beta)      # = HA beta, t ascending
        gs, I, dI = self._gs, self._I, self._dI
        loss, gth, m, own = stage_pass(s, self.prob.y, self.prob.w, self.pk, self.a, theta, cfg.gamma,
                                       self.last, self.Z, I, dI, gs)
        beta2 = beta * beta
        if self.rho > 0:
            l1 = 0.5 * self.rho * float(np.sum(beta2 / self.sigma + self.sigma))
            g_l1 = self.rho * beta / self.sigma
        else:
            l1, g_l1 = 0.0, 0.0
        if cfg.mode == "cronus":
            Wk = linalg.dot(self.u_direct, beta2)   # d_k^2 W_k
            cost = 0.5 * lam * (Wk + linalg.dot(m * m, self.W_down)) + self.const
            coef = lam * m * self.W_down
            own_coef = 0.0
            g_direct = lam * self.u_direct * beta
        else:
            if self.last:
                own = float(self.pk.mean())
            V = self.V0 + 0.5 * linalg.matvec(self.ulA, beta2)   # [K-k]
            Pl = np.concatenate(([own], m))
            cost = lam * linalg.dot(Pl, V) + self.const
            coef = lam * V[1:]
            own_coef = lam * V[0]
            g_direct = lam * linalg.rmatvec(self.ulA, Pl) * beta
        if not self.last and lam > 0:
            gth += stage_route_grad(dI, self.pk, self.Z, np.ascontiguousarray(coef), own_coef, gs)
        g = np.empty_like(x)
        g[0] = gs.sum()
        g[1:1 + beta.shape[0]] = linalg.rmatvec(self.HA, gs) + g_l1 + g_direct
        if not self.last:
            g[-1] = gth
        return loss + l1 + cost, g


def _apply(c: Cascade, sp: StageProblem, x):
    out = c.copy()
    b, beta, theta = sp.unpack(x)
    out.b[sp.k] = b
    out.B[sp.k] = 0.0
    out.B[sp.k, sp.A] = beta
    if not sp.last:
        out.theta[sp.k] = theta
    return out


def _clamped(c: Cascade, k, clamp):
    out = c.copy()
    row = out.B[k]
    row[np.abs(row) < clamp] = 0.0
    return out


def optimize_stage(prob, cfg, c: Cascade, k: int, f_now: float):
    """Alg. 1 lines 5-8 for stage k: auxiliaries, L-BFGS, clamp; every
    accepted step lowers the full objective.  Returns (cascade, objective)."""
    for _ in range(cfg.aux_rounds):
        S = scores(prob, c)
        sp = StageProblem(prob, cfg, c, k, S)
        res = lbfgs.minimize(sp, sp.x0(c), maxiter=cfg.inner_maxiter, gtol=1e-10, ftol=1e-12)
        best = None
        for cand in (_clamped(_apply(c, sp, res.x), k, cfg.clamp), _apply(c, sp, res.x)):
            f = objective(prob, cfg, cand)
            if np.isfinite(f) and f <= f_now:
                best = (cand, f)
                break
        if best is None:
            break
        improved = f_now - best[1]
        c, f_now = best
        if improved <= cfg.tol * abs(f_now):
            break
    return c, f_now


# ------------------------------------------------------------------ initialisation (Alg. 2)

def _threshold_for_mass(s, pk, target, gamma):
    """Theta with mean_i p_i sigma(gamma (s_i - theta)) = target (Alg. 2
    line 7), by 80 bisection steps: the mass decreases in theta."""
    lo, hi = float(s.min()) - 60.0 / gamma, float(s.max()) + 60.0 / gamma
    for _ in range(80):
        mid = 0.5 * (lo + hi)
        if float(np.mean(pk * routing(s, mid, gamma))) > target:
            lo = mid
        else:
            hi = mid
    return 0.5 * (lo + hi)


def _stage_items(prob, cfg, B, k, p_prev):
    """(G, a, P) of the relaxation's cost term (trainers/relaxation.py) for
    stage k treated as the last one, stages < k fixed (Chen Alg. 2; Eq. 13's
    Lambda): Cronus weighs stage j's squares by d_j^2 (Eq. 8), CSCC sums
    them along the exit path and weighs the path by its reach mass P_k."""
    B2 = B[:k] ** 2
    if cfg.mode == "cronus":
        d2 = p_prev.mean(axis=0)[:k + 1] ** 2
        G = linalg.matvec(prob.M, linalg.rmatvec(B2, d2[:k])) if k else np.zeros(prob.M.shape[0])
        return G, float(d2[k]), 1.0
    G = linalg.matvec(prob.M, B2.sum(axis=0)) if k else np.zeros(prob.M.shape[0])
    return G, 1.0, float(p_prev[:, k].mean())


def fit_single_stage(prob, cfg, Gram, rhs, Bprev, k, pk_all, lam_k, rho_k, Omega_y):
    """Stage k treated as the last (Chen Alg. 2 lines 4-8; thesis §3.4.3
    node initialisation): the Lemma-1 IRLS of ``relaxation.lemma1_fit``
    (closed form Eq. 14 with the auxiliaries of Eq. 11) until the stage
    objective (cost term included) stops falling.  ``Gram``, ``rhs``: the
    normal equations of [1, H] with the row weights ``Omega_y``.  Returns
    (b, beta)."""
    G, a, P = _stage_items(prob, cfg, Bprev, k, pk_all)
    cols = np.arange(prob.T)
    b, beta, _ = lemma1_fit(Gram, rhs, prob.H, prob.y, Omega_y, prob.M, prob.ct, G, a, lam_k * P, rho_k,
                            cfg.clamp, cols, n_iter=cfg.init_iters, tol=cfg.tol)
    return b, beta


def init_cascade(prob: Problem, cfg: Settings) -> Cascade:
    """Alg. 2 (Chen §3.3.2): stages in order, each as the last, lambda_k =
    lambda delta^(K-k), theta^k so that d_{k+1} = (1 - eps) d_k."""
    K, T, n = cfg.n_stages, prob.T, prob.n
    B = np.zeros((K, T))
    b = np.zeros(K)
    theta = np.zeros(K)
    p = np.ones((n, K))
    for k in range(K):
        Om = prob.w * p[:, k]
        Gram, rhs = prob.design(Om) if k else prob.base_design()      # p[:, 0] = 1: Om is w
        lam_k = cfg.lam * cfg.delta ** (K - 1 - k)
        bk, beta = fit_single_stage(prob, cfg, Gram, rhs, B, k, p, lam_k, cfg.rho[k], Om)
        B[k], b[k] = beta, bk
        if k < K - 1:
            s = bk + linalg.rmatvec(prob.Ht, beta)
            theta[k] = _threshold_for_mass(s, p[:, k], (1 - cfg.eps) * p[:, k].mean(), cfg.gamma)
            p[:, k + 1] = p[:, k] * routing(s, theta[k], cfg.gamma)
    return Cascade(B, b, theta)


def optimize(prob: Problem, cfg: Settings, c: Cascade | None = None, bar=None, on_cycle=None) -> Cascade:
    """Alg. 1 (Chen §3.3.1): init (Alg. 2) unless given, then cycles over the
    stages until Eq. 8 / 3.25 falls by less than ``tol`` (relative) or
    ``max_cycles``.  ``history`` holds the objective after the init and after
    each cycle; it never increases.  ``bar`` (a progress bar) advances once a
    cycle and shows the objective.  ``on_cycle(c)``, when given, is called
    after each cycle; a true return stops the cycles (early stopping)."""
    c = init_cascade(prob, cfg) if c is None else c.copy()
    f = objective(prob, cfg, c)
    c.history = [f]
    for _ in range(cfg.max_cycles):
        f_start = f
        for k in range(cfg.n_stages):
            c, f = optimize_stage(prob, cfg, c, k, f)
        c.history.append(f)
        if bar is not None:
            bar.update()
            bar.set_postfix(objective=f"{f:.6g}", refresh=False)
        if on_cycle is not None and on_cycle(c):
            break
        if f_start - f <= cfg.tol * abs(f):
            break
    return c


def fine_tune_last(prob: Problem, cfg: Settings, c: Cascade) -> Cascade:
    """Thesis §3.4.4 fine-tuning: re-fit the leaf classifier without the
    cost term, its support frozen.  In a cascade only the last stage is a
    pure leaf (refitting an earlier one would move its own exits), so only
    stage K is refitted (``relaxation.refit``, weights q^K = p^K)."""
    K = cfg.n_stages
    A = np.flatnonzero(c.B[K - 1])
    p, _, _ = chain(scores(prob, c), c.theta, cfg.gamma)
    _, Gram, rhs = design(prob.H, A, prob.w * p[:, K - 1], prob.y)
    z = refit(Gram, rhs, float(cfg.rho[K - 1]), n_iter=cfg.init_iters)
    out = c.copy()
    out.b[K - 1] = z[0]
    out.B[K - 1] = 0.0
    out.B[K - 1, A] = z[1:]
    return out


def fine_tune_stage(prob: Problem, cfg: Settings, c: Cascade, k: int) -> Cascade:
    """Thesis §3.4.4 fine-tuning of stage k < K, which makes the final
    prediction of the rows exiting there: re-fit it without the cost term on
    its frozen support, each row weighted by its probability of exiting at k
    (q^k), then move theta^k so that the (soft) share of rows passing on,
    d_{k+1}, is what it was (the ``_threshold_for_mass`` bisection of Alg. 2).
    Re-fitting a routing stage moves its exits, so the caller keeps the result
    only if validation says so (thesis §3.7.2 early-stops the fine-tuning)."""
    if k == cfg.n_stages - 1:
        return fine_tune_last(prob, cfg, c)
    A = np.flatnonzero(c.B[k])
    p, q, I = chain(scores(prob, c), c.theta, cfg.gamma)
    _, Gram, rhs = design(prob.H, A, prob.w * q[:, k], prob.y)
    z = refit(Gram, rhs, float(cfg.rho[k]), n_iter=cfg.init_iters)
    out = c.copy()
    out.b[k] = z[0]
    out.B[k] = 0.0
    out.B[k, A] = z[1:]
    s = out.b[k] + linalg.rmatvec(prob.Ht, out.B[k])
    out.theta[k] = _threshold_for_mass(s, p[:, k], float(np.mean(p[:, k] * I[:, k])), cfg.gamma)
    return out


def lambda_max(prob: Problem, cfg: Settings, iters=30) -> float:
    """The smallest lambda (to ~1%) at which the single-stage problem
    (Chen Eq. 7, the K = 1 cascade) zeroes every tree: the top of the useful
    lambda range.  Bisection on log lambda; the Gram matrix is shared."""
    n, T = prob.n, prob.T
    Gram, rhs = prob.base_design()
    one = Settings(mode=cfg.mode, n_stages=1, rho=cfg.rho[-1], clamp=cfg.clamp, tol=cfg.tol,
                   init_iters=cfg.init_iters)
    p = np.ones((n, 1))

    def zero(lam):
        _, beta = fit_single_stage(prob, one, Gram, rhs, np.zeros((1, T)), 0, p, lam,
                                   one.rho[0], prob.w)
        return not np.any(beta)

    hi = 1.0
    while not zero(hi) and hi < 1e12:
        hi *= 10.0
    lo = hi / 10.0
    while zero(lo) and lo > 1e-15:
        hi, lo = lo, lo / 10.0
    for _ in range(iters):
        mid = np.sqrt(lo * hi)
        if zero(mid):
            hi = mid
        else:
            lo = mid
        if hi / lo < 1.01:
            break
    return float(hi)
