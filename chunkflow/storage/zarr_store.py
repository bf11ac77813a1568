"""A chunkflow store over a zarr-python 3 ``Store`` (``MemoryStore``, ``LocalStore``...).

zarr-python 3 users hold their data in ``zarr.abc.store.Store`` objects: an in-memory
``MemoryStore``, a ``LocalStore``, a ``ZipStore``, an ``FsspecStore``, an
``ObjectStore``, or a wrapper around one (``LoggingStore``, a ``WrapperStore``
subclass). :func:`~chunkflow.storage.make_store` wraps any of them in a
:class:`ZarrStoreAdapter`, so every chunkflow function that takes ``store=`` opens
them. The adapter reads and writes through the store's public async API
(``get`` with ``zarr.buffer.default_buffer_prototype()``, ``set``, ``exists``,
``delete``, ``list_prefix``, ``getsize``), run on zarr-python's own event loop, the
one zarr-python itself uses for that store (an ``FsspecStore``'s file system is bound
to it). Batch reads and writes are one ``asyncio.gather`` per call.

This module imports zarr; chunkflow imports it only when a zarr-python store is
passed, so ``import chunkflow`` never needs zarr.

Over a network (an ``FsspecStore`` of S3 or HTTP, an ``ObjectStore``) the adapter is
latency-bound (:attr:`Store.latency_bound <chunkflow.storage.Store.latency_bound>`), so
chunkflow's reads and writes there keep many requests in flight.

What the adapter cannot get from a zarr-python store:

- **versions**: zarr-python's API has none, so :meth:`Store.versions` gives ``None``
  and a cached chunk is never proven current against the store; caches re-read it
  (see :mod:`chunkflow.engine.freshness`). Changes made through chunkflow still reach
  every cache of the process at once.
- **ranged, pinned reads**: :meth:`Store.open_ranges` fetches the whole value once and
  reads ranges of that copy, since without versions a change between two ranged
  requests could not be noticed.
"""

from __future__ import annotations

import asyncio
import os
from collections.abc import Coroutine, Iterator
from typing import Any, TypeVar

from zarr.abc.store import Store as ZarrStore
from zarr.buffer import default_buffer_prototype
from zarr.core.sync import sync
from zarr.storage import FsspecStore, LocalStore, ZipStore

from chunkflow.storage.base import Store
from chunkflow.storage.fsspec_store import NEAR_PROTOCOLS, fs_protocols
from chunkflow.storage.mapping import object_token
from chunkflow.storage.process_local import reference

__all__ = ["ZarrStoreAdapter", "is_zarr_store"]

T = TypeVar("T")


def is_zarr_store(obj: object) -> bool:
    """Whether ``obj`` is a zarr-python 3 ``Store`` (True only if zarr is imported:
    without it nobody can hold one).

    Examples
    --------
    >>> import zarr
    >>> is_zarr_store(zarr.storage.MemoryStore()), is_zarr_store({})
    (True, False)
    """
    return isinstance(obj, ZarrStore)


def _run(coroutine: Coroutine[Any, Any, T]) -> T:
    # zarr-python's loop thread, where zarr-python runs this store's coroutines too.
    return sync(coroutine)


