"""Tests of the Zarr v3 codec pipeline and codec objects."""

from __future__ import annotations

import itertools
import json
import warnings
from pathlib import Path

import google_crc32c
import numcodecs
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import chunkflow
from chunkflow.codecs import (
    BloscCodec,
    BytesCodec,
    Crc32cCodec,
    GzipCodec,
    NumcodecsCodec,
    TransposeCodec,
    VLenBytesCodec,
    VLenUTF8Codec,
    ZstdCodec,
    codec_from_json,
    v3_pipeline,
)
from chunkflow.codecs.stages import build_numcodec, make_bytes_stage
from chunkflow.errors import (
    ChunkDecodeError,
    ChunkEncodeError,
    UnsafeCodecError,
    UnsupportedCodecError,
)
from tests.helpers.dtypes import STRING_DTYPE

pytestmark = pytest.mark.lowest_deps  # also run at the lowest dependency versions

RNG = np.random.default_rng(7)


def smooth(shape: tuple[int, ...], dtype: str = "uint16") -> np.ndarray:
    grid = np.indices(shape).sum(axis=0) % 4096
    return (grid + RNG.integers(0, 4, size=shape)).astype(dtype)


def layouts(shape: tuple[int, ...], dtype: np.dtype):
    """Output buffers of every interesting layout: C, F, each permutation, strided."""
    for perm in itertools.permutations(range(len(shape))):
        stored = tuple(shape[i] for i in perm)
        yield np.empty(stored, dtype).transpose(np.argsort(perm))
    yield np.empty((shape[0] * 2,) + shape[1:], dtype)[1::2]
    yield np.empty(shape, dtype.newbyteorder() if dtype.itemsize > 1 and dtype.kind in "iufc" else dtype)


def assert_same_values(actual: np.ndarray, expected: np.ndarray) -> None:
    # Structured items compare field by field, where a NaN (random bytes make some)
    # never equals itself: compare their bytes instead.
    if expected.dtype.fields is not None:
        assert np.ascontiguousarray(actual).tobytes() == np.ascontiguousarray(expected).tobytes()
    else:
        np.testing.assert_array_equal(actual, expected)


def check_round_trip(p, chunk: np.ndarray) -> bytes:
    data = p.encode(chunk)
    decoded = p.decode(data)
    assert_same_values(decoded, chunk)
    assert decoded.flags.writeable and decoded.dtype == p.dtype
    if chunk.dtype != object:
        for out in layouts(chunk.shape, p.dtype):
            p.decode_into(data, out)
            assert_same_values(out, chunk)
    return bytes(data)


BYTES_LE = {"name": "bytes", "configuration": {"endian": "little"}}
BYTES_BE = {"name": "bytes", "configuration": {"endian": "big"}}
B2B = [
    [],
    [{"name": "blosc", "configuration": {"cname": "lz4", "clevel": 5, "shuffle": "shuffle",
                                         "typesize": 2, "blocksize": 0}}],
    [{"name": "blosc", "configuration": {"cname": "zstd", "clevel": 3, "shuffle": "bitshuffle",
                                         "typesize": 2, "blocksize": 0}}],
    [{"name": "blosc", "configuration": {"cname": "blosclz", "clevel": 1, "shuffle": "noshuffle",
                                         "blocksize": 0}}],
    [{"name": "gzip", "configuration": {"level": 1}}],
    [{"name": "zstd", "configuration": {"level": 1, "checksum": True}}],
    [{"name": "crc32c"}],
    [{"name": "zstd", "configuration": {"level": 0, "checksum": False}}, {"name": "crc32c"}],
    [{"name": "crc32c"}, {"name": "gzip", "configuration": {"level": 1}}],
    [{"name": "numcodecs.lz4", "configuration": {"acceleration": 1}}],
    [{"name": "numcodecs.bz2", "configuration": {"level": 1}}, {"name": "numcodecs.adler32"}],
    [{"name": "numcodecs.shuffle", "configuration": {"elementsize": 2}},
     {"name": "numcodecs.zlib", "configuration": {"level": 1}}],
]


