"""A cache of decoded chunks under a byte budget, built from zict layers.

The fast tier is ``zict.LRU(max_bytes, {}, weight=nbytes)``: a hit is a dict lookup plus
a recency bump. With ``compressed_bytes > 0`` a ``zict.Buffer`` moves chunks evicted
from the fast tier into a ``zict.Func(compress, decompress, zict.LRU(...))``, so a second
budget holds them compressed (blosc lz4); a hit there decompresses the chunk back into
the fast tier. See :mod:`chunkflow.cache.tiers` for the layers themselves.

Ownership: :meth:`ChunkCache.put` keeps the very array it is given and marks it
read-only, so no copy is made; the caller must not write to it (or to arrays sharing its
memory) afterwards. Everything :meth:`ChunkCache.get` returns is read-only.
"""

from __future__ import annotations

import threading
from collections.abc import Iterable, Sequence
from typing import Any

import numpy as np

from chunkflow.cache.stats import CacheStats
from chunkflow.cache.tiers import (
    Compressed,
    Tiers,
    build_tiers,
    chunk_weight,
    compress,
    decompress,
)

__all__ = ["CacheKey", "CacheStats", "ChunkCache"]

CacheKey = tuple[str, str, str]
"""(store identity, array path, chunk key)."""


def _budget(name: str, value: Any) -> int:
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < 0:
        raise ValueError(f"{name} must be a non-negative integer number of bytes, got {value!r}")
    return int(value)


