"""The OME-Zarr metadata of a converted image: axes, scale, units and channels, from
the arguments over what the file says, and the ``multiscales`` and ``omero`` documents.

Examples
--------
>>> import numpy as np
>>> from chunkflow.io.source import ArrayReader, SourceInfo
>>> reader = ArrayReader(np.zeros((2, 8, 8), "u1"), SourceInfo(axes="cyx",
...     scale={"x": 0.5, "y": 0.5}, units={"x": "micrometer", "y": "micrometer"},
...     channel_names=("DAPI", "GFP")))
>>> image = resolve_image(reader, None, None, None, None)
>>> [a.name for a in image.axes], image.scale, image.channel_names
(['c', 'y', 'x'], (1.0, 0.5, 0.5), ('DAPI', 'GFP'))
>>> resolve_image(reader, None, {"x": 2}, None, ["a"]).scale
Traceback (most recent call last):
...
chunkflow.errors.InvalidArgumentError: convert: channel_names=['a'] names 1 channels; the c axis has 2
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from chunkflow.errors import InvalidArgumentError
from chunkflow.graph.pyramid.downsample import WINDOW_METHODS
from chunkflow.io.source import Reader, unit_name
from chunkflow.metadata.ngff import (
    AxesLike,
    Axis,
    default_axis_names,
    level_transforms,
    multiscales_attributes,
    resolve_axes,
)
from chunkflow.version import __version__

__all__ = ["COLORS", "ImageMetadata", "ImageSpec", "image_attributes", "resolve_image"]

#: Display colors of channels, in turn (one channel: white).
COLORS = ("00FF00", "FF00FF", "00FFFF", "FFFF00", "FF0000", "0000FF")
# The smallest level is read for the channels' display windows when it is this small.
WINDOW_BYTES = 64 * 2**20


@dataclass(frozen=True)
class ImageSpec:
    """Axes (with units), the scale of level 0, and the channel names."""

    axes: tuple[Axis, ...]
    scale: tuple[float, ...]
    channel_names: tuple[str, ...] | None


def resolve_image(reader: Reader, axes: AxesLike, scale: Sequence[float] | Mapping[str, float]
                  | None, units: Mapping[str, str] | None,
                  channel_names: Sequence[str] | None) -> ImageSpec:
    """The image's axes, scale and channel names: the arguments over the file's."""
    info = reader.info
    names = axes if axes is not None else (info.axes or default_axis_names(reader.ndim))
    given_units = {k: unit_name(v) or "" for k, v in dict(units or {}).items()}
    resolved = resolve_axes(names, reader.ndim, units={**dict(info.units), **given_units})
    axis_names = [a.name for a in resolved]
    if isinstance(scale, Mapping):
        unknown = sorted(set(scale) - set(axis_names))
        if unknown:
            raise InvalidArgumentError(f"convert: scale names axes {unknown} the image "
                                       f"({''.join(axis_names)!r}) does not have")
        sizes = [float(scale.get(n, info.scale.get(n, 1.0))) for n in axis_names]
    elif scale is not None:
        sizes = [float(s) for s in scale]
        if len(sizes) != len(axis_names):
            raise InvalidArgumentError(f"convert: scale={list(scale)!r} gives {len(sizes)} sizes "
                                       f"for {len(axis_names)} axes ({''.join(axis_names)!r})")
    else:
        sizes = [float(info.scale.get(n, 1.0)) for n in axis_names]
    if not all(s > 0 and np.isfinite(s) for s in sizes):
        raise InvalidArgumentError(f"convert: scale {sizes} must be positive sizes")
    channels = tuple(str(n) for n in channel_names) if channel_names is not None else (
        info.channel_names)
    if channels is not None:
        count = reader.shape[axis_names.index("c")] if "c" in axis_names else 1
        if len(channels) != count:
            raise InvalidArgumentError(
                f"convert: channel_names={list(channels)!r} names {len(channels)} channels; "
                f"the c axis has {count}" if "c" in axis_names else
                f"convert: channel_names={list(channels)!r}: the image has no c axis (one "
                "channel)")
    return ImageSpec(resolved, tuple(sizes), channels)


@dataclass(frozen=True)
class ImageMetadata:
    """The group attributes of the image, finished with the channels' display windows
    once every level is written (:meth:`document`)."""

    image: ImageSpec
    multiscales: dict[str, Any]
    version: str

    def document(self, level: Any) -> dict[str, Any]:
        """The attributes, ``omero`` from ``level`` (the smallest, read when small)."""
        omero = self._omero(level)
        if omero is None:
            return self.multiscales
        if self.version == "0.4":
            return {**self.multiscales, "omero": omero}
        return {"ome": {**self.multiscales["ome"], "omero": omero}}

    def _omero(self, level: Any) -> dict[str, Any] | None:
        names = [a.name for a in self.image.axes]
        if "c" not in names and self.image.channel_names is None:
            return None
        axis = names.index("c") if "c" in names else None
        count = level.shape[axis] if axis is not None else 1
        labels = self.image.channel_names or tuple(f"Channel {i}" for i in range(count))
        dtype = np.dtype(level.dtype)
        small = level.nbytes <= WINDOW_BYTES and dtype.kind in "uif"
        values = np.asarray(level[...]) if small else None
        channels = []
        for i, label in enumerate(labels):
            plane = None if values is None else (values if axis is None
                                                 else np.take(values, i, axis=axis))
            channels.append({"label": label, "active": True, "coefficient": 1.0,
                             "color": "FFFFFF" if count == 1 else COLORS[i % len(COLORS)],
                             "family": "linear", "inverted": False,
                             "window": _window(plane, dtype)})
        return {"channels": channels, "rdefs": {"model": "color" if count > 1 else "greyscale"}}


def _window(plane: np.ndarray | None, dtype: np.dtype) -> dict[str, float]:
    """The display window: the dtype's range, and the values' (of the smallest level)."""
    if dtype.kind in "ui":
        low, high = float(np.iinfo(dtype).min), float(np.iinfo(dtype).max)
    elif dtype.kind == "f":
        low, high = 0.0, 1.0
    else:
        low, high = 0.0, 1.0
    start, end = low, high
    if plane is not None and plane.size:
        finite = plane[np.isfinite(plane)] if dtype.kind == "f" else plane
        if finite.size:
            start, end = float(finite.min()), float(finite.max())
            if dtype.kind == "f":
                low, high = min(low, start), max(high, end)
    return {"start": start, "end": end, "min": low, "max": high}


def image_attributes(image: ImageSpec, factors: Sequence[int], levels: int, method: str,
                     version: str) -> ImageMetadata:
    """The image's metadata: multiscales now, omero when the levels are written."""
    transforms = level_transforms(factors, levels, image.scale,
                                  centered=method in WINDOW_METHODS)
    multiscales = multiscales_attributes(
        image.axes, transforms, version=version, method=method,
        metadata={"method": "chunkflow.convert", "version": __version__,
                  "kwargs": {"method": method, "factors": list(factors)}})
    return ImageMetadata(image, multiscales, version)
