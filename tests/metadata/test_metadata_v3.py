"""Zarr v3 ``zarr.json`` documents (chunkflow.metadata.v3)."""

from __future__ import annotations

import json
import math
import warnings
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from chunkflow.errors import MetadataError, UnsupportedDtypeError, UnsupportedFormatError
from chunkflow.metadata import ArrayMetadataV3, GroupMetadataV3, parse_zarr_json

try:
    import zarr
except ImportError:  # a test peer: only the tests that use it are skipped
    zarr = None
needs_zarr = pytest.mark.skipif(zarr is None, reason="zarr-python is not installed")

BYTES = {"name": "bytes", "configuration": {"endian": "little"}}


def array_doc(**changes: Any) -> dict[str, Any]:
    doc = {
        "zarr_format": 3,
        "node_type": "array",
        "shape": [10, 7],
        "data_type": "float32",
        "chunk_grid": {"name": "regular", "configuration": {"chunk_shape": [4, 3]}},
        "chunk_key_encoding": {"name": "default", "configuration": {"separator": "/"}},
        "fill_value": "NaN",
        "codecs": [BYTES, {"name": "zstd", "configuration": {"level": 0, "checksum": False}}],
        "attributes": {"units": "m"},
        "dimension_names": ["y", None],
    }
    doc.update(changes)
    return {k: v for k, v in doc.items() if v is not ...}


def parse(doc: dict[str, Any], path: str = "a/b") -> ArrayMetadataV3:
    meta = parse_zarr_json(json.dumps(doc).encode(), path)
    assert isinstance(meta, ArrayMetadataV3)
    return meta


def test_parse_full_document() -> None:
    meta = parse(array_doc())
    assert meta.shape == (10, 7) and meta.chunks == (4, 3) and meta.dtype == np.dtype("float32")
    assert math.isnan(meta.fill_value) and meta.order == "C" and meta.zarr_format == 3
    assert meta.codecs[0] == BYTES and meta.chunk_key_encoding == ("default", "/")
    assert meta.attributes == {"units": "m"} and meta.dimension_names == ("y", None)


def test_round_trip_and_equality() -> None:
    meta = parse(array_doc())
    again = ArrayMetadataV3.from_bytes(meta.to_bytes(), "a/b")
    assert again == meta and hash(again) == hash(meta)
    assert json.loads(meta.to_bytes()) == array_doc()
    assert meta.with_shape((12, 7)).shape == (12, 7) and meta.with_shape((12, 7)) != meta
    assert meta.with_attributes({"x": 1}).attributes == {"x": 1}
    with pytest.raises(MetadataError, match="rank"):
        meta.with_shape((1,))


@pytest.mark.parametrize(
    "encoding, expected",
    [
        ({"name": "default"}, ("default", "/")),
        ({"name": "v2"}, ("v2", ".")),
        ({"name": "v2", "configuration": {"separator": "/"}}, ("v2", "/")),
        ({"name": "default", "configuration": {"separator": "."}}, ("default", ".")),
        ("default", ("default", "/")),
    ],
    ids=str,
)
def test_chunk_key_encoding_defaults(encoding: Any, expected: tuple[str, str]) -> None:
    meta = parse(array_doc(chunk_key_encoding=encoding))
    assert meta.chunk_key_encoding == expected
    written = meta.to_dict()["chunk_key_encoding"]
    assert written == {"name": expected[0], "configuration": {"separator": expected[1]}}


def test_optional_keys_and_shorthands() -> None:
    meta = parse(array_doc(attributes=..., dimension_names=..., codecs=["bytes"], storage_transformers=[]))
    assert meta.attributes == {} and meta.dimension_names is None
    assert meta.codecs == ({"name": "bytes"},)
    assert "dimension_names" not in meta.to_dict()


def test_must_understand_false_extensions_are_ignored() -> None:
    meta = parse(array_doc(my_ext={"must_understand": False, "x": 1}))
    assert "my_ext" not in meta.to_dict()
    with pytest.raises(UnsupportedFormatError, match="array 'a/b': zarr.json has the key 'my_ext'"):
        parse(array_doc(my_ext={"must_understand": True}))
    with pytest.raises(UnsupportedFormatError, match="'other'"):
        parse(array_doc(other=1))


