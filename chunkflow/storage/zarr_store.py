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
import pickle
from collections.abc import Coroutine, Iterator
from typing import Any, TypeGuard, TypeVar

from zarr.abc.store import Store as ZarrStore
from zarr.buffer import default_buffer_prototype
from zarr.core.sync import sync
from zarr.storage import FsspecStore

from chunkflow.errors import ArgumentTypeError, KeyNotFoundError
from chunkflow.storage.base import Store
from chunkflow.storage.forks import fork_for, is_ended, worker_fork
from chunkflow.storage.keys import normalize_prefix
from chunkflow.storage.process_local import reference
from chunkflow.storage.session_errors import is_session_error, session_error
from chunkflow.storage.zarr_traits import (
    identity_of,
    is_transactional,
    latency_bound,
    process_local_reason,
    session_of,
)

__all__ = ["ZarrStoreAdapter", "is_zarr_store"]

T = TypeVar("T")


def is_zarr_store(obj: object) -> TypeGuard[ZarrStore]:
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
    path : str
        A folder of ``store`` that the adapter's keys are below (a zarr-python
        ``StorePath``'s path): key ``k`` is ``path/k`` in ``store``.

    Notes
    -----
    The identity follows the data where the store says where it is (a
    ``LocalStore``'s folder, as chunkflow's ``LocalStore`` names it; a ``ZipStore``'s
    file; an ``FsspecStore``'s or ``ObjectStore``'s URL; a read-only Icechunk session's
    snapshot); other stores are named by the object, and adapters over one store object
    share it.

    The adapter pickles with its store, so dask workers read and write the store
    itself: folders, object stores, Icechunk's read-only and fork sessions. A store
    whose data lives in the memory of this process (zarr-python's ``MemoryStore``, a
    ``memory://`` file system, a wrapper around one: see
    :func:`~chunkflow.storage.zarr_traits.process_local_reason`), or that refuses to be
    pickled (a writable Icechunk session), pickles by reference instead (see
    :mod:`chunkflow.storage.process_local`): the same object in this process, and in
    another an error that names the store and says why.

    A store that keeps its writes in a session until a commit (Icechunk) makes the
    adapter :attr:`~chunkflow.storage.Store.transactional`.

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

    def __init__(self, store: ZarrStore, read_only: bool = False, path: str = "") -> None:
        if not isinstance(store, ZarrStore):
            raise ArgumentTypeError(f"ZarrStoreAdapter needs a zarr.abc.store.Store, got "
                                    f"{type(store).__name__}")
        # As zarr-python's make_store_path: a store made but not opened yet (a ZipStore
        # opens its file here) is opened before the first request.
        _run(store._ensure_open())
        self.store = store
        #: The folder of ``store`` the keys are below ("": its root).
        self.path = normalize_prefix(path)
        self.read_only = read_only or store.read_only or not store.supports_writes
        if store.read_only or not store.supports_writes:
            self._read_only_reason = f"the zarr-python store {store!r} is read-only"
        # An instance attribute over the class's: a ZipStore cannot delete.
        self.supports_deletes = store.supports_deletes  # type: ignore[misc]  # per instance: a ZipStore cannot delete
        self._prototype = default_buffer_prototype()
        named = identity_of(store, self)
        # A folder of the store is named as chunkflow names a node's location in it.
        self._identity = f"{named.rstrip('/')}/{self.path}" if self.path else named
        #: Every request is a network round trip (see Store.latency_bound).
        self.latency_bound = latency_bound(store)
        #: Writes wait for a commit of the store's session (see Store.transactional).
        self.transactional = is_transactional(store)
        # (fork id, the forked session's identity) for a copy of a job's fork.
        self._fork: tuple[str, str] | None = None

    @property
    def identity(self) -> str:
        return self._identity

    def __repr__(self) -> str:
        below = f", path={self.path!r}" if self.path else ""
        return f"ZarrStoreAdapter({self.store!r}, read_only={self.read_only}{below})"

    def __reduce__(self) -> tuple[object, ...]:
        forked = self._forked()
        if forked is not None:
            return forked
        reason = process_local_reason(self.store)
        if reason is not None:
            return reference(self, repr(self), reason)
        try:
            # The store's own pickling decides whether it may travel (a writable
            # Icechunk session refuses, and says why); the bytes are kept, not made twice.
            payload = _dumps(self.store)
        except Exception as err:  # noqa: BLE001 - any refusal: used here, not elsewhere
            return reference(self, repr(self), f"{type(self.store).__name__} refuses to be "
                             f"pickled ({type(err).__name__}: {err})")
        return (_adapter_from_pickle, (payload, self.read_only, self._identity, self.path))

    def _forked(self) -> tuple[object, ...] | None:
        """How the adapter pickles while a job writes through a fork of its Icechunk
        session (see :mod:`chunkflow.storage.forks`), else ``None``."""
        if self._fork is not None:  # a copy of a fork pickles as that fork again
            fork_id, identity = self._fork
            return (_adapter_from_fork, (fork_id, _dumps(self.store), self.read_only, identity,
                                         self.path))
        session = session_of(self.store) if self.transactional else None
        found = fork_for(session) if session is not None else None
        if found is None:
            return None
        fork_id, fork_store = found
        return (_adapter_from_fork, (fork_id, _dumps(fork_store), self.read_only,
                                     self._identity, self.path))

    def close(self) -> None:
        """Nothing: the zarr-python store belongs to the caller, who closes it."""

    # ------------------------------------------------------------------ hooks

    def _full(self, key: str) -> str:
        """``key`` as ``store`` names it."""
        return f"{self.path}/{key}" if self.path and key else (self.path or key)

    def _request(self, coroutine: Coroutine[Any, Any, T], action: str, keys: list[str]) -> T:
        """Run ``coroutine``: Icechunk's raw errors raised as chunkflow's (see
        :mod:`chunkflow.storage.session_errors`)."""
        if not self.transactional:
            return _run(coroutine)
        try:
            return _run(coroutine)
        except Exception as error:
            if not is_session_error(error):
                raise
            raise session_error(error, repr(self), action, [self._full(k) for k in keys],
                                in_fork=self._fork is not None) from error

    def _get(self, key: str) -> bytes:
        buffer = self._request(self._fetch(self._full(key)), "read", [key])
        if buffer is None:
            raise KeyNotFoundError(key)
        return buffer.to_bytes()

    def _get_many(self, keys: list[str]) -> dict[str, bytes]:
        buffers = self._request(self._gather(self._fetch(self._full(k)) for k in keys), "read",
                                keys)
        return {k: b.to_bytes() for k, b in zip(keys, buffers) if b is not None}

    def _contains(self, key: str) -> bool:
        return _run(self._is_key(self._full(key)))

    def _set(self, key: str, value: bytes | memoryview) -> None:
        self._set_many({key: value})

    def _set_many(self, items: dict[str, bytes | memoryview]) -> None:
        # bytes(...) copies: the caller may change its buffer afterwards.
        make = self._prototype.buffer.from_bytes
        self._request(self._gather(self.store.set(self._full(k), make(bytes(v)))
                                   for k, v in items.items()), "write", list(items))

    def _delete(self, key: str) -> None:
        if not self._request(self._delete_existing(self._full(key)), "delete", [key]):
            raise KeyNotFoundError(key)

    def _delete_many(self, keys: list[str]) -> None:
        # Icechunk refuses to delete a key it cannot hold (a v2 document, a name like
        # '.chunkflow-written'): such a key is not there, so deleting it is nothing.
        delete = self._delete_existing if self.transactional else self.store.delete
        self._request(self._gather(delete(self._full(k)) for k in keys), "delete", keys)

    def _list_prefix(self, prefix: str) -> Iterator[str]:
        # zarr-python's prefixes are plain string prefixes ("a" lists "ab/x" too):
        # ask for "a/" for chunkflow's folder-like ones.
        cut = len(self.path) + 1 if self.path else 0
        return iter([key[cut:] for key in _run(self._listing(self._full(prefix)))])

    def _delete_prefix(self, prefix: str) -> None:
        if not self.transactional:
            super()._delete_prefix(prefix)  # every key at once (delete_dir may go one by one)
            return
        # Icechunk deletes a node whole with its own delete_dir; deleting the node's
        # zarr.json and then its chunks one by one fails halfway, the node gone.
        self._request(self.store.delete_dir(self._full(prefix)), "delete", [f"{prefix}/"])

    def _getsize(self, key: str) -> int:
        size = _run(self._size(self._full(key)))
        if size is None:
            raise KeyNotFoundError(key)
        return size

    # ---------------------------------------------------------------- helpers

    @staticmethod
    async def _gather(coroutines: Any) -> list[Any]:
        return await asyncio.gather(*coroutines)

    async def _fetch(self, key: str) -> Any:
        """The buffer at ``key``, or ``None``."""
        try:
            return await self.store.get(key, prototype=self._prototype)
        except KeyError:  # Icechunk: a key it cannot hold (a v2 document) is not there
            return None

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
        try:
            if not await self.store.exists(key):
                return False
        except KeyError:  # Icechunk: a key it cannot hold (a v2 document) is not there
            return False
        except Exception as error:  # Icechunk: a name it cannot hold ('.chunkflow-written')
            if is_session_error(error) and "invalid zarr key" in str(error):
                return False
            raise
        if isinstance(self.store, FsspecStore):
            # fsspec's exists() is true for folders (and object-store prefixes) too.
            try:
                info = await self.store.fs._info(f"{self.store.path.rstrip('/')}/{key}")
            except FileNotFoundError:
                return False
            return info.get("type") == "file"
        return True

    async def _listing(self, prefix: str) -> list[str]:
        """The keys below the folder-like ``prefix``, also from stores that refuse to
        list some prefixes (Icechunk lists only below groups and arrays)."""
        try:
            return await self._collect(prefix + "/" if prefix else "")
        except Exception:
            # A prefix with nothing below (list_dir is empty) has no keys; else the
            # nearest enclosing prefix the store lists, filtered. A failure of either
            # raises its own error; the first one is then left chained.
            if not prefix or not [name async for name in self.store.list_dir(prefix)]:
                if prefix:
                    return []
                raise
            parent = prefix.rpartition("/")[0]
            return [key for key in await self._listing(parent)
                    if key.startswith(prefix + "/")]

    async def _collect(self, prefix: str) -> list[str]:
        listing = self.store.list_prefix(prefix) if prefix else self.store.list()
        # Filtered again: an FsspecStore lists a key itself when asked for "key/".
        return [key async for key in listing if key.startswith(prefix)]