@pytest.mark.parametrize("b2b", B2B, ids=lambda b: "+".join(c["name"] for c in b) or "none")
@pytest.mark.parametrize("serializer", [BYTES_LE, BYTES_BE], ids=["le", "be"])
@pytest.mark.parametrize("transpose", [None, [1, 0], "F"], ids=str)
def test_codec_combinations(b2b, serializer, transpose):
    chunk = smooth((12, 10))
    a2a = [] if transpose is None else [{"name": "transpose", "configuration": {"order": transpose}}]
    check_round_trip(v3_pipeline("uint16", chunk.shape, a2a + [serializer] + b2b), chunk)


@pytest.mark.parametrize("perm", list(itertools.permutations(range(3))), ids=str)
def test_transpose_permutations(perm):
    chunk = smooth((2, 3, 4))
    codecs = [TransposeCodec(perm), BytesCodec("little")]
    data = check_round_trip(v3_pipeline("uint16", chunk.shape, codecs), chunk)
    assert data == np.ascontiguousarray(chunk.transpose(perm)).tobytes()
    # two transposes compose
    p = v3_pipeline("uint16", chunk.shape, [TransposeCodec(perm), TransposeCodec((2, 0, 1)), BytesCodec()])
    check_round_trip(p, chunk)


@pytest.mark.parametrize("cname", ["lz4", "lz4hc", "blosclz", "zstd", "zlib"])
@pytest.mark.parametrize("shuffle", ["noshuffle", "shuffle", "bitshuffle"])
def test_blosc_typesize_is_used(cname, shuffle):
    chunk = smooth((32, 32))
    p = v3_pipeline("uint16", chunk.shape, [BytesCodec(), BloscCodec(cname, 5, shuffle, 2, 0)])
    data = check_round_trip(p, chunk)
    # numcodecs takes the item size of a typed buffer (also before 0.16, without typesize).
    ref = numcodecs.Blosc(cname, 5, ("noshuffle", "shuffle", "bitshuffle").index(shuffle))
    assert data == bytes(ref.encode(chunk))  # the shuffle really works on 2-byte items
    assert data[3] == 2  # header typesize byte


@pytest.mark.parametrize(
    "dtype",
    ["bool", "int8", "uint8", "<i2", "<u4", "<i8", "<f2", "<f4", "<f8", "<c8", "<c16",
     "S5", "<U3", "V4", "<M8[ns]", "<m8[s]", [("a", "<i2"), ("b", "<f4")]],
    ids=str,
)
@pytest.mark.parametrize("endian", ["little", "big"])
def test_dtypes_and_endianness(dtype, endian):
    dtype = np.dtype(dtype)
    raw = RNG.integers(0, 256, 12 * dtype.itemsize, dtype=np.uint8).tobytes()
    chunk = np.frombuffer(raw, dtype).copy()
    if dtype.kind == "b":
        chunk = np.frombuffer(raw[:12], np.uint8) % 2 == 1
    elif dtype.kind == "U":
        chunk = np.array(["ab", "", "xyz"] * 4, dtype=dtype)
    elif dtype.kind in "fc":
        chunk = np.nan_to_num(chunk)
    chunk = np.asarray(chunk, dtype).reshape(3, 4)
    p = v3_pipeline(dtype, (3, 4), [{"name": "bytes", "configuration": {"endian": endian}},
                                     {"name": "zstd", "configuration": {"level": 1, "checksum": False}}])
    check_round_trip(p, chunk)
    plain = v3_pipeline(dtype, (3, 4), [{"name": "bytes", "configuration": {"endian": endian}}])
    swap = dtype.itemsize > 1 and dtype.kind in "iufcmMU"
    stored = dtype.newbyteorder("<" if endian == "little" else ">") if swap else dtype
    assert bytes(plain.encode(chunk)) == chunk.astype(stored).tobytes()


def test_utf32_endianness_matches_zarr_python():
    # Bytes observed from zarr-python 3.1.6 for ["ab", "c"] as <U2.
    chunk = np.array(["ab", "c"], "<U2")
    big = v3_pipeline("<U2", (2,), [BYTES_BE]).encode(chunk)
    little = v3_pipeline("<U2", (2,), [BYTES_LE]).encode(chunk)
    assert bytes(big).hex() == "00000061000000620000006300000000"
    assert bytes(little).hex() == "61000000620000006300000000000000"


