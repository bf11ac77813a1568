"""Opening arrays: ``open_array`` and ``open_like`` (creating them when the mode allows).

Modes follow zarr-python: ``r`` read only, must exist; ``r+`` read/write, must exist;
``a`` read/write, create if missing (default); ``w`` create, replacing a Zarr node
there (never other files: see :mod:`chunkflow.core.replacing`); ``w-`` create, fail if
something exists. A creation with zarr-python 3 keywords
(``shards=``, ``compressors=``...) goes through :func:`chunkflow.create_array`, the rest
through :func:`chunkflow.create`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from chunkflow.api.creation import create, like_kwargs
from chunkflow.api.zarr3 import create_array
from chunkflow.api.zarr3_checks import ZARR3_ONLY
from chunkflow.core.array import Array
from chunkflow.core.documents import node_kind, normalize_path
from chunkflow.core.replacing import writable_store
from chunkflow.errors import ArrayNotFoundError, InvalidArgumentError
from chunkflow.storage import make_store

if TYPE_CHECKING:

    from chunkflow.engine.values import ChunkedSource
    from chunkflow.grid import ShapeLike
    from chunkflow.storage import StoreLike

__all__ = ["MODES", "open_array", "open_like"]

MODES = ("r", "r+", "a", "w", "w-")
_OPEN_OPTIONS = ("write_empty_chunks", "allow_pickle", "synchronizer", "cache", "lock_timeout",
                 "recheck_cached_data")


def open_array(
    store: StoreLike = None,
    mode: str = "a",
    *,
    path: str | None = None,
    storage_options: dict[str, Any] | None = None,
    shape: ShapeLike | None = None,
    **kwargs: Any,
) -> Array:
    """Open an array, creating it when ``mode`` allows and ``shape`` is given.

    Examples
    --------
    >>> from chunkflow.storage import MemoryStore
    >>> store = MemoryStore()
    >>> z = open_array(store, mode="w", shape=(4,), chunks=(2,), dtype="u1")
    >>> z[:] = [1, 2, 3, 4]
    >>> open_array(store, mode="r")[:]
    array([1, 2, 3, 4], dtype=uint8)
    >>> open_array(store, mode="w", shape=(8,), chunks=(2,), shards=(4,), dtype="u1").shards
    (4,)
    """
    if mode not in MODES:
        raise InvalidArgumentError(f"mode must be one of {MODES}, got {mode!r}")
    node_path = normalize_path(path)
    if mode == "w" and shape is None:  # refused before a zip file is opened to be rewritten
        raise ArrayNotFoundError(_no_array(node_path, store, mode))
    # Mode "w" replaces only a Zarr node (see chunkflow.core.replacing).
    resolved = (writable_store(store, node_path, overwrite=True, storage_options=storage_options)
                if mode == "w" else make_store(store, mode=mode, storage_options=storage_options))
    options = {k: kwargs.pop(k) for k in _OPEN_OPTIONS if k in kwargs}
    if mode in ("r", "r+") or (mode == "a" and node_kind(resolved, node_path) is not None):
        kwargs.pop("zarr_format", None)
        return Array(resolved, node_path, read_only=mode == "r" or kwargs.get("read_only", False),
                     **options)
    if shape is None:
        raise ArrayNotFoundError(_no_array(node_path, resolved, mode))
    if ZARR3_ONLY.isdisjoint(kwargs):
        return create(shape, store=resolved, path=node_path, overwrite=mode == "w", **options,
                      **kwargs)
    # zarr-python 3 keywords (shards=, compressors=...): its create_array's meanings.
    return create_array(resolved, name=node_path, shape=shape, overwrite=mode == "w",
                        **options, **kwargs)


def _no_array(path: str, store: object, mode: str) -> str:
    return (f"no array at path {path or '/'!r} in {store!r}; pass shape= (and dtype=, "
            f"chunks=...) to create one with mode={mode!r}")


def open_like(a: ChunkedSource, path: StoreLike, **kwargs: Any) -> Array:
    """Open (or create) the array at ``path`` with the properties of ``a``."""
    like = like_kwargs(a, **kwargs)
    return open_array(path, **like)
