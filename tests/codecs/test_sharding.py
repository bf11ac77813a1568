"""The sharding_indexed codec: shards of inner chunks with an index (Zarr v3)."""

from __future__ import annotations

import json
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import chunkflow
from chunkflow.codecs.pipeline_v3 import v3_pipeline
from chunkflow.codecs.sharding import ShardingCodec
from chunkflow.errors import ChunkDecodeError, UnsupportedCodecError

pytestmark = pytest.mark.lowest_deps  # also run at the lowest dependency versions

BYTES = {"name": "bytes", "configuration": {"endian": "little"}}
CRC = {"name": "crc32c"}


def sharding(inner: list[int], codecs: list[Any] | None = None, **config: Any) -> dict[str, Any]:
    return {"name": "sharding_indexed", "configuration": {
        "chunk_shape": inner, "codecs": codecs or [BYTES], **config}}


def test_stored_inner_chunks_and_missing_ones_read_as_fill() -> None:
    p = v3_pipeline("<i4", (4, 6), [sharding([2, 3])], fill_value=np.int32(-1))
    shard = np.full((4, 6), -1, dtype="<i4")
    shard[0:2, 3:6] = np.arange(6).reshape(2, 3)  # one of four inner chunks
    encoded = bytes(p.encode(shard))
    assert len(encoded) == 6 * 4 + (4 * 16 + 4)  # one inner chunk + the index with crc32c
    np.testing.assert_array_equal(p.decode(encoded), shard)


@pytest.mark.parametrize(("dtype", "fill"), [("<i4", 0), ("<f4", np.nan), ("<u2", 7)])
@pytest.mark.parametrize("codecs", [None, [BYTES, {"name": "zstd", "configuration": {"level": 1}}]])
def test_large_inner_chunks_staged_one_by_one(dtype: str, fill: Any, codecs: Any) -> None:
    # Inner chunks of 64 KiB and more go through a reused buffer (sharding.encode):
    # raw inner chunks must not share it, and all-fill ones must be left out.
    p = v3_pipeline(dtype, (256, 256), [sharding([128, 128], codecs)],
                    fill_value=np.dtype(dtype).type(fill))
    shard = np.arange(256 * 256).reshape(256, 256).astype(dtype)
    shard[0:128, 128:256] = fill  # inner chunk 1: all fill, not stored
    shard[128, 128] = fill  # one fill element: stored
    encoded = bytes(p.encode(shard))
    offsets = np.frombuffer(encoded[-(4 * 16 + 4):-4], "<u8").reshape(4, 2)
    assert offsets[1].tolist() == [2**64 - 1, 2**64 - 1]
    assert (offsets[[0, 2, 3], 1] < 2**63).all()
    np.testing.assert_array_equal(p.decode(encoded), shard)


@pytest.mark.parametrize("location", ["start", "end"])
def test_index_location(location: str) -> None:
    p = v3_pipeline("<u2", (4,), [sharding([2], index_location=location)],
                    fill_value=np.uint16(0))
    encoded = bytes(p.encode(np.array([1, 2, 0, 0], dtype="<u2")))
    index = encoded[:36] if location == "start" else encoded[-36:]
    offsets = np.frombuffer(index[:32], dtype="<u8").reshape(2, 2)
    assert offsets[0].tolist() == [36 if location == "start" else 0, 4]
    assert offsets[1].tolist() == [2**64 - 1, 2**64 - 1]
    np.testing.assert_array_equal(p.decode(encoded), [1, 2, 0, 0])


def test_nested_sharding_round_trips() -> None:
    inner = sharding([2, 2], [BYTES, {"name": "zstd", "configuration": {"level": 1}}])
    p = v3_pipeline("<f8", (8, 8), [sharding([4, 4], [inner])], fill_value=np.float64(0))
    shard = np.random.default_rng(0).random((8, 8))
    np.testing.assert_array_equal(p.decode(p.encode(shard)), shard)


