"""Chunks read wholly are cached from their second whole read on (cache/admission.py)."""

from __future__ import annotations

import threading
from pathlib import Path

import numpy as np
import pytest

import chunkflow
from chunkflow.cache import ChunkCache
from chunkflow.cache.admission import WholeReads
from chunkflow.storage import local as local_module


def test_a_location_is_admitted_on_its_second_whole_read() -> None:
    seen = WholeReads(limit=100)
    assert seen.first_reads(["a", "b"]) == {"a", "b"}
    assert seen.first_reads(["a", "b", "c"]) == {"c"}
    assert seen.first_reads(["a", "c"]) == set()  # still remembered once cached


def test_the_least_recently_read_are_forgotten_past_the_limit() -> None:
    seen = WholeReads(limit=3)
    seen.first_reads(["a", "b", "c"])
    seen.first_reads(["a"])  # read again: now the most recent
    seen.first_reads(["d"])  # pushes out "b", the least recently read
    assert seen.first_reads(["a", "c", "d"]) == set()
    assert seen.first_reads(["b"]) == {"b"}


def test_threads_record_each_location_once() -> None:
    seen = WholeReads()
    firsts: list[set[object]] = []
    lock = threading.Lock()

    def read() -> None:
        found = seen.first_reads([f"k{i}" for i in range(1000)])
        with lock:
            firsts.append(found)

    threads = [threading.Thread(target=read) for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    # Every location is a first read for exactly one of the threads.
    assert sum(len(f) for f in firsts) == 1000
    assert set().union(*firsts) == {f"k{i}" for i in range(1000)}


def _array(tmp_path: Path, cache: ChunkCache, **kwargs: object) -> chunkflow.Array:
    z = chunkflow.zeros((32, 32), chunks=(8, 8), dtype="i4", store=str(tmp_path / "a.zarr"),
                        cache=cache, **kwargs)
    z[:] = np.arange(32 * 32, dtype="i4").reshape(32, 32)
    return z


def test_a_scan_leaves_the_cache_empty_and_a_second_scan_fills_it(tmp_path: Path) -> None:
    cache = ChunkCache(1 << 20, scan_resistant=True)
    z = _array(tmp_path, cache)
    expected = np.arange(32 * 32, dtype="i4").reshape(32, 32)
    for i in range(0, 32, 8):  # chunk by chunk, each read wholly once
        for j in range(0, 32, 8):
            np.testing.assert_array_equal(z[i:i + 8, j:j + 8], expected[i:i + 8, j:j + 8])
    assert cache.stats.entries == 0
    np.testing.assert_array_equal(z[:], expected)  # each chunk's second whole read
    assert cache.stats.entries == 16
    hits = cache.stats.hits
    np.testing.assert_array_equal(z[:], expected)
    assert cache.stats.hits - hits == 16


def test_clear_forgets_which_chunks_were_read_wholly(tmp_path: Path) -> None:
    # After clear() the cache is as new: a scan again leaves it empty.
    cache = ChunkCache(1 << 20, scan_resistant=True)
    z = _array(tmp_path, cache)
    z[:]
    cache.clear()
    z[:]
    assert cache.stats.entries == 0
    z[:]
    assert cache.stats.entries == 16


def test_a_chunk_read_in_part_is_cached_at_once(tmp_path: Path) -> None:
    cache = ChunkCache(1 << 20, scan_resistant=True)
    z = _array(tmp_path, cache)
    z[1:5, 1:5]
    assert cache.stats.entries == 1


def test_a_returned_chunk_never_shares_memory_with_the_cache(tmp_path: Path) -> None:
    # The first whole read decodes straight into the caller's array, the second caches
    # a copy of its own: writing to either result must not reach the cache.
    cache = ChunkCache(1 << 20, scan_resistant=True)
    z = _array(tmp_path, cache)
    first = z[0:8, 0:8]
    second = z[0:8, 0:8]
    assert cache.stats.entries == 1
    first[:] = -1
    second[:] = -2
    np.testing.assert_array_equal(z[0:8, 0:8], np.arange(32 * 32).reshape(32, 32)[0:8, 0:8])


def test_inner_chunks_read_wholly_are_cached_from_their_second_read(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(local_module, "SETTLE_NS", -1)  # files have versions at once
    cache = ChunkCache(1 << 20, scan_resistant=True)
    z = chunkflow.create_array(str(tmp_path / "s.zarr"), shape=(32, 32), chunks=(8, 8),
                               shards=(16, 16), dtype="i4", cache=cache)
    expected = np.arange(32 * 32, dtype="i4").reshape(32, 32)
    z[:] = expected
    np.testing.assert_array_equal(z[0:8, 8:16], expected[0:8, 8:16])  # one inner chunk
    assert cache.stats.entries == 1  # the shard's index only
    np.testing.assert_array_equal(z[0:8, 8:16], expected[0:8, 8:16])
    assert cache.stats.entries == 2
    hits = cache.stats.hits
    np.testing.assert_array_equal(z[0:8, 8:16], expected[0:8, 8:16])
    assert cache.stats.hits > hits  # served by the cache from the third read
    np.testing.assert_array_equal(z[1:3, 17:19], expected[1:3, 17:19])  # in part: at once
    hits = cache.stats.hits
    z[1:3, 17:19]
    assert cache.stats.hits > hits



def test_a_cache_made_by_hand_keeps_whole_reads_at_once(tmp_path: Path) -> None:
    cache = ChunkCache(1 << 20)
    z = _array(tmp_path, cache)
    z[0:8, 0:8]
    assert cache.stats.entries == 1


def test_the_process_wide_cache_is_scan_resistant(tmp_path: Path) -> None:
    z = chunkflow.zeros((16, 16), chunks=(8, 8), dtype="u1", store=str(tmp_path / "p.zarr"))
    z[:] = 1
    with chunkflow.config.set({"chunkflow.cache.max-bytes": "1 MiB"}):
        chunkflow.get_cache().clear()
        z[:]
        assert chunkflow.cache_info().entries == 0
        z[:]
        assert chunkflow.cache_info().entries == 4
