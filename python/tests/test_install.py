"""The package under test is the installed wheel, not the source tree."""
from __future__ import annotations

import pathlib
import subprocess
import sys

import backplane
from conftest import REPO


def test_imported_from_the_installed_wheel():
    where = pathlib.Path(backplane.__file__).resolve()
    assert REPO / "python" not in where.parents, f"imported from the source tree: {where}"
    assert "site-packages" in where.parts
    assert backplane.__version__ == "0.1.0"


def test_import_in_a_fresh_interpreter():
    out = subprocess.run([sys.executable, "-c", "import backplane; print(len(backplane.ops.__all__))"],
                         check=True, capture_output=True, text=True, cwd="/")
    assert int(out.stdout) >= 250
