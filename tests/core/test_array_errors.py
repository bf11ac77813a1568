"""Bad input gets a clear error and leaves stored data as it was."""

from __future__ import annotations

import json

import numpy as np
import pytest

import chunkflow
from chunkflow.errors import (
    ArrayNotFoundError,
    BoundsCheckError,
    ChunkDecodeError,
    DtypeMismatchError,
    InvalidKeyError,
    MetadataError,
    ShapeMismatchError,
    UnsafeCodecError,
    UnsupportedCodecError,
    UnsupportedFormatError,
)
from chunkflow.storage import MemoryStore


def _array(zarr_format: int = 3):
    store = MemoryStore()
    z = chunkflow.array(np.arange(100, dtype="i4").reshape(10, 10), chunks=(4, 4),
                        store=store, path="data/img", zarr_format=zarr_format)
    return store, z


def _snapshot(store: MemoryStore) -> dict[str, bytes]:
    return {key: bytes(store[key]) for key in store}


def test_wrong_shape_and_dtype_writes_change_nothing() -> None:
    store, z = _array()
    before = _snapshot(store)
    with pytest.raises(ShapeMismatchError, match=r"'data/img'.*shape \(3,\)"):
        z[0:2, 0:2] = np.ones(3)
    with pytest.raises(DtypeMismatchError, match="int32"):
        z[0:2, 0:2] = np.array([["a", "b"], ["c", "d"]])
    with pytest.raises(ShapeMismatchError):
        z.append(np.ones((2, 3)))
    assert _snapshot(store) == before


@pytest.mark.parametrize(
    "selection",
    [(10, 0), (0, -11), (slice(0, 2), 12), (0, 0, 0)],
)
def test_out_of_bounds(selection) -> None:
    _, z = _array()
    with pytest.raises(IndexError) as info:
        z[selection]
    assert "10" in str(info.value)


def test_out_of_bounds_fancy() -> None:
    _, z = _array()
    with pytest.raises(BoundsCheckError):
        z.oindex[[0, 10], :]
    with pytest.raises(BoundsCheckError):
        z.vindex[[0, 1], [3, 11]]
    with pytest.raises(IndexError):
        z[1.5]


@pytest.mark.parametrize("zarr_format", [2, 3])
def test_corrupted_chunk_names_path_and_key(zarr_format: int) -> None:
    store, z = _array(zarr_format)
    key = "data/img/c/1/1" if zarr_format == 3 else "data/img/1.1"
    store[key] = b"\x00garbage" * 3
    with pytest.raises(ChunkDecodeError) as info:
        z[:]
    assert "data/img" in str(info.value) and key in str(info.value)
    # other chunks still read; the corrupt one is left for the user to inspect
    np.testing.assert_array_equal(z[0:4, 0:4], np.arange(100).reshape(10, 10)[:4, :4])
    assert store[key] == b"\x00garbage" * 3


def test_truncated_chunk() -> None:
    store, z = _array()
    key = "data/img/c/0/0"
    store[key] = bytes(store[key])[:-5]
    with pytest.raises(ChunkDecodeError, match="c/0/0"):
        z[0, 0]


@pytest.mark.parametrize("document", ["zarr.json", ".zarray"])
def test_malformed_and_truncated_metadata(document: str) -> None:
    store, z = _array(3 if document == "zarr.json" else 2)
    key = f"data/img/{document}"
    good = bytes(store[key])
    store[key] = good[: len(good) // 2]
    with pytest.raises(MetadataError, match="data/img"):
        chunkflow.Array(store, "data/img")
    doc = json.loads(good)
    doc["shape"] = [10, -1]
    store[key] = json.dumps(doc).encode()
    with pytest.raises(MetadataError, match="shape"):
        chunkflow.Array(store, "data/img")


def test_v3_unknown_must_understand_field_is_refused() -> None:
    store, z = _array(3)
    doc = json.loads(bytes(store["data/img/zarr.json"]))
    doc["new_feature"] = {"name": "x"}
    store["data/img/zarr.json"] = json.dumps(doc).encode()
    with pytest.raises(UnsupportedFormatError, match="new_feature"):
        chunkflow.Array(store, "data/img")
    doc["new_feature"] = {"name": "x", "must_understand": False}
    store["data/img/zarr.json"] = json.dumps(doc).encode()
    assert chunkflow.Array(store, "data/img").shape == (10, 10)


def test_unknown_codec_is_refused() -> None:
    store, z = _array(3)
    doc = json.loads(bytes(store["data/img/zarr.json"]))
    doc["codecs"].append({"name": "mystery", "configuration": {}})
    store["data/img/zarr.json"] = json.dumps(doc).encode()
    with pytest.raises(UnsupportedCodecError, match="mystery"):
        chunkflow.Array(store, "data/img")


def test_pickle_codec_refused_unless_allowed() -> None:
    store = MemoryStore()
    z = chunkflow.create(2, dtype=object, filters=[{"id": "pickle"}], zarr_format=2,
                         store=store, allow_pickle=True, fill_value=None)
    value = np.empty(2, dtype=object)
    value[0], value[1] = {"a": 1}, [2]
    z[:] = value
    with pytest.raises(UnsafeCodecError):
        chunkflow.Array(store)
    assert chunkflow.Array(store, allow_pickle=True)[0] == {"a": 1}


def test_unsafe_keys_refused() -> None:
    store = MemoryStore()
    for path in ["../escape", "a/../../b", "a//b"]:
        with pytest.raises(InvalidKeyError):
            chunkflow.zeros(3, store=store, path=path)
    assert len(store) == 0


def test_missing_array() -> None:
    with pytest.raises(ArrayNotFoundError, match="nothing"):
        chunkflow.open_array(MemoryStore(), mode="r", path="nothing")
