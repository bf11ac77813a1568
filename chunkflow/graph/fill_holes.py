"""Holes filled exactly across chunks: background components that do not reach the border.

``scipy.ndimage.binary_fill_holes(input, structure)`` dilates the border into the
background (``~input``) with ``structure`` until nothing changes, and returns what it
did not reach. For a structure symmetric about its centre that is the background's
connected components (neighbours as ``structure`` says) that touch the border:

1. :func:`chunkflow.label` labels the background (``source == 0``) into an
   intermediate array, with the same merge tree as every label job;
2. the labels on the faces the structure connects to the outside (those of the axes
   along which it has an offset) form the table of border components;
3. one map job writes ``True`` wherever the label is not in that table.

Examples
--------
>>> import numpy as np
>>> from scipy import ndimage
>>> import chunkflow
>>> a = np.zeros((9, 12), bool)
>>> a[1:8, 1:6] = True; a[3:5, 2:4] = False; a[2:7, 7:11] = True; a[4, 8] = False
>>> z = chunkflow.array(a, chunks=(4, 5))
>>> filled = fill_holes(z, ndimage.generate_binary_structure(2, 1), out=None)
>>> bool((filled[...] == ndimage.binary_fill_holes(a)).all())
True
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

import dask.array as da
import numpy as np

from chunkflow.core.array import Array
from chunkflow.graph.labels import label
from chunkflow.graph.map import map_chunks
from chunkflow.graph.read import to_dask
from chunkflow.graph.rechunk.arrays import Intermediate
from chunkflow.graph.scheduler import compute
from chunkflow.storage import MemoryStore

if TYPE_CHECKING:
    from chunkflow.graph.scheduler import ProgressArg, SchedulerLike

__all__ = ["border_axes", "border_labels", "fill_holes"]

_LABELS = "chunkflow-background-labels"
# The metadata of a store's root node, in either format.
ROOT_KEYS = ("zarr.json", ".zgroup", ".zattrs", ".zarray")


def border_axes(structure: np.ndarray) -> list[int]:
    """The axes along which ``structure`` (``(3,) * ndim``) has an offset: the faces
    across those axes touch the outside.

    Examples
    --------
    >>> border_axes(np.array([[0, 0, 0], [1, 1, 1], [0, 0, 0]], bool))
    [1]
    """
    axes = []
    for axis in range(structure.ndim):
        moved = np.moveaxis(structure, axis, 0)
        if moved[0].any() or moved[2].any():
            axes.append(axis)
    return axes


def border_labels(labels: Array, axes: list[int], *, scheduler: SchedulerLike = None,
                  progress: ProgressArg = False) -> np.ndarray:
    """The sorted labels (0 left out) on both faces across each of ``axes``."""
    faces = []
    for axis in axes:
        for index in sorted({0, labels.shape[axis] - 1}):
            selection = tuple(index if a == axis else slice(None) for a in range(labels.ndim))
            faces.append(da.unique(to_dask(labels, selection).ravel()))
    if not faces:
        return np.zeros(0, labels.dtype)
    (found,) = compute(da.unique(da.concatenate(faces)), scheduler=scheduler,
                       progress=progress)
    found = np.asarray(found)
    return found[found != 0]


def fill_block(block: np.ndarray, border: np.ndarray) -> np.ndarray:
    """``True`` where the label is not a border component's (the foreground, label 0,
    included)."""
    return ~np.isin(block, border)


def fill_holes(source: Array, structure: np.ndarray, *, out: Any,
               temp: str | None = None, overwrite: bool = False, resume: bool = False,
               scheduler: SchedulerLike = None, progress: ProgressArg = False,
               max_memory: int | str | None = None,
               storage_options: Mapping[str, Any] | None = None, blocks: Any = None) -> Array:
    """``source`` with its holes filled (a boolean array at ``out``: a location, an
    open array, or ``None`` for an in-memory array), ``structure`` a symmetric
    ``(3,) * ndim`` boolean array. The background's labels go below ``temp`` (a path
    or URL; default in memory), removed at the end. ``blocks``: the label job's and
    the fill's blocks, as :func:`chunkflow.label` takes them."""
    background = to_dask(source) == 0  # numpy.logical_not: NaN is foreground
    place = Intermediate.under(temp, _LABELS, storage_options) if temp is not None else None
    made_root = place is not None and not any(key in place.store for key in ROOT_KEYS)
    where: Any = MemoryStore() if place is None else f"{str(temp).rstrip('/')}/{_LABELS}"
    labels, _ = label(background, where, structure=structure, overwrite=True, blocks=blocks,
                      scheduler=scheduler, progress=progress, max_memory=max_memory,
                      storage_options=storage_options if place is not None else None)
    border = border_labels(labels, border_axes(structure), scheduler=scheduler,
                           progress=progress)
    result: Array = map_chunks(fill_block, labels, out=MemoryStore() if out is None else out,
                               dtype=bool, overwrite=overwrite, resume=resume, blocks=blocks,
                               scheduler=scheduler, progress=progress, max_memory=max_memory,
                               border=border)
    if place is None:
        labels.store.clear()
    else:  # temp as it was: the labels gone, and the root group their creation made
        place.store.delete_prefix(_LABELS)
        if made_root:
            place.store.delete_many([key for key in ROOT_KEYS if key in place.store])
    return result
