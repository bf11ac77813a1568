"""OME-NGFF metadata: axes rules, 0.4 and 0.5 documents, parsing what peers write."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

import chunkflow
from chunkflow.errors import PyramidError
from chunkflow.metadata.ngff import (
    Axis,
    image_label_attributes,
    multiscales_attributes,
    read_multiscales,
    resolve_axes,
)

LEVELS = [("0", (1.0, 0.5, 0.5), (0.0, 0.0, 0.0)), ("1", (1.0, 1.0, 1.0), (0.0, 0.25, 0.25))]


@pytest.mark.parametrize("ndim, names", [(2, "yx"), (3, "zyx"), (4, "czyx"), (5, "tczyx")])
def test_default_axes_by_dimension(ndim: int, names: str) -> None:
    assert "".join(a.name for a in resolve_axes(None, ndim)) == names


def test_dimension_names_are_used_when_they_are_ngff_axes() -> None:
    assert [a.type for a in resolve_axes(None, 3, ["t", "y", "x"])] == ["time", "space", "space"]
    assert [a.name for a in resolve_axes(None, 3, ["a", "b", "c"])] == ["z", "y", "x"]


@pytest.mark.parametrize("axes, message", [
    ("x", "2 to 5 axes"),
    ("cyx", None),
    ("ctyx", "orders them time"),
    ("tyx", None),
    ("yxx", "unique"),
    ("qyx", "has no type"),
    ([{"name": "q", "type": "custom"}, "y", "x"], None),
    ("tcyxz", None),
    ("cyxzt", "orders them"),
])
def test_ngff_axis_rules(axes: object, message: str | None) -> None:
    ndim = len(axes)  # type: ignore[arg-type]
    if message is None:
        resolve_axes(axes, ndim)  # type: ignore[arg-type]
        return
    with pytest.raises(PyramidError, match=message):
        resolve_axes(axes, ndim)  # type: ignore[arg-type]


def test_version_04_and_05_documents() -> None:
    axes = resolve_axes("cyx", 3, units={"x": "micrometer", "y": "micrometer"})
    old = multiscales_attributes(axes, LEVELS, version="0.4", name="img", method="mean")
    assert old["multiscales"][0]["version"] == "0.4"
    assert old["multiscales"][0]["axes"][2] == {"name": "x", "type": "space",
                                                "unit": "micrometer"}
    new = multiscales_attributes(axes, LEVELS, version="0.5")
    assert set(new) == {"ome"} and new["ome"]["version"] == "0.5"
    assert "version" not in new["ome"]["multiscales"][0]
    transforms = new["ome"]["multiscales"][0]["datasets"][1]["coordinateTransformations"]
    assert transforms == [{"type": "scale", "scale": [1.0, 1.0, 1.0]},
                          {"type": "translation", "translation": [0.0, 0.25, 0.25]}]
    assert image_label_attributes("0.5") == {"ome": {"version": "0.5", "image-label": {
        "source": {"image": "../../"}}}}
    for attrs in (old, new):
        parsed = read_multiscales(attrs)
        assert parsed is not None and parsed.paths == ("0", "1")
        assert parsed.axes[2] == Axis("x", "space", "micrometer")
        assert parsed.translations[1] == (0.0, 0.25, 0.25)


def test_read_what_ome_zarr_py_writes(tmp_path: Path) -> None:
    writer = pytest.importorskip("ome_zarr.writer")
    zarr = pytest.importorskip("zarr")
    group = zarr.open_group(str(tmp_path / "peer.zarr"), mode="w", zarr_format=2)
    writer.write_image(np.zeros((64, 64), "u1"), group, axes="yx", scale_factors=(2,))
    parsed = read_multiscales(chunkflow.open_group(str(tmp_path / "peer.zarr"), mode="r").attrs)
    assert parsed is not None and parsed.version == "0.4" and parsed.paths == ("s0", "s1")
    # ome-zarr-py 0.18 moves a level's origin by half a window too, as chunkflow does.
    assert parsed.scales[1] == (2.0, 2.0) and parsed.translations[1] == (0.5, 0.5)
    info = chunkflow.open_group(str(tmp_path / "peer.zarr"), mode="r").info
    assert info["Level s1"].startswith("(32, 32) chunks")
