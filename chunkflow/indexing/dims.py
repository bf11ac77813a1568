"""Per-dimension indexers: one dimension's selection split over its chunks.

Each indexer returns a :class:`DimProjection`: parallel lists with one entry per chunk
the selection touches along that dimension (chunk index, selection inside the chunk,
selection in the output, whether the chunk is wholly covered). The N-d indexers in
:mod:`chunkflow.indexing.selections` take the product of these.

Examples
--------
>>> p = slice_dim(slice(2, 9), dim=0, size=10, chunk=4, shape=(10,))
>>> p.chunk_indices, p.chunk_selections, p.out_selections, p.complete
([0, 1, 2], [slice(2, 4, None), slice(0, 4, None), slice(0, 1, None)], \
[slice(0, 2, None), slice(2, 6, None), slice(6, 7, None)], [False, True, False])
"""

from __future__ import annotations

import numbers
from typing import TYPE_CHECKING, Any, NamedTuple

import numpy as np

from chunkflow.errors import BoundsCheckError, InvalidSelectionError
from chunkflow.grid import ceil_div
from chunkflow.indexing.expand import expand_ellipsis

if TYPE_CHECKING:
    from chunkflow.indexing.selection_types import Selection

__all__ = [
    "DimProjection",
    "as_int",
    "bool_array_dim",
    "expand_selection",
    "int_array_dim",
    "int_dim",
    "is_array_like",
    "normalize_int_array",
    "slice_dim",
]

DimSelection = Any  # int | slice | np.ndarray


class DimProjection(NamedTuple):
    """One dimension of a selection, split over the chunks it touches (ascending output).

    ``out_selections`` is empty for dropped (integer-indexed) dimensions.
    """

    chunk_indices: list[int]
    chunk_selections: list[DimSelection]
    out_selections: list[DimSelection]
    complete: list[bool]
    length: int  # output length along this dimension
    dropped: bool  # removed from the output by an integer index
    fancy: bool = False  # selected by an integer or boolean array


_EMPTY = DimProjection([], [], [], [], 0, False)


def as_int(value: object) -> int | None:
    """Return ``value`` as an int if it is an integer index (not a bool), else None.

    Examples
    --------
    >>> as_int(3), as_int(np.int8(-1)), as_int(np.array(2)), as_int(True), as_int(1.0)
    (3, -1, 2, None, None)
    """
    if type(value) is int:  # the common case; skips the slow ABC check below
        return value
    if isinstance(value, (bool, np.bool_)):
        return None  # numpy treats a bool index as a mask, never as 0 / 1
    if isinstance(value, numbers.Integral):
        return int(value)
    if isinstance(value, np.ndarray) and value.ndim == 0 and value.dtype.kind in "iu":
        return int(value)
    return None


def is_array_like(value: object) -> bool:
    """Whether ``value`` is an index array: a list, a numpy array, or anything numpy
    converts (``__array__``: a chunkflow, zarr or dask array, read in full).

    Examples
    --------
    >>> is_array_like([1, 2]), is_array_like(np.arange(2)), is_array_like("ab")
    (True, True, False)
    """
    return isinstance(value, (np.ndarray, list)) or (
        hasattr(value, "__array__") and not isinstance(value, (str, bytes, np.generic)))


def _out_of_bounds(index: int, dim: int, size: int, shape: tuple[int, ...]) -> BoundsCheckError:
    return BoundsCheckError(
        f"index {index} is out of bounds for dimension {dim} with size {size} "
        f"(array shape {shape}; valid indices are {-size}..{size - 1})"
    )


def expand_selection(selection: Selection, shape: tuple[int, ...]) -> tuple[Any, ...]:
    """Return ``selection`` as a tuple with exactly one entry per dimension.

    Expands ``...``, pads with full slices, and refuses ``None`` and too many entries
    (each entry takes one dimension: this is for basic and orthogonal selections).

    Examples
    --------
    >>> expand_selection((..., 1), (2, 3, 4))
    (slice(None, None, None), slice(None, None, None), 1)
    >>> expand_selection(..., ())
    ()
    """
    sel = selection if isinstance(selection, tuple) else (selection,)
    if any(entry is None for entry in sel):
        raise InvalidSelectionError(
            f"selection {selection!r}: None / np.newaxis is not supported here; "
            "array[...] takes it, as numpy does"
        )
    return expand_ellipsis(sel, shape, taken=_one_dim)


