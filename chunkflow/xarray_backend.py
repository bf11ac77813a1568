"""An xarray backend: ``xr.open_dataset(path, engine="chunkflow")`` reads through chunkflow.

The engine reads the stores xarray's own ``"zarr"`` engine reads (Zarr v2 with the
``_ARRAY_DIMENSIONS`` attribute, Zarr v3 with ``dimension_names``, consolidated or
not) and returns the same datasets: it hands xarray a data store (variables,
attributes, dimensions) and xarray's ``StoreBackendEntrypoint`` applies the CF
decoding (``scale_factor``/``add_offset``, ``_FillValue``, times) exactly as it does
for the zarr engine. It opens paths, URLs, chunkflow stores and groups, mappings, and
zarr-python 3 ``Store`` objects (``MemoryStore``, ``LocalStore``, ``ZipStore``,
``FsspecStore``, wrappers), read through their public API. What matches the zarr
engine, by part (:mod:`chunkflow.xarray_engine`): fill values, codecs in the
encoding (``to_zarr`` writes a dataset read here with the same codecs), strings,
and the ``KeyError`` for missing dimension names (:mod:`~.variables`); the
consolidated-metadata fallback and its ``RuntimeWarning`` (:mod:`~.opening`);
``load_async`` (:mod:`~.wrapper`). A missing store raises ``FileNotFoundError``
saying it does not exist.

Why a lazily indexed ``BackendArray`` and not :func:`chunkflow.to_dask` arrays:
xarray chunks backend variables itself, *after* CF decoding has wrapped them (a
backend never sees ``chunks=``), through ``dask.array.from_array`` over the wrapped
variable. Returning dask arrays from the backend would build dask arrays for
``chunks=None`` too, and would add a ``map_blocks`` layer per decoding step; a custom
``ChunkManager`` would have to unwrap xarray's private decoding wrappers. Instead
every variable declares its I/O unit in ``encoding["preferred_chunks"]`` — the shard
of a sharded array, the chunk otherwise, the unit :func:`chunkflow.to_dask` uses — so
``chunks={}`` gives one dask block per chunk (shard), ``chunks="auto"`` and
``chunks={dim: n}`` whole multiples of it, and each block's task is one
``get_basic_selection`` of whole chunks: the same reads ``to_dask`` makes, in a graph
that is likewise one ``Blockwise`` layer over the pickled array. On a latency-bound
store (S3, HTTP: ``Store.latency_bound``) the preferred block is ``to_dask``'s default
block there instead, many chunks whose requests one task keeps in flight together:
one chunk per task would keep only one request per thread in flight (measured over
HTTP with 20 ms per request, 512 chunks of 512 KiB with ``chunks={}``: 6.6 s, against
0.5 s grouped). xarray then warns, rightly, when asked for chunks that split those
blocks.

This module needs xarray; nothing else in chunkflow imports it, so ``import chunkflow``
works without xarray. xarray finds the engine through the ``xarray.backends`` entry
point named ``chunkflow``; the class itself can be passed as ``engine=`` too.

Examples
--------
>>> import numpy as np, xarray as xr, chunkflow
>>> from chunkflow.storage import MemoryStore
>>> store = MemoryStore()
>>> root = chunkflow.group(store)
>>> t = root.create_array("t", shape=(4, 6), chunks=(2, 3), dtype="f4",
...                       dimension_names=("y", "x"))
>>> t[:] = np.arange(24).reshape(4, 6)
>>> ds = xr.open_dataset(store, engine=ChunkflowBackendEntrypoint, chunks={},
...                      consolidated=False)  # None would warn: there is no consolidated metadata
>>> ds.t.chunks
((2, 2), (3, 3))
>>> float(ds.t.sum())
276.0
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

try:
    from xarray import Dataset, Variable
    from xarray.backends import AbstractDataStore, BackendEntrypoint, StoreBackendEntrypoint
    from xarray.core import indexing
    from xarray.core.utils import FrozenDict
except ImportError as error:  # xarray is optional: only this module needs it
    raise ImportError("chunkflow.xarray_backend needs xarray (pip install 'xarray>=2024.1')"
                      ) from error

from chunkflow.core.array import Array
from chunkflow.core.group import Group
from chunkflow.errors import MetadataError
from chunkflow.graph.read import block_multiples
from chunkflow.storage import make_store
from chunkflow.xarray_engine.opening import open_group_for_xarray
from chunkflow.xarray_engine.variables import (
    DimensionNamesError,
    codec_encoding,
    dims_and_attrs,
    fill_value_entries,
)
from chunkflow.xarray_engine.wrapper import ChunkflowArrayWrapper

if TYPE_CHECKING:
    from chunkflow.cache import CacheLike
    from chunkflow.storage import StoreLike

__all__ = ["ChunkflowArrayWrapper", "ChunkflowBackendEntrypoint", "ChunkflowDataStore",
           "DimensionNamesError"]



def preferred_block(array: Array) -> tuple[int, ...]:
    """The block shape xarray should read ``array`` in (``encoding["preferred_chunks"]``):
    its I/O unit (shard or chunk), or on a latency-bound store :func:`chunkflow.to_dask`'s
    default block there (see the module docstring).

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
        :mod:`chunkflow.xarray_engine.variables` for why.
    close_store : bool
        Close the group's store when xarray closes the dataset (stores this module
        opened itself).

    Examples
    --------
    >>> import chunkflow
    >>> root = chunkflow.group()
    >>> _ = root.create_array("v", shape=(3,), chunks=(2,), dtype="i2",
    ...                       dimension_names=("x",))
    >>> ChunkflowDataStore(root).get_dimensions()
    {'x': 3}
    """

    def __init__(self, group: Group, use_zarr_fill_value_as_mask: bool | None = None,
                 close_store: bool = False) -> None:
        self.group = group
        self.use_zarr_fill_value_as_mask = use_zarr_fill_value_as_mask
        self._close_store = close_store
        self._arrays: dict[str, Array] | None = None

    @classmethod
    def open(cls, source: Group | StoreLike, *, group: str | None = None, consolidated: bool | None = None,
             storage_options: dict[str, Any] | None = None, zarr_format: int | None = None,
             use_zarr_fill_value_as_mask: bool | None = None,
             chunk_cache: CacheLike = None) -> ChunkflowDataStore:
        """Open the group ``group`` of ``source`` (path, URL, store or chunkflow.Group).

        ``chunk_cache`` is chunkflow's decoded-chunk cache for the arrays: ``None`` the
        process-wide one, ``False`` none, or a :class:`chunkflow.ChunkCache` (ignored
        when ``source`` is an open group, whose own setting holds).
        """
        if isinstance(source, Group):
            node = source[group] if group not in (None, "", "/") else source
            if not isinstance(node, Group):
                raise MetadataError(f"{group!r} in {source!r} is an array, expected a group")
            return cls(node, use_zarr_fill_value_as_mask)
        if isinstance(source, os.PathLike):
            source = os.fspath(source)
        owned = isinstance(source, str)  # a store made here from a path or URL
        # zarr-python stores may say they hold no consolidated metadata (xarray asks too).
        supports_consolidated = getattr(source, "supports_consolidated_metadata", True)
        store = make_store(source, mode="r", storage_options=storage_options)
        try:
            node = open_group_for_xarray(store, (group or "").strip("/"), consolidated,
                                         zarr_format, chunk_cache, supports_consolidated)
        except BaseException:
            if owned:
                store.close()
            raise
        return cls(node, use_zarr_fill_value_as_mask, close_store=owned)

    def arrays(self) -> dict[str, Array]:
        """The group's arrays by name, opened once (from consolidated metadata if any)."""
        if self._arrays is None:
            self._arrays = dict(self.group.arrays())
        return self._arrays

    def open_store_variable(self, name: str, array: Array) -> Variable:
        """One array as a lazily indexed xarray variable, with its encoding."""
        dims, attrs = dims_and_attrs(array)
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

    def get_variables(self) -> FrozenDict:
        self.get_dimensions()  # refuse conflicting lengths, naming the array
        return FrozenDict((k, self.open_store_variable(k, a)) for k, a in self.arrays().items())

    def get_attrs(self) -> dict[str, Any]:
        return {k: v for k, v in self.group.attrs.asdict().items()
                if not k.lower().startswith("_nc")}

    def get_dimensions(self) -> dict[str, int]:
        dimensions: dict[str, int] = {}
        for array in self.arrays().values():
            dims, _ = dims_and_attrs(array)
            for dim, size in zip(dims, array.shape):
                if dimensions.setdefault(dim, size) != size:
                    raise MetadataError(
                        f"array {array.path or '/'!r}: dimension {dim!r} has length {size}, "
                        f"but another array gives it length {dimensions[dim]}"
                    )
        return dimensions

    def close(self) -> None:
        if self._close_store:
            close = getattr(self.group.store, "close", None)
            if close is not None:
                close()


