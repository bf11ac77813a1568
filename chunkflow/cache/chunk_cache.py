"""A cache of decoded chunks under a byte budget, built from zict layers.

The fast tier is ``zict.LRU(max_bytes, {}, weight=nbytes)``: a hit is a dict lookup plus
a recency bump. With ``compressed_bytes > 0`` a ``zict.Buffer`` moves entries evicted
from the fast tier into a ``zict.Func(compress, decompress, zict.LRU(...))``, so a second
budget holds them compressed (blosc lz4). See :mod:`chunkflow.cache.tiers`.

Keys are the chunks' *locations*: the store's identity joined with the chunk key
(:func:`chunkflow.storage.coherence.location`), one name per chunk whichever handle,
path alias or store object reaches it. Every store write in this process invalidates
the locations it changed in every cache (a change listener), and puts made from a
fetch or a write carry a *ticket* so that a copy fetched before a change, arriving
after it, is refused instead of cached (see :meth:`ChunkCache.put`).

Ownership: :meth:`ChunkCache.put` keeps the very array it is given and marks it
read-only, so no copy is made; the caller must not write to it (or to arrays sharing its
memory) afterwards. Every chunk the cache hands out is read-only.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Hashable, Iterable, Sequence

import numpy as np

from chunkflow.cache.admission import WholeReads
from chunkflow.cache.changes import Changes
from chunkflow.cache.everywhere import discard_everywhere, register
from chunkflow.cache.families import Families
from chunkflow.cache.stats import CacheStats
from chunkflow.cache.tickets import InvalidationLog
from chunkflow.cache.tiers import (
    CachedChunk,
    Tiers,
    build_tiers,
    chunk_weight,
    drain,
    keys_starting_with,
)
from chunkflow.config import byte_count
from chunkflow.errors import ArgumentTypeError
from chunkflow.storage.coherence import location

__all__ = ["CacheKey", "CacheStats", "CachedChunk", "ChunkCache", "discard_everywhere"]

CacheKey = str
"""A chunk's location: ``store.identity + "/" + chunk key``."""

