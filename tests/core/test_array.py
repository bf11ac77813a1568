"""The Array API: creation functions, modes, properties, resize/append, copies."""

from __future__ import annotations

import pickle

import numcodecs
import numpy as np
import pytest
import zict

import chunkflow
from chunkflow.errors import (
    ArrayNotFoundError,
    ContainsArrayError,
    NodeNotFoundError,
    ReadOnlyError,
)
from chunkflow.storage import LocalStore, MemoryStore

pytestmark = pytest.mark.lowest_deps  # also run at the lowest dependency versions


@pytest.mark.parametrize("zarr_format", [2, 3])
def test_creation_functions(zarr_format: int) -> None:
    kw = {"zarr_format": zarr_format, "chunks": (3, 3)}
    assert (chunkflow.zeros((5, 5), **kw)[:] == 0).all()
    assert (chunkflow.ones((5, 5), **kw)[:] == 1).all()
    assert chunkflow.empty((5, 5), **kw).shape == (5, 5)
    assert np.isnan(chunkflow.full((5, 5), np.nan, **kw)[:]).all()
    data = np.arange(25, dtype="i8").reshape(5, 5)
    z = chunkflow.array(data, **kw)
    np.testing.assert_array_equal(z[:], data)
    for like, value in [(chunkflow.zeros_like, 0), (chunkflow.ones_like, 1)]:
        other = like(z)
        assert (other.shape, other.chunks, other.dtype) == (z.shape, z.chunks, z.dtype)
        assert other.zarr_format == zarr_format
        assert (other[:] == value).all()
    assert (chunkflow.full_like(z, 9)[:] == 9).all()
    assert chunkflow.empty_like(data).shape == (5, 5)


def test_open_like_and_default_chunks(tmp_path) -> None:
    z = chunkflow.zeros((4096, 4096), dtype="u2")
    assert 2**20 <= np.prod(z.chunks) * 2 <= 2**26  # about 1 MiB and up
    assert chunkflow.zeros((10, 20), chunks=(None, 5)).chunks == (10, 5)
    other = chunkflow.open_like(z, str(tmp_path / "like.zarr"))
    assert (other.shape, other.chunks, other.dtype) == (z.shape, z.chunks, z.dtype)


def test_modes(tmp_path) -> None:
    path = str(tmp_path / "a.zarr")
    with pytest.raises(NodeNotFoundError):  # open() looks for an array or a group
        chunkflow.open(path, mode="r")
    with pytest.raises(ArrayNotFoundError):
        chunkflow.open_array(path, mode="r+")
    z = chunkflow.open(path, mode="w-", shape=(4,), chunks=(2,), dtype="i2")
    z[:] = [1, 2, 3, 4]
    with pytest.raises(ContainsArrayError):
        chunkflow.open(path, mode="w-", shape=(4,), dtype="i2")
    assert chunkflow.open(path, mode="a")[3] == 4
    ro = chunkflow.open(path, mode="r")
    with pytest.raises(ReadOnlyError):
        ro[0] = 100
    with pytest.raises(ReadOnlyError):
        ro.attrs["x"] = 1
    with pytest.raises(ReadOnlyError):
        ro.resize(10)
    np.testing.assert_array_equal(ro[:], [1, 2, 3, 4])
    chunkflow.open(path, mode="r+")[0] = 10
    assert chunkflow.open(path, mode="r")[0] == 10
    z = chunkflow.open(path, mode="w", shape=(2,), dtype="f4")
    assert z.shape == (2,) and (z[:] == 0).all()


@pytest.mark.parametrize(
    "store",
    [None, "dict", "memory://chunkflow-test-api", "zict-zip"],
)
def test_store_kinds(store, tmp_path) -> None:
    if store == "dict":
        store = {}
    elif store == "zict-zip":
        store = zict.Zip(str(tmp_path / "z.zip"), mode="a")
    z = chunkflow.zeros((6, 6), chunks=(3, 3), dtype="i4", store=store, path="x",
                        overwrite=True)
    z[1:5, 1:5] = 3
    again = chunkflow.Array(z.store, "x")
    np.testing.assert_array_equal(again[:], z[:])
    assert int(again[:].sum()) == 48


def test_reopen_from_store_alone(tmp_path) -> None:
    path = tmp_path / "b.zarr"
    chunkflow.array(np.arange(10), chunks=3, store=str(path))
    np.testing.assert_array_equal(chunkflow.Array(str(path))[:], np.arange(10))
    np.testing.assert_array_equal(chunkflow.open(LocalStore(path))[:], np.arange(10))


