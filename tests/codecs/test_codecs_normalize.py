"""Tests of chunkflow.codecs.normalize: user codec input -> stored documents."""

from __future__ import annotations

import json
import warnings

import numcodecs
import numpy as np
import pytest

from chunkflow.codecs import (
    BloscCodec,
    BytesCodec,
    Crc32cCodec,
    GzipCodec,
    TransposeCodec,
    ZstdCodec,
    compressor_of,
    default_v2_compressor,
    normalize_v2_compressor,
    normalize_v2_filters,
    normalize_v3_codecs,
    v3_pipeline,
)
from chunkflow.codecs.stages import build_numcodec
from chunkflow.errors import UnsupportedCodecError
from tests.helpers.dtypes import STRING_DTYPE

pytestmark = pytest.mark.lowest_deps  # also run at the lowest dependency versions

LE = {"name": "bytes", "configuration": {"endian": "little"}}


def blosc_doc(typesize: int) -> dict:
    return {"name": "blosc", "configuration": {"typesize": typesize, "cname": "lz4", "clevel": 5,
                                               "shuffle": "shuffle", "blocksize": 0}}


@pytest.mark.parametrize(
    "dtype,serializer",
    [
        ("uint8", {"name": "bytes"}),
        ("int8", {"name": "bytes"}),
        ("bool", {"name": "bytes"}),
        ("S5", {"name": "bytes"}),
        ("V4", {"name": "bytes"}),
        ([("a", "<i2"), ("b", "<f4")], {"name": "bytes"}),
        ("uint16", LE),
        (">i4", LE),
        ("<U3", LE),
        ("<M8[ns]", LE),
        ("complex64", LE),
        ("float16", LE),
    ],
    ids=str,
)
def test_default_codecs_per_dtype(dtype, serializer):
    dtype = np.dtype(dtype)
    codecs = normalize_v3_codecs(None, dtype=dtype)
    assert codecs == (serializer, blosc_doc(dtype.itemsize))
    json.dumps(codecs)


def test_serializer_matches_what_zarr_python_writes(tmp_path):
    zarr = pytest.importorskip("zarr")
    for i, dtype in enumerate(["uint8", "bool", "int16", "S3", "<U2", "float64"]):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            zarr.create_array(tmp_path / str(i), shape=(2,), chunks=(2,), dtype=dtype, zarr_format=3,
                              compressors=None)
        written = json.loads((tmp_path / str(i) / "zarr.json").read_text())["codecs"]
        assert list(normalize_v3_codecs(None, dtype=dtype, compressor=None)) == written


def test_order_f_and_ndim():
    codecs = normalize_v3_codecs(None, dtype="uint16", order="F", ndim=3)
    assert codecs[0] == {"name": "transpose", "configuration": {"order": [2, 1, 0]}}
    names = [c["name"] for c in normalize_v3_codecs(None, dtype="uint16", order="F", ndim=1)]
    assert names == ["bytes", "blosc"]
    with pytest.raises(ValueError, match="ndim"):
        normalize_v3_codecs(None, dtype="uint16", order="F")
    with pytest.raises(ValueError, match="order"):
        normalize_v3_codecs(None, dtype="uint16", order="K")
    # a "F"/"C" transpose order given by the user is resolved against ndim
    assert normalize_v3_codecs([TransposeCodec("F")], dtype="u1", ndim=2, compressor=None)[0] == {
        "name": "transpose", "configuration": {"order": [1, 0]}}


@pytest.mark.parametrize("dtype", [np.dtype(object), pytest.param(
    STRING_DTYPE, marks=pytest.mark.skipif(STRING_DTYPE is None, reason="numpy 2's StringDType"))])
def test_object_and_string_dtypes(dtype):
    codecs = normalize_v3_codecs(None, dtype=dtype)
    assert codecs == ({"name": "vlen-utf8", "configuration": {}}, blosc_doc(1))


