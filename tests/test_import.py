"""Packaging details a user meets first."""
import shutil
import subprocess
import sys
from pathlib import Path

import cwkit


def test_unbuilt_source_tree_says_how_to_build(tmp_path):
    """A copy of the package without its compiled extension fails with instructions."""
    pkg = Path(cwkit.__file__).parent
    dest = tmp_path / "cwkit"
    shutil.copytree(pkg, dest, ignore=shutil.ignore_patterns("*.so", "*.pyd", "__pycache__"))
    proc = subprocess.run([sys.executable, "-c", "import cwkit"], cwd=tmp_path,
                          capture_output=True, text=True)
    assert proc.returncode != 0
    assert "ImportError" in proc.stderr
    assert "cwkit._core is not built" in proc.stderr and "pip install ." in proc.stderr


def test_version_and_public_names():
    assert cwkit.__version__
    for name in cwkit.__all__:
        assert hasattr(cwkit, name), name
