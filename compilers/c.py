"""Compile a Model to standalone C99 (templates/c/*.j2).

``compile_c(model, out_dir, prefix="model")`` writes ``<prefix>.h``,
``<prefix>.c``, an example ``main.c`` and a ``Makefile``.  The C walks the
same flat tables as the reference runtime (``ir.lowering``), so predictions,
costs, stages and features-used are bit-identical.
"""
from __future__ import annotations

import os
import re

import jinja2
import numpy as np

from ..ir import numerics
from ..ir.codes import (
    C_DEFINES,
    C_DEFINES_GAP,
    CATEGORY_RULES,
    EXIT_GAP_GE,
    KIND_CASCADE,
    KIND_CTREE,
    KIND_KERNEL,
    KIND_LINEAR,
    KIND_TREES,
    MAX_CATEGORY_WORDS,
    QX_CUTOFF,
)
from ..ir.costs import static_cost
from ..ir.json_io import model_hash
from ..ir.lowering import lower, lower_query
from . import package_version

# The most uint32 words one category set may take on a Cortex-M target: 16 KiB
# (codes below 2**17), a sixteenth of the 256 KiB flash of the smallest board
# skinflint ships a link script for (micro:bit), so a model with a few such sets
# still fits beside the code and the other tables.
CORTEX_M_CATEGORY_WORDS = 1 << 12

# The flags every build of generated code uses: C99, no contraction into FMA.
C_FLAGS = ["-std=c99", "-ffp-contract=off"]
STRICT_WARNINGS = ["-pedantic", "-Wall", "-Wextra", "-Werror", "-Wdouble-promotion", "-Wvla"]

_env = jinja2.Environment(
    loader=jinja2.PackageLoader("skinflint.templates", "c"), keep_trailing_newline=True,
    undefined=jinja2.StrictUndefined, autoescape=False)

_IDENT = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")


def _indent_c(text, width) -> str:
    """Jinja's ``indent(width, true)`` (blank lines left alone) that keeps
    preprocessor lines in column 0."""
    return "".join(line if not line.strip() or line.startswith("#") else " " * width + line
                   for line in text.splitlines(keepends=True))


_env.filters["indent_c"] = _indent_c


def hex_literal(v, suffix="") -> str:
    """The shortest C99 hex-float literal of the double ``v`` (exact):
    Python's ``float.hex`` with the mantissa's trailing zeros trimmed,
    0.5 -> ``0x1p-1``, 1.5 -> ``0x1.8p+0``; ``suffix`` "f" for a float."""
    h = float(v).hex()
    mant, exp = h.split("p")
    if "." in mant:
        mant = mant.rstrip("0").rstrip(".")
    return f"{mant}p{exp}{suffix}"


def _c_floats(a) -> str:
    a = np.asarray(a, np.float32).ravel()
    if not np.all(np.isfinite(a)):
        raise ValueError("non-finite float32 parameter cannot be compiled")
    return ", ".join(hex_literal(v, "f") for v in a.tolist())


def _c_doubles(a) -> str:
    return ", ".join(hex_literal(v) for v in np.asarray(a, np.float64).ravel().tolist())


def _float_constant(v) -> str:
    return _c_floats([v])


def signature(ret, name, params, width=100) -> str:
    """A C function head ``ret name(params)``, wrapped before ``width``
    columns with continuation lines aligned under the first parameter,
    whatever the length of ``name`` (the prefix)."""
    head = f"{ret} {name}("
    lines, line = [], head
    for i, p in enumerate(params):
        last = i == len(params) - 1
        piece = p + (")" if last else ", ")
        # the last line leaves room for the ";" or " {" that follows the head
        if line.strip() != head.strip() and len(line) + len(piece.rstrip()) + (2 if last else 0) > width:
            lines.append(line.rstrip())
            line = " " * len(head)
        line += piece
    return "\n".join(lines + [line if params else head + "void)"])


