"""Creating arrays inside a group: ``create_array``, ``require_array`` and shortcuts."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, ClassVar, Protocol

import numpy as np

from chunkflow.core.array import Array
from chunkflow.core.member_options import MemberOptions
from chunkflow.core.node_records import fetch_nodes, parse_node
from chunkflow.errors import ArgumentTypeError, ContainsGroupError, DtypeMismatchError, ShapeMismatchError
from chunkflow.grid import normalize_shape

if TYPE_CHECKING:
    from numpy.typing import ArrayLike, DTypeLike

    from chunkflow.core.node_records import NodeRecord
    from chunkflow.grid import ChunksLike, ShapeLike
    from chunkflow.metadata import FillValueLike
    from chunkflow.storage import Store

__all__ = ["ArrayCreation", "ArrayMaker"]


class ArrayMaker(Protocol):
    """How a group creates a member array: the creation functions of
    :mod:`chunkflow.api`, which build on this package and so cannot be imported by it.
    ``defaults`` are the group's (format, member options), ``create_kwargs`` the
    caller's keywords, which win. ``chunkflow.Group`` (a subclass defined in
    :mod:`chunkflow.api.group_members`) provides it."""

    def __call__(self, store: Store, path: str, *, shape: ShapeLike | None, dtype: DTypeLike | None,
                 data: ArrayLike | None,
                 chunks: ChunksLike, overwrite: bool, defaults: dict[str, Any],
                 create_kwargs: dict[str, Any]) -> Array: ...


class ArrayCreation:
    """Mixin of :class:`~chunkflow.Group`: the methods that create arrays in it.

    They create through ``_array_maker``, which this layer leaves empty: the api's
    ``chunkflow.Group`` subclass sets it to its creation functions, and the groups a
    group opens are of its own class.
    """

    _array_maker: ClassVar[ArrayMaker | None] = None
    _store: Store
    _zarr_format: int
    _member_options: MemberOptions

    if TYPE_CHECKING:  # provided by Group, which this mixin is a base of
        def _check_writable(self) -> None: ...
        def _child_path(self, name: str) -> str: ...
        def _changed(self) -> None: ...
        def _node(self, record: NodeRecord) -> Array | ArrayCreation: ...

    def create_array(self, name: str, *, shape: ShapeLike | None = None, dtype: DTypeLike | None = None,
                     data: ArrayLike | None = None, chunks: ChunksLike = True, overwrite: bool = False,
                     **create_kwargs: Any) -> Array:
        """Create the array ``name``; with ``data=``, its shape, dtype and values.

        Takes the keywords of :func:`chunkflow.create_array` (zarr-python 3: ``shards=``,
        ``compressors=``, ``serializer=``, ``config=``...): when one of those is given the
        array is made as ``chunkflow.create_array`` makes it. Otherwise extra arguments go
        to :func:`chunkflow.create` (``fill_value``, ``compressor``...).

        Examples
        --------
        >>> import numpy as np; from chunkflow import group as cg_group
        >>> z = cg_group().create_array("x", data=np.arange(6).reshape(2, 3), chunks=(1, 3))
        >>> z[1]
        array([3, 4, 5])
        >>> s = cg_group().create_array("s", shape=(8,), chunks=(2,), shards=(4,), dtype="u1")
        >>> s.chunks, s.shards
        ((2,), (4,))
        """
        self._check_writable()
        path = self._child_path(name)
        if self._array_maker is None:
            raise ArgumentTypeError(f"group {path.rpartition('/')[0] or '/'!r}: a "
                                    "chunkflow.core.group.Group creates no arrays; open the group with "
                                    "chunkflow.open_group or chunkflow.Group")
        self._changed()
        return self._array_maker(self._store, path, shape=shape, dtype=dtype, data=data,
                                 chunks=chunks, overwrite=overwrite,
                                 defaults={"zarr_format": self._zarr_format,
                                           **self._member_options.array_kwargs()},
                                 create_kwargs=create_kwargs)

    create_dataset = create_array

    def require_array(self, name: str, *, shape: ShapeLike, dtype: DTypeLike = "f8", exact: bool = False,
                      **kwargs: Any) -> Array:
        """Open the array ``name`` if its shape and dtype fit, else create it.

        ``exact=False`` accepts a stored dtype that ``dtype`` casts to safely.
        """
        path = self._child_path(name)
        record = parse_node(fetch_nodes(self._store, [path]), path)
        if record is None:
            return self.create_array(name, shape=shape, dtype=dtype, **kwargs)
        if record.kind == "group":
            raise ContainsGroupError(f"path {path!r} in {self._store!r} holds a group, "
                                     f"expected an array")
        array = self._node(record)
        if not isinstance(array, Array):  # parse_node said it is not a group
            raise ContainsGroupError(f"path {path!r} in {self._store!r} holds a group, "
                                     f"expected an array")
        wanted = normalize_shape(shape)
        if array.shape != wanted:
            raise ShapeMismatchError(f"array {path!r} has shape {array.shape}, expected {wanted}")
        ok = array.dtype == np.dtype(dtype) if exact else np.can_cast(np.dtype(dtype), array.dtype)
        if not ok:
            raise DtypeMismatchError(f"array {path!r} has dtype {array.dtype}, which "
                                     f"{'differs from' if exact else 'cannot hold'} {dtype!r}")
        return array

    require_dataset = require_array

    def zeros(self, name: str, **kwargs: Any) -> Array:
        """Create an array of zeros."""
        return self.create_array(name, fill_value=0, **kwargs)

    def ones(self, name: str, **kwargs: Any) -> Array:
        """Create an array of ones."""
        return self.create_array(name, fill_value=1, **kwargs)

    def empty(self, name: str, **kwargs: Any) -> Array:
        """Create an array to be written later."""
        return self.create_array(name, **kwargs)

    def full(self, name: str, fill_value: FillValueLike, **kwargs: Any) -> Array:
        """Create an array filled with ``fill_value``."""
        return self.create_array(name, fill_value=fill_value, **kwargs)

    def array(self, name: str, data: ArrayLike, **kwargs: Any) -> Array:
        """Create an array holding ``data``."""
        if not hasattr(data, "shape"):
            data = np.asarray(data)
        return self.create_array(name, data=data, **kwargs)
