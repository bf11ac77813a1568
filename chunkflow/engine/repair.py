"""Keeping values beyond an array's shape from ever coming back.

Chunks may hold data outside the array's shape: chunks wholly outside the grid, and
the padding of edge chunks. A shrinking ``resize`` publishes the smaller shape first
and tidies afterwards, so a crash in between leaves such data behind; so does a
handle that still believes in a larger shape and writes beyond it. chunkflow keeps one
rule so that this data can never reappear:

*Every grow makes the grown region hold ``fill_value`` (or the appended data) before
it publishes the larger shape.* Data outside the shape is therefore garbage that no
reader can reach, and :func:`repair_array` (``Array.repair()``) removes it for good
(which also protects other Zarr tools that grow the array without this rule).

Everything here works on an array's :class:`~chunkflow.engine.chunk_io.ChunkIO` (its
store, path, chunk grid, key encoding and codecs), which offers it as
``clear_grown_region``, ``trim_beyond_shape`` and ``repair``.

The grown region is found by arithmetic on the chunk grid, never by listing the store,
as long as it spans at most :data:`ENUMERATE_LIMIT` chunks; a larger growth lists the
array's stored chunks instead (cheaper than touching every possible key).
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from chunkflow.grid import ceil_div
from chunkflow.metadata import is_all_fill

if TYPE_CHECKING:
    from chunkflow.engine.chunk_io import ChunkIO

__all__ = ["ENUMERATE_LIMIT", "RepairReport", "clear_grown_region", "grown_chunk_coords",
           "repair_array", "trim_beyond_shape"]

#: Up to this many chunks in a grown region are cleared by key; beyond, by listing.
ENUMERATE_LIMIT = 65536

#: ``Array.repair()`` removes temporary files of killed writers older than this (s).
TEMPORARY_MAX_AGE = 3600.0


@dataclass(frozen=True)
class RepairReport:
    """What :meth:`chunkflow.Array.repair` changed.

    Attributes
    ----------
    deleted_chunks : int
        Chunks found wholly outside the array's grid and deleted.
    cleared_chunks : int
        Edge chunks whose padding beyond the shape held stale values, now reset to
        ``fill_value``.
    removed_temporaries : int
        Temporary files of interrupted writes that were removed (local stores only).
    """

    deleted_chunks: int = 0
    cleared_chunks: int = 0
    removed_temporaries: int = 0


def grown_chunk_coords(
    old_shape: Sequence[int], new_shape: Sequence[int], chunks: Sequence[int]
) -> Iterator[tuple[int, ...]]:
    """Chunks of the grid of ``new_shape`` that hold elements outside ``old_shape``.

    Each chunk comes once; the count is ``O(grown chunks)``, never the whole grid.

    Examples
    --------
    >>> sorted(grown_chunk_coords((3, 4), (5, 4), (2, 2)))
    [(1, 0), (1, 1), (2, 0), (2, 1)]
    >>> list(grown_chunk_coords((4,), (2,), (2,)))
    []
    """
    grid, first = _grown_bounds(old_shape, new_shape, chunks)
    for dim in range(len(grid)):
        if first[dim] >= grid[dim]:
            continue
        # Disjoint pieces: ``dim`` is the first dimension where the chunk is grown.
        ranges = ([range(f) for f in first[:dim]] + [range(first[dim], grid[dim])]
                  + [range(g) for g in grid[dim + 1:]])
        yield from itertools.product(*ranges)


def count_grown_chunks(
    old_shape: Sequence[int], new_shape: Sequence[int], chunks: Sequence[int]
) -> int:
    """How many chunks :func:`grown_chunk_coords` yields (without yielding them)."""
    grid, first = _grown_bounds(old_shape, new_shape, chunks)
    return math.prod(grid) - math.prod(first)


def _grown_bounds(
    old_shape: Sequence[int], new_shape: Sequence[int], chunks: Sequence[int]
) -> tuple[list[int], list[int]]:
    """The new grid's shape, and per dimension the first chunk reaching past the old shape."""
    grid = [ceil_div(n, c) for n, c in zip(new_shape, chunks)]
    first = [min(o // c, g) if n > o else g
             for o, n, c, g in zip(old_shape, new_shape, chunks, grid)]
    return grid, first


def clear_grown_region(
    io: ChunkIO, old_shape: tuple[int, ...], new_shape: tuple[int, ...]
) -> None:
    """Make every element of ``new_shape`` outside ``old_shape`` read as ``fill_value``.

    Called before the new shape is published: readers of the old shape never look
    where this writes (chunks past the old grid, padding of the old edge chunks).
    """
    chunks = io.grid.chunks
    if count_grown_chunks(old_shape, new_shape, chunks) <= ENUMERATE_LIMIT:
        candidates: Iterator[tuple[int, ...]] = grown_chunk_coords(old_shape, new_shape, chunks)
    else:
        candidates = (coords for coords in _listed_coords(io)
                      if _is_grown(coords, old_shape, new_shape, chunks))
    outside: list[str] = []
    straddling: list[tuple[int, ...]] = []
    for coords in candidates:
        if any(c * size >= o for c, size, o in zip(coords, chunks, old_shape)):
            outside.append(io.key(coords))
        else:
            straddling.append(coords)
    if outside:
        io.discard(outside)
    _reset_beyond(io, straddling, old_shape)


def _is_grown(coords: tuple[int, ...], old_shape: Sequence[int], new_shape: Sequence[int],
              chunks: Sequence[int]) -> bool:
    inside_new = all(c * size < n for c, size, n in zip(coords, chunks, new_shape))
    reaches_out = any(n > o and (c + 1) * size > o
                      for c, size, o, n in zip(coords, chunks, old_shape, new_shape))
    return inside_new and reaches_out


def _listed_coords(io: ChunkIO) -> Iterator[tuple[int, ...]]:
    """Coordinates of every chunk key stored under the array, inside its grid or not."""
    start = len(io.path) + 1 if io.path else 0
    ndim = len(io.grid.shape)
    for key in io.store.list_prefix(io.path):
        coords = io.key_encoding.decode(key[start:], ndim)
        if coords is not None:
            yield coords


def _reset_beyond(io: ChunkIO, coords_list: list[tuple[int, ...]],
                  shape: Sequence[int]) -> int:
    """Reset the part of each chunk beyond ``shape`` to fill; returns chunks rewritten."""
    if not coords_list:
        return 0
    rewritten = 0
    # A writer of the part inside the shape may race with this read-modify-write.
    with io.lock_keys([io.key(coords) for coords in coords_list]):
        for coords in coords_list:
            rewritten += _reset_chunk(io, coords, shape)
    return rewritten


def _reset_chunk(io: ChunkIO, coords: tuple[int, ...], shape: Sequence[int]) -> int:
    key = io.key(coords)
    if key not in io.store:
        return 0
    chunk = io.read_chunk(coords)
    regions = _beyond_regions(coords, io.grid.chunks, shape)
    if all(is_all_fill(chunk[region], io.fill_value) for region in regions):
        return 0
    for region in regions:
        chunk[region] = io.fill_value
    if not io.options.write_empty_chunks and is_all_fill(chunk, io.fill_value):
        io.discard([key])
    else:
        io.store[key] = io.encode(key, chunk)
    return 1


def _beyond_regions(coords: Sequence[int], chunks: Sequence[int],
                    shape: Sequence[int]) -> list[tuple[slice, ...]]:
    """Regions of a chunk lying beyond ``shape`` (one per dimension that cuts it)."""
    regions = []
    for dim, (c, size, n) in enumerate(zip(coords, chunks, shape)):
        inside = n - c * size
        if inside < size:
            region = [slice(None)] * len(chunks)
            region[dim] = slice(max(inside, 0), None)
            regions.append(tuple(region))
    return regions


def trim_beyond_shape(io: ChunkIO, dims: Sequence[int] | None = None) -> tuple[int, int]:
    """Delete stored chunks outside the grid; reset edge padding (in ``dims``) to fill.

    Lists the array's stored chunks. Returns ``(deleted, cleared)`` chunk counts.
    """
    shape, chunks = io.grid.shape, io.grid.chunks
    dims = range(len(shape)) if dims is None else dims
    outside: list[str] = []
    cut: list[tuple[int, ...]] = []
    for coords in _listed_coords(io):
        starts = [c * size for c, size in zip(coords, chunks)]
        if any(start >= n for start, n in zip(starts, shape)):
            outside.append(io.key(coords))
        elif any(starts[d] + chunks[d] > shape[d] for d in dims):
            cut.append(coords)
    if outside:
        io.discard(outside)
    return len(outside), _reset_beyond(io, cut, shape)


def repair_array(io: ChunkIO, temporary_max_age: float = TEMPORARY_MAX_AGE) -> RepairReport:
    """Remove what interrupted writes left behind; see :meth:`chunkflow.Array.repair`."""
    # Temporaries first: the listing below would remove (but not count) old ones.
    remove = getattr(io.store, "remove_stale_temporaries", None)
    removed = remove(io.path, temporary_max_age) if callable(remove) else 0
    deleted, cleared = trim_beyond_shape(io)
    io.forget_cached()
    return RepairReport(deleted, cleared, removed)