class ChunkCache:
    """Decoded chunks under a byte budget, least recently used evicted first.

    Thread-safe: one lock guards the zict layers and the counters. A hit in the fast tier
    holds it for a dict lookup and a recency bump; decompressing a second-tier hit, and
    compressing the chunks a put pushes into that tier, happen outside it.

    Parameters
    ----------
    max_bytes : int
        Budget of the fast tier (decoded chunks); never exceeded. A chunk larger than
        this is not cached. 0 caches nothing.
    compressed_bytes : int
        Budget of a second tier keeping chunks evicted from the fast tier, compressed;
        0 (the default) means no second tier.

    Examples
    --------
    >>> cache = ChunkCache(max_bytes=1000)
    >>> cache.put(("mem", "a", "c/0"), np.zeros(100, dtype="u1"))
    >>> chunk = cache.get(("mem", "a", "c/0"))
    >>> chunk.shape, chunk.flags.writeable, cache.get(("mem", "a", "c/1"))
    ((100,), False, None)
    >>> cache.stats.hits, cache.stats.misses, cache.stats.bytes
    (1, 1, 100)
    """

    def __init__(self, max_bytes: int, compressed_bytes: int = 0) -> None:
        # A plain Lock, not an RLock: nothing re-enters it (the zict callbacks we install
        # only bump counters), and it is cheaper on the hit path.
        self._lock = threading.Lock()
        self._hits = self._misses = self._evictions = self._compressed_hits = 0
        # Chunks about to move down a tier, compressed ahead of time outside the lock:
        # id(chunk) -> (chunk, record). Holding the chunk keeps its id from being reused.
        self._ready: dict[int, tuple[np.ndarray, Compressed]] = {}
        # key -> token of an insertion waiting for that compression; any change to the
        # key removes the token, telling the insertion it went stale.
        self._pending: dict[CacheKey, object] = {}
        self._tiers: Tiers = self._rebuilt(
            _budget("max_bytes", max_bytes), _budget("compressed_bytes", compressed_bytes)
        )

    def _dump(self, chunk: np.ndarray) -> Compressed:
        """The slow tier's compress step: use the record made ahead of time, if any."""
        entry = self._ready.pop(id(chunk), None)
        if entry is not None and entry[0] is chunk:
            return entry[1]
        return compress(chunk)  # the victims changed meanwhile: compress here after all

    def _victims(self, tiers: Tiers, key: CacheKey, weight: int) -> list[np.ndarray]:
        """The chunks that inserting ``weight`` bytes under ``key`` would push down."""
        fast = tiers.fast
        excess = fast.total_weight - fast.weights.get(key, 0) + weight - fast.n
        victims = []
        for old in fast.order:  # least recently used first, as LRU.evict picks them
            if excess <= 0:
                break
            if old != key:
                victims.append(fast.d[old])
                excess -= fast.weights[old]
        return victims

    def _insert(self, key: CacheKey, chunk: np.ndarray, weight: int) -> None:
        """Put ``chunk`` in the fast tier; the lock is held on entry and on exit.

        Chunks this pushes into the second tier are compressed with the lock released.
        If ``key`` changed meanwhile (a put, a discard, a clear, a resize), it is dropped
        rather than risk keeping an outdated chunk: the store has the truth.
        """
        tiers = self._tiers
        ready: dict[int, tuple[np.ndarray, Compressed]] = {}
        victims = [] if tiers.slow is None else self._victims(tiers, key, weight)
        if victims:
            token = self._pending[key] = object()
            self._lock.release()
            try:
                ready = {id(old): (old, compress(old)) for old in victims}
            finally:
                self._lock.acquire()
            if self._pending.get(key) is not token:
                # Conflict: drop the key, and the token of whoever changed it if they
                # are waiting too, so that neither insertion lands.
                self._pending.pop(key, None)
                self._discard(self._tiers, key)
                return
            del self._pending[key]
            self._ready.update(ready)
        try:
            # LRU.__setitem__ inserts, then evicts down to the budget, all under our
            # lock, so no other thread ever sees the budget exceeded.
            tiers.data[key] = chunk
        except BaseException:
            # Only a failure to compress an evicted chunk into the second tier can
            # land here; zict then keeps it in the fast tier. Keep the budget anyway.
            self._shed(tiers)
            raise
        finally:
            for ident in ready:  # records of chunks that did not move after all
                self._ready.pop(ident, None)

    def _count_eviction(self, key: object, value: object) -> None:
        # Called by zict inside an eviction, which only ever runs under self._lock.
        self._evictions += 1

    # -- lookups -----------------------------------------------------------------------

    def get(self, key: CacheKey) -> np.ndarray | None:
        """The cached chunk, read-only, or ``None``; counts a hit or a miss.

        Examples
        --------
        >>> cache = ChunkCache(1 << 10)
        >>> cache.put(("s", "a", "0"), np.arange(4))
        >>> cache.get(("s", "a", "0"))
        array([0, 1, 2, 3])
        """
        with self._lock:
            tiers = self._tiers
            try:
                chunk = tiers.fast[key]
            except KeyError:
                pass
            else:
                self._hits += 1
                return chunk
            if tiers.slow is None or key not in tiers.slow:
                self._misses += 1
                return None
            record = tiers.slow[key]  # bumps its recency in the compressed tier
            self._hits += 1
            self._compressed_hits += 1
        chunk = decompress(record)  # outside the lock: other threads keep hitting
        with self._lock:
            self._promote(tiers, key, record, chunk)
        return chunk

    def get_many(self, keys: Sequence[CacheKey]) -> dict[CacheKey, np.ndarray]:
        """The cached chunks among ``keys`` (read-only), by key; counts hits and misses.

        Same as calling :meth:`get` for each key, with one lock round-trip for the
        chunks held in the fast tier (the common case of a read that hits).

        Examples
        --------
        >>> cache = ChunkCache(1 << 10)
        >>> cache.put(("s", "a", "0"), np.arange(2))
        >>> cache.get_many([("s", "a", "0"), ("s", "a", "1")])
        {('s', 'a', '0'): array([0, 1])}
        """
        found: dict[CacheKey, np.ndarray] = {}
        elsewhere = []
        with self._lock:
            fast = self._tiers.fast
            for key in keys:
                try:
                    found[key] = fast[key]
                except KeyError:
                    elsewhere.append(key)
            self._hits += len(found)
        for key in elsewhere:  # compressed tier or a miss: the single-key path counts
            chunk = self.get(key)
            if chunk is not None:
                found[key] = chunk
        return found

    def _promote(self, tiers: Tiers, key: CacheKey, record: Compressed, chunk: np.ndarray) -> None:
        """Move a chunk just decompressed back into the fast tier, unless it went stale."""
        if tiers is not self._tiers or tiers.slow is None or tiers.slow.d.get(key) is not record:
            return  # rebuilt, discarded or overwritten while we decompressed
        weight = chunk_weight(key, chunk)
        if weight > tiers.fast.n:
            return  # the fast tier shrank below this chunk: it stays compressed
        # Buffer.__setitem__ drops the compressed copy and may move older chunks down.
        self._pending.pop(key, None)
        self._insert(key, chunk, weight)

    def __contains__(self, key: object) -> bool:
        """Whether ``key`` is cached in either tier (no counters change, no recency bump).

        Examples
        --------
        >>> cache = ChunkCache(1 << 10)
        >>> cache.put(("s", "a", "0"), np.zeros(3))
        >>> ("s", "a", "0") in cache, ("s", "a", "1") in cache, cache.stats.hits
        (True, False, 0)
        """
        with self._lock:
            tiers = self._tiers
            return key in tiers.fast.d or (tiers.slow is not None and key in tiers.slow.d)

    def __len__(self) -> int:
        """Number of chunks cached in both tiers."""
        with self._lock:
            tiers = self._tiers
            return len(tiers.fast.d) + (0 if tiers.slow is None else len(tiers.slow.d))

    # -- updates -----------------------------------------------------------------------

    def put(self, key: CacheKey, chunk: np.ndarray) -> None:
        """Cache ``chunk`` under ``key``, replacing any older version.

        The cache takes ownership: it keeps this very array (no copy) and makes it
        read-only. A chunk larger than ``max_bytes`` is not cached (and any older
        version of it is dropped, so a write never leaves a stale chunk behind).

        Examples
        --------
        >>> cache = ChunkCache(max_bytes=100)
        >>> chunk = np.ones(10, dtype="u1")
        >>> cache.put(("s", "a", "0"), chunk)
        >>> cache.get(("s", "a", "0")) is chunk, chunk.flags.writeable
        (True, False)
        >>> cache.put(("s", "a", "1"), np.ones(101, dtype="u1"))  # too big: not cached
        >>> ("s", "a", "1") in cache
        False
        """
        if not isinstance(chunk, np.ndarray):
            raise TypeError(f"ChunkCache.put({key!r}): expected a numpy array, got {type(chunk)!r}")
        chunk.flags.writeable = False
        weight = chunk_weight(key, chunk)
        with self._lock:
            self._pending.pop(key, None)  # an older put still compressing is now stale
            if weight > self._tiers.fast.n:
                self._discard(self._tiers, key)
                return
            self._insert(key, chunk, weight)

    def _shed(self, tiers: Tiers) -> None:
        while tiers.fast.total_weight > tiers.fast.n and tiers.fast.d:
            del tiers.fast[next(iter(tiers.fast.order))]
            self._evictions += 1

    @staticmethod
    def _discard(tiers: Tiers, key: CacheKey) -> None:
        # `del`, not pop(): pop would read (and decompress) the value first.
        try:
            del tiers.data[key]
        except KeyError:
            pass

    def discard(self, key: CacheKey) -> None:
        """Forget one chunk (no error if it is not cached)."""
        with self._lock:
            self._pending.pop(key, None)
            self._discard(self._tiers, key)

    def discard_many(self, keys: Iterable[CacheKey]) -> None:
        """Forget several chunks.

        Examples
        --------
        >>> cache = ChunkCache(1 << 10)
        >>> for i in range(3):
        ...     cache.put(("s", "a", str(i)), np.zeros(2))
        >>> cache.discard_many([("s", "a", "0"), ("s", "a", "1"), ("s", "a", "9")])
        >>> len(cache)
        1
        """
        keys = list(keys)  # consume a generator before taking the lock
        with self._lock:
            tiers = self._tiers
            for key in keys:
                self._pending.pop(key, None)
                self._discard(tiers, key)

    def discard_array(self, identity: str, path: str) -> None:
        """Forget every chunk of one array (after a resize, an overwrite, a delete).

        Examples
        --------
        >>> cache = ChunkCache(1 << 10)
        >>> cache.put(("s", "a", "0"), np.zeros(2))
        >>> cache.put(("s", "b", "0"), np.zeros(2))
        >>> cache.discard_array("s", "a")
        >>> ("s", "a", "0") in cache, ("s", "b", "0") in cache
        (False, True)
        """
        with self._lock:
            tiers = self._tiers
            # A scan, not an index: this runs on resize/overwrite, rarely, and an index
            # would have to follow every eviction in both tiers.
            stored = [*tiers.fast.d, *self._pending]
            if tiers.slow is not None:
                stored += list(tiers.slow.d)
            for key in stored:
                if key[0] == identity and key[1] == path:
                    self._pending.pop(key, None)
                    self._discard(tiers, key)

    def clear(self) -> None:
        """Forget every chunk (the counters stay; see :meth:`reset_stats`)."""
        with self._lock:
            self._pending.clear()
            # Fresh layers: MutableMapping.clear() would pop, i.e. decompress, each item.
            self._tiers = self._rebuilt(self._tiers.fast.n, self._compressed_max())

    def resize(self, max_bytes: int, compressed_bytes: int | None = None) -> None:
        """Change the budgets, evicting down to them right away.

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
        ...     cache.put(("s", "a", str(i)), np.zeros(25, dtype="u1"))
        >>> cache.resize(50)
        >>> cache.stats.entries, cache.stats.evictions, ("s", "a", "3") in cache
        (2, 2, True)
        """
        max_bytes = _budget("max_bytes", max_bytes)
        with self._lock:
            self._pending.clear()  # insertions under way would not know the new budgets
            old = self._tiers
            compressed = self._compressed_max() if compressed_bytes is None else _budget(
                "compressed_bytes", compressed_bytes
            )
            if (compressed > 0) == (old.slow is not None):
                old.fast.n = max_bytes
                old.fast.evict_until_below_target()  # into the second tier, if any
                if old.slow is not None:
                    old.slow.n = compressed
                    old.slow.evict_until_below_target()
                return
            # Adding or removing the second tier: new layers, keeping the decoded chunks
            # in their recency order (oldest first). Compressed ones are dropped.
            new = self._rebuilt(max_bytes, compressed)
            if old.slow is not None:
                self._evictions += len(old.slow.d)
            for key in list(old.fast.order):
                chunk = old.fast.d[key]
                if chunk_weight(key, chunk) <= max_bytes:
                    new.data[key] = chunk
                else:
                    self._evictions += 1
            self._tiers = new

    def _rebuilt(self, max_bytes: float, compressed_bytes: int) -> Tiers:
        return build_tiers(int(max_bytes), compressed_bytes, self._count_eviction, self._dump)

    def _compressed_max(self) -> int:
        slow = self._tiers.slow
        return 0 if slow is None else int(slow.n)

    # -- counters ----------------------------------------------------------------------

    @property
    def max_bytes(self) -> int:
        """Budget of the fast tier."""
        return int(self._tiers.fast.n)

    @property
    def compressed_max_bytes(self) -> int:
        """Budget of the compressed second tier (0: none)."""
        return self._compressed_max()

    @property
    def stats(self) -> CacheStats:
        """A consistent snapshot of the counters (see :class:`CacheStats`)."""
        with self._lock:
            tiers = self._tiers
            slow = tiers.slow
            return CacheStats(
                hits=self._hits,
                misses=self._misses,
                evictions=self._evictions,
                bytes=int(tiers.fast.total_weight),
                entries=len(tiers.fast.d),
                max_bytes=int(tiers.fast.n),
                compressed_hits=self._compressed_hits,
                compressed_bytes=0 if slow is None else int(slow.total_weight),
                compressed_entries=0 if slow is None else len(slow.d),
            )

    def reset_stats(self) -> None:
        """Zero the hit, miss and eviction counters (what is cached stays)."""
        with self._lock:
            self._hits = self._misses = self._evictions = self._compressed_hits = 0

    def __repr__(self) -> str:
        budgets = f"max_bytes={self.max_bytes}, compressed_bytes={self.compressed_max_bytes}"
        return f"ChunkCache({budgets})"
