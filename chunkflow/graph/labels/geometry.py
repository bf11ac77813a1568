"""The block grid of a labelling job, and the keys that name components across it.

A *key* is a global C-order linear index (an ``int64``). A component found in one
block (a *part*) is named by a key that sorts as its first voxel in C order: inside a
block (a box) the C order of local coordinates is the C order of global linear
indices, so ``scipy.ndimage.label``'s numbering inside a block is the order of its
parts' first voxels, and a component's key (the smallest key of its parts) sorts as
its first voxel in the whole array, the voxel ``scipy.ndimage.label`` numbers it by.

Finding each part's first voxel would take a pass over the block; its first *row*
(all coordinates but the last) takes one maximum per row (:func:`first_rows`). So a
part's key is the voxel of its first row at the block's start along the last axis
plus the part's place among the parts first found in that row: in the same row as
its first voxel, in the same block, and in the same order among the block's parts.
Keys of different blocks in one row keep their order too, since blocks along the
last axis do not overlap.

Faces are numbered ``2 * axis + side`` (``side`` 0: the low face, 1: the high face);
a part's *mask* has bit ``1 << face`` set for each face of its block it touches that
another block lies behind (faces on the array's edge lead nowhere).

Examples
--------
>>> grid = BlockGrid((10, 7), (4, 4))
>>> grid.numblocks, grid.region((2, 1))
((3, 2), (slice(8, 10, None), slice(4, 7, None)))
>>> keys = grid.keys_of(np.array([0, 1]), np.array([0, 1]), (1, 1))  # rows 4 and 5
>>> keys.tolist(), grid.blocks_of(keys).tolist()
([32, 40], [[1, 1], [1, 1]])
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from functools import cached_property

import numpy as np

__all__ = ["BlockGrid", "face_bit", "first_rows"]


def face_bit(axis: int, side: int) -> int:
    """The mask bit of the face ``side`` (0 low, 1 high) of ``axis``."""
    return 1 << (2 * axis + side)


@dataclass(frozen=True)
class BlockGrid:
    """Regular blocks of ``block`` elements (edge blocks cut short) over ``shape``."""

    shape: tuple[int, ...]
    block: tuple[int, ...]

    @property
    def ndim(self) -> int:
        return len(self.shape)

    @cached_property
    def numblocks(self) -> tuple[int, ...]:
        return tuple(max(1, math.ceil(n / b)) for n, b in zip(self.shape, self.block))

    def region(self, index: tuple[int, ...]) -> tuple[slice, ...]:
        """The array region of block ``index``."""
        return tuple(slice(i * b, min((i + 1) * b, n))
                     for i, b, n in zip(index, self.block, self.shape))

    def extent(self, index: tuple[int, ...]) -> tuple[int, ...]:
        """The shape of block ``index``."""
        return tuple(s.stop - s.start for s in self.region(index))

    def interior_face(self, index: tuple[int, ...], axis: int, side: int) -> bool:
        """Whether another block lies behind face ``side`` of ``axis`` of block ``index``."""
        return index[axis] > 0 if side == 0 else index[axis] < self.numblocks[axis] - 1

    def blocks(self) -> list[tuple[int, ...]]:
        """Every block index, in C order."""
        return [tuple(int(i) for i in index) for index in np.ndindex(*self.numblocks)]

    def keys_of(self, rows: np.ndarray, places: np.ndarray, index: tuple[int, ...]) -> np.ndarray:
        """The keys of parts of block ``index`` first found in its rows ``rows`` (C-order
        index among the block's rows), ``places``-th among those of their row."""
        extent = self.extent(index)
        start = [s.start for s in self.region(index)]
        coords = np.unravel_index(rows, extent[:-1]) if self.ndim > 1 else ()
        point = tuple(c + o for c, o in zip(coords, start)) + (places + start[-1],)
        return np.ravel_multi_index(point, self.shape).astype(np.int64)

    def local_coords(self, keys: np.ndarray, index: tuple[int, ...]) -> tuple[np.ndarray, ...]:
        """The coordinates of ``keys`` (in block ``index``) relative to the block."""
        coords = np.unravel_index(keys, self.shape)
        return tuple(c - s.start for c, s in zip(coords, self.region(index)))

    def blocks_of(self, keys: np.ndarray) -> np.ndarray:
        """The block index (one row per key) of each key."""
        coords = np.unravel_index(keys, self.shape)
        return np.stack([c // b for c, b in zip(coords, self.block)], axis=-1).reshape(
            len(keys), self.ndim)

    def row_coords(self, rows: np.ndarray, index: tuple[int, ...]) -> tuple[np.ndarray, ...]:
        """Local coordinates (all but the last) of block ``index``'s rows ``rows``."""
        return tuple(np.unravel_index(rows, self.extent(index)[:-1])) if self.ndim > 1 else ()

    def rows(self, coords: tuple[np.ndarray, ...], index: tuple[int, ...]) -> np.ndarray:
        """The C-order index of each point's row (its coordinates but the last) among
        the rows of block ``index``, from local coordinates."""
        extent = self.extent(index)
        if self.ndim == 1:
            return np.zeros(len(coords[0]), np.int64)
        return np.ravel_multi_index(coords[:-1], extent[:-1]).astype(np.int64)


def first_rows(labels: np.ndarray, count: int) -> tuple[np.ndarray, np.ndarray]:
    """The first row of each label ``1..count`` (C-order index among the block's rows:
    a row is all coordinates but the last) and its place among the labels first found
    in that row.

    ``labels`` is numbered as ``scipy.ndimage.label`` numbers (each label first appears
    after all smaller ones), so the labels first found in a row are those above the
    largest label of the rows before it: one maximum per row, no pass over voxels
    beyond it.

    Examples
    --------
    >>> rows, places = first_rows(np.array([[0, 1, 2], [3, 0, 1], [3, 4, 5]]), 5)
    >>> rows.tolist(), places.tolist()
    ([0, 0, 1, 2, 2], [0, 1, 0, 0, 1])
    """
    if labels.size == 0 or count == 0:
        return np.zeros(count, np.int64), np.zeros(count, np.int64)
    top = labels.reshape(-1, labels.shape[-1]).max(axis=-1)
    running = np.maximum.accumulate(top).astype(np.int64)
    numbers = np.arange(1, count + 1, dtype=np.int64)
    rows = np.searchsorted(running, numbers, side="left").astype(np.int64)
    before = np.where(rows > 0, running[np.maximum(rows - 1, 0)], 0)
    return rows, numbers - before - 1
