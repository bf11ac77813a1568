"""engine="chunkflow" on OME-Zarr pyramids (made with chunkflow.pyramid, NGFF 0.4 on
Zarr v2 and 0.5 on v3, with a label image): level 0 with drop_variables as
engine="zarr" opens it, and a DataTree with one node per level whose coordinates come
from the level's NGFF scale and translation, checked by hand and against ngff-zarr."""

from __future__ import annotations

import json
import warnings
from pathlib import Path
from typing import Any

import numpy as np
import pytest

xr = pytest.importorskip("xarray")
zarr = pytest.importorskip("zarr", minversion="3.1")

import chunkflow  # noqa: E402
from chunkflow.xarray import ChunkflowBackendEntrypoint  # noqa: E402

LEVELS = ["0", "1", "2"]
SCALE = (2.0, 0.65, 0.5)
UNITS = {"z": "micrometer", "y": "micrometer", "x": "nanometer"}
#: What open_datatree on an image with its labels gives, in order.
NODES = ["/", "/0", "/1", "/2", "/labels", "/labels/cells", "/labels/cells/0",
         "/labels/cells/1"]


def make_pyramid(tmp_path: Path, zarr_format: int, labels: bool = False) -> Path:
    rng = np.random.default_rng(3)
    image = rng.integers(0, 4000, size=(16, 48, 40), dtype="u2")
    path = tmp_path / f"image-v{zarr_format}.zarr"
    chunkflow.pyramid(chunkflow.array(image, chunks=(8, 16, 16)), path, levels=3,
                      zarr_format=zarr_format, scale=SCALE, units=UNITS, scheduler="sync")
    if labels:
        cells = (image > 2000).astype("u4") * rng.integers(1, 9, size=image.shape, dtype="u4")
        # zarr_format given: the labels' format must be the image's (see the report:
        # pyramid takes the source's format for the levels' codecs otherwise).
        chunkflow.pyramid(chunkflow.array(cells, chunks=(8, 16, 16)), path, labels="cells",
                          levels=2, zarr_format=zarr_format, scheduler="sync")
    return path


@pytest.fixture
def pyramid(tmp_path: Path) -> Path:
    """OME-NGFF 0.5 (Zarr v3, whose arrays name their dimensions)."""
    return make_pyramid(tmp_path, 3)


def image_attributes(path: Path) -> dict[str, Any]:
    """The image group's attributes, read as JSON (not through chunkflow)."""
    if (path / "zarr.json").exists():
        return json.loads((path / "zarr.json").read_text())["attributes"]["ome"]
    return json.loads((path / ".zattrs").read_text())


def hand_coordinates(path: Path) -> dict[str, dict[str, np.ndarray]]:
    """Each level's coordinates computed from the NGFF JSON by hand: translation +
    index * scale, per space axis."""
    multiscale = image_attributes(path)["multiscales"][0]
    names = [axis["name"] for axis in multiscale["axes"]]
    result = {}
    for dataset in multiscale["datasets"]:
        transforms = {t["type"]: t[t["type"]] for t in dataset["coordinateTransformations"]}
        shape = chunkflow.open_array(path / dataset["path"], mode="r").shape
        result[dataset["path"]] = {
            name: transforms["translation"][d] + np.arange(shape[d]) * transforms["scale"][d]
            for d, name in enumerate(names)}
    return result


def test_ome_04_levels_take_the_ngff_axis_names(tmp_path: Path) -> None:
    """OME-NGFF 0.4 (Zarr v2) arrays carry no _ARRAY_DIMENSIONS: the zarr engine
    refuses them with a KeyError; chunkflow names the dimensions after the NGFF axes
    and, the array not being xarray's, does not take its fill_value for _FillValue."""
    path = make_pyramid(tmp_path, 2)
    with pytest.raises(KeyError, match="_ARRAY_DIMENSIONS"):
        xr.open_dataset(path, engine="zarr", drop_variables=["1", "2"])
    ours = xr.open_dataset(path, engine=ChunkflowBackendEntrypoint, drop_variables=["1", "2"])
    assert ours["0"].dims == ("z", "y", "x") and ours["0"].dtype == np.dtype("u2")
    np.testing.assert_array_equal(ours["0"].values, zarr.open_array(path / "0", mode="r")[...])


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
    """Each level's node holds the level's array as engine="zarr" reads it, plus the
    coordinates (compared by hand below)."""
    tree = xr.open_datatree(pyramid, engine=ChunkflowBackendEntrypoint)
    assert sorted(tree.children) == LEVELS
    assert len(tree.to_dataset().data_vars) == 0 and tree.attrs
    root = xr.open_dataset(pyramid, engine="zarr", drop_variables=LEVELS)
    xr.testing.assert_identical(tree.to_dataset(), root)
    for level in LEVELS:
        theirs = xr.open_dataset(pyramid, engine="zarr",
                                 drop_variables=[other for other in LEVELS if other != level])
        ours = tree[level].to_dataset()
        assert sorted(ours.coords) == ["x", "y", "z"]
        xr.testing.assert_identical(ours[level].drop_vars(list(ours.coords)), theirs[level])
    groups = xr.open_groups(pyramid, engine=ChunkflowBackendEntrypoint)
    assert sorted(groups) == ["/", "/0", "/1", "/2"]
    tree.close()


