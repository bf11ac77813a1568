"""zarr-python 2's spellings that its tutorial uses: ``object_codec=``, ``dtype="array:T"``,
``storage.default_compressor``, ``DirectoryStore``; zarr-python 2.18's documented outputs
are the oracle (they are the tutorial's expected outputs)."""

from __future__ import annotations

from pathlib import Path

import numcodecs
import numpy as np
import pytest
import zarr

import chunkflow
import chunkflow.storage


def test_json_object_codec_stores_any_item() -> None:
    z = chunkflow.empty(5, dtype=object, object_codec=numcodecs.JSON(), zarr_format=2)
    z[0] = 42
    z[1] = "foo"
    z[2] = ["bar", "baz", "qux"]
    z[3] = {"a": 1, "b": 2.2}
    assert z.filters == (numcodecs.JSON(),)
    assert z[:].tolist() == [42, "foo", ["bar", "baz", "qux"], {"a": 1, "b": 2.2}, None]


@pytest.mark.parametrize("spelling", ["array:i8", "object_codec"])
def test_ragged_arrays(spelling: str) -> None:
    kwargs = ({"dtype": "array:i8"} if spelling == "array:i8" else
              {"dtype": object, "object_codec": numcodecs.VLenArray(int)})
    z = chunkflow.empty(4, zarr_format=2, **kwargs)
    z[0] = np.array([1, 3, 5])
    z[1] = np.array([4])
    z[2] = np.array([7, 9, 14])
    assert z.filters == (numcodecs.VLenArray("<i8"),)
    # The unwritten item reads as the codec stores None: an empty array (not the None
    # the written chunk held before encoding).
    assert [a.tolist() for a in z[:]] == [[1, 3, 5], [4], [7, 9, 14], []]


def test_object_arrays_open_in_zarr_python(tmp_path: Path) -> None:
    """zarr-python 3 opens the vlen-utf8 and vlen-bytes ones (it refuses msgpack and
    categorize object arrays, which chunkflow reads back itself)."""
    text = ["¡Hola mundo!", "Hej Världen!", "こんにちは世界"] * 3
    path = tmp_path / "utf8.zarr"
    chunkflow.array(text, dtype=object, object_codec=numcodecs.VLenUTF8(), chunks=4,
                    zarr_format=2, store=str(path))
    assert zarr.open_array(str(path), mode="r")[:].tolist() == text
    bytes_path = tmp_path / "bytes.zarr"
    chunkflow.array([t.encode() for t in text], dtype=bytes, zarr_format=2, store=str(bytes_path))
    assert zarr.open_array(str(bytes_path), mode="r")[:].tolist() == [t.encode() for t in text]
    for codec in (numcodecs.MsgPack(), numcodecs.Categorize(sorted(set(text)), dtype=object)):
        z = chunkflow.array(text, dtype=object, object_codec=codec, chunks=4, zarr_format=2)
        assert z.filters[0] == codec and z[:].tolist() == text


def test_object_codec_must_match_the_dtype() -> None:
    with pytest.raises(chunkflow.errors.MetadataError, match="pass one of them"):
        chunkflow.create(2, dtype=str, object_codec=numcodecs.VLenBytes(), zarr_format=2)
    with pytest.raises(chunkflow.errors.MetadataError, match="dtype=object"):
        chunkflow.create(2, dtype="i4", object_codec=numcodecs.JSON(), zarr_format=2)


def test_default_compressor_is_read_at_creation(monkeypatch: pytest.MonkeyPatch) -> None:
    assert chunkflow.zeros(4, zarr_format=2).compressor == numcodecs.Blosc()
    monkeypatch.setattr(chunkflow.storage, "default_compressor", numcodecs.Zstd(level=1))
    assert chunkflow.zeros(4, zarr_format=2).compressor == numcodecs.Zstd(level=1)
    assert chunkflow.zeros(4).compressor == numcodecs.Zstd(level=1)  # v3 too
    # zarr-python 3's create_array keeps its own default (zstd level 0)
    assert chunkflow.create_array(None, shape=(4,), dtype="u1").compressor == numcodecs.Zstd(level=0)
    monkeypatch.setattr(chunkflow.storage, "default_compressor", None)
    assert chunkflow.zeros(4, zarr_format=2).compressor is None


def test_directory_store(tmp_path: Path) -> None:
    store = chunkflow.DirectoryStore(str(tmp_path / "example.zarr"))
    z = chunkflow.create(store=store, overwrite=True, shape=10, dtype="i4", zarr_format=2)
    z[:] = np.arange(10)
    assert zarr.open_array(str(tmp_path / "example.zarr"), mode="r")[:].tolist() == list(range(10))
    assert chunkflow.storage.DirectoryStore is chunkflow.LocalStore


