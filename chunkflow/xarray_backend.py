"""Deprecated location of the xarray engine: use :mod:`chunkflow.xarray`.

Kept for one release so that installs whose ``xarray.backends`` entry point (or code)
names ``chunkflow.xarray_backend:ChunkflowBackendEntrypoint`` keep working. It warns
nothing on import: xarray's plugin discovery imports it for every ``open_dataset``
while such an install's metadata is current.
"""

from chunkflow.xarray import (
    ChunkflowArrayWrapper,
    ChunkflowBackendEntrypoint,
    ChunkflowDataStore,
    DimensionNamesError,
)

__all__ = ["ChunkflowArrayWrapper", "ChunkflowBackendEntrypoint", "ChunkflowDataStore",
           "DimensionNamesError"]