def _dumps(store: ZarrStore) -> bytes:
    """``store`` pickled (cloudpickle, as dask sends tasks: a store class defined in a
    script travels too)."""
    import cloudpickle

    return cloudpickle.dumps(store, protocol=pickle.HIGHEST_PROTOCOL)


def _adapter_from_fork(fork_id: str, payload: bytes, read_only: bool,
                       identity: str, path: str = "") -> ZarrStoreAdapter:
    """An adapter over this process's copy of the fork ``fork_id`` (every task of the
    process writes into that one copy). Named apart from the session it forks: the
    process's caches never mix the fork's chunks with another job's."""
    store = worker_fork(fork_id, lambda: pickle.loads(payload))
    ended = is_ended(fork_id)
    adapter = ZarrStoreAdapter(store, read_only=read_only or ended, path=path)
    if ended:
        adapter._read_only_reason = (
            "it is a store of an earlier round of an Icechunk job, whose writes are merged "
            "already (see chunkflow.graph.forked)")
    adapter._identity = f"{identity}@fork:{fork_id}"
    adapter._fork = (fork_id, identity)
    return adapter


def _adapter_from_pickle(payload: bytes, read_only: bool, identity: str,
                         path: str = "") -> ZarrStoreAdapter:
    """An adapter over the store ``payload`` holds, named as the one pickled (a copy of a
    store that travels holds the same data)."""
    adapter = ZarrStoreAdapter(pickle.loads(payload), read_only=read_only, path=path)
    adapter._identity = identity
    return adapter