def _signatures(prefix, score_t="float") -> dict:
    """The public API's heads, shared by the header and the source
    (``score_t``: "double" when the output is a float64 tree bank)."""
    res, ws = f"{prefix}_result", f"{prefix}_workspace"
    return {
        "predict": signature("void", f"{prefix}_predict", ["const float *x", f"{res} *out"]),
        "predict_budget": signature("void", f"{prefix}_predict_budget",
                                    ["const float *x", "double budget", f"{res} *out"]),
        "predict_batch": signature("void", f"{prefix}_predict_batch",
                                   ["const float *X", "int32_t n_rows", "const double *budgets", f"{res} *out"]),
        "predict_lazy": signature("int32_t", f"{prefix}_predict_lazy",
                                  [f"{prefix}_feature_fn fetch", "void *ctx", "double budget", f"{ws} *ws",
                                   f"{res} *out"]),
        "feature_used": signature("int", f"{prefix}_feature_used", [f"const {ws} *ws", "int32_t feature"]),
        "predict_flat": signature("void", f"{prefix}_predict_flat",
                                  ["const float *X", "int32_t n_rows", "const double *budgets", f"{score_t} *scores",
                                   "float *proba", "int32_t *label", "double *cost", "int32_t *stage",
                                   "uint8_t *used"]),
        "workspace_size": signature("uint32_t", f"{prefix}_workspace_size", []),
    }


def _query_signatures(prefix) -> dict:
    """The query-level API's heads (a model whose output is a query_exit)."""
    out = ["float *scores", "double *cost", "int32_t *stage", "int32_t *n_trees", "uint8_t *dropped",
           "int32_t *order", "uint8_t *used", "void *workspace", "size_t workspace_bytes"]
    return {
        "rank_query": signature("int32_t", f"{prefix}_rank_query",
                                ["const float *X", "int32_t n_docs", "const double *budgets", *out]),
        "rank_query_lazy": signature("int32_t", f"{prefix}_rank_query_lazy",
                                     [f"{prefix}_doc_feature_fn fetch", "void *ctx", "int32_t n_docs",
                                      "const double *budgets", *out]),
        "rank_query_workspace_bytes": signature("size_t", f"{prefix}_rank_query_workspace_bytes",
                                                ["int32_t n_docs"]),
        "rank_query_lazy_workspace_bytes": signature("size_t", f"{prefix}_rank_query_lazy_workspace_bytes",
                                                     ["int32_t n_docs"]),
    }


def _query_context(q) -> dict:
    """A query_exit's checkpoints (``ir.lowering.QueryTables``) as C tables."""
    return dict(J=int(q.after.shape[0]), after=_c_ints(q.after), keep=_c_ints(q.keep),
                cutoff=_c_ints((q.rule == QX_CUTOFF).astype(np.int64)), gap=_c_doubles(q.gap))


def _c_ints(a) -> str:
    return ", ".join(str(int(v)) for v in np.asarray(a).ravel())


def _c_hex32(a) -> str:
    return ", ".join(f"0x{int(v):08x}u" for v in np.asarray(a, np.uint32).ravel())


def _c_string(s: str) -> str:
    out = []
    for ch in s.encode("utf-8"):
        c = chr(ch)
        if c in '"\\':
            out.append("\\" + c)
        elif 32 <= ch < 127 and c != "?":  # '?' avoids trigraphs
            out.append(c)
        else:
            out.append(f"\\{ch:03o}")
    return '"' + "".join(out) + '"'


