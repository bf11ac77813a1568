"""Turn what a user passes as ``store=`` into a :class:`Store`."""

from __future__ import annotations

import os
import sys
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, TypeAlias, TypeGuard

from fsspec.implementations.local import LocalFileSystem

from chunkflow.errors import ArgumentTypeError, InvalidArgumentError
from chunkflow.storage.base import Store
from chunkflow.storage.fsspec_store import FsspecStore
from chunkflow.storage.local import LocalStore
from chunkflow.storage.mapping import MappingStore
from chunkflow.storage.memory import MemoryStore
from chunkflow.storage.obstore_config import object_backend
from chunkflow.storage.zip import ZipStore

if TYPE_CHECKING:
    from zarr.abc.store import Store as ZarrPythonStore
    from zarr.storage import StorePath

__all__ = ["StoreLike", "make_store", "opened_by_chunkflow", "output_location"]

#: What every ``store=`` argument accepts (see :func:`make_store`): a chunkflow
#: :class:`Store`, a zarr-python 3 store (or ``StorePath``), a mapping of keys to bytes,
#: a path or URL, or ``None`` for a new in-memory store. Written as a string so that
#: zarr-python, an optional dependency, is imported by type checkers only.
StoreLike: TypeAlias = ("Store | ZarrPythonStore | StorePath | Mapping[str, bytes] | str | "
                        "os.PathLike[str] | None")

_MODES = ("r", "r+", "a", "w", "w-")


def make_store(
    store: StoreLike, *, mode: str = "a", storage_options: dict[str, Any] | None = None
) -> Store:
    """Return a :class:`Store` for `store` (see :func:`_make_store`); a store made here
    from a path, URL or mapping is marked as opened by chunkflow, so nodes opened from
    it close it (:func:`opened_by_chunkflow`).

    Examples
    --------
    >>> from chunkflow.storage import MemoryStore
    >>> mine = MemoryStore()
    >>> opened_by_chunkflow(make_store(mine)), opened_by_chunkflow(make_store(None))
    (False, True)
    """
    made = _make_store(store, mode=mode, storage_options=storage_options)
    if made is not store:
        made._opened_by_chunkflow = True  # type: ignore[attr-defined]  # a mark for opened_by_chunkflow
    return made


def output_location(out: Any) -> Any:
    """A writer's ``out=`` as every writer takes it: a zarr-python 3 ``Store`` (an
    Icechunk session's ``store``, an ``ObjectStore``, a ``LocalStore``, a
    ``MemoryStore``) or ``StorePath`` becomes the chunkflow :class:`Store` over it that
    :func:`make_store` makes for a source; anything else is returned as it is (a path,
    a URL, a chunkflow store, an array or group), for the writer to open or refuse.

    Examples
    --------
    >>> import zarr
    >>> output_location(zarr.storage.MemoryStore())  # doctest: +ELLIPSIS
    ZarrStoreAdapter(MemoryStore('memory://...'), read_only=False)
    >>> inner = zarr.storage.StorePath(zarr.storage.MemoryStore(), "images/a")
    >>> output_location(inner).path
    'images/a'
    >>> output_location("data/out.zarr")
    'data/out.zarr'
    """
    if _is_zarr_store(out) or _is_store_path(out):
        return make_store(out)
    return out


def opened_by_chunkflow(store: Store) -> bool:
    """Whether chunkflow made ``store`` from a location (and so may close it)."""
    return getattr(store, "_opened_by_chunkflow", False)


