"""Readers are the test: ome-zarr-py and ngff-zarr open chunkflow's pyramids,
ome-zarr-models validates their metadata, and napari's ome-zarr reader plugin (when
installed) opens them headless."""

from __future__ import annotations

import logging
from pathlib import Path

import numpy as np
import pytest
import zarr

import chunkflow

ome_zarr_models = pytest.importorskip("ome_zarr_models")
ngff_zarr = pytest.importorskip("ngff_zarr")
ome_zarr_reader = pytest.importorskip("ome_zarr.reader")
ome_zarr_io = pytest.importorskip("ome_zarr.io")


def _write(tmp_path: Path, zarr_format: int, axes: str = "tczyx") -> tuple[str, np.ndarray]:
    shape = {"tczyx": (2, 2, 10, 40, 30), "yx": (90, 70), "tcyx": (2, 3, 40, 50)}[axes]
    image = np.random.default_rng(0).integers(0, 4000, shape).astype("u2")
    chunks = (1,) * (len(shape) - 2) + (16, 16) if axes != "tczyx" else (1, 1, 8, 16, 16)
    out = str(tmp_path / f"image-v{zarr_format}.ome.zarr")
    source = chunkflow.array(image, chunks=chunks, zarr_format=zarr_format)
    units = {name: "micrometer" for name in "zyx" if name in axes}
    chunkflow.pyramid(source, out, axes=axes, units=units | ({"t": "second"} if "t" in axes else {}))
    labels = (image[(0,) * (len(shape) - 3 if axes == "tczyx" else len(shape) - 2)] // 1000)
    chunkflow.pyramid(chunkflow.array(labels.astype("u4"), chunks=chunks[-labels.ndim:],
                                      zarr_format=zarr_format), out, labels="cells")
    return out, image


@pytest.mark.parametrize("zarr_format", [2, 3])
def test_ome_zarr_models_validate_image_and_labels(tmp_path: Path, zarr_format: int) -> None:
    out, image = _write(tmp_path, zarr_format)
    version = "0.4" if zarr_format == 2 else "0.5"
    model = ome_zarr_models.open_ome_zarr(zarr.open_group(out, mode="r"), version=version)
    assert type(model).__name__ == "Image"
    ((first, *rest),) = model.datasets
    assert first.path == "0" and len(rest) == 2
    labels = model.labels
    assert labels is not None and list(labels.attributes.model_dump(by_alias=True).values())
    module = ome_zarr_models.v04 if zarr_format == 2 else ome_zarr_models.v05
    label = module.ImageLabel.from_zarr(zarr.open_group(out, mode="r", path="labels/cells"))
    assert label is not None


@pytest.mark.parametrize("zarr_format", [2, 3])
def test_ome_zarr_py_reads_every_level(tmp_path: Path, zarr_format: int,
                                       caplog: pytest.LogCaptureFixture) -> None:
    out, image = _write(tmp_path, zarr_format)
    caplog.set_level(logging.ERROR)  # the reader logs its format guess for v2
    nodes = list(ome_zarr_reader.Reader(ome_zarr_io.parse_url(out))())
    image_node = nodes[0]
    levels = [np.asarray(level) for level in image_node.data]
    assert len(levels) == 3
    np.testing.assert_array_equal(levels[0], image)
    group = chunkflow.open_group(out, mode="r")
    for k, level in enumerate(levels):
        np.testing.assert_array_equal(level, group[str(k)][...])
    label_nodes = [node for node in nodes if node.load(ome_zarr_reader.Label)]
    assert label_nodes and label_nodes[0].data[0].shape == image.shape[2:]
    transforms = image_node.metadata["coordinateTransformations"]
    assert transforms[1][0]["scale"] == [1.0, 1.0, 2.0, 2.0, 2.0]


@pytest.mark.parametrize("zarr_format", [2, 3])
def test_ngff_zarr_reads_scales_translations_and_units(tmp_path: Path, zarr_format: int) -> None:
    out, image = _write(tmp_path, zarr_format, axes="tcyx")
    multiscales = ngff_zarr.from_ngff_zarr(out)
    images = multiscales.images
    assert [im.data.shape for im in images] == [(2, 3, 40, 50), (2, 3, 20, 25), (2, 3, 10, 13)]
    np.testing.assert_array_equal(np.asarray(images[0].data), image)
    assert images[2].scale == {"t": 1.0, "c": 1.0, "y": 4.0, "x": 4.0}
    # mean: a level-2 pixel is the mean of 4x4 level-0 pixels, centered at 1.5 of them.
    assert images[2].translation == {"t": 0.0, "c": 0.0, "y": 1.5, "x": 1.5}
    assert images[0].axes_units == {"t": "second", "c": None, "y": "micrometer", "x": "micrometer"}


def test_napari_reader_plugin_opens_the_pyramid(tmp_path: Path) -> None:
    # napari 0.9 and napari-ome-zarr 0.10 install beside zarr 3 without changing it
    # (napari-ome-zarr is in the test extra; no Qt binding is needed to read layers).
    napari_ome_zarr = pytest.importorskip("napari_ome_zarr")
    out, image = _write(tmp_path, 3, axes="yx")
    reader = napari_ome_zarr.napari_get_reader(out)
    assert reader is not None
    layers = reader(out)
    data, kwargs, kind = layers[0]
    assert kind == "image" and kwargs["axis_labels"] == ("y", "x")
    assert kwargs["units"] == ("micrometer", "micrometer")
    # A list of levels: napari shows it as a multiscale image.
    assert [tuple(level.shape) for level in data] == [(90, 70), (45, 35), (23, 18), (12, 9)]
    np.testing.assert_array_equal(np.asarray(data[0]), image)
    from napari.layers import Image  # the layer napari would show, built headless

    layer = Image(data, **kwargs)
    assert layer.multiscale and layer.level_shapes.tolist()[-1] == [12, 9]
