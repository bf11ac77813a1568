"""Changing an array's shape: ``resize`` and ``append``."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np

from chunkflow.errors import ShapeMismatchError
from chunkflow.grid import normalize_shape

from chunkflow.array.repair import clear_grown_region, trim_beyond_shape
from chunkflow.array.values import convert_dtype, is_chunked_source

if TYPE_CHECKING:
    from chunkflow.array.core import Array

__all__ = ["resize_array", "append_to_array"]


def resize_array(array: Array, shape_args: tuple[Any, ...]) -> None:
    """Give ``array`` a new shape (same rank); see :meth:`chunkflow.Array.resize`.

    The caller holds the array-level lock when a synchronizer is set.
    """
    if len(shape_args) == 1 and not isinstance(shape_args[0], (int, np.integer)):
        shape_args = tuple(shape_args[0])
    new_shape = normalize_shape(shape_args)
    old_shape = array.shape
    if len(new_shape) != len(old_shape):
        raise ShapeMismatchError(
            f"array {array.path or '/'!r}: resize keeps the number of dimensions "
            f"({len(old_shape)}), got new shape {new_shape}"
        )
    old_io = array._io
    # Data first, metadata last: the grown region is cleared while it is still outside
    # the published shape (a crash leaves the old array intact), then the shape is
    # published. Shrinking publishes first (readers stop looking beyond the new shape)
    # and tidies afterwards; what a crash leaves there is garbage the next grow clears.
    clear_grown_region(array, old_shape, new_shape)
    array._write_metadata(array.metadata.with_shape(new_shape))
    shrunk = [d for d, (n, o) in enumerate(zip(new_shape, old_shape)) if n < o]
    if shrunk:
        trim_beyond_shape(array, shrunk)
    old_io.forget_cached()


def append_to_array(array: Array, data: Any, axis: int) -> tuple[int, ...]:
    """Append ``data`` along ``axis``; see :meth:`chunkflow.Array.append`."""
    if not is_chunked_source(data):
        # Convert before the shape changes, so bad data leaves the array as it was.
        data = convert_dtype(data, array.dtype, array.path)
    ndim = array.ndim
    if not -ndim <= axis < ndim:
        raise ShapeMismatchError(
            f"array {array.path or '/'!r}: axis {axis} is out of range for {ndim} dimensions"
        )
    axis %= ndim
    old_shape = array.shape
    data_shape = tuple(data.shape)
    if len(data_shape) != ndim or any(
        d != s for i, (d, s) in enumerate(zip(data_shape, old_shape)) if i != axis
    ):
        raise ShapeMismatchError(
            f"array {array.path or '/'!r}: cannot append data of shape {data_shape} along "
            f"axis {axis} to shape {old_shape}; all other dimensions must match"
        )
    new_shape = tuple(
        s + d if i == axis else s for i, (s, d) in enumerate(zip(old_shape, data_shape))
    )
    region = tuple(
        slice(old_shape[i], new_shape[i]) if i == axis else slice(None) for i in range(ndim)
    )
    metadata = array.metadata.with_shape(new_shape)
    # Data first, through a handle on the grown grid that nobody else sees yet: the
    # appended rows cover the whole grown region (overwriting whatever a crash or a
    # stale handle left there), and only then is the new shape published. A failure
    # before that leaves the old array, never rows of fill_value posing as data.
    staged = type(array)._from_metadata(array.store, array.path, metadata,
                                        array.attrs.asdict(), array.options)
    staged[region] = data
    array._write_metadata(metadata)
    return new_shape
