"""N-d indexers: a selection on the whole array -> one projection per chunk touched.

Reading::

    out = np.empty(indexer.shape, dtype)
    for p in indexer:
        out[p.out_selection] = chunk(p.chunk_coords)[p.chunk_selection]
    result = out.reshape(indexer.sel_shape)

Writing (``value`` broadcast to ``indexer.sel_shape``, reshaped to ``indexer.shape``)::

    for p in indexer:
        chunk(p.chunk_coords)[p.chunk_selection] = value[p.out_selection]

Chunks are full chunk-shaped arrays, also at the edges of the array.

Examples
--------
>>> import numpy as np
>>> from chunkflow.grid import RegularChunkGrid
>>> grid = RegularChunkGrid((6, 5), (4, 4))
>>> for p in BasicIndexer((slice(2, 6), 1), grid):
...     print(p.chunk_coords, p.chunk_selection, p.out_selection)
(0, 0) (slice(2, 4, None), 1) (slice(0, 2, None),)
(1, 0) (slice(0, 2, None), 1) (slice(2, 4, None),)
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from functools import partial
from itertools import product
from typing import TYPE_CHECKING, Any, NamedTuple, Protocol

import numpy as np

from chunkflow.errors import InvalidSelectionError
from chunkflow.grid import RegularChunkGrid
from chunkflow.indexing.dims import (
    DimProjection,
    as_int,
    bool_array_dim,
    expand_selection,
    int_array_dim,
    int_dim,
    is_array_like,
    slice_dim,
)

if TYPE_CHECKING:
    from chunkflow.indexing.predicates import Selection, SelectionItem

__all__ = [
    "BasicIndexer",
    "ChunkProjection",
    "Indexer",
    "OrthogonalIndexer",
    "Reshaping",
]


class ChunkProjection(NamedTuple):
    """What one chunk contributes to a selection.

    Attributes
    ----------
    chunk_coords : tuple of int
        Grid coordinates of the chunk.
    chunk_selection : tuple
        Applies to the full chunk-shaped array (also for edge chunks).
    out_selection : tuple
        Applies to the output buffer of shape ``indexer.shape``.
    is_complete_chunk : bool
        The selection covers every in-bounds element of the chunk, in order, with unit
        positive steps and no dropped axes, and both selections are plain slices: the
        caller may decode straight into ``out[out_selection]`` or encode
        ``value[out_selection]`` as the whole chunk without reading it first.
    """

    chunk_coords: tuple[int, ...]
    chunk_selection: tuple[Any, ...]
    out_selection: tuple[Any, ...]
    is_complete_chunk: bool


class Indexer(Protocol):
    """What the array layer needs from an indexer.

    ``shape`` is the buffer the projections fill, ``sel_shape`` that buffer reshaped
    (in the plan's order of dimensions) and ``result_shape`` the shape of the result.
    """

    shape: tuple[int, ...]
    sel_shape: tuple[int, ...]
    drop_axes: tuple[int, ...]
    nchunks: int

    def __iter__(self) -> Iterator[ChunkProjection]: ...

    @property
    def reorders(self) -> bool:
        """Whether the result's dimensions are in another order than the plan's (then
        values written go through :meth:`value_in_plan_order`)."""

    @property
    def result_shape(self) -> tuple[int, ...]: ...

    def result(self, buffer: np.ndarray) -> np.ndarray: ...

    def value_in_plan_order(self, value: np.ndarray) -> np.ndarray: ...


class Reshaping:
    """The results of indexers whose ``sel_shape`` is the result's shape."""

    sel_shape: tuple[int, ...]
    reorders = False

    @property
    def result_shape(self) -> tuple[int, ...]:
        """The shape of the result."""
        return self.sel_shape

    def result(self, buffer: np.ndarray) -> np.ndarray:
        """The result from the filled buffer (a view of it)."""
        return buffer.reshape(self.sel_shape)

    def value_in_plan_order(self, value: np.ndarray) -> np.ndarray:
        """A value for the result, as the buffer's projections take it (unchanged)."""
        return value


# tuple.__new__ builds the NamedTuple in C; the Python-level __new__ would dominate the
# per-chunk cost of large aligned reads.
_make_projection = partial(tuple.__new__, ChunkProjection)


class _ProductIndexer(Reshaping):
    """Shared machinery: the projection is the product of per-dimension projections."""

    #: Whether chunk selections index as numpy does (arrays broadcast together with
    #: the integers) rather than per axis through ``np.ix_``; for callers that arrange
    #: for both to agree.
    pointwise = False

    def __init__(self, dims: list[DimProjection], grid: RegularChunkGrid) -> None:
        self.grid = grid
        self._dims = dims
        # One plain loop: this runs on every read and write, small ones included.
        shape, drop_axes, nchunks, nfancy = [], [], 1, 0
        for i, d in enumerate(dims):
            if d.dropped:
                drop_axes.append(i)
            else:
                shape.append(d.length)
            nchunks *= len(d.chunk_indices)
            nfancy += d.fancy
        self.shape: tuple[int, ...] = tuple(shape)
        self.sel_shape: tuple[int, ...] = self.shape
        self.drop_axes: tuple[int, ...] = tuple(drop_axes)
        self.nchunks: int = nchunks
        # Several array indices (or one plus an integer, which numpy also treats as an
        # advanced index) would broadcast together instead of acting per axis.
        self._needs_ix = not self.pointwise and (
            nfancy > 1 or (nfancy == 1 and bool(self.drop_axes)))

    def __iter__(self) -> Iterator[ChunkProjection]:
        dims = self._dims
        coords = product(*[d.chunk_indices for d in dims])
        chunk_sels: Iterator[tuple[Any, ...]] = product(*[d.chunk_selections for d in dims])
        out_sels: Iterator[tuple[Any, ...]] = product(
            *[d.out_selections for d in dims if not d.dropped])
        complete = map(all, product(*[d.complete for d in dims]))
        if self._needs_ix:
            chunk_sels = map(partial(_ix, lengths=self.grid.chunks), chunk_sels)
            out_sels = map(partial(_ix, lengths=self.shape), out_sels)
        return map(_make_projection, zip(coords, chunk_sels, out_sels, complete))

    def __len__(self) -> int:
        return self.nchunks

    def __repr__(self) -> str:
        return (f"{type(self).__name__}(shape={self.shape}, nchunks={self.nchunks}, "
                f"grid={self.grid})")


def _ix(selection: tuple[Any, ...], lengths: Sequence[int]) -> tuple[Any, ...]:
    """Make array entries act per axis (like ``np.ix_``), converting slices to ranges.

    Integers stay: numpy broadcasts them with the arrays, which drops their axes.
    """
    narrays = sum(isinstance(s, np.ndarray) for s in selection)
    nints = sum(isinstance(s, int) for s in selection)
    if narrays == 0 or (narrays == 1 and nints == 0):
        return selection  # a single array index already acts on its own axis
    kept = [i for i, s in enumerate(selection) if not isinstance(s, int)]
    result = list(selection)
    for j, i in enumerate(kept):
        s = selection[i]
        arr = np.arange(*s.indices(lengths[i])) if isinstance(s, slice) else s
        result[i] = arr.reshape((1,) * j + (-1,) + (1,) * (len(kept) - j - 1))
    return tuple(result)


class BasicIndexer(_ProductIndexer):
    """Integers, slices (any non-zero step) and ``...``; missing trailing axes are full.

    Examples
    --------
    >>> from chunkflow.grid import RegularChunkGrid
    >>> idx = BasicIndexer((slice(None, None, -2), -1), RegularChunkGrid((5, 3), (2, 2)))
    >>> idx.shape, idx.drop_axes, idx.nchunks
    ((3,), (1,), 3)
    >>> [p.chunk_coords for p in idx]
    [(2, 1), (1, 1), (0, 1)]
    """

    def __init__(self, selection: Selection, grid: RegularChunkGrid) -> None:
        sel = expand_selection(selection, grid.shape)
        dims = []
        for dim, (entry, size, chunk) in enumerate(zip(sel, grid.shape, grid.chunks)):
            if isinstance(entry, slice):
                dims.append(slice_dim(entry, dim, size, chunk, grid.shape))
                continue
            index = as_int(entry)
            if index is None:
                raise InvalidSelectionError(
                    f"basic selection entries must be integers, slices or '...', got "
                    f"{entry!r} for dimension {dim} of shape {grid.shape}; use oindex / "
                    "vindex for array selections"
                )
            dims.append(int_dim(index, dim, size, chunk, grid.shape))
        super().__init__(dims, grid)


class OrthogonalIndexer(_ProductIndexer):
    """Per-axis selections: integers, slices, integer arrays and boolean arrays.

    Each array picks along its own axis (``oindex`` semantics, like ``np.ix_``).

    Examples
    --------
    >>> import numpy as np
    >>> from chunkflow.grid import RegularChunkGrid
    >>> idx = OrthogonalIndexer(([3, 0], slice(1, 3)), RegularChunkGrid((4, 4), (2, 2)))
    >>> idx.shape
    (2, 2)
    >>> [(p.chunk_coords, p.out_selection) for p in idx]
    [((0, 0), (slice(1, 2, None), slice(0, 1, None))), ((0, 1), (slice(1, 2, None), \
slice(1, 2, None))), ((1, 0), (slice(0, 1, None), slice(0, 1, None))), ((1, 1), \
(slice(0, 1, None), slice(1, 2, None)))]
    """

    def __init__(self, selection: Selection, grid: RegularChunkGrid) -> None:
        sel = expand_selection(selection, grid.shape)
        dims = [
            _orthogonal_dim(entry, dim, size, chunk, grid.shape)
            for dim, (entry, size, chunk) in enumerate(zip(sel, grid.shape, grid.chunks))
        ]
        super().__init__(dims, grid)


def _orthogonal_dim(
    entry: SelectionItem, dim: int, size: int, chunk: int, shape: tuple[int, ...]
) -> DimProjection:
    if isinstance(entry, slice):
        return slice_dim(entry, dim, size, chunk, shape)
    index = as_int(entry)
    if index is not None:
        return int_dim(index, dim, size, chunk, shape)
    if is_array_like(entry):
        arr = np.asarray(entry)
        if arr.dtype == bool:
            return bool_array_dim(arr, dim, size, chunk, shape)
        if arr.dtype.kind in "iu" or arr.size == 0:
            return int_array_dim(arr, dim, size, chunk, shape)
        raise InvalidSelectionError(
            f"index array for dimension {dim} must hold integers or booleans, got dtype "
            f"{arr.dtype} (array shape {shape})"
        )
    raise InvalidSelectionError(
        f"orthogonal selection entries must be integers, slices, or 1-d integer or boolean "
        f"arrays, got {entry!r} for dimension {dim} of shape {shape}"
    )
