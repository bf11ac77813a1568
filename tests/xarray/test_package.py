"""One xarray package: chunkflow.xarray, its former module, and the real xarray beside it."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

xr = pytest.importorskip("xarray")

ROOT = Path(__file__).resolve().parents[2]


def test_former_module_names_the_same_classes() -> None:
    import chunkflow.xarray as package
    import chunkflow.xarray_backend as former

    for name in package.__all__:
        assert getattr(former, name) is getattr(package, name)


@pytest.mark.slow
def test_package_does_not_shadow_xarray() -> None:
    """Inside chunkflow.xarray, ``import xarray`` is the xarray package, whichever of the
    two is imported first (a fresh interpreter for each order)."""
    probes = {
        "chunkflow first": "import chunkflow.xarray, xarray",
        "xarray first": "import xarray, chunkflow.xarray",
    }
    check = (
        "; import sys, chunkflow.xarray.datastore as d, chunkflow.xarray.entrypoint as e"
        "; assert sys.modules['xarray'].__name__ == 'xarray'"
        "; assert sys.modules['xarray'].__file__.endswith('xarray' + __import__('os').sep"
        " + '__init__.py') and 'chunkflow' not in sys.modules['xarray'].__file__"
        "; assert d.Variable is xarray.Variable and e.Dataset is xarray.Dataset"
        "; print('ok')"
    )
    for label, first in probes.items():
        done = subprocess.run([sys.executable, "-c", first + check], capture_output=True,
                              text=True, env={**os.environ, "PYTHONPATH": str(ROOT)},
                              timeout=120)
        assert done.stdout.strip() == "ok", (label, done.stderr[-2000:])
