"""chunkflow's version, as installed (``importlib.metadata``), for ``chunkflow.__version__``.

In a source checkout that was never installed there is no metadata: the version is
then read from the ``pyproject.toml`` beside the package, else ``"0+unknown"``.

Examples
--------
>>> import chunkflow
>>> chunkflow.__version__ == __version__ and __version__[0].isdigit()
True
"""

from __future__ import annotations

import re
from importlib import metadata
from pathlib import Path

__all__ = ["DISTRIBUTION", "__version__"]

# The name on the package index: "chunkflow" there is a different project, so ours is
# published (and installed) as "chunkflow-zarr"; the import name stays "chunkflow".
DISTRIBUTION = "chunkflow-zarr"


def _checkout_version() -> str:
    pyproject = Path(__file__).resolve().parent.parent / "pyproject.toml"
    try:
        text = pyproject.read_text()
    except OSError:
        return "0+unknown"
    found = re.search(r'^version\s*=\s*"([^"]+)"', text, re.MULTILINE)
    return found.group(1) if found else "0+unknown"


try:
    __version__ = metadata.version(DISTRIBUTION)
except metadata.PackageNotFoundError:  # a source checkout, never installed
    __version__ = _checkout_version()
