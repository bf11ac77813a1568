"""One chunkflow group (or one array) as xarray's data store: variables, attributes,
dimensions."""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING, Any

from xarray import Variable
from xarray.backends import AbstractDataStore
from xarray.core import indexing
from xarray.core.utils import FrozenDict

from chunkflow.core.array import Array
from chunkflow.core.group import Group
from chunkflow.errors import MetadataError
from chunkflow.graph.read import block_multiples
from chunkflow.metadata.ngff import read_multiscales
from chunkflow.storage import make_store
from chunkflow.xarray.ngff import (
    LevelGeometry,
    coordinate_variables,
    level_geometry,
    listed_members,
)
from chunkflow.xarray.opening import (
    caller_level,
    open_node_for_xarray,
    warns_without_consolidated,
)
from chunkflow.xarray.single import default_dims, parent_attributes, variable_name
from chunkflow.xarray.unfinished import (
    UNFINISHED_ATTRIBUTE,
    unfinished_description,
    warn_unfinished,
)
from chunkflow.xarray.variables import codec_encoding, dims_and_attrs, fill_value_entries
from chunkflow.xarray.wrapper import ChunkflowArrayWrapper

if TYPE_CHECKING:
    from chunkflow.cache import CacheLike
    from chunkflow.storage import StoreLike

__all__ = ["ChunkflowDataStore", "preferred_block"]


def preferred_block(array: Array) -> tuple[int, ...]:
    """The block shape xarray should read ``array`` in (``encoding["preferred_chunks"]``):
    its I/O unit (shard or chunk), or on a latency-bound store :func:`chunkflow.to_dask`'s
    default block there (see :mod:`chunkflow.xarray`).

    Examples
    --------
    >>> import chunkflow
    >>> preferred_block(chunkflow.zeros((100, 100), chunks=(10, 20)))
    (10, 20)
    """
    unit = array.write_chunks
    if not getattr(array.store, "latency_bound", False) or 0 in array.shape:
        return tuple(unit)
    multiples = block_multiples(array, ..., None)
    return tuple(min(m * c, size) for m, c, size in zip(multiples, unit, array.shape))

