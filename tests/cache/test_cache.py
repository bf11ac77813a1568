"""Tests of chunkflow.cache: the decoded-chunk cache (real zict layers, no mocks)."""

from __future__ import annotations

import random
import threading
from concurrent.futures import ThreadPoolExecutor

import numpy as np
import pytest
from hypothesis import settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, initialize, invariant, rule

from chunkflow import config
from chunkflow.cache import CacheStats, ChunkCache, cache_info, get_cache
from chunkflow.cache.tiers import CachedChunk, compress, decompress


def key(i: int, path: str = "a", store: str = "mem://1") -> str:
    return f"{store}/{path}/c/{i}"


def chunk(n: int, value: int = 0, dtype: str = "u1") -> np.ndarray:
    return np.full(n, value, dtype=dtype)


def noisy(nbytes: int, seed: int) -> np.ndarray:
    """Random bytes: incompressible, so tier sizes are predictable."""
    return np.random.default_rng(seed).integers(0, 256, nbytes, dtype="u1")


# -- counters and LRU order ---------------------------------------------------------------


def test_hits_misses_evictions_follow_lru_order() -> None:
    cache = ChunkCache(max_bytes=300)
    for i in range(3):
        cache.put(key(i), chunk(100, i))
    assert cache.get(key(0)) is not None  # 0 becomes the most recent: 1 is now the oldest
    cache.put(key(3), chunk(100, 3))  # evicts 1
    assert key(1) not in cache
    assert all(key(i) in cache for i in (0, 2, 3))
    assert cache.get(key(1)) is None
    cache.put(key(4), chunk(100, 4))  # evicts 2
    assert key(2) not in cache
    stats = cache.stats
    assert (stats.hits, stats.misses, stats.evictions) == (1, 1, 2)
    assert (stats.bytes, stats.entries, stats.max_bytes) == (300, 3, 300)
    assert stats.hit_rate == 0.5


def test_get_many_counts_like_get_and_reaches_the_compressed_tier() -> None:
    cache = ChunkCache(max_bytes=2000, compressed_bytes=100_000)
    for i in range(3):
        cache.put(key(i), noisy(1000, i))  # 3 x 1000 bytes: key 0 moves to the second tier
    found = cache.get_many([key(0), key(1), key(2), key(9)])
    assert sorted(found) == [key(0), key(1), key(2)]
    np.testing.assert_array_equal(found[key(0)], noisy(1000, 0))
    assert all(not c.flags.writeable for c in found.values())
    stats = cache.stats
    assert (stats.hits, stats.misses, stats.compressed_hits) == (3, 1, 1)
    assert stats.bytes <= 2000


def test_replacing_a_key_does_not_double_count_bytes() -> None:
    cache = ChunkCache(max_bytes=1000)
    cache.put(key(0), chunk(100))
    cache.put(key(0), chunk(200, 7))
    assert (cache.stats.bytes, cache.stats.entries) == (200, 1)
    assert cache.get(key(0))[0] == 7


def test_contains_changes_no_counter() -> None:
    cache = ChunkCache(max_bytes=1000)
    cache.put(key(0), chunk(10))
    assert key(0) in cache and key(1) not in cache
    assert (cache.stats.hits, cache.stats.misses) == (0, 0)


def test_reset_stats_keeps_the_chunks() -> None:
    cache = ChunkCache(max_bytes=100)
    cache.put(key(0), chunk(60))
    cache.put(key(1), chunk(60))
    cache.get(key(1))
    cache.get(key(0))
    cache.reset_stats()
    stats = cache.stats
    assert (stats.hits, stats.misses, stats.evictions) == (0, 0, 0)
    assert stats.entries == 1 and cache.get(key(1)) is not None


def test_stats_repr_and_html() -> None:
    cache = ChunkCache(max_bytes=1000, compressed_bytes=1000)
    cache.put(key(0), chunk(10))
    cache.get(key(0))
    stats = cache.stats
    assert isinstance(stats, CacheStats)
    assert "hits=1" in repr(stats) and "bytes=10/1000" in repr(stats)
    assert "<table" in stats._repr_html_() and "compressed_entries" in stats._repr_html_()
    assert CacheStats(0, 0, 0, 0, 0, 10).hit_rate is None
    assert repr(cache) == "ChunkCache(max_bytes=1000, compressed_bytes=1000)"