class ZarrStoreAdapter(Store):
    """A zarr-python 3 ``Store`` as a chunkflow :class:`~chunkflow.storage.Store`.

    Parameters
    ----------
    store : zarr.abc.store.Store
        The zarr-python store; used only through its public API.
    read_only : bool
        Refuse writes here even if ``store`` takes them. A read-only ``store`` makes
        the adapter read-only whatever this says.

    Notes
    -----
    The identity follows the data where zarr-python says where it is (a
    ``LocalStore``'s folder, as chunkflow's ``LocalStore`` names it; a ``ZipStore``'s
    file; an ``FsspecStore``'s URL); other stores are named by the object, and
    adapters over one store object share it. A store whose location is known pickles
    as itself; the others (in-memory stores, wrappers, object stores) pickle by
    reference (see :mod:`chunkflow.storage.process_local`): a copy in another process
    would read and write data nobody else sees.

    Examples
    --------
    >>> import zarr
    >>> inner = zarr.storage.MemoryStore()
    >>> store = ZarrStoreAdapter(inner)
    >>> store["g/zarr.json"] = b'{"zarr_format": 3, "node_type": "group"}'
    >>> sorted(store.list_prefix("g")), store.getsize("g/zarr.json")
    (['g/zarr.json'], 40)
    >>> zarr.open_group(inner, mode="r", path="g").metadata.node_type
    'group'
    """

    def __init__(self, store: ZarrStore, read_only: bool = False) -> None:
        if not isinstance(store, ZarrStore):
            raise TypeError(f"ZarrStoreAdapter needs a zarr.abc.store.Store, got "
                            f"{type(store).__name__}")
        self.store = store
        self.read_only = read_only or store.read_only or not store.supports_writes
        if store.read_only or not store.supports_writes:
            self._read_only_reason = f"the zarr-python store {store!r} is read-only"
        # An instance attribute over the class's: a ZipStore cannot delete.
        self.supports_deletes = store.supports_deletes  # type: ignore[misc]
        self._prototype = default_buffer_prototype()
        self._identity = _identity_of(store, self)
        #: Every request is a network round trip (see Store.latency_bound).
        self.latency_bound = _latency_bound(store)  # type: ignore[misc]

    @property
    def identity(self) -> str:
        return self._identity

    def __repr__(self) -> str:
        return f"ZarrStoreAdapter({self.store!r}, read_only={self.read_only})"

    def __reduce__(self) -> tuple[object, ...]:
        if _process_local(self.store):
            return reference(self, repr(self))
        return (ZarrStoreAdapter, (self.store, self.read_only))

    def close(self) -> None:
        """Nothing: the zarr-python store belongs to the caller, who closes it."""

    # ------------------------------------------------------------------ hooks

    def _get(self, key: str) -> bytes:
        buffer = _run(self.store.get(key, prototype=self._prototype))
        if buffer is None:
            raise KeyError(key)
        return buffer.to_bytes()

    def _get_many(self, keys: list[str]) -> dict[str, bytes]:
        buffers = _run(self._gather(self.store.get(k, prototype=self._prototype) for k in keys))
        return {k: b.to_bytes() for k, b in zip(keys, buffers) if b is not None}

    def _contains(self, key: str) -> bool:
        return _run(self._is_key(key))

    def _set(self, key: str, value: bytes | memoryview) -> None:
        self._set_many({key: value})

    def _set_many(self, items: dict[str, bytes | memoryview]) -> None:
        # bytes(...) copies: the caller may change its buffer afterwards.
        make = self._prototype.buffer.from_bytes
        _run(self._gather(self.store.set(k, make(bytes(v))) for k, v in items.items()))

    def _delete(self, key: str) -> None:
        if not _run(self._delete_existing(key)):
            raise KeyError(key)

    def _delete_many(self, keys: list[str]) -> None:
        _run(self._gather(self.store.delete(k) for k in keys))

    def _list_prefix(self, prefix: str) -> Iterator[str]:
        # zarr-python's prefixes are plain string prefixes ("a" lists "ab/x" too):
        # ask for "a/" for chunkflow's folder-like ones.
        return iter(_run(self._collect(prefix + "/" if prefix else "")))

    def _getsize(self, key: str) -> int:
        size = _run(self._size(key))
        if size is None:
            raise KeyError(key)
        return size

    # ---------------------------------------------------------------- helpers

    @staticmethod
    async def _gather(coroutines: Any) -> list[Any]:
        return await asyncio.gather(*coroutines)

    async def _delete_existing(self, key: str) -> bool:
        # zarr-python deletes missing keys silently; chunkflow's del raises KeyError.
        if not await self._is_key(key):
            return False
        await self.store.delete(key)
        return True

    async def _size(self, key: str) -> int | None:
        # A key first: some stores give a folder's size (LocalStore's os.stat).
        if not await self._is_key(key):
            return None
        try:
            return await self.store.getsize(key)
        except FileNotFoundError:  # deleted meanwhile
            return None

    async def _is_key(self, key: str) -> bool:
        if not await self.store.exists(key):
            return False
        if isinstance(self.store, FsspecStore):
            # fsspec's exists() is true for folders (and object-store prefixes) too.
            try:
                info = await self.store.fs._info(f"{self.store.path.rstrip('/')}/{key}")
            except FileNotFoundError:
                return False
            return info.get("type") == "file"
        return True

    async def _collect(self, prefix: str) -> list[str]:
        listing = self.store.list_prefix(prefix) if prefix else self.store.list()
        # Filtered again: an FsspecStore lists a key itself when asked for "key/".
        return [key async for key in listing if key.startswith(prefix)]


def _latency_bound(store: ZarrStore) -> bool:
    """Whether ``store`` sends each request over a network: an ``FsspecStore`` of a
    remote file system, or an ``ObjectStore`` over anything but obstore's own local
    and in-memory stores.

    Examples
    --------
    >>> import fsspec, zarr
    >>> remote = FsspecStore(fsspec.filesystem("http", asynchronous=True), path="x")
    >>> _latency_bound(remote), _latency_bound(zarr.storage.MemoryStore())
    (True, False)
    """
    if isinstance(store, FsspecStore):
        return not NEAR_PROTOCOLS & set(fs_protocols(store.fs))
    if type(store).__name__ == "ObjectStore":
        inner = getattr(store, "store", None)
        return type(inner).__name__ not in ("LocalStore", "MemoryStore")
    return False


def _process_local(store: ZarrStore) -> bool:
    """Whether a copy of ``store`` in another process would not see this one's data."""
    if isinstance(store, LocalStore):
        return False
    if isinstance(store, ZipStore):
        return not store.read_only  # two processes appending to one zip corrupt it
    if isinstance(store, FsspecStore):
        return "memory" in fs_protocols(store.fs)
    return True  # in-memory stores, wrappers and others: by reference, to be safe


def _identity_of(store: ZarrStore, owner: object) -> str:
    """Where the data lives, as chunkflow's own stores name it, or the object's token."""
    if isinstance(store, LocalStore):
        return "file://" + os.path.realpath(store.root)
    if isinstance(store, ZipStore):
        return "zip:" + os.path.realpath(store.path)
    if isinstance(store, FsspecStore) and "memory" not in fs_protocols(store.fs):
        return _fsspec_identity(store)
    return f"zarr-python:{type(store).__name__}:{object_token(store, owner)}"


def _fsspec_identity(store: FsspecStore) -> str:
    """The location as chunkflow's FsspecStore names it (its endpoint included)."""
    if {"file", "local"} & set(fs_protocols(store.fs)):
        return "file://" + os.path.realpath(store.path)
    ident = store.fs.unstrip_protocol(store.path.rstrip("/"))
    options = getattr(store.fs, "storage_options", None) or {}
    endpoint = options.get("endpoint_url") or options.get("client_kwargs", {}).get("endpoint_url")
    return f"{ident}@{endpoint}" if endpoint else ident
