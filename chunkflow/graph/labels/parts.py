"""One block's parts: what the first pass keeps of a labelled block, and the pairs of
parts that touch across the faces of neighbouring blocks.

A block's local labels (``scipy.ndimage.label`` of the block alone) are its *parts*.
The first pass keeps, per block, only:

- the label slabs of its faces that another block lies behind (:class:`Faces`, for
  the pairs), with the keys of the labels on them;
- the parts on those faces (*exposed* parts: the only ones the global merge sees),
  with their keys and face masks;
- for the other (*closed*) parts, which are whole components already: their number
  below each exposed part, and histograms of their keys by leading coordinates
  (:mod:`chunkflow.graph.labels.ranks` turns those into labels).

Examples
--------
>>> import numpy as np
>>> from chunkflow.graph.labels.geometry import BlockGrid
>>> grid = BlockGrid((4, 8), (4, 4))
>>> labels = np.array([[1, 0, 0, 2], [0, 0, 0, 2], [3, 0, 0, 0], [0, 0, 4, 4]])
>>> faces, info = scan_labels(grid, (0, 0), labels, 4)
>>> info.exposed.tolist(), info.keys.tolist(), info.closed_below.tolist()
([2, 4], [1, 24], [1, 2])
>>> [h.tolist() for h in info.closed_hist]  # the closed parts 1 and 3, by row
[2, [1, 0, 1, 0]]
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from chunkflow.graph.labels.geometry import BlockGrid, face_bit, first_rows

__all__ = ["BlockInfo", "Faces", "block_info", "block_pairs", "level_counts", "scan_labels"]


@dataclass(frozen=True)
class Faces:
    """A block's face slabs (face number -> local labels on it), and the keys of the
    labels found on them (``labels`` sorted, ``keys`` alike)."""

    slabs: dict[int, np.ndarray]
    labels: np.ndarray
    keys: np.ndarray

    def keys_of(self, local: np.ndarray) -> np.ndarray:
        return self.keys[np.searchsorted(self.labels, local)]


@dataclass(frozen=True)
class BlockInfo:
    """What the merge and the numbering need of one block (see the module notes)."""

    count: int
    exposed: np.ndarray  # local labels of the exposed parts, ascending
    keys: np.ndarray  # their keys (ascending too)
    masks: np.ndarray  # their face masks (uint16)
    closed_below: np.ndarray  # closed parts with a smaller label, per exposed part
    closed_hist: tuple[np.ndarray, ...]  # per level d: closed keys by d leading coordinates


def level_counts(coords: tuple[np.ndarray, ...], count: int,
                 extent: tuple[int, ...]) -> tuple[np.ndarray, ...]:
    """Per level ``d`` (0 to ndim - 1): how many of ``count`` points share each value of
    their first ``d`` coordinates (``coords``: the points' row coordinates, all but the
    last; C order over ``extent[:d]``; level 0 is the count, 0-d)."""
    counts: list[np.ndarray] = [np.array(count, np.int64)]
    for d in range(1, len(extent)):
        flat = np.ravel_multi_index(coords[:d], extent[:d]) if count else np.zeros(0, np.int64)
        # A block keeps these until its write pass: the smallest type that holds them
        # (at most the voxels after the first d coordinates; uint16 for the rows of
        # blocks narrower than 65536 along the last axis).
        small = np.min_scalar_type(int(np.prod(extent[d:])))
        counts.append(np.bincount(flat, minlength=int(np.prod(extent[:d])))
                      .astype(small).reshape(extent[:d]))
    return tuple(counts)


def scan_labels(grid: BlockGrid, index: tuple[int, ...], labels: np.ndarray, count: int,
                first: tuple[np.ndarray, np.ndarray] | None = None) -> tuple[Faces, BlockInfo]:
    """The faces and the info of block ``index``, from its local ``labels`` (1..count);
    ``first``: their :func:`~chunkflow.graph.labels.geometry.first_rows`, if known."""
    slabs: dict[int, np.ndarray] = {}
    masks = np.zeros(count + 1, np.uint16)
    for axis in range(grid.ndim):
        for side in (0, 1):
            if not grid.interior_face(index, axis, side):
                continue
            slab = np.take(labels, 0 if side == 0 else -1, axis=axis)
            slabs[2 * axis + side] = slab
            touched = np.zeros(count + 1, bool)
            touched[slab.reshape(-1)] = True
            masks[touched] |= face_bit(axis, side)
    info = block_info(grid, index, labels, count, masks, first)
    return Faces(slabs, info.exposed, info.keys), info


def block_info(grid: BlockGrid, index: tuple[int, ...], labels: np.ndarray, count: int,
               masks: np.ndarray,
               first: tuple[np.ndarray, np.ndarray] | None = None) -> BlockInfo:
    """A block's info from its local ``labels`` (1..count, numbered by first voxel) and
    each label's face mask (``masks[label]``, 0 for closed parts); ``first``: the
    labels' :func:`~chunkflow.graph.labels.geometry.first_rows`, if known."""
    masks[0] = 0
    exposed = np.flatnonzero(masks).astype(np.int64)
    rows, places = first if first is not None else first_rows(labels, count)
    keys = grid.keys_of(rows[exposed - 1], places[exposed - 1], index)
    closed = np.ones(count + 1, bool)
    closed[0] = False
    closed[exposed] = False
    closed_before = np.cumsum(closed)  # closed labels <= each label
    closed_rows = rows[closed[1:]]
    return BlockInfo(count, exposed, keys, masks[exposed], closed_before[exposed],
                     level_counts(grid.row_coords(closed_rows, index), len(closed_rows),
                                  grid.extent(index)))


