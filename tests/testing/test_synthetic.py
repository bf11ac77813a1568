"""The synthetic source and the checksum sink of the scale benchmark, against numpy,
scipy and zarr-python: values read equal the formula, a job's checksum equals that of
zarr-python's chunks of numpy's result."""

from __future__ import annotations

import pickle
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import scipy.ndimage as ndi
import zarr

import chunkflow
from chunkflow.errors import InvalidArgumentError, ReadOnlyError
from chunkflow.testing.sink import ChecksumStore, checksum
from chunkflow.testing.synthetic import SyntheticStore


def ramp(shape: tuple[int, ...], chunks: tuple[int, ...], dtype: str, period: int) -> np.ndarray:
    """The ramp formula over the whole array, written with numpy alone."""
    coords = np.indices(shape)
    grid = [-(-s // c) for s, c in zip(shape, chunks)]
    chunk_index = np.ravel_multi_index(tuple(i // c for i, c in zip(coords, chunks)), grid)
    inner = np.ravel_multi_index(tuple(i % c for i, c in zip(coords, chunks)), chunks)
    values = (chunk_index % period) * int(np.prod(chunks)) + inner
    return values.astype(dtype, casting="unsafe")


@pytest.mark.parametrize("zarr_format", [2, 3])
@pytest.mark.parametrize(("shape", "chunks", "dtype", "period"), [
    ((10, 13), (4, 5), "u2", 16),   # edge chunks on both axes
    ((9,), (2,), "u1", 3),
    ((6, 5, 7), (2, 3, 4), "u1", 7),  # wraps around 256
    ((40, 40), (8, 8), "f4", 5),
])
def test_ramp_reads_as_the_formula(shape: tuple[int, ...], chunks: tuple[int, ...],
                                   dtype: str, period: int, zarr_format: int) -> None:
    store = SyntheticStore(shape, chunks, dtype, period=period, zarr_format=zarr_format)
    expected = ramp(shape, chunks, dtype, period)
    z = chunkflow.open(store, mode="r")
    np.testing.assert_array_equal(z[:], expected)
    assert z.dtype == np.dtype(dtype) and z.chunks == chunks
    # zarr-python reads the same documents and chunk bytes
    theirs = zarr.open_array(zarr.storage.MemoryStore({k: _buffer(store[k]) for k in store}),
                             mode="r", zarr_format=zarr_format)
    np.testing.assert_array_equal(theirs[:], expected)


def _buffer(data: bytes) -> Any:
    return zarr.core.buffer.default_buffer_prototype().buffer.from_bytes(data)


def test_dots_label_as_scipy() -> None:
    shape, spacing = (50, 36), 6
    store = SyntheticStore(shape, (12, 12), "u1", pattern="dots", spacing=spacing, size=2)
    coords = np.indices(shape)
    expected = np.all(coords % spacing < 2, axis=0).astype("u1")
    np.testing.assert_array_equal(chunkflow.open(store, mode="r")[:], expected)
    _, count = ndi.label(expected)
    assert count == (-(-50 // spacing)) * (36 // spacing)
    sink = ChecksumStore()
    chunkflow.label(store, sink)
    assert chunkflow.open(sink, mode="r").attrs.asdict().get("chunkflow_job") is None


def test_the_store_refuses_writes_and_unknown_keys() -> None:
    store = SyntheticStore((4,), (2,), "u1")
    with pytest.raises(ReadOnlyError):
        store["c/0"] = b"xx"
    for key in ("c/2", "c/00", "c/0/0", "x"):
        assert key not in store
        with pytest.raises(KeyError):
            store[key]
    assert sorted(store) == ["c/0", "c/1", "zarr.json"]
    with pytest.raises(InvalidArgumentError, match="pattern"):
        SyntheticStore((4,), (2,), pattern="noise")
    big = SyntheticStore((100, 70), (16, 16), "u2")
    assert big.getsize_prefix("") == sum(len(big[k]) for k in big)
    assert big.getsize_prefix("c/1") == sum(len(big[k]) for k in big if k.startswith("c/1/"))
    clone = pickle.loads(pickle.dumps(store))
    assert clone == store and clone["c/1"] == store["c/1"]


def _zarr_chunks(folder: Path) -> dict[str, bytes]:
    root = folder / "c"
    return {path.relative_to(folder).as_posix(): path.read_bytes()
            for path in root.rglob("*") if path.is_file()}


def _double(x: np.ndarray) -> np.ndarray:
    return (x * 2).astype("u2")


@pytest.mark.parametrize("scheduler", ["threads", "cluster"])
def test_map_chunks_checksum_is_numpys(tmp_path: Path, scheduler: str,
                                       request: pytest.FixtureRequest) -> None:
    shape, chunks = (100, 70), (16, 16)
    source = SyntheticStore(shape, chunks, "u2", period=5)
    expected = _double(ramp(shape, chunks, "u2", 5))
    theirs = zarr.create_array(tmp_path / "expected.zarr", shape=shape, chunks=chunks,
                               dtype="u2", compressors=None, fill_value=0)
    theirs[:] = expected
    client = request.getfixturevalue("cluster_client") if scheduler == "cluster" else None
    sink = ChecksumStore()
    chunkflow.map_chunks(_double, source, out=sink, dtype="u2",
                         scheduler=client or scheduler)
    tally = sink.collect(client)
    wanted = _zarr_chunks(tmp_path / "expected.zarr")
    assert tally.chunks == len(wanted) == 7 * 5
    assert tally.bytes == sum(map(len, wanted.values()))
    assert tally.checksum == checksum(wanted)
    assert tally.records >= 1 and tally.misses == 0
    sink.reset(client)
    assert sink.collect(client).chunks == 0


def test_sink_keeps_documents_and_the_arrays_asked() -> None:
    sink = ChecksumStore(keep=["1"])
    values = np.arange(64, dtype="u1").reshape(8, 8)
    for path in ("0", "1"):
        chunkflow.create((8, 8), chunks=(4, 4), dtype="u1", store=sink, path=path,
                         compressor=None)[:] = values
    assert chunkflow.open(sink, path="0", mode="r")[:].sum() == 0  # discarded: fill value
    np.testing.assert_array_equal(chunkflow.open(sink, path="1", mode="r")[:], values)
    tally = sink.collect()
    assert (tally.chunks, tally.bytes) == (4, 64) and tally.misses == 4
    assert sorted(sink.list_prefix("0")) == ["0/zarr.json"]