def test_numpy_protocols() -> None:
    data = np.random.default_rng(0).random((7, 9))
    z = chunkflow.array(data, chunks=(2, 4))
    np.testing.assert_array_equal(np.asarray(z), data)
    assert np.mean(z) == pytest.approx(data.mean())
    assert len(z) == 7
    np.testing.assert_array_equal(np.array(list(z)), data)
    assert z[3, 4] == data[3, 4] and np.isscalar(z[3, 4])
    assert z[...].shape == (7, 9)


def test_zero_d_and_zero_length() -> None:
    z = chunkflow.full((), 5.0)
    assert z[()] == 5.0 and z[...].shape == ()
    z[...] = 7
    assert z[()] == 7
    e = chunkflow.zeros((0, 5), dtype="i2")
    assert e[:].shape == (0, 5) and e.chunks[0] >= 1


def test_properties_and_info(tmp_path) -> None:
    z = chunkflow.zeros((100, 100), chunks=(30, 40), dtype="u2", store=str(tmp_path / "i.zarr"),
                        attributes={"unit": "nm"})
    z[:50, :50] = 1
    assert z.nchunks == 12 and z.cdata_shape == (4, 3)
    assert z.nchunks_initialized == 4
    assert z.nbytes == 20000 and 0 < z.nbytes_stored < 20000
    assert z.attrs["unit"] == "nm"
    assert isinstance(z.compressor, numcodecs.Blosc)
    info = z.info
    labels = ["Type", "Name", "Zarr format", "Data type", "Fill value", "Shape", "Chunk shape",
              "Order", "Read-only", "Store type", "Store URL", "Filters", "Serializer",
              "Compressors", "No. bytes"]
    stored_rows = ["No. bytes stored", "Storage ratio", "Chunks Initialized"]
    # A folder is cheap to list, so .info shows zarr-python 2's stored rows, as its
    # tutorial does; info_complete() shows them everywhere.
    assert [label for label, _ in info.rows] == labels + stored_rows
    assert info["Chunks Initialized"] == "4/12"
    assert int(info["No. bytes stored"].split()[0]) == z.nbytes_stored
    assert float(info["Storage ratio"]) == round(z.nbytes / z.nbytes_stored, 1)
    complete = z.info_complete()
    assert [label for label, _ in complete.rows] == labels + stored_rows
    assert complete["Chunks Initialized"] == "4/12"
    assert complete["Store URL"] == str(z.store.identity) and "i.zarr" in complete["Store URL"]
    assert "<table" in info._repr_html_()
    assert "shape=(100, 100)" in repr(z)


def test_attrs_persist(tmp_path) -> None:
    for zarr_format in (2, 3):
        path = str(tmp_path / f"attrs{zarr_format}.zarr")
        z = chunkflow.zeros(3, store=path, zarr_format=zarr_format)
        z.attrs["a"] = 1
        z.attrs.update({"b": [1, 2], "c": {"d": "e"}})
        del z.attrs["a"]
        assert dict(chunkflow.open(path, mode="r").attrs) == {"b": [1, 2], "c": {"d": "e"}}
        with pytest.raises(ValueError):
            z.attrs["bad"] = object()
        assert "bad" not in chunkflow.open(path, mode="r").attrs


@pytest.mark.parametrize("zarr_format", [2, 3])
def test_resize_and_append(zarr_format: int) -> None:
    z = chunkflow.array(np.arange(20).reshape(4, 5), chunks=(2, 2), zarr_format=zarr_format)
    z.resize(3, 3)
    np.testing.assert_array_equal(z[:], np.arange(20).reshape(4, 5)[:3, :3])
    assert z.nchunks_initialized == 4
    z.resize((5, 6))
    expected = np.zeros((5, 6), dtype=z.dtype)
    expected[:3, :3] = np.arange(20).reshape(4, 5)[:3, :3]
    np.testing.assert_array_equal(z[:], expected)
    assert z.append(np.ones((2, 6), dtype=z.dtype)) == (7, 6)
    assert z.append(np.full((7, 1), 5), axis=1) == (7, 7)
    assert (z[5:, :6] == 1).all() and (z[:, 6] == 5).all()
    with pytest.raises(ValueError):
        z.append(np.ones((2, 3)))
    assert z.shape == (7, 7)
    assert chunkflow.Array(z.store).shape == (7, 7)


def test_copy_from_array_source_chunk_by_chunk() -> None:
    src = chunkflow.array(np.arange(10000, dtype="f4").reshape(100, 100), chunks=(7, 13))
    dst = chunkflow.zeros((100, 100), chunks=(10, 10), dtype="f8")
    dst[:] = src
    np.testing.assert_array_equal(dst[:], np.arange(10000).reshape(100, 100))
    part = chunkflow.zeros((50, 20), chunks=(8, 8), dtype="f4")
    part[:] = src[10:60, 30:50]
    part[10:20, :] = src.oindex[np.arange(10), 0:20]
    np.testing.assert_array_equal(part[10:20, :], np.arange(10000).reshape(100, 100)[:10, :20])


