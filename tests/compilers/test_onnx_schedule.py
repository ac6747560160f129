"""The compile-time tree facts the exact ONNX graph prunes with, against
brute force over every root-to-leaf path of random trees."""
import numpy as np

from skinflint import ir
from skinflint.compilers.onnx_schedule import guaranteed_depths, tree_paths
from skinflint.ir.lowering import lower


def _model(seed):
    m = ir.random_model(seed, kinds=("trees",))
    tab = lower(m)
    return m, tab, tree_paths(tab, tab.tree_root.shape[0])


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
        m, tab, p = _model(seed)
        F = m.n_features
        feat = np.maximum(tab.tn_feature, 0)
        inner = tab.tn_feature >= 0
        mask = np.random.default_rng(seed).random(feat.size) < 0.3
        repeats, above, anc = p.repeats(tab.tn_feature), p.count_above(mask), p.ancestors_where(mask)
        guar = guaranteed_depths(tab, p, F)
        for t, root in enumerate(tab.tree_root):
            paths = _root_paths(tab, root)
            for path in paths:
                for d, n in enumerate(path):
                    assert p.parent[n] == (path[d - 1] if d else -1) and p.depth[n] == d
                    want_rep = inner[n] and any(inner[a] and feat[a] == feat[n] for a in path[:d])
                    assert repeats[n] == want_rep
                    assert above[n] == sum(mask[a] for a in path[:d])
            subtree_has = {n: False for path in paths for n in path}
            for path in paths:
                for d, n in enumerate(path):
                    if mask[n]:
                        for a in path[:d]:
                            subtree_has[a] = True
            assert all(anc[n] == v for n, v in subtree_has.items())
            for f in range(F):
                first = [next((d for d, n in enumerate(path[:-1]) if feat[n] == f), None) for path in paths]
                want = -1 if any(d is None for d in first) else max(first)
                assert guar[t, f] == want, (seed, t, f)
