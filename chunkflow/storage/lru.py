"""zarr-python 2's ``LRUStoreCache``, as a store whose arrays share a chunk cache.

zarr-python 2 cached the encoded values of a slow store in memory. chunkflow already
caches decoded chunks (coherent, see :mod:`chunkflow.cache`), so
``LRUStoreCache(store, max_size)`` is the store itself, marked so that the arrays opened
through it share one private :class:`~chunkflow.ChunkCache` of ``max_size`` bytes
(created at their first read) instead of the process-wide cache: what
``cache=ChunkCache(max_size)`` gives one array, given to every array of the store.

Examples
--------
>>> from chunkflow.storage import MemoryStore
>>> cached = LRUStoreCache(MemoryStore(), max_size=2**20)
>>> type(cached).__name__, cached.chunk_cache_bytes
('MemoryStore', 1048576)
>>> import chunkflow
>>> z = chunkflow.zeros(4, chunks=2, dtype="i4", store=cached)
>>> z[:] = 7
>>> z[:2].tolist(), chunkflow.cache.store_cache(cached).stats.bytes > 0
([7, 7], True)
"""

from __future__ import annotations

from chunkflow.errors import InvalidArgumentError
from chunkflow.storage.base import Store
from chunkflow.storage.factory import StoreLike, make_store

__all__ = ["LRUStoreCache"]


def LRUStoreCache(store: StoreLike, max_size: int | None) -> Store:  # noqa: N802 (zarr 2's name)
    """``store`` (anything :func:`make_store` takes) with a chunk cache of its own.

    Parameters
    ----------
    store : Store, MutableMapping, path or URL
        The store to read through.
    max_size : int or None
        Bytes of decoded chunks the cache holds; ``None`` takes the process-wide
        cache's budget (the setting ``chunkflow.cache.max-bytes``), not an unbounded
        cache.

    Returns
    -------
    Store
        A copy of the store handle (same location, same backend) that carries the
        cache size; the store passed in is left as it was.
    """
    if max_size is not None and (isinstance(max_size, bool) or not isinstance(max_size, int)
                                 or max_size < 0):
        raise InvalidArgumentError(f"LRUStoreCache: max_size must be a byte count >= 0 or None, "
                           f"got {max_size!r}")
    given = make_store(store)
    # A second handle on the very same store (its state shared, not copied: copy.copy
    # of a MemoryStore would copy the data), differing only in the cache size.
    handle = object.__new__(type(given))
    vars(handle).update(vars(given))
    handle.chunk_cache_bytes = -1 if max_size is None else max_size
    return handle
