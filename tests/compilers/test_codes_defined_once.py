"""Issue 14: node kinds, term kinds, exit rules, kernel kinds and the format
version are numbers in ir/codes.py only; every other module imports them."""
import os
import re

from skinflint.compilers.c import render
from skinflint.ir import codes
from tests.conftest import REPO, load_example

NAMES = "|".join(n for n, _ in codes.C_DEFINES + [("KIND_ANYTIME", 0), ("KIND_CASCADE", 0),
                                                 ("KIND_CTREE", 0), ("EXIT_NONE", 0), ("FORMAT_VERSION", 0),
                                                 ("VERSION", 0)])
# an assignment of a number to one of ir/codes.py's names, alone or in a tuple
CODE = re.compile(rf"^\s*(?:(?:{NAMES})\s*,\s*)*(?:{NAMES})\s*=\s*-?\d", re.M)
DEFINE = re.compile(r"#define\s+(?:KIND|TERM|EXIT|KERNEL)_[A-Z_]+\s+-?\d")


def _sources(*folders, ext=(".py",)):
    for folder in folders:
        for root, _, files in os.walk(os.path.join(REPO, folder)):
            for f in files:
                if f.endswith(ext):
                    yield os.path.join(root, f)


def test_only_ir_codes_writes_a_code_number():
    offenders = [p for p in _sources("ir", "runtimes", "compilers", "trainers", "skinflint")
                 if not p.endswith(os.path.join("ir", "codes.py")) and CODE.search(open(p).read())]
    assert offenders == []
    templates = [p for p in _sources("templates", ext=(".j2", ".c", ".h")) if DEFINE.search(open(p).read())]
    assert templates == []


def test_generated_c_defines_every_code_it_tests_from_ir_codes():
    for name in ("linear_over_trees", "kernel_rbf", "cascade"):
        src = render(load_example(name), "m")["m.c"]
        defined = dict(re.findall(r"^#define ((?:KIND|TERM|EXIT|KERNEL)_[A-Z_]+) (-?\d+)$", src, re.M))
        assert defined == {k: str(v) for k, v in codes.C_DEFINES}
        assert {k: getattr(codes, k) for k in defined} == {k: int(v) for k, v in defined.items()}


def test_format_version_is_the_files_version():
    from skinflint import ir
    d = ir.to_dict(load_example("trees"))
    assert (d["format"], d["version"]) == (codes.FORMAT, codes.FORMAT_VERSION)
