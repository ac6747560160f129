"""The compile-time tree facts the exact ONNX graph is built from, against
brute force over every root-to-leaf path of random trees."""
import numpy as np

from skinflint import ir
from skinflint.compilers.onnx_schedule import tree_paths
from skinflint.ir.lowering import lower


def _root_paths(tab, root):
    """Every root-to-leaf path of a tree, as lists of nodes."""
    out, stack = [], [[int(root)]]
    while stack:
        path = stack.pop()
        n = path[-1]
        if tab.tn_feature[n] < 0:
            out.append(path)
        else:
            stack += [path + [int(tab.tn_left[n])], path + [int(tab.tn_right[n])]]
    return out


def test_path_facts_match_brute_force():
    for seed in range(20):
        tab = lower(ir.random_model(seed, kinds=("trees",)))
        p = tree_paths(tab, tab.tree_root.shape[0])
        leaves = np.flatnonzero(tab.tn_feature < 0)
        leaves = leaves[np.isin(leaves, np.concatenate(p.levels))]
        on_path = p.path_features(tab.tn_feature, leaves)
        row = {int(n): i for i, n in enumerate(leaves)}
        for t, root in enumerate(tab.tree_root):
            for path in _root_paths(tab, root):
                for d, n in enumerate(path):
                    assert p.parent[n] == (path[d - 1] if d else -1) and p.depth[n] == d
                    assert p.tree_of[n] == t
                want = [int(tab.tn_feature[n]) for n in path[:-1]]
                got = on_path[row[path[-1]]]
                assert got[:len(want)].tolist() == want and np.all(got[len(want):] == -1)
                assert p.tree_depth[t] >= len(want)
