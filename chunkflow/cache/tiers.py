"""The zict layers behind :class:`~chunkflow.cache.ChunkCache`.

Two tiers, composed from stock zict mappings (no subclasses):

* fast: ``zict.LRU(max_bytes, {}, weight=nbytes)`` of decoded, read-only chunks;
* slow (optional): ``zict.Func(compress, decompress, zict.LRU(compressed_bytes, {},
  weight=len))`` under a ``zict.Buffer``, so chunks evicted from the fast tier stay in
  memory compressed with blosc lz4 (byte shuffle by item size).

The slow tier stores :class:`Compressed` records: the blosc frame plus what is needed to
rebuild the array (dtype, shape, memory order). ``len()`` of a record is its compressed
size, which is what the slow LRU weighs.
"""

from __future__ import annotations

import pickle
from collections.abc import Callable, MutableMapping
from dataclasses import dataclass
from typing import Any

import numpy as np
import zict
from numcodecs import blosc

__all__ = ["Compressed", "Tiers", "build_tiers", "chunk_weight", "compress", "decompress"]

# lz4 at a middle level: decoded chunks are compressed again on every demotion, so
# speed matters more than ratio here (zstd would hold more, and stall puts longer).
_CNAME = b"lz4"
_CLEVEL = 5


@dataclass(frozen=True, slots=True)
class Compressed:
    """A chunk held by the second tier: a blosc (or pickle) frame and its layout.

    Examples
    --------
    >>> record = compress(np.arange(1000, dtype="i8"))
    >>> len(record) < 8000, record.shape, record.dtype
    (True, (1000,), dtype('int64'))
    """

    data: bytes
    dtype: np.dtype[Any]
    shape: tuple[int, ...]
    order: str  # "C", "F", or "P" (pickled object array)

    def __len__(self) -> int:
        # What zict.LRU(weight=len) charges against the compressed budget.
        return len(self.data)


def chunk_weight(key: object, chunk: np.ndarray) -> int:
    """Bytes a decoded chunk costs the fast tier (at least 1, so a budget also bounds
    the number of entries, and ``max_bytes=0`` caches nothing).

    Examples
    --------
    >>> chunk_weight("k", np.zeros((4, 4), dtype="f4")), chunk_weight("k", np.zeros(0))
    (64, 1)
    """
    return max(chunk.nbytes, 1)


def compress(chunk: np.ndarray) -> Compressed:
    """Compress a decoded chunk for the second tier (values, dtype and shape kept).

    Examples
    --------
    >>> chunk = np.arange(12, dtype="u2").reshape(3, 4)
    >>> np.array_equal(decompress(compress(chunk)), chunk)
    True
    """
    if chunk.dtype.hasobject:
        # Objects (strings...) have no fixed-size bytes to shuffle. These are values this
        # process decoded itself, so pickling them for later is safe.
        return Compressed(pickle.dumps(chunk, protocol=5), chunk.dtype, chunk.shape, "P")
    if chunk.flags.c_contiguous:
        order, data = "C", chunk
    elif chunk.flags.f_contiguous:
        order, data = "F", chunk.T  # a C-contiguous view of the same memory
    else:
        order, data = "C", np.ascontiguousarray(chunk)
    # Viewed as bytes: the buffer protocol refuses some dtypes (datetime64, ...), while
    # typesize still tells blosc how wide the items are to shuffle.
    if chunk.size == 0:
        return Compressed(b"", chunk.dtype, chunk.shape, order)
    raw = data.reshape(-1).view(np.uint8)
    frame = blosc.compress(raw, _CNAME, _CLEVEL, blosc.SHUFFLE, 0, typesize=max(chunk.itemsize, 1))
    return Compressed(frame, chunk.dtype, chunk.shape, order)


def decompress(record: Compressed) -> np.ndarray:
    """Rebuild the read-only decoded chunk from a :class:`Compressed` record.

    Examples
    --------
    >>> chunk = np.asfortranarray(np.arange(6.0).reshape(2, 3))
    >>> again = decompress(compress(chunk))
    >>> np.array_equal(again, chunk), again.flags.writeable
    (True, False)
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
    return chunk


@dataclass
class Tiers:
    """The composed zict layers of one cache.

    ``data`` is the mapping to read and write through (the fast LRU, or the Buffer over
    both tiers); ``fast`` is the LRU of decoded chunks; ``slow`` the LRU of
    :class:`Compressed` records (``None`` without a second tier).
    """

    data: MutableMapping[Any, np.ndarray]
    fast: zict.LRU[Any, np.ndarray]
    slow: zict.LRU[Any, Compressed] | None


def build_tiers(
    max_bytes: int,
    compressed_bytes: int,
    on_evict: Callable[[Any, Any], None],
    dump: Callable[[np.ndarray], Compressed] = compress,
) -> Tiers:
    """Compose the zict layers; ``on_evict`` hears of chunks leaving the cache entirely,
    ``dump`` compresses a chunk moving into the second tier.

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
        fast: zict.LRU[Any, np.ndarray] = zict.LRU(
            max_bytes, {}, weight=chunk_weight, on_evict=on_evict
        )
        return Tiers(fast, fast, None)
    # A chunk leaves the cache for good only when the slow tier evicts it; the fast tier
    # evicting means moving it into the slow one (Buffer's own on_evict).
    slow: zict.LRU[Any, Compressed] = zict.LRU(
        compressed_bytes, {}, weight=lambda key, record: len(record), on_evict=on_evict
    )
    buffer = zict.Buffer({}, zict.Func(dump, decompress, slow), max_bytes, weight=chunk_weight)
    return Tiers(buffer, buffer.fast, slow)
