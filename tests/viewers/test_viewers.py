"""What a viewer shows of chunkflow's output: napari (through napari-ome-zarr's reader
function, no window), ome-zarr-py's Reader and ngff-zarr's from_ngff_zarr read every
level of an image and of its label image with the same axes, units, scale and
translation, and the channel names; the label layer overlays the image.

The image is written with ``scale``, ``translation``, ``units`` and ``channels``; the
label image with nothing but ``labels=`` (it inherits the rest), from the CLI too.
"""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import chunkflow
from chunkflow.cli import main

ngff_zarr = pytest.importorskip("ngff_zarr")
ome_zarr_reader = pytest.importorskip("ome_zarr.reader")
ome_zarr_io = pytest.importorskip("ome_zarr.io")

SCALE = {"c": 1.0, "z": 2.0, "y": 0.65, "x": 0.65}
TRANSLATION = {"c": 0.0, "z": 10.0, "y": -4.0, "x": 3.5}
UNITS = {"z": "micrometer", "y": "micrometer", "x": "micrometer"}
CHANNELS = ["DAPI", "GFP"]
FACTORS = {"c": 1, "z": 2, "y": 2, "x": 2}


def _expected(axes: str, level: int) -> tuple[dict[str, float], dict[str, float]]:
    """A level's scale and translation by axis: a mean's pixel at its window's centre."""
    scale = {a: SCALE[a] * FACTORS[a] ** level for a in axes}
    shift = {a: TRANSLATION[a] + SCALE[a] * (FACTORS[a] ** level - 1) / 2 for a in axes}
    return scale, shift