def test_compressor_and_filters_forms():
    zarr = pytest.importorskip("zarr")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        from zarr.codecs.numcodecs import BZ2 as ZarrBZ2

        zbz2 = ZarrBZ2(level=2)
    cases = [
        (None, []),
        (numcodecs.Zstd(level=3), [{"name": "zstd", "configuration": {"level": 3, "checksum": False}}]),
        (numcodecs.GZip(level=2), [{"name": "gzip", "configuration": {"level": 2}}]),
        (numcodecs.CRC32C(), [{"name": "crc32c"}]),
        (numcodecs.BZ2(level=1), [{"name": "numcodecs.bz2", "configuration": {"level": 1}}]),
        (numcodecs.Blosc("zstd", 3, -1), [{"name": "blosc", "configuration": {
            "typesize": 4, "cname": "zstd", "clevel": 3, "shuffle": "shuffle", "blocksize": 0}}]),
        ({"id": "lz4", "acceleration": 1}, [{"name": "numcodecs.lz4", "configuration": {"acceleration": 1}}]),
        ([ZstdCodec(1), Crc32cCodec()], [{"name": "zstd", "configuration": {"level": 1, "checksum": False}},
                                         {"name": "crc32c"}]),
        (zarr.codecs.GzipCodec(level=4), [{"name": "gzip", "configuration": {"level": 4}}]),
        (zbz2, [{"name": "numcodecs.bz2", "configuration": {"level": 2}}]),
        ("zstd", [{"name": "zstd", "configuration": {"level": 0, "checksum": False}}]),
    ]
    for compressor, expected in cases:
        codecs = normalize_v3_codecs(None, dtype="<i4", compressor=compressor)
        assert list(codecs) == [LE] + expected, compressor
    codecs = normalize_v3_codecs(None, dtype="<i4", filters=[numcodecs.Delta("<i4")], compressor=None)
    assert codecs == ({"name": "numcodecs.delta", "configuration": {"dtype": "<i4", "astype": "<i4"}}, LE)


def test_codec_list_completion():
    # serializer inserted after the array->array codecs, blosc typesize from the
    # dtype the serializer sees (after astype)
    codecs = normalize_v3_codecs(
        [{"name": "numcodecs.astype", "configuration": {"encode_dtype": "<f4", "decode_dtype": "<f8"}},
         BloscCodec(), GzipCodec(1)], dtype="<f8")
    assert [c["name"] for c in codecs] == ["numcodecs.astype", "bytes", "blosc", "gzip"]
    assert codecs[2]["configuration"]["typesize"] == 4
    assert normalize_v3_codecs([BytesCodec("big")], dtype="int16") == (
        {"name": "bytes", "configuration": {"endian": "big"}},)
    assert normalize_v3_codecs([BytesCodec("big")], dtype="uint8") == ({"name": "bytes"},)
    assert normalize_v3_codecs([{"name": "bytes"}], dtype="int16") == (LE,)
    # blosc given as a v3 document without typesize / numcodecs config
    assert normalize_v3_codecs([{"name": "blosc", "configuration": {"cname": "lz4"}}],
                               dtype="<u2")[1]["configuration"]["typesize"] == 2


@pytest.mark.parametrize(
    "kwargs,error,match",
    [
        (dict(codecs=[LE, LE]), UnsupportedCodecError, "two array->bytes"),
        (dict(codecs=[{"name": "crc32c"}, LE]), UnsupportedCodecError, "before the array->bytes"),
        (dict(codecs=[{"name": "nope"}]), UnsupportedCodecError, "'nope'"),
        (dict(codecs=[object()]), UnsupportedCodecError, "cannot use"),
        (dict(codecs=[LE], compressor=numcodecs.Zstd()), ValueError, "either"),
        (dict(codecs=[LE], filters=[numcodecs.Delta("<i4")]), ValueError, "either"),
        (dict(codecs=None, filters=[numcodecs.Zstd()]), UnsupportedCodecError, "not an array->array"),
        (dict(codecs=None, compressor=numcodecs.Delta("<i4")), UnsupportedCodecError, "not a bytes->bytes"),
        (dict(codecs=None, compressor={"id": "frob"}), UnsupportedCodecError, "'numcodecs.frob'"),
    ],
)
def test_v3_errors(kwargs, error, match):
    with pytest.raises(error, match=match):
        normalize_v3_codecs(kwargs.pop("codecs"), dtype="<i4", **kwargs)