def test_pickle_round_trip(tmp_path) -> None:
    z = chunkflow.array(np.arange(12).reshape(3, 4), chunks=2, store=str(tmp_path / "p.zarr"))
    restored = pickle.loads(pickle.dumps(z))
    np.testing.assert_array_equal(restored[:], z[:])
    assert len(pickle.dumps(z)) < 2000  # location and options, never the data
    m = chunkflow.array(np.arange(6), store=MemoryStore())
    np.testing.assert_array_equal(pickle.loads(pickle.dumps(m))[:], np.arange(6))


def test_write_empty_chunks_policy() -> None:
    z = chunkflow.zeros(10, chunks=5, dtype="i2", write_empty_chunks=True)
    z[:] = 0
    assert z.nchunks_initialized == 2
    z = chunkflow.zeros(10, chunks=5, dtype="i2")
    z[:] = 0
    assert z.nchunks_initialized == 0
    f = chunkflow.full(10, np.nan, chunks=5)
    f[:5] = np.nan
    assert f.nchunks_initialized == 0


def test_strings_and_structured_dtypes() -> None:
    for zarr_format in (2, 3):
        s = chunkflow.array(np.array(["a", "bc", "", "déf"], dtype=object), dtype=str,
                            chunks=2, zarr_format=zarr_format)
        assert list(s[:]) == ["a", "bc", "", "déf"]
    rec = np.array([(1, 2.5), (3, 4.5)], dtype=[("a", "<i4"), ("b", "<f8")])
    z = chunkflow.array(rec, zarr_format=2, chunks=1)
    np.testing.assert_array_equal(z[:], rec)
    u = chunkflow.array(np.array(["x", "yz"]), chunks=1, zarr_format=2)
    assert list(u[:]) == ["x", "yz"]
    t = chunkflow.array(np.array(["2020-01-01", "NaT"], dtype="M8[ns]"), zarr_format=2)
    np.testing.assert_array_equal(t[:], np.array(["2020-01-01", "NaT"], dtype="M8[ns]"))


def test_copy_memory_stays_bounded_by_a_few_chunks(tmp_path) -> None:
    import tracemalloc

    data = np.random.default_rng(0).integers(0, 1000, size=(2048, 2048), dtype=np.uint16)
    src = chunkflow.array(data, chunks=(256, 256), store=str(tmp_path / "src.zarr"))
    # 8 MiB in 128 KiB chunks; a folder store, so stored bytes are not counted as memory
    dst = chunkflow.zeros(data.shape, chunks=(200, 300), dtype="u2",
                          store=str(tmp_path / "dst.zarr"))
    cache_budget = 1 << 20  # decoded chunks the process-wide cache may keep meanwhile
    budget = cache_budget + 24 * 256 * 256 * 2  # + 24 chunks (3 MiB): under half the array
    with chunkflow.config.set({"chunkflow.cache.max-bytes": cache_budget}):
        chunkflow.get_cache().clear()
        tracemalloc.start()
        try:
            dst[:] = src
            _, peak = tracemalloc.get_traced_memory()
        finally:
            tracemalloc.stop()
    assert peak < budget, f"copy peaked at {peak} bytes, budget {budget}"
    np.testing.assert_array_equal(dst[:], data)


def test_v3_takes_numcodecs_and_v3_codec_documents() -> None:
    z = chunkflow.zeros((8, 8), chunks=4, dtype="f4", compressor=numcodecs.Zstd(level=3))
    assert [c["name"] for c in z.metadata.codecs] == ["bytes", "zstd"]
    z = chunkflow.zeros((8, 8), chunks=4, dtype="f4",
                        codecs=[{"name": "bytes", "configuration": {"endian": "big"}},
                                {"name": "gzip", "configuration": {"level": 1}}])
    z[:] = 1.5
    assert (chunkflow.Array(z.store)[:] == 1.5).all()
    z = chunkflow.zeros((8, 8), chunks=4, dtype="i2", zarr_format=2,
                        compressor=numcodecs.Zlib(level=1), filters=[numcodecs.Delta("i2")])
    z[:] = np.arange(64).reshape(8, 8)
    assert z.filters == (numcodecs.Delta("i2"),) and z.compressor == numcodecs.Zlib(level=1)
    np.testing.assert_array_equal(chunkflow.Array(z.store)[:], np.arange(64).reshape(8, 8))
