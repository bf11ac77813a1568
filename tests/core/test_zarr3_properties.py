"""zarr-python 3's array properties: ``chunks`` (inner), ``shards``, the codec stages, the
chunk and shard counts and ``.info``, compared with what zarr-python 3 reports for the same
stored array; and writes through the graph land on whole shards."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import dask
import dask.array as da
import numcodecs
import numpy as np
import pytest

import chunkflow
from chunkflow.testing import CountingMapping, CountingStore, Counts

CALLS: list[dict[str, Any]] = [
    dict(shape=(20, 30), chunks=(4, 6), dtype="u2"),
    dict(shape=(20, 30), chunks=(2, 3), shards=(4, 6), dtype="f4"),
    dict(shape=(20, 30), chunks=(5, 5), shards=(10, 15), dtype="i4", fill_value=7,
         filters=[{"name": "transpose", "configuration": {"order": [1, 0]}}],
         compressors=[{"name": "gzip", "configuration": {"level": 1}}, {"name": "crc32c"}]),
    dict(shape=(13,), chunks=(4,), dtype="i2", compressors=None,
         serializer={"name": "bytes", "configuration": {"endian": "big"}}),
    dict(shape=(20, 30), chunks=(4, 6), dtype="i4", zarr_format=2),
    dict(shape=(20, 30), chunks=(4, 6), dtype="<f8", zarr_format=2, order="F",
         filters=[{"id": "delta", "dtype": "<f8"}], compressors={"id": "zlib", "level": 1}),
]


def _as_json(codecs: Any) -> Any:
    """zarr-python's codec objects as the documents chunkflow reports for v3 (through
    JSON: zarr-python's ``to_dict`` holds tuples where the document has lists)."""
    if codecs is None:
        return None
    if hasattr(codecs, "to_dict"):
        return json.loads(json.dumps(codecs.to_dict()))
    return tuple(json.loads(json.dumps(c.to_dict())) for c in codecs)