def test_one_byte_types_ignore_missing_endian():
    chunk = np.arange(6, dtype="uint8").reshape(2, 3)
    p = v3_pipeline("uint8", (2, 3), [{"name": "bytes"}])
    assert bytes(p.encode(chunk)) == chunk.tobytes()
    with pytest.raises(UnsupportedCodecError, match="endian"):
        v3_pipeline("int16", (2,), [{"name": "bytes"}])


@pytest.mark.parametrize(
    "dtype,codec,make",
    [
        ("<i4", {"name": "numcodecs.delta", "configuration": {"dtype": "<i4"}}, lambda s: smooth(s, "<i4")),
        ("<i8", {"name": "numcodecs.delta", "configuration": {"dtype": "<i8", "astype": "<i2"}},
         lambda s: smooth(s, "<i8") % 50),
        ("<f8", {"name": "numcodecs.fixedscaleoffset",
                 "configuration": {"offset": 0, "scale": 10, "dtype": "<f8", "astype": "<u2"}},
         lambda s: np.round(smooth(s, "<f8") / 10, 1)),
        ("<f4", {"name": "numcodecs.bitround", "configuration": {"keepbits": 23}},
         lambda s: smooth(s, "<f4") / 7),
        ("bool", {"name": "numcodecs.packbits", "configuration": {}}, lambda s: smooth(s) % 3 == 0),
        ("<f8", {"name": "numcodecs.astype", "configuration": {"encode_dtype": "<f4", "decode_dtype": "<f8"}},
         lambda s: smooth(s, "<f8") / 4),
    ],
    ids=lambda x: x["name"] if isinstance(x, dict) else "",
)
@pytest.mark.parametrize("transpose", [False, True])
def test_numcodecs_filters(dtype, codec, make, transpose):
    shape = (5, 6)
    chunk = make(shape).astype(dtype)
    a2a = [TransposeCodec((1, 0))] if transpose else []
    zstd = {"name": "zstd", "configuration": {"level": 1, "checksum": False}}
    p = v3_pipeline(dtype, shape, a2a + [codec, BYTES_BE, zstd])
    check_round_trip(p, chunk)


def test_quantize_filter():
    chunk = smooth((4, 4), "<f8") / 3
    quantize = {"name": "numcodecs.quantize", "configuration": {"digits": 3, "dtype": "<f8"}}
    p = v3_pipeline("<f8", (4, 4), [quantize, BYTES_LE])
    np.testing.assert_allclose(p.decode(p.encode(chunk)), chunk, atol=1e-3)


def test_vlen_strings():
    chunk = np.array([["a", "bb", ""], ["ccc", "é", "x"]], dtype=object)
    for transpose in ([], [TransposeCodec((1, 0))]):
        p = v3_pipeline(object, chunk.shape, transpose + [VLenUTF8Codec(), ZstdCodec(1)])
        check_round_trip(p, chunk)
    data = v3_pipeline(object, chunk.shape, [VLenUTF8Codec()]).encode(chunk)
    assert bytes(data) == numcodecs.VLenUTF8().encode(chunk.reshape(-1))
    if STRING_DTYPE is not None:  # numpy >= 2
        strings = np.array(["a", "bb"], dtype=STRING_DTYPE)
        p = v3_pipeline(strings.dtype, (2,), [VLenUTF8Codec()])
        assert p.decode(p.encode(strings)).tolist() == ["a", "bb"]
    holes = np.empty(3, object)
    holes[1] = "x"
    assert v3_pipeline(object, (3,), [VLenUTF8Codec()]).decode(
        v3_pipeline(object, (3,), [VLenUTF8Codec()]).encode(holes)).tolist() == ["", "x", ""]
    blobs = np.array([b"\x00", b"", b"abc"], dtype=object)
    p = v3_pipeline(object, (3,), [VLenBytesCodec(), Crc32cCodec()])
    assert p.decode(p.encode(blobs)).tolist() == [b"\x00", b"", b"abc"]