@settings(max_examples=40, deadline=None)
@given(data=st.data())
def test_sharded_arrays_read_and_write_like_numpy(data: st.DataObject) -> None:
    ndim = data.draw(st.integers(1, 3))
    inner = [data.draw(st.integers(1, 3)) for _ in range(ndim)]
    shards = [n * data.draw(st.integers(1, 3)) for n in inner]
    shape = tuple(data.draw(st.integers(0, 12)) for _ in range(ndim))
    z = chunkflow.create(shape, chunks=shards, dtype="i2", fill_value=-5,
                         codecs=[sharding(inner, [BYTES, CRC])])
    expected = np.full(shape, -5, dtype="i2")
    for _ in range(3):
        region = []
        for n in shape:
            start = data.draw(st.integers(0, n))
            region.append(slice(start, data.draw(st.integers(start, n))))
        value = data.draw(st.integers(-5, 100))
        z[tuple(region)] = value
        expected[tuple(region)] = value
        np.testing.assert_array_equal(z[...], expected)
    reopened = chunkflow.open_array(z.store, mode="r", cache=False)
    np.testing.assert_array_equal(reopened[...], expected)


def test_corrupt_index_names_the_array_and_shard() -> None:
    z = chunkflow.zeros((4, 4), chunks=(4, 4), dtype="u1", path="img",
                        codecs=[sharding([2, 2], [BYTES], index_codecs=[{"name": "bytes"}, CRC])])
    z[:] = 1
    shard = bytearray(z.store["img/c/0/0"])
    shard[-1] ^= 0xFF  # break the index checksum
    z.store["img/c/0/0"] = bytes(shard)
    fresh = chunkflow.open_array(z.store, path="img", mode="r", cache=False)
    with pytest.raises(ChunkDecodeError, match=r"array 'img': shard 'img/c/0/0'.*crc32c"):
        fresh[:]


def test_truncated_shard_and_out_of_range_offsets() -> None:
    p = v3_pipeline("u1", (4,), [sharding([2], index_codecs=[BYTES])], fill_value=np.uint8(0))
    encoded = bytearray(p.encode(np.array([1, 2, 3, 4], dtype="u1")))
    with pytest.raises(ChunkDecodeError, match="shorter than its index"):
        p.decode(bytes(encoded[:10]))
    encoded[-24:-16] = (1000).to_bytes(8, "little")  # first inner chunk: 1000 bytes long
    with pytest.raises(ChunkDecodeError, match="shard index points at bytes 0..1000 of a 36-byte"):
        p.decode(bytes(encoded))


@pytest.mark.parametrize(
    ("codec", "needle"),
    [
        (sharding([3, 2]), "must divide the shard shape"),
        (sharding([0, 2]), "chunk_shape must be a list of integers >= 1"),
        (sharding([2, 2], index_location="middle"), "index_location"),
        ({"name": "sharding_indexed", "configuration": {"chunk_shape": [2, 2]}}, "must be lists"),
        (sharding([2, 2], extra=1), "unknown configuration keys"),
        (sharding([2, 2], [{"name": "lzw"}]), "unknown v3 codec 'lzw'"),
    ],
)
def test_bad_sharding_configurations_are_refused(codec: dict[str, Any], needle: str) -> None:
    with pytest.raises(UnsupportedCodecError, match=needle):
        chunkflow.create((8, 8), chunks=(4, 4), dtype="u1", codecs=[codec])


def test_codec_documents_are_completed_like_top_level_ones() -> None:
    z = chunkflow.create((8,), chunks=(4,), dtype="<u2", codecs=[sharding(
        [2], [{"name": "blosc", "configuration": {"cname": "lz4", "clevel": 5,
                                                 "shuffle": "shuffle"}}])])
    doc = json.loads(z.store["zarr.json"])["codecs"][0]["configuration"]
    assert doc["codecs"][0] == BYTES  # the serializer was added
    assert doc["codecs"][1]["configuration"]["typesize"] == 2
    assert doc["index_codecs"] == [BYTES, CRC] and doc["index_location"] == "end"
    assert ShardingCodec.from_json({"name": "sharding_indexed", "configuration": doc}).to_json() \
        == {"name": "sharding_indexed", "configuration": doc}


def test_sharding_is_refused_as_a_v2_compressor() -> None:
    with pytest.raises(UnsupportedCodecError, match="only in Zarr v3"):
        chunkflow.create((8,), chunks=4, zarr_format=2, compressor=sharding([2]))
