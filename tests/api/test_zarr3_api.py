"""zarr-python 3's create_array keywords: chunkflow accepts the same calls and writes
metadata that zarr-python reads as equal to what it writes itself."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest

import chunkflow
from chunkflow.errors import MetadataError

# A table of common calls: keywords as a zarr-python 3 user writes them.
CALLS: list[dict[str, Any]] = [
    dict(shape=(100, 100), chunks=(10, 10), dtype="u2"),
    dict(shape=(100, 100), chunks=(10, 10), shards=(50, 50), dtype="f4"),
    dict(shape=(64,), chunks=(16,), dtype="i4", compressors=None),
    dict(shape=(64,), chunks=(16,), dtype="i4",
         compressors={"name": "zstd", "configuration": {"level": 3, "checksum": True}}),
    dict(shape=(64,), chunks=(16,), dtype="i4", compressors=[
        {"name": "blosc", "configuration": {"cname": "lz4", "clevel": 5, "shuffle": "shuffle",
                                            "typesize": 4, "blocksize": 0}}]),
    dict(shape=(8, 8), chunks=(4, 4), dtype="f8", fill_value=1.5, attributes={"a": 1},
         dimension_names=["y", "x"]),
    dict(shape=(8, 8), chunks=(4, 4), dtype="u1",
         filters=[{"name": "transpose", "configuration": {"order": [1, 0]}}]),
    dict(shape=(8, 8), chunks=(4, 4), dtype="u1",
         serializer={"name": "bytes", "configuration": {"endian": "big"}}),
    dict(shape=(8, 8), chunks=(4, 4), dtype="u1",
         chunk_key_encoding={"name": "v2", "separator": "."}),
    dict(shape=(100,), chunks=(10,), dtype="i4", zarr_format=2),
    dict(shape=(100,), chunks=(10,), dtype="i4", zarr_format=2, compressors=None),
    dict(shape=(100,), chunks=(10,), dtype="<f8", zarr_format=2,
         compressors={"id": "zlib", "level": 1}, fill_value=-1.0),
]


def _metadata(zarr: Any, path: Path) -> dict[str, Any]:
    return zarr.open_array(str(path), mode="r").metadata.to_dict()


@pytest.mark.parametrize("call", CALLS, ids=lambda c: ",".join(sorted(c)))
def test_same_call_same_metadata(call: dict[str, Any], tmp_path: Path) -> None:
    zarr = pytest.importorskip("zarr")
    ours, theirs = tmp_path / "ours.zarr", tmp_path / "theirs.zarr"
    z = chunkflow.create_array(str(ours), **call)
    zarr.create_array(str(theirs), **call)
    assert _metadata(zarr, ours) == _metadata(zarr, theirs)
    # And the data round-trips between them.
    data = (np.arange(np.prod(call["shape"])) % 100).reshape(call["shape"]).astype(call["dtype"])
    z[...] = data
    np.testing.assert_array_equal(zarr.open_array(str(ours), mode="r")[...], data)


def test_from_array_and_data(tmp_path: Path) -> None:
    data = np.arange(24, dtype="i2").reshape(4, 6)
    z = chunkflow.from_array(str(tmp_path / "a.zarr"), data=data, chunks=(2, 3))
    assert z.metadata.chunks == (2, 3) and z[...].tolist() == data.tolist()
    again = chunkflow.from_array(None, data=z)  # from a chunkflow array: its chunks
    assert again.metadata.chunks == (2, 3)
    w = chunkflow.create_array(None, data=data, chunks=(4, 6), config={"write_empty_chunks": True})
    assert w.options.write_empty_chunks


def test_what_zarr_python_rejects_is_rejected_with_advice() -> None:
    with pytest.raises(MetadataError, match=r"multiple of chunks \(15, 15\).*shards=\(45, 45\)"):
        chunkflow.create_array(None, shape=(100, 100), chunks=(15, 15), shards=(50, 50), dtype="u1")
    with pytest.raises(MetadataError, match="only in Zarr v3"):
        chunkflow.create_array(None, shape=(10,), chunks=(5,), shards=(10,), dtype="u1",
                               zarr_format=2)


def test_create_group_and_tree_match_zarr_python(tmp_path: Path) -> None:
    zarr = pytest.importorskip("zarr")
    ours = chunkflow.create_group(str(tmp_path / "g.zarr"), attributes={"site": "A"})
    ours.create_array("x", shape=(4,), chunks=(2,), dtype="u1")
    theirs = zarr.open_group(str(tmp_path / "g.zarr"), mode="r")
    assert dict(theirs.attrs) == {"site": "A"} and list(theirs.array_keys()) == ["x"]
    assert "x (4,) uint8" in str(chunkflow.tree(ours))
    with pytest.raises(FileExistsError):
        chunkflow.create_group(str(tmp_path / "g.zarr"))
    assert chunkflow.create_group(str(tmp_path / "g.zarr"), overwrite=True).keys() == []


def test_open_array_and_group_create_array_take_zarr3_keywords(tmp_path: Path) -> None:
    # The call from the issue: zarr-python 3 users open with mode="w" and shards=.
    zarr = pytest.importorskip("zarr")
    call = dict(shape=(100, 100), chunks=(10, 10), shards=(50, 50), dtype="f4",
                compressors={"name": "zstd", "configuration": {"level": 3, "checksum": False}})
    ours, theirs = tmp_path / "ours.zarr", tmp_path / "theirs.zarr"
    z = chunkflow.open_array(str(ours), mode="w", **call)
    # zarr-python 3.1's own open_array refuses shards= (AsyncArray._create() has no such
    # keyword): compare with the array its create_array makes from the same call.
    zarr.create_array(str(theirs), **call)
    assert (z.chunks, z.shards) == ((10, 10), (50, 50))
    assert _metadata(zarr, ours) == _metadata(zarr, theirs)
    in_group = chunkflow.open_group(str(tmp_path / "g.zarr"), mode="w").create_array("x", **call)
    assert in_group.shards == (50, 50)
