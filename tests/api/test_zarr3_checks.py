"""create_array refuses what zarr-python 3 refuses, with chunkflow errors that say what
fits, warns where it warns, and accepts what it accepts (each case runs in both)."""

from __future__ import annotations

import warnings
from pathlib import Path
from typing import Any

import numcodecs
import pytest

import chunkflow
from chunkflow.errors import ChunkflowError, MetadataError

BASE: dict[str, Any] = dict(shape=(10, 10), chunks=(5, 5), dtype="u1")
ZSTD = {"name": "zstd", "configuration": {"level": 1}}

# (id, keywords, chunkflow error, what the message says)
REFUSED: list[tuple[str, dict[str, Any], type, str]] = [
    ("shards-not-multiple", dict(chunks=(3, 3), shards=(10, 10)), MetadataError,
     r"multiple of chunks \(3, 3\).*shards=\(9, 9\) or shards=\(12, 12\)"),
    ("shards-ndim", dict(shards=(10,)), MetadataError,
     r"shards \(10,\) must have one entry per dimension of shape \(10, 10\)"),
    ("shards-v2", dict(shards=(10, 10), zarr_format=2), MetadataError, "only in Zarr v3"),
    ("serializer-v2", dict(serializer={"name": "bytes"}, zarr_format=2), MetadataError,
     "Zarr v2 arrays have no serializer"),
    ("dimension-names-v2", dict(dimension_names=["y", "x"], zarr_format=2), MetadataError,
     "_ARRAY_DIMENSIONS"),
    ("filters-bytes-to-bytes", dict(filters=[ZSTD]), MetadataError,
     r"filters\[0\] 'zstd' is a bytes->bytes codec.*pass it in compressors="),
    ("compressors-array-to-bytes", dict(compressors=[{"name": "bytes"}]), MetadataError,
     r"compressors\[0\] 'bytes' is an array->bytes codec.*pass it in serializer="),
    ("compressors-array-to-array", dict(compressors=[
        {"name": "transpose", "configuration": {"order": [1, 0]}}]), MetadataError,
     r"'transpose' is an array->array codec.*pass it in filters="),
    ("serializer-bytes-to-bytes", dict(serializer=ZSTD), MetadataError,
     "serializer 'zstd' is a bytes->bytes codec"),
    ("serializer-list", dict(serializer=[{"name": "bytes"}]), MetadataError,
     "takes one array->bytes codec, got a list"),
    ("key-encoding-default-v2", dict(chunk_key_encoding={"name": "default"}, zarr_format=2),
     MetadataError, "Zarr v2 arrays use the 'v2' encoding"),
    ("key-encoding-name", dict(chunk_key_encoding={"name": "weird"}), MetadataError,
     "chunk_key_encoding must be 'default' or 'v2'"),
    ("key-encoding-separator", dict(chunk_key_encoding={"name": "default", "separator": "-"}),
     MetadataError, "separator '/' or '.'"),
    ("dimension-names-length", dict(dimension_names=["y"]), MetadataError,
     "one entry per dimension"),
    ("v2-two-compressors", dict(compressors=[numcodecs.Zstd(), numcodecs.Zlib()],
                                zarr_format=2), MetadataError, "one compressor, got 2"),
    ("v2-v3-filter", dict(filters=[{"name": "transpose", "configuration": {"order": [1, 0]}}],
                          zarr_format=2), MetadataError, "no numcodecs"),
    ("fill-value", dict(fill_value="abc"), MetadataError, "expected an integer"),
]


@pytest.mark.parametrize(("keywords", "error", "message"), [r[1:] for r in REFUSED],
                         ids=[r[0] for r in REFUSED])
def test_refused_like_zarr_python(keywords: dict[str, Any], error: type, message: str) -> None:
    zarr = pytest.importorskip("zarr")
    with pytest.raises(Exception):  # noqa: B017 - zarr-python's errors vary by case
        zarr.create_array({}, **{**BASE, **keywords})
    with pytest.raises(error, match=message) as caught:
        chunkflow.create_array(None, **{**BASE, **keywords})
    assert isinstance(caught.value, ChunkflowError)


def test_compressor_and_compressors_together_are_refused() -> None:
    # zarr-python 3's create_array has no compressor= at all; chunkflow keeps
    # zarr-python 2's spelling working alone, and refuses the two together.
    with pytest.raises(MetadataError, match="compressors= .* or compressor= .*, not both"):
        chunkflow.create_array(None, compressor=numcodecs.Zstd(), compressors=numcodecs.Zlib(),
                               **BASE)
    z = chunkflow.create_array(None, compressor=numcodecs.Zlib(level=2), zarr_format=2, **BASE)
    assert z.compressor == numcodecs.Zlib(level=2)


def test_order_on_v3_warns_like_zarr_python() -> None:
    zarr = pytest.importorskip("zarr")
    with pytest.warns(RuntimeWarning, match="order"):
        zarr.create_array({}, order="F", **BASE)
    with pytest.warns(RuntimeWarning, match="order='F' has no effect on a Zarr v3 array"):
        z = chunkflow.create_array(None, order="F", **BASE)
    assert z.order == "C"


# Calls zarr-python 3 accepts that chunkflow must accept too, with the same layout.
ACCEPTED: list[dict[str, Any]] = [
    dict(serializer="auto", zarr_format=2),
    dict(chunk_key_encoding={"name": "v2", "separator": "/"}, zarr_format=2),
    dict(chunk_key_encoding={"name": "v2", "separator": "/"}),
    dict(chunk_key_encoding={"name": "default", "separator": "."}),
    dict(chunks="auto", shards=(10, 10)),
    dict(shape=(4096, 4096), chunks="auto", shards=(2048, 2048), dtype="u2"),
    dict(shape=(1000, 1000), chunks=(10, 10), shards="auto"),
    dict(filters=[{"name": "numcodecs.delta", "configuration": {"dtype": "u1"}}]),
]


@pytest.mark.parametrize("keywords", ACCEPTED, ids=lambda k: ",".join(f"{a}={b}" for a, b in k.items()))
def test_accepted_like_zarr_python(keywords: dict[str, Any], tmp_path: Path) -> None:
    zarr = pytest.importorskip("zarr")
    call = {**BASE, **keywords}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # shards="auto" and numcodecs.* warn in both
        theirs = zarr.create_array(str(tmp_path / "theirs.zarr"), **call)
        ours = chunkflow.create_array(str(tmp_path / "ours.zarr"), **call)
    assert (ours.chunks, ours.shards) == (theirs.chunks, theirs.shards)
    mine = zarr.open_array(str(tmp_path / "ours.zarr"), mode="r").metadata.to_dict()
    assert mine == theirs.metadata.to_dict()
