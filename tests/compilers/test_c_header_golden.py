"""The generated header of one small model, checked in whole
(golden/tiny.h): any change of the C API (a prototype, a struct field, a
macro, the documentation block) shows up in review as a diff of that file.
To accept a deliberate change: ``python -m tests.compilers.test_c_header_golden``
rewrites it."""
import os
import re

import pytest

from skinflint import __version__
from skinflint.compilers.c import render
from tests.conftest import load_example

GOLDEN = os.path.join(os.path.dirname(__file__), "golden", "tiny.h")


def tiny_header():
    # the package version is the only part that may move without an API change
    text = render(load_example("groups"), "tiny")["tiny.h"]
    return text.replace(f"skinflint {__version__} ", "skinflint <version> ")


def test_header_matches_the_golden_file():
    with open(GOLDEN) as fh:
        assert tiny_header() == fh.read()


@pytest.mark.parametrize("prefix", ["m", "model", "a_rather_long_model_prefix"])
def test_prototypes_are_aligned_for_any_prefix(prefix):
    files = render(load_example("multiclass"), prefix)
    continued = 0
    for name in (f"{prefix}.h", f"{prefix}.c"):
        lines = files[name].splitlines()
        for i, line in enumerate(lines):
            m = re.match(rf"^\w+ {prefix}_\w+\(", line)
            assert m is None or len(line) <= 100, line
            while m and line.endswith(","):
                # a continued parameter list: the next line starts under the first parameter
                i, line = i + 1, lines[i + 1]
                assert re.match(rf"^ {{{m.end()}}}[^ ]", line) and len(line) <= 100, (name, line)
                continued += 1
    assert continued >= 2     # the flat batch entry point never fits one line


def test_generated_c_has_no_dead_branches_or_padded_hex():
    for example in ("trees", "linear_over_trees", "kernel_rbf", "cascade", "multiclass"):
        src = render(load_example(example), "m")["m.c"]
        assert "if (0)" not in src
        # no float literal keeps zeros at the end of its mantissa
        assert not re.search(r"0x[0-9a-f]\.[0-9a-f]*0p", src), example


if __name__ == "__main__":
    with open(GOLDEN, "w") as fh:
        fh.write(tiny_header())
    print(f"wrote {GOLDEN}")
