"""The cache-hit path of a window read again: the same values as numpy, the recheck
policy applied to every hit, and chunk keys derived for one handle only."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

import chunkflow
from chunkflow.cache import ChunkCache
from chunkflow.engine.freshness import _keys_of
from chunkflow.indexing.plans import BasicPlans
from chunkflow.storage import local as local_module

WINDOW = (slice(12, 28), slice(4, 20))  # across 4 chunks of 16x16


def test_a_window_read_again_sees_a_write_through_another_handle(tmp_path: Path) -> None:
    data = np.arange(64 * 64, dtype="u2").reshape(64, 64)
    path = str(tmp_path / "a.zarr")
    chunkflow.array(data, chunks=(16, 16), store=path)
    reader = chunkflow.open(path, mode="r")
    for _ in range(3):  # a miss, then hits through the kept plan
        np.testing.assert_array_equal(reader[WINDOW], data[WINDOW])
    writer = chunkflow.open(path, mode="r+")
    writer[14:16, 6:18] = 7
    data[14:16, 6:18] = 7
    for _ in range(2):
        np.testing.assert_array_equal(reader[WINDOW], data[WINDOW])


def test_every_hit_is_rechecked_when_the_policy_says_so(tmp_path: Path,
                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(local_module, "SETTLE_NS", -1)  # files have versions at once
    data = np.arange(64 * 64, dtype="i4").reshape(64, 64)
    path = str(tmp_path / "a.zarr")
    chunkflow.array(data, chunks=(16, 16), store=path)
    cache = ChunkCache(1 << 22)
    z = chunkflow.open(path, mode="r", cache=cache, recheck_cached_data=True)
    z[WINDOW]
    before = cache.stats
    np.testing.assert_array_equal(z[WINDOW], data[WINDOW])
    after = cache.stats
    assert after.hits - before.hits == 4
    assert after.rechecks - before.rechecks == 4  # all four hits compared with the store
    never = chunkflow.open(path, mode="r", cache=cache, recheck_cached_data=False)
    never[WINDOW]
    assert cache.stats.rechecks == after.rechecks


def test_a_chunk_of_another_shape_in_the_cache_is_never_served() -> None:
    data = np.arange(32 * 32, dtype="u1").reshape(32, 32)
    cache = ChunkCache(1 << 20)
    z = chunkflow.array(data, chunks=(16, 16), cache=cache)
    window = (slice(8, 24), slice(8, 24))
    np.testing.assert_array_equal(z[window], data[window])
    # A leftover of an array replaced behind this process's back: other chunk shape.
    location = z._io.keys((1, 1))[1]
    cache.put(location, np.zeros((8, 8), dtype="u1"))
    np.testing.assert_array_equal(z[window], data[window])


def test_derived_keys_belong_to_one_handle() -> None:
    a = chunkflow.zeros((64, 64), chunks=(16, 16), dtype="u1", store={})
    b = chunkflow.zeros((64, 64), chunks=(16, 16), dtype="u1", store={})
    projections = BasicPlans().get(WINDOW, a._io.grid)[1]
    keys_a = _keys_of(a._io, projections)
    assert _keys_of(a._io, projections)[1] is keys_a[1]  # derived once
    keys_b = _keys_of(b._io, projections)
    assert keys_b[1] != keys_a[1]  # another store: other locations
    assert keys_b[1] == [b._io.keys(p.chunk_coords)[1] for p in projections]
