"""Every trainer the CLI, the demo and the curve helper can name.

Adding a trainer is one ``TrainerSpec`` in ``TRAINERS``: its command-line
name, its estimator classes, the parameter a cost/accuracy curve sweeps and
that parameter's default grid, and small settings for the test suite.
"""
from __future__ import annotations

from dataclasses import dataclass, field

from .anytime.afr import AFRClassifier
from .boosting.early_exit import EarlyExitClassifier
from .boosting.greedy_miser import GreedyMiserClassifier, GreedyMiserRegressor
from .boosting.ranker import EarlyExitRanker, GreedyMiserRanker
from .cascades.cronus import CronusClassifier, CSCCClassifier
from .kernels.cvm import CVMClassifier, LARSSVMClassifier
from .kernels.kernel_svm import KernelSVMClassifier
from .kernels.reduced_svm import ReducedSVMClassifier
from .linear.linear_svm import LinearSVMClassifier
from .linear.sparse_linear import SparseLinearClassifier
from .trees.astc import ASTCClassifier, ASTCRegressor
from .trees.cstc import CSTCClassifier, CSTCRegressor


@dataclass(frozen=True)
class TrainerSpec:
    """One trainer as the tools see it.

    Attributes
    ----------
    name : str
        The ``skinflint train --trainer`` name.
    label : str
        How tables and plots name it.
    classifier, regressor : type or None
        Estimator classes (None where the task does not fit).
    sweep : str
        The parameter ``cost_accuracy_curve`` sweeps to trade cost for
        accuracy (lambda for Greedy Miser, the exit threshold for Early Exit).
    grid : tuple
        That parameter's default values.
    fixed : dict
        Parameters this entry always sets (GBRT is Greedy Miser at lambda 0).
    test_params : dict
        Small settings that keep the conformance suite fast.
    choose_rounds : bool
        Whether a curve keeps the number of boosting rounds that validation
        prefers (not for cascades, whose stages are not rounds).
    cost_power : int
        How the grid scales with the feature costs: its values suit costs of
        about 1 per feature, and with costs of mean m the equivalent value is
        ``value * m ** cost_power``: -1 where the parameter multiplies cost
        (lambda: ``lambda * c`` is what a split must buy), +1 where it is in
        cost units (a budget) or multiplies the loss against cost (the l1
        model's C; equivalent up to liblinear's intercept penalty), 0
        otherwise.
    anytime : bool
        One model answers at every budget (AFR): its curve is the exported
        model run under a range of per-row budgets, not a parameter grid.
    ranker : type or None
        The estimator that fits query groups (``fit(X, y, group)``, scores
        ranked by NDCG@5), for trainers that rank.
    on_ranking : str or None
        How the papers ran the trainer on ranked data (docs/ranking.md):
        "ranker" (its ``ranker`` class), "regression" (a regressor on the
        relevance label, ranked by its output: CSTC, ASTC), "binary" (a
        classifier of relevance >= 3 ranked by its margin, scored by P@5:
        Cronus, CSCC, AFR), or None (not run on ranked data).
    """

    name: str
    label: str
    classifier: type | None
    regressor: type | None
    sweep: str
    grid: tuple
    fixed: dict = field(default_factory=dict)
    test_params: dict = field(default_factory=dict)
    choose_rounds: bool = True
    cost_power: int = 0
    anytime: bool = False
    ranker: type | None = None
    on_ranking: str | None = None

    def scaled_grid(self, mean_cost: float = 1.0) -> tuple:
        """The grid for features of mean cost ``mean_cost``."""
        if self.cost_power and not mean_cost > 0:
            raise ValueError(f"scaled_grid: the mean feature cost must be > 0 to scale {self.sweep!r}, "
                             f"got {mean_cost!r}")
        return tuple(g * mean_cost ** self.cost_power for g in self.grid)

    @property
    def classes(self) -> tuple:
        return tuple(c for c in (self.classifier, self.regressor) if c is not None)

    def estimator(self, task="classification", **params):
        """A new estimator for ``task`` with ``params`` over ``fixed``.
        Parameters the estimator does not have are dropped, so one set of
        common settings (``n_estimators``, ``feature_costs``, ...) serves
        every trainer."""
        if task not in ("classification", "regression", "ranking"):
            raise ValueError(f"task must be 'classification', 'regression' or 'ranking', got {task!r}")
        cls = {"classification": self.classifier, "regression": self.regressor, "ranking": self.ranker}[task]
        if cls is None:
            raise ValueError(f"trainer {self.name!r} has no {task} estimator")
        own = cls._get_param_names()
        return cls(**{k: v for k, v in {**params, **self.fixed}.items() if k in own})


_CASCADE_TEST = dict(n_estimators=10, max_depth=3, min_samples_leaf=5, verbose=0, random_state=0,
                     n_stages=3, max_cycles=2)
_CASCADE_GRID = (4e-3, 2e-3, 1e-3, 5e-4, 2.5e-4, 1.2e-4, 6e-5, 3e-5)
_SV_FRACTIONS = (0.01, 0.02, 0.05, 0.1, 0.2)
_FAST_SVM = dict(n_support_vectors=3, C=1.0)
_FAST_TREES = dict(n_estimators=10, max_depth=3, min_samples_leaf=5, verbose=0, random_state=0)