# -- budget -------------------------------------------------------------------------------


def test_oversized_chunk_is_not_cached_and_drops_an_older_version() -> None:
    cache = ChunkCache(max_bytes=100)
    cache.put(key(1), chunk(50))
    cache.put(key(0), chunk(50))
    cache.put(key(0), chunk(101))  # a newer, bigger version must not leave the old one
    assert key(0) not in cache and key(1) in cache
    assert cache.stats.bytes == 50 and cache.stats.evictions == 0


def test_zero_budget_caches_nothing() -> None:
    cache = ChunkCache(max_bytes=0)
    cache.put(key(0), chunk(0))  # even an empty chunk weighs one byte
    assert cache.get(key(0)) is None and cache.stats.bytes == 0


@pytest.mark.parametrize("compressed", [0, 2000])
def test_budget_kept_through_random_operations(compressed: int) -> None:
    rng = random.Random(compressed)
    cache = ChunkCache(max_bytes=1000, compressed_bytes=compressed)
    latest: dict[str, np.ndarray] = {}
    for step in range(3000):
        k = key(rng.randrange(30), path=rng.choice("ab"))
        action = rng.random()
        if action < 0.5:
            size = rng.randrange(0, 400)
            value = noisy(size, step) if rng.random() < 0.3 else chunk(size, step % 256)
            latest[k] = value.copy()
            cache.put(k, value)
        elif action < 0.9:
            got = cache.get(k)
            if got is not None:
                np.testing.assert_array_equal(got, latest[k])  # never a stale value
        elif action < 0.97:
            cache.discard(k)
            latest.pop(k, None)
        else:
            cache.discard_prefix(k.rsplit("/c/", 1)[0] + "/")
        stats = cache.stats
        assert 0 <= stats.bytes <= stats.max_bytes
        assert 0 <= stats.compressed_bytes <= compressed


class CacheMachine(RuleBasedStateMachine):
    """Random puts, gets, discards and resizes: the budget holds after every step, and a
    hit always returns the value last put under that key."""

    @initialize(compressed=st.sampled_from([0, 300, 3000]))
    def start(self, compressed: int) -> None:
        self.cache = ChunkCache(max_bytes=1000, compressed_bytes=compressed)
        self.latest: dict[str, np.ndarray] = {}

    @rule(i=st.integers(0, 15), size=st.integers(0, 1200), fill=st.integers(0, 255),
          random_data=st.booleans())
    def put(self, i: int, size: int, fill: int, random_data: bool) -> None:
        value = noisy(size, fill) if random_data else chunk(size, fill)
        self.latest[key(i)] = value.copy()
        self.cache.put(key(i), value)

    @rule(i=st.integers(0, 15))
    def get(self, i: int) -> None:
        got = self.cache.get(key(i))
        if got is not None:
            assert not got.flags.writeable
            np.testing.assert_array_equal(got, self.latest[key(i)])

    @rule(i=st.integers(0, 15))
    def discard(self, i: int) -> None:
        self.cache.discard(key(i))
        assert key(i) not in self.cache

    @rule(max_bytes=st.integers(0, 1500), compressed=st.sampled_from([None, 0, 500]))
    def resize(self, max_bytes: int, compressed: int | None) -> None:
        self.cache.resize(max_bytes, compressed)

    @rule()
    def clear(self) -> None:
        self.cache.clear()
        assert len(self.cache) == 0

    @invariant()
    def budget_kept(self) -> None:
        if not hasattr(self, "cache"):
            return
        stats = self.cache.stats
        assert 0 <= stats.bytes <= stats.max_bytes
        assert 0 <= stats.compressed_bytes <= self.cache.compressed_max_bytes
        assert stats.entries + stats.compressed_entries == len(self.cache)


