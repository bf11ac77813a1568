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
