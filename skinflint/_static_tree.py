"""Write the installed package layout as a tree of links, for static tools.

The subpackages live in top-level folders (``ir/`` is ``skinflint.ir``, see
``[tool.setuptools] package-dir``).  setuptools' editable install maps them
with an import hook, which type checkers and editors cannot run.  This tree
(``skinflint/`` with a link per module of the ``skinflint`` folder and a
link per subpackage folder) is what ``mypy_path`` and pyright's
``extraPaths`` in pyproject.toml point at; ``make`` writes it.
"""
from __future__ import annotations

import os
import shutil
import sys

SUBPACKAGES = ("ir", "trainers", "compilers", "runtimes", "templates", "importers")


def write_tree(dest, repo=None):
    """Create ``dest/skinflint`` linking to the checkout at ``repo``."""
    repo = os.path.abspath(repo or os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    pkg = os.path.join(dest, "skinflint")
    shutil.rmtree(pkg, ignore_errors=True)
    os.makedirs(pkg)
    src = os.path.join(repo, "skinflint")
    for name in sorted(os.listdir(src)):
        path = os.path.join(src, name)
        is_subpackage = os.path.isfile(os.path.join(path, "__init__.py"))   # skinflint/compress/, ...
        if name.endswith((".py", ".typed")) or is_subpackage:
            os.symlink(os.path.relpath(path, pkg), os.path.join(pkg, name))
    for sub in SUBPACKAGES:
        os.symlink(os.path.relpath(os.path.join(repo, sub), pkg), os.path.join(pkg, sub))
    return pkg


if __name__ == "__main__":
    print(write_tree(sys.argv[1] if len(sys.argv) > 1 else os.path.join("build", "static")))