class ChunkflowDataStore(AbstractDataStore):
    """The variables, attributes and dimensions of one chunkflow group, for xarray.

    Parameters
    ----------
    group : chunkflow.Group
        The group whose arrays become the variables.
    use_zarr_fill_value_as_mask : bool, optional
        ``True``: a v3 array's ``fill_value`` is its ``_FillValue`` (it masks). A v2
        array's always is, as in xarray's zarr engine: see
        :mod:`chunkflow.xarray.variables` for why.
    close_store : bool
        Close the group's store when xarray closes the dataset (stores this module
        opened itself).
    exclude : iterable of str
        Arrays that are no variables here: ``drop_variables`` (never opened, so their
        dimensions cannot conflict with the others', as with the zarr engine), or the
        levels of a pyramid that :meth:`level` puts in nodes of their own.
    attributes : bool
        Whether the group's attributes are the dataset's (not for a level's node).

    The arrays that are levels of the group's OME-Zarr image take its NGFF axis names
    when they name no dimensions (see :mod:`chunkflow.xarray.ngff`). A level's own
    node (:meth:`level`) and a single array (:meth:`for_array`) also get the level's
    physical coordinates.

    Examples
    --------
    >>> import chunkflow
    >>> root = chunkflow.group()
    >>> _ = root.create_array("v", shape=(3,), chunks=(2,), dtype="i2",
    ...                       dimension_names=("x",))
    >>> ChunkflowDataStore(root).get_dimensions()
    {'x': 3}
    """

    def __init__(self, group: Group | None, use_zarr_fill_value_as_mask: bool | None = None,
                 close_store: bool = False, exclude: Iterable[str] = (),
                 attributes: bool = True) -> None:
        self.group = group
        self.use_zarr_fill_value_as_mask = use_zarr_fill_value_as_mask
        self._close_store = close_store
        self._exclude = frozenset(exclude)
        self._attributes = attributes
        self._arrays: dict[str, Array] | None = None
        self._unfinished: dict[str, str] | None = None
        self._only: str | None = None
        self._geometry: dict[str, LevelGeometry] | None = None
        self._coordinates = False  # the NGFF coordinates of the levels among the variables
        self._single = False  # one array, whose unnamed dimensions get default names

    @classmethod
    def for_array(cls, array: Array, name: str, parent: tuple[dict[str, Any], str] | None,
                  use_zarr_fill_value_as_mask: bool | None = None,
                  close_store: bool = False) -> ChunkflowDataStore:
        """A data store of the one array ``array`` as the variable ``name`` (see
        :mod:`chunkflow.xarray.single`); ``parent``: the attributes of the group above
        it, whose NGFF metadata may name it as a level, and its path there.

        Examples
        --------
        >>> import chunkflow
        >>> z = chunkflow.create_array(None, shape=(2, 3), dtype="u1", zarr_format=2)
        >>> ChunkflowDataStore.for_array(z, "z", None).get_dimensions()
        {'dim_0': 2, 'dim_1': 3}
        """
        store = cls(None, use_zarr_fill_value_as_mask, close_store=close_store,
                    attributes=False)
        store._arrays, store._only, store._single = {name: array}, name, True
        store._coordinates = True
        geometry = level_geometry(*parent) if parent is not None else None
        store._geometry = {name: geometry} if geometry is not None else {}
        return store

    def pyramid_levels(self) -> list[str]:
        """The arrays of this group that are levels of its OME-NGFF ``multiscales``
        (``[]`` when it is no image): their dimensions conflict (each level halves
        some), so they are no variables of one dataset.

        Examples
        --------
        >>> import numpy as np, chunkflow
        >>> from chunkflow.storage import MemoryStore
        >>> store = MemoryStore()
        >>> image = chunkflow.array(np.zeros((8, 8), "u1"))
        >>> _ = chunkflow.pyramid(image, store, levels=2, scheduler="sync")
        >>> ChunkflowDataStore(chunkflow.open_group(store)).pyramid_levels()
        ['0', '1']
        """
        if self.group is None:
            return []
        multiscales = read_multiscales(self.group.attrs.asdict())
        if multiscales is None:
            return []
        members = {name for name, node in listed_members(self.group) if isinstance(node, Array)}
        return [path for path in multiscales.paths if path in members]

    def without(self, names: Iterable[str]) -> ChunkflowDataStore:
        """This data store less the arrays ``names`` (it closes the store as this would)."""
        return ChunkflowDataStore(self.group, self.use_zarr_fill_value_as_mask,
                                  close_store=self._close_store,
                                  exclude=self._exclude | set(names))

    def level(self, name: str) -> ChunkflowDataStore:
        """A data store of the one array ``name`` of this group (a pyramid level), with
        no attributes (they stay with the group's node)."""
        store = ChunkflowDataStore(self.group, self.use_zarr_fill_value_as_mask,
                                   attributes=False)
        store._only, store._coordinates = name, True
        geometry = self.geometry().get(name)  # read once for the image, not per level
        store._geometry = {name: geometry} if geometry is not None else {}
        return store

    def geometry(self) -> dict[str, LevelGeometry]:
        """The NGFF geometry of the arrays that are levels of the group's image."""
        if self._geometry is None:
            attrs = self.group.attrs.asdict() if self.group is not None else {}
            found = {name: level_geometry(attrs, name) for name in self.pyramid_levels()}
            self._geometry = {name: g for name, g in found.items() if g is not None}
        return self._geometry

    def dims_and_attrs(self, name: str, array: Array) -> tuple[tuple[str, ...], dict[str, Any]]:
        """The variable's dimensions and attributes: the array's names, else its NGFF
        axes, else (a single array) ``dim_0``...; else refused as the zarr engine does."""
        geometry = self.geometry().get(name)
        axes = geometry.names if geometry is not None else None
        default = default_dims(array.ndim, axes) if self._single else axes
        return dims_and_attrs(array, default)

    @classmethod
    def open(cls, source: Group | StoreLike, *, group: str | None = None, consolidated: bool | None = None,
             storage_options: dict[str, Any] | None = None, zarr_format: int | None = None,
             use_zarr_fill_value_as_mask: bool | None = None,
             chunk_cache: CacheLike = None, exclude: Iterable[str] = ()) -> ChunkflowDataStore:
        """Open the group ``group`` of ``source`` (path, URL, store or chunkflow.Group).

        ``chunk_cache`` is chunkflow's decoded-chunk cache for the arrays: ``None`` the
        process-wide one, ``False`` none, or a :class:`chunkflow.ChunkCache` (ignored
        when ``source`` is an open group, whose own setting holds).
        """
        if isinstance(source, Group):
            node = source[group] if group not in (None, "", "/") else source
            if isinstance(node, Array):
                return cls.for_array(node, node.basename, parent_attributes(node, None, None),
                                     use_zarr_fill_value_as_mask)
            return cls(node, use_zarr_fill_value_as_mask, exclude=exclude)
        if isinstance(source, os.PathLike):
            source = os.fspath(source)
        owned = isinstance(source, str)  # a store made here from a path or URL
        # zarr-python stores may say they hold no consolidated metadata (xarray asks too).
        supports_consolidated = getattr(source, "supports_consolidated_metadata", True)
        store = make_store(source, mode="r", storage_options=storage_options)
        try:
            opened = open_node_for_xarray(store, (group or "").strip("/"), consolidated,
                                          zarr_format, chunk_cache, supports_consolidated,
                                          warn=warns_without_consolidated(source, store))
            if isinstance(opened, Array):
                return cls.for_array(
                    opened, variable_name(source, opened.path, store.identity),
                    parent_attributes(opened, source, storage_options),
                    use_zarr_fill_value_as_mask, close_store=owned)
        except BaseException:
            if owned:
                store.close()
            raise
        return cls(opened, use_zarr_fill_value_as_mask, close_store=owned, exclude=exclude)

    def arrays(self) -> dict[str, Array]:
        """The group's arrays by name, opened once (from consolidated metadata if any)."""
        if self._arrays is None:
            group = self.group
            assert group is not None  # a single array's data store is made with its array
            if self._only is not None:
                self._arrays = {self._only: group[self._only]}  # type: ignore[dict-item]  # _only names an array
            else:
                self._arrays = {name: array for name, array in listed_members(group)
                                if isinstance(array, Array) and name not in self._exclude}
        return self._arrays

    def unfinished(self) -> dict[str, str]:
        """The variables that are unfinished jobs' outputs, each with a line saying so
        (see :mod:`chunkflow.xarray.unfinished`)."""
        if self._unfinished is None:
            described = {name: unfinished_description(array)
                         for name, array in self.arrays().items()}
            self._unfinished = {name: line for name, line in described.items()
                                if line is not None}
        return self._unfinished

    def open_store_variable(self, name: str, array: Array) -> Variable:
        """One array as a lazily indexed xarray variable, with its encoding."""
        dims, attrs = self.dims_and_attrs(name, array)
        if name in self.unfinished():
            attrs[UNFINISHED_ATTRIBUTE] = self.unfinished()[name]
        wrapper = ChunkflowArrayWrapper(array)
        # As the zarr engine: "chunks" is the inner chunk, "shards" the shard; dask
        # blocks of xarray's chunking fall on the stored objects' edges.
        encoding: dict[str, Any] = {
            "chunks": array.chunks,
            "preferred_chunks": dict(zip(dims, preferred_block(array))),
            "shards": array.shards,
            **codec_encoding(array),
            **fill_value_entries(array, attrs, self.use_zarr_fill_value_as_mask),
        }
        if wrapper.dtype.kind == "T":
            encoding["dtype"] = wrapper.dtype  # as the zarr engine: written back as strings
        return Variable(dims, indexing.LazilyIndexedArray(wrapper), attrs, encoding)

    def get_variables(self) -> Mapping[str, Variable]:
        self.get_dimensions()  # refuse conflicting lengths, naming the array
        warn_unfinished(self.unfinished(), self._where(), caller_level() + 1)
        variables = {k: self.open_store_variable(k, a) for k, a in self.arrays().items()}
        if self._coordinates:
            for name, geometry in self.geometry().items():
                if name in variables:
                    dims = tuple(str(dim) for dim in variables[name].dims)
                    found = coordinate_variables(geometry, dims, variables[name].shape)
                    variables.update({k: v for k, v in found.items() if k not in variables})
        return FrozenDict(variables)

    def _where(self) -> str:
        if self.group is not None:
            return f"group {self.group.path or '/'!r} in {self.group.store!r}"
        array = next(iter(self.arrays().values()))
        return f"array {array.path or '/'!r} in {array.store!r}"

    def get_attrs(self) -> dict[str, Any]:
        attrs = {} if not self._attributes or self.group is None else {
            k: v for k, v in self.group.attrs.asdict().items() if not k.lower().startswith("_nc")}
        if self.unfinished():
            attrs[UNFINISHED_ATTRIBUTE] = sorted(self.unfinished())
        return attrs

    def get_dimensions(self) -> dict[str, int]:
        dimensions: dict[str, int] = {}
        for name, array in self.arrays().items():
            dims, _ = self.dims_and_attrs(name, array)
            for dim, size in zip(dims, array.shape):
                if dimensions.setdefault(dim, size) != size:
                    raise MetadataError(
                        f"array {array.path or '/'!r}: dimension {dim!r} has length {size}, "
                        f"but another array gives it length {dimensions[dim]}"
                    )
        return dimensions

    def close(self) -> None:
        if self._close_store:
            node = self.group if self.group is not None else next(iter(self.arrays().values()))
            close = getattr(node.store, "close", None)
            if close is not None:
                close()