def _facing(slab: np.ndarray, axes: list[int], offset: tuple[int, ...], face_axis: int,
            near: bool) -> np.ndarray:
    """The part of a face slab (``face_axis`` removed) that faces the neighbour at
    ``offset``: on the other non-zero axes, the near or far edge."""
    index: list[int | slice] = []
    for axis in axes:
        if axis == face_axis:
            continue
        step = offset[axis]
        if step == 0:
            index.append(slice(None))
        else:
            index.append(-1 if (step > 0) == near else 0)
    return slab[tuple(index)]


def block_pairs(own: Faces, other: Faces, offset: tuple[int, ...],
                voxel_offsets: list[tuple[int, ...]]) -> np.ndarray:
    """Pairs of keys ``(own part, other part)`` of parts that touch, the other block at
    block ``offset`` from this one, connected by ``voxel_offsets`` (rows unique)."""
    ndim = len(offset)
    face_axis = next(a for a in range(ndim) if offset[a])
    forward = offset[face_axis] > 0
    near = own.slabs[2 * face_axis + (1 if forward else 0)]
    far = other.slabs[2 * face_axis + (0 if forward else 1)]
    axes = list(range(ndim))
    a = _facing(near, axes, offset, face_axis, near=True)
    b = _facing(far, axes, offset, face_axis, near=False)
    free = [axis for axis in axes if offset[axis] == 0]
    found = []
    for v in voxel_offsets:
        sa, sb = [], []
        for axis in free:
            step = v[axis]
            sa.append(slice(None, -1) if step > 0 else slice(1, None) if step < 0 else slice(None))
            sb.append(slice(1, None) if step > 0 else slice(None, -1) if step < 0 else slice(None))
        pa, pb = a[tuple(sa)], b[tuple(sb)]
        both = (pa != 0) & (pb != 0)
        if both.any():
            code = (pa[both].astype(np.uint64) << np.uint64(32)) | pb[both].astype(np.uint64)
            found.append(code)
    if not found:
        return np.zeros((0, 2), np.int64)
    codes = np.unique(np.concatenate(found))
    left = (codes >> np.uint64(32)).astype(np.int64)
    right = (codes & np.uint64(0xFFFFFFFF)).astype(np.int64)
    return np.stack([own.keys_of(left), other.keys_of(right)], axis=1)