BAD = [
    ("zarr_format", 2, UnsupportedFormatError),
    ("node_type", "link", MetadataError),
    ("shape", [-1, 7], MetadataError),
    ("shape", None, MetadataError),
    ("data_type", "float128x", UnsupportedDtypeError),
    ("data_type", {"name": "raw_bytes", "configuration": {"length_bytes": -2}}, MetadataError),
    ("chunk_grid", {"name": "rectilinear", "configuration": {}}, UnsupportedFormatError),
    ("chunk_grid", {"name": "regular", "configuration": {"chunk_shape": [4]}}, MetadataError, "[4]"),
    ("chunk_grid", {"name": "regular", "configuration": {"chunk_shape": [4, 0]}}, MetadataError, "[4, 0]"),
    ("chunk_grid", {"name": "regular"}, MetadataError),
    ("chunk_key_encoding", {"name": "fancy"}, UnsupportedFormatError, "'fancy'"),
    ("chunk_key_encoding", {"name": "default", "configuration": {"separator": "|"}}, MetadataError, "'|'"),
    ("chunk_key_encoding", 5, MetadataError),
    ("fill_value", None, MetadataError),
    ("fill_value", "nan", MetadataError),
    ("codecs", [], MetadataError),
    ("codecs", [{"configuration": {}}], MetadataError, "{'configuration'"),
    ("codecs", {"name": "bytes"}, MetadataError),
    ("attributes", [1], MetadataError),
    ("dimension_names", ["y"], MetadataError),
    ("dimension_names", [1, 2], MetadataError),
    ("storage_transformers", [{"name": "offset"}], UnsupportedFormatError),
]


@pytest.mark.parametrize(
    "key, value, error, needle", [(*c, None)[:4] for c in BAD], ids=lambda x: repr(x)[:24]
)
def test_errors_name_path_key_and_value(key: str, value: Any, error: type, needle: str | None) -> None:
    with pytest.raises(error) as info:
        ArrayMetadataV3.from_dict(array_doc(**{key: value}), "a/b")
    message = str(info.value)
    assert "array 'a/b'" in message and "zarr.json" in message and f"'{key}'" in message
    assert (needle or repr(value)[:5]) in message


@pytest.mark.parametrize("key", ["shape", "data_type", "chunk_grid", "chunk_key_encoding",
                                 "fill_value", "codecs", "node_type", "zarr_format"])  # fmt: skip
def test_missing_required_key(key: str) -> None:
    with pytest.raises(MetadataError, match=f"lacks the required key '{key}'"):
        ArrayMetadataV3.from_dict(array_doc(**{key: ...}), "p")


@pytest.mark.parametrize("data", [b'{"zarr_format": 3, "node_type": "arr', b"", b"\x80", b'"array"'])
def test_bad_bytes(data: bytes) -> None:
    with pytest.raises(MetadataError, match=r"'a/b': zarr.json"):
        parse_zarr_json(data, "a/b")
    with pytest.raises(MetadataError, match=r"array 'a/b': zarr.json"):
        ArrayMetadataV3.from_bytes(data, "a/b")


@pytest.mark.parametrize(
    "data_type, fill, expected",
    [
        ("bool", False, False),
        ("int64", -(2**63), -(2**63)),
        ("uint64", 2**64 - 1, 2**64 - 1),
        ("float16", "0x7e00", math.nan),
        ("float64", "-Infinity", -math.inf),
        ("complex64", ["NaN", 2.0], complex(math.nan, 2)),
        ("r16", [1, 2], b"\x01\x02"),
        ({"name": "numpy.datetime64", "configuration": {"unit": "s", "scale_factor": 1}}, 5,
         np.datetime64(5, "s")),
        ({"name": "null_terminated_bytes", "configuration": {"length_bytes": 3}}, "YQ==", b"a"),
        ({"name": "fixed_length_utf32", "configuration": {"length_bytes": 8}}, "hé", "hé"),
        ({"name": "raw_bytes", "configuration": {"length_bytes": 2}}, "AQI=", b"\x01\x02"),
        ({"name": "structured", "configuration": {"fields": [["a", "int16"], ["b", "uint8"]]}},
         "AQAC", (1, 2)),
        ({"name": "struct", "configuration": {"fields": [{"name": "a", "data_type": "int16"},
                                                         {"name": "b", "data_type": "r16"}]}},
         {"a": -1, "b": [1, 2]}, (-1, b"\x01\x02")),
    ],  # fmt: skip
    ids=str,
)
def test_data_types_and_fill_values_round_trip(data_type: Any, fill: Any, expected: Any) -> None:
    meta = parse(array_doc(data_type=data_type, fill_value=fill))
    dtype = meta.dtype
    assert np.array(meta.fill_value, dtype).tobytes() == np.array(expected, dtype).tobytes()
    doc = meta.to_dict()
    assert doc["data_type"] == data_type
    again = parse(doc)
    assert again == meta
    assert np.array(again.fill_value, dtype).tobytes() == np.array(expected, dtype).tobytes()


