"""Reading and writing an :class:`~chunkflow.Array` by selection.

``z[...]`` follows numpy's indexing (:class:`~chunkflow.indexing.NumpyIndexer`):
integer arrays broadcast together, boolean arrays of any dimensionality, ``None``;
anything else raises an ``IndexError``. The ``get_*``/``set_*`` methods and the
``oindex``/``vindex`` accessors keep zarr-python's meanings. All take structured
``fields`` as zarr-python 2 does; the readers take ``out=``.

Repeated indices in a write: numpy assigns in order, so the last value given for an
element is the one stored (``z[[0, 0]] = [1, 2]`` stores 2), and so does chunkflow.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING, Any

import numpy as np

from chunkflow.core.selection import SelectionAccessor, has_ellipsis, read_target
from chunkflow.engine.values import (
    convert_dtype,
    copy_from_source,
    fit_array_value,
    is_chunked_source,
    prepare_value,
    writes_nothing,
)
from chunkflow.errors import ArgumentTypeError, ShapeMismatchError
from chunkflow.indexing import (
    BasicIndexer,
    CoordinateIndexer,
    MaskIndexer,
    NumpyIndexer,
    OrthogonalIndexer,
    fields_dtype,
    is_basic_selection,
    is_mask_selection,
    pop_fields,
    select_fields,
    writable_field,
)

if TYPE_CHECKING:
    from numpy.typing import ArrayLike, DTypeLike

    from chunkflow.engine.chunk_io import ChunkIO
    from chunkflow.engine.values import ChunkedSource
    from chunkflow.indexing import ChunkProjection, Fields, Indexer, Selection
    from chunkflow.indexing.plans import BasicPlans

__all__ = ["ArraySelections"]


class ArraySelections:
    """Mixin of :class:`~chunkflow.Array`: item access and the selection methods (needs
    ``_io``, ``_plans``, ``_path``, ``dtype``, ``ndim``, ``shape``, ``write_chunks`` and
    ``_check_writable``)."""

    _io: ChunkIO
    _plans: BasicPlans
    _path: str

    if TYPE_CHECKING:
        @property
        def dtype(self) -> np.dtype: ...

        @property
        def ndim(self) -> int: ...

        @property
        def shape(self) -> tuple[int, ...]: ...

        @property
        def write_chunks(self) -> tuple[int, ...]: ...

        def _check_writable(self) -> None: ...

    # -- reading ---------------------------------------------------------------

    def __getitem__(self, selection: Selection) -> Any:
        kept = self._plans.kept(selection, self._io.grid)
        if kept is not None:  # a window read again: its plan is known
            result = self._read(*kept)
            if result.ndim == 0 and not has_ellipsis(selection):
                return result[()]
            return result
        if is_basic_selection(selection):  # the fast path: nothing else to look at
            return self.get_basic_selection(selection)
        fields, selection = pop_fields(selection)
        if is_basic_selection(selection):
            return self.get_basic_selection(selection, fields=fields)
        return self._get(NumpyIndexer(selection, self._io.grid), fields)

    def get_basic_selection(self, selection: Selection = Ellipsis, *, out: Any = None,
                            fields: Fields = None) -> Any:
        """Read integers, slices (any step) and Ellipsis, like numpy basic indexing.

        ``out``, as in zarr-python: an array (a view too, or a zarr-python ``NDBuffer``)
        of the result's shape, filled in place and returned; values are cast to its
        dtype as numpy assignment casts. ``fields`` picks fields of a structured dtype.

        Examples
        --------
        >>> import numpy as np
        >>> import chunkflow
        >>> z = chunkflow.array(np.arange(6), chunks=4)
        >>> padded = np.zeros(8, dtype=z.dtype)
        >>> z.get_basic_selection(slice(1, 5), out=padded[2:6]).tolist()
        [1, 2, 3, 4]
        >>> padded.tolist()
        [0, 0, 1, 2, 3, 4, 0, 0]
        """
        indexer, projections = self._plans.get(selection, self._io.grid)
        if out is None and fields is None:
            result = self._read(indexer, projections)
            if result.ndim == 0 and not has_ellipsis(selection):
                return result[()]
            return result
        result = self._get(indexer, fields, out, projections)
        if out is None and result.ndim == 0 and not has_ellipsis(selection):
            return result[()]
        return result

    def get_orthogonal_selection(self, selection: Selection, *, out: Any = None,
                                 fields: Fields = None) -> np.ndarray:
        """Read the outer product of per-dimension selections (``z.oindex[...]``)."""
        return self._get(OrthogonalIndexer(selection, self._io.grid), fields, out)

    def get_coordinate_selection(self, selection: Selection, *, out: Any = None,
                                 fields: Fields = None) -> np.ndarray:
        """Read points given by integer coordinate arrays (``z.vindex[...]``)."""
        return self._get(CoordinateIndexer(selection, self._io.grid), fields, out)

    def get_mask_selection(self, mask: ArrayLike, *, out: Any = None,
                           fields: Fields = None) -> np.ndarray:
        """Read the elements where a boolean mask of the array's shape is true."""
        return self._get(MaskIndexer(mask, self._io.grid), fields, out)

    def _read(self, indexer: Indexer,
              projections: list[ChunkProjection] | None = None) -> np.ndarray:
        return indexer.result(self._io.read_new(
            list(indexer) if projections is None else projections, indexer.shape, self.dtype))

    def _get(self, indexer: Indexer, fields: Fields = None, out: Any = None,
             projections: list[ChunkProjection] | None = None) -> np.ndarray:
        """Read through ``indexer``: the ``fields`` asked for, into ``out`` if given."""
        prefix = f"array {self._path or '/'!r}: "
        wanted = fields_dtype(self.dtype, fields, prefix)  # refuse bad names first
        wanted_shape = indexer.result_shape + wanted.shape  # a subarray field's dimensions
        target = None if out is None else read_target(out, wanted_shape, prefix)
        projections = list(indexer) if projections is None else projections
        if target is not None and fields is None and target.dtype == self.dtype \
                and indexer.shape == indexer.result_shape:
            self._io.read(projections, target)  # straight into the caller's array
            return target
        result = select_fields(self._read(indexer, projections), fields, prefix)
        if target is None:
            return result
        target[...] = result  # numpy's casting of assignment, as zarr-python's out=
        return target

    def __array__(self, dtype: DTypeLike | None = None,
                  copy: bool | None = None) -> np.ndarray:
        data = self[...]
        return data if dtype is None else data.astype(dtype, copy=False)

    def __len__(self) -> int:
        if self.ndim == 0:
            raise ArgumentTypeError("len() of a 0-d array")
        return self.shape[0]

    def __iter__(self) -> Iterator[Any]:
        if self.ndim == 0:
            raise ArgumentTypeError("iteration over a 0-d array")
        step = self.write_chunks[0]  # one whole stored object per read
        for start in range(0, self.shape[0], step):
            yield from self[start:start + step]

    @property
    def oindex(self) -> SelectionAccessor:
        """Orthogonal selection: ``z.oindex[[0, 2], 1:5]``."""
        return SelectionAccessor(self.get_orthogonal_selection,
                                 self.set_orthogonal_selection, fields=True)

    @property
    def vindex(self) -> SelectionAccessor:
        """Coordinate or mask selection: ``z.vindex[[0, 2], [1, 5]]``."""
        return SelectionAccessor(self._get_vindex, self._set_vindex, fields=True)

    def _get_vindex(self, selection: Selection, *, fields: Fields = None) -> np.ndarray:
        if is_mask_selection(selection, self.ndim):
            return self.get_mask_selection(selection, fields=fields)  # type: ignore[arg-type]  # is_mask_selection checked it
        return self.get_coordinate_selection(selection, fields=fields)

    def _set_vindex(self, selection: Selection, value: ArrayLike, *,
                    fields: Fields = None) -> None:
        if is_mask_selection(selection, self.ndim):
            self.set_mask_selection(selection, value, fields=fields)  # type: ignore[arg-type]  # is_mask_selection checked it
        else:
            self.set_coordinate_selection(selection, value, fields=fields)

    # -- writing ---------------------------------------------------------------

    def __setitem__(self, selection: Selection, value: ArrayLike | ChunkedSource) -> None:
        if is_basic_selection(selection):
            self.set_basic_selection(selection, value)
            return
        fields, selection = pop_fields(selection)
        if is_basic_selection(selection):
            self.set_basic_selection(selection, value, fields=fields)
        else:
            self._set(NumpyIndexer(selection, self._io.grid), value, fields)

    def set_basic_selection(self, selection: Selection, value: ArrayLike | ChunkedSource, *,
                            fields: Fields = None) -> None:
        """Write to integers, slices and Ellipsis; ``value`` broadcasts like numpy."""
        self._check_writable()
        indexer = BasicIndexer(selection, self._io.grid)
        if fields is None and is_chunked_source(value):
            copy_from_source(self._io, self.dtype, indexer, value, self._reader_of(value))
        else:
            # Integers alone name one element, which numpy fills from a scalar only.
            element = not indexer.shape and not has_ellipsis(selection)
            self._set(indexer, value, fields, element=element)

    def _reader_of(self, value: object) -> Callable[..., object] | None:
        """``value.get_basic_selection`` (which reads into a given buffer) when ``value``
        is a chunkflow array stored elsewhere than this one: then a copy from it runs
        unit by unit in parallel (a copy within one array keeps its order)."""
        if not isinstance(value, ArraySelections):
            return None
        io, other = self._io, value._io
        if io.identity == other.identity and io.path == other.path:
            return None
        return value.get_basic_selection

    def set_orthogonal_selection(self, selection: Selection, value: ArrayLike, *,
                                 fields: Fields = None) -> None:
        """Write to the outer product of per-dimension selections."""
        self._set(OrthogonalIndexer(selection, self._io.grid), value, fields)

    def set_coordinate_selection(self, selection: Selection, value: ArrayLike, *,
                                 fields: Fields = None) -> None:
        """Write to points given by integer coordinate arrays."""
        self._set(CoordinateIndexer(selection, self._io.grid), value, fields)

    def set_mask_selection(self, mask: ArrayLike, value: ArrayLike, *,
                           fields: Fields = None) -> None:
        """Write where a boolean mask of the array's shape is true."""
        self._set(MaskIndexer(mask, self._io.grid), value, fields)

    def _set(self, indexer: Indexer, value: ArrayLike | ChunkedSource, fields: Fields = None,
             *, element: bool = False) -> None:
        self._check_writable()
        field = writable_field(self.dtype, fields, f"array {self._path or '/'!r}: ")
        if field is not None:
            self._set_field(indexer, value, field)
            return
        value = fit_array_value(value, indexer.result_shape, element=element)
        if writes_nothing(value, indexer.result_shape, self._path):
            return
        if indexer.reorders:  # numpy's order of the value's dimensions is not the plan's
            converted = convert_dtype(value, self.dtype, self._path)
            try:
                value = indexer.value_in_plan_order(converted)
            except ValueError:
                raise ShapeMismatchError(
                    f"array {self._path or '/'!r}: cannot write a value of shape "
                    f"{converted.shape} to a selection of shape {indexer.result_shape}"
                ) from None
        self._io.write(list(indexer), prepare_value(value, self.dtype, indexer, self._path))

    def _set_field(self, indexer: Indexer, value: ArrayLike, field: str) -> None:
        """Write one field: the items are read, changed and written back, under the
        chunks' locks when a synchronizer is set (the other fields stay)."""
        projections = list(indexer)
        with self._io.locked(projections):
            current = np.empty(indexer.shape, dtype=self.dtype)
            self._io.read(projections, current, fresh=True)
            view = indexer.result(current)[field]  # writes land in current
            if self.dtype[field].subdtype is None:
                value = convert_dtype(value, self.dtype[field], self._path)
            try:
                view[...] = value
            except ValueError as err:
                raise ShapeMismatchError(
                    f"array {self._path or '/'!r}: cannot write the value to field "
                    f"{field!r} of a selection of shape {view.shape}: {err}") from None
            self._io.write(projections, current, locked=True)

    def modify(self, selection: Selection, func: Callable[[np.ndarray], Any]) -> None:
        """Replace the values at ``selection`` by ``func(values)``, as one locked update.

        With a synchronizer, the chunks are locked before the values are read (fresh
        from the store) and released after the result is written, so concurrent
        ``modify`` calls on overlapping regions never lose an update.

        Examples
        --------
        >>> import chunkflow
        >>> z = chunkflow.zeros(6, chunks=4, dtype="i4", synchronizer="thread")
        >>> z.modify(slice(2, 5), lambda block: block + 1)
        >>> z[:]
        array([0, 0, 1, 1, 1, 0], dtype=int32)
        """
        self._check_writable()
        indexer = BasicIndexer(selection, self._io.grid)
        projections = list(indexer)
        with self._io.locked(projections):
            current = np.empty(indexer.shape, dtype=self.dtype)
            self._io.read(projections, current, fresh=True)
            result = func(indexer.result(current))
            value = prepare_value(result, self.dtype, indexer, self._path)
            self._io.write(projections, value, locked=True)
