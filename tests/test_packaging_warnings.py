"""Building and installing skinflint prints no deprecation or packaging
warning (issue 32 item 3: the license table and undeclared template folders
did)."""
import subprocess
import sys

import pytest

from tests.conftest import REPO


@pytest.mark.slow
def test_building_the_wheel_warns_about_nothing(tmp_path):
    r = subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "-v",
                        "-w", str(tmp_path), REPO], capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, r.stderr[-2000:]
    out = r.stdout + r.stderr
    assert "Warning" not in out and "deprecated" not in out.lower(), \
        [ln for ln in out.splitlines() if "arning" in ln or "deprecat" in ln.lower()][:10]
    import zipfile
    wheel, = tmp_path.glob("skinflint-*.whl")
    names = zipfile.ZipFile(wheel).namelist()
    assert "skinflint/templates/c/model.c.j2" in names
    assert "skinflint/templates/embedded/boards/microbit/link.ld" in names
    assert any(n.endswith(".dist-info/licenses/LICENSE") for n in names)
