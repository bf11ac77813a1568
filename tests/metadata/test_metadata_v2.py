"""Zarr v2 ``.zarray`` / ``.zgroup`` documents (chunkflow.metadata.v2)."""

from __future__ import annotations

import json
import math
import warnings
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from chunkflow.errors import MetadataError, UnsupportedDtypeError, UnsupportedFormatError
from chunkflow.metadata import ArrayMetadataV2, GroupMetadataV2, load_json_document

try:
    import zarr
except ImportError:  # a test peer: only the tests that use it are skipped
    zarr = None
needs_zarr = pytest.mark.skipif(zarr is None, reason="zarr-python is not installed")

BLOSC = {"id": "blosc", "cname": "lz4", "clevel": 5, "shuffle": 1, "blocksize": 0}


def zarray(**changes: Any) -> dict[str, Any]:
    doc = {
        "zarr_format": 2,
        "shape": [10, 7],
        "chunks": [4, 3],
        "dtype": "<f8",
        "compressor": BLOSC,
        "fill_value": "NaN",
        "order": "C",
        "filters": None,
    }
    doc.update(changes)
    return {k: v for k, v in doc.items() if v is not ...}


def test_parse_full_document() -> None:
    meta = ArrayMetadataV2.from_dict(zarray(filters=[{"id": "delta", "dtype": "<f8"}]), "a/b")
    assert meta.shape == (10, 7) and meta.chunks == (4, 3)
    assert meta.dtype == np.dtype("<f8") and math.isnan(meta.fill_value)
    assert meta.compressor == BLOSC and meta.filters == ({"id": "delta", "dtype": "<f8"},)
    assert meta.order == "C" and meta.dimension_separator == "."
    assert meta.chunk_key_encoding == ("v2", ".")
    assert meta.attributes == {} and meta.dimension_names is None and meta.zarr_format == 2


def test_serialize_writes_null_filters_and_separator() -> None:
    meta = ArrayMetadataV2.from_dict(zarray(filters=[]))
    assert meta.filters is None
    doc = json.loads(meta.to_bytes())
    assert doc["filters"] is None and doc["fill_value"] == "NaN"
    # As zarr-python 2 writes it: "." is the default, so it is left out (keys sorted).
    assert "dimension_separator" not in doc and list(doc) == sorted(doc)
    assert set(doc) == set(zarray())
    assert meta.to_bytes().startswith(b'{\n    "')  # indent=4
    slashed = json.loads(ArrayMetadataV2.from_dict(zarray(dimension_separator="/")).to_bytes())
    assert slashed["dimension_separator"] == "/"


def test_round_trip_and_equality() -> None:
    meta = ArrayMetadataV2.from_dict(zarray(order="F", dimension_separator="/", fill_value=None))
    again = ArrayMetadataV2.from_bytes(meta.to_bytes(), "x")
    assert again == meta and hash(again) == hash(meta)
    assert again.fill_value is None and again.chunk_key_encoding == ("v2", "/")
    assert meta != meta.with_shape((11, 7))
    assert meta.with_shape((0, 0)).shape == (0, 0)
    with pytest.raises(MetadataError, match="rank"):
        meta.with_shape((3,))


def test_unknown_keys_are_ignored() -> None:
    meta = ArrayMetadataV2.from_dict(zarray(extra={"x": 1}, another=3))
    assert "extra" not in meta.to_dict()


def test_zero_dimensional() -> None:
    meta = ArrayMetadataV2.from_dict(zarray(shape=[], chunks=[], dtype="<i4", fill_value=5))
    assert meta.shape == () and meta.chunks == () and meta.fill_value == 5