def test_v2_compressor():
    assert normalize_v2_compressor("default") == default_v2_compressor()
    assert normalize_v2_compressor(None) is None
    assert normalize_v2_compressor(numcodecs.Blosc("zstd", 3, 2)) == {
        "id": "blosc", "cname": "zstd", "clevel": 3, "shuffle": 2, "blocksize": 0}
    assert normalize_v2_compressor(BloscCodec("zstd", 3, "bitshuffle", 4)) == {
        "id": "blosc", "cname": "zstd", "clevel": 3, "shuffle": 2, "blocksize": 0}
    gzip = {"name": "gzip", "configuration": {"level": 1}}
    assert normalize_v2_compressor(gzip) == {"id": "gzip", "level": 1}
    assert normalize_v2_compressor({"id": "zlib", "level": 1}) == {"id": "zlib", "level": 1}
    assert normalize_v2_compressor(ZstdCodec(2)) == {"id": "zstd", "level": 2}
    assert normalize_v2_compressor(ZstdCodec(2, True)) == {"id": "zstd", "level": 2, "checksum": True}
    with pytest.raises(UnsupportedCodecError, match="'nope'"):
        normalize_v2_compressor({"id": "nope"})
    with pytest.raises(UnsupportedCodecError, match=r"no numcodecs \(Zarr v2\) equivalent"):
        normalize_v2_compressor(TransposeCodec((1, 0)))
    with pytest.raises(UnsupportedCodecError, match="cannot use"):
        normalize_v2_compressor(3.5)


def test_v2_filters():
    assert normalize_v2_filters(None) is None
    assert normalize_v2_filters([]) is None
    assert normalize_v2_filters(numcodecs.VLenUTF8()) == ({"id": "vlen-utf8"},)
    filters = normalize_v2_filters([numcodecs.JSON(), {"id": "delta", "dtype": "<i2"}])
    assert filters[0]["separators"] == [",", ":"]  # plain JSON types, as read back
    assert filters[1] == {"id": "delta", "dtype": "<i2"}
    json.dumps(filters)
    scaled = normalize_v2_filters(
        [numcodecs.FixedScaleOffset(offset=np.float64(1.5), scale=np.int64(10), dtype="<f8")])
    assert scaled[0]["scale"] == 10 and type(scaled[0]["scale"]) is int


def test_compressor_of():
    assert compressor_of(2, None) is None
    assert compressor_of(2, {"id": "zlib", "level": 1}) == numcodecs.Zlib(1)
    assert compressor_of(3, [LE]) is None
    assert compressor_of(3, [LE, {"name": "crc32c"}]) is None
    blosc = compressor_of(3, normalize_v3_codecs(None, dtype="<u2"))
    assert isinstance(blosc, numcodecs.Blosc) and blosc.cname == "lz4"
    bz2 = {"name": "numcodecs.bz2", "configuration": {"level": 2}}
    assert compressor_of(3, [LE, {"name": "crc32c"}, bz2]) == numcodecs.BZ2(2)


@pytest.mark.parametrize(
    "dtype,kwargs",
    [
        ("uint16", {}),
        ("int8", {}),
        ("float32", dict(order="F", ndim=2)),
        ("<i4", dict(compressor=[numcodecs.Zstd(1), build_numcodec({"id": "crc32c"})])),
        ("<i4", dict(filters=[numcodecs.Delta("<i4")], compressor=numcodecs.GZip(1))),
        (object, {}),
    ],
    ids=str,
)
def test_zarr_python_reads_normalized_codecs(tmp_path, dtype, kwargs):
    zarr = pytest.importorskip("zarr")
    dtype = np.dtype(dtype)
    codecs = normalize_v3_codecs(None, dtype=dtype, **kwargs)
    doc = {
        "zarr_format": 3, "node_type": "array", "shape": [4, 6],
        "data_type": "string" if dtype == np.dtype(object) else dtype.name,
        "chunk_grid": {"name": "regular", "configuration": {"chunk_shape": [4, 6]}},
        "chunk_key_encoding": {"name": "default", "configuration": {"separator": "/"}},
        "fill_value": "" if dtype == np.dtype(object) else 0, "codecs": list(codecs), "attributes": {},
    }
    (tmp_path / "zarr.json").write_text(json.dumps(doc))
    as_text = dtype == np.dtype(object)  # object values are written from strings
    values = (np.arange(24).reshape(4, 6) % 100).astype("U2" if as_text else dtype).astype(dtype)
    (tmp_path / "c" / "0").mkdir(parents=True)
    (tmp_path / "c" / "0" / "0").write_bytes(bytes(v3_pipeline(dtype, (4, 6), codecs).encode(values)))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        np.testing.assert_array_equal(np.asarray(zarr.open_array(tmp_path, mode="r")[:]), values)