class ChunkCache:
    """Decoded chunks under a byte budget, least recently used evicted first.

    Thread-safe: the zict layers lock themselves. A hit in the fast tier takes no lock
    of the cache (zict's own, then the counters'). Insertions, invalidations and moves
    between the tiers hold the cache's lock, so that an insertion never lands after an
    invalidation that should have refused it, and the fast tier never holds more than
    ``max_bytes`` outside that lock.

    Parameters
    ----------
    max_bytes : int
        Budget of the fast tier (decoded chunks). A chunk larger than this is not
        cached; 0 caches nothing.
    compressed_bytes : int
        Budget of a second tier keeping chunks evicted from the fast tier, compressed;
        0 (the default) means no second tier.
    scan_resistant : bool
        Cache a chunk that a read covers wholly only from its second whole read on
        (see :mod:`chunkflow.cache.admission`), so that scans leave the cache alone.
        The process-wide cache is; a cache made by hand caches every chunk it is
        given, unless asked.

    Attributes
    ----------
    changes : Changes
        The count of the cache's changes and lookups, and the one result kept while it
        stays (see :mod:`chunkflow.cache.changes`).

    Examples
    --------
    >>> cache = ChunkCache(max_bytes=1000)
    >>> cache.put("memory:x/a/c/0", np.zeros(100, dtype="u1"))
    >>> chunk = cache.get("memory:x/a/c/0")
    >>> chunk.shape, chunk.flags.writeable, cache.get("memory:x/a/c/1")
    ((100,), False, None)
    >>> cache.stats.hits, cache.stats.misses, cache.stats.bytes
    (1, 1, 100)
    """

    def __init__(self, max_bytes: int, compressed_bytes: int = 0, *,
                 scan_resistant: bool = False) -> None:
        self._lock = threading.Lock()
        # Counters have their own lock: hits count without waiting for insertions, and
        # evictions are counted inside zict calls made under self._lock.
        self._count_lock = threading.Lock()
        self._hits = self._misses = self._evictions = self._compressed_hits = 0
        self._rechecks = self._stale = self._refused = 0
        self.changes = Changes()
        # Invalidation log for tickets: location -> (latest epoch, the one before).
        self._tickets = InvalidationLog()
        # Inner chunks cached on their own, by the shard they were decoded from: an
        # invalidation of the shard drops them all.
        self._families = Families()
        self._whole = WholeReads() if scan_resistant else None
        self._tiers: Tiers = self._rebuilt(
            byte_count("max_bytes", max_bytes, text=False),
            byte_count("compressed_bytes", compressed_bytes, text=False),
        )
        register(self)  # every store change in this process reaches it

    def _rebuilt(self, max_bytes: int, compressed_bytes: int) -> Tiers:
        return build_tiers(max_bytes, compressed_bytes, self._count_eviction)

    def _count_eviction(self, key: object, value: object) -> None:
        with self._count_lock:
            self._evictions += 1

    # -- lookups -----------------------------------------------------------------------

    def lookup(self, keys: Sequence[CacheKey]) -> dict[CacheKey, CachedChunk]:
        """The cached entries among ``keys``, with their versions; counts hits and misses.

        Examples
        --------
        >>> cache = ChunkCache(1 << 10)
        >>> cache.put("s/a/0", np.arange(2), version="v1")
        >>> entry = cache.lookup(["s/a/0", "s/a/1"])["s/a/0"]
        >>> entry.chunk, entry.version
        (array([0, 1]), 'v1')
        """
        return self.lookup_stamped(keys)[0]

    def lookup_stamped(
        self, keys: Sequence[CacheKey]
    ) -> tuple[dict[CacheKey, CachedChunk], int | None]:
        """:meth:`lookup`, and a stamp of the cache's state right after it: ``None``
        when another change landed during the lookup.

        A lookup is a change too (it makes its entries the most recent), so a stamp one
        above the stamp of the previous lookup of the same keys means that nothing else
        touched the cache in between. A result derived from the entries found may be
        kept in :attr:`changes` for as long as the cache stays at the stamp.

        Examples
        --------
        >>> cache = ChunkCache(1 << 10)
        >>> cache.put("s/a/0", np.arange(2))
        >>> first = cache.lookup_stamped(["s/a/0"])[1]
        >>> cache.lookup_stamped(["s/a/0"])[1] == first + 1
        True
        """
        before = self.changes.count  # read first: a change landing from now on shows
        tiers = self._tiers
        fast = tiers.fast
        try:
            # The usual case, every key cached: one call, one lock (zict.LRU locks
            # itself and bumps the recency of each).
            found = fast.get_all_or_nothing(keys)
        except KeyError:
            found = {}
        elsewhere = []
        if len(found) < len(keys):
            for key in keys:
                try:
                    found[key] = fast[key]
                except KeyError:
                    elsewhere.append(key)
        compressed = 0
        if tiers.slow is not None and elsewhere:
            with self._lock:  # a promotion may push entries down: an insertion
                for key in elsewhere:
                    try:
                        found[key] = tiers.data[key]  # decompressed into the fast tier
                    except KeyError:
                        continue
                    compressed += 1
        with self._count_lock:
            self._hits += len(found)
            self._compressed_hits += compressed
            self._misses += len(keys) - len(found)
        return found, self.changes.after_lookup(before)

    def count_hits(self, count: int) -> None:
        """Count ``count`` hits served from a result kept in :attr:`changes`."""
        with self._count_lock:
            self._hits += count

    def get(self, key: CacheKey) -> np.ndarray | None:
        """The cached chunk, read-only, or ``None``; counts a hit or a miss.

        Examples
        --------
        >>> cache = ChunkCache(1 << 10)
        >>> cache.put("s/a/0", np.arange(4))
        >>> cache.get("s/a/0")
        array([0, 1, 2, 3])
        """
        entry = self.lookup([key]).get(key)
        return None if entry is None else entry.chunk

    def get_many(self, keys: Sequence[CacheKey]) -> dict[CacheKey, np.ndarray]:
        """The cached chunks among ``keys`` (read-only), by key; counts hits and misses.

        Examples
        --------
        >>> cache = ChunkCache(1 << 10)
        >>> cache.put("s/a/0", np.arange(2))
        >>> cache.get_many(["s/a/0", "s/a/1"])
        {'s/a/0': array([0, 1])}
        """
        return {key: entry.chunk for key, entry in self.lookup(keys).items()}

    def __contains__(self, key: object) -> bool:
        """Whether ``key`` is cached in either tier (no counters change, no recency bump).

        Examples
        --------
        >>> cache = ChunkCache(1 << 10)
        >>> cache.put("s/a/0", np.zeros(3))
        >>> "s/a/0" in cache, "s/a/1" in cache, cache.stats.hits
        (True, False, 0)
        """
        return key in self._tiers.data

    def __len__(self) -> int:
        """Number of chunks cached in both tiers."""
        return len(self._tiers.data)

    def first_whole_reads(self, keys: Sequence[CacheKey]) -> set[CacheKey]:
        """The ``keys`` that a read covering them wholly should not cache: with
        ``scan_resistant``, those not read wholly before (see
        :mod:`chunkflow.cache.admission`); else none.

        Examples
        --------
        >>> cache = ChunkCache(1 << 10, scan_resistant=True)
        >>> cache.first_whole_reads(["s/a/0"]), cache.first_whole_reads(["s/a/0"])
        ({'s/a/0'}, set())
        >>> ChunkCache(1 << 10).first_whole_reads(["s/a/0"])
        set()
        """
        if self._whole is None:
            return set()
        return self._whole.first_reads(keys)  # type: ignore[return-value]  # the keys given are str

    # -- tickets and insertions --------------------------------------------------------

    def ticket(self) -> int:
        """A ticket to take before fetching (or writing) chunks that will be put here.

        A put with a ticket is refused when its location was invalidated after the
        ticket was taken: the copy may predate that change.
        """
        return self._tickets.ticket()

    def put(
        self,
        key: CacheKey,
        chunk: np.ndarray,
        version: Hashable | None = None,
        *,
        ticket: int | None = None,
        written: bool = False,
        parent: CacheKey | None = None,
    ) -> None:
        """Cache ``chunk`` under ``key``, replacing any older version.

        The cache takes ownership: it keeps this very array (no copy) and makes it
        read-only. A chunk larger than ``max_bytes`` is not cached (and any older version
        of it is dropped, so a put never leaves a stale chunk behind).

        Parameters
        ----------
        key : str
            The chunk's location.
        chunk : numpy.ndarray
            The decoded chunk.
        version : hashable, optional
            The store's version of the bytes ``chunk`` was decoded from or written as.
        ticket : int, optional
            From :meth:`ticket`, taken before the fetch or the write. A fetched copy is
            refused when ``key`` was invalidated after the ticket; a ``written`` copy
            when it was invalidated twice (once is the write's own announcement: twice
            means another write may have landed after it).
        written : bool
            ``chunk`` is what the caller just wrote to the store.
        parent : str, optional
            The location ``chunk`` was decoded part of (a shard, for an inner chunk
            cached on its own): invalidating ``parent`` drops ``key`` too, tickets are
            checked against ``parent``'s changes and ``version`` is ``parent``'s.

        Examples
        --------
        >>> cache = ChunkCache(max_bytes=100)
        >>> chunk = np.ones(10, dtype="u1")
        >>> cache.put("s/a/0", chunk)
        >>> cache.get("s/a/0") is chunk, chunk.flags.writeable
        (True, False)
        >>> ticket = cache.ticket()
        >>> cache.invalidate(["s/a/1"])  # a write lands while s/a/1 is being fetched
        >>> cache.put("s/a/1", np.ones(10, dtype="u1"), ticket=ticket)  # refused
        >>> "s/a/1" in cache
        False
        >>> cache.put("s/a/2#0", np.ones(4, dtype="u1"), parent="s/a/2")  # an inner chunk
        >>> cache.invalidate(["s/a/2"])  # a write of its shard
        >>> "s/a/2#0" in cache
        False
        """
        if not isinstance(chunk, np.ndarray):
            raise ArgumentTypeError(f"ChunkCache.put({key!r}): expected a numpy array, got {type(chunk)!r}")
        chunk.flags.writeable = False
        entry = CachedChunk(chunk, version, time.monotonic())
        tiers = self._tiers
        too_big = chunk_weight(key, entry) > self.max_bytes
        try:
            with self._lock:
                changes = key if parent is None else parent
                if too_big or (ticket is not None
                               and self._tickets.outdated(changes, ticket, written)):
                    self._discard(tiers, key)
                    if not too_big:
                        with self._count_lock:
                            self._refused += 1
                    return
                if parent is not None:
                    self._name_child(key, parent, tiers)
                tiers.data[key] = entry  # zict evicts (or moves down) what no longer fits
        finally:
            self.changes.changed()

    def _name_child(self, key: CacheKey, parent: CacheKey, tiers: Tiers) -> None:
        """Record ``key`` as a child of ``parent`` (under the lock, before inserting)."""
        families = self._families
        # Evictions do not update the index (a name of an evicted entry is harmless);
        # rebuild it from what is cached once it has grown well past that.
        if len(families) > 2 * len(tiers.data) + 1024:
            families.prune(lambda name: name in tiers.data)
        families.add(key, parent)

    # -- invalidation and discards -----------------------------------------------------

    def invalidate(self, keys: Iterable[CacheKey]) -> None:
        """Drop ``keys`` because the store changed them; refuse puts fetched before.

        Examples
        --------
        >>> cache = ChunkCache(1 << 10)
        >>> cache.put("s/a/0", np.zeros(2))
        >>> cache.invalidate(["s/a/0"])
        >>> "s/a/0" in cache
        False
        """
        keys = list(keys)
        with self._lock:
            self._tickets.record(keys)
            tiers, families = self._tiers, self._families
            for key in keys:
                self._discard(tiers, key)
                if key in families:
                    for child in families.pop_children(key):
                        self._discard(tiers, child)
            self.changes.changed()

    def invalidate_prefix(self, prefix: str) -> None:
        """Drop every key starting with ``prefix``; refuse every put fetched before."""
        with self._lock:
            self._tickets.record_all()
            tiers = self._tiers
            for key in keys_starting_with(tiers, prefix):
                self._discard(tiers, key)
            self.changes.changed()

    @staticmethod
    def _discard(tiers: Tiers, key: Hashable) -> None:
        # `del`, not pop(): pop would read (and decompress) the value first.
        try:
            del tiers.data[key]
        except KeyError:
            pass

    def discard(self, key: CacheKey) -> None:
        """Forget one chunk, and the inner chunks cached from it (no error if it is not
        cached)."""
        self.discard_many([key])

    def discard_many(self, keys: Iterable[CacheKey]) -> None:
        """Forget several chunks.

        Examples
        --------
        >>> cache = ChunkCache(1 << 10)
        >>> for i in range(3):
        ...     cache.put(f"s/a/{i}", np.zeros(2))
        >>> cache.discard_many(["s/a/0", "s/a/1", "s/a/9"])
        >>> len(cache)
        1
        """
        tiers, families = self._tiers, self._families
        for key in keys:
            self._discard(tiers, key)
            if key in families:
                with self._lock:
                    for child in families.pop_children(key):
                        self._discard(tiers, child)
        self.changes.changed()

    def discard_prefix(self, prefix: str) -> None:
        """Forget every chunk whose location starts with ``prefix``."""
        tiers = self._tiers
        for key in keys_starting_with(tiers, prefix):
            self._discard(tiers, key)
        self.changes.changed()

    def discard_array(self, identity: str, path: str) -> None:
        """Forget every chunk of the array at ``path`` in the store named ``identity``.

        Examples
        --------
        >>> cache = ChunkCache(1 << 10)
        >>> cache.put("s/a/0", np.zeros(2))
        >>> cache.put("s/b/0", np.zeros(2))
        >>> cache.discard_array("s", "a")
        >>> "s/a/0" in cache, "s/b/0" in cache
        (False, True)
        """
        self.discard_prefix(location(identity, path) + "/" if path else identity + "/")

    def clear(self) -> None:
        """Forget every chunk, and which chunks were read wholly once: the cache is
        as it was made (the counters stay; see :meth:`reset_stats`)."""
        if self._whole is not None:
            self._whole.clear()
        with self._lock:
            self._tickets.record_all()
            self._families.clear()
            self._tiers = self._rebuilt(self.max_bytes, self.compressed_max_bytes)
            self.changes.changed()

    def resize(self, max_bytes: int, compressed_bytes: int | None = None) -> None:
        """Change the budgets, evicting (oldest first) down to them right away.

        Parameters
        ----------
        max_bytes : int
            New budget of the fast tier.
        compressed_bytes : int, optional
            New budget of the second tier (0 removes it); ``None`` keeps the current one.

        Examples
        --------
        >>> cache = ChunkCache(max_bytes=100)
        >>> for i in range(4):
        ...     cache.put(f"s/a/{i}", np.zeros(25, dtype="u1"))
        >>> cache.resize(50)
        >>> cache.stats.entries, cache.stats.evictions, "s/a/3" in cache
        (2, 2, True)
        """
        max_bytes = byte_count("max_bytes", max_bytes, text=False)
        with self._lock:
            old = self._tiers
            compressed = self.compressed_max_bytes
            if compressed_bytes is not None:
                compressed = byte_count("compressed_bytes", compressed_bytes, text=False)
            new = self._tiers = self._rebuilt(max_bytes, compressed)
        entries, evicted = drain(old)
        with self._count_lock:
            self._evictions += evicted
        for key, entry in entries:
            if chunk_weight(key, entry) <= max_bytes:
                new.data[key] = entry  # what no longer fits is evicted (and counted) here
            else:
                self._count_eviction(key, entry)
        self.changes.changed()

    # -- counters ----------------------------------------------------------------------

    def count_rechecks(self, checked: int, stale: int) -> None:
        """Record that ``checked`` entries were compared with the store, ``stale`` of
        them found outdated (called by the array layer)."""
        with self._count_lock:
            self._rechecks += checked
            self._stale += stale

    @property
    def max_bytes(self) -> int:
        """Budget of the fast tier."""
        return int(self._tiers.fast.n)

    @property
    def compressed_max_bytes(self) -> int:
        """Budget of the compressed second tier (0: none)."""
        slow = self._tiers.slow
        return 0 if slow is None else int(slow.n)

    @property
    def stats(self) -> CacheStats:
        """A snapshot of the counters (see :class:`CacheStats`)."""
        tiers = self._tiers
        slow = tiers.slow
        with self._lock, self._count_lock:
            return CacheStats(
                hits=self._hits,
                misses=self._misses,
                evictions=self._evictions,
                bytes=int(tiers.fast.total_weight),
                entries=len(tiers.fast),
                max_bytes=int(tiers.fast.n),
                compressed_hits=self._compressed_hits,
                compressed_bytes=0 if slow is None else int(slow.total_weight),
                compressed_entries=0 if slow is None else len(slow),
                rechecks=self._rechecks,
                stale=self._stale,
                refused=self._refused,
            )

    def reset_stats(self) -> None:
        """Zero the counters (what is cached stays)."""
        with self._lock, self._count_lock:
            self._hits = self._misses = self._evictions = self._compressed_hits = 0
            self._rechecks = self._stale = self._refused = 0

    def __repr__(self) -> str:
        budgets = f"max_bytes={self.max_bytes}, compressed_bytes={self.compressed_max_bytes}"
        return f"ChunkCache({budgets})"

