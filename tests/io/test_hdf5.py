"""HDF5 and NetCDF4 files written by h5py and h5netcdf, converted, read back by
ome-zarr-py and ngff-zarr."""

from __future__ import annotations

import numpy as np
import pytest

import chunkflow
from chunkflow.errors import ArrayNotFoundError
from chunkflow.io import Hdf5Reader, open_source
from tests.io.conftest import check_image

h5py = pytest.importorskip("h5py")


def test_a_chunked_dataset_by_name_path_and_object(tmp_path) -> None:
    values = np.random.default_rng(0).normal(size=(9, 40, 52)).astype("f4")
    path = tmp_path / "scan.h5"
    with h5py.File(path, "w") as f:
        f.create_dataset("raw/volume", data=values, chunks=(3, 20, 26), compression="gzip")
        f.create_dataset("other", data=np.zeros(3))
    for source, kwargs in ((path, {"dataset": "raw/volume"}), (f"{path}::raw/volume", {})):
        out = tmp_path / f"out{len(kwargs)}.zarr"
        chunkflow.convert(source, out, scale=(2.0, 0.5, 0.5), units={"x": "micrometer"},
                          **kwargs)
        check_image(out, values, "zyx", [2.0, 0.5, 0.5], {"x": "micrometer"}, None)
    with h5py.File(path, "r") as f:
        reader = open_source(f["raw/volume"])
        assert isinstance(reader, Hdf5Reader) and reader.blocks == (3, 20, 26)
        chunkflow.convert(f["raw/volume"], tmp_path / "object.zarr")
    check_image(tmp_path / "object.zarr", values, "zyx", [1.0, 1.0, 1.0], {}, None)


def test_a_file_of_several_datasets_needs_one_named(tmp_path) -> None:
    path = tmp_path / "two.h5"
    with h5py.File(path, "w") as f:
        f["a"], f["b"] = np.zeros((4, 4)), np.ones((4, 4))
    with pytest.raises(ArrayNotFoundError, match="name one"):
        chunkflow.convert(path, tmp_path / "out.zarr")
    with pytest.raises(ArrayNotFoundError, match="no dataset 'c'"):
        chunkflow.convert(f"{path}::c", tmp_path / "out.zarr")
    assert not (tmp_path / "out.zarr").exists()  # refusals create nothing


def test_netcdf_dimensions_name_the_axes(tmp_path) -> None:
    h5netcdf = pytest.importorskip("h5netcdf")
    values = np.arange(3 * 30 * 20, dtype="i4").reshape(3, 30, 20)
    path = tmp_path / "sim.nc"
    with h5netcdf.File(path, "w") as f:
        f.dimensions = {"time": 3, "y": 30, "x": 20}
        f.create_variable("density", ("time", "y", "x"), data=values, chunks=(1, 30, 20))
    reader = open_source(path, dataset="density")
    assert reader.info.axes == "tyx"
    chunkflow.convert(path, tmp_path / "sim.zarr", dataset="density")
    check_image(tmp_path / "sim.zarr", values, "tyx", [1.0, 1.0, 1.0], {}, None)
