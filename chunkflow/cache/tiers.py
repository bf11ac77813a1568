"""The zict layers behind :class:`~chunkflow.cache.ChunkCache`, and what they hold.

Two tiers, composed from stock zict mappings used through their public API:

* fast: ``zict.LRU(max_bytes, {}, weight=nbytes)`` of :class:`CachedChunk` entries;
* slow (optional): ``zict.Buffer(fast, zict.Func(compress, decompress, zict.LRU(
  compressed_bytes, {}, weight=len)))``, so entries evicted from the fast tier stay
  in memory compressed with blosc lz4 (byte shuffle by item size).

zict 3 makes these mappings thread-safe on their own and runs eviction callbacks
(compression into the slow tier) with its locks released.

Each entry remembers the store's version of the bytes it was decoded from and when it
was last proven current, so a reader can tell whether it must check it again.

Examples
--------
>>> tiers = build_tiers(1000, 0, lambda key, value: None)
>>> tiers.data["k"] = CachedChunk(np.zeros(10, "u1"), version=7, checked=0.0)
>>> tiers.fast.total_weight
10
"""

from __future__ import annotations

import pickle
from collections.abc import Callable, Hashable, MutableMapping
from dataclasses import dataclass
from typing import Any

import numpy as np
import zict
from numcodecs import blosc

__all__ = [
    "CachedChunk",
    "Compressed",
    "Tiers",
    "build_tiers",
    "chunk_weight",
    "compress",
    "decompress",
    "drain",
    "keys_starting_with",
]

# lz4 at a middle level: entries are compressed again on every demotion, so speed
# matters more than ratio here (zstd would hold more, and stall demotions longer).
_CNAME = b"lz4"
_CLEVEL = 5


@dataclass(slots=True, eq=False)
class CachedChunk:
    """A decoded chunk in the cache.

    Attributes
    ----------
    chunk : numpy.ndarray
        The decoded chunk, read-only.
    version : hashable or None
        The store's version of the bytes it was decoded from (``None``: unknown, so
        it can never be proven current without reading the store again).
    checked : float
        ``time.monotonic()`` when it was last known current: when it was read or
        written, or when its version was last compared with the store's.
    """

    chunk: np.ndarray
    version: Hashable | None
    checked: float


@dataclass(frozen=True, slots=True)
class Compressed:
    """An entry held by the second tier: a blosc (or pickle) frame and its layout.

    Examples
    --------
    >>> record = compress(CachedChunk(np.arange(1000, dtype="i8"), "v1", 5.0))
    >>> len(record) < 8000, record.shape, record.dtype, record.version
    (True, (1000,), dtype('int64'), 'v1')
    """

    data: bytes
    dtype: np.dtype[Any]
    shape: tuple[int, ...]
    order: str  # "C", "F", or "P" (pickled object array)
    version: Hashable | None
    checked: float

    def __len__(self) -> int:
        # What the slow zict.LRU (weight=len) charges against the compressed budget.
        return len(self.data)


def chunk_weight(key: object, entry: CachedChunk) -> int:
    """Bytes an entry costs the fast tier (at least 1, so a budget also bounds the
    number of entries, and ``max_bytes=0`` caches nothing).

    Examples
    --------
    >>> chunk_weight("k", CachedChunk(np.zeros((4, 4), "f4"), None, 0.0))
    64
    >>> chunk_weight("k", CachedChunk(np.zeros(0), None, 0.0))
    1
    """
    return max(entry.chunk.nbytes, 1)


def compress(entry: CachedChunk) -> Compressed:
    """Compress an entry for the second tier (values, dtype, shape and version kept).

    Examples
    --------
    >>> entry = CachedChunk(np.arange(12, dtype="u2").reshape(3, 4), None, 1.0)
    >>> np.array_equal(decompress(compress(entry)).chunk, entry.chunk)
    True
    """
    chunk = entry.chunk
    meta = (chunk.dtype, chunk.shape)
    if chunk.dtype.hasobject:
        # Objects (strings...) have no fixed-size bytes to shuffle. These are values this
        # process decoded itself, so pickling them for later is safe.
        frame = pickle.dumps(chunk, protocol=5)
        return Compressed(frame, *meta, "P", entry.version, entry.checked)
    if chunk.flags.c_contiguous:
        order, data = "C", chunk
    elif chunk.flags.f_contiguous:
        order, data = "F", chunk.T  # a C-contiguous view of the same memory
    else:
        order, data = "C", np.ascontiguousarray(chunk)
    if chunk.size == 0:
        return Compressed(b"", *meta, order, entry.version, entry.checked)
    # Viewed as bytes: the buffer protocol refuses some dtypes (datetime64, ...), while
    # typesize still tells blosc how wide the items are to shuffle.
    raw = data.reshape(-1).view(np.uint8)
    frame = blosc.compress(raw, _CNAME, _CLEVEL, blosc.SHUFFLE, 0, typesize=max(chunk.itemsize, 1))
    return Compressed(frame, *meta, order, entry.version, entry.checked)


