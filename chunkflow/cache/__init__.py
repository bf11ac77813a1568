"""The decoded-chunk cache, one per process.

Its settings are ``chunkflow.cache.*`` keys of :mod:`chunkflow.config` (in
``dask.config``); :func:`get_cache` follows them.

Coherence
---------
Cached chunks are keyed by their *location*: the store's identity joined with the
chunk key (``file:///data/x.zarr/g/img/c/0/3``), so every handle, path alias
(``group["g/img"]`` and ``open("x.zarr/g/img")``) and store object over the same data
shares one entry. The guarantees:

Within one process
    Every read after a write sees it, through any handle, alias or cache option
    (``cache=False``, a private :class:`ChunkCache`), and after raw ``store[key] = ...``
    writes and ``mode="w"`` replacements: every store change made through a chunkflow
    store drops the chunks it changed from every cache of the process at once, and a
    copy fetched before a change is refused if it arrives after it (tickets).
Across processes
    A partial-chunk write starts from a cached copy only when the store's version of
    the chunk (a settled file's inode and times, an object's ETag, a write counter)
    proves it current; otherwise it reads the store. So no write starts from an
    outdated copy. Reads follow the recheck policy (``recheck_cached_data``, see
    :mod:`chunkflow.config`): by default a handle opened after another process
    finished writing sees its writes. Writes that overlap in time still need a
    synchronizer.
On a dask cluster
    Each worker process has its own cache, under the same rules. ``chunkflow.store``
    drops its targets' chunks from the client's caches when it finishes. dask's
    memory manager does not see the cache, so its ``"auto"`` budget in a worker is at
    most 1/8 of the worker's memory limit, and ``map_chunks`` plans each task's memory
    with the cache taken off first. Set ``chunkflow.cache.max-bytes`` (for example
    ``chunkflow.config.set({"chunkflow.cache.max-bytes": "256 MiB"})``, or 0 for none)
    before the cluster starts to change it.

Local files have no version for :data:`chunkflow.storage.local.SETTLE_NS` (2 s) after
they change: a cached copy of a chunk written that recently is always read again.
"""

from __future__ import annotations

import threading
from typing import TypeAlias

from chunkflow.cache.chunk_cache import (
    CachedChunk,
    CacheKey,
    CacheStats,
    ChunkCache,
    discard_everywhere,
)
from chunkflow.config import get as _setting

__all__ = [
    "CacheKey",
    "CacheLike",
    "CacheStats",
    "CachedChunk",
    "ChunkCache",
    "cache_info",
    "discard_everywhere",
    "get_cache",
]

#: What every ``cache=`` argument accepts: ``None`` (or ``True``) the process-wide cache
#: when ``chunkflow.cache.enabled``, ``False`` none, or a private :class:`ChunkCache`.
CacheLike: TypeAlias = ChunkCache | bool | None

_cache: ChunkCache | None = None
_cache_lock = threading.Lock()


def get_cache() -> ChunkCache:
    """The process-wide cache, built lazily from the settings and resized when they change.

    Its budget is the setting ``chunkflow.cache.max-bytes``: by default ``"auto"``
    (see :func:`chunkflow.config.resources.auto_cache_bytes`), smaller inside a dask worker.

    Examples
    --------
    >>> import chunkflow
    >>> with chunkflow.config.set({"chunkflow.cache.max-bytes": 2**20}):
    ...     get_cache().max_bytes
    1048576
    """
    global _cache
    max_bytes = _setting("chunkflow.cache.max-bytes")
    compressed = _setting("chunkflow.cache.compressed-bytes")
    cache = _cache
    # The common case (settings unchanged) takes no lock: this runs on every array read.
    budgets = (max_bytes, compressed)
    if cache is not None and (cache.max_bytes, cache.compressed_max_bytes) == budgets:
        return cache
    with _cache_lock:
        if _cache is None:
            _cache = ChunkCache(max_bytes, compressed)
        elif _cache.max_bytes != max_bytes or _cache.compressed_max_bytes != compressed:
            _cache.resize(max_bytes, compressed)
        return _cache


def cache_info() -> CacheStats:
    """Statistics of the process-wide cache (hits, misses, evictions, bytes held).

    Examples
    --------
    >>> stats = cache_info()
    >>> stats.bytes <= stats.max_bytes
    True
    """
    return get_cache().stats
