"""Pinned hashes of the ONNX artifacts of the golden models (see test_golden_hashes.py); a pin
changes only in a commit that changes the emitted artifact on purpose and says why."""
# Re-pinned on purpose by issue 30 item 3 (every graph): outputs come straight from the padding row's
# Slice (no Identity); expf rescales by two table lookups by n (5 ops for 14, the same roundings);
# a negative budget halts at slot 0 without a search when slot 0 is static; the batch schedule
# decodes leaf numbers tree-major and, for one-route trees with costs exact in any order under
# TreeEnsembleRegressor, counts path features in the tree operator (float32 banks: leaf values too).
# Parity tests pass and 17/17 onnxruntime versions are exact (tests/compat/ort_matrix.py).
# Again (issue 30 item 3): a one-output bank's bias enters its tree-major sum by a Pad of the leaf
# starts (or voted values) instead of a Concat of the block; a region's costs without groups sum
# the touched features' costs directly (no slots).
ONNX_PINS = {'anytime': {'exact': 'd028d97324a10c33',
             'no_budget': '640e33a2772e17b4',
             'no_ml_ops': '025e59066c59f9ae',
             'onnxruntime_1_24': '6e745bc0f723ec74'},
 'cascade': {'exact': '14107b35984792ab',
             'no_budget': '344443c7d4b32d58',
             'no_ml_ops': '854764dea2034897',
             'onnxruntime_1_24': '3714c5b8422590fe'},
 'classifier_tree': {'exact': '2bd41aafd2174b9b', 'no_budget': '5965679b62d6884d'},
 'greedy_miser': {'exact': '74d2e348cfbd500c',
                  'fast': 'b5c44f1ef21c8ef4',
                  'no_budget': 'f8be2e527844b648',
                  'no_ml_ops': '19ab27febeefe918',
                  'onnxruntime_1_24': '639a406c9aa332bb'},
 'groups': {'exact': '0065090ca4ae26e0',
            'fast': '16e9d09bca2cf56e',
            'no_budget': '9b3e56ef0604f605',
            'no_ml_ops': '1f12873d254fac1b',
            'onnxruntime_1_24': '1a984598316aed27'},
 'kernel_poly': {'exact': 'ade739ec5dd16559', 'no_budget': 'b03e8ce36a8025ef'},
 'kernel_rbf': {'exact': '13beb0196941cbb1', 'no_budget': '4b253658072c0b3e'},
 'linear': {'exact': '66fe3f4be6608bf3', 'no_budget': '5d89a5d12995d836'},
 'linear_over_trees': {'exact': '0f250481aa331c1c',
                       'no_budget': 'f50877f5469c235a',
                       'no_ml_ops': '373a1578381b447c',
                       'onnxruntime_1_24': 'd2fa5f50c576b74a'},
 'multiclass': {'exact': '9f22640e6ca7b8e3',
                'fast': '8fb3b59d3b8f7550',
                'no_budget': '94583438d20c265f',
                'no_ml_ops': '4bbaba7b0906e42e',
                'onnxruntime_1_24': '4afe74b94037dde3'},
 'random_17': {'exact': '019c5ec15aa02b1c',
               'fast': '1d7b831d4714387c',
               'no_budget': 'ac79967203c4a88e',
               'no_ml_ops': 'b1ffcf13108a880e',
               'onnxruntime_1_24': '9c4ad4493d41324b'},
 'random_3': {'exact': 'ba84ee817e198dfa',
              'fast': 'f7c7db79c2b8a38d',
              'no_budget': '5c5e10e7bfdd376d',
              'no_ml_ops': '4a53228b4f488e48',
              'onnxruntime_1_24': 'fc752aa69c73fa10'},
 'random_40': {'exact': '8ceb02d060d42be1',
               'no_budget': 'beb850134f443d94',
               'no_ml_ops': 'cbed36838ad92af6',
               'onnxruntime_1_24': '1ee7aa0849c661cc'},
 'trees': {'exact': '1fef6fc4258f21ba',
           'fast': 'f36d6ac38162bd01',
           'no_budget': '05c118d01d0efaa8',
           'no_ml_ops': '61ded2c6bd7e4669',
           'onnxruntime_1_24': 'cea28c91426ae617'}}

# re-pinned on purpose by issue 14 point 5 (trimmed hex floats, no `if (0) {` chain,
# prototypes aligned for any prefix): the new C passes the host parity suite
# (gcc -O0/-O2, ASan+UBSan, dense and on-demand) and the property test; re-pinned on purpose by
# issue 30 (tree nodes breadth first in per-model narrow types, leaf values in the threshold slot,
# the blocked batch walk): results bit-identical on the host parity suite, tests/parity/test_c_batch.py
# and the property test; re-pinned on purpose by issue 30 item 1 (model.c of tree-bank outputs:
# rows walked eight at a time in registers, a walk without the NaN test for blocks with no missing
# value, no charge pass when a tree costs 0 and every path read paid features; at -Os one compact walk)