def _h5_source(path: Path) -> object:
    h5py = pytest.importorskip("h5py")
    source = h5py.File(path, mode="w")
    source.create_group("foo").create_dataset("bar/baz", data=np.arange(100), chunks=(50,))
    source.create_dataset("spam", data=np.arange(100, 200), chunks=(30,))
    source.attrs["title"] = np.bytes_(b"h5")
    return source


def test_h5py_tree_and_copy_with_log(tmp_path: Path) -> None:
    # zarr-python 2.18's tutorial output is the oracle for the lines and the counts.
    source = _h5_source(tmp_path / "example.h5")
    assert str(chunkflow.tree(source)).split() == (
        "/ ├── foo │ └── bar │ └── baz (100,) int64 └── spam (100,) int64").split()
    dest = chunkflow.open_group(tmp_path / "example.zarr", mode="w", zarr_format=2)
    lines: list[str] = []
    assert chunkflow.copy(source["foo"], dest, log=lines.append) == (3, 0, 800)
    assert lines == ["copy /foo", "copy /foo/bar", "copy /foo/bar/baz (100,) int64",
                     "all done: 3 copied, 0 skipped, 800 bytes copied"]
    assert sorted(dest) == ["foo"]
    np.testing.assert_array_equal(dest["foo/bar/baz"][:], np.arange(100))
    everything = chunkflow.open_group(tmp_path / "all.zarr", mode="w", zarr_format=2)
    log_file = tmp_path / "copy.log"
    assert chunkflow.copy_all(source, everything, log=str(log_file)) == (4, 0, 1600)
    assert log_file.read_text().splitlines()[-1] == \
        "all done: 4 copied, 0 skipped, 1,600 bytes copied"
    assert everything.attrs["title"] == "h5"
    np.testing.assert_array_equal(everything["spam"][:], np.arange(100, 200))
    lines.clear()
    assert chunkflow.copy_all(source, everything, if_exists="skip", log=lines.append) == \
        (0, 2, 0)
    assert lines == ["skip /foo/bar/baz (100,) int64", "skip /spam (100,) int64",
                     "all done: 0 copied, 2 skipped, 0 bytes copied"]
    source.close()


def test_copy_store_log_matches_zarr_python_2(tmp_path: Path) -> None:
    import io

    root = chunkflow.group(chunkflow.DirectoryStore(tmp_path / "example.zarr"),
                           overwrite=True, zarr_format=2)
    root.create_dataset("foo/bar/baz", data=np.arange(100), chunks=(50,))
    root.create_dataset("spam", data=np.arange(100, 200), chunks=(30,))
    out = io.StringIO()
    counts = chunkflow.copy_store(tmp_path / "example.zarr", tmp_path / "example.zip", log=out)
    lines = out.getvalue().splitlines()
    assert lines[:4] == ["copy .zgroup", "copy foo/.zgroup", "copy foo/bar/.zgroup",
                         "copy foo/bar/baz/.zarray"]
    assert len(lines) == 12 and counts[:2] == (11, 0)
    # The byte count is zarr-python 2.18's: its documents byte for byte, its chunks.
    assert lines[-1] == "all done: 11 copied, 0 skipped, 1,138 bytes copied"
    with pytest.raises(chunkflow.ChunkflowError, match="log must be"):
        chunkflow.copy_store(tmp_path / "example.zarr", {}, log=42)


def test_lru_store_cache_shares_one_private_cache(tmp_path: Path) -> None:
    store = chunkflow.DirectoryStore(tmp_path / "data.zarr")
    root = chunkflow.group(store=store)
    root.create_array("foo/bar/baz", shape=(8,), chunks=(2,), dtype="i4")[:] = np.arange(8)
    cached = chunkflow.LRUStoreCache(store, max_size=2**20)
    assert cached == store and cached.chunk_cache_bytes == 2**20 and \
        store.chunk_cache_bytes is None
    z = chunkflow.group(store=cached)["foo/bar/baz"]
    before = chunkflow.cache_info().hits
    assert z[:].tolist() == list(range(8)) and z[:].tolist() == list(range(8))
    private = chunkflow.cache.store_cache(cached)
    assert private is not None and private.stats.hits >= 4 and private.stats.bytes > 0
    assert chunkflow.cache_info().hits == before  # the process-wide cache served nothing
    # Coherent: a write through the cached store is what the next read sees.
    z[0] = 99
    assert z[:2].tolist() == [99, 1]
    assert chunkflow.open_array(store, path="foo/bar/baz")[0] == 99
    with pytest.raises(chunkflow.ChunkflowError, match="max_size"):
        chunkflow.LRUStoreCache(store, max_size=-1)


def test_n5_store_is_refused_by_name(tmp_path: Path) -> None:
    with pytest.raises(chunkflow.ChunkflowError, match="N5 is not a Zarr format"):
        chunkflow.N5Store(tmp_path / "example.n5")
    assert not (tmp_path / "example.n5").exists()
