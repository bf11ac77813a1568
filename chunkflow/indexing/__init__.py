"""Selections -> per-chunk projections; pure arithmetic, no I/O.

Per-dimension indexers live in :mod:`chunkflow.indexing.dims`; the N-d indexers, which
take their product, in :mod:`chunkflow.indexing.selections`; the point indexers
(``vindex``, masks, numpy's advanced indexing) in :mod:`chunkflow.indexing.points`;
numpy's rules for ``array[...]`` in :mod:`chunkflow.indexing.numpy_rules`; ``...``
expansion in :mod:`chunkflow.indexing.expand`; structured fields in
:mod:`chunkflow.indexing.fields`; the predicates that tell selection kinds apart in
:mod:`chunkflow.indexing.predicates`.

Examples
--------
>>> import numpy as np
>>> from chunkflow.grid import RegularChunkGrid
>>> data = np.arange(20).reshape(4, 5)
>>> grid = RegularChunkGrid(data.shape, (3, 3))
>>> chunks = {}
>>> for coords in grid.all_chunk_coords():
...     chunk = np.zeros(grid.chunks, dtype=data.dtype)  # edge chunks are padded
...     region = grid.chunk_region(coords)
...     chunk[tuple(slice(0, r.stop - r.start) for r in region)] = data[region]
...     chunks[coords] = chunk
>>> indexer = BasicIndexer((slice(1, None), slice(None, None, -2)), grid)
>>> out = np.empty(indexer.shape, dtype=data.dtype)
>>> for p in indexer:
...     out[p.out_selection] = chunks[p.chunk_coords][p.chunk_selection]
>>> bool((out.reshape(indexer.sel_shape) == data[1:, ::-2]).all())
True
"""

from __future__ import annotations

from chunkflow.indexing.expand import expand_ellipsis
from chunkflow.indexing.fields import (
    Fields,
    fields_dtype,
    pop_fields,
    select_fields,
    writable_field,
)
from chunkflow.indexing.numpy_rules import NumpyIndexer
from chunkflow.indexing.points import CoordinateIndexer, MaskIndexer, PointsIndexer
from chunkflow.indexing.predicates import (
    Selection,
    SelectionItem,
    is_basic_selection,
    is_coordinate_selection,
    is_mask_selection,
)
from chunkflow.indexing.selections import (
    BasicIndexer,
    ChunkProjection,
    Indexer,
    OrthogonalIndexer,
)

__all__ = [
    "BasicIndexer",
    "ChunkProjection",
    "CoordinateIndexer",
    "Fields",
    "Indexer",
    "MaskIndexer",
    "NumpyIndexer",
    "OrthogonalIndexer",
    "PointsIndexer",
    "Selection",
    "SelectionItem",
    "expand_ellipsis",
    "fields_dtype",
    "is_basic_selection",
    "is_coordinate_selection",
    "is_mask_selection",
    "pop_fields",
    "select_fields",
    "writable_field",
]
