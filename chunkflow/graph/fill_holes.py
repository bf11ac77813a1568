"""Holes filled exactly across chunks: background components that do not reach the border.

``scipy.ndimage.binary_fill_holes(input, structure)`` dilates the border into the
background (``~input``) with ``structure`` until nothing changes, and returns what it
did not reach. For a structure symmetric about its centre that is the background's
connected components (neighbours as ``structure`` says) that touch the border: the
faces across the axes along which the structure has an offset
(:func:`border_axes`).

They are found by the label job's first pass and merge over the background, and
written in one more pass over the blocks; nothing is numbered or stored between the
passes but what the label job keeps (see :mod:`chunkflow.graph.labels.holes`).

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

import numpy as np

from chunkflow.core.array import Array
from chunkflow.graph.labels.holes import fill_holes as fill_labelled
from chunkflow.storage import MemoryStore

if TYPE_CHECKING:
    from chunkflow.graph.scheduler import ProgressArg, SchedulerLike

__all__ = ["border_axes", "fill_holes"]


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


def fill_holes(source: Array, structure: np.ndarray, *, out: Any,
               temp: str | None = None, overwrite: bool = False, resume: bool = False,
               scheduler: SchedulerLike = None, progress: ProgressArg = False,
               max_memory: int | str | None = None,
               storage_options: Mapping[str, Any] | None = None, blocks: Any = None) -> Array:
    """``source`` with its holes filled (a boolean array at ``out``: a location, an
    open array, or ``None`` for an in-memory array), ``structure`` a symmetric
    ``(3,) * ndim`` boolean array. ``temp`` is taken for the job options' sake: nothing
    is stored between the passes (the blocks' labels stay in the chunk cache, or are
    made again). ``blocks``: the job's blocks, as :func:`chunkflow.label` takes them."""
    result: Array = fill_labelled(source, structure, border_axes(structure),
                                  MemoryStore() if out is None else out, overwrite=overwrite,
                                  resume=resume, scheduler=scheduler, progress=progress,
                                  max_memory=max_memory, storage_options=storage_options,
                                  blocks=blocks)
    return result