TestCacheMachine = CacheMachine.TestCase
TestCacheMachine.settings = settings(max_examples=60, stateful_step_count=40, deadline=None)


# -- ownership and read-only values ------------------------------------------------------


def test_returned_chunks_are_read_only() -> None:
    cache = ChunkCache(max_bytes=1000)
    cache.put(key(0), np.arange(10))
    got = cache.get(key(0))
    assert not got.flags.writeable
    with pytest.raises(ValueError, match="read-only"):
        got[0] = 99
    assert cache.get(key(0))[0] == 0


def test_put_takes_ownership_without_copying() -> None:
    # Documented contract: the cache keeps the caller's array itself, made read-only, so
    # the caller cannot change cached values through that reference afterwards.
    cache = ChunkCache(max_bytes=1000)
    mine = np.arange(10)
    cache.put(key(0), mine)
    assert cache.get(key(0)) is mine
    assert not mine.flags.writeable
    with pytest.raises(ValueError, match="read-only"):
        mine[:] = 5


def test_put_refuses_what_is_not_an_array() -> None:
    with pytest.raises(TypeError, match="numpy array"):
        ChunkCache(max_bytes=1000).put(key(0), [1, 2, 3])  # type: ignore[arg-type]


@pytest.mark.parametrize("bad", [-1, 1.5, "1000", True, None])
def test_bad_budgets_are_refused(bad: object) -> None:
    with pytest.raises(ValueError, match="max_bytes"):
        ChunkCache(max_bytes=bad)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="compressed_bytes"):
        ChunkCache(max_bytes=10, compressed_bytes=bad)  # type: ignore[arg-type]
    if bad is not None:  # resize(..., None) means "keep the second tier as it is"
        with pytest.raises(ValueError, match="compressed_bytes"):
            ChunkCache(max_bytes=10).resize(10, bad)  # type: ignore[arg-type]


# -- discard, clear, resize --------------------------------------------------------------


@pytest.mark.parametrize("compressed", [0, 10_000])
def test_discard_discard_many_discard_array_clear(compressed: int) -> None:
    cache = ChunkCache(max_bytes=250, compressed_bytes=compressed)
    for i in range(5):
        cache.put(key(i, "a"), chunk(100, i))
        cache.put(key(i, "b"), chunk(100, i))
        cache.put(key(i, "a", store="other"), chunk(100, i))
    cache.discard(key(0, "b"))
    cache.discard(key(0, "b"))  # absent: no error
    cache.discard_many(key(i, "b") for i in (1, 2))
    assert not any(key(i, "b") in cache for i in range(3))
    cache.discard_array("mem://1", "a")
    assert not any(key(i, "a") in cache for i in range(5))
    assert any(key(i, "a", store="other") in cache for i in range(5))  # other store kept
    cache.clear()
    assert len(cache) == 0 and cache.stats.bytes == 0 and cache.stats.compressed_bytes == 0
    assert cache.stats.max_bytes == 250 and cache.compressed_max_bytes == compressed


def test_resize_evicts_oldest_down_to_the_new_budget() -> None:
    cache = ChunkCache(max_bytes=1000)
    for i in range(10):
        cache.put(key(i), chunk(100))
    cache.get(key(0))  # recently used: survives
    cache.resize(300)
    assert cache.stats.bytes <= 300 and cache.stats.evictions == 7
    assert key(0) in cache and key(9) in cache and key(8) in cache and key(1) not in cache
    cache.resize(50)  # every chunk is now larger than the budget
    assert cache.stats.entries == 0
    cache.put(key(0), chunk(100))
    assert key(0) not in cache


def test_resize_adds_and_removes_the_second_tier_keeping_decoded_chunks() -> None:
    cache = ChunkCache(max_bytes=300)
    for i in range(3):
        cache.put(key(i), chunk(100, i))
    cache.resize(200, compressed_bytes=1000)  # the oldest one moves to the compressed tier
    stats = cache.stats
    assert (stats.entries, stats.compressed_entries) == (2, 1)
    assert cache.get(key(0))[0] == 0 and cache.stats.compressed_hits == 1
    cache.resize(200, compressed_bytes=0)
    assert cache.compressed_max_bytes == 0 and cache.stats.entries == 2
    assert cache.get(key(0))[0] == 0  # promoted before: kept


