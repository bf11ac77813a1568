"""Every data type of zarr-python 3.1's registry, written by chunkflow as zarr-python writes
it, and read back by each from the other's files with identical values.

zarr-python is the oracle: for one ``create_array`` call made with each library, the
stored ``data_type``, ``fill_value`` and ``codecs`` must be equal (parsed JSON, never raw
text), and each library must read the values the other wrote.
"""

from __future__ import annotations

import base64
import json
from pathlib import Path
from typing import Any

import numcodecs
import numcodecs.zarr3
import numpy as np
import pytest
import zarr
import zarr.codecs
from zarr.core.dtype import VariableLengthBytes, data_type_registry

import chunkflow
from chunkflow.api.dtype_spec import normalize_dtype
from chunkflow.errors import MetadataError

pytestmark = pytest.mark.filterwarnings("ignore::zarr.errors.UnstableSpecificationWarning")

STRUCT = [("a", "<i4"), ("b", "S2"), ("c", "<f8")]
#: (dtype argument, values) for every data type zarr-python 3.1.6 registers.
DTYPES: dict[str, tuple[Any, np.ndarray]] = {
    "bool": ("bool", np.array([True, False, True, True, False])),
    "int8": ("i1", np.array([-128, 0, 5, 127, 1], "i1")),
    "int16": (">i2", np.array([-3, 0, 5, 300, 1], ">i2")),
    "int32": ("i4", np.arange(5, dtype="i4") - 2),
    "int64": ("i8", np.array([-(2**62), 0, 5, 2**62, 1], "i8")),
    "uint8": ("u1", np.arange(5, dtype="u1")),
    "uint16": ("u2", np.arange(5, dtype="u2") * 1000),
    "uint32": ("u4", np.arange(5, dtype="u4") * 10**6),
    "uint64": ("u8", np.array([0, 1, 2**63, 2**64 - 1, 7], "u8")),
    "float16": ("f2", np.array([0.5, -1, np.inf, 3, 4], "f2")),
    "float32": ("f4", np.array([0.5, np.nan, -np.inf, 3, 4], "f4")),
    "float64": ("f8", np.array([0.5, np.nan, 1e300, -0.0, 4])),
    "complex64": ("c8", np.array([1 + 2j, 0, np.nan, 3j, 4], "c8")),
    "complex128": ("c16", np.array([1 + 2j, 0, 1e300j, 3j, 4])),
    "fixed_length_utf32": ("U4", np.array(["a", "éß", "漢字🙂", "", "wxyz"])),
    "string": (str, np.array(["a", "éß", "", "漢字🙂", "long string"], dtype=object)),
    "raw_bytes": ("V3", np.array([b"abc", b"\x00\x01\x02", b"xyz", b"   ", b"q\x00q"], "V3")),
    "null_terminated_bytes": ("S4", np.array([b"a", b"", b"abcd", b"\xff\x00", b"xy"])),
    "variable_length_bytes": (VariableLengthBytes(),
                              np.array([b"a", b"", b"\x00\xff", b"long bytes", b"z"], object)),
    "structured": (STRUCT, np.array([(1, b"x", 0.5), (2, b"", np.nan), (-3, b"yz", 1e9),
                                     (0, b"a", -0.0), (7, b"bb", 2.5)], STRUCT)),
    "numpy.datetime64": ("M8[ms]", np.array(["2020-01-01T00:00:00.001", "NaT", "1969-12-31",
                                             "2262-01-01", "1970-01-01"], "M8[ms]")),
    "numpy.timedelta64": ("m8[10s]", np.array([1, -2, "NaT", 0, 2**40], "m8[10s]")),
}


def test_every_registered_data_type_is_covered() -> None:
    data_type_registry._lazy_load()  # the registry fills itself on first use
    assert set(data_type_registry.contents) == set(DTYPES)


def _stored(path: Path) -> dict[str, Any]:
    doc = json.loads((path / "zarr.json").read_text())
    return {key: doc[key] for key in ("data_type", "fill_value", "codecs")}


