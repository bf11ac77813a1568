"""engine="chunkflow" over virtual references (kerchunk JSON and Parquet to a NetCDF4
file), against engine="zarr" and engine="h5netcdf"; and over a store whose listing
misses the arrays, where it raises instead of returning an empty dataset."""

from __future__ import annotations

from pathlib import Path

import pytest

xr = pytest.importorskip("xarray")
pytest.importorskip("zarr", minversion="3.1")

from chunkflow.errors import IncompleteListingError  # noqa: E402
from chunkflow.storage import LocalStore  # noqa: E402
from chunkflow.xarray import ChunkflowBackendEntrypoint  # noqa: E402
from tests.helpers.range_server import serve_ranges  # noqa: E402
from tests.helpers.references import (  # noqa: E402
    KINDS,
    netcdf_dataset,
    references,
    storage_options,
    write_netcdf,
)

pytestmark = [
    pytest.mark.filterwarnings("ignore:The 'fastparquet' engine is deprecated"),
    pytest.mark.filterwarnings("ignore:Failed to open Zarr store with consolidated:RuntimeWarning"),
]


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("consolidated", [None, False])
def test_references_open_as_the_zarr_and_h5netcdf_engines_do(
        tmp_path: Path, kind: str, consolidated: bool | None) -> None:
    netcdf = write_netcdf(tmp_path / "data.nc")
    so = storage_options(kind, netcdf)
    ours = xr.open_dataset("reference://", engine=ChunkflowBackendEntrypoint,
                           storage_options=so, consolidated=consolidated)
    by_zarr = xr.open_dataset("reference://", engine="zarr", storage_options=so,
                              consolidated=consolidated, zarr_format=2)
    xr.testing.assert_identical(ours, by_zarr)
    with xr.open_dataset(netcdf, engine="h5netcdf") as by_h5netcdf:
        xr.testing.assert_identical(ours.load(), by_h5netcdf.load())
    xr.testing.assert_identical(ours, netcdf_dataset())
    chunked = xr.open_dataset("reference://", engine=ChunkflowBackendEntrypoint,
                              storage_options=so, consolidated=consolidated, chunks={})
    assert chunked.temp.chunks == ((1,) * 4, (6, 6), (5, 5))
    xr.testing.assert_identical(chunked.compute(), ours)


class BlindFolders(LocalStore):
    """A folder whose folder listing finds nothing (its recursive listing works)."""

    def _list_dir(self, prefix: str) -> tuple[list[str], list[str]]:
        return [], []


@pytest.mark.parametrize("zarr_format", [2, 3])
def test_no_empty_dataset_from_a_listing_that_misses_the_arrays(
        tmp_path: Path, zarr_format: int) -> None:
    path = tmp_path / "data.zarr"
    netcdf_dataset().to_zarr(path, zarr_format=zarr_format, consolidated=False)
    by_zarr = xr.open_dataset(path, engine="zarr", consolidated=False)
    assert sorted(by_zarr.variables) == ["mask", "temp", "time", "x", "y"]
    with pytest.raises(IncompleteListingError, match=r"'temp' \(named by a recursive listing"):
        xr.open_dataset(BlindFolders(path), engine=ChunkflowBackendEntrypoint,
                        consolidated=False)


def test_references_over_http_read_in_merged_ranges(tmp_path: Path) -> None:
    """chunks={} over references into a NetCDF file served over HTTP (an HTTP server on
    127.0.0.1 counting range requests): fewer requests than chunks, where engine="zarr"
    (zarr-python's FsspecStore: one request per chunk) makes one per chunk."""
    write_netcdf(tmp_path / "data.nc")
    with serve_ranges(tmp_path) as server:
        so = {"fo": references(f"{server.url}/data.nc"), "remote_protocol": "http"}
        ours = xr.open_dataset("reference://", engine=ChunkflowBackendEntrypoint,
                               storage_options=so, chunks={})
        server.reset()
        ours = ours.compute(scheduler="sync")
        our_requests = len(server.ranged("data.nc"))
        # zarr-python asks for an asynchronous reference file system: its HTTP target
        # must be asynchronous too, not fsspec's cached synchronous instance.
        theirs = xr.open_dataset("reference://", engine="zarr", chunks={}, zarr_format=2,
                                 storage_options={**so, "remote_options": {"asynchronous": True}})
        server.reset()
        theirs = theirs.compute(scheduler="sync")
        their_requests = len(server.ranged("data.nc"))
    xr.testing.assert_identical(ours, theirs)
    xr.testing.assert_identical(ours, netcdf_dataset())
    chunks = 4 * 2 * 2 + 2  # temp and mask (the coordinates were read at open, for indexes)
    assert their_requests == chunks
    assert our_requests < chunks / 2, (our_requests, chunks)
