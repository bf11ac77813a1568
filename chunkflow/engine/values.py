"""Values written to an array: conversion, broadcasting and chunked copies."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np

from chunkflow.engine.pool import io_threads
from chunkflow.errors import DtypeMismatchError, ShapeMismatchError, ValueOutOfRangeError
from chunkflow.indexing import BasicIndexer, ChunkProjection

if TYPE_CHECKING:
    from numpy.typing import ArrayLike

    from chunkflow.engine.chunk_io import ChunkIO
    from chunkflow.indexing import Indexer

__all__ = ["convert_dtype", "copy_from_source", "is_chunked_source", "prepare_value"]


def prepare_value(value: ArrayLike, dtype: np.dtype, indexer: Indexer, path: str) -> np.ndarray:
    """``value`` as an array of ``dtype`` shaped like the indexer's buffer (or 0-d).

    Raises before anything is written when the dtype or the shape do not fit.

    Examples
    --------
    >>> from chunkflow.grid import RegularChunkGrid
    >>> indexer = BasicIndexer((slice(0, 2), 1), RegularChunkGrid((4, 4), (2, 2)))
    >>> prepare_value([1.5, 2.5], np.dtype("i2"), indexer, "x")
    array([1, 2], dtype=int16)
    >>> prepare_value(np.ones(3), np.dtype("i2"), indexer, "x")  # doctest: +NORMALIZE_WHITESPACE
    Traceback (most recent call last):
    ...
    chunkflow.errors.ShapeMismatchError: array 'x': cannot write a value of shape (3,) to a selection of shape
    (2,)
    """
    if dtype.kind == "O" and tuple(indexer.sel_shape) == ():
        # One item of an object array holds the value itself, a list or an array
        # included, as numpy's ``a[i] = [1, 2]`` and zarr-python 2 store it.
        item = np.empty((), dtype=object)
        item[()] = value
        return item
    array = convert_dtype(value, dtype, path)
    if array.ndim == 0:
        return array
    target = tuple(indexer.sel_shape)
    if array.shape != target:
        try:
            array = np.broadcast_to(array, target)
        except ValueError:
            raise ShapeMismatchError(
                f"array {path or '/'!r}: cannot write a value of shape {array.shape} to a "
                f"selection of shape {target}"
            ) from None
    if tuple(indexer.shape) != target:
        array = array.reshape(indexer.shape)
    return array


def convert_dtype(value: ArrayLike, dtype: np.dtype, path: str) -> np.ndarray:
    """``value`` as a numpy array of ``dtype``; a clear error when it cannot be."""
    try:
        if dtype.names is not None and not isinstance(value, np.ndarray):
            # A tuple is one structured item, a list of tuples several: numpy reads
            # them as records only when told the dtype.
            return np.asarray(value, dtype=dtype)
        source = np.asarray(value) if dtype.kind != "O" else _object_array(value)
        if source.dtype == dtype:
            return source
        _check_kinds(source.dtype, dtype, path)
        if isinstance(value, np.ndarray) or dtype.kind == "V":
            return source.astype(dtype)
        # Scalars (Python or numpy) and (nested) lists: assign as numpy assigns, which
        # checks that integers fit instead of wrapping them (300 -> 44 in uint8).
        converted = np.empty(source.shape, dtype=dtype)
        converted[...] = value
        return converted
    except OverflowError as err:
        raise ValueOutOfRangeError(
            f"array {path or '/'!r}: the value ({_describe(value)}) does not fit the array's "
            f"dtype {dtype} ({err}); nothing was written"
        ) from None
    except (ValueError, TypeError) as err:
        if isinstance(err, DtypeMismatchError):
            raise
        raise DtypeMismatchError(
            f"array {path or '/'!r}: cannot convert the value ({_describe(value)}) to the "
            f"array's dtype {dtype}: {err}"
        ) from None


def _object_array(value: ArrayLike) -> np.ndarray:
    if isinstance(value, np.ndarray):
        return value.astype(object) if value.dtype != object else value
    if isinstance(value, (str, bytes)) or np.ndim(value) == 0:
        out = np.empty((), dtype=object)
        out[()] = value
        return out
    return np.asarray(value, dtype=object)


# Conversions numpy allows but that silently produce garbage for stored data.
_REFUSED = {("U", "f"), ("U", "i"), ("U", "u"), ("U", "c"), ("U", "b"), ("S", "f"), ("S", "i"),
            ("S", "u"), ("S", "c"), ("S", "b"), ("f", "S"), ("f", "U"), ("i", "S"), ("i", "U")}


def _check_kinds(source: np.dtype, target: np.dtype, path: str) -> None:
    if (source.kind, target.kind) in _REFUSED or (
        (source.kind == "V") != (target.kind == "V") and source.kind != "O"
    ):
        raise DtypeMismatchError(
            f"array {path or '/'!r}: cannot write values of dtype {source} into an array of "
            f"dtype {target}; convert them explicitly first"
        )


def _describe(value: object) -> str:
    dtype = getattr(value, "dtype", None)
    return f"dtype {dtype}" if dtype is not None else f"{type(value).__name__} {value!r:.60}"


def is_chunked_source(value: object) -> bool:
    """Whether ``value`` should be copied piecewise (an array-like that is not numpy).

    chunkflow arrays, zarr arrays, h5py datasets and dask arrays qualify: they have a
    shape and a dtype, are sliceable, and reading all of them at once could exhaust
    memory.
    """
    return (
        not isinstance(value, np.ndarray)
        and hasattr(value, "shape")
        and hasattr(value, "dtype")
        and hasattr(value, "__getitem__")
        and len(getattr(value, "shape", ())) > 0
    )


def copy_from_source(dst: ChunkIO, dtype: np.dtype, indexer: BasicIndexer, source: Any) -> None:
    """Write ``source`` through the chunk I/O ``dst`` of an array of ``dtype``, a few
    destination chunks at a time.

    Memory stays bounded by one batch of destination chunks (a few per I/O thread),
    whatever the size of ``source``.
    """
    target = tuple(indexer.sel_shape)
    if tuple(source.shape) != target:
        raise ShapeMismatchError(
            f"array {dst.path or '/'!r}: cannot copy a source of shape {tuple(source.shape)} "
            f"to a selection of shape {target}"
        )
    batch_size = max(1, io_threads() * 2)
    batch: list[ChunkProjection] = []
    for proj in indexer:
        # A batch holds chunks of one row of the grid, so its bounding box is small.
        if batch and (len(batch) == batch_size
                      or proj.chunk_coords[:-1] != batch[0].chunk_coords[:-1]):
            _copy_batch(dst, dtype, batch, source)
            batch = []
        batch.append(proj)
    if batch:
        _copy_batch(dst, dtype, batch, source)


def _copy_batch(dst: ChunkIO, dtype: np.dtype, batch: list[ChunkProjection],
                source: Any) -> None:
    # Read the bounding box of the batch's output regions once, then write each chunk
    # from its part of it.
    lower = [min(p.out_selection[d].start for p in batch) for d in range(len(batch[0].out_selection))]
    upper = [max(p.out_selection[d].stop for p in batch) for d in range(len(lower))]
    box = tuple(slice(lo, hi) for lo, hi in zip(lower, upper))
    block = convert_dtype(source[box], dtype, dst.path)
    rebased = [
        p._replace(out_selection=tuple(
            slice(s.start - lo, s.stop - lo) for s, lo in zip(p.out_selection, lower)
        ))
        for p in batch
    ]
    dst.write(rebased, block)
