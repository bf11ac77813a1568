"""What a zarr-python 3 ``Store`` is: where its data lives, whether a copy of it in
another process sees the same data, whether its writes wait for a commit.

:class:`~chunkflow.storage.zarr_store.ZarrStoreAdapter` asks these questions of the
store it wraps, through zarr-python's (and obstore's, and Icechunk's) public API, and
never by a list of the classes it knows:

- A store whose data sits in the memory of this process (zarr-python's
  ``MemoryStore`` and ``GpuMemoryStore``, fsspec's ``memory://``, obstore's
  ``MemoryStore`` under an ``ObjectStore``) or a zip file being written is *process
  local* (:func:`process_local_reason`); so is any store that wraps one (a
  ``WrapperStore``, a ``LoggingStore``: any store holding another as an attribute).
  Every other store that pickles travels to dask workers as itself: folders, object
  stores, Icechunk's read-only sessions and fork sessions.
- A store that keeps its writes in a session until a commit (Icechunk) is
  *transactional* (:func:`is_transactional`): readers see a change at the commit, all
  at once, so chunkflow publishes metadata before data there.

This module imports zarr; chunkflow imports it only when a zarr-python store is
passed.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator
from typing import Any

from zarr.abc.store import Store as ZarrStore
from zarr.storage import FsspecStore, LocalStore, MemoryStore, ObjectStore, ZipStore

from chunkflow.storage.fsspec_ranges import fs_protocols
from chunkflow.storage.mapping import object_token

__all__ = ["identity_of", "is_transactional", "latency_bound", "process_local_reason",
           "session_of", "wrapped_stores"]

# File systems whose requests cost no network round trip.
_NEAR_PROTOCOLS = {"file", "local", "memory", "zip", "tar"}


def wrapped_stores(store: ZarrStore) -> Iterator[ZarrStore]:
    """The zarr-python stores ``store`` holds as attributes: what a wrapper wraps.

    Examples
    --------
    >>> import zarr
    >>> inner = zarr.storage.MemoryStore()
    >>> list(wrapped_stores(zarr.storage.LoggingStore(inner))) == [inner]
    True
    >>> list(wrapped_stores(inner))
    []
    """
    try:
        attributes = vars(store)
    except TypeError:  # a class with __slots__ only
        return
    for value in attributes.values():
        if isinstance(value, ZarrStore) and value is not store:
            yield value


def _in_obstore_memory(store: ObjectStore) -> bool:
    """Whether an ``ObjectStore`` holds obstore's in-memory store."""
    module = sys.modules.get("obstore.store")
    memory = getattr(module, "MemoryStore", None)
    return memory is not None and isinstance(store.store, memory)


def process_local_reason(store: ZarrStore) -> str | None:
    """Why a copy of ``store`` in another process would not see this process's data
    (``None``: it would, so the store may travel to dask workers as itself).

    Examples
    --------
    >>> import zarr
    >>> process_local_reason(zarr.storage.MemoryStore())
    "zarr-python's MemoryStore keeps its keys in a dict of this process"
    >>> process_local_reason(zarr.storage.LocalStore("data.zarr")) is None
    True
    """
    name = type(store).__name__
    if isinstance(store, MemoryStore):  # GpuMemoryStore too
        return f"zarr-python's {name} keeps its keys in a dict of this process"
    if isinstance(store, FsspecStore) and "memory" in fs_protocols(store.fs):
        return "fsspec's memory file system is a dict of this process"
    if isinstance(store, ObjectStore) and _in_obstore_memory(store):
        return "obstore's MemoryStore keeps its objects in the memory of this process"
    if isinstance(store, ZipStore) and not store.read_only:
        return "a zip file being written is finalized by this process; two writers corrupt it"
    for inner in wrapped_stores(store):
        reason = process_local_reason(inner)
        if reason is not None:
            return f"it wraps {type(inner).__name__}, and {reason}"
    return None


def _session(store: ZarrStore) -> Any:
    """The session a store keeps its writes in until a commit (Icechunk's), or None."""
    session = getattr(store, "session", None)
    return session if callable(getattr(session, "commit", None)) else None


def session_of(store: ZarrStore) -> Any:
    """The session ``store`` (or the store it wraps) keeps its writes in until a
    commit (an Icechunk ``Session``), or ``None``.

    Examples
    --------
    >>> import zarr
    >>> session_of(zarr.storage.MemoryStore()) is None
    True
    """
    session = _session(store)
    if session is not None:
        return session
    return next((found for inner in wrapped_stores(store)
                 if (found := session_of(inner)) is not None), None)


def is_transactional(store: ZarrStore) -> bool:
    """Whether ``store`` (or the store it wraps) keeps writes in a session that a commit
    makes visible all at once, as Icechunk's stores do.

    Examples
    --------
    >>> import zarr
    >>> is_transactional(zarr.storage.MemoryStore())
    False
    """
    if _session(store) is not None:
        return True
    return any(is_transactional(inner) for inner in wrapped_stores(store))


def latency_bound(store: ZarrStore) -> bool:
    """Whether ``store`` sends each request over a network: an ``FsspecStore`` of a
    remote file system, or an ``ObjectStore`` over anything but obstore's own local
    and in-memory stores.

    Examples
    --------
    >>> import fsspec, zarr
    >>> remote = FsspecStore(fsspec.filesystem("http", asynchronous=True), path="x")
    >>> latency_bound(remote), latency_bound(zarr.storage.MemoryStore())
    (True, False)
    """
    if isinstance(store, FsspecStore):
        return not _NEAR_PROTOCOLS & set(fs_protocols(store.fs))
    if isinstance(store, ObjectStore):
        return type(store.store).__name__ not in ("LocalStore", "MemoryStore")
    return any(latency_bound(inner) for inner in wrapped_stores(store))


def identity_of(store: ZarrStore, owner: object) -> str:
    """Where the data lives, as chunkflow's own stores name it, or a token of the object
    (held while ``owner`` lives) when the store does not say.

    A read-only Icechunk session names its snapshot: every session of that snapshot
    holds the same bytes, in any process.
    """
    if isinstance(store, LocalStore):
        return "file://" + os.path.realpath(store.root)
    if isinstance(store, ZipStore):
        return "zip:" + os.path.realpath(store.path)
    if isinstance(store, FsspecStore) and "memory" not in fs_protocols(store.fs):
        return _fsspec_identity(store)
    if isinstance(store, ObjectStore) and not _in_obstore_memory(store):
        from chunkflow.storage.obstore_config import obstore_location

        location = obstore_location(store.store)
        if location is not None:
            return location
    session = _session(store)
    if session is not None and session.read_only:
        return f"icechunk-snapshot:{session.snapshot_id}"
    return f"zarr-python:{type(store).__name__}:{object_token(store, owner)}"


def _fsspec_identity(store: FsspecStore) -> str:
    """The location as chunkflow's FsspecStore names it (its endpoint included)."""
    if {"file", "local"} & set(fs_protocols(store.fs)):
        return "file://" + os.path.realpath(store.path)
    ident = store.fs.unstrip_protocol(store.path.rstrip("/"))
    options = getattr(store.fs, "storage_options", None) or {}
    endpoint = options.get("endpoint_url") or options.get("client_kwargs", {}).get("endpoint_url")
    return f"{ident}@{endpoint}" if endpoint else ident
