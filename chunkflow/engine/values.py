"""Values written to an array: conversion, broadcasting and chunked copies."""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from typing import TYPE_CHECKING, Any, Protocol, TypeGuard

import numpy as np

from chunkflow.buffers import scratch_buffer
from chunkflow.engine.pool import io_lanes, map_groups
from chunkflow.errors import DtypeMismatchError, ShapeMismatchError, ValueOutOfRangeError
from chunkflow.indexing import BasicIndexer, ChunkProjection

if TYPE_CHECKING:
    from numpy.typing import ArrayLike

    from chunkflow.engine.chunk_io import ChunkIO
    from chunkflow.indexing import Indexer

__all__ = ["convert_dtype", "copy_from_source", "fit_array_value", "is_chunked_source",
           "prepare_value", "writes_nothing"]

#: Destination chunks one copy unit holds at most (fewer when they are large): with
#: one unit per I/O thread in flight, a copy holds a few chunks per thread.
_UNIT_CHUNKS = 2
_UNIT_BYTES = 4 * 1024 * 1024


def fit_array_value(value: ArrayLike | ChunkedSource, shape: tuple[int, ...], *,
                    element: bool = False) -> ArrayLike | ChunkedSource:
    """A numpy array ``value`` shaped as numpy's assignment takes it into a selection of
    ``shape``; other values unchanged.

    numpy ignores an array's leading sides of 1 beyond the selection's dimensions
    (``a[0:2] = np.ones((1, 1, 2))``), except for one ``element`` named by integers
    alone, which takes a scalar only (and a list is read with the selection's
    dimensions at most, so ``[[[1, 2]]]`` does not fit ``a[0:2]``).

    Examples
    --------
    >>> fit_array_value(np.ones((1, 1, 2)), (2,)).shape
    (2,)
    >>> fit_array_value(np.ones(1), (), element=True).shape
    (1,)
    """
    if not isinstance(value, np.ndarray):
        return value
    extra = value.ndim - len(shape)
    if not element and extra > 0 and all(n == 1 for n in value.shape[:extra]):
        return value.reshape(value.shape[extra:])
    return value


def writes_nothing(value: ArrayLike | ChunkedSource, shape: tuple[int, ...], path: str) -> bool:
    """Whether writing ``value`` into a selection of ``shape`` is over once checked: an
    array into an empty selection. numpy converts an array's elements as it writes
    them, so it converts (and refuses) none of them there.

    Raises
    ------
    ShapeMismatchError
        When the array cannot broadcast to the empty selection (a ``ValueError``).

    Examples
    --------
    >>> writes_nothing(np.array(["a"]), (0, 3), "x"), writes_nothing("a", (0, 3), "x")
    (True, False)
    """
    if not isinstance(value, np.ndarray) or 0 not in shape:
        return False
    _broadcast(value, shape, path)
    return True


def _broadcast(array: np.ndarray, target: tuple[int, ...], path: str) -> np.ndarray:
    try:
        return np.broadcast_to(array, target)
    except ValueError:
        raise ShapeMismatchError(
            f"array {path or '/'!r}: cannot write a value of shape {array.shape} to a "
            f"selection of shape {target}"
        ) from None


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
        array = _broadcast(array, target, path)
    if tuple(indexer.shape) != target:
        array = array.reshape(indexer.shape)
    return array


def convert_dtype(value: ArrayLike, dtype: np.dtype, path: str) -> np.ndarray:
    """``value`` as a numpy array of ``dtype``, converted as numpy's assignment converts
    it (``a[...] = value``): ``"1.5"`` into floats, ``1.5`` into strings, integers
    that do not fit refused; a chunkflow error of numpy's class where numpy refuses.

    Raises
    ------
    ValueOutOfRangeError
        Where numpy raises ``OverflowError`` (an integer that does not fit).
    DtypeMismatchError
        Where numpy raises ``ValueError`` or ``TypeError`` (``"abc"`` into floats,
        complex into floats); it is both.

    Examples
    --------
    >>> convert_dtype("1.5", np.dtype("f8"), "x")
    array(1.5)
    >>> convert_dtype([1.5, 300], np.dtype("U3"), "x")
    array(['1.5', '300'], dtype='<U3')
    >>> convert_dtype("abc", np.dtype("f8"), "x")
    Traceback (most recent call last):
    ...
    chunkflow.errors.DtypeMismatchError: array 'x': cannot convert the value (str 'abc') to \
the array's dtype float64: could not convert string to float: 'abc'
    """
    try:
        if dtype.names is not None and not isinstance(value, np.ndarray):
            # A tuple is one structured item, a list of tuples several: numpy reads
            # them as records only when told the dtype.
            return np.asarray(value, dtype=dtype)
        source = np.asarray(value) if dtype.kind != "O" else _object_array(value)
        if source.dtype == dtype:
            return source
        # Assign as numpy assigns: from the value itself, not from np.asarray(value),
        # so that Python integers are checked to fit instead of wrapping (300 -> 44
        # in uint8) and Python floats are not first rounded to another type.
        converted = np.empty(source.shape, dtype=dtype)
        converted[...] = value if dtype.kind != "O" else source
        return converted
    except OverflowError as err:
        raise ValueOutOfRangeError(
            f"array {path or '/'!r}: the value ({_describe(value)}) does not fit the array's "
            f"dtype {dtype} ({err}); nothing was written"
        ) from None
    except (ValueError, TypeError) as err:
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


