"""engine="chunkflow" on a store holding one array (or group= naming one): a Dataset
with one variable named after the array.

xarray's zarr engine (xarray 2026.9.0, zarr-python 3.1.6) refuses such a store: a v2
array with GroupNotFoundError ("No group found in store"), a v3 one with
ContainsArrayError ("An array already exists"), with consolidated=None, False or True.
Where it can read the same array (as a member of a group), the variable is compared
with its reading; values always with zarr-python's.
"""

from __future__ import annotations

import warnings
from pathlib import Path
from typing import Any

import numpy as np
import pytest

xr = pytest.importorskip("xarray")
zarr = pytest.importorskip("zarr", minversion="3.1")

import chunkflow  # noqa: E402
from chunkflow.storage import MemoryStore  # noqa: E402
from chunkflow.xarray import ChunkflowBackendEntrypoint  # noqa: E402

ENCODING_KEYS = ("chunks", "preferred_chunks", "shards", "fill_value", "dtype",
                 "compressors", "filters", "serializer")
URL_OPTIONS = {"storage_options": {"auto_mkdir": True}}


def open_quietly(source: Any, **kwargs: Any) -> Any:
    """Open with engine="chunkflow", failing on any warning (consolidated metadata
    included: an array has none to miss)."""
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        return xr.open_dataset(source, engine="chunkflow", **kwargs)


def write_array(path: Path, zarr_format: int, names: tuple[str | None, ...] | None,
                **kwargs: Any) -> np.ndarray:
    """An array written by zarr-python at ``path`` (the store's root); v2 names go in
    _ARRAY_DIMENSIONS, v3 ones in dimension_names."""
    values = np.random.default_rng(7).normal(size=(6, 10)).astype("f4")
    named = {"dimension_names": names} if zarr_format == 3 and names else {}
    array = zarr.create_array(path, shape=values.shape, chunks=(4, 4), dtype="f4",
                              zarr_format=zarr_format, fill_value=0.0, **named, **kwargs)
    array[...] = values
    array.attrs["long_name"] = "smoothed"
    if zarr_format == 2 and names:
        array.attrs["_ARRAY_DIMENSIONS"] = list(names)
    return values


@pytest.mark.parametrize("zarr_format", [2, 3])
def test_zarr_engine_refuses_a_single_array(tmp_path: Path, zarr_format: int) -> None:
    """What engine="zarr" does, recorded: it opens groups only."""
    path = tmp_path / "smooth.zarr"
    write_array(path, zarr_format, ("y", "x"))
    for consolidated in (None, False):
        with warnings.catch_warnings(), pytest.raises(Exception) as refused:
            warnings.simplefilter("ignore")
            xr.open_dataset(path, engine="zarr", consolidated=consolidated)
        assert type(refused.value).__name__ == ("GroupNotFoundError" if zarr_format == 2
                                                else "ContainsArrayError")
    ours = open_quietly(path)
    assert list(ours.data_vars) == ["smooth"] and ours.smooth.dims == ("y", "x")


@pytest.mark.parametrize("url", [False, True], ids=["path", "file-url"])
@pytest.mark.parametrize("zarr_format", [2, 3])
def test_map_chunks_output_opens_as_one_variable(tmp_path: Path, zarr_format: int,
                                                 url: bool) -> None:
    """The issue's case: map_chunks(..., out="smooth.zarr") opened with no options."""
    from scipy import ndimage

    image = np.random.default_rng(0).integers(0, 1000, size=(40, 30)).astype("u2")
    source = chunkflow.array(image, chunks=(16, 16), zarr_format=zarr_format)
    out = tmp_path / "smooth.zarr"
    chunkflow.map_chunks(ndimage.gaussian_filter, source, out=str(out), depth=4, sigma=1.5,
                         output=np.float32, dtype="f4", scheduler="sync")
    ds = open_quietly(f"file://{out}", **URL_OPTIONS) if url else open_quietly(out)
    assert list(ds.data_vars) == ["smooth"] and ds.attrs == {}
    expected = zarr.open_array(out, mode="r")
    assert ds.smooth.dims == ("dim_0", "dim_1") and ds.smooth.dtype == expected.dtype
    np.testing.assert_array_equal(ds.smooth.values.view("u4"), expected[...].view("u4"))
    assert xr.open_dataarray(out, engine="chunkflow").name == "smooth"


