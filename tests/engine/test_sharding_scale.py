"""Sharded arrays with very many inner chunks: opening costs nothing per inner chunk,
and shards are decoded with the index handled as a whole."""

from __future__ import annotations

import json
import tracemalloc

import numpy as np
import pytest

import chunkflow
from chunkflow.storage import MemoryStore


def _sharded_doc(shape: int, inner: int) -> dict:
    return {"zarr_format": 3, "node_type": "array", "shape": [shape, shape], "data_type": "uint8",
            "chunk_grid": {"name": "regular", "configuration": {"chunk_shape": [shape, shape]}},
            "chunk_key_encoding": {"name": "default"}, "fill_value": 0,
            "codecs": [{"name": "sharding_indexed", "configuration": {
                "chunk_shape": [inner, inner], "codecs": [{"name": "bytes"}],
                "index_codecs": [{"name": "bytes", "configuration": {"endian": "little"}},
                                 {"name": "crc32c"}]}}]}


def test_opening_16_million_inner_chunks_is_constant_cost() -> None:
    store = MemoryStore()
    store["zarr.json"] = json.dumps(_sharded_doc(4096, 1)).encode()  # 333-ish bytes
    tracemalloc.start()
    try:
        z = chunkflow.open(store, mode="r")
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 2**20, f"opening allocated {peak / 2**20:.0f} MiB"  # was 5.2 GB and 54 s
    assert z[:4, :4].sum() == 0  # the shard is missing: fill value


@pytest.mark.parametrize("fill_some", [False, True])
def test_small_inner_chunks_read_and_write_like_numpy(fill_some: bool) -> None:
    data = np.random.default_rng(0).integers(1, 255, (64, 64)).astype("u1")
    if fill_some:
        data[:16] = 0  # whole inner chunks of fill: not stored
    store = MemoryStore()
    store["zarr.json"] = json.dumps(_sharded_doc(64, 2)).encode()
    z = chunkflow.open(store, mode="a")
    z[:] = data
    np.testing.assert_array_equal(z[:], data)
    np.testing.assert_array_equal(z[10:14, 30:34], data[10:14, 30:34])
    stored = len(store["c/0/0"])
    expected_inner = int((data.reshape(32, 2, 32, 2) != 0).any(axis=(1, 3)).sum())
    assert stored == expected_inner * 4 + 32 * 32 * 16 + 4  # chunks + index + checksum


def test_zarr_python_reads_our_small_inner_chunks(tmp_path) -> None:
    zarr = pytest.importorskip("zarr")
    data = np.arange(64 * 64, dtype="u1").reshape(64, 64)
    z = chunkflow.create((64, 64), chunks=(64, 64), dtype="u1", store=str(tmp_path / "s.zarr"),
                         codecs=_sharded_doc(64, 2)["codecs"])
    z[:] = data
    np.testing.assert_array_equal(zarr.open_array(str(tmp_path / "s.zarr"), mode="r")[:], data)