def test_struct_fill_value_round_trips_as_an_object() -> None:
    struct = {"name": "struct", "configuration": {"fields": [
        {"name": "x", "data_type": "float32"}, {"name": "n", "data_type": "uint8"}]}}
    meta = parse(array_doc(data_type=struct, fill_value={"x": "NaN", "n": 7}))
    assert meta.to_dict()["fill_value"] == {"x": "NaN", "n": 7}


@pytest.mark.parametrize(
    ("data_type", "fill", "needle"),
    [
        ({"name": "struct", "configuration": {"fields": [["a", "int8"]]}}, {"a": 0}, "objects"),
        ({"name": "struct", "configuration": {"fields": [{"name": "a", "data_type": "int8"}]}},
         {"b": 0}, "exactly the fields"),
    ],
)
def test_malformed_struct_is_refused(data_type: Any, fill: Any, needle: str) -> None:
    with pytest.raises(MetadataError, match=needle):
        parse(array_doc(data_type=data_type, fill_value=fill))


def test_object_data_types() -> None:
    text = parse(array_doc(data_type="string", fill_value="", codecs=[{"name": "vlen-utf8"}]))
    assert text.dtype == np.dtype(object) and text.fill_value == ""
    raw = parse(array_doc(data_type="variable_length_bytes", fill_value="YWI=", codecs=["vlen-bytes"]))
    assert raw.dtype == np.dtype(object) and raw.fill_value == b"ab"
    assert raw.to_dict()["fill_value"] == "YWI=" and raw.to_dict()["data_type"] == "variable_length_bytes"


def test_direct_construction() -> None:
    meta = ArrayMetadataV3([4], [2], "<i2", 3.0, [BYTES])
    assert meta.fill_value == np.int16(3) and meta.chunk_key_encoding == ("default", "/")
    assert meta.to_dict()["data_type"] == "int16"
    with pytest.raises(MetadataError, match="fill_value"):
        ArrayMetadataV3((4,), (2,), np.dtype("i2"), None, (BYTES,))
    with pytest.raises(UnsupportedFormatError):
        ArrayMetadataV3((4,), (2,), np.dtype("i2"), 0, (BYTES,), ("weird", "/"))
    with pytest.raises(UnsupportedDtypeError, match="sub-array"):
        ArrayMetadataV3((4,), (2,), np.dtype([("a", "<i4", (2,))]), 0, (BYTES,))
    with pytest.raises(MetadataError, match="dimension_names"):
        ArrayMetadataV3((4,), (2,), np.dtype("i2"), 0, (BYTES,), dimension_names=("a", "b"))


def test_group() -> None:
    consolidated = {"kind": "inline", "must_understand": False, "metadata": {"a": {"zarr_format": 3}}}
    data = json.dumps({"zarr_format": 3, "node_type": "group", "attributes": {"k": [1, 2]},
                       "consolidated_metadata": consolidated}).encode()  # fmt: skip
    group = parse_zarr_json(data, "g")
    assert isinstance(group, GroupMetadataV3)
    assert group.attributes == {"k": [1, 2]} and group.consolidated_metadata == consolidated
    assert json.loads(group.to_bytes())["consolidated_metadata"] == consolidated
    assert GroupMetadataV3.from_bytes(group.to_bytes(), "g") == group
    assert group.with_attributes({}).to_dict() == {
        "zarr_format": 3, "node_type": "group", "attributes": {},
        "consolidated_metadata": consolidated,
    }
    assert GroupMetadataV3.from_dict({"zarr_format": 3, "node_type": "group"}).attributes == {}
    with pytest.raises(UnsupportedFormatError, match="group 'g': zarr.json has the key 'x'"):
        GroupMetadataV3.from_dict({"zarr_format": 3, "node_type": "group", "x": 1}, "g")
    with pytest.raises(MetadataError, match="group 'g': zarr.json key 'attributes'"):
        GroupMetadataV3.from_dict({"zarr_format": 3, "node_type": "group", "attributes": 1}, "g")
    with pytest.raises(MetadataError, match="node_type"):
        GroupMetadataV3.from_dict(array_doc(), "g")


