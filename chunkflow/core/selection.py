"""Helpers of the selection methods: the ``oindex``/``vindex``/``blocks`` accessors, and
the ``out=`` buffers of reads."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import numpy as np

from chunkflow.errors import InvalidOutError, ShapeMismatchError
from chunkflow.indexing import pop_fields

if TYPE_CHECKING:
    from numpy.typing import ArrayLike

    from chunkflow.indexing import Selection

__all__ = ["SelectionAccessor", "has_ellipsis", "read_target"]


class SelectionAccessor:
    """``z.oindex[...]`` / ``z.vindex[...]`` / ``z.blocks[...]``: item access routed to
    one selection kind; with ``fields=True`` field names in the selection are passed
    on as ``fields=`` (``z.oindex[[0, 2], "foo"]``), as zarr-python does."""

    def __init__(self, getter: Callable[..., Any], setter: Callable[..., None], *,
                 fields: bool = False) -> None:
        self._getter = getter
        self._setter = setter
        self._fields = fields

    def __getitem__(self, selection: Selection) -> Any:
        if not self._fields:
            return self._getter(selection)
        fields, rest = pop_fields(selection)
        return self._getter(rest, fields=fields)

    def __setitem__(self, selection: Selection, value: ArrayLike) -> None:
        if not self._fields:
            self._setter(selection, value)
            return
        fields, rest = pop_fields(selection)
        self._setter(rest, value, fields=fields)


def has_ellipsis(selection: Selection) -> bool:
    """Whether ``selection`` holds ``...`` (numpy then returns a 0-d array, not a scalar)."""
    if selection is Ellipsis:
        return True
    return isinstance(selection, tuple) and any(s is Ellipsis for s in selection)


def read_target(out: Any, shape: tuple[int, ...], prefix: str = "") -> np.ndarray:
    """The numpy array a read fills for ``out=``: ``out`` itself, or the array of a
    zarr-python ``NDBuffer`` (its ``as_ndarray_like()``), of the result's ``shape``.

    Raises
    ------
    InvalidOutError
        When ``out`` is not an array (a ``TypeError``).
    ShapeMismatchError
        When its shape is not the result's.

    Examples
    --------
    >>> read_target(np.zeros(3), (3,)).shape
    (3,)
    >>> read_target([], (3,))
    Traceback (most recent call last):
    ...
    chunkflow.errors.InvalidOutError: out must be a numpy array (or a zarr-python NDBuffer), got list
    """
    target = out
    if not isinstance(out, np.ndarray) and hasattr(out, "as_ndarray_like"):
        target = out.as_ndarray_like()
    if not isinstance(target, np.ndarray):
        raise InvalidOutError(f"{prefix}out must be a numpy array (or a zarr-python "
                              f"NDBuffer), got {type(out).__name__}")
    if target.shape != tuple(shape):
        raise ShapeMismatchError(f"{prefix}out has shape {target.shape}; the selection "
                                 f"needs {tuple(shape)}")
    return target
