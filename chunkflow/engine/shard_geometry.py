"""Where a selection falls inside a shard: the inner chunks it touches and the
selections on each (pure arithmetic, no I/O), for shard reads and writes."""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from typing import Any

import numpy as np

from chunkflow.indexing import ChunkProjection

__all__ = ["shifted_selection", "touched_inner_chunks", "unit_step_parts"]


def _axis_positions(entry: Any, size: int) -> np.ndarray:
    """The positions along one axis that a chunk-selection entry picks."""
    if isinstance(entry, slice):
        return np.arange(*entry.indices(size))
    return np.asarray(entry).reshape(-1)


def touched_inner_chunks(
    chunk_selection: tuple[Any, ...], inner: Sequence[int], grid: Sequence[int]
) -> tuple[np.ndarray, tuple[int, ...], tuple[int, ...]]:
    """Which inner chunks of a shard a chunk selection touches.

    Returns their numbers (C order over the shard's inner grid, sorted) and the
    origin and shape, in elements, of the box of inner chunks that holds them.

    Examples
    --------
    >>> flats, origin, shape = touched_inner_chunks((slice(3, 6), 9), (4, 4), (4, 4))
    >>> flats.tolist(), origin, shape
    ([2, 6], (0, 8), (8, 4))
    >>> touched_inner_chunks((np.array([1, 13]), np.array([2, 14])), (4, 4), (4, 4))[0].tolist()
    [0, 15]
    """
    shape = tuple(n * c for n, c in zip(grid, inner))
    arrays = [entry for entry in chunk_selection if isinstance(entry, np.ndarray)]
    pointwise = len(arrays) >= 2 and all(a.ndim == 1 for a in arrays)
    if pointwise and len(arrays) == len(chunk_selection):
        # Coordinates (vindex, masks): the inner chunks of the points themselves, not
        # of the outer product of their axes.
        indices = tuple(np.asarray(a) // c for a, c in zip(chunk_selection, inner))
        flats = np.unique(np.ravel_multi_index(indices, grid))
        lows = tuple(int(i.min()) for i in indices)
        highs = tuple(int(i.max()) for i in indices)
    else:
        per_axis = [np.unique(_axis_positions(entry, size) // c)
                    for entry, size, c in zip(chunk_selection, shape, inner)]
        mesh = np.meshgrid(*per_axis, indexing="ij")
        flats = np.sort(np.ravel_multi_index(tuple(m.reshape(-1) for m in mesh), grid))
        lows = tuple(int(a[0]) for a in per_axis)
        highs = tuple(int(a[-1]) for a in per_axis)
    origin = tuple(lo * c for lo, c in zip(lows, inner))
    box = tuple((hi - lo + 1) * c for lo, hi, c in zip(lows, highs, inner))
    return flats, origin, box


def shifted_selection(chunk_selection: tuple[Any, ...], origin: Sequence[int],
                      shape: Sequence[int]) -> tuple[Any, ...]:
    """``chunk_selection`` (over a shard of ``shape``) moved to a box starting at ``origin``.

    Examples
    --------
    >>> shifted_selection((slice(5, 9), 6, np.array([8, 9])), (4, 4, 8), (16, 16, 16))
    (slice(1, 5, 1), 2, array([0, 1]))
    >>> shifted_selection((slice(6, None, -3),), (4,), (8,))  # down to index 0... of the box
    (slice(2, None, -3),)
    """
    moved: list[Any] = []
    for entry, o, size in zip(chunk_selection, origin, shape):
        if isinstance(entry, slice):
            start, stop, step = entry.indices(size)
            stop -= o
            # A negative step running to the box's first element: stop must be None,
            # never a negative number (that would count from the end).
            moved.append(slice(start - o, stop if stop >= 0 else None, step))
        elif isinstance(entry, np.ndarray):
            moved.append(entry - o)
        else:
            moved.append(int(entry) - o)
    return tuple(moved)


def unit_step_parts(selection: tuple[Any, ...], inner: Sequence[int],
                    grid: Sequence[int]) -> tuple[tuple[int, ChunkProjection], ...] | None:
    """The projections of ``selection`` (over a shard of ``grid`` inner chunks of
    shape ``inner``) onto the inner chunks, with their numbers, when every entry is a
    slice with unit step and bounds: what :class:`~chunkflow.indexing.BasicIndexer`
    gives, by arithmetic alone (a read of one inner chunk spends no more on
    it than on its syscalls). ``None`` for any other selection.

    Examples
    --------
    >>> for flat, p in unit_step_parts((slice(2, 8),), (4,), (4,)):
    ...     print(flat, p.chunk_selection, p.out_selection, p.is_complete_chunk)
    0 (slice(2, 4, None),) (slice(0, 2, None),) False
    1 (slice(0, 4, None),) (slice(2, 6, None),) True
    >>> unit_step_parts((slice(0, 8, 2),), (4,), (4,)) is None
    True
    """
    per_dim = []
    for entry, size, count in zip(selection, inner, grid):
        if type(entry) is not slice or entry.step not in (None, 1):
            return None
        start, stop = entry.start, entry.stop
        if type(start) is not int or type(stop) is not int or not 0 <= start < stop <= size * count:
            return None
        dim = []
        for i in range(start // size, (stop - 1) // size + 1):
            lo, hi = max(start, i * size), min(stop, i * size + size)
            dim.append((i, slice(lo - i * size, hi - i * size), slice(lo - start, hi - start),
                        hi - lo == size))
        per_dim.append(dim)
    parts = []
    for combo in itertools.product(*per_dim):
        flat = 0
        for (i, _, _, _), count in zip(combo, grid):
            flat = flat * count + i
        parts.append((flat, ChunkProjection(
            tuple(d[0] for d in combo), tuple(d[1] for d in combo),
            tuple(d[2] for d in combo), all(d[3] for d in combo))))
    return tuple(parts)