def decompress(record: Compressed) -> CachedChunk:
    """Rebuild the entry, its chunk read-only, from a :class:`Compressed` record.

    Examples
    --------
    >>> chunk = np.asfortranarray(np.arange(6.0).reshape(2, 3))
    >>> again = decompress(compress(CachedChunk(chunk, 3, 0.0)))
    >>> np.array_equal(again.chunk, chunk), again.chunk.flags.writeable, again.version
    (True, False, 3)
    """
    if record.order == "P":
        chunk = pickle.loads(record.data)
    elif not record.data:
        chunk = np.empty(record.shape, dtype=record.dtype)  # blosc refuses empty frames
    else:
        # frombuffer over the bytes blosc returns: no copy, and read-only already.
        flat = np.frombuffer(blosc.decompress(record.data), dtype=record.dtype)
        if record.order == "C":
            chunk = flat.reshape(record.shape)
        else:
            chunk = flat.reshape(record.shape[::-1]).T
    chunk.flags.writeable = False
    return CachedChunk(chunk, record.version, record.checked)


@dataclass
class Tiers:
    """The composed zict layers of one cache.

    ``data`` is the mapping to read and write through (the fast LRU, or the Buffer over
    both tiers); ``fast`` is the LRU of decoded entries; ``slow`` the LRU of
    :class:`Compressed` records (``None`` without a second tier).
    """

    data: MutableMapping[Any, CachedChunk]
    fast: zict.LRU[Any, CachedChunk]
    slow: zict.LRU[Any, Compressed] | None


def build_tiers(
    max_bytes: int, compressed_bytes: int, on_evict: Callable[[Any, Any], None]
) -> Tiers:
    """Compose the zict layers; ``on_evict`` hears of entries leaving the cache entirely.

    Examples
    --------
    >>> tiers = build_tiers(100, 0, lambda key, value: None)
    >>> tiers.data is tiers.fast, tiers.slow
    (True, None)
    >>> tiers = build_tiers(100, 1000, lambda key, value: None)
    >>> type(tiers.data).__name__, tiers.fast.n, tiers.slow.n
    ('Buffer', 100, 1000)
    """
    if compressed_bytes <= 0:
        fast: zict.LRU[Any, CachedChunk] = zict.LRU(
            max_bytes, {}, weight=chunk_weight, on_evict=on_evict
        )
        return Tiers(fast, fast, None)
    # An entry leaves the cache for good only when the slow tier evicts it; the fast tier
    # evicting means moving it into the slow one (the Buffer's own doing).
    slow: zict.LRU[Any, Compressed] = zict.LRU(
        compressed_bytes, {}, weight=lambda key, record: len(record), on_evict=on_evict
    )
    buffer = zict.Buffer({}, zict.Func(compress, decompress, slow), max_bytes, weight=chunk_weight)
    return Tiers(buffer, buffer.fast, slow)


def drain(tiers: Tiers) -> tuple[list[tuple[Hashable, CachedChunk]], int]:
    """Take the decoded entries out of retired tiers, least recently used first, and
    the number of evictions that makes (to add to the cache's count).

    Without a second tier, ``LRU.evict()`` hands them out in recency order (each call
    counts an eviction, taken back here: a move is not one). With one, evicting would
    compress every entry into the retired tier for nothing: they come in insertion
    order instead, and the compressed ones are dropped (which counts as evicting them).
    """
    if tiers.slow is not None:
        return list(tiers.fast.items()), len(tiers.slow)
    entries: list[tuple[Hashable, CachedChunk]] = []
    while len(tiers.fast):
        key, entry, _ = tiers.fast.evict()
        if key is not None and entry is not None:
            entries.append((key, entry))
    return entries, -len(entries)


def keys_starting_with(tiers: Tiers, prefix: str) -> list[Hashable]:
    """The cached keys (of both tiers) that start with ``prefix``."""
    # A scan, not an index: this runs when arrays are replaced or deleted, rarely, and
    # an index would have to follow every eviction in both tiers. list(keys()) copies
    # them at once, so concurrent changes cannot break the iteration.
    return [k for k in list(tiers.data.keys()) if isinstance(k, str) and k.startswith(prefix)]
