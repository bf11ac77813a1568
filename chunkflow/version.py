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

__all__ = ["__version__"]


def _checkout_version() -> str:
    pyproject = Path(__file__).resolve().parent.parent / "pyproject.toml"
    try:
        text = pyproject.read_text()
    except OSError:
        return "0+unknown"
    found = re.search(r'^version\s*=\s*"([^"]+)"', text, re.MULTILINE)
    return found.group(1) if found else "0+unknown"


try:
    __version__ = metadata.version("chunkflow")
except metadata.PackageNotFoundError:  # a source checkout, never installed
    __version__ = _checkout_version()