@pytest.mark.parametrize("zarr_format", [2, 3])
def test_same_variable_as_the_zarr_engine_reads_in_a_group(tmp_path: Path,
                                                           zarr_format: int) -> None:
    """The array opened alone (its path, a file:// URL, group=) is the variable the
    zarr engine reads from its group: data, dims, attributes, decoding, encoding."""
    group = tmp_path / "group.zarr"
    zarr.open_group(group, mode="w", zarr_format=zarr_format)
    values = write_array(group / "smooth", zarr_format, ("y", "x"))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # no consolidated metadata
        theirs = xr.open_dataset(group, engine="zarr", chunks={})["smooth"]
    for source, options in ((group / "smooth", {}), (group, {"group": "smooth"}),
                            (f"file://{group}/smooth", URL_OPTIONS)):
        ours = open_quietly(source, chunks={}, **options)["smooth"]
        xr.testing.assert_identical(ours, theirs)
        assert ours.attrs["long_name"] == "smoothed" and "_ARRAY_DIMENSIONS" not in ours.attrs
        for key in ENCODING_KEYS:
            if key in theirs.encoding:
                np.testing.assert_equal(ours.encoding[key], theirs.encoding[key], err_msg=key)
        assert ours.chunks == ((4, 2), (4, 4, 2))
        # A v2 array xarray could write (it has _ARRAY_DIMENSIONS): fill_value 0 masks.
        expected = np.where(values == 0, np.nan, values) if zarr_format == 2 else values
        np.testing.assert_array_equal(ours.values, expected)


@pytest.mark.parametrize(("zarr_format", "names", "dims"), [
    (3, ("t", None), ("t", "dim_1")),
    (3, None, ("dim_0", "dim_1")),
    (2, None, ("dim_0", "dim_1")),
    (2, ("row", "col"), ("row", "col")),
])
def test_dimension_names_or_defaults(tmp_path: Path, zarr_format: int,
                                     names: tuple[str | None, ...] | None,
                                     dims: tuple[str, ...]) -> None:
    path = tmp_path / "a.zarr"
    values = write_array(path, zarr_format, names)
    ds = open_quietly(path)
    assert ds.a.dims == dims and ds.a.attrs == {"long_name": "smoothed"}
    # Unnamed v2 arrays were not written by xarray: fill_value is no _FillValue.
    np.testing.assert_array_equal(ds.a.values, values)
    assert ds.a.dtype == np.float32


def test_names_from_the_location(tmp_path: Path) -> None:
    """.zarr and .zip suffixes left out; an unnamed in-memory array is xarray's
    anonymous variable, which open_dataarray names None."""
    image = np.arange(12, dtype="i2").reshape(3, 4)
    zipped = tmp_path / "cells.zarr.zip"
    chunkflow.array(image, chunks=(2, 2), store=chunkflow.ZipStore(zipped, mode="w")).store.close()
    assert list(open_quietly(zipped).data_vars) == ["cells"]
    memory = MemoryStore()
    chunkflow.array(image, chunks=(2, 2), store=memory)
    ds = open_quietly(memory)
    assert list(ds.data_vars) == ["__xarray_dataarray_variable__"]
    dataarray = xr.open_dataarray(memory, engine=ChunkflowBackendEntrypoint)
    assert dataarray.name is None and dataarray.values.tolist() == image.tolist()
    tree = xr.open_datatree(memory, engine=ChunkflowBackendEntrypoint)
    assert list(tree.to_dataset().data_vars) == ["__xarray_dataarray_variable__"]


def test_sharded_array_chunks_on_shards(tmp_path: Path) -> None:
    path = tmp_path / "sharded.zarr"
    zarr.create_array(path, shape=(8, 8), chunks=(2, 2), shards=(4, 8), dtype="u1",
                      dimension_names=("y", "x"))[...] = np.arange(64, dtype="u1").reshape(8, 8)
    ds = open_quietly(path, chunks={})
    assert ds.sharded.chunks == ((4, 4), (8,))
    assert ds.sharded.encoding["chunks"] == (2, 2) and ds.sharded.encoding["shards"] == (4, 8)
    np.testing.assert_array_equal(ds.sharded.values, zarr.open_array(path, mode="r")[...])
