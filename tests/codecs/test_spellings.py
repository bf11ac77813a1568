"""Every way of spelling a codec opens and writes, and means what zarr-python says it means.

Two families:

- the keywords of zarr-python 3's ``create_array`` (``compressors=``, ``filters=``,
  ``serializer=``: ``None``, ``[]``, ``"auto"``, codec objects, dicts, one object not in a
  list), with and without ``shards=``: chunkflow writes the document zarr-python writes
  for the same call (where zarr-python accepts it), and the values each library writes
  read back bit for bit in the other;
- the ``zarr.json`` spellings the Zarr v3 specification allows: bare names
  (``"crc32c"``), ``{"name": ...}`` without ``configuration``, an empty
  ``configuration``, ``sharding_indexed`` inside ``sharding_indexed``, ``index_codecs``
  spelled either way. chunkflow opens each, writes it, and the chunks it writes are read
  by zarr-python (under the same document written out in full) with the same bits, and
  the other way round.
"""

from __future__ import annotations

import json
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import chunkflow

zarr = pytest.importorskip("zarr")
zc = pytest.importorskip("zarr.codecs")
numcodecs = pytest.importorskip("numcodecs")

SHAPE = (6, 5)
CHUNKS = (2, 3)  # edge chunks on both axes
SHARDS = (4, 6)  # two by two chunks, edge shards


def _data(dtype: str) -> np.ndarray:
    """Values with every byte significant (a byte-order mistake shows)."""
    values = np.arange(np.prod(SHAPE), dtype="u8") * 0x01010101_01010101 + 0x0102
    bits = values.astype(f"u{np.dtype(dtype).itemsize}").reshape(SHAPE)
    return bits.view(np.dtype(dtype).newbyteorder("=")).astype(dtype)


def _bits(a: np.ndarray) -> np.ndarray:
    native = a.astype(a.dtype.newbyteorder("="))
    return native.view(f"u{a.dtype.itemsize}")


def _assert_same_bits(actual: np.ndarray, expected: np.ndarray) -> None:
    assert actual.shape == expected.shape
    np.testing.assert_array_equal(_bits(np.asarray(actual, expected.dtype)), _bits(expected))


def _document(path: Path) -> dict[str, Any]:
    """The array's document as zarr-python reads it (not its JSON text)."""
    return json.loads(json.dumps(zarr.open_array(str(path), mode="r").metadata.to_dict()))


# -- create_array keywords ---------------------------------------------------------------

#: Each spelling: (id, keyword, factory of the value). Factories: a fresh object per call.
Factory = Callable[[], Any]
KEYWORD_SPELLINGS: list[tuple[str, str, Factory]] = [
    ("compressors=None", "compressors", lambda: None),
    ("compressors=[]", "compressors", lambda: []),
    ("compressors=()", "compressors", lambda: ()),
    ("compressors=auto", "compressors", lambda: "auto"),
    ("compressors=ZstdCodec", "compressors", lambda: zc.ZstdCodec(level=2)),
    ("compressors=[ZstdCodec]", "compressors", lambda: [zc.ZstdCodec(level=2)]),
    ("compressors=[Blosc(), crc32c]", "compressors", lambda: [zc.BloscCodec(), zc.Crc32cCodec()]),
    ("compressors=GzipCodec", "compressors", lambda: zc.GzipCodec(level=1)),
    ("compressors=dict", "compressors",
     lambda: {"name": "zstd", "configuration": {"level": 1, "checksum": True}}),
    ("compressors=[dict]", "compressors",
     lambda: [{"name": "gzip", "configuration": {"level": 3}}]),
    ("compressors={name}", "compressors", lambda: {"name": "crc32c"}),
    ("compressors=[{name}, dict]", "compressors",
     lambda: [{"name": "zstd", "configuration": {"level": 0, "checksum": False}},
              {"name": "crc32c"}]),
    ("compressors=numcodecs.zstd", "compressors", lambda: zc.numcodecs.Zstd(level=1)),
    ("filters=None", "filters", lambda: None),
    ("filters=[]", "filters", lambda: []),
    ("filters=auto", "filters", lambda: "auto"),
    ("filters=TransposeCodec", "filters", lambda: zc.TransposeCodec(order=(1, 0))),
    ("filters=[TransposeCodec]", "filters", lambda: [zc.TransposeCodec(order=(1, 0))]),
    ("filters=dict", "filters",
     lambda: {"name": "transpose", "configuration": {"order": [1, 0]}}),
    ("filters=[numcodecs.delta]", "filters", lambda: [zc.numcodecs.Delta(dtype="<i4")]),
    ("serializer=auto", "serializer", lambda: "auto"),
    ("serializer=BytesCodec", "serializer", lambda: zc.BytesCodec()),
    ("serializer=BytesCodec(big)", "serializer", lambda: zc.BytesCodec(endian="big")),
    ("serializer=dict", "serializer",
     lambda: {"name": "bytes", "configuration": {"endian": "big"}}),
    ("serializer={name}", "serializer", lambda: {"name": "bytes"}),
    ("serializer=ShardingCodec", "serializer",
     lambda: zc.ShardingCodec(chunk_shape=(1, 3), codecs=[zc.BytesCodec(), zc.ZstdCodec()])),
    # zarr-python refuses these: chunkflow refuses them too, or (numcodecs configs)
    # writes what zarr-python reads.
    ("compressors=crc32c (a name)", "compressors", lambda: "crc32c"),
    ("serializer=bytes (a name)", "serializer", lambda: "bytes"),
    ("serializer=[dict]", "serializer", lambda: [{"name": "bytes"}]),
    ("compressors=[None]", "compressors", lambda: [None]),
    ("compressors=BytesCodec (wrong stage)", "compressors", lambda: zc.BytesCodec()),
    ("compressors=numcodecs config", "compressors", lambda: {"id": "zstd", "level": 1}),
    ("filters=numcodecs config", "filters", lambda: {"id": "delta", "dtype": "<i4"}),
]


