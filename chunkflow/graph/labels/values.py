"""Connected regions of equal value (``skimage.measure.label``'s components) in one
window, for :func:`chunkflow.segment` to make global.

Two voxels are connected when they are neighbours under ``connectivity`` (1 to
``ndim`` steps along axes, as scikit-image's) and hold the same value; voxels equal to
``background`` are 0. The numbering inside a window is arbitrary (``segment``
renumbers by first voxel in C order, as scikit-image numbers).

scikit-image's own labelling runs when it is installed; without it, each distinct
value is labelled by ``scipy.ndimage.label`` (few values) or the equal-valued
neighbour pairs go to ``scipy.sparse.csgraph`` (many).

Examples
--------
>>> import numpy as np
>>> window = np.array([[1, 1, 2, 0], [0, 2, 2, 1], [3, 0, 0, 1]])
>>> value_components(window, 2, 0, engine="scipy").tolist()  # numbered by value, then position
[[1, 1, 3, 0], [0, 3, 3, 2], [4, 0, 0, 2]]
"""

from __future__ import annotations

from typing import Any

import numpy as np
from scipy import ndimage, sparse
from scipy.sparse import csgraph

__all__ = ["FEW_VALUES", "value_components"]

#: Up to this many distinct values, the scipy path labels each value alone.
FEW_VALUES = 32


def _by_value(window: np.ndarray, foreground: np.ndarray, structure: np.ndarray) -> np.ndarray:
    labels = np.zeros(window.shape, np.int64)
    count = 0
    for value in np.unique(window[foreground]):
        found, n = ndimage.label(foreground & (window == value), structure)
        labels[found > 0] = found[found > 0] + count
        count += n
    return labels


def _by_pairs(window: np.ndarray, foreground: np.ndarray, structure: np.ndarray) -> np.ndarray:
    index = np.full(window.shape, -1, np.int64)
    index[foreground] = np.arange(int(foreground.sum()))
    rows, cols = [], []
    centre = tuple(s // 2 for s in structure.shape)
    for offset in zip(*np.nonzero(structure)):
        step = tuple(o - c for o, c in zip(offset, centre))
        if step <= (0,) * len(step):
            continue  # each pair once: the offsets after the centre
        here = tuple(slice(max(0, -s), n - max(0, s)) for s, n in zip(step, window.shape))
        there = tuple(slice(max(0, s), n - max(0, -s)) for s, n in zip(step, window.shape))
        same = foreground[here] & foreground[there] & (window[here] == window[there])
        rows.append(index[here][same])
        cols.append(index[there][same])
    size = int(foreground.sum())
    row = np.concatenate(rows) if rows else np.empty(0, np.int64)
    col = np.concatenate(cols) if cols else np.empty(0, np.int64)
    graph = sparse.coo_matrix((np.ones(row.size, np.int8), (row, col)), shape=(size, size))
    _, components = csgraph.connected_components(graph, directed=False)
    labels = np.zeros(window.shape, np.int64)
    labels[foreground] = components + 1
    return labels


def value_components(window: np.ndarray, connectivity: int, background: Any,
                     engine: str = "auto") -> np.ndarray:
    """int64 labels of the equal-valued connected regions of ``window`` (``background``
    voxels 0). ``engine``: ``"auto"`` (scikit-image when installed), ``"scipy"``."""
    if engine == "auto":
        try:
            from skimage.measure import label as skimage_label
        except ImportError:
            engine = "scipy"
        else:
            return np.asarray(skimage_label(window, background=background,
                                            connectivity=connectivity), np.int64)
    foreground = window != background
    structure = ndimage.generate_binary_structure(window.ndim, connectivity)
    if window.dtype == bool or np.unique(window[foreground]).size <= FEW_VALUES:
        return _by_value(window, foreground, structure)
    return _by_pairs(window, foreground, structure)