TRAINERS = {s.name: s for s in [
    TrainerSpec("gbrt", "GBRT", GreedyMiserClassifier, GreedyMiserRegressor, "cost_tradeoff",
                (0.0,), fixed=dict(cost_tradeoff=0.0), test_params=_FAST_TREES,
                ranker=GreedyMiserRanker, on_ranking="ranker"),
    TrainerSpec("greedy-miser", "Greedy Miser", GreedyMiserClassifier, GreedyMiserRegressor,
                "cost_tradeoff", (1e-4, 3e-4, 1e-3, 3e-3, 1e-2, 3e-2), test_params=_FAST_TREES,
                cost_power=-1, ranker=GreedyMiserRanker, on_ranking="ranker"),
    # thesis §2.1.4's "stage-wise regression feature subsets": GBRT on the
    # features costing at most the threshold (grid in Yahoo's cost values)
    TrainerSpec("feature-subset", "Feature-subset GBRT", GreedyMiserClassifier, GreedyMiserRegressor,
                "max_feature_cost", (5.0, 20.0, 50.0), fixed=dict(cost_tradeoff=0.0),
                test_params=_FAST_TREES, ranker=GreedyMiserRanker, on_ranking="ranker"),
    # the ranker's s is in score units of a LambdaMART model, the classifier's in margins
    TrainerSpec("early-exit", "Early Exit", EarlyExitClassifier, None, "threshold",
                (0.5, 1.0, 2.0, 4.0), test_params=dict(_FAST_TREES, exit_every=3), choose_rounds=False,
                ranker=EarlyExitRanker, on_ranking="ranker"),
    TrainerSpec("cronus", "Cronus", CronusClassifier, None, "cost_tradeoff", _CASCADE_GRID,
                test_params=_CASCADE_TEST, choose_rounds=False, cost_power=-1, on_ranking="binary"),
    TrainerSpec("cscc", "CSCC", CSCCClassifier, None, "cost_tradeoff", _CASCADE_GRID,
                test_params=_CASCADE_TEST, choose_rounds=False, cost_power=-1, on_ranking="binary"),
    TrainerSpec("cstc", "CSTC", CSTCClassifier, CSTCRegressor, "cost_tradeoff",
                (0.04, 0.02, 0.01, 0.005, 0.0025),
                test_params=dict(max_depth=2, max_cycles=2, cost_reweight_rounds=1), choose_rounds=False,
                cost_power=-1, on_ranking="regression"),
    TrainerSpec("astc", "ASTC", ASTCClassifier, ASTCRegressor, "budget", (1.0, 2.0, 4.0, 8.0, 16.0, 32.0),
                test_params=dict(max_depth=2), choose_rounds=False, cost_power=1, on_ranking="regression"),
    # AFR is one anytime model: its own curve is AFRClassifier.anytime_curve
    TrainerSpec("afr", "AFR", AFRClassifier, None, "lambda0", (0.1,), choose_rounds=False,
                cost_power=-1, anytime=True, on_ranking="binary",
                test_params=dict(dims_per_block=2, trees_per_dim=3, n_blocks=2, min_samples_leaf=2,
                                 random_state=0, verbose=0)),
    TrainerSpec("linear-svm", "Linear SVM", LinearSVMClassifier, None, "C", (0.01, 0.1, 1.0, 10.0),
                choose_rounds=False),
    TrainerSpec("l1-linear", "Cost-weighted l1 linear", SparseLinearClassifier, None, "C",
                (0.003, 0.01, 0.03, 0.1, 0.3, 1.0), test_params=dict(C=1.0), choose_rounds=False,
                cost_power=1),
    TrainerSpec("svm", "Kernel SVM", KernelSVMClassifier, None, "C", (0.1, 1.0, 10.0, 100.0),
                test_params=dict(C=1.0), choose_rounds=False),
    TrainerSpec("cvm", "CVM", CVMClassifier, None, "n_support_vectors", _SV_FRACTIONS,
                test_params=dict(_FAST_SVM, max_iter=20), choose_rounds=False),
    TrainerSpec("lars-svm", "LARS-SVM", LARSSVMClassifier, None, "n_support_vectors", _SV_FRACTIONS,
                test_params=_FAST_SVM, choose_rounds=False),
    TrainerSpec("reduced-svm", "Reduced-SVM", ReducedSVMClassifier, None, "n_support_vectors",
                _SV_FRACTIONS, test_params=_FAST_SVM, choose_rounds=False),
]}


def _distinct_classes():
    seen = {}
    for spec in TRAINERS.values():
        for cls in spec.classes:
            seen.setdefault(cls, spec)
    return seen


# estimator class -> the first spec that names it (the conformance suite tests each class once)
ESTIMATORS = _distinct_classes()

# trainer name -> spec, for the trainers the papers ran on ranked data (docs/ranking.md)
RANKING = {name: s for name, s in TRAINERS.items() if s.on_ranking is not None}