def _same(a: np.ndarray, b: np.ndarray) -> bool:
    if a.dtype.fields is not None:
        return all(_same(a[name], b[name]) for name in a.dtype.names)
    if a.dtype.kind in "fc":
        return bool(np.array_equal(a, b, equal_nan=True))
    if a.dtype.kind in "Mm":
        return bool(np.array_equal(a.view("i8"), b.view("i8")))
    return a.tolist() == b.tolist()


def _create(library: Any, path: Path, dtype: Any, **kwargs: Any) -> Any:
    return library.create_array(str(path), shape=(5,), chunks=(2,), dtype=dtype, **kwargs)


@pytest.mark.parametrize("name", sorted(DTYPES))
def test_chunkflow_writes_what_zarr_python_writes(tmp_path: Path, name: str) -> None:
    dtype, values = DTYPES[name]
    ours, theirs = tmp_path / "chunkflow.zarr", tmp_path / "zarr.zarr"
    _create(chunkflow, ours, dtype)[:] = values
    _create(zarr, theirs, dtype)[:] = values
    expected = _stored(theirs)
    if name == "structured":
        # zarr-python 3.1.6's default structured fill puts b"0" in the bytes field (its
        # default scalar is str(0)); chunkflow's is all zero bytes. Both read it back.
        item = np.dtype(STRUCT).itemsize
        quirk = np.array((0, b"0", 0.0), STRUCT).tobytes()
        assert expected["fill_value"] == base64.b64encode(quirk).decode()
        expected["fill_value"] = base64.b64encode(bytes(item)).decode()
    assert _stored(ours) == expected
    assert _same(np.asarray(zarr.open_array(str(ours), mode="r")[:]), values)
    assert _same(np.asarray(chunkflow.open_array(str(theirs), mode="r")[:]), values)


@pytest.mark.parametrize("name", sorted(DTYPES))
def test_fill_values_round_trip_through_the_peer(tmp_path: Path, name: str) -> None:
    """Missing chunks read as the fill value each library stored, in both directions."""
    dtype, values = DTYPES[name]
    fill = values[1]
    for writer, reader in ((chunkflow, zarr), (zarr, chunkflow)):
        path = tmp_path / f"{writer.__name__}.zarr"
        _create(writer, path, dtype, fill_value=fill)[:2] = values[:2]
        read = np.asarray(reader.open_array(str(path), mode="r")[:])
        assert _same(read[2:], np.array([fill] * 3, dtype=values.dtype)), (writer, read)


def test_str_picks_vlen_utf8_in_create_array() -> None:
    z = chunkflow.create_array(None, shape=(2,), dtype=str)
    assert z.serializer == {"name": "vlen-utf8", "configuration": {}}
    z[:] = ["é", "x"]
    assert z[:].tolist() == ["é", "x"]


def test_bytes_is_variable_length_bytes_in_both_formats() -> None:
    v3 = chunkflow.array([b"a", b"bc"], dtype=bytes)
    assert v3.metadata.to_dict()["data_type"] == "variable_length_bytes"
    assert v3.serializer["name"] == "vlen-bytes" and v3[:].tolist() == [b"a", b"bc"]
    v2 = chunkflow.array([b"a", b"bc"], dtype=bytes, zarr_format=2)
    assert v2.filters == (numcodecs.VLenBytes(),) and v2[:].tolist() == [b"a", b"bc"]
    # object data holding bytes only is stored as bytes
    inferred = chunkflow.array(np.array([b"x", None, b"yz"], dtype=object))
    assert inferred.metadata.to_dict()["data_type"] == "variable_length_bytes"


def test_object_dtype_with_vlen_bytes_serializer_is_variable_length_bytes() -> None:
    """A vlen-bytes serializer given in codecs= makes the data type variable_length_bytes
    (chunkflow wrote "string" with vlen-bytes, which zarr-python refuses)."""
    z = chunkflow.create(2, dtype=object, codecs=[{"name": "vlen-bytes"}])
    assert z.metadata.to_dict()["data_type"] == "variable_length_bytes"
    with pytest.raises(MetadataError, match="vlen-utf8"):
        chunkflow.create(2, dtype=str, codecs=[{"name": "vlen-bytes"}])


