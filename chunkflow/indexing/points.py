"""Point indexers: integer arrays that pick points together, not each along its axis.

:class:`PointsIndexer` is numpy's advanced indexing: the index arrays of some dimensions,
broadcast together and flattened, give ``n`` points; the other dimensions take slices.
Points are grouped by the chunk that holds them (each chunk is visited once, in grid
order), and each group meets the chunk projections of the sliced dimensions. The
output buffer has one axis of length ``n`` for the points; a chunk selection holds
the group's in-chunk arrays where the output selection holds the group's positions
along that axis, so that numpy places the points' axis alike on both sides (first when
the point dimensions are not adjacent, where they are otherwise).

:class:`CoordinateIndexer` (``vindex``) and :class:`MaskIndexer` are the cases without
sliced dimensions.

Examples
--------
>>> import numpy as np
>>> from chunkflow.grid import RegularChunkGrid
>>> grid = RegularChunkGrid((4, 4, 4), (2, 2, 2))
>>> idx = PointsIndexer({0: np.array([0, 3]), 2: np.array([1, 1])}, (slice(None),), grid)
>>> idx.shape, idx.points_first, idx.nchunks
((2, 4), True, 4)
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from itertools import product
from typing import TYPE_CHECKING, Any

import numpy as np

from chunkflow.errors import InvalidSelectionError
from chunkflow.grid import RegularChunkGrid
from chunkflow.indexing.dims import (
    DimProjection,
    as_int,
    is_array_like,
    normalize_int_array,
    slice_dim,
)
from chunkflow.indexing.selections import ChunkProjection, Reshaping

if TYPE_CHECKING:
    from numpy.typing import ArrayLike

    from chunkflow.indexing.predicates import Selection, SelectionItem

__all__ = ["CoordinateIndexer", "MaskIndexer", "PointsIndexer", "broadcast_points"]


def broadcast_points(arrays: list[np.ndarray], what: str = "indexing arrays") -> tuple[
        list[np.ndarray], tuple[int, ...]]:
    """The arrays broadcast together and flattened, and their broadcast shape.

    Raises :class:`~chunkflow.errors.InvalidSelectionError` (an ``IndexError``) when
    they do not broadcast, as numpy does.

    Examples
    --------
    >>> points, shape = broadcast_points([np.array([[0], [1]]), np.array([2, 3, 4])])
    >>> shape, points[1].tolist()
    ((2, 3), [2, 3, 4, 2, 3, 4])
    """
    try:
        shape = tuple(np.broadcast_shapes(*(a.shape for a in arrays)))
    except ValueError:
        shapes = " ".join(str(a.shape) for a in arrays)
        raise InvalidSelectionError(
            f"shape mismatch: {what} could not be broadcast together with shapes {shapes}"
        ) from None
    return [np.broadcast_to(a, shape).reshape(-1) for a in arrays], shape


class PointsIndexer(Reshaping):
    """Points over some dimensions (``points``: dimension -> 1-d ``intp`` array, all of
    one length, in bounds, non-negative) times slices over the others (``slices``, in
    order of dimension).

    ``shape`` is the buffer: the sliced lengths with the points' axis first if the point
    dimensions are not adjacent (``points_first``), else at their place.
    ``sel_shape`` equals ``shape`` unless given.
    """

    def __init__(self, points: dict[int, np.ndarray], slices: tuple[slice, ...],
                 grid: RegularChunkGrid, sel_shape: tuple[int, ...] | None = None) -> None:
        self.grid = grid
        self._point_dims = sorted(points)
        others = [d for d in range(len(grid.shape)) if d not in points]
        self._dims: list[DimProjection] = [
            slice_dim(s, d, grid.shape[d], grid.chunks[d], grid.shape)
            for d, s in zip(others, slices)]
        self._other_dims = others
        dims = self._point_dims
        self.points_first: bool = bool(dims) and dims[-1] - dims[0] + 1 != len(dims)
        npoints = len(points[dims[0]]) if dims else 0
        lengths = [d.length for d in self._dims]
        at = 0 if self.points_first or not dims else sum(d < dims[0] for d in others)
        self._at = at
        self.shape: tuple[int, ...] = (*lengths[:at], npoints, *lengths[at:])
        self.sel_shape: tuple[int, ...] = self.shape if sel_shape is None else sel_shape
        self.drop_axes: tuple[int, ...] = ()
        self._group([points[d] for d in dims], npoints)
        self.nchunks: int = len(self._coords) * math.prod(len(d.chunk_indices)
                                                          for d in self._dims)

    def _group(self, points: list[np.ndarray], npoints: int) -> None:
        grid = self.grid
        chunks = [grid.chunks[d] for d in self._point_dims]
        self._order: np.ndarray | None = None
        if npoints == 0:
            self._starts: list[int] = []
            self._stops: list[int] = []
            self._coords: list[tuple[int, ...]] = []
            self._local: list[np.ndarray] = []
            return
        chunk_coords = [p // c for p, c in zip(points, chunks)]
        ids = _chunk_ids(chunk_coords, tuple(grid.grid_shape[d] for d in self._point_dims))
        if ids.size > 1 and not bool((ids[1:] >= ids[:-1]).all()):
            self._order = order = np.argsort(ids, kind="stable")  # repeats keep their order
            ids = ids[order]
            points = [p[order] for p in points]
            chunk_coords = [c[order] for c in chunk_coords]
        change = (np.flatnonzero(ids[1:] != ids[:-1]) + 1).tolist()
        self._starts, self._stops = [0, *change], [*change, ids.size]
        self._coords = list(zip(*(c[self._starts].tolist() for c in chunk_coords)))
        self._local = [p - c * n for p, c, n in zip(points, chunk_coords, chunks)]

    def __iter__(self) -> Iterator[ChunkProjection]:
        order, local, at = self._order, self._local, self._at
        point_dims, other_dims = self._point_dims, self._other_dims
        ndim = len(point_dims) + len(other_dims)
        for coords, a, b in zip(self._coords, self._starts, self._stops):
            where = slice(a, b) if order is None else order[a:b]
            arrays = [x[a:b] for x in local]
            for parts in product(*[zip(d.chunk_indices, d.chunk_selections, d.out_selections)
                                   for d in self._dims]):
                chunk_coords: list[Any] = [0] * ndim
                chunk_sel: list[Any] = [None] * ndim
                for d, c, s in zip(point_dims, coords, arrays):
                    chunk_coords[d], chunk_sel[d] = c, s
                for d, (c, s, _) in zip(other_dims, parts):
                    chunk_coords[d], chunk_sel[d] = c, s
                outs = [o for _, _, o in parts]
                out_sel = (*outs[:at], where, *outs[at:])
                yield ChunkProjection(tuple(chunk_coords), tuple(chunk_sel), out_sel, False)

    def __len__(self) -> int:
        return self.nchunks

    def __repr__(self) -> str:
        return (f"{type(self).__name__}(shape={self.shape}, sel_shape={self.sel_shape}, "
                f"nchunks={self.nchunks}, grid={self.grid})")


def _chunk_ids(chunk_coords: list[np.ndarray], grid_shape: tuple[int, ...]) -> np.ndarray:
    """One sortable id per point: C-order rank of its chunk in the grid."""
    if math.prod(grid_shape) < 2**62:
        ids = np.zeros(chunk_coords[0].shape, dtype=np.int64)
        for c, g in zip(chunk_coords, grid_shape):
            ids *= g
            ids += c
        return ids
    # Astronomically large grids overflow int64 ranks: rank the distinct chunks instead.
    _, inverse = np.unique(np.stack(chunk_coords, axis=1), axis=0, return_inverse=True)
    return inverse.reshape(-1)


class CoordinateIndexer(PointsIndexer):
    """Point selection (``vindex``): integer arrays broadcast together, one point each.

    ``shape`` is ``(npoints,)`` (the buffer to allocate) and ``sel_shape`` the broadcast
    shape the user sees. Points are grouped by chunk so each chunk is visited once.

    Examples
    --------
    >>> import numpy as np
    >>> from chunkflow.grid import RegularChunkGrid
    >>> idx = CoordinateIndexer(([[3, 0], [1, 2]], 1), RegularChunkGrid((4, 2), (2, 2)))
    >>> idx.shape, idx.sel_shape, idx.nchunks
    ((4,), (2, 2), 2)
    >>> for p in idx:
    ...     print(p.chunk_coords, [a.tolist() for a in p.chunk_selection], p.out_selection)
    (0, 0) [[0, 1], [1, 1]] (array([1, 2]),)
    (1, 0) [[1, 0], [1, 1]] (array([0, 3]),)
    """

    def __init__(self, selection: Selection, grid: RegularChunkGrid) -> None:
        sel = selection if isinstance(selection, tuple) else (selection,)
        if len(sel) != len(grid.shape):
            raise InvalidSelectionError(
                f"coordinate selection {selection!r} needs one integer array per dimension "
                f"of shape {grid.shape} ({len(grid.shape)}), got {len(sel)}"
            )
        arrays = [_coordinate_array(e, d, grid.shape) for d, e in enumerate(sel)]
        points, sel_shape = broadcast_points(arrays, "coordinate arrays")
        self._setup_points(points, sel_shape, grid)

    def _setup_points(self, points: list[np.ndarray], sel_shape: tuple[int, ...],
                      grid: RegularChunkGrid) -> None:
        if points:
            super().__init__(dict(enumerate(points)), (), grid, sel_shape)
            return
        # A 0-d array: its one chunk holds the point; (None,) views the 0-d chunk as
        # shape (1,), matching out[0:1] both ways.
        npoints = math.prod(sel_shape)
        self.grid, self._dims, self._other_dims, self._point_dims = grid, [], [], []
        self.points_first, self._at, self.drop_axes = False, 0, ()
        self.shape, self.sel_shape = (npoints,), sel_shape
        self._order = None
        self._coords, self._starts, self._stops = ([()], [0], [1]) if npoints else ([], [], [])
        self._local = []
        self.nchunks = len(self._coords)

    def __iter__(self) -> Iterator[ChunkProjection]:
        if self._point_dims or not self._coords:
            return super().__iter__()
        return iter([ChunkProjection((), (None,), (slice(0, 1),), False)])


def _coordinate_array(entry: SelectionItem, dim: int, shape: tuple[int, ...]) -> np.ndarray:
    index = as_int(entry)
    if index is not None:
        entry = np.asarray(index)
    elif not is_array_like(entry):
        raise InvalidSelectionError(
            f"coordinate selection entries must be integers or integer arrays, got {entry!r} "
            f"for dimension {dim} of shape {shape}"
        )
    arr = np.asarray(entry)
    if arr.dtype == bool:
        raise InvalidSelectionError(
            f"boolean array for dimension {dim} in a coordinate selection; pass a single "
            f"boolean mask of the array's shape {shape} instead"
        )
    return normalize_int_array(arr, dim, shape[dim], shape)


class MaskIndexer(CoordinateIndexer):
    """A boolean array of the array's shape; the selected points in C order.

    Examples
    --------
    >>> import numpy as np
    >>> from chunkflow.grid import RegularChunkGrid
    >>> mask = np.eye(3, dtype=bool)
    >>> idx = MaskIndexer(mask, RegularChunkGrid((3, 3), (2, 2)))
    >>> idx.shape, idx.sel_shape, [p.chunk_coords for p in idx]
    ((3,), (3,), [(0, 0), (1, 1)])
    """

    def __init__(self, selection: Selection | ArrayLike, grid: RegularChunkGrid) -> None:
        sel = selection if isinstance(selection, tuple) else (selection,)
        mask = np.asarray(sel[0]) if len(sel) == 1 else None
        if mask is None or mask.dtype != bool or mask.shape != grid.shape:
            raise InvalidSelectionError(
                f"mask selection must be one boolean array of the array's shape {grid.shape}, "
                f"got {selection!r}"
            )
        # np.nonzero refuses 0-d input; a 0-d mask selects its one element or nothing.
        points = list(np.nonzero(mask)) if mask.ndim else []
        self._setup_points(points, (int(mask.sum()),), grid)
