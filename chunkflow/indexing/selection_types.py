"""The types of a selection (what ``array[...]`` takes), below every indexing module."""

from __future__ import annotations

from collections.abc import Sequence
from types import EllipsisType
from typing import SupportsIndex, TypeAlias

import numpy as np

__all__ = ["Selection", "SelectionItem"]

#: One dimension's part of a selection: an integer, a slice, ``...``, or an integer
#: array or list (indices, coordinates) or a boolean one (a mask).
SelectionItem: TypeAlias = SupportsIndex | slice | EllipsisType | Sequence[int] | Sequence[bool] | np.ndarray

#: What ``array[...]`` and the ``get_*_selection`` methods accept: one item or a tuple of
#: them, one per dimension (fewer are completed with full slices).
Selection: TypeAlias = SelectionItem | tuple[SelectionItem, ...]
