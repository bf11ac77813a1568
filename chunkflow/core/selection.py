"""How ``z[...]`` is read: which selection kind, and the ``oindex``/``vindex`` accessors."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import numpy as np

from chunkflow.indexing import is_basic_selection, is_mask_selection

if TYPE_CHECKING:
    from numpy.typing import ArrayLike

    from chunkflow.indexing import Selection

__all__ = ["SelectionAccessor", "has_ellipsis", "selection_kind"]


class SelectionAccessor:
    """``z.oindex[...]`` / ``z.vindex[...]``: item access routed to one selection kind."""

    def __init__(self, getter: Callable[[Any], np.ndarray],
                 setter: Callable[[Any, Any], None]) -> None:
        self._getter = getter
        self._setter = setter

    def __getitem__(self, selection: Selection) -> np.ndarray:
        return self._getter(selection)

    def __setitem__(self, selection: Selection, value: ArrayLike) -> None:
        self._setter(selection, value)


def has_ellipsis(selection: Selection) -> bool:
    if selection is Ellipsis:
        return True
    return isinstance(selection, tuple) and any(s is Ellipsis for s in selection)


def selection_kind(selection: Selection, ndim: int) -> str:
    """How ``z[selection]`` is interpreted, following zarr-python 3.

    Basic selections are basic; a boolean array of the array's shape is a mask;
    integer arrays for every dimension are coordinates; anything else is orthogonal.
    """
    if is_basic_selection(selection):
        return "basic"
    if is_mask_selection(selection, ndim):
        return "mask"
    parts = selection if isinstance(selection, tuple) else (selection,)
    arrays = [np.asarray(p) for p in parts if isinstance(p, (list, np.ndarray))]
    if len(parts) == ndim and len(arrays) == ndim > 1 and all(
        a.dtype.kind in "iu" for a in arrays
    ):
        return "coordinate"
    return "orthogonal"
