"""The decoded-chunk cache seen through arrays: hits, write-through, coherence."""

from __future__ import annotations

import threading
import time
from pathlib import Path

import numpy as np

import chunkflow
from chunkflow.cache import ChunkCache


def _array(tmp_path: Path, cache: ChunkCache, **kwargs) -> chunkflow.Array:
    z = chunkflow.zeros((32, 32), chunks=(8, 8), dtype="i4", store=str(tmp_path / "c.zarr"),
                        cache=cache, **kwargs)
    return z


def test_hit_and_miss_counts_for_known_patterns(tmp_path: Path) -> None:
    cache = ChunkCache(max_bytes=1 << 20)
    z = _array(tmp_path, cache)
    z[:] = np.arange(32 * 32).reshape(32, 32)
    cache.clear()
    cache.reset_stats()
    z[0:4, 0:4]  # one chunk: a miss
    z[1:5, 2:7]  # the same chunk: a hit
    z[6:10, 6:10]  # four chunks, one of them cached
    stats = cache.stats
    assert (stats.misses, stats.hits) == (4, 2)
    assert stats.entries == 4 and stats.bytes == 4 * 8 * 8 * 4


def test_large_reads_stream_past_a_small_cache(tmp_path: Path) -> None:
    cache = ChunkCache(max_bytes=8 * 8 * 4 * 4)  # four chunks
    z = _array(tmp_path, cache)
    z[:] = 3
    cache.clear()
    assert (z[:] == 3).all()  # 16 chunks: more than half the budget, not kept
    assert cache.stats.entries == 0
    assert (z[0:8, 0:16] == 3).all()  # two chunks: kept
    assert cache.stats.entries == 2


def test_values_handed_out_cannot_change_the_cache(tmp_path: Path) -> None:
    cache = ChunkCache(max_bytes=1 << 20)
    z = _array(tmp_path, cache)
    z[0:8, 0:8] = 5
    block = z[0:8, 0:8]
    block[:] = -1
    np.testing.assert_array_equal(z[0:8, 0:8], 5)


def test_writes_update_or_invalidate_exactly_their_chunks(tmp_path: Path) -> None:
    cache = ChunkCache(max_bytes=1 << 20)
    z = _array(tmp_path, cache)
    z[:] = 1
    z[:, :]  # all 16 chunks cached
    cache.reset_stats()
    z[0:3, 0:3] = 7  # partial: the cached copy is looked up and checked against the store
    assert cache.stats.hits == 1 and cache.stats.rechecks == 1
    assert z._io.keys((0, 0))[1] in cache  # the chunk it wrote is kept (write-through)
    z[8:16, 8:16] = 9  # a whole chunk of the caller's data: dropped from the cache
    assert z._io.keys((1, 1))[1] not in cache
    expected = np.ones((32, 32), dtype="i4")
    expected[0:3, 0:3] = 7
    expected[8:16, 8:16] = 9
    np.testing.assert_array_equal(z[:], expected)
    np.testing.assert_array_equal(chunkflow.open(z.store, cache=False)[:], expected)
    z.resize(16, 16)
    z.resize(32, 32)
    expected[16:, :] = 0
    expected[:, 16:] = 0
    np.testing.assert_array_equal(z[:], expected)


def test_locked_read_modify_write_rereads_the_store(tmp_path: Path) -> None:
    cache = ChunkCache(max_bytes=1 << 20)
    z = _array(tmp_path, cache, synchronizer="thread")
    z[0:8, 0:8]  # cached as zeros
    other = chunkflow.open(str(tmp_path / "c.zarr"), cache=False)  # another process, say
    other[0:8, 0:8] = 5
    z[0, 0] = 7  # partial, locked: must start from the stored 5s, not the cached 0s
    expected = np.full((8, 8), 5, dtype="i4")
    expected[0, 0] = 7
    np.testing.assert_array_equal(other[0:8, 0:8], expected)
    np.testing.assert_array_equal(z[0:8, 0:8], expected)


def test_cached_reads_equal_uncached_reads_under_concurrent_writers(tmp_path: Path) -> None:
    cache = ChunkCache(max_bytes=1 << 20)
    z = _array(tmp_path, cache, synchronizer="thread")
    rng = np.random.default_rng(0)
    regions = [
        (slice(int(a), int(a) + 9), slice(int(b), int(b) + 11))
        for a, b in zip(rng.integers(0, 23, 120), rng.integers(0, 21, 120))
    ]
    stop = threading.Event()
    regressions: list[int] = []
    expected = np.zeros((32, 32), dtype="i4")
    for region in regions:
        expected[region] += 1

    def reader() -> None:
        # Counts only ever grow in the store: a read showing less than an earlier read
        # of the same thread served an outdated cached chunk.
        previous = np.zeros((32, 32), dtype="i4")
        while not stop.is_set():
            current = z[:]
            regressions.append(int((current < previous).sum() + (current > expected).sum()))
            previous = current
            time.sleep(0.001)  # let the writers run: spinning readers starve them of the GIL

    def writer(part: list) -> None:
        for region in part:
            z.modify(region, lambda block: block + 1)

    readers = [threading.Thread(target=reader) for _ in range(2)]
    writers = [threading.Thread(target=writer, args=(regions[i::3],)) for i in range(3)]
    for thread in readers + writers:
        thread.start()
    for thread in writers:
        thread.join()
    stop.set()
    for thread in readers:
        thread.join()
    assert regressions and not any(regressions)
    np.testing.assert_array_equal(z[:], expected)
    np.testing.assert_array_equal(chunkflow.open(str(tmp_path / "c.zarr"), cache=False)[:],
                                  expected)


def test_cache_can_be_switched_off_per_array_and_by_config(tmp_path: Path) -> None:
    z = chunkflow.zeros((16, 16), chunks=(8, 8), dtype="i4", store=str(tmp_path / "o.zarr"),
                        cache=False)
    assert z.options.resolve_cache() is None
    with chunkflow.config.set({"chunkflow.cache.enabled": False}):
        assert chunkflow.open(str(tmp_path / "o.zarr")).options.resolve_cache() is None
    assert chunkflow.open(str(tmp_path / "o.zarr")).options.resolve_cache() is not None