def _describe(value: object) -> str:
    dtype = getattr(value, "dtype", None)
    return f"dtype {dtype}" if dtype is not None else f"{type(value).__name__} {value!r:.60}"


class ChunkedSource(Protocol):
    """What :func:`is_chunked_source` accepts: a shape, a dtype, slicing and conversion
    to numpy (a chunkflow, zarr or dask array, an h5py dataset)."""

    @property
    def shape(self) -> tuple[int, ...]: ...

    @property
    def dtype(self) -> np.dtype: ...

    def __getitem__(self, key: Any) -> Any: ...

    def __array__(self) -> np.ndarray: ...


def is_chunked_source(value: object) -> TypeGuard[ChunkedSource]:
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


def copy_from_source(dst: ChunkIO, dtype: np.dtype, indexer: BasicIndexer, source: Any,
                     read_into: ReadInto | None = None) -> None:
    """Write ``source`` through the chunk I/O ``dst`` of an array of ``dtype``, a few
    destination chunks at a time.

    Memory stays bounded by a unit of destination chunks (two consecutive ones in a
    row of the grid, or one large one) per I/O thread, whatever the size of
    ``source``. With ``read_into`` (``read_into(selection, out=buffer)``: a
    chunkflow source stored elsewhere than ``dst``), each I/O thread reads a unit into
    its own reused buffer and writes it, while the others do the same (no fresh
    memory per unit, reads and writes overlapping); otherwise units are read from
    ``source`` and written one after another.
    """
    target = tuple(indexer.sel_shape)
    if tuple(source.shape) != target:
        raise ShapeMismatchError(
            f"array {dst.path or '/'!r}: cannot copy a source of shape {tuple(source.shape)} "
            f"to a selection of shape {target}"
        )
    threads = io_lanes(2) if read_into is not None else 1
    units: list[list[ChunkProjection]] = []
    for unit in _units(dst, indexer):
        units.append(unit)
        if len(units) == 2 * threads:  # a window of units at a time: the indexer is lazy
            _copy_units(dst, dtype, units, source, read_into, threads)
            units = []
    _copy_units(dst, dtype, units, source, read_into, threads)


ReadInto = Callable[..., object]


def _units(dst: ChunkIO, indexer: BasicIndexer) -> Iterator[list[ChunkProjection]]:
    """The indexer's projections in units: up to _UNIT_CHUNKS consecutive chunks of
    one row of the grid (so a unit's bounding box is small), at most _UNIT_BYTES of
    them unless a single chunk is larger."""
    size = max(1, min(_UNIT_CHUNKS, _UNIT_BYTES // max(dst._chunk_bytes, 1)))
    unit: list[ChunkProjection] = []
    for proj in indexer:
        if unit and (len(unit) == size or proj.chunk_coords[:-1] != unit[0].chunk_coords[:-1]):
            yield unit
            unit = []
        unit.append(proj)
    if unit:
        yield unit


def _copy_units(dst: ChunkIO, dtype: np.dtype, units: list[list[ChunkProjection]],
                source: Any, read_into: ReadInto | None, threads: int) -> None:
    if not units:
        return
    if threads == 1:
        for unit in units:
            _copy_unit(dst, dtype, unit, source, read_into)
        return
    def copy_group(group: Sequence[Any]) -> None:
        for unit in group:
            _copy_unit(dst, dtype, unit, source, read_into)

    map_groups(copy_group, units)


def _copy_unit(dst: ChunkIO, dtype: np.dtype, unit: list[ChunkProjection], source: Any,
               read_into: ReadInto | None) -> None:
    # Read the bounding box of the unit's output regions once, then write each chunk
    # from its part of it.
    lower = [min(p.out_selection[d].start for p in unit) for d in range(len(unit[0].out_selection))]
    upper = [max(p.out_selection[d].stop for p in unit) for d in range(len(lower))]
    box = tuple(slice(lo, hi) for lo, hi in zip(lower, upper))
    if read_into is not None and not source.dtype.hasobject:
        # This thread's reused buffer: a fresh one per unit would page-fault each time.
        buffer = scratch_buffer(tuple(hi - lo for lo, hi in zip(lower, upper)), source.dtype,
                                slot="copy")
        read_into(box, out=buffer)
        block = convert_dtype(buffer, dtype, dst.path)
    else:
        block = convert_dtype(source[box], dtype, dst.path)
    rebased = [
        p._replace(out_selection=tuple(
            slice(s.start - lo, s.stop - lo) for s, lo in zip(p.out_selection, lower)
        ))
        for p in unit
    ]
    dst.write(rebased, block)
