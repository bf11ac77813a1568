"""Dask graphs on the chunk grid.

:func:`store` writes dask arrays into chunkflow arrays with one task per chunk-aligned
write block. Reading selections as dask arrays and map-over-chunks jobs come later.
"""

from chunkflow.graph.store import aligned_edges, store

__all__ = ["aligned_edges", "store"]
