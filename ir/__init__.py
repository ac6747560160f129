"""skinflint's cost-annotated intermediate representation.

Nothing here imports from the trainers, compilers or runtimes.
"""
from .builders import (
    anytime,
    binary_task,
    cascade,
    category_set,
    category_splits,
    classifier_tree,
    concat_trees,
    every,
    feature_input,
    features_from_costs,
    groups_from_costs,
    kernel,
    linear,
    model,
    multiclass_task,
    node_input,
    proximity_gaps,
    query_exit,
    regression_task,
    tree_input,
    trees_from_arrays,
)
from .canonical import model_hash, to_dict, to_json
from .codes import FORMAT
from .codes import FORMAT_VERSION as VERSION
from .costs import features_per_tree, reachable_units, static_cost
from .errors import IRError
from .feature_costs import FeatureCosts
from .inspect import inspect
from .json_io import from_dict, from_json, load, save
from .model import Feature, Group, Model, Task
from .nodes import (
    AnytimeNode,
    CascadeNode,
    CategorySplits,
    ClassifierTreeNode,
    KernelNode,
    LinearNode,
    QueryExitNode,
    TreesNode,
)
from .random_model import random_model  # the function; the module stays importable by path

__all__ = [
    "IRError", "FeatureCosts", "Model", "Feature", "Group", "Task", "TreesNode", "LinearNode", "KernelNode",
    "CascadeNode", "AnytimeNode", "ClassifierTreeNode", "QueryExitNode", "save", "load", "to_json", "from_json",
    "to_dict", "from_dict", "model_hash", "FORMAT", "VERSION", "static_cost", "reachable_units",
    "features_per_tree", "inspect", "trees_from_arrays", "concat_trees", "linear", "kernel",
    "cascade", "anytime", "classifier_tree", "model", "features_from_costs",
    "groups_from_costs", "regression_task", "binary_task", "multiclass_task",
    "feature_input", "tree_input", "node_input", "random_model", "query_exit", "proximity_gaps", "every",
    "CategorySplits", "category_set", "category_splits",
]