def test_parse_zarr_json_dispatch_errors() -> None:
    with pytest.raises(UnsupportedFormatError, match="node 'n': zarr.json key 'zarr_format'"):
        parse_zarr_json(b'{"zarr_format": 4, "node_type": "group"}', "n")
    with pytest.raises(MetadataError, match="node_type"):
        parse_zarr_json(b'{"zarr_format": 3}', "n")


# ----------------------------------------------------------------------- peers

PEER_DTYPES = [
    ("bool", True), ("int8", -5), ("uint64", 2**64 - 1), ("float16", math.nan), ("float32", -math.inf),
    ("complex128", complex(1, math.nan)), ("<M8[ns]", np.datetime64("NaT")), ("<m8[10ms]", 7),
    ("S6", b"ab"), ("<U3", "hé"), ("V3", b"\x01"), ([("a", "<i4"), ("b", "<f8")], (1, 2.5)),
]  # fmt: skip


@needs_zarr
@pytest.mark.parametrize("dtype, fill", PEER_DTYPES, ids=lambda x: str(x)[:16])
def test_zarr_python_documents_parse(dtype: Any, fill: Any) -> None:
    dtype = np.dtype(dtype)
    store = zarr.storage.MemoryStore()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        zarr.create_array(store=store, shape=(5, 4), chunks=(2, 3), dtype=dtype, fill_value=fill,
                          zarr_format=3, dimension_names=["y", "x"], attributes={"a": 1})  # fmt: skip
    raw = store._store_dict["zarr.json"].to_bytes()
    meta = parse_zarr_json(raw, "peer")
    assert isinstance(meta, ArrayMetadataV3)
    assert (meta.shape, meta.chunks, meta.dtype) == ((5, 4), (2, 3), dtype)
    assert meta.dimension_names == ("y", "x") and meta.attributes == {"a": 1}
    ours = ArrayMetadataV3((5, 4), (2, 3), dtype, fill, meta.codecs, dimension_names=("y", "x"))
    assert np.array(meta.fill_value, dtype).tobytes() == np.array(ours.fill_value, dtype).tobytes()
    theirs = json.loads(raw)
    mine = ours.with_attributes({"a": 1}).to_dict()
    for key in ("data_type", "chunk_grid", "chunk_key_encoding", "codecs", "dimension_names"):
        assert mine[key] == theirs[key], key


@needs_zarr
@pytest.mark.parametrize("dtype, fill", PEER_DTYPES, ids=lambda x: str(x)[:16])
def test_our_documents_open_in_zarr_python(tmp_path: Path, dtype: Any, fill: Any) -> None:
    dtype = np.dtype(dtype)
    endian = {} if dtype.itemsize == 1 or dtype.kind in "SV" else {"configuration": {"endian": "little"}}
    meta = ArrayMetadataV3((5, 4), (2, 3), dtype, fill, ({"name": "bytes", **endian},))
    (tmp_path / "zarr.json").write_bytes(meta.to_bytes())
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        array = zarr.open_array(str(tmp_path), mode="r")
        values = np.asarray(array[...])
    assert array.dtype == dtype and array.shape == (5, 4) and array.chunks == (2, 3)
    assert values.tobytes() == np.full((5, 4), meta.fill_value, dtype).tobytes()


def test_tensorstore_documents_parse(tmp_path: Path) -> None:
    ts = pytest.importorskip("tensorstore")
    spec = {"driver": "zarr3", "kvstore": {"driver": "file", "path": str(tmp_path)},
            "metadata": {"shape": [4, 6], "chunk_grid": {"name": "regular", "configuration": {
                "chunk_shape": [2, 3]}}, "data_type": "float32", "fill_value": float("nan")}}  # fmt: skip
    ts.open(spec, create=True).result()
    meta = parse_zarr_json((tmp_path / "zarr.json").read_bytes(), "ts")
    assert isinstance(meta, ArrayMetadataV3)
    assert meta.chunks == (2, 3) and meta.chunk_key_encoding == ("default", "/")
    assert math.isnan(meta.fill_value)
