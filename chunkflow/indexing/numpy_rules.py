"""``array[selection]`` with numpy's rules, planned on the chunk grid.

numpy's indexing: integers and slices act per dimension, ``None`` adds a dimension of
length one, and *advanced* entries — integer arrays, boolean arrays (a k-d mask is its
k ``nonzero()`` arrays; a 0-d one, ``True`` or ``False``, takes no dimension and adds
a side of 1 or 0 to the block) and, next to them, integers — are broadcast together
into one block of dimensions. That block stands where the advanced entries stand when they are
adjacent, and first otherwise (a slice, ``...`` or ``None`` between them).

:class:`NumpyIndexer` picks the cheapest plan that gives exactly that:

- no arrays: a :class:`~chunkflow.indexing.BasicIndexer`;
- one array whose block lands where an orthogonal selection puts its axis: an
  :class:`~chunkflow.indexing.OrthogonalIndexer` on the flattened array (index runs
  become slices, whole chunks are decoded in place);
- otherwise a :class:`~chunkflow.indexing.points.PointsIndexer`: the broadcast arrays
  as points, grouped by chunk, times the slices of the other dimensions.

The plan fills a buffer of ``shape``; :meth:`NumpyIndexer.result` makes numpy's result
of it (a reshape, plus a move of the broadcast block in the rare case where a ``None``
alone separates the advanced entries), and :meth:`NumpyIndexer.value_in_plan_order`
is its inverse for values written.

Examples
--------
>>> import numpy as np
>>> from chunkflow.grid import RegularChunkGrid
>>> a = np.arange(125).reshape(5, 5, 5)
>>> grid = RegularChunkGrid(a.shape, (2, 2, 2))
>>> idx = NumpyIndexer(([0, 1], 1, [0, 1]), grid)
>>> buffer = np.empty(idx.shape, a.dtype)
>>> for p in idx:
...     buffer[p.out_selection] = a[grid.chunk_region(p.chunk_coords)][p.chunk_selection]
>>> idx.result(buffer)
array([ 5, 31])
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING, Any, NamedTuple

import numpy as np

from chunkflow.errors import InvalidSelectionError
from chunkflow.grid import RegularChunkGrid
from chunkflow.indexing.dims import as_int, normalize_int_array
from chunkflow.indexing.expand import expand_ellipsis
from chunkflow.indexing.points import MaskIndexer, PointsIndexer, broadcast_points
from chunkflow.indexing.selections import BasicIndexer, ChunkProjection, OrthogonalIndexer

if TYPE_CHECKING:
    from chunkflow.indexing.predicates import Selection
    from chunkflow.indexing.selections import Indexer

__all__ = ["NumpyIndexer", "index_entry"]

_VALID = ("only integers, slices (`:`), ellipsis (`...`), numpy.newaxis (`None`) and "
          "integer or boolean arrays are valid indices")


def index_entry(entry: object) -> object:
    """One entry of a numpy selection in canonical form.

    Integers (numpy's and 0-d integer arrays too) become ``int``; lists, tuples and
    array-likes (anything with ``__array__``: a chunkflow or dask array is read) become
    integer or boolean numpy arrays, boolean scalars 0-d boolean arrays; ``None``,
    ``...`` and slices stay.

    Raises
    ------
    InvalidSelectionError
        For anything else: floats, strings, objects.

    Examples
    --------
    >>> index_entry(np.int8(3)), index_entry([True, False]), index_entry([]).dtype
    (3, array([ True, False]), dtype('int64'))
    >>> index_entry(True)
    array(True)
    """
    if entry is None or entry is Ellipsis or isinstance(entry, slice):
        return entry
    index = as_int(entry)
    if index is not None:
        return index
    if isinstance(entry, (bool, np.bool_)):
        return np.asarray(entry)
    if isinstance(entry, (str, bytes)) or not (
            isinstance(entry, (list, tuple, np.ndarray)) or hasattr(entry, "__array__")):
        raise InvalidSelectionError(f"{_VALID}, got {entry!r}")
    try:
        arr = np.asarray(entry)
    except ValueError as err:  # ragged lists
        raise InvalidSelectionError(f"{_VALID}, got {entry!r} ({err})") from None
    if arr.dtype == bool:
        return arr
    if arr.dtype.kind in "iu":
        return int(arr) if arr.ndim == 0 else arr
    if arr.size == 0 and arr.dtype.kind == "f":  # [] arrives as float64
        return arr.astype(np.intp)
    raise InvalidSelectionError(
        f"arrays used as indices must be of integer (or boolean) type, got {arr.dtype}")


#: The entries that are advanced indices (integers are too, next to one of them).
_ARRAYS = ("array", "mask", "flag")

#: Stands for a ``...`` of no dimension: it still separates advanced entries (numpy's
#: ``a[:, [0], ..., [0], :]`` on 4-d puts the block first).
_GAP = object()


class _Entry(NamedTuple):
    """One entry of the expanded selection, with the dimensions it takes."""

    kind: str  # "slice", "int", "array" (integer array), "mask", "flag" (0-d boolean),
    # "new" (None) or "gap"
    value: Any
    dims: tuple[int, ...]


def _entries(selection: Selection, shape: tuple[int, ...]) -> list[_Entry]:
    raw = selection if isinstance(selection, tuple) else (selection,)
    expanded = expand_ellipsis(tuple(index_entry(e) for e in raw), shape, gap=_GAP)
    entries, dim = [], 0
    for entry in expanded:
        if entry is _GAP:
            entries.append(_Entry("gap", None, ()))
        elif entry is None:
            entries.append(_Entry("new", None, ()))
        elif isinstance(entry, slice):
            entries.append(_Entry("slice", entry, (dim,)))
            dim += 1
        elif isinstance(entry, int):
            value = normalize_int_array(np.asarray(entry), dim, shape[dim], shape)
            entries.append(_Entry("int", int(value), (dim,)))
            dim += 1
        elif entry.dtype == bool and entry.ndim == 0:
            entries.append(_Entry("flag", bool(entry), ()))  # takes no dimension
        elif entry.dtype == bool:
            dims = tuple(range(dim, dim + entry.ndim))
            _check_mask(entry, dims, shape)
            entries.append(_Entry("mask", entry, dims))
            dim += entry.ndim
        else:
            entries.append(_Entry("array", entry, (dim,)))  # checked once broadcast
            dim += 1
    return entries


def _checked_arrays(entries: list[_Entry], advanced: list[int],
                    shape: tuple[int, ...]) -> list[_Entry]:
    """``entries`` with their integer arrays bounds-checked and wrapped, as numpy does:
    only when the advanced entries broadcast to a non-empty block (numpy reads none of
    their values otherwise: ``a[[5], []]`` is empty, not out of bounds)."""
    shapes = [_block_shape(entries[i]) for i in advanced]
    try:
        empty = 0 in np.broadcast_shapes(*shapes)
    except ValueError:
        empty = False  # broadcast_points says what is wrong
    checked = []
    for e in entries:
        if e.kind == "array":
            size = shape[e.dims[0]]
            value = np.zeros(e.value.shape, np.intp) if empty else \
                normalize_int_array(e.value, e.dims[0], size, shape)
            e = e._replace(value=value)
        checked.append(e)
    return checked


def _block_shape(entry: _Entry) -> tuple[int, ...]:
    """The shape an advanced entry broadcasts with the others."""
    if entry.kind == "mask":
        return (int(np.count_nonzero(entry.value)),)
    if entry.kind == "flag":
        return (int(entry.value),)  # numpy: True adds a side of 1, False of 0
    return np.shape(entry.value)


def _check_mask(mask: np.ndarray, dims: tuple[int, ...], shape: tuple[int, ...]) -> None:
    """numpy's check of a mask's sides: each must equal its dimension's, except a side
    of length 0, which numpy takes on any dimension (``a[np.zeros(0, bool)]`` is empty
    whatever ``len(a)``; its other sides must still match).

    Examples
    --------
    >>> _check_mask(np.zeros((2, 0), bool), (0, 1), (2, 3))
    >>> _check_mask(np.zeros((1, 0), bool), (0, 1), (2, 3))
    Traceback (most recent call last):
    ...
    chunkflow.errors.InvalidSelectionError: boolean index did not match indexed array \
along axis 0; size of axis is 2 but size of corresponding boolean axis is 1 (array shape (2, 3))
    """
    for axis, dim in enumerate(dims):
        if mask.shape[axis] and mask.shape[axis] != shape[dim]:
            raise InvalidSelectionError(
                f"boolean index did not match indexed array along axis {dim}; size of axis "
                f"is {shape[dim]} but size of corresponding boolean axis is "
                f"{mask.shape[axis]} (array shape {shape})")


def _slice_length(sl: slice, size: int) -> int:
    return len(range(*sl.indices(size)))


class NumpyIndexer:
    """numpy's indexing on a chunk grid (see the module docstring).

    Attributes
    ----------
    shape : tuple of int
        The buffer the plan fills (and writes from).
    sel_shape : tuple of int
        The buffer reshaped: the plan's order of the result's dimensions.
    result_shape : tuple of int
        numpy's result shape.
    """

    def __init__(self, selection: Selection, grid: RegularChunkGrid) -> None:
        self.grid = grid
        shape = grid.shape
        entries = _entries(selection, shape)
        advanced = [i for i, e in enumerate(entries)
                    if e.kind in _ARRAYS or (e.kind == "int" and _has_arrays(entries))]
        if advanced:
            entries = _checked_arrays(entries, advanced, shape)
        self._move: tuple[int, int] | None = None
        self.sel_shape: tuple[int, ...]
        self.result_shape: tuple[int, ...]
        if not advanced:
            self._inner: Indexer = BasicIndexer(
                tuple(e.value for e in entries if e.kind not in ("new", "gap")), grid)
            self.sel_shape = self._order_shape(entries, (), None, shape)
            self.result_shape = self.sel_shape
        else:
            self._plan_advanced(entries, advanced, grid)
        self.shape: tuple[int, ...] = self._inner.shape
        self.nchunks: int = self._inner.nchunks
        self.drop_axes: tuple[int, ...] = ()

    def _plan_advanced(self, entries: list[_Entry], advanced: list[int],
                       grid: RegularChunkGrid) -> None:
        arrays: list[np.ndarray] = []
        dims: list[int] = []
        flags: list[np.ndarray] = []  # broadcast with the arrays, but index no dimension
        for i in advanced:
            e = entries[i]
            if e.kind == "mask":
                arrays.extend(np.nonzero(e.value))
            elif e.kind == "flag":
                flags.append(np.zeros(_block_shape(e), np.intp))
            else:
                arrays.append(np.asarray(e.value))
            dims.extend(e.dims)
        points, block = broadcast_points(arrays + flags)
        points = points[:len(arrays)]
        adjacent = advanced[-1] - advanced[0] + 1 == len(advanced)
        self.result_shape = self._order_shape(entries, block, advanced[0] if adjacent else None,
                                              grid.shape)
        others = tuple(e.value for e in entries if e.kind == "slice")
        if not arrays:
            self._plan_flags(others, block, grid)
            return
        # The plan puts the block where the first entry that indexes a dimension stands
        # (a flag before it takes none); adjacent, that is where numpy puts it too.
        first = next(i for i in advanced if entries[i].kind != "flag")
        basic_before = sum(e.kind in ("slice", "new") for e in entries[:first])
        flat = _single_array(entries, advanced)
        if flat is not None and (adjacent or not any(
                e.kind in ("slice", "new") for e in entries[:_array_at(entries)])):
            # The broadcast block lands where an orthogonal selection puts the array's
            # axis: plan it so (runs of indices become slices, whole chunks decode
            # in place).
            sel = tuple(flat if e.kind in ("array", "mask") else e.value
                        for e in entries if e.kind not in ("new", "gap"))
            self._inner = _InPlaceOrthogonal(sel, grid)
            self.sel_shape = self._order_shape(entries, block, first, grid.shape)
            return
        self._inner = PointsIndexer(dict(zip(dims, points)), others, grid)
        if self._inner.points_first:
            self.sel_shape = self.result_shape
            return
        self.sel_shape = self._order_shape(entries, block, first, grid.shape)
        if not adjacent and basic_before:
            self._move = (basic_before, len(block))

    def _plan_flags(self, slices: tuple[slice, ...], block: tuple[int, ...],
                    grid: RegularChunkGrid) -> None:
        """Only flags among slices: the slices' values with the block, a side of 1 (a
        reshape puts it in place) or of 0 (nothing is read)."""
        self.sel_shape = self.result_shape
        if not slices:  # a 0-d array: its one element, or nothing
            self._inner = MaskIndexer(np.array(0 not in block), grid)
            return
        if 0 in block:
            slices = tuple(slice(0, 0) for _ in slices)
        self._inner = BasicIndexer(slices, grid)

    @staticmethod
    def _order_shape(entries: list[_Entry], block: tuple[int, ...], at: int | None,
                     shape: tuple[int, ...]) -> tuple[int, ...]:
        """The result's dimensions: slices and ``None`` in order, ``block`` at entry
        ``at`` (``None``: first); advanced entries take no other place."""
        out: list[int] = [] if at is not None else list(block)
        for i, e in enumerate(entries):
            if i == at:
                out.extend(block)
            elif e.kind == "slice":
                out.append(_slice_length(e.value, shape[e.dims[0]]))
            elif e.kind == "new":
                out.append(1)
        return tuple(out)

    @property
    def plan(self) -> Indexer:
        """The indexer that answers: basic, orthogonal or points."""
        return self._inner

    def __iter__(self) -> Iterator[ChunkProjection]:
        return iter(self._inner)

    def __len__(self) -> int:
        return self.nchunks

    def __repr__(self) -> str:
        return f"NumpyIndexer({self._inner!r}, result_shape={self.result_shape})"

    @property
    def reorders(self) -> bool:
        """Whether numpy's result has its dimensions in another order than the plan."""
        return self._move is not None

    def result(self, buffer: np.ndarray) -> np.ndarray:
        """numpy's result from the filled buffer (a view of it)."""
        shaped = buffer.reshape(self.sel_shape)
        if self._move is None:
            return shaped
        at, n = self._move
        return np.moveaxis(shaped, range(at, at + n), range(n))

    def value_in_plan_order(self, value: np.ndarray) -> np.ndarray:
        """A value for numpy's result shape, in the plan's order (``sel_shape``).

        Raises ``ValueError`` when ``value`` does not broadcast to ``result_shape``.
        """
        if self._move is None or value.ndim == 0:
            return value
        at, n = self._move
        full = np.broadcast_to(value, self.result_shape)
        return np.moveaxis(full, range(n), range(at, at + n))


def _single_array(entries: list[_Entry], advanced: list[int]) -> np.ndarray | None:
    """The one index array among the advanced entries, flattened (``None``: there are
    several, or a mask of several dimensions)."""
    arrays = [entries[i] for i in advanced if entries[i].kind != "int"]
    if len(arrays) != 1 or len(arrays[0].dims) != 1:
        return None
    if arrays[0].kind == "mask":
        return np.flatnonzero(arrays[0].value)
    return arrays[0].value.reshape(-1)


def _array_at(entries: list[_Entry]) -> int:
    return next(i for i, e in enumerate(entries) if e.kind in _ARRAYS)


def _has_arrays(entries: list[_Entry]) -> bool:
    return any(e.kind in _ARRAYS for e in entries)


class _InPlaceOrthogonal(OrthogonalIndexer):
    """One array among integers and slices, where numpy's block lands on the array's
    own axis: each chunk is indexed as numpy indexes it, without ``np.ix_``."""

    pointwise = True
