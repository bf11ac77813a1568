"""Windows of a sharded array whose inner chunks are large enough to be read and
decoded by two threads (each thread reads the bytes it decodes): numpy's values,
with and without a cache, inner chunks missing, across shard edges."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

import chunkflow
from chunkflow.cache import ChunkCache
from chunkflow.codecs.blosc_blocks import blocks_frame
from chunkflow.engine.pool import PARALLEL_MIN_CHUNK_BYTES

INNER = (64, 64, 32)  # 256 KiB of uint16: decoded in the I/O pool
SHARD = (128, 128, 64)
SHAPE = (200, 256, 128)  # edge shards cut short along the first axis
# Blocks of 16 KiB: a window reading part of an inner chunk decodes only its blocks.
BLOSC_BLOCKS = {"name": "blosc", "configuration": {"cname": "lz4", "clevel": 5,
                                                   "shuffle": "shuffle", "typesize": 2,
                                                   "blocksize": 16384}}


@pytest.fixture(scope="module")
def volume(tmp_path_factory: pytest.TempPathFactory) -> tuple[str, np.ndarray]:
    assert np.prod(INNER) * 2 >= PARALLEL_MIN_CHUNK_BYTES
    rng = np.random.default_rng(5)
    data = rng.integers(0, 40, SHAPE, dtype="u2").cumsum(axis=2, dtype="u2")
    data[:64, :64, :32] = 0  # an inner chunk of the fill value: not stored
    path = str(tmp_path_factory.mktemp("vol") / "v.zarr")
    z = chunkflow.create_array(path, shape=SHAPE, chunks=INNER, shards=SHARD, dtype="u2",
                               fill_value=0, cache=False, compressors=BLOSC_BLOCKS)
    z[...] = data
    return path, data


def _windows(count: int) -> list[tuple[slice, ...]]:
    rng = np.random.default_rng(6)
    found = []
    for _ in range(count):
        size = rng.integers(1, 90, 3)
        start = [int(rng.integers(0, n - s + 1)) for n, s in zip(SHAPE, size)]
        found.append(tuple(slice(a, a + int(s)) for a, s in zip(start, size)))
    return found


@pytest.mark.parametrize("cache", ["off", "default", "private"])
def test_windows_equal_numpy(volume: tuple[str, np.ndarray], cache: str,
                             monkeypatch: pytest.MonkeyPatch) -> None:
    from chunkflow.codecs import pipeline_v3

    cut = []

    def counted(*args: object) -> object:
        found = blocks_frame(*args)  # type: ignore[arg-type]  # passed through
        cut.append(found is not None)
        return found

    monkeypatch.setattr(pipeline_v3, "blocks_frame", counted)
    path, data = volume
    option = {"off": False, "default": None, "private": ChunkCache(1 << 26)}[cache]
    z = chunkflow.open_array(path, mode="r", cache=option)
    for _ in range(2):  # the second time from the cache, where there is one
        for window in _windows(12):
            np.testing.assert_array_equal(z[window], data[window], err_msg=str(window))
    # Without a cache, inner chunks read in part are decoded by their blocks; a
    # cache keeps whole inner chunks.
    assert any(cut) if cache == "off" else not any(cut)


def test_a_window_of_missing_inner_chunks_is_the_fill_value(volume: tuple[str, np.ndarray]) -> None:
    path, data = volume
    z = chunkflow.open_array(path, mode="r", cache=False)
    window = (slice(10, 70), slice(0, 64), slice(5, 40))  # the missing one and others
    np.testing.assert_array_equal(z[window], data[window])
    assert not z[:64, :64, :32].any()


def test_a_replaced_shard_is_read_afresh(tmp_path: Path) -> None:
    path = str(tmp_path / "r.zarr")
    first = np.full(SHARD, 3, "u2")
    z = chunkflow.create_array(path, shape=SHARD, chunks=INNER, shards=SHARD, dtype="u2",
                               cache=False)
    z[...] = first
    reader = chunkflow.open_array(path, mode="r", cache=False)
    window = (slice(30, 100), slice(20, 90), slice(10, 50))
    np.testing.assert_array_equal(reader[window], first[window])
    second = np.arange(np.prod(SHARD), dtype="u2").reshape(SHARD)
    z[...] = second
    np.testing.assert_array_equal(reader[window], second[window])


def test_windows_through_a_url_with_storage_options(volume: tuple[str, np.ndarray]) -> None:
    path, data = volume
    z = chunkflow.open_array(f"file://{path}", mode="r", storage_options={"auto_mkdir": True})
    for window in _windows(6):
        np.testing.assert_array_equal(z[window], data[window], err_msg=str(window))
    assert not z._io.store.latency_bound  # an fsspec store: read by the overlapped path