# -- the compressed second tier ------------------------------------------------------------


def test_second_tier_holds_several_times_more_chunks() -> None:
    budget, size, count = 160_000, 16_000, 200
    plain = ChunkCache(max_bytes=budget)
    tiered = ChunkCache(max_bytes=budget // 2, compressed_bytes=budget // 2)
    for i in range(count):
        value = np.arange(size // 4, dtype="i4") + i  # compressible, like most images
        plain.put(key(i), value)
        tiered.put(key(i), value.copy())
    assert len(plain) == budget // size
    assert len(tiered) >= 4 * len(plain)
    stats = tiered.stats
    assert stats.bytes <= budget // 2 and stats.compressed_bytes <= budget // 2


def test_compressed_hit_restores_identical_values_and_promotes() -> None:
    cache = ChunkCache(max_bytes=2000, compressed_bytes=100_000)
    originals = {i: np.linspace(0, i, 250) for i in range(10)}  # 2000 bytes each
    for i, value in originals.items():
        cache.put(key(i), value.copy())
    assert cache.stats.entries == 1 and cache.stats.compressed_entries == 9
    got = cache.get(key(3))
    np.testing.assert_array_equal(got, originals[3])
    assert got.dtype == originals[3].dtype and not got.flags.writeable
    stats = cache.stats
    assert (stats.hits, stats.compressed_hits, stats.misses) == (1, 1, 0)
    # Promoted: now a fast-tier hit (the previous fast chunk went down a tier).
    assert cache.get(key(3)) is got
    assert cache.stats.compressed_hits == 1 and cache.stats.entries == 1
    assert cache.stats.compressed_entries == 9


def test_chunks_leaving_the_second_tier_count_as_evictions() -> None:
    cache = ChunkCache(max_bytes=1000, compressed_bytes=1500)
    for i in range(5):
        cache.put(key(i), noisy(1000, i))  # incompressible: ~1000 bytes in either tier
    stats = cache.stats
    assert (stats.entries, stats.compressed_entries) == (1, 1)
    assert stats.evictions == 3 and cache.get(key(0)) is None


@pytest.mark.parametrize(
    "value",
    [
        np.arange(24, dtype=">i4").reshape(2, 3, 4),
        np.asfortranarray(np.arange(12.0).reshape(3, 4)),
        np.arange(40, dtype="u2").reshape(5, 8)[::2, 1::3],  # not contiguous
        np.array(["2020-01-01", "NaT"], dtype="M8[s]"),
        np.array([(1, 2.5), (3, -1.0)], dtype=[("a", "u1"), ("b", "<f8")]),
        np.array(["x", "longer", None], dtype=object),
        np.array([1 + 2j, np.nan], dtype="c16"),
        np.zeros((0, 3), dtype="f4"),
        np.array(7, dtype="i8"),
    ],
    ids=["big-endian", "fortran", "strided", "datetime", "structured", "object", "complex",
         "empty", "scalar"],
)
def test_compression_round_trip_keeps_dtype_shape_values(value: np.ndarray) -> None:
    again = decompress(compress(CachedChunk(value, "v", 1.0))).chunk
    assert again.dtype == value.dtype and again.shape == value.shape
    assert not again.flags.writeable
    if value.dtype.hasobject:
        assert again.tolist() == value.tolist()
    else:
        assert again.tobytes() == value.tobytes()  # bitwise: NaN and NaT included


def test_every_dtype_goes_through_the_cache_tiers() -> None:
    cache = ChunkCache(max_bytes=200, compressed_bytes=100_000)
    samples = [np.arange(12, dtype=">i4").reshape(3, 4), np.asfortranarray(np.ones((3, 5))),
               np.array(["a", "bc"], dtype=object), np.zeros(2, dtype=[("x", "<i2"), ("y", "f8")])]
    for i, sample in enumerate(samples):
        cache.put(key(i), sample.copy())
    cache.put(key(99), chunk(200))  # pushes all the samples into the compressed tier
    assert cache.stats.compressed_entries == len(samples)
    for i, sample in enumerate(samples):
        got = cache.get(key(i))
        assert got.dtype == sample.dtype and got.shape == sample.shape
        assert got.tolist() == sample.tolist()
    assert cache.stats.compressed_hits == len(samples)


# -- threads ------------------------------------------------------------------------------


@pytest.mark.parametrize("compressed", [0, 20_000])
def test_concurrent_puts_and_gets(compressed: int) -> None:
    cache = ChunkCache(max_bytes=10_000, compressed_bytes=compressed)
    start = threading.Barrier(8)

    def work(seed: int) -> int:
        rng = random.Random(seed)
        start.wait()
        over_budget = 0
        for _ in range(2000):
            i = rng.randrange(60)
            if rng.random() < 0.4:
                cache.put(key(i), np.full(rng.randrange(1, 250), i, dtype="i4"))
            elif rng.random() < 0.95:
                got = cache.get(key(i))
                assert got is None or (got == i).all(), f"chunk {i} holds {got[:3]}"
            else:
                cache.discard(key(i))
            stats = cache.stats
            over_budget += stats.bytes > stats.max_bytes or stats.compressed_bytes > compressed
        return over_budget

    with ThreadPoolExecutor(8) as pool:
        # result() re-raises any exception (or failed assertion) from a worker thread.
        assert [f.result() for f in [pool.submit(work, seed) for seed in range(8)]] == [0] * 8
    stats = cache.stats
    assert stats.hits + stats.misses > 0 and stats.bytes <= 10_000


@pytest.mark.parametrize("compressed", [0, 30_000])
def test_a_writer_never_reads_back_an_older_version(compressed: int) -> None:
    # Each writer owns some keys and puts ever newer versions; right after its put, a
    # get may miss but must never return an older version, whatever the other threads
    # (readers, discarders, demotions compressed outside the lock) did meanwhile.
    cache = ChunkCache(max_bytes=8_000, compressed_bytes=compressed)
    start = threading.Barrier(8)

    def writer(owner: int) -> None:
        rng = random.Random(owner)
        start.wait()
        for version in range(1, 1500):
            i = owner + 4 * rng.randrange(10)
            cache.put(key(i), np.full(rng.randrange(50, 400), version, dtype="i4"))
            got = cache.get(key(i))
            assert got is None or (got == version).all(), f"{key(i)}: {got[0]} != {version}"

    def reader(seed: int) -> None:
        rng = random.Random(seed)
        start.wait()
        for _ in range(3000):
            i = rng.randrange(40)
            if rng.random() < 0.05:
                cache.discard(key(i))
            got = cache.get(key(i))
            assert got is None or (got == got.flat[0]).all()

    with ThreadPoolExecutor(8) as pool:
        futures = [pool.submit(writer, w) for w in range(4)]
        futures += [pool.submit(reader, 100 + r) for r in range(4)]
        for future in futures:
            future.result()
    assert cache.stats.bytes <= 8_000 and cache.stats.compressed_bytes <= compressed


# -- the process-wide cache ------------------------------------------------------------


def test_get_cache_follows_config() -> None:
    with config.set({"chunkflow.cache.max-bytes": 4000, "chunkflow.cache.compressed-bytes": 0}):
        cache = get_cache()
        for i in range(4):
            cache.put(key(i, path="get-cache-test"), chunk(1000))
        assert cache_info().max_bytes == 4000 and cache_info().bytes <= 4000
        with config.set({"chunkflow.cache.max-bytes": 2000,
                         "chunkflow.cache.compressed-bytes": 8000}):
            assert get_cache() is cache  # one cache, resized, never replaced
            assert cache.max_bytes == 2000 and cache.compressed_max_bytes == 8000
            assert cache_info().bytes <= 2000
        assert get_cache().max_bytes == 4000 and cache.compressed_max_bytes == 0
        cache.discard_array("mem://1", "get-cache-test")
    assert get_cache().max_bytes == config.get("chunkflow.cache.max-bytes")