@pytest.fixture(params=[2, 3], ids=["v2-ngff0.4", "v3-ngff0.5"])
def written(request: pytest.FixtureRequest, tmp_path: Path) -> tuple[str, np.ndarray, np.ndarray]:
    """An image (czyx, two channels) and its label image (zyx) through the default path:
    a file:// URL for the image, the CLI with no options for the labels."""
    zarr_format = request.param
    rng = np.random.default_rng(7)
    image = rng.integers(0, 3000, (2, 12, 70, 50)).astype("u2")
    labels = (image[0] // 1000).astype("u4")
    out = tmp_path / "image.ome.zarr"
    source = chunkflow.array(image, chunks=(1, 6, 32, 32), zarr_format=zarr_format)
    chunkflow.pyramid(source, f"file://{out}", scale=SCALE, translation=TRANSLATION,
                      units=UNITS, channels=CHANNELS)
    label_source = tmp_path / "labels.zarr"
    chunkflow.array(labels, chunks=(6, 32, 32), store=str(label_source), zarr_format=zarr_format)
    assert main(["pyramid", str(label_source), str(out), "--labels", "cells", "-q"]) == 0
    return str(out), image, labels


def _levels(group: chunkflow.Group) -> list[np.ndarray]:
    return [group[str(k)][...] for k in range(len([n for n in group.array_keys()]))]


def test_napari_layers_have_scale_channel_names_and_an_aligned_label_layer(
        written: tuple[str, np.ndarray, np.ndarray]) -> None:
    reader_module = pytest.importorskip("napari_ome_zarr._reader")
    out, image, labels = written
    reader = reader_module.napari_get_reader(out)
    assert reader is not None
    layers = reader(out)
    kinds = [kind for _, _, kind in layers]
    assert kinds == ["image", "labels"]
    (data, meta, _), (label_data, label_meta, _) = layers
    # One image layer per channel, named after the omero channels, coloured and windowed.
    assert meta["channel_axis"] == 0 and meta["name"] == CHANNELS
    assert meta["axis_labels"] == ("z", "y", "x")
    assert meta["units"] == ("micrometer",) * 3
    assert meta["scale"] == [SCALE[a] for a in "zyx"]
    coarsest = chunkflow.open_group(out, mode="r")[str(len(data) - 1)][...]
    assert meta["contrast_limits"] == [[float(coarsest[c].min()), float(coarsest[c].max())]
                                       for c in range(2)]
    group = chunkflow.open_group(out, mode="r")
    for level, want in zip(data, _levels(group)):
        np.testing.assert_array_equal(np.asarray(level), want)
    np.testing.assert_array_equal(np.asarray(data[0]), image)
    # The label layer: the image's scale and units, so it overlays the image.
    assert label_meta["scale"] == meta["scale"]
    assert label_meta["axis_labels"] == ("z", "y", "x")
    assert label_meta["units"] == meta["units"]
    assert label_meta["name"].endswith("cells")
    np.testing.assert_array_equal(np.asarray(label_data[0]), labels)
    assert [tuple(a.shape) for a in label_data] == [tuple(a.shape[1:]) for a in data]
    # napari-ome-zarr 0.10 reads a level's scale, not its translation: both layers get
    # the same (identity) translation, so they stay aligned.
    np.testing.assert_array_equal(label_meta["affine"].translate, meta["affine"].translate)


def _transforms(node: Any) -> list[tuple[list[float], list[float]]]:
    rows = []
    for level in node.metadata["coordinateTransformations"]:
        found = {t["type"]: t[t["type"]] for t in level}
        rows.append((found["scale"], found["translation"]))
    return rows


def test_ome_zarr_py_reads_every_level_channels_and_labels(
        written: tuple[str, np.ndarray, np.ndarray], caplog: pytest.LogCaptureFixture) -> None:
    out, image, labels = written
    caplog.set_level(logging.ERROR)
    nodes = list(ome_zarr_reader.Reader(ome_zarr_io.parse_url(out))())
    image_node = nodes[0]
    assert image_node.metadata["channel_names"] == CHANNELS
    assert [a["name"] for a in image_node.metadata["axes"]] == list("czyx")
    assert [a.get("unit") for a in image_node.metadata["axes"]] == [None] + ["micrometer"] * 3
    for k, (scale, shift) in enumerate(_transforms(image_node)):
        want_scale, want_shift = _expected("czyx", k)
        assert scale == pytest.approx(list(want_scale.values()), rel=1e-12)
        assert shift == pytest.approx(list(want_shift.values()), rel=1e-12, abs=1e-12)
    np.testing.assert_array_equal(np.asarray(image_node.data[0]), image)
    (label_node,) = [node for node in nodes if node.load(ome_zarr_reader.Label)]
    assert label_node.metadata["name"] == "cells"
    assert [a.get("unit") for a in label_node.metadata["axes"]] == ["micrometer"] * 3
    assert len(_transforms(label_node)) == len(_transforms(image_node))
    for (scale, shift), (image_scale, image_shift) in zip(_transforms(label_node),
                                                          _transforms(image_node)):
        assert scale == image_scale[1:] and shift == image_shift[1:]
    np.testing.assert_array_equal(np.asarray(label_node.data[0]), labels)


def test_ngff_zarr_reads_every_level_channels_and_labels(
        written: tuple[str, np.ndarray, np.ndarray]) -> None:
    out, image, labels = written
    multiscales = ngff_zarr.from_ngff_zarr(out)
    assert [c.label for c in multiscales.metadata.omero.channels] == CHANNELS
    group = chunkflow.open_group(out, mode="r")
    for k, (level, want) in enumerate(zip(multiscales.images, _levels(group), strict=True)):
        assert level.dims == tuple("czyx")
        want_scale, want_shift = _expected("czyx", k)
        assert level.scale == pytest.approx(want_scale, rel=1e-12)
        assert level.translation == pytest.approx(want_shift, rel=1e-12, abs=1e-12)
        assert level.axes_units == {"c": None, **UNITS}
        np.testing.assert_array_equal(np.asarray(level.data), want)
    np.testing.assert_array_equal(np.asarray(multiscales.images[0].data), image)
    cells = ngff_zarr.from_ngff_zarr(f"{out}/labels/cells")
    assert len(cells.images) == len(multiscales.images)
    for k, level in enumerate(cells.images):
        want_scale, want_shift = _expected("zyx", k)
        assert level.dims == tuple("zyx")
        assert level.scale == pytest.approx(want_scale, rel=1e-12)
        assert level.translation == pytest.approx(want_shift, rel=1e-12, abs=1e-12)
        assert level.axes_units == UNITS
    np.testing.assert_array_equal(np.asarray(cells.images[0].data), labels)


def test_ome_zarr_models_validate_the_channels(written: tuple[str, np.ndarray, np.ndarray]) -> None:
    models = pytest.importorskip("ome_zarr_models")
    zarr = pytest.importorskip("zarr")
    out, _, _ = written
    group = zarr.open_group(out, mode="r")
    version = "0.4" if group.metadata.zarr_format == 2 else "0.5"
    model = models.open_ome_zarr(group, version=version)
    omero = model.attributes.omero if version == "0.4" else model.attributes.ome.omero
    # ome-zarr-models 1.7 models omero in NGFF 0.4 only; 0.5 keeps it as a dict: check
    # it against the same model (color and window required for every channel).
    from ome_zarr_models.common.omero import Omero

    checked = Omero.model_validate(omero if isinstance(omero, dict) else omero.model_dump())
    assert [c.label for c in checked.channels] == CHANNELS  # type: ignore[attr-defined]
