"""Virtual references (kerchunk JSON and Parquet over a NetCDF4/HDF5 file) as a store:
listed, read against h5py, and read in merged range requests."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

h5py = pytest.importorskip("h5py")
fsspec = pytest.importorskip("fsspec")

import chunkflow  # noqa: E402
from chunkflow.storage import FsspecStore  # noqa: E402
from tests.helpers.range_server import serve_ranges  # noqa: E402
from tests.helpers.references import (  # noqa: E402
    KINDS,
    json_references,
    references,
    storage_options,
    write_netcdf,
)

NAMES = ["mask", "temp", "time", "x", "y"]
pytestmark = pytest.mark.filterwarnings("ignore:The 'fastparquet' engine is deprecated")


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("consolidated", [None, False])
def test_reference_group_lists_and_reads(tmp_path: Path, kind: str,
                                         consolidated: bool | None) -> None:
    so = storage_options(kind, write_netcdf(tmp_path / "data.nc"))
    group = chunkflow.open_group("reference://", mode="r", storage_options=so,
                                 use_consolidated=consolidated)
    assert sorted(group) == NAMES
    assert not group.store.latency_bound  # references to a local file: read as local files
    assert sorted(group.array_keys()) == NAMES
    with h5py.File(tmp_path / "data.nc", "r") as source:
        for name in NAMES:
            np.testing.assert_array_equal(group[name][...], source[name][...])
        np.testing.assert_array_equal(group["temp"][1:3, ::2, 3], source["temp"][1:3, ::2, 3])


def test_empty_root_lists_like_a_named_root() -> None:
    """memory:// (an empty root) lists its keys as memory://somewhere does."""
    for url in ("memory://", f"memory://listing-{id(object())}"):
        store = FsspecStore(url)
        prefix = f"p{id(store)}"
        store.set_many({f"{prefix}/a": b"1", f"{prefix}/b/c": b"2"})
        assert sorted(store.list_prefix(prefix)) == [f"{prefix}/a", f"{prefix}/b/c"]
        assert store.list_dir(prefix) == (["a"], ["b"])
        assert prefix in store.list_dir("")[1]


def test_reference_identity_names_the_references(tmp_path: Path) -> None:
    """Two reference sets never share cached chunks; one set opened twice does."""
    one = {"version": 1, "refs": {".zgroup": '{"zarr_format": 2}'}}
    two = {"version": 1, "refs": {".zgroup": '{"zarr_format": 2}', ".zattrs": "{}"}}
    first = FsspecStore("reference://", {"fo": one}).identity
    assert first == FsspecStore("reference://", {"fo": dict(one)}).identity
    assert first != FsspecStore("reference://", {"fo": two}).identity
    refs = json_references(one, tmp_path / "r.json")
    assert str(refs) in FsspecStore("reference://", {"fo": str(refs)}).identity


def test_chunks_in_one_file_are_read_in_merged_ranges(tmp_path: Path) -> None:
    """A read of 16 chunks that lie side by side in one HDF5 file, served over HTTP
    (an HTTP server on 127.0.0.1 counting range requests), makes the requests fsspec's
    ReferenceFileSystem.cat makes for those keys, not one per chunk."""
    expected = np.arange(64 * 48, dtype="f4").reshape(64, 48)
    with h5py.File(tmp_path / "a.h5", "w") as f:
        f.create_dataset("t", data=expected, chunks=(4, 48))  # 16 chunks
    with serve_ranges(tmp_path) as server:
        refs = references(f"{server.url}/a.h5")
        so = {"fo": refs, "remote_protocol": "http"}
        array = chunkflow.open_group("reference://", mode="r", storage_options=so,
                                     cache=False)["t"]
        assert array.store.latency_bound  # references into files served over HTTP
        server.reset()
        np.testing.assert_array_equal(array[...], expected)
        ours = server.ranged("a.h5")
        server.reset()
        keys = [f"t/{i}.0" for i in range(16)]
        fsspec.filesystem("reference", **so).cat(keys)
        theirs = server.ranged("a.h5")
    assert sorted(ours) == sorted(theirs)
    assert len(ours) < 16, ours  # one request per chunk would be 16
    assert len(ours) == 1  # 16 adjacent chunks, far below max_block: one range