def check_levels(tree: Any, image: Path, prefix: str, units: dict[str, str]) -> None:
    """Every level's node of the image at ``image`` (``prefix`` in the tree): dims the
    NGFF axes, coordinates as computed by hand and by ngff-zarr, units, values."""
    ngff_zarr = pytest.importorskip("ngff_zarr")
    by_hand = hand_coordinates(image)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # ngff-zarr's own notes on zarr-python
        multiscales = ngff_zarr.from_ngff_zarr(str(image))
    assert len(multiscales.images) == len(by_hand)
    for (level, expected), ngff_image in zip(by_hand.items(), multiscales.images):
        node = tree[f"{prefix}{level}"].to_dataset()
        assert node[level].dims == tuple(expected) == tuple(ngff_image.dims)
        for dim, values in expected.items():
            coordinate = node[dim]
            assert coordinate.dtype == np.float64 and coordinate.dims == (dim,)
            np.testing.assert_array_equal(coordinate.values, values)
            from_ngff_zarr = (ngff_image.translation[dim]
                              + np.arange(ngff_image.data.shape[list(expected).index(dim)])
                              * ngff_image.scale[dim])
            np.testing.assert_array_equal(coordinate.values, from_ngff_zarr)
            assert coordinate.attrs == ({"units": units[dim]} if dim in units else {})
            assert ngff_image.axes_units[dim] == units.get(dim)
        np.testing.assert_array_equal(node[level].values,
                                      zarr.open_array(image / level, mode="r")[...])
        assert node[level].dtype == zarr.open_array(image / level, mode="r").dtype


@pytest.mark.parametrize("url", [False, True], ids=["path", "file-url"])
@pytest.mark.parametrize("zarr_format", [2, 3])
def test_datatree_levels_have_ngff_coordinates(tmp_path: Path, zarr_format: int,
                                               url: bool) -> None:
    """NGFF 0.4 (v2) and 0.5 (v3), image and label image: the coordinates of every
    level, by hand and from ngff-zarr's from_ngff_zarr (which takes paths only: it
    refuses a "file://" URL, so it reads the path when chunkflow reads the URL)."""
    path = make_pyramid(tmp_path, zarr_format, labels=True)
    source = f"file://{path}" if url else path
    options = {"storage_options": {"auto_mkdir": True}} if url else {}
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no consolidated-metadata warning either
        tree = xr.open_datatree(source, engine="chunkflow", **options)
    assert [node.path for node in tree.subtree] == NODES
    check_levels(tree, path, "", UNITS)
    # The labels carry what pyramid wrote for them (the `axes` work makes them inherit
    # the image's scale and units; read here as written, whatever it is).
    label_axes = image_attributes(path / "labels" / "cells")["multiscales"][0]["axes"]
    check_levels(tree, path / "labels" / "cells", "labels/cells/",
                 {axis["name"]: axis["unit"] for axis in label_axes if "unit" in axis})
    tree.close()


@pytest.mark.parametrize("zarr_format", [2, 3])
def test_a_level_opened_alone_has_its_coordinates(tmp_path: Path, zarr_format: int) -> None:
    """group="1", the level's own path and its file:// URL: the variable named after
    the level, with the same coordinates as its node in the tree."""
    path = make_pyramid(tmp_path, zarr_format)
    tree = xr.open_datatree(path, engine="chunkflow")
    expected = tree["1"].to_dataset()
    for source, group, options in (
            (path, "1", {}), (path / "1", None, {}),
            (f"file://{path}/1", None, {"storage_options": {"auto_mkdir": True}})):
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            level = xr.open_dataset(source, engine="chunkflow", group=group, **options)
        xr.testing.assert_identical(level, expected)


def test_image_transformations_apply_after_the_levels(tmp_path: Path) -> None:
    """NGFF's multiscale-wide coordinateTransformations (scale then translation) apply
    after each level's; omero channel labels name a channel axis."""
    image = np.arange(2 * 4 * 6, dtype="u1").reshape(2, 4, 6)
    path = tmp_path / "img.zarr"
    chunkflow.pyramid(chunkflow.array(image, chunks=(1, 4, 6)), path, levels=2, axes="cyx",
                      scale=(1.0, 0.5, 0.25), scheduler="sync")
    group = zarr.open_group(path, mode="r+")
    ome = dict(group.attrs["ome"])
    multiscale = dict(ome["multiscales"][0])
    multiscale["coordinateTransformations"] = [{"type": "scale", "scale": [1.0, 3.0, 2.0]},
                                               {"type": "translation",
                                                "translation": [0.0, 10.0, -5.0]}]
    ome["multiscales"] = [multiscale]
    ome["omero"] = {"channels": [{"label": "DAPI"}, {"label": "GFP"}]}
    group.attrs["ome"] = ome
    tree = xr.open_datatree(path, engine="chunkflow")
    for level, (scale, translation) in {"0": ((0.5, 0.25), (0.0, 0.0)),
                                        "1": ((1.0, 0.5), (0.25, 0.125))}.items():
        node = tree[level].to_dataset()
        shape = node[level].shape
        for d, (dim, outer, shift) in enumerate(zip("yx", (3.0, 2.0), (10.0, -5.0))):
            by_hand = (translation[d] + np.arange(shape[d + 1]) * scale[d]) * outer + shift
            np.testing.assert_allclose(node[dim].values, by_hand, rtol=0, atol=1e-12)
        assert node["c"].values.tolist() == ["DAPI", "GFP"]