@pytest.mark.parametrize(
    "dtype, fill, expected",
    [
        ("|S4", "YWI=", b"ab"),
        ("<U2", "hé", "hé"),
        ("<M8[ns]", -(2**63), np.datetime64("NaT")),
        ("<c16", ["NaN", "-Infinity"], complex(math.nan, -math.inf)),
        ([["a", "<i2"], ["b", "|u1", [2]]], "AQACAw==", (1, [2, 3])),
        ("|b1", True, True),
        ("|O", "", ""),
    ],
    ids=str,
)
def test_dtypes_and_fill_values(dtype: Any, fill: Any, expected: Any) -> None:
    meta = ArrayMetadataV2.from_dict(zarray(dtype=dtype, fill_value=fill))
    np_dtype = meta.dtype
    if np_dtype.kind != "O":
        assert np.array(meta.fill_value, np_dtype).tobytes() == np.array(expected, np_dtype).tobytes()
    assert ArrayMetadataV2.from_bytes(meta.to_bytes()) == meta
    assert json.loads(meta.to_bytes())["dtype"] == dtype


def test_vlen_bytes_fill_value() -> None:
    meta = ArrayMetadataV2.from_dict(zarray(dtype="|O", fill_value="YWI=", filters=[{"id": "vlen-bytes"}]))
    assert meta.fill_value == b"ab"
    assert meta.to_dict()["fill_value"] == "YWI="


BAD = [
    ("zarr_format", 3, UnsupportedFormatError),
    ("zarr_format", "2", UnsupportedFormatError),
    ("shape", [-1, 7], MetadataError),
    ("shape", "10", MetadataError),
    ("shape", [10.0, 7], MetadataError),
    ("chunks", [0, 3], MetadataError),
    ("chunks", [4], MetadataError),
    ("chunks", [True, 3], MetadataError),
    ("dtype", "<q9", UnsupportedDtypeError),
    ("dtype", 8, MetadataError),
    ("compressor", "blosc", MetadataError),
    ("compressor", {"cname": "lz4"}, MetadataError),
    ("filters", {"id": "delta"}, MetadataError),
    ("filters", [{"name": "delta"}], MetadataError),
    ("fill_value", "nope", MetadataError),
    ("order", "K", MetadataError),
    ("dimension_separator", "-", MetadataError),
]


@pytest.mark.parametrize("key, value, error", BAD, ids=lambda x: repr(x)[:20])
def test_errors_name_path_key_and_value(key: str, value: Any, error: type) -> None:
    with pytest.raises(error) as info:
        ArrayMetadataV2.from_dict(zarray(**{key: value}), "a/b")
    message = str(info.value)
    assert "array 'a/b'" in message and ".zarray" in message and f"'{key}'" in message
    assert repr(value).lstrip("[")[:6] in message


@pytest.mark.parametrize("key", ["zarr_format", "shape", "chunks", "dtype", "compressor",
                                 "fill_value", "order", "filters"])  # fmt: skip
def test_missing_required_key(key: str) -> None:
    with pytest.raises(MetadataError, match=f"array 'p': .zarray lacks the required key '{key}'"):
        ArrayMetadataV2.from_dict(zarray(**{key: ...}), "p")


@pytest.mark.parametrize("data", [b'{"zarr_format": 2, "shape": [1', b"", b"\xff\xfe", b"[1, 2]", b"nul"])
def test_bad_bytes(data: bytes) -> None:
    with pytest.raises(MetadataError) as info:
        ArrayMetadataV2.from_bytes(data, "a/b")
    assert "array 'a/b'" in str(info.value) and ".zarray" in str(info.value)


def test_direct_construction_is_checked() -> None:
    meta = ArrayMetadataV2([4], [2], "<i4", None, [], 3.0, "C")
    assert meta.shape == (4,) and meta.filters is None and meta.fill_value == np.int32(3)
    with pytest.raises(MetadataError, match="chunks"):
        ArrayMetadataV2((4,), (0,), np.dtype("u1"), None, None, 0, "C")
    with pytest.raises(MetadataError, match="order"):
        ArrayMetadataV2((4,), (2,), np.dtype("u1"), None, None, 0, "X")
    with pytest.raises(UnsupportedDtypeError):
        ArrayMetadataV2((4,), (2,), np.dtype("S0"), None, None, 0, "C")
    with pytest.raises(MetadataError, match="300"):
        ArrayMetadataV2((4,), (2,), np.dtype("u1"), None, None, 300, "C")