def _words(n):
    return max((n + 31) // 32, 1)


def uint_type(max_value) -> str:
    """The narrowest C unsigned type holding 0..``max_value``."""
    for bits in (8, 16, 32):
        if max_value < 2 ** bits:
            return f"uint{bits}_t"
    raise ValueError(f"a table value of {max_value} does not fit 32 bits")


def tree_layout(t, n_features, inline_leaves) -> dict:
    """The tree nodes of ``t`` (``ir.lowering`` tables) laid out for the C
    walk (docs/c.md, Tables).  Each tree breadth first, so a split's
    children are neighbours (right = left + 1) and one offset finds both.
    A tree of depth d (split levels) is walked in at most d steps, so its
    level-d nodes, all leaves, are never stepped from: they go to the tail
    of the threshold slots (``thr``) and have no entry in ``fm`` and
    ``off``, which hold the "upper" nodes (a slot below ``n_upper`` names
    the same node in all three).  The offset of a split above level d - 1
    is ``left - slot``; that of a split on level d - 1, whose children are
    in the tail, ``left - tail[t]`` (tree t's first tail slot).  A leaf
    above level d (and a tree that is one leaf) points at itself (offset 0)
    and reads feature slot ``n_features``, which the walks never take
    right, so a fixed number of steps parks every row on its leaf without a
    branch on the data.  ``fm`` packs ``feature << 1`` with 1 when a
    missing value goes right.  A leaf's ``thr`` holds its value when
    ``inline_leaves`` (one float32 output per leaf), otherwise the offset of
    its values in ``leaf_value`` / ``leaf_value64`` (leaves only, in slot
    order; ``value`` lists their entries in the lowered pools), an integer
    exact in float32.  Per tree: ``root`` (an upper slot), ``tail`` and
    ``depth``."""
    left, right, roots = t.tn_left, t.tn_right, t.tree_root
    T = roots.shape[0]
    depth = np.zeros(T, np.int64)
    # breadth first for all trees at once, one level per pass: children are
    # appended in their parent's order, left then right
    frontier, ftree, levels, level_tree, level_no = roots.astype(np.int64), np.arange(T), [], [], []
    d = 0
    while frontier.size:
        levels.append(frontier)
        level_tree.append(ftree)
        level_no.append(np.full(frontier.shape[0], d))
        split = left[frontier] >= 0
        depth[ftree[split]] = d + 1
        frontier = np.stack([left[frontier[split]], right[frontier[split]]], 1).ravel().astype(np.int64)
        ftree = np.repeat(ftree[split], 2)
        d += 1
    by_tree = np.argsort(np.concatenate(level_tree), kind="stable")
    nodes = np.concatenate(levels)[by_tree]           # breadth first per tree, trees in order
    tree, level = np.concatenate(level_tree)[by_tree], np.concatenate(level_no)[by_tree]
    n = nodes.shape[0]
    tail_node = (level == depth[tree]) & (depth[tree] > 0)
    upper = ~tail_node
    n_upper = int(upper.sum())
    # slots: the upper nodes in that order, then the tail nodes in that order
    order = np.concatenate([nodes[upper], nodes[tail_node]])          # slot -> lowered node
    slot = np.full(left.shape[0], -1, np.int64)
    slot[order] = np.arange(n)
    up_tree = tree[upper]
    root = slot[roots]
    tail_count = np.bincount(tree[tail_node], minlength=T)
    tail = n_upper + np.concatenate([[0], np.cumsum(tail_count)[:-1]]).astype(np.int64)
    up = order[:n_upper]
    is_split = left[up] >= 0
    lchild, rchild = slot[np.maximum(left[up], 0)], slot[np.maximum(right[up], 0)]
    into_tail = is_split & (lchild >= n_upper)
    base = np.where(into_tail, tail[up_tree], np.arange(n_upper))
    off = np.where(is_split, lchild - base, 0)
    if np.any(is_split & ((rchild != lchild + 1) | (off < 0))):
        raise AssertionError("tree layout: a split's children are not neighbours after it")
    if np.any(into_tail != (is_split & (level[upper] == depth[up_tree] - 1))):
        raise AssertionError("tree layout: the tail holds other than the last level")
    fm = np.where(is_split, (t.tn_feature[up].astype(np.int64) << 1) | (1 - t.tn_missing_left[up]),
                  n_features << 1)
    leaf = left[order] < 0
    leaves = order[leaf]
    if inline_leaves:
        thr = np.where(leaf, t.leaf_value[t.tn_value[order]], t.tn_threshold[order]).astype(np.float64)
        value = np.zeros(0, np.int64)
    else:
        # a leaf's width: its bank's outputs (a bank's trees are node_first .. + node_count)
        width = np.zeros(T, np.int64)
        for b in np.flatnonzero(t.node_kind == KIND_TREES):
            width[t.node_first[b]: t.node_first[b] + t.node_count[b]] = t.node_width[b]
        slot_tree = np.concatenate([up_tree, tree[tail_node]])
        w = width[slot_tree[leaf]]
        first = np.concatenate([[0], np.cumsum(w)[:-1]]).astype(np.int64)
        if first[-1] >= 2 ** 24:
            raise ValueError(f"{int(first[-1]) + 1} leaves' values do not fit the C tables (their offsets "
                             f"are float32 integers, below 2**24)")
        thr = t.tn_threshold[order].astype(np.float64)
        thr[leaf] = first
        value = (np.repeat(t.tn_value[leaves].astype(np.int64), w)
                 + np.arange(int(w.sum())) - np.repeat(first, w))
    return dict(root=root, tail=tail, depth=depth, fm=fm, off=off, thr=thr.astype(np.float32), value=value,
                order=order, n_nodes=n, n_upper=n_upper)


def feature_macros(names, prefix) -> list[tuple[str, int]]:
    """``<PREFIX>_FEATURE_<NAME>`` index constants: each name upper-cased
    with every character outside [A-Z0-9_] replaced by "_".  A name whose
    form is unique keeps it; names sharing one take ``_<index>`` (again,
    until no constant has it): deterministic for a given list of names."""
    base = [f"{prefix.upper()}_FEATURE_{re.sub(r'[^A-Z0-9_]', '_', n.upper())}" for n in names]
    counts: dict[str, int] = {}
    for b in base:
        counts[b] = counts.get(b, 0) + 1
    taken = {b for b in base if counts[b] == 1}
    out = []
    for i, b in enumerate(base):
        if counts[b] > 1:
            b = f"{b}_{i}"
            while b in taken:
                b = f"{b}_{i}"
            taken.add(b)
        out.append((b, i))
    return out


def check_category_words(model, max_words) -> None:
    """Refuse a category set of more than ``max_words`` uint32 words, naming
    its trees node, tree and node.  The generated C keeps every set as a
    ``static const`` array (flash on a microcontroller), so one set of W
    words takes 4 W bytes there; the IR's own limit (``MAX_CATEGORY_WORDS``,
    codes below 2**24) holds everywhere."""
    for nd in model.nodes:
        cs = getattr(nd, "categories", None)
        if cs is None or int(cs.words.max()) <= max_words:
            continue
        m = int(np.argmax(cs.words > max_words))
        tree = _tree_of(nd, m)
        raise ValueError(f"trees node {nd.name!r}, tree {tree} (bank node {m}): its category set has "
                         f"{int(cs.words[m])} words ({4 * int(cs.words[m])} bytes, codes below "
                         f"{32 * int(cs.words[m])}), over the limit of {max_words} words "
                         f"(max_category_words); re-encode the feature's categories as small codes")


def _tree_of(bank, m) -> int:
    """The tree of ``bank`` that holds node ``m`` (for error messages)."""
    for t, r in enumerate(bank.roots.tolist()):
        stack = [r]
        while stack:
            n = stack.pop()
            if n == m:
                return t
            if bank.left[n] >= 0:
                stack += [int(bank.left[n]), int(bank.right[n])]
    return -1


def category_walk(t, lay) -> dict:
    """The category-set splits laid out for the C walk (docs/c.md), or {}
    when every split is numeric (the generated C then has no trace of
    them).  ``tn_cat`` covers the upper slots of ``tree_layout``: 0 for a
    numeric split or a leaf, 1 + k for categorical split k, whose set is
    ``cat_words[k]`` words of ``cat_bits`` from ``cat_begin[k]``, whose
    rule is ``cat_rule[k]`` and whose other values go left when
    ``cat_other[k]`` (the lowered ``tn_cat``, ``tn_cat_words``,
    ``tn_cat_rule``, ``tn_other_left``)."""
    up = lay["order"][:lay["n_upper"]]
    is_cat = t.tn_cat_words[up] > 0
    if not np.any(is_cat):
        return {}
    nodes = up[is_cat]
    idx = np.where(is_cat, np.cumsum(is_cat), 0)
    begin, words = t.tn_cat[nodes].astype(np.int64), t.tn_cat_words[nodes].astype(np.int64)
    rules = {code: f"CAT_{name.upper()}" for name, code in CATEGORY_RULES.items()}
    used = np.unique(t.tn_cat_rule[nodes])
    return dict(idx=_c_ints(idx), idx_t=uint_type(int(idx.max())), begin=_c_ints(begin),
                begin_t=uint_type(max(int(begin.max()), 1)), words=_c_ints(words),
                words_t=uint_type(int(words.max())), rule=_c_ints(t.tn_cat_rule[nodes]),
                # one rule for every split (the usual case: one bank, one source library) is a constant
                one_rule=rules[int(used[0])] if used.shape[0] == 1 else "",
                other=_c_ints(t.tn_other_left[nodes]), bits=_c_hex32(t.cat_bits),
                n=int(nodes.shape[0]), n_words=int(t.cat_bits.shape[0]),
                rules=[(name, code) for code, name in rules.items()])


def _block_rows(n_features) -> int:
    """Rows per block of the batch walk: 16, fewer when the block's copy of
    its rows (float32 values, paid flags) would pass 16 KB of stack."""
    return int(max(1, min(16, 16384 // (5 * (n_features + 1)))))


def render(model, prefix="model", *, tables=None, max_category_words=MAX_CATEGORY_WORDS) -> dict[str, str]:
    """The generated sources as {file name: text}.  ``tables``:
    ``ir.lowering.lower(model)`` when the caller has it already
    (``lower_query(model)`` for a model whose output is a query_exit: its
    C adds ``<prefix>_rank_query``, docs/c.md).
    ``max_category_words``: the most uint32 words one category set may
    take (``check_category_words``); a smaller one suits a small flash."""
    if not _IDENT.match(prefix):
        raise ValueError(f"prefix {prefix!r} must be a C identifier")
    check_category_words(model, max_category_words)
    query = None
    if model.scores_queries:
        # a query-level exit: the tables of its tree bank (the output each document runs) and its checkpoints
        t, qt = lower_query(model) if tables is None else tables
        query = _query_context(qt)
    else:
        t = lower(model) if tables is None else tables
    kinds = set(t.node_kind.tolist())
    task = model.task
    K = task.n_outputs
    P = task.n_proba
    F, G = model.n_features, len(model.groups)
    T = int(t.tree_root.shape[0]) if KIND_TREES in kinds else 0
    top_f64 = bool(t.top_f64)
    # the gap_ge exit's test and #define only where a stage uses it: every other file keeps its bytes
    has_gap = t.top_kind == KIND_CASCADE and bool(np.any(t.ctl_rule == EXIT_GAP_GE))
    score_t = "double" if top_f64 else "float"
    tables = {name: (_c_floats(v) if v.dtype == np.float32 else _c_doubles(v) if v.dtype == np.float64
                     else _c_ints(v))
              for name, v in t.arrays().items() if isinstance(v, np.ndarray)}
    tables.update(top=t.top)
    batch_trees = t.top_kind == KIND_TREES
    walk = {}
    if KIND_TREES in kinds:
        # one float32 value per leaf (no float64 bank, every bank one output wide): the leaf's value
        # sits in its threshold slot and the walk needs no value table (docs/c.md, compact tables)
        inline = not bool(np.any(t.node_f64)) and bool(np.all(t.node_width[t.node_kind == KIND_TREES] == 1))
        lay = tree_layout(t, F, inline)
        fm, off = lay["fm"], lay["off"]
        walk = dict(inline_leaves=inline, root=_c_ints(lay["root"]), tail=_c_ints(lay["tail"]),
                    fm=_c_ints(fm), off=_c_ints(off), thr=_c_floats(lay["thr"]), depth=_c_ints(lay["depth"]),
                    root_t=uint_type(max(int(lay["root"].max()), 1)),
                    tail_t=uint_type(max(int(lay["tail"].max()), 1)),
                    fm_t=uint_type(2 * F + 1), off_t=uint_type(max(int(off.max()), 1)),
                    depth_t=uint_type(max(int(lay["depth"].max()), 1)),
                    tree_cost_zero=not bool(np.any(t.tree_cost)), cat=category_walk(t, lay))
        if not inline:
            walk.update(leaf_value=_c_floats(t.leaf_value[lay["value"]]),
                        leaf_value64=_c_doubles(t.leaf_value64[lay["value"]]) if np.any(t.node_f64) else "")
        if batch_trees:
            walk.update(first=int(t.node_first[t.top]), count=int(t.node_count[t.top]))
    ctx = dict(
        prefix=prefix, PREFIX=prefix.upper(), guard=f"SKINFLINT_{prefix.upper()}_H",
        version=package_version(), hash=model_hash(model)[:16], task_kind=task.kind,
        classes=", ".join(str(c) for c in task.classes),
        class_names=", ".join(_c_string(str(c)) for c in task.classes), n_classes=len(task.classes),
        static_cost=f"{static_cost(model):g}", F=F, F_arr=max(F, 1), G=G, K=K, P=P, P_arr=max(P, 1),
        features=model.features, groups=model.groups,
        feature_names=", ".join(_c_string(f.name) for f in model.features) or '""',
        fw=_words(F), gw=_words(G), tw=_words(max(T, 1)), nw=_words(len(model.nodes)),
        T_arr=max(T, 1), A=t.acc_size, D=t.stack_depth + 1,
        has_trees=KIND_TREES in kinds, has_linear=KIND_LINEAR in kinds,
        has_kernel=KIND_KERNEL in kinds, is_control=t.top_kind >= KIND_CASCADE,
        top_is_cascade=t.top_kind == KIND_CASCADE, top_is_ctree=t.top_kind == KIND_CTREE,
        n_ctl=int(t.ctl_scorer.shape[0]), codes=C_DEFINES + (C_DEFINES_GAP if has_gap else []), has_gap=has_gap,
        needs_exp=KIND_KERNEL in kinds or P > 0, t=tables,
        # the scoring kinds present, in code order: the evaluator's dispatch tests only these
        scoring_kinds=[k for k, c in (("trees", KIND_TREES), ("linear", KIND_LINEAR), ("kernel", KIND_KERNEL))
                       if c in kinds],
        sig=_signatures(prefix, score_t), has_f64=bool(np.any(t.node_f64)), top_f64=top_f64,
        score_t=score_t,
        EXP_HI=_float_constant(numerics.EXP_HI), EXP_LO=_float_constant(numerics.EXP_LO),
        LOG2E=_float_constant(numerics.LOG2E), HALF=_float_constant(numerics.HALF),
        LN2_HI=_float_constant(numerics.LN2_HI), LN2_LO=_float_constant(numerics.LN2_LO),
        C=[_float_constant(c) for c in numerics.EXP_POLY], TWO_M64=_float_constant(numerics.TWO_M64),
        TWO=_float_constant(numerics.TWO),
        walk=walk, batch_trees=batch_trees, block_rows=_block_rows(F),
        feature_macros=feature_macros([f.name for f in model.features], prefix),
        query=query, qsig=_query_signatures(prefix) if query else {},
    )
    ctx["ws_bytes"] = 4 * (ctx["fw"] + ctx["gw"] + ctx["tw"] + ctx["nw"] + ctx["T_arr"] + ctx["A"]
                           + ctx["F_arr"] + 2 * ctx["D"]) + (8 * ctx["A"] if ctx["has_f64"] else 0)
    return {
        f"{prefix}.h": _env.get_template("model.h.j2").render(**ctx),
        f"{prefix}.c": _env.get_template("model.c.j2").render(**ctx),
        "main.c": _env.get_template("main.c.j2").render(**ctx),
        "Makefile": _env.get_template("Makefile.j2").render(**ctx, cflags=" ".join(C_FLAGS)),
    }


def compile_c(model, out_dir, *, prefix="model", precision="float32",
              max_category_words=MAX_CATEGORY_WORDS) -> dict[str, str]:
    """Write the sources to ``out_dir``; returns {file name: path}.
    ``max_category_words``: the most uint32 words (4 bytes each, in flash
    on a microcontroller) one category set may take; a larger set is a
    ValueError naming its node (``check_category_words``).  The default is
    the IR's limit (2**19 words: codes below 2**24); ``CORTEX_M_CATEGORY_WORDS``
    fits the smallest board skinflint ships."""
    if precision != "float32":
        raise ValueError(f"precision {precision!r} is not supported: the numeric contract is float32")
    os.makedirs(out_dir, exist_ok=True)
    paths = {}
    for name, text in render(model, prefix, max_category_words=max_category_words).items():
        path = os.path.join(out_dir, name)
        with open(path, "w") as fh:
            fh.write(text)
        paths[name] = path
    return paths
