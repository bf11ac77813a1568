"""The decoded-chunk cache and chunkflow's settings.

Coherence
---------
The cache belongs to one process. It is keyed by (store identity, array path, chunk
key) and every write through chunkflow in this process updates or drops exactly the
chunks it touches, so this process always reads its own writes. Writes made by other
processes (or other programs) are not seen by chunks already cached here: open such
arrays with ``cache=False`` or call ``get_cache().discard_array(...)``. Under a
synchronizer, a locked read-modify-write always re-reads the chunk from the store, so
concurrent writers never lose each other's data, whatever the cache holds.
"""

from __future__ import annotations

import threading

from chunkflow.cache.chunk_cache import CacheKey, CachedChunk, CacheStats, ChunkCache
from chunkflow.cache.config import Config, config

__all__ = ["CacheKey", "CachedChunk", "CacheStats", "ChunkCache", "Config", "cache_info", "config", "get_cache"]

_cache: ChunkCache | None = None
_cache_lock = threading.Lock()


def get_cache() -> ChunkCache:
    """The process-wide cache, built lazily from ``config`` and resized when it changes.

    Examples
    --------
    >>> with config.set(cache_max_bytes=2**20):
    ...     get_cache().max_bytes
    1048576
    """
    global _cache
    max_bytes = config.get("cache_max_bytes")
    compressed = config.get("cache_compressed_bytes")
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
