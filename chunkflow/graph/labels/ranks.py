"""Numbering: each component's label is 1 + the number of components whose key is
smaller, counted without any task holding every key.

A component is counted in the block of its first voxel (its *owner* block). For a key
``k`` in block ``b``, the keys smaller than ``k`` in another block ``b'`` depend on the
first axis ``d`` where ``b'`` and ``b`` differ: those blocks share their extent along
axes ``0..d-1``, and ``b'`` lies wholly before (``b'[d] < b[d]``) or after ``b`` along
``d``. A key of ``b'`` is smaller exactly when its first ``d`` coordinates come before
``k``'s (or equal them, when ``b'`` lies before). So with ``H_d(b')``, the histogram of
``b'``'s keys over their first ``d`` coordinates:

    label(k) = 1 + sum over d of [ cumsum(sum of H_d(b') before b along d)[k's first d]
                                   + cumsum_exclusive(sum of H_d(b') after b)[k's first d] ]
               + (keys of b smaller than k)

The sums run over blocks with ``b``'s first ``d`` block indices: per level, a tree of
sums over the later axes (:func:`add`), then prefix and suffix sums along axis ``d``
from dyadic partial sums (:func:`dyadic_cover`), so a task holds a few histograms of
one block's leading extent, never all of them. :func:`row_offsets` folds the levels
into one count per row of the block (a row: all coordinates but the last).

Examples
--------
>>> dyadic_cover(0, 7)
[(2, 0), (1, 2), (0, 6)]
>>> dyadic_cover(3, 8)
[(0, 3), (2, 1)]
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from chunkflow.graph.labels.geometry import BlockGrid
from chunkflow.graph.labels.merge import KeyMap
from chunkflow.graph.labels.parts import BlockInfo, level_counts

__all__ = ["add", "block_hist", "dyadic_cover", "face_labels", "gather", "label_map",
           "owned_exposed", "pick_level", "row_offsets"]

# Elements gathered per numpy call in gather (see there).
GATHER_STEP = 1 << 16


def owned_exposed(info: BlockInfo, finals: KeyMap | None) -> np.ndarray:
    """Which exposed parts are the first part of their component (their key is final)."""
    if finals is None or not len(info.keys):
        return np.ones(len(info.keys), bool)
    return finals.lookup(info.keys, "the final keys of the block's exposed parts") == info.keys


def block_hist(grid: BlockGrid, index: tuple[int, ...], info: BlockInfo,
               finals: KeyMap | None) -> tuple[np.ndarray, ...]:
    """``H_d`` of the block for every level: its closed parts and the exposed parts it
    owns."""
    owned = info.keys[owned_exposed(info, finals)]
    extra = level_counts(grid.local_coords(owned, index)[:-1], len(owned), grid.extent(index))
    return tuple(c + e for c, e in zip(info.closed_hist, extra))


def pick_level(hist: tuple[np.ndarray, ...], level: int) -> np.ndarray:
    return hist[level]


def add(*arrays: np.ndarray) -> np.ndarray:
    """The sum of equally shaped count arrays (as int64)."""
    total = np.array(arrays[0], dtype=np.int64, copy=True)
    for array in arrays[1:]:
        total += array
    return total


def dyadic_cover(start: int, stop: int) -> list[tuple[int, int]]:
    """``[start, stop)`` as dyadic ranges ``(level, m)`` = ``[m 2^level, (m+1) 2^level)``."""
    found = []
    while start < stop:
        level = (start & -start).bit_length() - 1 if start else max(0, stop.bit_length() - 1)
        while start + (1 << level) > stop:
            level -= 1
        found.append((level, start >> level))
        start += 1 << level
    return found


def row_offsets(grid: BlockGrid, index: tuple[int, ...], before: Sequence[Sequence[np.ndarray]],
                after: Sequence[Sequence[np.ndarray]]) -> np.ndarray:
    """Per row of block ``index`` (C order), the keys of other blocks smaller than a key
    at the row's start: ``before[d]``/``after[d]`` are the dyadic sums of ``H_d`` over
    the blocks before/after it along axis ``d`` (with its first ``d`` block indices)."""
    extent = grid.extent(index)
    rows = extent[:-1]
    total = np.zeros(rows, np.int64)
    for d in range(grid.ndim):
        low = add(np.zeros(extent[:d], np.int64), *before[d])
        high = add(np.zeros(extent[:d], np.int64), *after[d])
        counted = np.cumsum(low.reshape(-1)) + np.cumsum(high.reshape(-1)) - high.reshape(-1)
        counted = counted.reshape(extent[:d])
        total += counted.reshape(extent[:d] + (1,) * (len(rows) - d)) if d < len(rows) else counted
    return total.reshape(-1)


def label_map(rows: np.ndarray, owned: np.ndarray, offsets: np.ndarray) -> np.ndarray:
    """Labels of the parts ``owned`` (a mask over parts 1..n, first found in block rows
    ``rows``): 1 + smaller keys in other blocks (``offsets`` by row) + owned parts of
    this block before it. Returns an int64 array over 0..n (0 where not owned)."""
    chosen = np.flatnonzero(owned)
    result = np.zeros(len(owned) + 1, np.int64)
    result[chosen + 1] = 1 + offsets[rows[chosen]] + np.arange(len(chosen))
    return result


def gather(table: np.ndarray, labels: np.ndarray) -> np.ndarray:
    """``table[labels]`` (``labels`` all within the table), in steps of
    :data:`GATHER_STEP` elements.

    One ``numpy.take`` over a whole block casts the indices to ``intp`` in a temporary
    of 8 bytes per voxel first; in steps the temporary stays in the CPU's cache, and
    the gather runs 2 to 3 times faster (numpy releases the GIL in each step).

    Examples
    --------
    >>> gather(np.array([0, 7, 5], np.uint32), np.array([[2, 0], [1, 1]], np.uint16))
    array([[5, 0],
           [7, 7]], dtype=uint32)
    """
    flat = labels.reshape(-1)
    out = np.empty(flat.shape, table.dtype)
    for start in range(0, flat.size, GATHER_STEP):
        stop = start + GATHER_STEP
        # "clip": the labels are within the table, and no bounds check is needed.
        np.take(table, flat[start:stop], out=out[start:stop], mode="clip")
    return out.reshape(labels.shape)


def face_labels(grid: BlockGrid, index: tuple[int, ...], info: BlockInfo,
                finals: KeyMap | None, offsets: np.ndarray) -> KeyMap:
    """Labels (by key) of the exposed parts the block owns."""
    owned = owned_exposed(info, finals)
    keys = info.keys[owned]
    coords = grid.local_coords(keys, index)
    # Owned parts before each: closed ones, and owned exposed ones.
    before = info.closed_below[owned] + np.arange(len(keys))
    labels = 1 + offsets[grid.rows(coords, index)] + before
    return KeyMap(keys, labels.astype(np.int64))
