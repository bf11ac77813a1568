"""Sources that are Zarr already: chunkflow arrays, zarr-python arrays (v2, v3 and
sharded) and zarr-python Stores, converted to OME-Zarr images."""

from __future__ import annotations

import numpy as np
import pytest

import chunkflow
from tests.io.conftest import check_image

zarr = pytest.importorskip("zarr")


def test_a_sharded_zarr_python_array_and_its_store(tmp_path) -> None:
    values = np.random.default_rng(4).integers(0, 9999, (20, 64, 48), dtype="u2")
    z = zarr.create_array(tmp_path / "in.zarr", shape=values.shape, chunks=(5, 16, 16),
                          shards=(10, 32, 48), dtype="u2", dimension_names=["z", "y", "x"])
    z[...] = values
    chunkflow.convert(z, tmp_path / "a.zarr")
    check_image(tmp_path / "a.zarr", values, "zyx", [1.0] * 3, {}, None)
    store = zarr.storage.LocalStore(tmp_path / "in.zarr", read_only=True)
    chunkflow.convert(store, tmp_path / "b.zarr", scale={"z": 4.0})
    check_image(tmp_path / "b.zarr", values, "zyx", [4.0, 1.0, 1.0], {}, None)


def test_a_chunkflow_v2_array_by_path_with_dimension_names_of_its_own(tmp_path) -> None:
    values = np.random.default_rng(5).random((3, 30, 31))
    chunkflow.array(values, chunks=(1, 10, 10), zarr_format=2, store=str(tmp_path / "in.zarr"))
    chunkflow.convert(str(tmp_path / "in.zarr"), tmp_path / "c.zarr", axes="cyx", zarr_format=2)
    check_image(tmp_path / "c.zarr", values, "cyx", [1.0] * 3, {},
                ["Channel 0", "Channel 1", "Channel 2"])


def test_the_output_is_never_the_source(tmp_path) -> None:
    values = np.arange(64, dtype="u1").reshape(8, 8)
    chunkflow.array(values, chunks=(4, 4), store=str(tmp_path / "in.zarr"))
    with pytest.raises(chunkflow.OutputIsSourceError):
        chunkflow.convert(str(tmp_path / "in.zarr"), tmp_path / "in.zarr", overwrite=True)
    np.testing.assert_array_equal(chunkflow.open(str(tmp_path / "in.zarr"), mode="r")[...],
                                  values)