def _one_dim(entry: object) -> int:
    return 1


def int_dim(index: int, dim: int, size: int, chunk: int, shape: tuple[int, ...]) -> DimProjection:
    """Project an integer index (negative counts from the end); the axis is dropped."""
    if not -size <= index < size:
        raise _out_of_bounds(index, dim, size, shape)
    if index < 0:
        index += size
    k = index // chunk
    return DimProjection([k], [index - k * chunk], [], [False], 1, True)


def slice_dim(sl: slice, dim: int, size: int, chunk: int, shape: tuple[int, ...]) -> DimProjection:
    """Project a slice with numpy semantics (clipped bounds, any non-zero step)."""
    if sl.step is not None and as_int(sl.step) == 0:
        raise InvalidSelectionError(f"slice step cannot be zero: {sl!r} (dimension {dim})")
    try:
        start, stop, step = sl.indices(size)
    except TypeError as err:
        raise InvalidSelectionError(
            f"slice {sl!r} for dimension {dim}: start, stop and step must be integers or None"
        ) from err
    n = len(range(start, stop, step))
    if n == 0:
        return _EMPTY
    if step == 1:
        return _unit_slice_dim(start, stop, size, chunk)
    return _strided_slice_dim(start, step, n, size, chunk)


def _unit_slice_dim(start: int, stop: int, size: int, chunk: int) -> DimProjection:
    # The hot path (every aligned read and write): a plain loop, no numpy, because
    # typical selections touch few chunks per dimension and numpy's fixed cost dominates.
    k0, k1 = start // chunk, (stop - 1) // chunk + 1
    if k1 - k0 > 64:
        return _unit_slice_dim_numpy(range(k0, k1), start, stop, size, chunk)
    chunk_sels, out_sels, complete = [], [], []
    for k in range(k0, k1):
        b = k * chunk
        first = b if b > start else start
        end = b + chunk if b + chunk < stop else stop
        chunk_sels.append(slice(first - b, end - b))
        out_sels.append(slice(first - start, end - start))
        # Complete: starts at the chunk start and reaches its in-bounds end.
        complete.append(first == b and (end == b + chunk or end == size))
    return DimProjection(list(range(k0, k1)), chunk_sels, out_sels, complete, stop - start, False)


def _unit_slice_dim_numpy(
    ks: range, start: int, stop: int, size: int, chunk: int
) -> DimProjection:
    # Same arithmetic as above, vectorized: for long dimensions the comprehensions cost
    # more than numpy's fixed overhead.
    bounds = np.arange(ks.start, ks.stop, dtype=np.int64) * chunk
    firsts = np.maximum(bounds, start)
    stops = np.minimum(bounds + chunk, stop)
    chunk_sels = list(map(slice, (firsts - bounds).tolist(), (stops - bounds).tolist()))
    out_sels = list(map(slice, (firsts - start).tolist(), (stops - start).tolist()))
    complete = ((firsts == bounds) & ((stops == bounds + chunk) | (stops == size))).tolist()
    return DimProjection(list(ks), chunk_sels, out_sels, complete, stop - start, False)