def test_codec_objects_round_trip_json():
    for codec in (BytesCodec(), BytesCodec(None), BytesCodec("big"), TransposeCodec((2, 0, 1)),
                  BloscCodec(), BloscCodec("zstd", 9, "bitshuffle", 8, 1024), GzipCodec(1),
                  ZstdCodec(3, True), Crc32cCodec(), VLenUTF8Codec(), VLenBytesCodec(),
                  NumcodecsCodec("delta", {"dtype": "<i4"})):
        doc = codec.to_json()
        json.dumps(doc)
        assert codec_from_json(doc) == codec
    assert BloscCodec(shuffle=1) == BloscCodec(shuffle="shuffle")
    assert codec_from_json({"name": "transpose", "configuration": {"order": "C"}}).permutation(2) == (0, 1)


# -- decode_into fast path ------------------------------------------------------------
def test_fast_path_used_for_stored_layout():
    chunk = smooth((16, 16))
    blosc = BloscCodec(typesize=2)
    for codecs, fast in [
        ([BytesCodec(), blosc], True),
        ([TransposeCodec((1, 0)), BytesCodec(), blosc], True),
        ([BytesCodec(), ZstdCodec()], True),
        ([BytesCodec(), blosc, Crc32cCodec()], True),
        ([BytesCodec()], True),
        ([BytesCodec(), GzipCodec()], False),
        ([NumcodecsCodec("delta", {"dtype": "<u2"}), BytesCodec(), blosc], False),
    ]:
        p = v3_pipeline("uint16", chunk.shape, codecs)
        assert p._fast is fast, codecs
        check_round_trip(p, chunk)


def test_big_endian_fast_path_swaps_in_place():
    chunk = smooth((8, 8))
    p = v3_pipeline("uint16", chunk.shape, [BytesCodec("big"), BloscCodec(typesize=2)])
    out = np.empty(chunk.shape, "<u2")
    p.decode_into(p.encode(chunk), out)
    np.testing.assert_array_equal(out, chunk)
    out_be = np.empty(chunk.shape, ">u2")
    p.decode_into(p.encode(chunk), out_be)
    np.testing.assert_array_equal(out_be, chunk)


