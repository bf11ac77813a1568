"""The :class:`Array`: a chunked, compressed N-dimensional array in a store."""

from __future__ import annotations

import json
import time
from typing import TYPE_CHECKING, Any

import numpy as np

from chunkflow.codecs import v2_pipeline, v3_pipeline
from chunkflow.core.array_properties import ArrayProperties
from chunkflow.core.array_selections import ArraySelections
from chunkflow.core.attrs import Attributes
from chunkflow.core.chunk_grid_selection import ChunkGridSelection
from chunkflow.core.documents import (
    ArrayMetadata,
    load_array_metadata,
    normalize_path,
    store_array_metadata,
)
from chunkflow.engine.chunk_io import ChunkIO
from chunkflow.engine.layout import layout_of
from chunkflow.engine.options import ArrayOptions
from chunkflow.engine.repair import repair_array
from chunkflow.errors import ArgumentTypeError
from chunkflow.grid import ChunkKeyEncoding, RegularChunkGrid
from chunkflow.indexing.plans import BasicPlans
from chunkflow.jobs import warn_if_incomplete
from chunkflow.metadata import ArrayMetadataV2
from chunkflow.storage import Store, make_store

if TYPE_CHECKING:
    from numpy.typing import ArrayLike

    from chunkflow.cache import CacheLike
    from chunkflow.grid import ShapeLike
    from chunkflow.storage import StoreLike
    from chunkflow.sync import SynchronizerLike

__all__ = ["Array"]