def _make_store(
    store: StoreLike, *, mode: str = "a", storage_options: dict[str, Any] | None = None
) -> Store:
    """Return a :class:`Store` for `store`.

    ============================  ==============================================
    `store`                       result
    ============================  ==============================================
    ``None``                      a new :class:`MemoryStore`
    a :class:`Store`              the store itself
    a zarr-python 3 ``Store``     :class:`~chunkflow.storage.zarr_store.ZarrStoreAdapter`
                                  over it (read-only for mode ``"r"``)
    a zarr-python ``StorePath``   the same, below the folder it names
    a ``Mapping``                 :class:`MappingStore` over it
    ``"file://path"``             :class:`LocalStore` (atomic local writes);
                                  with `storage_options`, :class:`FsspecStore`
    ``s3://``, ``gs://``,         :class:`~chunkflow.storage.obstore_store.ObstoreStore`
    ``az://``, ``http(s)://``     when obstore is installed (the setting
                                  ``chunkflow.io.object-backend``: see
                                  :func:`~chunkflow.storage.obstore_config.object_backend`)
    other ``"...://..."``,        :class:`FsspecStore` with `storage_options`
    ``"a::b"`` URLs
    a path ending in ``.zip``     :class:`ZipStore`: mode ``"r"`` reads,
    that is not a folder          ``"w"`` truncates, others append
    any other str / PathLike      :class:`LocalStore`
    ============================  ==============================================

    Parameters
    ----------
    store : None, Store, zarr.abc.store.Store, zarr.storage.StorePath, Mapping, str or os.PathLike
        What the user passed.
    mode : {"r", "r+", "a", "w", "w-"}
        Zarr access mode; ``"r"`` gives a read-only store.
    storage_options : dict, optional
        Options of the URL's file system (fsspec's names; obstore takes the same
        where they map); only valid for URLs.

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
        raise InvalidArgumentError(f"mode must be one of {', '.join(map(repr, _MODES))}, got {mode!r}")
    read_only = mode == "r"
    if store is None:
        _refuse_options(storage_options, "an in-memory store")
        return MemoryStore(read_only=read_only)
    if isinstance(store, Store):
        _refuse_options(storage_options, repr(store))
        return store
    if _is_zarr_store(store):
        from chunkflow.storage.zarr_store import ZarrStoreAdapter  # imports zarr

        _refuse_options(storage_options, repr(store))
        return ZarrStoreAdapter(store, read_only=read_only)
    if _is_store_path(store):
        from chunkflow.storage.zarr_store import ZarrStoreAdapter  # imports zarr

        _refuse_options(storage_options, repr(store))
        return ZarrStoreAdapter(store.store, read_only=read_only, path=store.path)
    if isinstance(store, Mapping):
        _refuse_options(storage_options, "a mapping")
        return MappingStore(store, read_only=read_only)
    if isinstance(store, os.PathLike):
        store = os.fspath(store)
    if not isinstance(store, str):
        raise ArgumentTypeError(
            "store must be None, a chunkflow or zarr-python Store, a Mapping, a path or a URL, "
            f"got {type(store).__name__}"
        )
    is_url = "://" in store or "::" in store
    local_zip = _local_zip_url(store)
    if local_zip is not None:
        # zip:: over a local file: chunkflow's ZipStore writes it (fsspec's zip file
        # system cannot append to an archive it did not create in this session).
        _refuse_options(storage_options, f"zip file {local_zip!r}")
        return ZipStore(local_zip, mode="r" if read_only else ("w" if mode == "w" else "a"))
    # A "file://" URL is a local folder, unless storage_options are given: then fsspec's
    # local file system with them (auto_mkdir...), as zarr-python and xarray open it.
    if is_url and not (store.startswith("file://") and "::" not in store
                       and not storage_options):
        if object_backend(store, storage_options) == "obstore":
            from chunkflow.storage.obstore_store import ObstoreStore  # imports obstore

            return ObstoreStore(store, storage_options, read_only=read_only)
        return FsspecStore(store, storage_options, read_only=read_only)
    _refuse_options(storage_options, f"local path {store!r}")
    path = LocalFileSystem._strip_protocol(store) if is_url else store
    if path.endswith(".zip") and not os.path.isdir(path):
        # A folder named "x.zip" is a folder (zarr-python writes one for that path).
        return ZipStore(path, mode="r" if read_only else ("w" if mode == "w" else "a"))
    return LocalStore(path, read_only=read_only)


def _is_zarr_store(store: object) -> TypeGuard[ZarrPythonStore]:
    """Whether ``store`` is a zarr-python 3 ``Store``, without importing zarr: nobody
    holds one unless zarr is imported."""
    if "zarr.abc.store" not in sys.modules:
        return False
    from chunkflow.storage.zarr_store import is_zarr_store

    return is_zarr_store(store)


def _is_store_path(store: object) -> TypeGuard[Any]:
    """Whether ``store`` is a zarr-python ``StorePath`` (a store and a folder of it)."""
    if "zarr.storage" not in sys.modules:
        return False
    from zarr.storage import StorePath

    return isinstance(store, StorePath)


def _local_zip_url(url: str) -> str | None:
    """The local path of a ``zip::path`` or ``zip::file://path`` URL, else None.

    Examples
    --------
    >>> _local_zip_url("zip::file:///tmp/a.zip"), _local_zip_url("zip::s3://b/a.zip")
    ('/tmp/a.zip', None)
    """
    if not url.startswith("zip::"):
        return None
    target = url[len("zip::"):]
    if "::" in target:
        return None
    if target.startswith("file://"):
        return LocalFileSystem._strip_protocol(target)
    return None if "://" in target else target


def _refuse_options(storage_options: dict[str, Any] | None, target: str) -> None:
    if storage_options:
        raise InvalidArgumentError(
            f"storage_options apply to fsspec URLs only, not to {target}; "
            f"got {sorted(storage_options)}"
        )
