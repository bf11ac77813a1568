"""Tests of the Zarr v2 codec pipeline (chunkflow.codecs.pipeline_v2)."""

from __future__ import annotations

import json
import warnings

import numcodecs
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from chunkflow.codecs import v2_pipeline
from chunkflow.errors import (
    ChunkDecodeError,
    ChunkEncodeError,
    UnsafeCodecError,
    UnsupportedCodecError,
)

pytestmark = pytest.mark.lowest_deps  # also run at the lowest dependency versions

RNG = np.random.default_rng(42)


def smooth(shape: tuple[int, ...], dtype: str = "<u2") -> np.ndarray:
    grid = np.indices(shape).sum(axis=0) % 4096
    return (grid + RNG.integers(0, 4, size=shape)).astype(dtype)


def check_round_trip(p, chunk: np.ndarray) -> bytes:
    data = p.encode(chunk)
    np.testing.assert_array_equal(p.decode(data), chunk)
    for out in (
        np.empty(chunk.shape, p.dtype, order="C"),
        np.empty(chunk.shape, p.dtype, order="F"),
        np.empty((chunk.shape[0] * 2,) + chunk.shape[1:], p.dtype)[::2],  # strided view
    ):
        p.decode_into(data, out)
        np.testing.assert_array_equal(out, chunk)
    decoded = p.decode(data)
    assert decoded.flags.writeable and decoded.dtype == p.dtype
    return bytes(data)


BLOSC = [
    {"id": "blosc", "cname": cname, "clevel": 5, "shuffle": shuffle, "blocksize": 0}
    for cname in numcodecs.blosc.list_compressors()
    for shuffle in (0, 1, 2, -1)
]
OTHER = [
    {"id": "zstd", "level": 1, "checksum": False},
    {"id": "zstd", "level": 3, "checksum": True},
    {"id": "zlib", "level": 1},
    {"id": "gzip", "level": 1},
    {"id": "bz2", "level": 1},
    {"id": "lzma"},
    {"id": "lz4", "acceleration": 1},
    {"id": "crc32c"},
    None,
]


@pytest.mark.parametrize("compressor", BLOSC + OTHER, ids=lambda c: json.dumps(c))
@pytest.mark.parametrize("order", ["C", "F"])
def test_compressor_round_trip(compressor, order):
    chunk = smooth((20, 30))
    p = v2_pipeline("<u2", chunk.shape, order, None, compressor)
    data = check_round_trip(p, chunk)
    # Byte-compatible with numcodecs applied to the chunk in the stored order, as
    # zarr-python writes it (blosc is deterministic).
    if compressor is not None and compressor["id"] in ("blosc", "zstd", "zlib"):
        stored = np.asarray(chunk, order=order).reshape(-1, order=order)
        ref = numcodecs.get_codec(dict(compressor)).encode(stored)
        assert data == bytes(ref)


def test_blosc_typesize_follows_itemsize():
    chunk = smooth((64, 64))
    shuffled = v2_pipeline("<u2", chunk.shape, "C", None, {"id": "blosc", "cname": "lz4", "shuffle": 1})
    data = bytes(shuffled.encode(chunk))
    assert data[3] == 2  # the blosc header's typesize byte


FILTERS = [
    ("<i4", [{"id": "delta", "dtype": "<i4"}], lambda s: smooth(s, "<i4")),
    ("<i8", [{"id": "delta", "dtype": "<i8", "astype": "<i2"}], lambda s: smooth(s, "<i8") % 100),
    ("<f8", [{"id": "fixedscaleoffset", "offset": 0, "scale": 10, "dtype": "<f8", "astype": "<u2"}],
     lambda s: np.round(smooth(s, "<f8") / 10, 1)),
    ("<f8", [{"id": "quantize", "digits": 3, "dtype": "<f8"}], None),
    ("<f4", [{"id": "bitround", "keepbits": 23}], lambda s: smooth(s, "<f4") / 7),
    ("|b1", [{"id": "packbits"}], lambda s: smooth(s) % 3 == 0),
    ("<f8", [{"id": "astype", "encode_dtype": "<f4", "decode_dtype": "<f8"}], lambda s: smooth(s, "<f8") / 4),
    ("<u2", [{"id": "shuffle", "elementsize": 2}], smooth),
    ("<u2", [{"id": "delta", "dtype": "<u2"}, {"id": "shuffle", "elementsize": 2}], smooth),
]


