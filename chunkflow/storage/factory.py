"""Turn what a user passes as ``store=`` into a :class:`Store`."""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Any

from fsspec.implementations.local import LocalFileSystem

from chunkflow.storage.base import Store
from chunkflow.storage.fsspec_store import FsspecStore
from chunkflow.storage.local import LocalStore
from chunkflow.storage.mapping import MappingStore
from chunkflow.storage.memory import MemoryStore
from chunkflow.storage.zip import ZipStore

__all__ = ["make_store"]

_MODES = ("r", "r+", "a", "w", "w-")


def make_store(
    store: Any, *, mode: str = "a", storage_options: dict[str, Any] | None = None
) -> Store:
    """Return a :class:`Store` for `store`.

    ============================  ==============================================
    `store`                       result
    ============================  ==============================================
    ``None``                      a new :class:`MemoryStore`
    a :class:`Store`              the store itself
    a ``Mapping``                 :class:`MappingStore` over it
    ``"file://path"``             :class:`LocalStore` (atomic local writes)
    other ``"...://..."``,        :class:`FsspecStore` with `storage_options`
    ``"a::b"`` URLs
    a path ending in ``.zip``     :class:`ZipStore`: mode ``"r"`` reads,
                                  ``"w"`` truncates, others append
    any other str / PathLike      :class:`LocalStore`
    ============================  ==============================================

    Parameters
    ----------
    store : None, Store, Mapping, str or os.PathLike
        What the user passed.
    mode : {"r", "r+", "a", "w", "w-"}
        Zarr access mode; ``"r"`` gives a read-only store.
    storage_options : dict, optional
        fsspec options; only valid for URLs.

    Examples
    --------
    >>> make_store(None)
    MemoryStore(name=None, read_only=False)
    >>> make_store("memory://make-store-doc", mode="r")
    FsspecStore('memory://make-store-doc', read_only=True)
    >>> make_store("data/image.zarr", mode="r")  # doctest: +ELLIPSIS
    LocalStore('.../data/image.zarr', read_only=True)
    """
    if mode not in _MODES:
        raise ValueError(f"mode must be one of {', '.join(map(repr, _MODES))}, got {mode!r}")
    read_only = mode == "r"
    if store is None:
        _refuse_options(storage_options, "an in-memory store")
        return MemoryStore(read_only=read_only)
    if isinstance(store, Store):
        _refuse_options(storage_options, repr(store))
        return store
    if isinstance(store, Mapping):
        _refuse_options(storage_options, "a mapping")
        return MappingStore(store, read_only=read_only)
    if isinstance(store, os.PathLike):
        store = os.fspath(store)
    if not isinstance(store, str):
        raise TypeError(
            "store must be None, a chunkflow Store, a Mapping, a path or a URL, "
            f"got {type(store).__name__}"
        )
    is_url = "://" in store or "::" in store
    if is_url and not (store.startswith("file://") and "::" not in store):
        return FsspecStore(store, storage_options, read_only=read_only)
    _refuse_options(storage_options, f"local path {store!r}")
    path = LocalFileSystem._strip_protocol(store) if is_url else store
    if path.endswith(".zip"):
        return ZipStore(path, mode="r" if read_only else ("w" if mode == "w" else "a"))
    return LocalStore(path, read_only=read_only)


def _refuse_options(storage_options: dict[str, Any] | None, target: str) -> None:
    if storage_options:
        raise ValueError(
            f"storage_options apply to fsspec URLs only, not to {target}; "
            f"got {sorted(storage_options)}"
        )
