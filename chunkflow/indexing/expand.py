"""A selection as one entry per dimension: the one place that expands ``...``.

numpy's rules: ``...`` stands for as many full slices as the other entries leave
dimensions, at most one ``...`` is allowed, ``None`` (``np.newaxis``) takes no
dimension and a boolean array takes as many as it has. Missing trailing dimensions
are full slices.

Examples
--------
>>> expand_ellipsis((..., 1), (4, 5, 6))
(slice(None, None, None), slice(None, None, None), 1)
>>> expand_ellipsis((None, 0, ...), (4, 5))
(None, 0, slice(None, None, None))
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import numpy as np

from chunkflow.errors import InvalidSelectionError

if TYPE_CHECKING:
    from chunkflow.indexing.selection_types import Selection

__all__ = ["dims_taken", "expand_ellipsis", "selection_entries"]

_FULL = slice(None)
_NOTHING = object()


def selection_entries(selection: Selection) -> tuple[Any, ...]:
    """``selection`` as a tuple of entries (a single entry becomes a 1-tuple).

    Examples
    --------
    >>> selection_entries(3), selection_entries((1, 2)), selection_entries([1, 2])
    ((3,), (1, 2), ([1, 2],))
    """
    return selection if isinstance(selection, tuple) else (selection,)


def dims_taken(entry: object) -> int:
    """How many array dimensions one entry of a numpy selection takes.

    Examples
    --------
    >>> dims_taken(None), dims_taken(slice(2)), dims_taken(np.ones((2, 3), dtype=bool))
    (0, 1, 2)
    """
    if entry is None:
        return 0
    if isinstance(entry, np.ndarray) and entry.dtype == bool:
        return entry.ndim
    return 1


def expand_ellipsis(
    selection: Selection | tuple[Any, ...],
    shape: tuple[int, ...],
    *,
    taken: Callable[[object], int] = dims_taken,
    prefix: str = "",
    gap: object = _NOTHING,
) -> tuple[Any, ...]:
    """``selection`` with its ``...`` replaced by full slices and padded to ``ndim``.

    Parameters
    ----------
    selection : Selection
        One entry or a tuple of entries; at most one of them ``...``.
    shape : tuple of int
        The array's shape.
    taken : callable, optional
        How many dimensions an entry takes (default :func:`dims_taken`: ``None`` none,
        a boolean array its ``ndim``, anything else one).
    prefix : str, optional
        Starts error messages (``"array 'x': "``).
    gap : object, optional
        Put in place of a ``...`` that stands for no dimension (numpy still counts it
        as separating the advanced indices around it); by default nothing is.

    Returns
    -------
    tuple
        The entries, taking exactly ``len(shape)`` dimensions together.

    Raises
    ------
    InvalidSelectionError
        For a second ``...`` or entries that take more dimensions than ``shape`` has.

    Examples
    --------
    >>> expand_ellipsis(..., ())
    ()
    >>> expand_ellipsis((0, ..., 1, 2), (4, 5))
    Traceback (most recent call last):
    ...
    chunkflow.errors.InvalidSelectionError: too many indices for an array of shape (4, 5): \
(0, Ellipsis, 1, 2) takes 3 dimensions
    """
    entries = selection_entries(selection)
    at = -1
    used = 0
    for i, entry in enumerate(entries):
        if entry is Ellipsis:
            if at >= 0:
                raise InvalidSelectionError(
                    f"{prefix}selection {selection!r} has more than one Ellipsis ('...')")
            at = i
        else:
            used += taken(entry)
    if used > len(shape):
        raise InvalidSelectionError(
            f"{prefix}too many indices for an array of shape {tuple(shape)}: {selection!r} "
            f"takes {used} dimensions")
    fill: tuple[Any, ...] = (_FULL,) * (len(shape) - used)
    if not fill and gap is not _NOTHING:
        fill = (gap,)
    if at >= 0:
        return entries[:at] + fill + entries[at + 1:]
    return entries + fill
