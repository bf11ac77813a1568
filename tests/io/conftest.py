"""What the reader tests share: numpy's pyramid (the oracle) and the readers of the
output made by others (ome-zarr-py and ngff-zarr)."""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np


def mean_level(values: np.ndarray, factors: Sequence[int]) -> np.ndarray:
    """numpy's mean of each window (partial windows at the ends), rounded half to even
    for integers: the next pyramid level."""
    sums = values.astype(np.float64 if values.dtype.kind == "f" else np.int64)
    counts = np.ones(values.shape, np.int64)
    for axis, f in enumerate(factors):
        if f > 1:
            starts = np.arange(0, values.shape[axis], f)
            sums = np.add.reduceat(sums, starts, axis=axis)
            counts = np.add.reduceat(counts, starts, axis=axis)
    if values.dtype.kind == "f":
        return (sums / counts).astype(values.dtype)
    return np.round(sums / counts).astype(values.dtype)


def numpy_pyramid(values: np.ndarray, axes: str, levels: int) -> list[np.ndarray]:
    """Every level: x, y and z halved, t and c kept."""
    factors = [2 if a in "zyx" else 1 for a in axes]
    found = [values]
    for _ in range(levels - 1):
        found.append(mean_level(found[-1], factors))
    return found


@dataclass
class ReadBack:
    """What ome-zarr-py and ngff-zarr read in an OME-Zarr image."""

    axes: str
    units: dict[str, str | None]
    scales: list[list[float]]
    channel_names: list[str] | None
    levels: list[np.ndarray]


def read_with_ome_zarr(path: str | os.PathLike[str]) -> ReadBack:
    """ome-zarr-py's reader (what napari-ome-zarr uses)."""
    from ome_zarr.io import parse_url
    from ome_zarr.reader import Reader

    node = next(iter(Reader(parse_url(os.fspath(path)))()))
    meta: dict[str, Any] = node.metadata
    axes = meta["axes"]
    return ReadBack(
        axes="".join(a["name"] for a in axes),
        units={a["name"]: a.get("unit") for a in axes},
        scales=[t[0]["scale"] for t in meta["coordinateTransformations"]],
        channel_names=meta.get("channel_names"),
        levels=[np.asarray(level) for level in node.data],
    )


def read_with_ngff_zarr(path: str | os.PathLike[str]) -> ReadBack:
    """ngff-zarr's reader."""
    import ngff_zarr

    multiscales = ngff_zarr.from_ngff_zarr(os.fspath(path))
    images = multiscales.images
    dims = images[0].dims
    omero = multiscales.metadata.omero
    return ReadBack(
        axes="".join(dims),
        units={d: (images[0].axes_units or {}).get(d) for d in dims},
        scales=[[float(image.scale[d]) for d in dims] for image in images],
        channel_names=[c.label for c in omero.channels] if omero is not None else None,
        levels=[np.asarray(image.data) for image in images],
    )


def check_image(path: str | os.PathLike[str], values: np.ndarray, axes: str,
                scale: Sequence[float], units: dict[str, str | None],
                channel_names: list[str] | None, levels: int | None = None) -> None:
    """The image at ``path`` as both readers see it: numpy's pyramid of ``values``, the
    axes, level 0's scale (doubled on space axes per level), units and channels."""
    for read in (read_with_ome_zarr, read_with_ngff_zarr):
        back = read(path)
        assert back.axes == axes, read.__name__
        assert {k: v for k, v in back.units.items() if v} == {k: v for k, v in units.items() if v}
        assert back.channel_names == channel_names, read.__name__
        if levels is not None:
            assert len(back.levels) == levels
        expected = numpy_pyramid(values, axes, len(back.levels))
        for k, (found, want) in enumerate(zip(back.levels, expected)):
            assert found.dtype == want.dtype, (read.__name__, k)
            np.testing.assert_array_equal(found, want, err_msg=f"{read.__name__} level {k}")
            factors = [2.0**k if a in "zyx" else 1.0 for a in axes]
            np.testing.assert_allclose(back.scales[k], np.multiply(scale, factors))