#: zarr_format=2: numcodecs objects and configs; one compressor at most.
V2_KEYWORD_SPELLINGS: list[tuple[str, str, Factory]] = [
    ("compressors=None", "compressors", lambda: None),
    ("compressors=[]", "compressors", lambda: []),  # zarr-python 3.1.6 refuses it, not ()
    ("compressors=()", "compressors", lambda: ()),
    ("compressors=auto", "compressors", lambda: "auto"),
    ("compressors=Zstd", "compressors", lambda: numcodecs.Zstd(level=2)),
    ("compressors=[Zstd]", "compressors", lambda: [numcodecs.Zstd(level=2)]),
    ("compressors=(Blosc,)", "compressors", lambda: (numcodecs.Blosc(cname="zstd"),)),
    ("compressors=config", "compressors", lambda: {"id": "zlib", "level": 1}),
    ("compressors=[config]", "compressors", lambda: [{"id": "gzip", "level": 3}]),
    ("compressors=[two]", "compressors",
     lambda: [numcodecs.Zstd(level=1), numcodecs.Zlib(level=1)]),
    ("filters=None", "filters", lambda: None),
    ("filters=[]", "filters", lambda: []),
    ("filters=auto", "filters", lambda: "auto"),
    ("filters=Delta", "filters", lambda: numcodecs.Delta(dtype="<i4")),
    ("filters=[Delta]", "filters", lambda: [numcodecs.Delta(dtype="<i4")]),
    ("filters=[config]", "filters", lambda: [{"id": "delta", "dtype": "<i4"}]),
    ("filters=config", "filters", lambda: {"id": "delta", "dtype": "<i4"}),
    ("serializer=auto", "serializer", lambda: "auto"),
    ("serializer=BytesCodec", "serializer", lambda: zc.BytesCodec()),
]


def _zarr_create(path: Path, call: dict[str, Any]) -> BaseException | None:
    try:
        zarr.create_array(str(path), **call)
    except Exception as err:  # zarr-python's refusal: its class is compared below
        return err
    return None


@pytest.mark.parametrize("sharded", [False, True], ids=["chunks", "shards"])
@pytest.mark.parametrize("dtype", ["<i4", "u1"])
@pytest.mark.parametrize(("keyword", "factory"), [s[1:] for s in KEYWORD_SPELLINGS],
                         ids=[s[0] for s in KEYWORD_SPELLINGS])
def test_create_array_keyword_spellings(keyword: str, factory: Factory, dtype: str,
                                        sharded: bool, tmp_path: Path) -> None:
    if "elta" in repr(factory()) and dtype != "<i4":
        pytest.skip("the delta filter names its dtype")
    call: dict[str, Any] = {"shape": SHAPE, "chunks": CHUNKS, "dtype": dtype, keyword: factory()}
    if sharded:
        call["shards"] = SHARDS
    ours, theirs = tmp_path / "ours.zarr", tmp_path / "theirs.zarr"
    refused = _zarr_create(theirs, dict(call, **{keyword: factory()}))
    if refused is not None:
        # Where zarr-python refuses, chunkflow may refuse too (a builtin class of the
        # same family) or write an array zarr-python reads.
        try:
            z = chunkflow.create_array(str(ours), **call)
        except (ValueError, TypeError):
            return
    else:
        z = chunkflow.create_array(str(ours), **call)
        assert _document(ours) == _document(theirs)
    data = _data(dtype)
    z[...] = data
    z[1:3, 2] = data[3:5, 0]
    expected = data.copy()
    expected[1:3, 2] = data[3:5, 0]
    _assert_same_bits(zarr.open_array(str(ours), mode="r")[...], expected)
    _assert_same_bits(chunkflow.open_array(str(ours), mode="r")[...], expected)
    if refused is None:
        peer = zarr.open_array(str(theirs), mode="r+")
        peer[...] = expected
        _assert_same_bits(chunkflow.open_array(str(theirs), mode="r")[...], expected)


