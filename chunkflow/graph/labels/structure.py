"""Structuring elements: checked as ``scipy.ndimage.label`` checks them, and the pairs
of neighbouring blocks (across faces, edges and corners) they connect.

Two voxels are connected when their offset ``v`` (each entry -1, 0 or 1) is set in
the structure (``structure[v + 1]``); the centre is ignored, as scipy ignores it. A
voxel in one block and one in the block at block offset ``o`` are neighbours when
``v`` equals ``o`` on every axis where ``o`` is not 0 (they sit on the facing faces),
whatever ``v`` is along the other axes (they slide along the shared face).

Examples
--------
>>> import numpy as np
>>> s = normalize_structure(None, 2)
>>> s.astype(int).tolist()
[[0, 1, 0], [1, 1, 1], [0, 1, 0]]
>>> [o for o, _ in block_offsets(s)]
[(0, 1), (1, 0)]
>>> [o for o, _ in block_offsets(np.ones((3, 3), bool))]
[(0, 1), (1, -1), (1, 0), (1, 1)]
"""

from __future__ import annotations

import itertools
from typing import Any

import numpy as np

from chunkflow.errors import LabelError

__all__ = ["block_offsets", "normalize_structure"]


def normalize_structure(structure: Any, ndim: int) -> np.ndarray:
    """``structure`` as a boolean ``(3,) * ndim`` array (default: faces only).

    Raises
    ------
    LabelError
        Not of rank ``ndim``, a size other than 3, or not symmetric about its centre.
    """
    if structure is None:
        # Imported here, not at the top: scipy.ndimage takes ~35 ms to import, which
        # every user of chunkflow.graph (to_dask, map_chunks) would pay.
        from scipy import ndimage

        return ndimage.generate_binary_structure(ndim, 1)
    array = np.asarray(structure, dtype=bool)
    if array.ndim != ndim:
        raise LabelError(f"label: structure has rank {array.ndim}; the array has {ndim} "
                         "dimensions, and the structure must have as many")
    if any(n != 3 for n in array.shape):
        raise LabelError(f"label: structure has shape {array.shape}; every dimension must "
                         "be 3 (offsets -1, 0 and 1)")
    if not np.array_equal(array, array[(slice(None, None, -1),) * ndim]):
        raise LabelError("label: structure is not symmetric about its centre (a voxel "
                         "connected to a neighbour must be connected back); got "
                         f"{array.astype(int).tolist()}")
    return array


def _offsets(structure: np.ndarray) -> list[tuple[int, ...]]:
    ndim = structure.ndim
    return [tuple(int(c) - 1 for c in index) for index in zip(*np.nonzero(structure))
            if any(c != 1 for c in index) and len(index) == ndim]


def block_offsets(structure: np.ndarray) -> list[tuple[tuple[int, ...], list[tuple[int, ...]]]]:
    """The block offsets ``o`` (first non-zero entry positive: each pair of blocks once)
    whose blocks the structure connects, each with the voxel offsets that do."""
    voxels = _offsets(structure)
    found = []
    for o in itertools.product((-1, 0, 1), repeat=structure.ndim):
        nonzero = [x for x in o if x]
        if not nonzero or nonzero[0] < 0:
            continue
        matching = [v for v in voxels if all(vo == oo for vo, oo in zip(v, o) if oo)]
        if matching:
            found.append((o, matching))
    return found
