"""Typed IR nodes (docs/ir.md).

Scoring nodes compute a float32 vector of width ``n_outputs`` (K; float64
for a float64 tree bank that is the model's output):

* ``TreesNode``: a bank of regression trees in structure-of-arrays form.  As a
  scorer its value is ``base_score + v_0 + v_1 + ...`` summed in bank order.
  A split compares a feature with a threshold, or, in a bank with
  ``CategorySplits``, tests whether its category is in a set.
  Each tree ``t`` can also be read on its own by a linear node.  With
  ``precision="float64"`` the leaves, base score and sum are float64 and the
  sum is then divided by ``divisor`` (a forest's mean); any other node reads
  that value, or one of its trees, rounded to float32 (docs/numerics.md).
* ``LinearNode``: ``bias + sum_i weights[i] * input_i`` in input order; an
  input is a feature, one tree of a bank, or one output of another node.
* ``KernelNode``: ``bias + sum_s alpha[s] * k(sv_s, x[features])``.

Control nodes decide what is evaluated; they may only be the model's output:

* ``CascadeNode``: ordered stages, each a scorer with an exit rule.
* ``AnytimeNode``: ordered checkpoints; with a budget the last one finished.
* ``ClassifierTreeNode``: internal nodes route on ``margin <= threshold``
  (left) and leaves give the output.
* ``QueryExitNode``: a tree bank scored a whole query at a time, with a
  query-level exit rule at checkpoints (docs/ranking.md); only a runtime
  that scores queries (the reference runtime's ``rank``) can run it.

Nodes are immutable: their arrays are read-only.  Construct them with the
builders in ``skinflint.ir.builders`` or from JSON.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

import numpy as np

from .arrays import (
    bool_array,
    cost_array,
    float32_array,
    float64_array,
    frozen,
    int_array,
    scalar_float,
    scalar_float32,
    scalar_int,
    uint32_array,
)
from .codes import (  # noqa: F401 (re-exported)
    CAT_INTEGER,
    CAT_TRUNCATE,
    CAT_TRUNCATE_NONNEGATIVE,
    CATEGORY_RULES,
    EXIT_ABS_GE,
    EXIT_GAP_GE,
    EXIT_GE,
    EXIT_LE,
    EXIT_NONE,
    EXIT_RULES,
    KERNEL_LINEAR,
    KERNEL_POLY,
    KERNEL_RBF,
    KERNELS,
    MAX_CATEGORY_WORDS,
    PRECISIONS,
    QUERY_EXIT_RULES,
    QX_CUTOFF,
    QX_PROXIMITY,
    TERM_FEATURE,
    TERM_KINDS,
    TERM_NODE,
    TERM_TREE,
)
from .errors import IRError

MAX_OUTPUTS = 1 << 16
MAX_POLY_DEGREE = 16

# a linear node's input lowers to a term with the same code (ir/codes.py)
INPUT_FEATURE, INPUT_TREE, INPUT_NODE = TERM_FEATURE, TERM_TREE, TERM_NODE
INPUT_KINDS = TERM_KINDS


def _name_of(mapping, code):
    return next(k for k, v in mapping.items() if v == code)


def _require(d, key, field):
    if not isinstance(d, dict):
        raise IRError(f"{field}: expected an object, got {type(d).__name__}")
    if key not in d:
        raise IRError(f"{field}.{key}: missing")
    return d[key]


def _n_outputs(d, field):
    return scalar_int(_require(d, "n_outputs", field), f"{field}.n_outputs",
                      low=1, high=MAX_OUTPUTS + 1)


@dataclass(frozen=True, eq=False)
class CategorySplits:
    """The category-set splits of a tree bank of M nodes (docs/ir.md,
    "Categorical splits").

    Node m is categorical when ``words[m] > 0``: its set is the ``words[m]``
    uint32 words of ``bits`` from ``begin[m]``, least significant bit first
    (category c is in the set iff ``bits[begin[m] + c // 32] >> (c % 32) & 1``).
    A row with value x on the node's feature goes

    1. x NaN: left iff ``missing_left[m]`` (the bank's array, as for any split);
    2. x a category code c under ``rule`` with c < 32 * words[m]: left iff c
       is in the set;
    3. any other x: left iff ``other_left[m]``.

    ``rule`` (one per bank, the source library's; ir/codes.py) says which x
    are codes: "truncate" x > -1, code trunc(x) (LightGBM); "truncate_nonnegative"
    x >= 0, code trunc(x) (XGBoost); "integer" x >= 0 and integral (scikit-learn,
    skinflint's booster).  Numeric nodes and leaves have begin -1, words 0
    and other_left False.
    """

    rule: str
    begin: np.ndarray
    words: np.ndarray
    bits: np.ndarray
    other_left: np.ndarray

    KEYS: ClassVar[tuple[str, ...]] = ("category_rule", "category_begin", "category_words",
                                       "category_bits", "other_left")

    @property
    def rule_code(self) -> int:
        return CATEGORY_RULES[self.rule]

    @property
    def is_categorical(self) -> np.ndarray:
        """Which nodes split on a category set: bool [M]."""
        return self.words > 0

    def codes(self, m: int) -> np.ndarray:
        """The categories in node m's set, ascending (int64)."""
        b, w = int(self.begin[m]), int(self.words[m])
        if w == 0:
            return np.zeros(0, np.int64)
        bits = np.unpackbits(self.bits[b:b + w].astype("<u4").view(np.uint8), bitorder="little")
        return np.flatnonzero(bits).astype(np.int64)

    @classmethod
    def from_dict(cls, d, field, M):
        present = [k for k in cls.KEYS if k in d]
        if not present:
            return None
        if len(present) != len(cls.KEYS):
            missing = [k for k in cls.KEYS if k not in d]
            raise IRError(f"{field}.{missing[0]}: missing (a bank with category splits needs "
                          f"{', '.join(cls.KEYS)})")
        rule = d["category_rule"]
        if not isinstance(rule, str) or rule not in CATEGORY_RULES:
            raise IRError(f"{field}.category_rule: unknown rule {rule!r}; expected one of "
                          f"{list(CATEGORY_RULES)}")
        bits = uint32_array(d["category_bits"], f"{field}.category_bits")
        return cls(rule=rule,
                   begin=int_array(d["category_begin"], f"{field}.category_begin", length=M, low=-1,
                                   high=max(bits.shape[0], 1)),
                   words=int_array(d["category_words"], f"{field}.category_words", length=M, low=0,
                                   high=MAX_CATEGORY_WORDS + 1),
                   bits=bits,
                   other_left=bool_array(d["other_left"], f"{field}.other_left", length=M))

    def check(self, field, feature, threshold):
        M = feature.shape[0]
        if self.rule not in CATEGORY_RULES:
            raise IRError(f"{field}.category_rule: unknown rule {self.rule!r}; expected one of "
                          f"{list(CATEGORY_RULES)}")
        for arr, nm in ((self.begin, "category_begin"), (self.words, "category_words"),
                        (self.other_left, "other_left")):
            if arr.shape != (M,):
                raise IRError(f"{field}.{nm}: expected {M} values, got {arr.shape[0]}")
        if self.bits.ndim != 1 or self.bits.dtype != np.uint32:
            raise IRError(f"{field}.category_bits: expected a vector of uint32 words")
        W = self.bits.shape[0]
        cat = self.words > 0
        if not np.any(cat):
            raise IRError(f"{field}.category_words: no node splits on a category set; leave the "
                          "category keys out of a bank without categorical splits")
        checks = (
            (self.words > MAX_CATEGORY_WORDS, f"a set of more than {MAX_CATEGORY_WORDS} words"),
            (cat & (feature < 0), "a leaf (feature -1) cannot split on a category set"),
            (cat & ((self.begin < 0) | (self.begin.astype(np.int64) + self.words > W)),
             f"the set's words lie outside category_bits ({W} words)"),
            (~cat & (self.begin != -1), "a numeric node or leaf needs category_begin -1"),
            (~cat & self.other_left, "a numeric node or leaf needs other_left false"),
            (cat & (threshold != 0), "a categorical node's threshold must be 0"),
        )
        for bad, what in checks:
            idx = np.flatnonzero(bad)
            if idx.size:
                raise IRError(f"{field}: tree node {int(idx[0])}: {what}")

    def to_dict(self):
        return {"category_rule": self.rule, "category_begin": self.begin.tolist(),
                "category_words": self.words.tolist(), "category_bits": self.bits.tolist(),
                "other_left": [bool(b) for b in self.other_left]}


@dataclass(frozen=True, eq=False)
class TreesNode:
    """A bank of T regression trees over M tree nodes, leaf values of width K.

    ``feature[m] == -1`` marks a leaf; an internal node sends a row left when
    ``x[feature] <= threshold`` and a NaN left when ``missing_left``.
    ``value`` has shape [M, K] and is read at leaves only.

    ``precision``: "float32" (leaves, base score and sum in float32) or
    "float64" (all three in float64, as LightGBM and scikit-learn add up
    their trees; the sum is then divided by ``divisor``, 1 by default: a
    random forest's mean is scikit-learn's float64 sum divided by the number
    of trees).  ``divisor`` other than 1 needs float64.
    """

    roots: np.ndarray
    feature: np.ndarray
    threshold: np.ndarray
    left: np.ndarray
    right: np.ndarray
    missing_left: np.ndarray
    value: np.ndarray
    tree_cost: np.ndarray
    base_score: np.ndarray
    name: str = ""
    precision: str = "float32"
    divisor: float = 1.0
    categories: CategorySplits | None = None
    kind: ClassVar[str] = "trees"

    @property
    def has_categories(self) -> bool:
        return self.categories is not None

    @property
    def n_outputs(self) -> int:
        return int(self.value.shape[1])

    @property
    def is_float64(self) -> bool:
        return self.precision == "float64"

    @property
    def n_trees(self) -> int:
        return int(self.roots.shape[0])

    @classmethod
    def from_dict(cls, d, field, n_features):
        K = _n_outputs(d, field)
        feature = int_array(_require(d, "feature", field), f"{field}.feature",
                            low=-1, high=n_features)
        M = feature.shape[0]
        if M == 0:
            raise IRError(f"{field}.feature: a tree bank needs at least one node")
        roots = int_array(_require(d, "roots", field), f"{field}.roots", low=0, high=M)
        T = roots.shape[0]
        precision = d.get("precision", "float32")
        if not isinstance(precision, str) or precision not in PRECISIONS:
            raise IRError(f"{field}.precision: unknown precision {precision!r}; expected one of "
                          f"{list(PRECISIONS)}")
        floats = float64_array if precision == "float64" else float32_array
        divisor = scalar_float(d.get("divisor", 1.0), f"{field}.divisor")
        value = floats(_require(d, "value", field), f"{field}.value", length=M * K)
        value = value.reshape(M, K)
        value.setflags(write=False)
        node = cls(
            roots=roots, feature=feature,
            threshold=float32_array(_require(d, "threshold", field), f"{field}.threshold", length=M),
            left=int_array(_require(d, "left", field), f"{field}.left", length=M, low=-1, high=M),
            right=int_array(_require(d, "right", field), f"{field}.right", length=M, low=-1, high=M),
            missing_left=bool_array(_require(d, "missing_left", field), f"{field}.missing_left", length=M),
            value=value,
            tree_cost=cost_array(d.get("tree_cost", [0.0] * T), f"{field}.tree_cost", length=T),
            base_score=floats(d.get("base_score", [0.0] * K), f"{field}.base_score", length=K),
            name=_name(d, field), precision=precision, divisor=divisor,
            categories=CategorySplits.from_dict(d, field, M),
        )
        node.check(field)
        return node

    def check(self, field):
        """Every bank node is reached exactly once from exactly one root;
        the precision, the dtypes and the divisor agree."""
        M = self.feature.shape[0]
        if self.precision not in PRECISIONS:
            raise IRError(f"{field}.precision: unknown precision {self.precision!r}; expected one of "
                          f"{list(PRECISIONS)}")
        want = np.dtype(self.precision)
        for arr, nm in ((self.value, "value"), (self.base_score, "base_score")):
            if arr.dtype != want:
                raise IRError(f"{field}.{nm}: a {self.precision} bank needs {self.precision} values, "
                              f"got {arr.dtype}")
        d = self.divisor
        if isinstance(d, bool) or not isinstance(d, (float, int, np.floating, np.integer)) or \
                not np.isfinite(d) or d <= 0:
            raise IRError(f"{field}.divisor: {d!r} must be a finite number > 0")
        if d != 1 and not self.is_float64:
            raise IRError(f"{field}.divisor: a divisor other than 1 needs \"precision\": \"float64\"")
        if self.is_float64:
            self._check_float32_range(field)
        for arr, nm in ((self.threshold, "threshold"), (self.left, "left"),
                        (self.right, "right"), (self.missing_left, "missing_left")):
            if arr.shape != (M,):
                raise IRError(f"{field}.{nm}: expected {M} values, got {arr.shape[0]}")
        if self.value.ndim != 2 or self.value.shape[0] != M:
            raise IRError(f"{field}.value: expected shape [{M}, K]")
        if self.base_score.shape != (self.n_outputs,):
            raise IRError(f"{field}.base_score: expected {self.n_outputs} values")
        if self.tree_cost.shape != (self.n_trees,):
            raise IRError(f"{field}.tree_cost: expected {self.n_trees} values")
        if self.n_trees == 0:
            raise IRError(f"{field}.roots: a tree bank needs at least one tree")
        if self.categories is not None:
            self.categories.check(field, self.feature, self.threshold)
        leaf = self.feature < 0
        bad = np.flatnonzero(leaf & ((self.left != -1) | (self.right != -1)))
        if bad.size:
            raise IRError(f"{field}.left/right[{bad[0]}]: a leaf (feature -1) must have children -1")
        bad = np.flatnonzero(~leaf & ((self.left < 0) | (self.right < 0)))
        if bad.size:
            raise IRError(f"{field}.left/right[{bad[0]}]: an internal node needs two children")
        # In-degree: roots 0, every other node exactly 1.  With that, reaching
        # all M nodes from the roots proves there is no cycle.
        children = np.concatenate([self.left[~leaf], self.right[~leaf]])
        indeg = np.bincount(children, minlength=M) if children.size else np.zeros(M, np.int64)
        indeg[self.roots] += 1
        if np.any(np.bincount(self.roots, minlength=M) > 1):
            raise IRError(f"{field}.roots: two trees share a root")
        bad = np.flatnonzero(indeg != 1)
        if bad.size:
            m = int(bad[0])
            what = "is reached from no root" if indeg[m] == 0 else f"has {indeg[m]} parents"
            raise IRError(f"{field}: tree node {m} {what}; trees must be disjoint trees")
        frontier, seen = self.roots.astype(np.int64), 0
        while frontier.size:
            seen += frontier.size
            if seen > M:
                raise IRError(f"{field}: a cycle among tree nodes")
            inner = frontier[self.feature[frontier] >= 0]
            frontier = np.concatenate([self.left[inner], self.right[inner]]).astype(np.int64)
        if seen != M:
            raise IRError(f"{field}: a cycle among tree nodes (reached {seen} of {M})")

    def _check_float32_range(self, field):
        """A float64 bank's leaves, base score and base / divisor must fit in
        float32: a node reading one tree of the bank, or the bank as a
        float32 input, rounds them to float32 (docs/numerics.md), and past
        float32's largest finite value that rounding gives inf."""
        top = float(np.finfo(np.float32).max)
        for arr, nm in ((self.value, "value"), (self.base_score, "base_score"),
                        (self.base_score / self.divisor, "base_score / divisor")):
            bad = np.flatnonzero(np.abs(arr.ravel()) > top)
            if bad.size:
                i = int(bad[0])
                raise IRError(f"{field}.{nm}[{i}]: {float(arr.ravel()[i])!r} is beyond float32's range "
                              f"(|x| <= {top!r}), which a float64 bank's values must stay within")

    def tree_ranges(self):
        """Per tree, the bank node indices reached from its root (sorted)."""
        owner = np.full(self.feature.shape[0], -1, np.int64)
        frontier = self.roots.astype(np.int64)
        tree = np.arange(self.n_trees)
        while frontier.size:
            owner[frontier] = tree
            inner = self.feature[frontier] >= 0
            frontier, tree = (np.concatenate([self.left[frontier[inner]], self.right[frontier[inner]]]),
                              np.concatenate([tree[inner], tree[inner]]))
        return owner

    def to_dict(self):
        # float32 banks keep their version-1 bytes (no precision key); float64
        # ones (format version 2) write leaves and base score as Python's
        # shortest round-trip decimals, which parse back to the same doubles
        wide = self.is_float64
        leaves = (lambda a: a.tolist()) if wide else _floats
        extra = {} if not wide else {"precision": self.precision,
                                     **({"divisor": float(self.divisor)} if self.divisor != 1 else {})}
        return {"kind": self.kind, "name": self.name, "n_outputs": self.n_outputs, **extra,
                "base_score": leaves(self.base_score), "roots": self.roots.tolist(),
                "tree_cost": self.tree_cost.tolist(), "feature": self.feature.tolist(),
                "threshold": _floats(self.threshold), "left": self.left.tolist(),
                "right": self.right.tolist(),
                "missing_left": [bool(b) for b in self.missing_left],
                "value": leaves(self.value.ravel()),
                **({} if self.categories is None else self.categories.to_dict())}


@dataclass(frozen=True, eq=False)
class LinearNode:
    """``out[k] = bias[k] + sum_i weights[i, k] * input_i`` in input order.

    Input i is ``input_kind[i]``: a feature (``input_index`` = feature), one
    tree (``input_index`` = bank node, ``input_tree`` = tree, ``input_output``
    = leaf-value component) or a node output (``input_index`` = node,
    ``input_output`` = component).  An input whose weights are all zero is not
    touched (docs/costs.md: a linear node touches inputs with nonzero weight).
    """

    bias: np.ndarray
    input_kind: np.ndarray
    input_index: np.ndarray
    input_tree: np.ndarray
    input_output: np.ndarray
    weights: np.ndarray
    name: str = ""
    kind: ClassVar[str] = "linear"

    @property
    def n_outputs(self) -> int:
        return int(self.bias.shape[0])

    @property
    def n_inputs(self) -> int:
        return int(self.input_kind.shape[0])

    @classmethod
    def from_dict(cls, d, field, n_features):
        K = _n_outputs(d, field)
        inputs = _require(d, "inputs", field)
        if not isinstance(inputs, list):
            raise IRError(f"{field}.inputs: expected a list")
        n = len(inputs)
        kind = np.zeros(n, np.int8)
        index = np.zeros(n, np.int32)
        tree = np.zeros(n, np.int32)
        output = np.zeros(n, np.int32)
        for i, inp in enumerate(inputs):
            f = f"{field}.inputs[{i}]"
            if not isinstance(inp, dict):
                raise IRError(f"{f}: expected an object")
            if "feature" in inp:
                kind[i] = INPUT_FEATURE
                index[i] = scalar_int(inp["feature"], f"{f}.feature", low=0, high=n_features)
            elif "node" in inp:
                index[i] = scalar_int(inp["node"], f"{f}.node", low=0, high=2**31 - 1)
                output[i] = scalar_int(inp.get("output", 0), f"{f}.output", low=0, high=MAX_OUTPUTS)
                if "tree" in inp:
                    kind[i] = INPUT_TREE
                    tree[i] = scalar_int(inp["tree"], f"{f}.tree", low=0, high=2**31 - 1)
                else:
                    kind[i] = INPUT_NODE
            else:
                raise IRError(f"{f}: needs 'feature' or 'node'")
        weights = float32_array(_require(d, "weights", field), f"{field}.weights", length=n * K)
        weights = weights.reshape(n, K)
        weights.setflags(write=False)
        return cls(bias=float32_array(_require(d, "bias", field), f"{field}.bias", length=K),
                   input_kind=frozen(kind), input_index=frozen(index), input_tree=frozen(tree),
                   input_output=frozen(output), weights=weights, name=_name(d, field))

    def to_dict(self):
        inputs = []
        for k, j, t, o in zip(self.input_kind.tolist(), self.input_index.tolist(),
                              self.input_tree.tolist(), self.input_output.tolist()):
            if k == INPUT_FEATURE:
                inputs.append({"feature": j})
            elif k == INPUT_TREE:
                inputs.append({"node": j, "tree": t, "output": o})
            else:
                inputs.append({"node": j, "output": o})
        return {"kind": self.kind, "name": self.name, "n_outputs": self.n_outputs,
                "bias": _floats(self.bias), "inputs": inputs,
                "weights": _floats(self.weights.ravel())}


@dataclass(frozen=True, eq=False)
class KernelNode:
    """``out[k] = bias[k] + sum_s alpha[s, k] * k(sv_s, x[features])``.

    rbf: ``expf(-gamma * sum_d (x_d - sv_d)^2)``; linear: ``sum_d x_d sv_d``;
    poly: ``(gamma * sum_d x_d sv_d + coef0) ** degree`` by repeated
    multiplication.  Sums run over ``features`` in order, in float32.
    Optional per-feature ``shift`` and ``scale`` (float32 [D], both or
    neither) replace each input first: ``x_d = (x_d - shift_d) * scale_d``,
    two float32 roundings, never fused; absent means no operation.
    """

    kernel: int
    gamma: np.float32
    coef0: np.float32
    degree: int
    features: np.ndarray
    support_vectors: np.ndarray
    alpha: np.ndarray
    bias: np.ndarray
    sv_cost: np.ndarray
    name: str = ""
    shift: np.ndarray | None = None
    scale: np.ndarray | None = None
    kind: ClassVar[str] = "kernel"

    @property
    def n_outputs(self) -> int:
        return int(self.bias.shape[0])

    @property
    def n_support(self) -> int:
        return int(self.support_vectors.shape[0])

    @classmethod
    def from_dict(cls, d, field, n_features):
        K = _n_outputs(d, field)
        kname = _require(d, "kernel", field)
        if kname not in KERNELS:
            raise IRError(f"{field}.kernel: unknown kernel {kname!r}; expected one of {sorted(KERNELS)}")
        feats = int_array(_require(d, "features", field), f"{field}.features", low=0, high=n_features)
        D = feats.shape[0]
        alpha = float32_array(_require(d, "alpha", field), f"{field}.alpha")
        if alpha.shape[0] % K:
            raise IRError(f"{field}.alpha: length {alpha.shape[0]} is not a multiple of n_outputs {K}")
        S = alpha.shape[0] // K
        sv = float32_array(_require(d, "support_vectors", field), f"{field}.support_vectors",
                           length=S * D)
        if ("shift" in d) != ("scale" in d):
            raise IRError(f"{field}: 'shift' and 'scale' come together; give both or neither")
        shift = scale = None
        if "shift" in d:
            shift = float32_array(d["shift"], f"{field}.shift", length=D)
            scale = float32_array(d["scale"], f"{field}.scale", length=D)
        return cls(kernel=KERNELS[kname], shift=shift, scale=scale,
                   gamma=scalar_float32(d.get("gamma", 1.0), f"{field}.gamma"),
                   coef0=scalar_float32(d.get("coef0", 0.0), f"{field}.coef0"),
                   degree=scalar_int(d.get("degree", 1), f"{field}.degree", low=0,
                                     high=MAX_POLY_DEGREE + 1),
                   features=feats, support_vectors=frozen(sv.reshape(S, D)),
                   alpha=frozen(alpha.reshape(S, K)),
                   bias=float32_array(_require(d, "bias", field), f"{field}.bias", length=K),
                   sv_cost=cost_array(d.get("sv_cost", [0.0] * S), f"{field}.sv_cost", length=S),
                   name=_name(d, field))

    def to_dict(self):
        return {"kind": self.kind, "name": self.name, "n_outputs": self.n_outputs,
                "kernel": _name_of(KERNELS, self.kernel), "gamma": float(self.gamma),
                "coef0": float(self.coef0), "degree": self.degree,
                "features": self.features.tolist(),
                "support_vectors": _floats(self.support_vectors.ravel()),
                "alpha": _floats(self.alpha.ravel()), "bias": _floats(self.bias),
                "sv_cost": self.sv_cost.tolist(),
                # emitted only when present: models without them keep their bytes and hash
                **({} if self.shift is None else {"shift": _floats(self.shift),
                                                   "scale": _floats(self.scale)})}


@dataclass(frozen=True, eq=False)
class CascadeNode:
    """Stages in order; stage s exits when ``margin[output[s]] <= threshold[s]``
    (rule ``le``), ``>= threshold[s]`` (``ge``), or when ``margin >= t`` or
    ``margin <= -t`` (``abs_ge``: confident either way); the last always exits.
    Rule ``gap_ge`` (format version 5) reads the stage's whole vector: it
    exits when the largest component minus the second largest, in float32,
    is ``>= threshold[s]`` (0 when the two are equal; never when a component
    is NaN); its ``output`` is 0 and its scorer at least 2 wide.  The
    output is the exit stage's margin."""

    scorer: np.ndarray
    exit_rule: np.ndarray
    threshold: np.ndarray
    output: np.ndarray
    name: str = ""
    kind: ClassVar[str] = "cascade"

    @classmethod
    def from_dict(cls, d, field, n_features):
        stages = _require(d, "stages", field)
        if not isinstance(stages, list) or not stages:
            raise IRError(f"{field}.stages: expected a non-empty list")
        scorer, rule, thr, out = [], [], [], []
        for i, s in enumerate(stages):
            f = f"{field}.stages[{i}]"
            scorer.append(scalar_int(_require(s, "scorer", f), f"{f}.scorer", low=0, high=2**31 - 1))
            r = s.get("exit", "none")
            if r not in EXIT_RULES:
                raise IRError(f"{f}.exit: unknown rule {r!r}; expected one of {sorted(EXIT_RULES)}")
            rule.append(EXIT_RULES[r])
            thr.append(scalar_float(s.get("threshold", 0.0), f"{f}.threshold"))
            out.append(scalar_int(s.get("output", 0), f"{f}.output", low=0, high=MAX_OUTPUTS))
            if rule[-1] == EXIT_GAP_GE and out[-1] != 0:
                raise IRError(f"{f}.output: the gap_ge rule reads the whole vector; output must be 0, "
                              f"got {out[-1]}")
        return cls(scorer=frozen(np.array(scorer, np.int32)), exit_rule=frozen(np.array(rule, np.int8)),
                   threshold=float32_array(thr, f"{field}.stages[].threshold"),
                   output=frozen(np.array(out, np.int32)), name=_name(d, field))

    def children(self):
        return self.scorer.tolist()

    @property
    def has_gap_rule(self) -> bool:
        """Some stage exits by ``gap_ge`` (format version 5)."""
        return bool(np.any(self.exit_rule == EXIT_GAP_GE))

    def to_dict(self):
        return {"kind": self.kind, "name": self.name, "stages": [
            {"scorer": int(s), "exit": _name_of(EXIT_RULES, int(r)), "threshold": float(t),
             "output": int(o)}
            for s, r, t, o in zip(self.scorer, self.exit_rule, self.threshold, self.output)]}


@dataclass(frozen=True, eq=False)
class AnytimeNode:
    """Checkpoints in order; the output is the last checkpoint finished."""

    checkpoints: np.ndarray
    name: str = ""
    kind: ClassVar[str] = "anytime"

    @classmethod
    def from_dict(cls, d, field, n_features):
        cps = _require(d, "checkpoints", field)
        cp = int_array(cps, f"{field}.checkpoints", low=0, high=2**31 - 1)
        if cp.shape[0] == 0:
            raise IRError(f"{field}.checkpoints: expected a non-empty list")
        return cls(checkpoints=cp, name=_name(d, field))

    def children(self):
        return self.checkpoints.tolist()

    def to_dict(self):
        return {"kind": self.kind, "name": self.name, "checkpoints": self.checkpoints.tolist()}


@dataclass(frozen=True, eq=False)
class ClassifierTreeNode:
    """A tree of classifiers (CSTC/ASTC).  Tree node 0 is the root.  An
    internal node sends a row left when ``margin[output] <= threshold`` (a NaN
    margin goes right); a leaf (children -1) gives the output."""

    scorer: np.ndarray
    threshold: np.ndarray
    output: np.ndarray
    left: np.ndarray
    right: np.ndarray
    name: str = ""
    kind: ClassVar[str] = "classifier_tree"

    @classmethod
    def from_dict(cls, d, field, n_features):
        nodes = _require(d, "nodes", field)
        if not isinstance(nodes, list) or not nodes:
            raise IRError(f"{field}.nodes: expected a non-empty list")
        M = len(nodes)
        cols = {k: [] for k in ("scorer", "threshold", "output", "left", "right")}
        for i, s in enumerate(nodes):
            f = f"{field}.nodes[{i}]"
            cols["scorer"].append(scalar_int(_require(s, "scorer", f), f"{f}.scorer", low=0, high=2**31 - 1))
            cols["threshold"].append(scalar_float(s.get("threshold", 0.0), f"{f}.threshold"))
            cols["output"].append(scalar_int(s.get("output", 0), f"{f}.output", low=0, high=MAX_OUTPUTS))
            cols["left"].append(scalar_int(s.get("left", -1), f"{f}.left", low=-1, high=M))
            cols["right"].append(scalar_int(s.get("right", -1), f"{f}.right", low=-1, high=M))
        node = cls(scorer=frozen(np.array(cols["scorer"], np.int32)),
                   threshold=float32_array(cols["threshold"], f"{field}.nodes[].threshold"),
                   output=frozen(np.array(cols["output"], np.int32)),
                   left=frozen(np.array(cols["left"], np.int32)),
                   right=frozen(np.array(cols["right"], np.int32)), name=_name(d, field))
        node.check(field)
        return node

    def check(self, field):
        M = self.scorer.shape[0]
        leaf = self.left < 0
        if np.any(leaf != (self.right < 0)):
            i = int(np.flatnonzero(leaf != (self.right < 0))[0])
            raise IRError(f"{field}.nodes[{i}]: left and right must both be -1 or both >= 0")
        children = np.concatenate([self.left[~leaf], self.right[~leaf]])
        indeg = np.bincount(children, minlength=M) if children.size else np.zeros(M, np.int64)
        indeg[0] += 1
        bad = np.flatnonzero(indeg != 1)
        if bad.size:
            raise IRError(f"{field}.nodes[{bad[0]}]: must have exactly one parent (node 0 is the root)")
        seen, frontier = 0, np.array([0])
        while frontier.size:
            seen += frontier.size
            if seen > M:
                break
            inner = frontier[self.left[frontier] >= 0]
            frontier = np.concatenate([self.left[inner], self.right[inner]])
        if seen != M:
            raise IRError(f"{field}.nodes: a cycle (not a tree rooted at node 0)")

    def children(self):
        return self.scorer.tolist()

    def to_dict(self):
        return {"kind": self.kind, "name": self.name, "nodes": [
            {"scorer": int(s), "threshold": float(t), "output": int(o), "left": int(l), "right": int(r)}
            for s, t, o, l, r in zip(self.scorer, self.threshold, self.output, self.left, self.right)]}


@dataclass(frozen=True, eq=False)
class QueryExitNode:
    """A query-level exit over one tree bank ``scorer`` (docs/ir.md, docs/ranking.md).

    The documents of one query are scored together, tree by tree in bank
    order.  Checkpoint j comes after ``after[j]`` trees (strictly increasing,
    each in [1, T - 1]: a checkpoint after the last tree saves nothing).
    There the documents still in are ranked by score, highest first, ties
    by position in the query (the earlier document first), and:

    * ``rule[j] == QX_PROXIMITY``: every document ranked past ``keep[j]``
      whose score is at least ``gap[j]`` below the ``keep[j]``-th best
      leaves (``kth - score >= gap``, one IEEE float64 subtraction of the
      two float32 scores; Cambazoglu et al. 2010 with ``gap = s (T - i)/(T - 1)``);
    * ``rule[j] == QX_CUTOFF``: every document ranked past ``keep[j]`` leaves
      (the query's top ``keep[j]`` go on: a multi-stage ranking cascade).

    A document that leaves fetches and pays nothing more; its score is the
    one it had then.
    """

    scorer: int
    after: np.ndarray
    keep: np.ndarray
    rule: np.ndarray
    gap: np.ndarray
    name: str = ""
    kind: ClassVar[str] = "query_exit"

    @property
    def n_checkpoints(self) -> int:
        return int(self.after.shape[0])

    @classmethod
    def from_dict(cls, d, field, n_features):
        scorer = scalar_int(_require(d, "scorer", field), f"{field}.scorer", low=0, high=2**31 - 1)
        cps = _require(d, "checkpoints", field)
        if not isinstance(cps, list) or not cps:
            raise IRError(f"{field}.checkpoints: expected a non-empty list")
        if len(cps) > MAX_QUERY_CHECKPOINTS:
            raise IRError(f"{field}.checkpoints: {len(cps)} checkpoints exceeds the limit {MAX_QUERY_CHECKPOINTS}")
        after, keep, rule, gap = [], [], [], []
        for j, c in enumerate(cps):
            f = f"{field}.checkpoints[{j}]"
            after.append(scalar_int(_require(c, "after", f), f"{f}.after", low=1, high=2**31 - 1))
            keep.append(scalar_int(_require(c, "keep", f), f"{f}.keep", low=1, high=2**31 - 1))
            r = _require(c, "rule", f)
            if not isinstance(r, str) or r not in QUERY_EXIT_RULES:
                raise IRError(f"{f}.rule: unknown rule {r!r}; expected one of {sorted(QUERY_EXIT_RULES)}")
            rule.append(QUERY_EXIT_RULES[r])
            if r == "proximity":
                gap.append(scalar_float(_require(c, "gap", f), f"{f}.gap"))
            elif "gap" in c:
                raise IRError(f"{f}.gap: a cutoff keeps the top 'keep' documents and has no gap")
            else:
                gap.append(0.0)
        node = cls(scorer=scorer, after=frozen(np.array(after, np.int32)), keep=frozen(np.array(keep, np.int32)),
                   rule=frozen(np.array(rule, np.int8)), gap=frozen(np.array(gap, np.float64)),
                   name=_name(d, field))
        node.check(field)
        return node

    def check(self, field):
        """What the node can check alone; the scorer bank is ``ir.model``'s to check."""
        J = self.after.shape[0]
        if J == 0:
            raise IRError(f"{field}.checkpoints: expected a non-empty list")
        for arr, nm in ((self.keep, "keep"), (self.rule, "rule"), (self.gap, "gap")):
            if arr.shape != (J,):
                raise IRError(f"{field}.checkpoints[].{nm}: expected {J} values, got {arr.shape[0]}")
        bad = np.flatnonzero(np.diff(self.after.astype(np.int64)) <= 0)
        if bad.size:
            j = int(bad[0]) + 1
            raise IRError(f"{field}.checkpoints[{j}].after: {int(self.after[j])} must be greater than the "
                          f"previous checkpoint's {int(self.after[j - 1])}")
        for arr, nm in ((self.after, "after"), (self.keep, "keep")):
            bad = np.flatnonzero(arr < 1)
            if bad.size:
                raise IRError(f"{field}.checkpoints[{int(bad[0])}].{nm}: must be >= 1, got {int(arr[bad[0]])}")
        bad = np.flatnonzero((self.rule != QX_PROXIMITY) & (self.rule != QX_CUTOFF))
        if bad.size:
            raise IRError(f"{field}.checkpoints[{int(bad[0])}].rule: unknown rule code {int(self.rule[bad[0]])}")
        bad = np.flatnonzero(~np.isfinite(self.gap) | (self.gap < 0))
        if bad.size:
            raise IRError(f"{field}.checkpoints[{int(bad[0])}].gap: {float(self.gap[bad[0]])!r} must be a "
                          "finite number >= 0")

    def children(self):
        return [int(self.scorer)]

    def to_dict(self):
        cps = []
        for a, k, r, g in zip(self.after.tolist(), self.keep.tolist(), self.rule.tolist(), self.gap.tolist()):
            c = {"after": a, "keep": k, "rule": _name_of(QUERY_EXIT_RULES, r)}
            if r == QX_PROXIMITY:
                c["gap"] = g
            cps.append(c)
        return {"kind": self.kind, "name": self.name, "scorer": int(self.scorer), "checkpoints": cps}


MAX_QUERY_CHECKPOINTS = 1 << 20

SCORING_KINDS = {"trees": TreesNode, "linear": LinearNode, "kernel": KernelNode}
CONTROL_KINDS = {"cascade": CascadeNode, "anytime": AnytimeNode,
                 "classifier_tree": ClassifierTreeNode, "query_exit": QueryExitNode}
NODE_KINDS = {**SCORING_KINDS, **CONTROL_KINDS}


def is_control(node) -> bool:
    return node.kind in CONTROL_KINDS


def node_from_dict(d, field, n_features):
    kind = _require(d, "kind", field)
    if not isinstance(kind, str) or kind not in NODE_KINDS:
        raise IRError(f"{field}.kind: unknown node kind {kind!r}; expected one of {sorted(NODE_KINDS)}")
    return NODE_KINDS[kind].from_dict(d, field, n_features)


def _name(d, field):
    n = d.get("name", "")
    if not isinstance(n, str) or len(n) > 1000:
        raise IRError(f"{field}.name: expected a string of at most 1000 characters")
    return n


def _floats(a):
    """float32 values as the exact float64 they equal: any JSON reader parses
    that decimal back to the same double, which narrows to the same float32."""
    return [float(v) for v in np.asarray(a, np.float32).ravel()]