# -- errors ----------------------------------------------------------------------------
@pytest.mark.parametrize("b2b", B2B[1:9], ids=lambda b: "+".join(c["name"] for c in b))
def test_corrupt_and_truncated(b2b):
    chunk = smooth((16, 16))
    p = v3_pipeline("uint16", chunk.shape, [BYTES_LE] + b2b)
    data = bytes(p.encode(chunk))
    for bad in (data[: len(data) // 2], data[:-3], b"garbage!" * 4, b""):
        with pytest.raises(ChunkDecodeError, match=f"'({'|'.join(c['name'] for c in b2b)}|bytes)'"):
            p.decode(bad)
        with pytest.raises(ChunkDecodeError):
            p.decode_into(bad, np.empty(chunk.shape, "uint16"))


@pytest.mark.parametrize("b2b", [[], B2B[1], B2B[5], B2B[4], B2B[9]], ids=str)
def test_wrong_decoded_size(b2b):
    data = v3_pipeline("uint16", (8, 8), [BYTES_LE] + b2b).encode(smooth((8, 8)))
    big = v3_pipeline("uint16", (8, 9), [BYTES_LE] + b2b)
    with pytest.raises(ChunkDecodeError, match="expected 144"):
        big.decode(data)
    with pytest.raises(ChunkDecodeError, match="expected 144"):
        big.decode_into(data, np.empty((8, 9), "uint16"))


def test_crc32c_mismatch():
    p = v3_pipeline("uint16", (4,), [BYTES_LE, {"name": "crc32c"}])
    data = bytearray(p.encode(np.arange(4, dtype="uint16")))
    assert int.from_bytes(data[-4:], "little") == google_crc32c.value(bytes(data[:-4]))
    data[2] ^= 0x10
    with pytest.raises(ChunkDecodeError, match="checksum mismatch"):
        p.decode(bytes(data))


@pytest.mark.parametrize(
    "codecs,match",
    [
        ([BYTES_LE, BYTES_LE], "two array->bytes"),
        ([{"name": "crc32c"}, BYTES_LE], "before the array->bytes"),
        ([BYTES_LE, {"name": "transpose", "configuration": {"order": [0]}}], "after the array->bytes"),
        ([{"name": "gzip", "configuration": {"level": 1}}], "before the array->bytes"),
        ([{"name": "transpose", "configuration": {"order": [0]}}], "no array->bytes"),
        ([{"name": "lzw"}], "'lzw'"),
        ([{"name": "numcodecs.frobnicate"}], "'numcodecs.frobnicate'"),
        ([{"name": "sharding_indexed", "configuration": {}}], "sharding"),
        ([{"name": "transpose", "configuration": {"order": [0, 0]}}, BYTES_LE], "permutation"),
        ([{"name": "transpose", "configuration": {"order": [1, 0]}}, BYTES_LE], "dimensions"),
        ([BYTES_LE, {"name": "gzip", "configuration": {"level": 12}}], "level"),
        ([BYTES_LE, {"name": "blosc", "configuration": {"cname": "lzx"}}], "cname"),
        ([BYTES_LE, {"name": "zstd", "configuration": {"level": 1, "bogus": 2}}], "bogus"),
        ([{"name": "bytes", "configuration": {"endian": "middle"}}], "endian"),
        ([{"name": "vlen-utf8"}], "variable-length"),
        ([{"nam": "bytes"}], "name"),
    ],
)
def test_build_errors(codecs, match):
    with pytest.raises(UnsupportedCodecError, match=match):
        v3_pipeline("uint16", (4,), codecs)


def test_object_with_bytes_codec_and_pickle():
    with pytest.raises(UnsupportedCodecError, match="vlen-utf8"):
        v3_pipeline(object, (2,), [BYTES_LE])
    with pytest.raises(UnsafeCodecError, match="pickle"):
        v3_pipeline(object, (2,), [{"name": "numcodecs.pickle"}])
    p = v3_pipeline(object, (2,), [{"name": "numcodecs.pickle"}], allow_pickle=True)
    assert p.encode(np.array(["a", 1], object))


def test_encode_errors_and_no_alias():
    p = v3_pipeline("uint16", (2, 2), [BYTES_LE])
    with pytest.raises(ChunkEncodeError, match=r"\(2, 2\)"):
        p.encode(np.zeros(4, "uint16"))
    chunk = np.arange(4, dtype="uint16").reshape(2, 2)
    data = p.encode(chunk)
    chunk[:] = 9
    assert p.decode(data).tolist() == [[0, 1], [2, 3]]
    with pytest.raises(ValueError, match="shape"):
        p.decode_into(data, np.empty(4, "uint16"))


# -- properties -------------------------------------------------------------------------
@settings(max_examples=40, deadline=None)
@given(
    shape=st.lists(st.integers(1, 4), min_size=0, max_size=3).map(tuple),
    dtype=st.sampled_from(["uint16", "int32", "float64", "uint8", "bool"]),
    endian=st.sampled_from(["little", "big"]),
    reverse=st.booleans(),
    b2b=st.sampled_from(B2B[:8]),
)
def test_property_round_trip(shape, dtype, endian, reverse, b2b):
    chunk = RNG.integers(0, 100, size=shape).astype(dtype)
    a2a = [TransposeCodec(tuple(range(len(shape)))[::-1])] if reverse else []
    p = v3_pipeline(dtype, shape, a2a + [BytesCodec(endian)] + b2b)
    np.testing.assert_array_equal(p.decode(p.encode(chunk)), chunk)
    out = np.empty(shape, dtype)
    p.decode_into(p.encode(chunk), out)
    np.testing.assert_array_equal(out, chunk)


# -- zarr-python 3 compatibility ----------------------------------------------------------
try:
    import zarr
except ImportError:  # a test peer: only the tests that use it are skipped
    zarr = None
needs_zarr = pytest.mark.skipif(zarr is None, reason="zarr-python is not installed")


def zarr_cases():
    import zarr.codecs.numcodecs as znc
    from zarr.codecs import BloscCodec as ZB
    from zarr.codecs import BytesCodec as ZBytes
    from zarr.codecs import Crc32cCodec as ZC
    from zarr.codecs import GzipCodec as ZG
    from zarr.codecs import TransposeCodec as ZT
    from zarr.codecs import ZstdCodec as ZZ

    warnings.simplefilter("ignore")  # zarr warns that numcodecs.* codecs are not in the spec
    return [
        ("uint16", {}, None),
        ("int32", dict(serializer=ZBytes(endian="big"),
                       compressors=[ZB(cname="zstd", shuffle="bitshuffle")]), None),
        ("float64", dict(filters=[ZT(order=(1, 0))], compressors=[ZG(level=1), ZC()]), None),
        ("uint8", dict(compressors=[ZZ(level=3, checksum=True)]), None),
        ("int32", dict(filters=[znc.Delta(dtype="<i4")], compressors=[znc.BZ2(level=1)]), None),
        ("<U3", dict(compressors=[ZB(cname="lz4")]), None),
        ("str", {}, object),
    ]


with warnings.catch_warnings():
    ZARR_CASES = zarr_cases() if zarr is not None else []


@needs_zarr
@pytest.mark.parametrize("dtype,kwargs,as_dtype", ZARR_CASES, ids=lambda x: str(x)[:30])
def test_zarr_python_interop(tmp_path, dtype, kwargs, as_dtype):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        a = zarr.create_array(tmp_path / "a", shape=(6, 10), chunks=(3, 5), zarr_format=3,
                              dtype=str if dtype == "str" else dtype,
                              fill_value=None if dtype == "str" else 0, **kwargs)
        values = (np.arange(60).reshape(6, 10) % 200).astype(dtype if dtype != "str" else "U3")
        a[:] = values
        meta = json.loads((tmp_path / "a" / "zarr.json").read_text())
        ours_dtype = as_dtype or np.dtype(dtype)
        p = v3_pipeline(ours_dtype, meta["chunk_grid"]["configuration"]["chunk_shape"], meta["codecs"])
        np.testing.assert_array_equal(p.decode((tmp_path / "a" / "c" / "1" / "1").read_bytes()),
                                      np.asarray(a[3:6, 5:10]))
        new = values[0:3, 0:5][::-1].copy().astype(ours_dtype)
        (tmp_path / "a" / "c" / "0" / "0").write_bytes(bytes(p.encode(new)))
        np.testing.assert_array_equal(np.asarray(zarr.open_array(tmp_path / "a", mode="r")[0:3, 0:5]), new)


def test_numcodecs_blosc_without_typesize_sees_bytes_like_zarr_python():
    chunk = smooth((16, 16))
    p = v3_pipeline("uint16", chunk.shape, [BYTES_LE, {"name": "numcodecs.blosc", "configuration": {
        "cname": "lz4", "clevel": 5, "shuffle": 1, "blocksize": 0}}])
    data = check_round_trip(p, chunk)
    assert data == bytes(numcodecs.Blosc("lz4", 5, 1).encode(chunk.tobytes()))
    assert data[3] == 1  # typesize 1, as zarr-python hands numcodecs a byte buffer


@pytest.mark.parametrize("b2b", [[], B2B[1], B2B[5], B2B[7], B2B[9]], ids=str)
def test_buffer_input_types(b2b):
    chunk = smooth((8, 8))
    p = v3_pipeline("uint16", chunk.shape, [BYTES_LE] + b2b)
    data = bytes(p.encode(chunk))
    for buf in (data, bytearray(data), memoryview(data), np.frombuffer(data, np.uint8)):
        np.testing.assert_array_equal(p.decode(buf), chunk)
        out = np.empty_like(chunk)
        p.decode_into(buf, out)
        np.testing.assert_array_equal(out, chunk)


@pytest.mark.parametrize(
    "codecs",
    [
        [{"name": "transpose", "configuration": {"order": [1, 0]}}, BYTES_BE,
         {"name": "blosc", "configuration": {"cname": "zstd", "clevel": 3, "shuffle": "shuffle"}},
         {"name": "crc32c"}],
        [BYTES_LE, {"name": "zstd", "configuration": {"level": 1}}],
        [BYTES_LE, {"name": "blosc", "configuration": {"cname": "lz4", "clevel": 5, "shuffle": "noshuffle"}}],
    ],
    ids=["transpose-be-blosc-crc", "zstd", "blosc-noshuffle"],
)
def test_tensorstore_interop(tmp_path, codecs):
    ts = pytest.importorskip("tensorstore")
    spec = {
        "driver": "zarr3",
        "kvstore": {"driver": "file", "path": str(tmp_path)},
        "metadata": {"shape": [4, 6], "data_type": "int32", "codecs": codecs,
                     "chunk_grid": {"name": "regular", "configuration": {"chunk_shape": [4, 6]}}},
        "create": True,
    }
    arr = ts.open(spec).result()
    values = smooth((4, 6), "int32")
    arr[...] = values
    meta = json.loads((tmp_path / "zarr.json").read_text())
    p = v3_pipeline("int32", (4, 6), meta["codecs"])  # as tensorstore completed them
    np.testing.assert_array_equal(p.decode((tmp_path / "c" / "0" / "0").read_bytes()), values)
    new = values[::-1].copy()
    (tmp_path / "c" / "0" / "0").write_bytes(bytes(p.encode(new)))
    reopened = ts.open({"driver": "zarr3", "kvstore": spec["kvstore"]}, context=ts.Context()).result()
    np.testing.assert_array_equal(reopened.read().result(), new)


def test_blosc_typed_view_fallback_for_old_numcodecs():
    # numcodecs < 0.16 has no typesize argument: the stage views the bytes as V<n>.
    from chunkflow.codecs.stages import BloscStage

    chunk = smooth((16, 16))
    stage = BloscStage("blosc", numcodecs.Blosc("lz4", 5, 1), view_typesize=2)
    data = bytes(stage.encode(chunk.reshape(-1).view(np.uint8)))
    assert data[3] == 2 and data == bytes(numcodecs.Blosc("lz4", 5, 1).encode(chunk))


def test_blosc_without_a_typesize_argument_views_typed_items(
        monkeypatch: pytest.MonkeyPatch) -> None:
    # As with numcodecs < 0.16: build_numcodec leaves typesize out (the constructor would
    # refuse it), and the stage views the bytes it is given as V<typesize> instead.
    from chunkflow.codecs import stages

    config = {"id": "blosc", "cname": "lz4", "clevel": 5, "shuffle": 1, "typesize": 2}
    raw = smooth((32, 32)).reshape(-1).view(np.uint8)  # bytes, as after another codec
    with_typesize = bytes(make_bytes_stage("blosc", config).encode(raw))
    monkeypatch.setattr(stages, "BLOSC_TAKES_TYPESIZE", False)
    assert build_numcodec(config).get_config().get("typesize") is None
    for stage in (make_bytes_stage("blosc", config),
                  make_bytes_stage("blosc", {**config, "typesize": None}, typesize=2)):
        assert bytes(stage.encode(raw)) == with_typesize
    assert with_typesize[3] == 2  # the blosc header's typesize byte


def test_outputs_of_another_dtype_shuffle_their_own_item_size(tmp_path: Path) -> None:
    blosc = {"name": "blosc", "configuration": {"cname": "lz4", "clevel": 5,
                                                "shuffle": "shuffle", "typesize": 2}}
    source = chunkflow.create_array(None, shape=(64, 64), chunks=(32, 32), dtype="u2",
                                    zarr_format=3, compressors=[blosc])
    source[:] = np.arange(64 * 64).reshape(64, 64)
    floats = chunkflow.zeros_like(source, dtype="f4")
    out = chunkflow.map_chunks(lambda block: block / 3, source, dtype="f4",
                               out=str(tmp_path / "out.zarr"))
    same = chunkflow.zeros_like(source)
    for array, typesize in ((floats, 4), (out, 4), (same, 2)):
        (codec,) = [c for c in array.metadata.codecs if c["name"] == "blosc"]
        assert codec["configuration"]["typesize"] == typesize
    np.testing.assert_allclose(out[:], source[:] / 3, rtol=1e-6)