@pytest.mark.parametrize("dtype,filters,make", FILTERS, ids=lambda x: getattr(x, "__name__", str(x))[:40])
@pytest.mark.parametrize("order", ["C", "F"])
@pytest.mark.parametrize("compressor", [None, {"id": "zstd", "level": 1}])
def test_filter_round_trip(dtype, filters, make, order, compressor):
    shape = (6, 7)
    if make is None:  # quantize is lossy: compare with its own precision
        chunk = smooth(shape, dtype) / 3
        p = v2_pipeline(dtype, shape, order, filters, compressor)
        np.testing.assert_allclose(p.decode(p.encode(chunk)), chunk, atol=1e-3)
        return
    chunk = make(shape).astype(dtype)
    check_round_trip(v2_pipeline(dtype, shape, order, filters, compressor), chunk)


OBJECT_FILTERS = [
    [{"id": "vlen-utf8"}],
    [{"id": "json2", "encoding": "utf-8"}],
    [{"id": "msgpack2", "raw": False, "use_bin_type": True, "use_single_float": False}],
    [{"id": "categorize", "labels": ["", "a", "bb", "ccc"], "dtype": "|O", "astype": "|u1"}],
]


@pytest.mark.parametrize("filters", OBJECT_FILTERS, ids=lambda f: f[0]["id"])
@pytest.mark.parametrize("order", ["C", "F"])
def test_object_round_trip(filters, order):
    chunk = np.array([["a", "bb", "ccc"], ["", "a", "bb"]], dtype=object)
    p = v2_pipeline("|O", chunk.shape, order, filters, {"id": "zstd", "level": 1})
    check_round_trip(p, chunk)


def test_vlen_bytes_and_missing_items():
    chunk = np.array([b"ab", b"", b"\x00\xff"], dtype=object)
    p = v2_pipeline("|O", (3,), "C", [{"id": "vlen-bytes"}], None)
    check_round_trip(p, chunk)
    # Missing items (None, as np.empty(dtype=object) holds) are stored as "".
    holes = np.empty(3, dtype=object)
    holes[1] = "x"
    p = v2_pipeline("|O", (3,), "C", [{"id": "vlen-utf8"}], None)
    assert p.decode(p.encode(holes)).tolist() == ["", "x", ""]


