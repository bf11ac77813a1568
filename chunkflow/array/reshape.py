"""Changing an array's shape: ``resize`` and ``append``."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np

from chunkflow.errors import ShapeMismatchError
from chunkflow.grid import normalize_shape

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
    # The shape is authoritative: write it first, then drop what lies outside.
    array._write_metadata(array.metadata.with_shape(new_shape))
    _trim_chunks(array, old_io, old_shape, new_shape)
    old_io.forget_cached()


def _trim_chunks(
    array: Array, old_io: Any, old_shape: tuple[int, ...], new_shape: tuple[int, ...]
) -> None:
    if all(n >= o for n, o in zip(new_shape, old_shape)):
        return
    chunks = array.chunks
    outside: list[str] = []
    cut: list[tuple[tuple[int, ...], str]] = []
    for coords, key in old_io.stored_chunks():
        starts = [c * size for c, size in zip(coords, chunks)]
        if any(start >= n for start, n in zip(starts, new_shape)):
            outside.append(key)
        elif any(
            start + size > n and o > n
            for start, size, n, o in zip(starts, chunks, new_shape, old_shape)
        ):
            cut.append((coords, key))
    array._io.discard(outside)
    with array._io.lock_keys([key for _, key in cut]):
        for coords, key in cut:
            _clear_beyond(array, coords, key, new_shape)


def _clear_beyond(
    array: Array, coords: tuple[int, ...], key: str, new_shape: tuple[int, ...]
) -> None:
    # Padding beyond the shape must hold fill_value, or growing the array again would
    # resurrect data that resize removed.
    io = array._io
    chunk = io.read_chunk(coords)
    for dim, (c, size, n) in enumerate(zip(coords, array.chunks, new_shape)):
        inside = n - c * size
        if inside < size:
            region = [slice(None)] * chunk.ndim
            region[dim] = slice(max(inside, 0), None)
            chunk[tuple(region)] = io.fill_value
    io.store[key] = io.encode(key, chunk)


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
    resize_array(array, (new_shape,))
    region = tuple(
        slice(old_shape[i], new_shape[i]) if i == axis else slice(None) for i in range(ndim)
    )
    array[region] = data
    return new_shape
