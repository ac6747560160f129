"""Every integer code of the IR and of its evaluators, and the format
version, defined once.

The JSON loader (``ir.nodes``), the lowering (``ir.lowering``), the numba VM
(``runtimes/_vm.py``), the ONNX compiler and the C template (its
``#define``s are rendered from ``C_DEFINES``) all read these names; none
writes a number of its own.
"""

FORMAT = "skinflint-ir"
FORMAT_VERSION = 1          # the "version" field of a file whose tree banks are all float32
# Version 2 adds float64 tree banks (a ``trees`` node with "precision":
# "float64").  A file is written with the lowest version that holds it, so a
# model with float32 banks only keeps version 1 and its bytes; both load.
FORMAT_VERSION_FLOAT64 = 2
# Version 3 adds the query-level exit (a ``query_exit`` node, docs/ir.md):
# written only by a model that has one, so every other model keeps its
# version and bytes; files of versions 1 and 2 load unchanged.
FORMAT_VERSION_QUERY = 3
# Version 4 adds category-set splits in tree banks (docs/ir.md, "Categorical
# splits"): written only by a model with one, so every other model keeps its
# version and bytes.
FORMAT_VERSION_CATEGORICAL = 4
# Version 5 adds the cascade exit rule ``gap_ge`` (docs/ir.md, "cascade"):
# written only by a model with a stage that uses it, so every other model
# keeps its version and bytes.
FORMAT_VERSION_GAP = 5
FORMAT_VERSIONS = (FORMAT_VERSION, FORMAT_VERSION_FLOAT64, FORMAT_VERSION_QUERY, FORMAT_VERSION_CATEGORICAL,
                   FORMAT_VERSION_GAP)

# Precisions of a ``trees`` node: its leaf values, base score and sum.
PRECISIONS = ("float32", "float64")

# Node kinds, as the lowered tables' node_kind holds them.  Scoring kinds
# come first: ``kind <= KIND_KERNEL`` means a scoring node.
KIND_TREES, KIND_LINEAR, KIND_KERNEL = 0, 1, 2
KIND_CASCADE, KIND_ANYTIME, KIND_CTREE = 3, 4, 5
# a query-level exit: scores whole queries, so no per-row evaluator runs it
KIND_QUERY_EXIT = 6
NODE_KIND_CODES = {"trees": KIND_TREES, "linear": KIND_LINEAR, "kernel": KIND_KERNEL,
                   "cascade": KIND_CASCADE, "anytime": KIND_ANYTIME, "classifier_tree": KIND_CTREE,
                   "query_exit": KIND_QUERY_EXIT}

# What a linear node's input (a lowered "term") reads.
TERM_FEATURE, TERM_TREE, TERM_NODE = 0, 1, 2
TERM_KINDS = {"feature": TERM_FEATURE, "tree": TERM_TREE, "node": TERM_NODE}

# Cascade exit rules (a stage with EXIT_NONE never exits early).  The first
# four test one margin component; EXIT_GAP_GE tests the gap between the
# largest and the second-largest component of the stage's vector (the
# maximum-likelihood rule of multiclass Early Exit, docs/ir.md).
EXIT_NONE, EXIT_LE, EXIT_GE, EXIT_ABS_GE, EXIT_GAP_GE = 0, 1, 2, 3, 4
EXIT_RULES = {"none": EXIT_NONE, "le": EXIT_LE, "ge": EXIT_GE, "abs_ge": EXIT_ABS_GE, "gap_ge": EXIT_GAP_GE}

# The rule of a query-level exit at one checkpoint (docs/ir.md): "proximity"
# drops the documents past rank ``keep`` scoring at least ``gap`` below the
# query's keep-th best (Cambazoglu et al. 2010); "cutoff" keeps the top
# ``keep`` (a multi-stage ranking cascade).
QX_PROXIMITY, QX_CUTOFF = 0, 1
QUERY_EXIT_RULES = {"proximity": QX_PROXIMITY, "cutoff": QX_CUTOFF}

# Which float values a categorical split reads as category codes (one rule
# per tree bank, the source library's): "truncate" (LightGBM: x > -1 is
# category trunc(x)), "truncate_nonnegative" (XGBoost: x >= 0 is category
# trunc(x)), "integer" (scikit-learn's encoder, skinflint's booster: x >= 0
# with x == trunc(x) is category x).  Any other non-NaN value is not a code.
CAT_TRUNCATE, CAT_TRUNCATE_NONNEGATIVE, CAT_INTEGER = 0, 1, 2
CATEGORY_RULES = {"truncate": CAT_TRUNCATE, "truncate_nonnegative": CAT_TRUNCATE_NONNEGATIVE,
                  "integer": CAT_INTEGER}
# A category set holds at most this many 32-bit words: codes below 2**24,
# the largest range XGBoost's float categories address exactly.
MAX_CATEGORY_WORDS = 1 << 19

# Kernel functions of a kernel node.
KERNEL_LINEAR, KERNEL_RBF, KERNEL_POLY = 0, 1, 2
KERNELS = {"linear": KERNEL_LINEAR, "rbf": KERNEL_RBF, "poly": KERNEL_POLY}

# The codes the generated C evaluator tests, in the order it defines them.
C_DEFINES = [("KIND_TREES", KIND_TREES), ("KIND_LINEAR", KIND_LINEAR), ("KIND_KERNEL", KIND_KERNEL),
             ("TERM_FEATURE", TERM_FEATURE), ("TERM_TREE", TERM_TREE), ("TERM_NODE", TERM_NODE),
             ("KERNEL_LINEAR", KERNEL_LINEAR), ("KERNEL_RBF", KERNEL_RBF), ("KERNEL_POLY", KERNEL_POLY),
             ("EXIT_LE", EXIT_LE), ("EXIT_GE", EXIT_GE), ("EXIT_ABS_GE", EXIT_ABS_GE)]
# Defined in the generated C only when the model has a ``gap_ge`` stage, so
# every other generated file keeps its bytes.
C_DEFINES_GAP = [("EXIT_GAP_GE", EXIT_GAP_GE)]
