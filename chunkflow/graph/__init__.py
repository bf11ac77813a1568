"""Dask graphs on the chunk grid.

- :func:`to_dask` reads any basic selection as a lazy dask array, one ``Blockwise``
  layer whose blocks fall on chunk (shard) edges, at constant cost per array;
- :func:`store` writes dask arrays with one task per chunk-aligned write block.
"""

from chunkflow.graph.read import to_dask
from chunkflow.graph.store import aligned_edges, store

__all__ = ["aligned_edges", "store", "to_dask"]
