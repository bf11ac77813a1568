"""Sphinx configuration of chunkflow's API reference.

Build it from the repository root (warnings are errors)::

    python -m pip install -e ".[docs]"
    python -m sphinx -W --keep-going -b html docs docs/_build/html

The pages name every object by the public name users import (``chunkflow.open``,
``chunkflow.storage.LocalStore``), never by the internal module that defines it, so
moving code between internal modules does not change the reference.
"""

from __future__ import annotations

import importlib
import os
import sys
import warnings
from typing import Any

from sphinx.util import logging

# Document the checkout this file sits in, not another installed copy.
sys.path.insert(0, os.path.abspath(".."))

import chunkflow  # noqa: E402

project = "chunkflow"
copyright = "chunkflow developers"
author = "chunkflow developers"
version = release = chunkflow.__version__

extensions = [
    "sphinx.ext.autodoc",
    "sphinx.ext.autosummary",
    "numpydoc",
]

templates_path = ["_templates"]
exclude_patterns = ["_build"]

# One page per object, generated at build time under api/generated/ (not committed).
autosummary_generate = True
autosummary_imported_members = False
autodoc_default_options = {"member-order": "bysource"}
autodoc_typehints = "signature"
autodoc_typehints_format = "short"
# Signatures name an argument's type by its alias (``store: StoreLike``), linked to the
# "Argument types" page, rather than spelling out the union.
autodoc_type_aliases = {
    alias: f"{package}.{alias}"
    for package, aliases in {
        "chunkflow.storage": ("StoreLike",),
        "chunkflow.cache": ("CacheLike",),
        "chunkflow.sync": ("SynchronizerLike",),
        "chunkflow.grid": ("ShapeLike", "ChunksLike", "KeyEncodingLike"),
        "chunkflow.metadata": ("FillValueLike", "JSONValue"),
        "chunkflow.codecs": ("CodecLike",),
        "chunkflow.indexing": ("Selection", "SelectionItem"),
        "chunkflow.graph": ("ArraySource", "ReductionSource", "BlockChunks", "SchedulerLike"),
    }.items()
    for alias in aliases
}

# The class template lists members through autodoc; numpydoc's own member tables
# would list them a second time.
numpydoc_show_class_members = False
numpydoc_class_members_toctree = False
numpydoc_xref_param_type = False

# numpydoc reports a malformed docstring (an unknown section, say) with a Python
# warning, which -W does not see: pass its warnings on as Sphinx warnings, so they
# fail the build like every other docstring error.
_numpydoc_logger = logging.getLogger("numpydoc")
_show_warning = warnings.showwarning


def _numpydoc_warnings_to_sphinx(
    message: Any, category: Any, filename: str, lineno: int, file: Any = None, line: Any = None
) -> None:
    if "numpydoc" in filename:
        _numpydoc_logger.warning(str(message))
    else:
        _show_warning(message, category, filename, lineno, file, line)


warnings.showwarning = _numpydoc_warnings_to_sphinx
warnings.filterwarnings("always", module="numpydoc")

# No intersphinx: the build must work without network access.
nitpicky = False

html_theme = "alabaster"
html_title = f"chunkflow {release}"
html_static_path: list[str] = []


# Show a class's bases by the names users import them by: a chunkflow base becomes
# its public name (``chunkflow.storage.Store``), an internal mixin (which has none) is
# left out, and a base from elsewhere (``Exception``) stays as it is.
_PUBLIC_PACKAGES = (
    "chunkflow.storage",
    "chunkflow.cache",
    "chunkflow.sync",
    "chunkflow.errors",
    "chunkflow.codecs",
    "chunkflow.graph",
    "chunkflow.metadata",
    "chunkflow.indexing",
    "chunkflow.testing",
    "chunkflow",
)


def _public_names() -> dict[int, str]:
    """Map each public class (by ``id``) to the first public name found for it."""
    names: dict[int, str] = {}
    for package in _PUBLIC_PACKAGES:
        module = importlib.import_module(package)
        for name in getattr(module, "__all__", ()):
            obj = getattr(module, name)
            if isinstance(obj, type):
                names.setdefault(id(obj), f"{package}.{name}")
    return names


def _public_bases(app: Any, name: str, obj: Any, options: Any, bases: list) -> None:
    public = _public_names()
    kept: list = []
    for base in bases:
        module = getattr(base, "__module__", "") or ""
        if id(base) in public:
            kept.append(f":py:class:`{public[id(base)]}`")
        elif not module.startswith("chunkflow"):
            kept.append(base)
    bases[:] = kept or [object]


def setup(app: Any) -> None:
    app.connect("autodoc-process-bases", _public_bases)
