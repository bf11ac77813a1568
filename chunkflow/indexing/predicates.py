"""Which kind of selection is this? Used by the array layer to pick an indexer.

Examples
--------
>>> import numpy as np
>>> is_basic_selection((0, slice(None))), is_mask_selection(np.eye(2, dtype=bool), 2)
(True, True)
"""

from __future__ import annotations

import numpy as np

from chunkflow.indexing.dims import as_int, is_array_like
from chunkflow.indexing.selection_types import Selection, SelectionItem

__all__ = [
    "Selection",
    "SelectionItem",
    "is_basic_selection",
    "is_coordinate_selection",
    "is_mask_selection",
]

def is_basic_selection(selection: Selection) -> bool:
    """Return whether ``selection`` holds only integers, slices and ``...``.

    Examples
    --------
    >>> is_basic_selection((1, slice(None), ...)), is_basic_selection(([1, 2],))
    (True, False)
    """
    sel = selection if isinstance(selection, tuple) else (selection,)
    return all(
        isinstance(s, slice) or s is Ellipsis or as_int(s) is not None for s in sel
    )


def is_coordinate_selection(selection: Selection, ndim: int) -> bool:
    """Return whether ``selection`` is one integer or integer array per dimension.

    Examples
    --------
    >>> is_coordinate_selection(([0, 1], [2, 3]), 2), is_coordinate_selection(([0, 1],), 2)
    (True, False)
    """
    sel = selection if isinstance(selection, tuple) else (selection,)
    return len(sel) == ndim and all(as_int(s) is not None or _is_int_array(s) for s in sel)


def _is_int_array(value: object) -> bool:
    if not is_array_like(value):
        return False
    arr = np.asarray(value)
    return arr.dtype.kind in "iu" or (arr.size == 0 and arr.dtype != bool)


def is_mask_selection(selection: Selection, ndim: int) -> bool:
    """Return whether ``selection`` is a single boolean array with ``ndim`` dimensions.

    Examples
    --------
    >>> import numpy as np
    >>> is_mask_selection(np.ones((2, 2), dtype=bool), 2), is_mask_selection((1, 2), 2)
    (True, False)
    """
    sel = selection if isinstance(selection, tuple) else (selection,)
    if len(sel) != 1 or not is_array_like(sel[0]):
        return False
    arr = np.asarray(sel[0])
    return arr.dtype == bool and arr.ndim == ndim
