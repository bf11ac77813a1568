"""engine="chunkflow" on OME-Zarr pyramids (made with chunkflow.pyramid): level 0 with
drop_variables as engine="zarr" opens it, and a DataTree with one node per level."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

xr = pytest.importorskip("xarray")
pytest.importorskip("zarr", minversion="3.1")

import chunkflow  # noqa: E402
from chunkflow.xarray import ChunkflowBackendEntrypoint  # noqa: E402

LEVELS = ["0", "1", "2"]
pytestmark = pytest.mark.filterwarnings(
    "ignore:Failed to open Zarr store with consolidated:RuntimeWarning")


def make_pyramid(tmp_path: Path, zarr_format: int) -> Path:
    image = np.random.default_rng(3).integers(0, 4000, size=(16, 48, 40), dtype="u2")
    path = tmp_path / "image.zarr"
    chunkflow.pyramid(chunkflow.array(image, chunks=(8, 16, 16)), path, levels=3,
                      zarr_format=zarr_format, scheduler="sync")
    return path


@pytest.fixture
def pyramid(tmp_path: Path) -> Path:
    """OME-NGFF 0.5 (Zarr v3, whose arrays name their dimensions)."""
    return make_pyramid(tmp_path, 3)


def test_ome_04_levels_have_no_dimension_names_for_either_engine(tmp_path: Path) -> None:
    """OME-NGFF 0.4 (Zarr v2) arrays carry no _ARRAY_DIMENSIONS: both engines refuse
    with a KeyError, as xarray's zarr engine does for any such array."""
    path = make_pyramid(tmp_path, 2)
    with pytest.raises(KeyError, match="_ARRAY_DIMENSIONS"):
        xr.open_dataset(path, engine="zarr", drop_variables=["1", "2"])
    with pytest.raises(KeyError, match="array '0'.*_ARRAY_DIMENSIONS"):
        xr.open_dataset(path, engine=ChunkflowBackendEntrypoint, drop_variables=["1", "2"])


@pytest.mark.parametrize("chunks", [None, {}])
def test_level_zero_opens_as_with_the_zarr_engine(pyramid: Path, chunks: dict | None) -> None:
    ours = xr.open_dataset(pyramid, engine=ChunkflowBackendEntrypoint, chunks=chunks,
                           drop_variables=["1", "2"])
    theirs = xr.open_dataset(pyramid, engine="zarr", chunks=chunks, drop_variables=["1", "2"])
    xr.testing.assert_identical(ours, theirs)
    assert list(ours.data_vars) == ["0"] and ours["0"].shape == (16, 48, 40)
    np.testing.assert_array_equal(ours["0"].values, chunkflow.open_array(pyramid / "0")[...])
    # Levels left in conflict: both engines refuse (chunkflow naming the array).
    with pytest.raises(ValueError, match="conflicting sizes"):
        xr.open_dataset(pyramid, engine="zarr", drop_variables="2")
    with pytest.raises(ValueError, match="array '1': dimension 'z' has length"):
        xr.open_dataset(pyramid, engine=ChunkflowBackendEntrypoint, drop_variables="2")

def test_datatree_has_one_node_per_level(pyramid: Path) -> None:
    tree = xr.open_datatree(pyramid, engine=ChunkflowBackendEntrypoint)
    assert sorted(tree.children) == LEVELS
    assert len(tree.to_dataset().data_vars) == 0 and tree.attrs
    root = xr.open_dataset(pyramid, engine="zarr", drop_variables=LEVELS)
    xr.testing.assert_identical(tree.to_dataset(), root)
    for level in LEVELS:
        theirs = xr.open_dataset(pyramid, engine="zarr",
                                 drop_variables=[other for other in LEVELS if other != level])
        theirs.attrs = {}  # the image's attributes are the root node's
        xr.testing.assert_identical(tree[level].to_dataset(), theirs)
    groups = xr.open_groups(pyramid, engine=ChunkflowBackendEntrypoint)
    assert sorted(groups) == ["/", "/0", "/1", "/2"]
    tree.close()