class Array(ArrayProperties, ArraySelections, ChunkGridSelection):
    """A chunked, compressed N-dimensional array stored in Zarr v2 or v3 format.

    Open an existing array from its store (``Array(store, path)``) or create one with
    :func:`chunkflow.create`, :func:`chunkflow.zeros`, :func:`chunkflow.open`...

    Parameters
    ----------
    store : str, os.PathLike, Store or MutableMapping
        Where the array lives (a folder, a URL, a mapping...).
    path : str, optional
        The array's path inside the store.
    read_only : bool, optional
        Refuse writes.
    storage_options : dict, optional
        Passed to fsspec for URLs.
    write_empty_chunks : bool, optional
        Store chunks equal to ``fill_value`` everywhere (default ``False``: delete them).
    allow_pickle : bool, optional
        Allow the pickle codec (only for trusted stores: decoding runs code).
    synchronizer : Synchronizer, "thread" or None
        Locks chunks for writes that other writers may overlap.
    cache : ChunkCache, bool or None
        Decoded-chunk cache: ``None`` the process-wide one, ``False`` none.
    lock_timeout : float, optional
        Seconds to wait for a lock before raising (nothing is written then).
    recheck_cached_data : "open", bool, float or None
        How stale cached chunks may be when read: the recheck policy described in
        :mod:`chunkflow.config`; ``None`` follows the setting
        ``chunkflow.cache.recheck-cached-data`` (default ``"open"``).

    Notes
    -----
    ``z[...]`` is numpy's indexing, for reads and writes: index arrays broadcast
    together (their block placed where numpy places it), boolean masks of any rank,
    ``None``, negative steps; a write with repeated indices stores the last value given,
    as numpy does. What chunkflow does not support raises an ``IndexError``. ``oindex``,
    ``vindex``, ``blocks`` and the ``get_*``/``set_*`` selection methods keep
    zarr-python's meanings; field names select fields of structured dtypes
    (``z["foo", 1:3]``, ``fields=``), as zarr-python 2 does.

    Examples
    --------
    >>> import chunkflow
    >>> z = chunkflow.zeros((4, 6), chunks=(2, 3), dtype="i4")
    >>> z[1:3, 2:5] = 7
    >>> z[1]
    array([0, 0, 7, 7, 7, 0], dtype=int32)
    >>> z.nchunks_initialized
    4
    >>> again = chunkflow.Array(z.store)
    >>> int(again[:].sum())
    42
    >>> z[[1, 2], [2, 4]]  # points, as numpy
    array([7, 7], dtype=int32)
    """

    _kind = "array"

    def __init__(
        self,
        store: StoreLike,
        path: str | None = "",
        *,
        read_only: bool = False,
        storage_options: dict[str, Any] | None = None,
        write_empty_chunks: bool = False,
        allow_pickle: bool = False,
        synchronizer: SynchronizerLike = None,
        cache: CacheLike = None,
        lock_timeout: float | None = None,
        recheck_cached_data: bool | str | float | None = None,
    ) -> None:
        options = ArrayOptions.from_kwargs(
            read_only=read_only, write_empty_chunks=write_empty_chunks,
            allow_pickle=allow_pickle, synchronizer=synchronizer, cache=cache,
            lock_timeout=lock_timeout, recheck_cached_data=recheck_cached_data,
        )
        resolved = make_store(
            store, mode="r" if read_only else "a", storage_options=storage_options
        )
        node_path = normalize_path(path)
        metadata, attributes = load_array_metadata(resolved, node_path)
        self._setup(resolved, node_path, metadata, attributes, options)
        warn_if_incomplete(self)  # an unfinished resumable job's output (once per process)

    @classmethod
    def _from_metadata(
        cls,
        store: Store,
        path: str,
        metadata: ArrayMetadata,
        attributes: dict[str, Any],
        options: ArrayOptions,
    ) -> Array:
        """An Array over already-parsed metadata (no store read)."""
        array = cls.__new__(cls)
        array._setup(store, path, metadata, attributes, options)
        return array

    def forget_cached(self) -> None:
        """Drop this array's chunks from every chunk cache of this process.

        Writes made in this process already reach every cache; this is for writes made
        elsewhere that this process knows of (a finished cluster job, another process).

        Examples
        --------
        >>> import chunkflow
        >>> z = chunkflow.ones((4,), chunks=(2,))
        >>> _ = z[:]
        >>> z.forget_cached()
        """
        self._io.forget_cached()

    def with_options(self, **changes: Any) -> Array:
        """A handle on the same array with some options replaced, reading nothing.

        Parameters
        ----------
        **changes
            Any of the handle options the constructor takes: ``read_only``,
            ``write_empty_chunks``, ``allow_pickle``, ``synchronizer``, ``cache``,
            ``lock_timeout``, ``recheck_cached_data``.

        Examples
        --------
        >>> import chunkflow
        >>> z = chunkflow.zeros((4,), chunks=(2,))
        >>> uncached = z.with_options(cache=False)
        >>> uncached.options.cache, z.options.cache, uncached.shape
        (False, None, (4,))
        """
        current = {name: getattr(self._options, name) for name in self._options.__dataclass_fields__}
        unknown = sorted(set(changes) - set(current))
        if unknown:
            raise ArgumentTypeError(f"array {self._path or '/'!r}: with_options() takes "
                                    f"{', '.join(sorted(current))}; got {', '.join(unknown)}")
        options = ArrayOptions.from_kwargs(**{**current, **changes})
        return type(self)._from_metadata(self._store, self._path, self._metadata,
                                         self._attrs.asdict(), options)

    def _setup(
        self,
        store: Store,
        path: str,
        metadata: ArrayMetadata,
        attributes: dict[str, Any],
        options: ArrayOptions,
    ) -> None:
        self._store = store
        self._path = path
        # For recheck_cached_data="open": chunks cached before now are checked once.
        self._opened_at = time.monotonic()
        self._options = options.with_read_only(options.read_only or store.read_only)
        self._attrs = Attributes(attributes, self._persist_attributes, path,
                                 read_only=self._options.read_only)
        self._set_metadata(metadata)

    def _set_metadata(self, metadata: ArrayMetadata) -> None:
        self._metadata = metadata
        self._layout = layout_of(metadata)
        grid = RegularChunkGrid(metadata.shape, metadata.chunks)
        name, separator = metadata.chunk_key_encoding
        allow_pickle = self._options.allow_pickle
        pipeline: Any
        if isinstance(metadata, ArrayMetadataV2):
            pipeline = v2_pipeline(metadata.dtype, metadata.chunks, metadata.order,
                                   metadata.filters, metadata.compressor,
                                   allow_pickle=allow_pickle)
        else:
            pipeline = v3_pipeline(metadata.dtype, metadata.chunks, metadata.codecs,
                                   allow_pickle=allow_pickle,
                                   fill_value=self._concrete_fill_value(metadata))
        self._plans = BasicPlans()
        self._io = ChunkIO(
            store=self._store,
            path=self._path,
            grid=grid,
            key_encoding=ChunkKeyEncoding(name, separator),
            pipeline=pipeline,
            fill_value=self._concrete_fill_value(metadata),
            options=self._options,
            opened_at=self._opened_at,
        )

    @staticmethod
    def _concrete_fill_value(metadata: ArrayMetadata) -> Any:
        # v2 "fill_value": null means undefined: missing chunks read as zeros ("" for
        # strings, b"" for bytes), the choice zarr-python makes; None for other objects
        # (JSON, msgpack... items), as zarr-python 2 reads them.
        if metadata.fill_value is not None:
            return metadata.fill_value
        if metadata.dtype.kind == "O":
            ids = [doc.get("id") for doc in getattr(metadata, "filters", None) or ()]
            return "" if "vlen-utf8" in ids else b"" if "vlen-bytes" in ids else (
                None if ids else "")
        return np.zeros((), dtype=metadata.dtype)[()]

    def _lock_options(self) -> tuple[Any, float | None]:
        return self._options.synchronizer, self._options.lock_timeout

    def _current_attributes(self) -> dict[str, Any]:
        self._refresh_if_shared()
        return self._attrs.asdict()

    def _store_attributes(self, attributes: dict[str, Any]) -> None:
        self._metadata = store_array_metadata(self._store, self._path, self._metadata,
                                              attributes)

    def _refresh_if_shared(self) -> None:
        """Under a synchronizer, re-read metadata and attributes: another process may
        have resized the array or changed attributes since this handle read them."""
        if self._options.synchronizer is None:
            return
        metadata, attributes = load_array_metadata(self._store, self._path)
        self._set_metadata(metadata)
        self._attrs.refresh(attributes)

    # -- pickling: store, path, metadata and options, never data ----------------

    def __getstate__(self) -> dict[str, Any]:
        # The metadata travels along: unpickling (once per dask task) never reads the
        # store's zarr.json/.zarray again (one request per task on S3).
        return {"store": self._store, "path": self._path, "options": self._options,
                "metadata": self._metadata, "attributes": self._attrs.asdict()}

    def __setstate__(self, state: dict[str, Any]) -> None:
        self._setup(state["store"], state["path"], state["metadata"], state["attributes"],
                    state["options"])

    def __eq__(self, other: object) -> bool:
        # The same array: the same store location and path (zarr-python 2's rule),
        # whatever the handles' options.
        return (isinstance(other, Array) and other._store == self._store
                and other._path == self._path)

    def __hash__(self) -> int:
        return hash((self._store, self._path))

    def __dask_tokenize__(self) -> tuple[Any, ...]:
        # Deterministic dask names: where the array lives and what its metadata says
        # about the data (attributes do not change a single value).
        described = {k: v for k, v in self._metadata.to_dict().items() if k != "attributes"}
        document = json.dumps(described, sort_keys=True, default=str)
        return ("chunkflow.Array", self._store.identity, self._path, document)

    # -- shape changes ---------------------------------------------------------

    def resize(self, *shape: ShapeLike) -> None:
        """Change the shape; chunks wholly outside the new shape are deleted.

        Chunks cut by the new boundary get ``fill_value`` beyond it, so growing the
        array again shows ``fill_value`` there, never stale data. Data first, metadata
        last: a grow clears the grown region before publishing the larger shape, a
        shrink publishes the smaller shape before deleting, so a crash leaves the old
        or the new array (see :meth:`repair` for the leftovers).

        Examples
        --------
        >>> import chunkflow
        >>> z = chunkflow.zeros((4, 4), chunks=(2, 2), dtype="u1")
        >>> z[:] = 1
        >>> z.resize(3, 3); z.resize(4, 4)
        >>> z[:, 3]
        array([0, 0, 0, 0], dtype=uint8)
        """
        from chunkflow.engine.resize import resize_array

        self._check_writable()
        with self._metadata_lock():
            self._refresh_if_shared()
            resize_array(self._io, self._metadata, shape, self._write_metadata,
                         lambda metadata: self._staged(metadata)._io)

    def append(self, data: ArrayLike, axis: int = 0) -> tuple[int, ...]:
        """Append ``data`` along ``axis``; returns the new shape.

        The rows are written before the larger shape is published: a failure or a
        crash leaves the array as it was, never rows of ``fill_value``.

        Examples
        --------
        >>> import chunkflow
        >>> z = chunkflow.array(np.arange(6).reshape(2, 3), chunks=(1, 3))
        >>> z.append(np.ones((1, 3), dtype=z.dtype))
        (3, 3)
        """
        from chunkflow.engine.resize import append_to_array

        self._check_writable()
        # The whole append holds the array lock: concurrent appends from several
        # processes each extend the shape they find and write their own rows.
        with self._metadata_lock():
            self._refresh_if_shared()
            return append_to_array(self._metadata, self._path, data, axis,
                                   stage=self._staged, publish=self._write_metadata,
                                   transactional=self._store.transactional)

    def repair(self, temporary_max_age: float | None = None) -> Any:
        """Remove what interrupted writers left: data beyond the shape, temporary files.

        Deletes chunks outside the grid, resets edge-chunk padding beyond the shape to
        ``fill_value`` and, in local folders, removes temporary files older than
        ``temporary_max_age`` seconds (default an hour: a live writer's file is never
        touched). chunkflow never shows such data (grows clear the grown region first);
        repairing frees space and protects other tools. Returns a ``RepairReport``.

        Examples
        --------
        >>> import chunkflow
        >>> z = chunkflow.zeros(10, chunks=4, dtype="u1")
        >>> z.repair()
        RepairReport(deleted_chunks=0, cleared_chunks=0, removed_temporaries=0)
        """
        from chunkflow.engine.repair import TEMPORARY_MAX_AGE

        self._check_writable()
        age = TEMPORARY_MAX_AGE if temporary_max_age is None else temporary_max_age
        with self._metadata_lock():
            self._refresh_if_shared()
            return repair_array(self._io, age)

    def _write_metadata(self, metadata: ArrayMetadata) -> ChunkIO:
        """Publish ``metadata``; returns the chunk I/O of the array it describes."""
        self._metadata = store_array_metadata(self._store, self._path, metadata,
                                              self._attrs.asdict())
        self._set_metadata(self._metadata)
        return self._io

    def _staged(self, metadata: ArrayMetadata) -> Array:
        """A handle on ``metadata`` that is not published (nobody else sees it yet)."""
        return type(self)._from_metadata(self._store, self._path, metadata,
                                         self._attrs.asdict(), self._options)