class ChunkflowBackendEntrypoint(BackendEntrypoint):
    """``engine="chunkflow"``: Zarr v2/v3 groups read through chunkflow.

    Takes the decoding options of every xarray engine and, like the zarr engine,
    ``group=``, ``consolidated=`` (``None``: use consolidated metadata when present),
    ``storage_options=``, ``zarr_format=`` and ``use_zarr_fill_value_as_mask=``; and
    ``chunk_cache=`` (chunkflow's decoded-chunk cache: ``None`` the process-wide one,
    ``False`` none, or a :class:`chunkflow.ChunkCache`; xarray's own ``cache=`` is
    another thing, its in-memory copy of loaded variables).
    Besides paths, URLs and stores it opens a :class:`chunkflow.Group` directly.
    ``xr.open_datatree`` and ``xr.open_groups`` open the group and all its subgroups.

    ``guess_can_open`` is always false: the engine is chosen explicitly, so installing
    chunkflow never changes which engine opens a ``.zarr`` path by default.
    """

    description = "Open Zarr v2/v3 stores (.zarr) through chunkflow"
    url = "https://github.com/chunkflow/chunkflow"
    supports_groups = True
    open_dataset_parameters = (
        "filename_or_obj", "mask_and_scale", "decode_times", "concat_characters",
        "decode_coords", "drop_variables", "use_cftime", "decode_timedelta", "group",
        "consolidated", "storage_options", "zarr_format", "use_zarr_fill_value_as_mask",
        "chunk_cache", "mode",
    )

    def guess_can_open(self, filename_or_obj: Group | StoreLike) -> bool:
        return False

    def open_dataset(  # type: ignore[override]
        self,
        filename_or_obj: Group | StoreLike,
        *,
        mask_and_scale: bool = True,
        decode_times: bool = True,
        concat_characters: bool = True,
        decode_coords: bool = True,
        drop_variables: str | Iterable[str] | None = None,
        use_cftime: bool | None = None,
        decode_timedelta: bool | None = None,
        group: str | None = None,
        consolidated: bool | None = None,
        storage_options: dict[str, Any] | None = None,
        zarr_format: int | None = None,
        use_zarr_fill_value_as_mask: bool | None = None,
        chunk_cache: CacheLike = None,
        mode: str = "r",
    ) -> Dataset:
        _check_read_mode(mode)
        store = ChunkflowDataStore.open(
            filename_or_obj, group=group, consolidated=consolidated,
            storage_options=storage_options, zarr_format=zarr_format,
            use_zarr_fill_value_as_mask=use_zarr_fill_value_as_mask, chunk_cache=chunk_cache,
        )
        decoders = dict(mask_and_scale=mask_and_scale, decode_times=decode_times,
                        concat_characters=concat_characters, decode_coords=decode_coords,
                        drop_variables=drop_variables, use_cftime=use_cftime,
                        decode_timedelta=decode_timedelta)
        try:
            return StoreBackendEntrypoint().open_dataset(store, **decoders)
        except BaseException:
            store.close()
            raise

    def open_groups_as_dict(  # type: ignore[override]
        self, filename_or_obj: Group | StoreLike, *, group: str | None = None,
        consolidated: bool | None = None, storage_options: dict[str, Any] | None = None,
        zarr_format: int | None = None, use_zarr_fill_value_as_mask: bool | None = None,
        chunk_cache: CacheLike = None, mode: str = "r", **decoders: Any,
    ) -> dict[str, Dataset]:
        """Every group from ``group`` down, by path (``"/"``, ``"/a"``, ``"/a/b"``)."""
        _check_read_mode(mode)
        root = ChunkflowDataStore.open(
            filename_or_obj, group=group, consolidated=consolidated,
            storage_options=storage_options, zarr_format=zarr_format,
            use_zarr_fill_value_as_mask=use_zarr_fill_value_as_mask, chunk_cache=chunk_cache,
        )
        try:
            datasets = {}
            for path, node in _walk_groups(root.group, "/"):
                store = root if node is root.group else ChunkflowDataStore(
                    node, use_zarr_fill_value_as_mask)
                datasets[path] = StoreBackendEntrypoint().open_dataset(store, **decoders)
            return datasets
        except BaseException:
            root.close()
            raise

    def open_datatree(self, filename_or_obj: Group | StoreLike, **kwargs: Any) -> Any:  # type: ignore[override]
        """The group and its subgroups as a :class:`xarray.DataTree` (xarray >= 2024.10)."""
        from xarray import DataTree

        datasets = self.open_groups_as_dict(filename_or_obj, **kwargs)
        try:
            tree = DataTree.from_dict(datasets)
        except BaseException:
            datasets["/"].close()
            raise
        tree.set_close(datasets["/"].close)  # the root's store serves every group
        return tree


def _check_read_mode(mode: str) -> None:
    # mode= is accepted so that calls written for engine="zarr" keep working.
    if mode != "r":
        raise ValueError(f"engine='chunkflow' only reads: mode must be 'r', got {mode!r} "
                         f"(write with Dataset.to_zarr; chunkflow reads what it writes)")


def _walk_groups(group: Group, path: str) -> Iterable[tuple[str, Group]]:
    yield path, group
    for name, child in group.groups():
        yield from _walk_groups(child, f"{path.rstrip('/')}/{name}")