@pytest.mark.parametrize(
    "dtype",
    ["|b1", "|i1", "<i2", ">i4", "<u8", ">f4", "<f8", "<c8", ">c16", "|S5", "<U3", ">U2",
     "<M8[ns]", ">m8[s]", "|V4", [("a", "<i2"), ("b", ">f4")]],
    ids=str,
)
@pytest.mark.parametrize("compressor", [None, {"id": "blosc", "cname": "zstd", "shuffle": 1}, {"id": "zlib"}])
def test_dtypes(dtype, compressor):
    dtype = np.dtype(dtype)
    chunk = np.frombuffer(RNG.integers(0, 256, 12 * dtype.itemsize, dtype=np.uint8).tobytes(), dtype)
    if dtype.kind in "fc":
        chunk = np.nan_to_num(chunk)
    if dtype.kind == "U":
        chunk = np.array(["ab", "", "xyz"[: dtype.itemsize // 4]] * 4, dtype=dtype)
    if dtype.kind == "b":
        chunk = chunk.view(np.uint8) % 2 == 1
    chunk = chunk.reshape(3, 4)
    p = v2_pipeline(dtype, (3, 4), "F", None, compressor)
    data = check_round_trip(p, chunk)
    if compressor is None:  # item bytes in the dtype's own byte order, F layout
        assert data == np.asfortranarray(chunk).tobytes(order="F")


def test_encode_casts_and_does_not_alias():
    p = v2_pipeline("<u2", (2, 2), "C", None, None)
    chunk = np.array([[1, 2], [3, 4]], dtype="<u2")
    data = p.encode(chunk)
    chunk[0, 0] = 99  # must not change the encoded bytes
    assert p.decode(data)[0, 0] == 1
    assert bytes(p.encode(np.array([[1, 2], [3, 4]], dtype=">i8"))) == bytes(data)


def test_decode_into_other_dtype_and_readonly_input():
    p = v2_pipeline(">u2", (4,), "C", None, {"id": "blosc", "cname": "lz4", "shuffle": 1})
    chunk = np.arange(4, dtype=">u2")
    out = np.zeros(4, "<u2")  # native out for a big-endian array: decode then copy
    p.decode_into(memoryview(bytes(p.encode(chunk))), out)
    assert out.tolist() == [0, 1, 2, 3]
    data = bytearray(v2_pipeline("<u2", (4,), "C", None, None).encode(np.arange(4, dtype="<u2")))
    decoded = v2_pipeline("<u2", (4,), "C", None, None).decode(data)
    data[0] = 7  # the decoded chunk owns its memory
    assert decoded[0] == 0


# -- errors -------------------------------------------------------------------------
@pytest.mark.parametrize("compressor", [c for c in BLOSC[:4]] + OTHER[:-2], ids=lambda c: json.dumps(c))
def test_truncated_and_garbage(compressor):
    chunk = smooth((16, 16))
    p = v2_pipeline("<u2", chunk.shape, "C", None, compressor)
    data = bytes(p.encode(chunk))
    for bad in (data[: len(data) // 2], data[:-3], b"garbage" * 3, b""):
        with pytest.raises(ChunkDecodeError, match=repr(compressor["id"])):
            p.decode(bad)
        with pytest.raises(ChunkDecodeError):
            p.decode_into(bad, np.empty(chunk.shape, "<u2"))


@pytest.mark.parametrize("compressor", [None, BLOSC[1], OTHER[0], OTHER[2], OTHER[6]], ids=str)
def test_wrong_decoded_size(compressor):
    small = v2_pipeline("<u2", (8, 8), "C", None, compressor)
    big = v2_pipeline("<u2", (8, 9), "C", None, compressor)
    data = small.encode(smooth((8, 8)))
    with pytest.raises(ChunkDecodeError, match="expected 144"):
        big.decode(data)
    with pytest.raises(ChunkDecodeError, match="expected 144"):
        big.decode_into(data, np.empty((8, 9), "<u2"))


def test_crc32c_mismatch():
    p = v2_pipeline("<u2", (4,), "C", None, {"id": "crc32c"})
    data = bytearray(p.encode(np.arange(4, dtype="<u2")))
    data[0] ^= 1
    with pytest.raises(ChunkDecodeError, match="checksum"):
        p.decode(bytes(data))


def test_filter_decode_error_names_filter():
    p = v2_pipeline("|O", (3,), "C", [{"id": "vlen-utf8"}], None)
    with pytest.raises(ChunkDecodeError, match="vlen-utf8"):
        p.decode(b"\x05\x00\x00\x00abc")
    p = v2_pipeline("|O", (4,), "C", [{"id": "vlen-utf8"}], None)
    three = v2_pipeline("|O", (3,), "C", [{"id": "vlen-utf8"}], None).encode(np.array(["a"] * 3, object))
    with pytest.raises(ChunkDecodeError, match="decoded 3 items, expected 4"):
        p.decode(three)


def test_pickle_refused_unless_allowed(monkeypatch):
    with pytest.raises(UnsafeCodecError, match="pickle"):
        v2_pipeline("|O", (2,), "C", [{"id": "pickle"}], None)
    p = v2_pipeline("|O", (2,), "C", [{"id": "pickle"}], None, allow_pickle=True)
    chunk = np.array([{"a": 1}, [2]], dtype=object)
    data = p.encode(chunk)
    # allow_pickle=True is the per-array opt-in: numcodecs' process-wide switch
    # (numcodecs >= 0.16.6) is neither needed nor changed.
    if hasattr(numcodecs.pickles, "ALLOW_UNSAFE_PICKLE_DECODE"):
        monkeypatch.setattr(numcodecs.pickles, "ALLOW_UNSAFE_PICKLE_DECODE", False)
    assert p.decode(data).tolist() == [{"a": 1}, [2]]
    assert not getattr(numcodecs.pickles, "ALLOW_UNSAFE_PICKLE_DECODE", False)


def test_build_errors():
    with pytest.raises(UnsupportedCodecError, match="'nope'"):
        v2_pipeline("<u2", (2,), "C", None, {"id": "nope"})
    with pytest.raises(UnsupportedCodecError, match="'frobnicate'"):
        v2_pipeline("<u2", (2,), "C", [{"id": "frobnicate"}], None)
    with pytest.raises(UnsupportedCodecError, match="object codec"):
        v2_pipeline("|O", (2,), "C", None, {"id": "zstd"})
    with pytest.raises(UnsupportedCodecError, match="order"):
        v2_pipeline("<u2", (2,), "K", None, None)
    p = v2_pipeline("<u2", (2, 2), "C", None, None)
    with pytest.raises(ChunkEncodeError, match=r"\(2, 2\)"):
        p.encode(np.zeros((2, 3), "<u2"))
    with pytest.raises(ValueError, match="shape"):
        p.decode_into(p.encode(np.zeros((2, 2), "<u2")), np.zeros((4,), "<u2"))


# -- properties -------------------------------------------------------------------
@settings(max_examples=40, deadline=None)
@given(
    shape=st.lists(st.integers(1, 5), min_size=0, max_size=3).map(tuple),
    dtype=st.sampled_from(["<u2", ">i4", "<f8", "|u1", "|b1"]),
    order=st.sampled_from("CF"),
    compressor=st.sampled_from([None, BLOSC[1], BLOSC[2], OTHER[0], OTHER[2]]),
)
def test_property_round_trip(shape, dtype, order, compressor):
    chunk = (RNG.integers(0, 100, size=shape)).astype(dtype)
    p = v2_pipeline(dtype, shape, order, None, compressor)
    np.testing.assert_array_equal(p.decode(p.encode(chunk)), chunk)
    out = np.empty(shape, dtype, order=order)
    p.decode_into(p.encode(chunk), out)
    np.testing.assert_array_equal(out, chunk)


# -- zarr-python 3 compatibility ----------------------------------------------------
try:
    import zarr
except ImportError:  # a test peer: only the tests that use it are skipped
    zarr = None
needs_zarr = pytest.mark.skipif(zarr is None, reason="zarr-python is not installed")


@needs_zarr
@pytest.mark.parametrize(
    "dtype,order,filters,compressor",
    [
        ("<u2", "C", None, numcodecs.Blosc("lz4", 5, 1)),
        (">i4", "F", [numcodecs.Delta(">i4")], numcodecs.Blosc("zstd", 3, -1)),
        ("<f8", "C", [numcodecs.Quantize(2, "<f8")], numcodecs.Zlib(1)),
        ("|O", "C", [numcodecs.VLenUTF8()], numcodecs.Zstd(1)),
    ],
    ids=["blosc", "delta-F-auto", "quantize", "vlen"],
)
def test_zarr_python_interop(tmp_path, dtype, order, filters, compressor):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        kwargs = {"dtype": str} if dtype == "|O" else {"dtype": dtype}
        a = zarr.create_array(tmp_path / "a", shape=(6, 10), chunks=(3, 5), zarr_format=2, order=order,
                              filters=filters, compressors=compressor, fill_value=None, **kwargs)
        values = (np.arange(60).reshape(6, 10) * 1.25).astype(dtype if dtype != "|O" else "U4").astype(
            dtype if dtype != "|O" else object)
        a[:] = values
    meta = json.loads((tmp_path / "a" / ".zarray").read_text())
    p = v2_pipeline(meta["dtype"], meta["chunks"], meta["order"], meta["filters"], meta["compressor"])
    chunk = p.decode((tmp_path / "a" / "1.1").read_bytes())
    np.testing.assert_array_equal(chunk, np.asarray(a[3:6, 5:10]))
    # chunkflow writes, zarr-python reads
    new = values[0:3, 0:5][::-1].copy()
    (tmp_path / "a" / "0.0").write_bytes(bytes(p.encode(new)))
    reopened = zarr.open_array(tmp_path / "a", mode="r")
    np.testing.assert_array_equal(np.asarray(reopened[0:3, 0:5]), new)


def test_tensorstore_blosc_auto_shuffle(tmp_path):
    ts = pytest.importorskip("tensorstore")
    spec = {
        "driver": "zarr",
        "kvstore": {"driver": "file", "path": str(tmp_path)},
        "metadata": {"shape": [8, 8], "chunks": [8, 8], "dtype": "<u2",
                     "compressor": {"id": "blosc", "cname": "lz4", "clevel": 5, "shuffle": -1}},
        "create": True,
    }
    arr = ts.open(spec).result()
    values = smooth((8, 8))
    arr[...] = values
    meta = json.loads((tmp_path / ".zarray").read_text())
    assert meta["compressor"]["shuffle"] == -1
    p = v2_pipeline(meta["dtype"], meta["chunks"], meta["order"], meta["filters"], meta["compressor"])
    np.testing.assert_array_equal(p.decode((tmp_path / "0.0").read_bytes()), values)