@pytest.mark.parametrize(("keyword", "factory"), [s[1:] for s in V2_KEYWORD_SPELLINGS],
                         ids=[s[0] for s in V2_KEYWORD_SPELLINGS])
def test_create_array_v2_keyword_spellings(keyword: str, factory: Factory,
                                           tmp_path: Path) -> None:
    call: dict[str, Any] = {"shape": SHAPE, "chunks": CHUNKS, "dtype": "<i4",
                            "zarr_format": 2, keyword: factory()}
    ours, theirs = tmp_path / "ours.zarr", tmp_path / "theirs.zarr"
    refused = _zarr_create(theirs, dict(call, **{keyword: factory()}))
    try:
        z = chunkflow.create_array(str(ours), **call)
    except (ValueError, TypeError):
        assert refused is not None  # only what zarr-python refuses too
        return
    if refused is None:
        assert _document(ours) == _document(theirs)
    data = _data("<i4")
    z[...] = data
    _assert_same_bits(zarr.open_array(str(ours), mode="r")[...], data)
    if refused is None:
        zarr.open_array(str(theirs), mode="r+")[...] = data[::-1]
        _assert_same_bits(chunkflow.open_array(str(theirs), mode="r")[...], data[::-1])


def test_the_issue_call_writes_bytes_inside_the_shard(tmp_path: Path) -> None:
    # The regression from 0.1: compressors=None (or []) with shards raised "codecs must
    # be a non-empty list of codecs". zarr-python writes [bytes] inside the shard.
    for compressors in (None, []):
        ours, theirs = tmp_path / f"ours{compressors}", tmp_path / f"theirs{compressors}"
        call = dict(shape=(4096, 4096), chunks=(256, 256), shards=(4096, 4096), dtype="u2",
                    compressors=compressors)
        z = chunkflow.create_array(str(ours), **call)
        zarr.create_array(str(theirs), **call)
        assert _document(ours) == _document(theirs)
        inner = _document(ours)["codecs"][0]["configuration"]["codecs"]
        assert inner == [{"name": "bytes", "configuration": {"endian": "little"}}]
        z[100:300, 4000:] = 7
        assert int(zarr.open_array(str(ours), mode="r")[100:300, 4000:].sum()) == 7 * 200 * 96


# -- zarr.json spellings ------------------------------------------------------------------

def _sharding(chunk_shape: list[int], codecs: list[Any], **more: Any) -> dict[str, Any]:
    return {"name": "sharding_indexed",
            "configuration": {"chunk_shape": chunk_shape, "codecs": codecs, **more}}


LITTLE = {"name": "bytes", "configuration": {"endian": "little"}}
BIG = {"name": "bytes", "configuration": {"endian": "big"}}

#: (id, data_type, chunk grid, codecs as spelled). Each is also read in full spelling.
DOCUMENT_SPELLINGS: list[tuple[str, str, tuple[int, ...], list[Any]]] = [
    ("bare bytes", "uint8", CHUNKS, ["bytes"]),
    ("bare bytes, bare crc32c", "uint8", CHUNKS, ["bytes", "crc32c"]),
    ("name objects", "uint8", CHUNKS, [{"name": "bytes"}, {"name": "crc32c"}]),
    ("empty configuration", "uint8", CHUNKS,
     [{"name": "bytes", "configuration": {}}, {"name": "crc32c", "configuration": {}}]),
    ("bytes big, bare crc32c", "int32", CHUNKS, [BIG, "crc32c"]),
    ("shard: bare inner", "uint8", SHARDS, [_sharding([2, 3], ["bytes"])]),
    ("shard: bare inner and index", "uint8", SHARDS,
     [_sharding([2, 3], ["bytes", "crc32c"], index_codecs=[LITTLE, "crc32c"])]),
    ("shard: name objects", "uint8", SHARDS,
     [_sharding([2, 3], [{"name": "bytes"}],
                index_codecs=[LITTLE, {"name": "crc32c"}], index_location="end")]),
    ("shard: index without crc32c, at start", "int32", SHARDS,
     [_sharding([2, 3], [LITTLE], index_codecs=[BIG], index_location="start")]),
    ("shard: default index codecs", "int32", SHARDS, [_sharding([2, 3], [BIG, "crc32c"])]),
    ("shard: transpose and zstd inside", "int32", SHARDS,
     [_sharding([2, 3], [{"name": "transpose", "configuration": {"order": [1, 0]}}, LITTLE,
                         {"name": "zstd", "configuration": {"level": 1, "checksum": False}}],
                index_codecs=[LITTLE, "crc32c"])]),
    ("shard in shard", "int32", SHARDS,
     [_sharding([2, 6], [_sharding([2, 3], [LITTLE, "crc32c"])])]),
    ("shard in shard, bare names", "uint8", SHARDS,
     [_sharding([4, 3], [_sharding([2, 3], ["bytes"], index_codecs=[LITTLE, "crc32c"])],
                index_codecs=[BIG])]),
    ("shard then crc32c", "uint8", SHARDS, [_sharding([2, 3], ["bytes"]), "crc32c"]),
]


