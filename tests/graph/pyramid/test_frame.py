"""pyramid's axes, scale, translation and channel names: written as NGFF, inherited by a
label image from the image it joins (so that the overlay is aligned)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest

import chunkflow
from chunkflow.errors import PyramidError


def _multiscale(group: chunkflow.Group) -> dict[str, Any]:
    attrs = dict(group.attrs)
    return (attrs["ome"] if "ome" in attrs else attrs)["multiscales"][0]


def _transforms(group: chunkflow.Group) -> list[tuple[list[float], list[float]]]:
    rows = []
    for dataset in _multiscale(group)["datasets"]:
        found = {t["type"]: t[t["type"]] for t in dataset["coordinateTransformations"]}
        rows.append((found["scale"], found["translation"]))
    return rows


def _image(tmp_path: Path, zarr_format: int, **kwargs: Any) -> tuple[str, np.ndarray]:
    data = np.random.default_rng(1).integers(0, 5000, (2, 8, 36, 28)).astype("u2")
    out = str(tmp_path / f"image{zarr_format}.ome.zarr")
    chunkflow.pyramid(chunkflow.array(data, chunks=(1, 4, 16, 16), zarr_format=zarr_format),
                      out, **kwargs)
    return out, data


@pytest.mark.parametrize("zarr_format", [2, 3])
def test_labels_inherit_axes_units_scale_and_translation(tmp_path: Path, zarr_format: int) -> None:
    out, data = _image(tmp_path, zarr_format, scale={"z": 2.0, "y": 0.65, "x": 0.65},
                       translation=(0, 100, 5, -3),
                       units={"z": "micrometer", "y": "micrometer", "x": "micrometer"})
    labels = (data[0] > 2500).astype("u4")
    chunkflow.pyramid(chunkflow.array(labels, chunks=(4, 16, 16)), out, labels="cells")
    image = chunkflow.open_group(out, mode="r")
    cells = chunkflow.open_group(out, mode="r", path="labels/cells")
    assert _multiscale(cells)["axes"] == _multiscale(image)["axes"][1:]
    # Every level of the labels sits where the image's level sits (c dropped).
    for (scale, shift), (want_scale, want_shift) in zip(_transforms(cells), _transforms(image)):
        assert scale == want_scale[1:] and shift == want_shift[1:]
    assert _transforms(cells)[0] == ([2.0, 0.65, 0.65], [100.0, 5.0, -3.0])
    assert _transforms(cells)[1] == ([4.0, 1.3, 1.3], [101.0, 5.325, -2.675])


def test_labels_of_the_image_dimensions_and_by_dimension_names(tmp_path: Path) -> None:
    data = np.zeros((3, 6, 20, 20), "u2")
    out = str(tmp_path / "t.ome.zarr")
    source = chunkflow.array(data, chunks=(1, 6, 10, 10), dimension_names=list("tzyx"))
    chunkflow.pyramid(source, out, scale=(10.0, 3.0, 0.5, 0.5), units={"t": "second"})
    same = chunkflow.array(data.astype("u4"), chunks=(1, 6, 10, 10), zarr_format=3)
    chunkflow.pyramid(same, out, labels="all")
    assert _transforms(chunkflow.open_group(out, mode="r", path="labels/all"))[0][0] == \
        [10.0, 3.0, 0.5, 0.5]
    axes = _multiscale(chunkflow.open_group(out, mode="r", path="labels/all"))["axes"]
    assert axes[0] == {"name": "t", "type": "time", "unit": "second"}
    # Fewer dimensions: the time axis goes (there is no channel axis to drop first).
    plane = chunkflow.array(data[0].astype("u4"), chunks=(6, 10, 10), zarr_format=3)
    chunkflow.pyramid(plane, out, labels="first")
    assert _transforms(chunkflow.open_group(out, mode="r", path="labels/first"))[0][0] == \
        [3.0, 0.5, 0.5]
    # Named dimensions pick the image's axes by name.
    yx = chunkflow.array(data[0, 0].astype("u4"), chunks=(10, 10), dimension_names=["y", "x"])
    chunkflow.pyramid(yx, out, labels="plane")
    assert _transforms(chunkflow.open_group(out, mode="r", path="labels/plane"))[0][0] == [0.5, 0.5]


@pytest.mark.parametrize("zarr_format", [2, 3])
def test_channel_names_colours_and_windows(tmp_path: Path, zarr_format: int) -> None:
    out, data = _image(tmp_path, zarr_format, channels=["DAPI", {"label": "GFP", "color": "00FF00"}])
    attrs = dict(chunkflow.open_group(out, mode="r").attrs)
    omero = attrs["omero"] if zarr_format == 2 else attrs["ome"]["omero"]
    assert [c["label"] for c in omero["channels"]] == ["DAPI", "GFP"]
    assert [c["color"] for c in omero["channels"]] == ["0000FF", "00FF00"]
    last = chunkflow.open_group(out, mode="r")[str(len(_transforms(
        chunkflow.open_group(out, mode="r"))) - 1)][...]
    for index, channel in enumerate(omero["channels"]):
        assert channel["window"] == {"min": 0.0, "max": 65535.0,
                                     "start": float(last[index].min()),
                                     "end": float(last[index].max())}


def test_float_windows_skip_nan() -> None:
    data = np.random.default_rng(2).random((3, 20, 20)).astype("f4")
    data[1] = np.nan
    data[2, 0, 0] = np.inf
    out = chunkflow.MemoryStore()
    chunkflow.pyramid(chunkflow.array(data, chunks=(1, 8, 8)), out, axes="cyx",
                      channels=["a", "b", "c"], method="nearest")
    omero = dict(chunkflow.open_group(out, mode="r").attrs)["ome"]["omero"]
    last = chunkflow.open_group(out, mode="r")[str(len(_multiscale(
        chunkflow.open_group(out, mode="r"))["datasets"]) - 1)][...]
    a = omero["channels"][0]["window"]
    assert a["start"] == a["min"] == float(last[0].min())
    assert omero["channels"][1]["window"] == {"min": 0.0, "max": 1.0, "start": 0.0, "end": 1.0}
    assert omero["channels"][2]["window"]["end"] == float(last[2][np.isfinite(last[2])].max())


@pytest.mark.parametrize("kwargs, message", [
    ({"channels": ["a"]}, "names 1 channels; the channel axis has 2"),
    ({"channels": ["a", ""]}, "channel 1 needs a name"),
    ({"channels": "ab"}, "must be a list of names"),
    ({"axes": "zzyx"}, "unique"),
    ({"units": {"q": "second"}}, "units names axes ['q']"),
    ({"scale": (1, 1, -1, 1)}, "the scale of axis 'y' must be a positive number"),
    ({"scale": "1111"}, "must be a sequence of numbers or a mapping"),
    ({"translation": {"w": 1}}, "translation names axes ['w']"),
    ({"translation": (0, 0, 0)}, "gives 3 values for 4 axes"),
])
def test_refusals_create_nothing(tmp_path: Path, kwargs: dict[str, Any], message: str) -> None:
    out = tmp_path / "refused.ome.zarr"
    with pytest.raises(PyramidError) as refusal:
        chunkflow.pyramid(
            chunkflow.array(np.zeros((2, 4, 8, 8), "u1"), chunks=(1, 4, 4, 4)), str(out), **kwargs)
    assert message in str(refusal.value)
    assert not out.exists()


def test_label_images_have_no_channels(tmp_path: Path) -> None:
    out, data = _image(tmp_path, 3)
    with pytest.raises(PyramidError, match="a label image has none"):
        chunkflow.pyramid(chunkflow.array(data[0].astype("u4"), chunks=(4, 16, 16)), out,
                          labels="cells", channels=["x"])
    assert "labels" not in chunkflow.open_group(out, mode="r")