def test_group() -> None:
    group = GroupMetadataV2.from_bytes(b'{"zarr_format": 2, "other": 1}', "g")
    assert group.to_dict() == {"zarr_format": 2} and group.attributes == {}
    assert json.loads(group.to_bytes()) == {"zarr_format": 2}
    with pytest.raises(UnsupportedFormatError, match="group 'g': .zgroup key 'zarr_format'"):
        GroupMetadataV2.from_bytes(b'{"zarr_format": 3}', "g")
    with pytest.raises(MetadataError, match="group 'g': .zgroup is not valid JSON"):
        GroupMetadataV2.from_bytes(b'{"zarr_', "g")


def test_load_json_document_non_object() -> None:
    with pytest.raises(MetadataError, match="must hold a JSON object, got list"):
        load_json_document(b"[]", "x", ".zattrs")


# ----------------------------------------------------------------------- zarr-python 3.1

PEER_DTYPES = [
    ("|b1", True), ("|i1", -5), (">i2", 3), ("<u8", 2**64 - 1), ("<f2", math.nan), (">f4", -math.inf),
    ("<c16", complex(1, math.nan)), ("<M8[ns]", np.datetime64("NaT")), ("<m8[10ms]", 7),
    ("|S6", b"ab"), ("<U3", "hé"), ("|V3", b"\x01"), ([("a", "<i4"), ("b", "<f8")], (1, 2.5)),
]  # fmt: skip


@needs_zarr
@pytest.mark.parametrize("dtype, fill", PEER_DTYPES, ids=lambda x: str(x)[:16])
def test_zarr_python_documents_parse(dtype: Any, fill: Any) -> None:
    dtype = np.dtype(dtype)
    store = zarr.storage.MemoryStore()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        zarr.create_array(store=store, shape=(5, 4), chunks=(2, 3), dtype=dtype, fill_value=fill,
                          zarr_format=2, order="F",
                          chunk_key_encoding={"name": "v2", "separator": "/"})
    meta = ArrayMetadataV2.from_bytes(store._store_dict[".zarray"].to_bytes(), "peer")
    assert (meta.shape, meta.chunks, meta.dtype, meta.order) == ((5, 4), (2, 3), dtype, "F")
    assert meta.dimension_separator == "/"
    ours = ArrayMetadataV2((5, 4), (2, 3), dtype, meta.compressor, None, fill, "F", "/")
    assert np.array(meta.fill_value, dtype).tobytes() == np.array(ours.fill_value, dtype).tobytes()


@needs_zarr
@pytest.mark.parametrize("dtype, fill", PEER_DTYPES, ids=lambda x: str(x)[:16])
def test_our_documents_open_in_zarr_python(tmp_path: Path, dtype: Any, fill: Any) -> None:
    dtype = np.dtype(dtype)
    meta = ArrayMetadataV2((5, 4), (2, 3), dtype, {"id": "zstd", "level": 1}, None, fill, "C", "/")
    (tmp_path / ".zarray").write_bytes(meta.to_bytes())
    array = zarr.open_array(str(tmp_path), mode="r")
    assert array.dtype == dtype and array.shape == (5, 4) and array.chunks == (2, 3)
    expected = np.full((5, 4), meta.fill_value, dtype)
    assert np.asarray(array[...]).tobytes() == expected.tobytes()


@needs_zarr
def test_string_array_opens_in_zarr_python(tmp_path: Path) -> None:
    meta = ArrayMetadataV2((3,), (2,), np.dtype(object), None, ({"id": "vlen-utf8"},), "hé", "C")
    (tmp_path / ".zarray").write_bytes(meta.to_bytes())
    array = zarr.open_array(str(tmp_path), mode="r")
    assert list(array[:]) == ["hé"] * 3