@pytest.mark.parametrize("call", CALLS, ids=lambda c: ",".join(f"{k}" for k in sorted(c)))
def test_properties_match_zarr_python(call: dict[str, Any], tmp_path: Path) -> None:
    zarr = pytest.importorskip("zarr")
    path = str(tmp_path / "a.zarr")
    z = chunkflow.create_array(path, **call)
    data = np.arange(np.prod(call["shape"])).reshape(call["shape"]).astype(call["dtype"])
    z[: call["shape"][0] // 2 + 1] = data[: call["shape"][0] // 2 + 1]  # some shards only
    theirs = zarr.open_array(path, mode="r")
    for name in ("shape", "chunks", "shards", "order", "cdata_shape", "nchunks",
                 "nchunks_initialized"):
        assert getattr(z, name) == getattr(theirs, name), name
    assert z.nshards == theirs._nshards
    assert z.nshards_initialized == theirs._nshards_initialized
    assert z.fill_value == theirs.fill_value
    assert dict(z.attrs) == dict(theirs.attrs)
    if z.zarr_format == 3:
        assert z.filters == _as_json(theirs.filters)
        assert z.serializer == _as_json(theirs.serializer)
        assert z.compressors == _as_json(theirs.compressors)
    else:  # numcodecs codecs on both sides
        assert z.filters == theirs.filters and z.compressors == theirs.compressors
        assert z.serializer is None and theirs.serializer is None
    assert z.metadata.to_dict()["shape"] == list(theirs.metadata.to_dict()["shape"])


def test_sharded_array_names_inner_chunks_and_shards() -> None:
    z = chunkflow.create_array(None, shape=(10, 12), chunks=(2, 3), shards=(4, 6), dtype="u1")
    assert (z.chunks, z.shards, z.write_chunks) == ((2, 3), (4, 6), (4, 6))
    assert z.metadata.chunks == (4, 6)  # the document's regular grid is the shard grid
    assert (z.cdata_shape, z.nchunks, z.nshards) == ((5, 4), 20, 6)
    assert z.compressor == numcodecs.Zstd(level=0)  # the inner chunks' compressor
    z[:4, :6] = 1  # one whole shard
    assert (z.nshards_initialized, z.nchunks_initialized) == (1, 4)
    plain = chunkflow.zeros((10, 12), chunks=(4, 6), dtype="u1", zarr_format=2)
    assert (plain.chunks, plain.shards, plain.write_chunks) == ((4, 6), None, (4, 6))
    assert plain.filters == () and plain.serializer is None
    assert plain.compressors == (plain.compressor,)


def test_info_lists_shards_chunks_and_stages_separately() -> None:
    z = chunkflow.create_array(None, shape=(20,), chunks=(2,), shards=(10,), dtype="i4",
                               fill_value=3,
                               filters={"name": "transpose", "configuration": {"order": [0]}})
    rows = z.info.as_dict()
    assert rows["Fill value"] == "3"
    assert rows["Shard shape"] == "(10,)" and rows["Chunk shape"] == "(2,)"
    assert rows["Filters"] == "(transpose(order=[0]),)"
    assert rows["Serializer"] == "bytes(endian='little')"
    assert rows["Compressors"] == "(zstd(level=0, checksum=False),)"
    assert rows["Store URL"] == str(z.store.identity)
    assert rows["Shards Initialized"] == "0/2"  # memory is cheap to list: zarr 2's rows
    z[:12] = 5
    complete = z.info_complete().as_dict()
    assert complete["Shards Initialized"] == "2/2"
    assert int(complete["No. bytes stored"].split()[0]) == z.nbytes_stored > 0
    v2 = chunkflow.create_array(None, shape=(4,), chunks=(2,), dtype="u1", zarr_format=2)
    rows = v2.info_complete().as_dict()
    assert "Serializer" not in rows and "Shard shape" not in rows
    assert rows["Compressors"] == "(Zstd(level=0),)" and rows["Chunks Initialized"] == "0/2"


def _sharded(mapping: CountingMapping) -> chunkflow.Array:
    return chunkflow.create_array(mapping, shape=(48, 60), chunks=(4, 5), shards=(16, 20),
                                  dtype="i4")


def test_store_into_sharded_array_writes_each_shard_once() -> None:
    # Source blocks (7x9) line up with neither inner chunks nor shards: chunkflow.store
    # regroups them onto shards, so no shard is written twice (no read-modify-write race).
    data = np.arange(48 * 60, dtype="i4").reshape(48, 60)
    mapping = CountingMapping()
    z = _sharded(mapping)
    with dask.config.set(scheduler="threads", num_workers=4):
        chunkflow.store(da.from_array(data, chunks=(7, 9)), z)
    np.testing.assert_array_equal(z[:], data)
    writes = mapping.chunk_writes()
    assert len(writes) == z.nshards == 9 and set(writes.values()) == {1}, writes


def test_map_chunks_into_sharded_array_writes_whole_shards_once() -> None:
    data = np.arange(48 * 60, dtype="i4").reshape(48, 60)
    source = chunkflow.create_array(None, data=data, chunks=(4, 5), shards=(16, 20))
    mapping = CountingMapping()
    out = _sharded(mapping)
    # chunks="chunk": one stored object per block, so many tasks write into the output.
    chunkflow.map_chunks(lambda block: block + 1, source, out=out, depth=1, blocks="chunk",
                         scheduler="threads")
    np.testing.assert_array_equal(out[:], data + 1)
    writes = mapping.chunk_writes()
    assert len(writes) == out.nshards and set(writes.values()) == {1}, writes


def test_dask_blocks_of_a_sharded_array_fall_on_shard_edges() -> None:
    z = chunkflow.create_array(None, shape=(48, 60), chunks=(4, 5), shards=(16, 20), dtype="u1")
    x = chunkflow.to_dask(z, blocks=(1, 1))  # one stored object per block, not one chunk
    assert x.chunks == ((16, 16, 16), (20, 20, 20))


def test_like_and_from_array_keep_the_shard_layout() -> None:
    z = chunkflow.create_array(None, shape=(16, 20), chunks=(4, 5), shards=(8, 10), dtype="u2")
    z[:] = 3
    like = chunkflow.zeros_like(z)
    assert (like.chunks, like.shards) == ((4, 5), (8, 10))
    copied = chunkflow.from_array(None, data=z)  # zarr-python's chunks="keep", shards="keep"
    assert (copied.chunks, copied.shards) == ((4, 5), (8, 10)) and int(copied[:].sum()) == 960
    assert list(iter(z))[15].tolist() == [3] * 20  # iteration reads a shard of rows at a time


def test_info_reads_nothing_where_listing_costs_requests() -> None:
    """On object storage ``.info`` lists nothing; ``info_complete()`` counts."""
    counts = Counts()
    store = CountingStore(chunkflow.storage.make_store("memory://info-no-listing"), counts)
    z = chunkflow.create_array(store, shape=(8,), chunks=(2,), dtype="u1")
    z[:3] = 1
    assert not store.listing_is_cheap
    counts.reset()
    rows = z.info.as_dict()
    assert not counts.calls  # no request, no listing
    assert "No. bytes stored" not in rows and "Chunks Initialized" not in rows
    assert z.info_complete()["Chunks Initialized"] == "2/4"
