"""Pinned hashes of the ONNX artifacts of the golden models (see test_golden_hashes.py); a pin
changes only in a commit that changes the emitted artifact on purpose and says why."""
# Re-pinned on purpose by issue 30 item 3 (every graph): outputs come straight from the padding row's
# Slice (no Identity); expf rescales by two table lookups by n (5 ops for 14, the same roundings);
# a negative budget halts at slot 0 without a search when slot 0 is static; the batch schedule
# decodes leaf numbers tree-major and, for one-route trees with costs exact in any order under
# TreeEnsembleRegressor, counts path features in the tree operator (float32 banks: leaf values too).
# Parity tests pass and 17/17 onnxruntime versions are exact (tests/compat/ort_matrix.py).
ONNX_PINS = {'anytime': {'exact': 'd028d97324a10c33',
             'no_budget': '640e33a2772e17b4',
             'no_ml_ops': '025e59066c59f9ae',
             'onnxruntime_1_24': '6e745bc0f723ec74'},
 'cascade': {'exact': '470d58fe076b786a',
             'no_budget': '9dcec0ea3da1cbf6',
             'no_ml_ops': '06578942ccbebae0',
             'onnxruntime_1_24': 'ee576d2117be4257'},
 'classifier_tree': {'exact': '2bd41aafd2174b9b', 'no_budget': '5965679b62d6884d'},
 'greedy_miser': {'exact': '99928fde77d314a8',
                  'fast': 'b5c44f1ef21c8ef4',
                  'no_budget': '2ed0876953a03bb9',
                  'no_ml_ops': '9b276d6af8a44167',
                  'onnxruntime_1_24': '7d79ee12950b02e1'},
 'groups': {'exact': '502f605167883da4',
            'fast': '16e9d09bca2cf56e',
            'no_budget': '6d437fd86022f592',
            'no_ml_ops': '3c61a1e20b71bd13',
            'onnxruntime_1_24': 'edf1ecba2aa94aac'},
 'kernel_poly': {'exact': 'ade739ec5dd16559', 'no_budget': 'b03e8ce36a8025ef'},
 'kernel_rbf': {'exact': '13beb0196941cbb1', 'no_budget': '4b253658072c0b3e'},
 'linear': {'exact': '66fe3f4be6608bf3', 'no_budget': '5d89a5d12995d836'},
 'linear_over_trees': {'exact': '43ee216826f56693',
                       'no_budget': '9a5d12985ded24e4',
                       'no_ml_ops': '967ac0000306e2a3',
                       'onnxruntime_1_24': 'd1c3e02877cfc3e1'},
 'multiclass': {'exact': '86caa630bb4a82de',
                'fast': '8fb3b59d3b8f7550',
                'no_budget': '5b43b52df8d5ad5f',
                'no_ml_ops': '3315d3d53ddfe5c8',
                'onnxruntime_1_24': '71a1b06696cabaf7'},
 'random_17': {'exact': 'dbced30c358a9b0d',
               'fast': '1d7b831d4714387c',
               'no_budget': '2e4e73faac5e0bda',
               'no_ml_ops': 'cb9d40f6061664e6',
               'onnxruntime_1_24': '3a4c1fae0634566c'},
 'random_3': {'exact': 'd099e8bb4bf86244',
              'fast': 'f7c7db79c2b8a38d',
              'no_budget': '5f90afed7543ae2a',
              'no_ml_ops': '2d4addffd4443fcd',
              'onnxruntime_1_24': '83a43699d611f528'},
 'random_40': {'exact': '8ceb02d060d42be1',
               'no_budget': 'beb850134f443d94',
               'no_ml_ops': 'cbed36838ad92af6',
               'onnxruntime_1_24': '1ee7aa0849c661cc'},
 'trees': {'exact': '859dfa31809d3d6e',
           'fast': 'f36d6ac38162bd01',
           'no_budget': '03927ebd998709eb',
           'no_ml_ops': '6672a7f24ad7d136',
           'onnxruntime_1_24': '1f7d03920eb8d7a9'}}

# re-pinned on purpose by issue 14 point 5 (trimmed hex floats, no `if (0) {` chain,
# prototypes aligned for any prefix): the new C passes the host parity suite
# (gcc -O0/-O2, ASan+UBSan, dense and on-demand) and the property test; re-pinned on purpose by
# issue 30 (tree nodes breadth first in per-model narrow types, leaf values in the threshold slot,
# the blocked batch walk): results bit-identical on the host parity suite, tests/parity/test_c_batch.py
# and the property test; re-pinned on purpose by issue 30 item 1 (model.c of tree-bank outputs:
# rows walked eight at a time in registers, a walk without the NaN test for blocks with no missing
# value, no charge pass when a tree costs 0 and every path read paid features; at -Os one compact walk)