def _spelled_out(codec: Any) -> Any:
    """The same codec with bare names written as objects (what zarr-python 3.1 parses)."""
    if isinstance(codec, str):
        return {"name": codec}
    if codec.get("name") == "sharding_indexed":
        config = dict(codec["configuration"])
        for key in ("codecs", "index_codecs"):
            if key in config:
                config[key] = [_spelled_out(c) for c in config[key]]
        return {**codec, "configuration": config}
    return codec


def _write_document(folder: Path, data_type: str, grid: tuple[int, ...],
                    codecs: list[Any]) -> None:
    folder.mkdir(parents=True)
    doc = {"zarr_format": 3, "node_type": "array", "shape": list(SHAPE),
           "data_type": data_type,
           "chunk_grid": {"name": "regular", "configuration": {"chunk_shape": list(grid)}},
           "chunk_key_encoding": {"name": "default"}, "fill_value": 0, "codecs": codecs}
    (folder / "zarr.json").write_text(json.dumps(doc))


def _described(z: chunkflow.Array) -> list[str]:
    """The lines of ``z.info`` that do not depend on the document's length."""
    return [line for line in repr(z.info).splitlines()
            if not any(word in line for word in ("stored", "Storage ratio", "Store URL"))]


def _copy_chunks(source: Path, target: Path) -> None:
    shutil.copytree(source / "c", target / "c")


@pytest.mark.parametrize(("data_type", "grid", "codecs"), [s[1:] for s in DOCUMENT_SPELLINGS],
                         ids=[s[0] for s in DOCUMENT_SPELLINGS])
def test_document_spellings_open_and_write(data_type: str, grid: tuple[int, ...],
                                           codecs: list[Any], tmp_path: Path) -> None:
    data = _data(np.dtype(data_type).newbyteorder("<").str)
    full = [_spelled_out(c) for c in codecs]
    # chunkflow writes under the spelling; zarr-python reads the chunks under the
    # document written out in full: the same bits.
    ours, peer = tmp_path / "ours", tmp_path / "peer"
    _write_document(ours, data_type, grid, codecs)
    z = chunkflow.open_array(str(ours), mode="r+")
    z[...] = data
    z[1, 1:4] = data[4, :3]
    expected = data.copy()
    expected[1, 1:4] = data[4, :3]
    _assert_same_bits(z[...], expected)
    _assert_same_bits(chunkflow.open_array(str(ours), mode="r")[...], expected)
    _write_document(peer, data_type, grid, full)
    _copy_chunks(ours, peer)
    _assert_same_bits(zarr.open_array(str(peer), mode="r")[...], expected)
    # The short spelling describes the array as the full one does, and a rewritten
    # document (attributes changed) is one zarr-python parses.
    same = chunkflow.open_array(str(peer), mode="r+")
    described = ("filters", "serializer", "compressors", "shards", "chunks", "order")
    assert {k: repr(getattr(z, k)) for k in described} == \
        {k: repr(getattr(same, k)) for k in described}
    assert _described(z) == _described(same)
    z.attrs["rewritten"] = True
    _assert_same_bits(zarr.open_array(str(ours), mode="r")[...], expected)
    # zarr-python writes under the full spelling; chunkflow reads under the short one.
    theirs, short = tmp_path / "theirs", tmp_path / "short"
    _write_document(theirs, data_type, grid, full)
    zarr.open_array(str(theirs), mode="r+")[...] = data[::-1]
    _write_document(short, data_type, grid, codecs)
    _copy_chunks(theirs, short)
    _assert_same_bits(chunkflow.open_array(str(short), mode="r")[...], data[::-1])


def test_a_stored_sharding_codec_without_codecs_is_refused(tmp_path: Path) -> None:
    # Completion adds a serializer to new arrays only: a stored document must hold one.
    _write_document(tmp_path / "a", "uint8", SHARDS, [_sharding([2, 3], [])])
    with pytest.raises(chunkflow.errors.UnsupportedCodecError, match="array->bytes"):
        chunkflow.open_array(str(tmp_path / "a"), mode="r")
