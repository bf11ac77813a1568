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

import operator
import sys
import threading
from typing import Any, NamedTuple, TypeAlias

import dask.config

from chunkflow.cache.chunk_cache import (
    CachedChunk,
    CacheKey,
    CacheStats,
    ChunkCache,
    discard_everywhere,
)
from chunkflow.config import get as _setting
from chunkflow.config import is_auto
from chunkflow.config.resources import auto_cache_bytes

__all__ = [
    "CacheKey",
    "CacheLike",
    "CacheStats",
    "CachedChunk",
    "ChunkCache",
    "cache_info",
    "default_cache",
    "discard_everywhere",
    "get_cache",
    "read_settings",
    "recheck_setting",
    "store_cache",
]

#: What every ``cache=`` argument accepts: ``None`` (or ``True``) the process-wide cache
#: when ``chunkflow.cache.enabled``, ``False`` none, or a private :class:`ChunkCache`.
CacheLike: TypeAlias = ChunkCache | bool | None

_cache: ChunkCache | None = None
_cache_lock = threading.Lock()


class _Resolved(NamedTuple):
    """The cache settings as last parsed, and the raw entries they were parsed from."""

    keys: tuple[str, ...]
    values: tuple[Any, ...]
    budget: int  # the fast tier's budget they gave
    auto: bool  # the budget is "auto": it also follows the process's dask worker
    # distributed was not imported then: no worker could have set an "auto" budget
    # (auto_cache_bytes gives the same until it is).
    without_distributed: bool
    tiers: object  # the cache's layers then (a resize or clear builds new ones)
    cache: ChunkCache
    enabled: bool
    recheck: bool | str | float


_resolved: _Resolved | None = None


def _raw_settings() -> dict[str, Any] | None:
    """The ``chunkflow.cache`` entries of dask's config (``None`` if not there).

    ``dask.config.get`` reads every ``chunkflow.cache.*`` setting from this one dict,
    whatever the spelling of the keys.
    """
    try:
        node = dask.config.config["chunkflow"]["cache"]
    except (KeyError, TypeError):
        return None
    return node if type(node) is dict else None


def _settings() -> _Resolved:
    """The process-wide cache, whether it is enabled, and the recheck policy, now.

    A read asks for these every time, and parsing them through ``dask.config.get``
    costs several microseconds (a quarter of a cached window read). They are parsed
    again only when the raw entries change (the very same objects parse to the same
    settings), when an ``"auto"`` budget gives another size (a dask worker started in
    this process), or when the cache was resized or cleared by hand.
    """
    global _cache, _resolved
    node = _raw_settings()
    known = _resolved
    if (
        known is not None
        and node is not None
        and tuple(node) == known.keys
        and all(map(operator.is_, node.values(), known.values))
        and known.cache._tiers is known.tiers
        and (not known.auto
             or (known.without_distributed and "distributed" not in sys.modules)
             or auto_cache_bytes() == known.budget)
    ):
        return known
    without_distributed = "distributed" not in sys.modules  # before the budget is read
    max_bytes = _setting("chunkflow.cache.max-bytes")
    compressed = _setting("chunkflow.cache.compressed-bytes")
    with _cache_lock:
        if _cache is None:
            # Scan resistant: reads that cover chunks wholly (scans, copies, dask
            # computations) leave the shared cache alone until a chunk comes back.
            _cache = ChunkCache(max_bytes, compressed, scan_resistant=True)
        elif _cache.max_bytes != max_bytes or _cache.compressed_max_bytes != compressed:
            _cache.resize(max_bytes, compressed)
        cache = _cache
    auto = is_auto(dask.config.get("chunkflow.cache.max-bytes", default=None))
    _resolved = _Resolved(
        tuple(node or ()), tuple((node or {}).values()), max_bytes, auto,
        without_distributed, cache._tiers,
        cache, _setting("chunkflow.cache.enabled"),
        _setting("chunkflow.cache.recheck-cached-data"))
    return _resolved


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
    return _settings().cache


def default_cache() -> ChunkCache | None:
    """:func:`get_cache` when ``chunkflow.cache.enabled``, else ``None`` (for reads).

    Examples
    --------
    >>> import chunkflow
    >>> with chunkflow.config.set({"chunkflow.cache.enabled": False}):
    ...     default_cache() is None
    True
    >>> default_cache() is get_cache()
    True
    """
    settings = _settings()
    return settings.cache if settings.enabled else None


def read_settings() -> tuple[ChunkCache | None, bool | str | float]:
    """:func:`default_cache` and :func:`recheck_setting` at once (a read needs both,
    and each costs a check of the settings).

    Examples
    --------
    >>> cache, policy = read_settings()
    >>> cache is default_cache(), policy == recheck_setting()
    (True, True)
    """
    settings = _settings()
    return (settings.cache if settings.enabled else None), settings.recheck


def store_cache(store: object) -> ChunkCache | None:
    """The chunk cache the arrays of ``store`` share, if it has one of its own
    (:func:`chunkflow.storage.LRUStoreCache`), built at its first use; else ``None``.

    Examples
    --------
    >>> from chunkflow.storage import LRUStoreCache, MemoryStore
    >>> store = LRUStoreCache(MemoryStore(), max_size=2**20)
    >>> store_cache(store).max_bytes, store_cache(store) is store_cache(store)
    (1048576, True)
    >>> store_cache(MemoryStore()) is None
    True
    """
    size = getattr(store, "chunk_cache_bytes", None)
    if size is None:
        return None
    held = vars(store)
    cache = held.get("_chunk_cache")
    if cache is None:
        budget = get_cache().max_bytes if size < 0 else size
        # setdefault: two threads' first reads end up sharing one cache.
        cache = held.setdefault("_chunk_cache", ChunkCache(budget))
    return cache


def recheck_setting() -> bool | str | float:
    """The setting ``chunkflow.cache.recheck-cached-data``, parsed.

    Examples
    --------
    >>> recheck_setting()
    'open'
    """
    return _settings().recheck


def cache_info() -> CacheStats:
    """Statistics of the process-wide cache (hits, misses, evictions, bytes held).

    Examples
    --------
    >>> stats = cache_info()
    >>> stats.bytes <= stats.max_bytes
    True
    """
    return get_cache().stats