def test_object_codecs_without_v3_data_type_are_refused_before_creating() -> None:
    store = chunkflow.MemoryStore()
    with pytest.raises(MetadataError, match="zarr_format=2"):
        chunkflow.create(3, dtype=object, object_codec=numcodecs.JSON(), store=store)
    assert list(store.list_prefix("")) == []
    with pytest.raises(MetadataError, match="object_codec="):
        chunkflow.create(3, dtype=object, zarr_format=2, store=store)
    assert list(store.list_prefix("")) == []


@pytest.mark.parametrize(("dtype", "codec"), [
    ("array:i8", {"id": "vlen-array", "dtype": "<i8"}),
    (str, {"id": "vlen-utf8"}),
    (np.dtypes.StringDType(), {"id": "vlen-utf8"}),
    (zarr.core.dtype.Int32(endianness="big"), None),
])
def test_normalize_dtype(dtype: Any, codec: dict[str, Any] | None) -> None:
    spec = normalize_dtype(dtype)
    assert spec.object_codec == codec
    if codec is None:
        assert spec.dtype == np.dtype(">i4")


#: zarr-python codec objects, in the stage zarr-python's create_array takes them.
CODEC_OBJECTS = {
    "sharding": {"serializer": zarr.codecs.ShardingCodec(
        chunk_shape=(2,), codecs=[zarr.codecs.BytesCodec(), zarr.codecs.BloscCodec()])},
    "blosc-unset": {"compressors": zarr.codecs.BloscCodec()},
    "blosc-list": {"compressors": [zarr.codecs.BloscCodec(cname="lz4"), zarr.codecs.Crc32cCodec()]},
    "zstd": {"compressors": zarr.codecs.ZstdCodec(level=5, checksum=True)},
    "gzip": {"compressors": zarr.codecs.GzipCodec(level=2)},
    "bytes-big": {"serializer": zarr.codecs.BytesCodec(endian="big")},
    "transpose": {"filters": [zarr.codecs.TransposeCodec(order=(0,))]},
    "numcodecs-bz2": {"compressors": numcodecs.zarr3.BZ2(level=3)},
    "numcodecs-delta": {"filters": [numcodecs.zarr3.Delta(dtype="<i4")]},
}


@pytest.mark.parametrize("name", sorted(CODEC_OBJECTS))
def test_zarr_python_codec_objects(tmp_path: Path, name: str) -> None:
    kwargs = CODEC_OBJECTS[name]
    values = np.arange(8, dtype="<i4") * 3
    ours, theirs = tmp_path / "chunkflow.zarr", tmp_path / "zarr.zarr"
    chunkflow.create_array(str(ours), shape=(8,), chunks=(4,), dtype="<i4", **kwargs)[:] = values
    zarr.create_array(str(theirs), shape=(8,), chunks=(4,), dtype="<i4", **kwargs)[:] = values
    assert _stored(ours) == _stored(theirs)
    assert zarr.open_array(str(ours), mode="r")[:].tolist() == values.tolist()
    assert chunkflow.open_array(str(theirs), mode="r")[:].tolist() == values.tolist()


def test_zarr_python_codecs_in_vlen_arrays_evolve_for_the_item(tmp_path: Path) -> None:
    kwargs = {"compressors": zarr.codecs.BloscCodec()}
    ours, theirs = tmp_path / "c.zarr", tmp_path / "z.zarr"
    chunkflow.create_array(str(ours), shape=(2,), dtype=str, **kwargs)[:] = ["a", "b"]
    zarr.create_array(str(theirs), shape=(2,), dtype=str, **kwargs)[:] = ["a", "b"]
    assert _stored(ours) == _stored(theirs)


def test_zarr_python_sharding_codec_in_create_codecs() -> None:
    """ShardingCodec.to_dict() holds tuples; chunkflow.create(codecs=) takes it as is."""
    sharding = zarr.codecs.ShardingCodec(chunk_shape=(2,), codecs=[zarr.codecs.BytesCodec()])
    z = chunkflow.create(8, chunks=4, dtype="u1", codecs=[sharding])
    z[:] = np.arange(8)
    assert z.shards == (4,) and z.chunks == (2,) and z[:].tolist() == list(range(8))
