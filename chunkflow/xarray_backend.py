"""Deprecated location of the xarray engine: use :mod:`chunkflow.xarray`.

Kept for one release so that installs whose ``xarray.backends`` entry point (or code)
names ``chunkflow.xarray_backend:ChunkflowBackendEntrypoint`` keep working. It warns
nothing on import: xarray's plugin discovery imports it for every ``open_dataset``
while such an install's metadata is current. The names are looked up in
:mod:`chunkflow.xarray` when first asked for, so importing this alias loads nothing.
"""

from __future__ import annotations

from importlib import import_module
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from chunkflow.xarray import (
        ChunkflowArrayWrapper,
        ChunkflowBackendEntrypoint,
        ChunkflowDataStore,
        DimensionNamesError,
    )

__all__ = ["ChunkflowArrayWrapper", "ChunkflowBackendEntrypoint", "ChunkflowDataStore",
           "DimensionNamesError"]


def __getattr__(name: str) -> Any:
    if name not in __all__:
        raise AttributeError(f"module 'chunkflow.xarray_backend' has no attribute {name!r}")
    return getattr(import_module("chunkflow.xarray"), name)


def __dir__() -> list[str]:
    return sorted(__all__)
