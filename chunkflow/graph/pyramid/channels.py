"""Channel names of an OME-Zarr image: the ``omero`` metadata viewers read.

napari's reader (napari-ome-zarr) names one layer per channel after ``omero``'s
``channels[i].label``, colours it with ``color`` and sets its contrast from ``window``;
ome-zarr-models requires ``color`` and ``window`` of every channel. ``channels=`` gives a
name per channel (or a mapping with ``label`` and any of ``color``, ``window``,
``active``); the rest is filled in: a colour per channel (white for one channel) and a
window from the values of the coarsest level (``start``/``end``; ``min``/``max`` the
dtype's range for integers, the values' for floats), read in a few thousand elements at
most.

Examples
--------
>>> import numpy as np
>>> spec = channel_entries(["DAPI", {"label": "GFP", "color": "00FF00"}], 2)
>>> [c["label"] for c in spec], [c["color"] for c in spec]
(['DAPI', 'GFP'], ['0000FF', '00FF00'])
>>> level = np.array([[[0, 5], [7, 9]], [[100, 200], [300, 400]]], "u2")
>>> omero = omero_attributes(spec, level, 0)
>>> omero["channels"][1]["window"]
{'min': 0.0, 'max': 65535.0, 'start': 100.0, 'end': 400.0}
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from chunkflow.errors import PyramidError

__all__ = ["COLORS", "ImageAttributes", "channel_entries", "omero_attributes", "window_sample"]

#: The colours of channels without one, in order (napari's usual first colours).
COLORS = ("0000FF", "00FF00", "FF0000", "FF00FF", "00FFFF", "FFFF00", "FFFFFF")

# The coarsest level read for the windows, at most about this many elements.
_SAMPLE_ELEMENTS = 1 << 20


def channel_entries(channels: Sequence[str | Mapping[str, Any]], count: int
                    ) -> list[dict[str, Any]]:
    """``channels=`` as one entry per channel (label, color; window filled later).

    Raises
    ------
    PyramidError
        Not one entry per channel, or an entry without a label.
    """
    if isinstance(channels, (str, bytes)) or not isinstance(channels, Sequence):
        raise PyramidError(f"pyramid: channels must be a list of names, got {channels!r}")
    if len(channels) != count:
        raise PyramidError(f"pyramid: channels={list(channels)!r} names {len(channels)} "
                           f"channels; the channel axis has {count}")
    entries = []
    for index, channel in enumerate(channels):
        entry: dict[str, Any] = (dict(channel) if isinstance(channel, Mapping)
                                 else {"label": channel})
        if not isinstance(entry.get("label"), str) or not entry["label"]:
            raise PyramidError(f"pyramid: channel {index} needs a name (a non-empty string), "
                               f"got {channel!r}")
        color = "FFFFFF" if count == 1 else COLORS[index % len(COLORS)]
        entry.setdefault("color", color)
        entry.setdefault("active", True)
        entries.append(entry)
    return entries


def window_sample(shape: Sequence[int], channel_axis: int) -> tuple[slice, ...]:
    """A strided selection of a level holding every channel and at most about a
    million elements: what the windows are computed from."""
    steps = [1] * len(shape)
    while math.prod(-(-n // s) for n, s in zip(shape, steps)) > _SAMPLE_ELEMENTS:
        widest = max((d for d in range(len(shape)) if d != channel_axis),
                     key=lambda d: -(-shape[d] // steps[d]))
        steps[widest] *= 2
    return tuple(slice(None, None, s) for s in steps)


def _window(values: np.ndarray, dtype: np.dtype) -> dict[str, float]:
    finite = values[np.isfinite(values)] if values.dtype.kind in "fc" else values
    start, end = (float(finite.min()), float(finite.max())) if finite.size else (0.0, 1.0)
    if dtype.kind in "iu":
        info = np.iinfo(dtype)
        low, high = float(info.min), float(info.max)
    elif dtype.kind == "b":
        low, high = 0.0, 1.0
    else:
        low, high = start, end
    return {"min": low, "max": high, "start": start, "end": end}


def omero_attributes(entries: Sequence[Mapping[str, Any]], sample: np.ndarray,
                     channel_axis: int) -> dict[str, Any]:
    """The ``omero`` document: ``entries`` with a window each, from ``sample`` (values
    of the coarsest level, channels along ``channel_axis``), unless they have one."""
    channels = []
    for index, entry in enumerate(entries):
        full = dict(entry)
        if "window" not in full:
            plane = np.take(sample, index, axis=channel_axis)
            full["window"] = _window(np.asarray(plane).real if plane.dtype.kind == "c"
                                     else np.asarray(plane), sample.dtype)
        channels.append(full)
    return {"channels": channels, "rdefs": {"model": "color"}}


@dataclass(frozen=True)
class ImageAttributes:
    """The attributes of a pyramid's image group, written once every level is: the
    ``multiscales``, and with channel names the ``omero`` metadata, whose windows come
    from the coarsest level (:meth:`complete`)."""

    attributes: dict[str, Any]
    version: str
    channels: tuple[dict[str, Any], ...] | None = None
    channel_axis: int | None = None

    def complete(self, coarsest: Any) -> dict[str, Any]:
        """The attributes, with ``omero`` read from ``coarsest`` (the last level)."""
        if self.channels is None or self.channel_axis is None:
            return self.attributes
        sample = np.asarray(coarsest.get_basic_selection(
            window_sample(coarsest.shape, self.channel_axis)))
        omero = omero_attributes(self.channels, sample, self.channel_axis)
        if self.version == "0.4":
            return {**self.attributes, "omero": omero}
        ome = self.attributes.get("ome", {})
        return {**self.attributes, "ome": {**ome, "omero": omero}}