def _strided_slice_dim(start: int, step: int, n: int, size: int, chunk: int) -> DimProjection:
    # Work on the ascending element set low, low + s, ..., high; map back for step < 0.
    s = abs(step)
    low = start if step > 0 else start + (n - 1) * step
    high = low + (n - 1) * s
    if s < chunk:
        ks: range | list[int] = range(low // chunk, high // chunk + 1)
    else:
        # Each element has a chunk of its own: iterate elements, i.e. chunks touched.
        ks = [i // chunk for i in range(low, high + 1, s)]
    indices, chunk_sels, out_sels, complete = [], [], [], []
    for k in ks:
        b = k * chunk
        first = low if b <= low else low + ceil_div(b - low, s) * s
        m = ceil_div(min(b + chunk, high + 1) - first, s)
        last = first + (m - 1) * s
        indices.append(k)
        if step > 0:
            chunk_sels.append(slice(first - b, last - b + 1, s))
            o = (first - low) // s
        else:
            chunk_sels.append(slice(last - b, first - b - 1 if first > b else None, step))
            o = (high - last) // s
        out_sels.append(slice(o, o + m))
        complete.append(False)  # steps other than +1 never cover a chunk in order
    if step < 0:  # keep the output ascending
        for seq in (indices, chunk_sels, out_sels):
            seq.reverse()
    return DimProjection(indices, chunk_sels, out_sels, complete, n, False)


def normalize_int_array(
    values: np.ndarray, dim: int, size: int, shape: tuple[int, ...]
) -> np.ndarray:
    """Wrap negative indices and bounds-check; returns an ``intp`` array of the same shape."""
    arr = np.asarray(values)
    if arr.size == 0:
        return arr.astype(np.intp)  # [] arrives as float64
    if arr.dtype.kind not in "iu":
        raise InvalidSelectionError(
            f"index array for dimension {dim} must hold integers, got dtype {arr.dtype}"
        )
    lo, hi = arr.min(), arr.max()
    if lo < -size or hi >= size:  # compare before casting: uint64 may not fit intp
        bad = lo if lo < -size else hi
        raise _out_of_bounds(int(bad), dim, size, shape)
    arr = arr.astype(np.intp, copy=lo < 0)
    if lo < 0:
        arr[arr < 0] += size
    return arr


def int_array_dim(
    values: np.ndarray, dim: int, size: int, chunk: int, shape: tuple[int, ...],
    *, assume_sorted: bool = False,
) -> DimProjection:
    """Project a 1-d integer array (any order, repeats, negative indices)."""
    arr = normalize_int_array(values, dim, size, shape)
    if arr.ndim != 1:
        raise InvalidSelectionError(
            f"orthogonal index array for dimension {dim} must be 1-d, got shape {arr.shape}"
        )
    n = arr.size
    if n == 0:
        return DimProjection([], [], [], [], 0, False, True)
    order = None
    if not assume_sorted and n > 1 and not bool((arr[1:] >= arr[:-1]).all()):
        order = np.argsort(arr, kind="stable")  # stable: repeats keep user order
        arr = arr[order]
    chunk_ids = arr // chunk
    change = (np.flatnonzero(chunk_ids[1:] != chunk_ids[:-1]) + 1).tolist()
    starts, stops = [0, *change], [*change, n]
    indices = chunk_ids[starts].tolist()
    chunk_sels, out_sels, complete = [], [], []
    for k, a, b in zip(indices, starts, stops):
        csel = _slice_if_contiguous(arr[a:b] - k * chunk)
        osel = slice(a, b) if order is None else _slice_if_contiguous(order[a:b])
        chunk_sels.append(csel)
        out_sels.append(osel)
        complete.append(
            isinstance(csel, slice) and isinstance(osel, slice) and csel.start == 0
            and csel.stop == min(chunk, size - k * chunk)
        )
    return DimProjection(indices, chunk_sels, out_sels, complete, n, False, True)


def _slice_if_contiguous(values: np.ndarray) -> slice | np.ndarray:
    """``[3, 4, 5]`` -> ``slice(3, 6)``: a view instead of a copy, and lets chunks be complete."""
    first, last = int(values[0]), int(values[-1])
    if last - first == values.size - 1 and (values.size < 3 or bool((np.diff(values) == 1).all())):
        return slice(first, last + 1)
    return values


def bool_array_dim(
    values: np.ndarray, dim: int, size: int, chunk: int, shape: tuple[int, ...]
) -> DimProjection:
    """Project a 1-d boolean array of the dimension's length."""
    if values.ndim != 1 or values.shape[0] != size:
        raise InvalidSelectionError(
            f"boolean index for dimension {dim} must be 1-d with length {size} "
            f"(array shape {shape}), got shape {values.shape}"
        )
    return int_array_dim(np.flatnonzero(values), dim, size, chunk, shape, assume_sorted=True)
