"""OME-Zarr levels as xarray variables: NGFF axis names and physical coordinates.

An OME-Zarr image names its axes (``c``, ``z``, ``y``, ``x``...) and gives each level a
``scale`` and a ``translation`` from array indices to physical coordinates, and the
image may add a ``scale`` and ``translation`` of its own, applied after the level's
(NGFF 0.4 and 0.5: ``multiscales[0].coordinateTransformations``). The engine gives a
level:

- dimensions named after the axes when its array names none (NGFF 0.4 on Zarr v2
  writes no ``_ARRAY_DIMENSIONS``; ``engine="zarr"`` refuses such arrays);
- on a store that cannot list folders (an HTTP server), the members its metadata
  names (:func:`listed_members`): the levels, the ``labels`` group below an image,
  the label images a ``labels`` group lists; read at their known paths, so an
  OME-Zarr image served over plain HTTP opens without consolidated metadata, as
  ome-zarr-py and ngff-zarr open it;
- where the level is a dataset of its own (a node of ``open_datatree``, or the array
  opened with ``group="0"``), one coordinate per space or time axis,
  ``translation + index * scale``, in float64 as ngff-zarr and ome-zarr-py compute
  it, with the axis' ``unit`` as the coordinate's ``units`` attribute; and the
  channel names of the image's ``omero`` metadata as the
  coordinate of a ``channel`` axis, when there is one name per channel.

Examples
--------
>>> from chunkflow.metadata.ngff import multiscales_attributes, resolve_axes
>>> attrs = multiscales_attributes(resolve_axes("yx", 2, units={"x": "micrometer"}),
...                                [("0", (0.5, 0.5), (0.0, 0.0)),
...                                 ("1", (1.0, 1.0), (0.25, 0.25))], version="0.5")
>>> level = level_geometry(attrs, "1")
>>> level.names, level.scale, level.translation
(('y', 'x'), (1.0, 1.0), (0.25, 0.25))
>>> coords = coordinate_variables(level, ("y", "x"), (2, 3))
>>> coords["x"].values.tolist(), coords["x"].attrs
([0.25, 1.25, 2.25], {'units': 'micrometer'})
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from xarray import Variable

from chunkflow.core.array import Array
from chunkflow.core.group import Group
from chunkflow.errors import IncompleteListingError
from chunkflow.metadata.ngff import Axis, read_multiscales

__all__ = ["LevelGeometry", "coordinate_variables", "level_geometry", "listed_members",
           "named_members"]

#: The NGFF axis types whose coordinates are physical positions.
_PHYSICAL = ("space", "time")


@dataclass(frozen=True)
class LevelGeometry:
    """One level of an OME-Zarr image: its axes and index-to-physical transformation
    (the image's own transformation already folded in)."""

    axes: tuple[Axis, ...]
    scale: tuple[float, ...]
    translation: tuple[float, ...]
    channels: tuple[str, ...] | None = None

    @property
    def names(self) -> tuple[str, ...]:
        """The axis names, in the array's dimension order."""
        return tuple(axis.name for axis in self.axes)


def _first_multiscale(attributes: Mapping[str, Any]) -> Mapping[str, Any]:
    """The raw first ``multiscales`` entry (NGFF 0.5 under ``ome``, 0.4 at the top)."""
    ome = attributes.get("ome")
    holder = ome if isinstance(ome, Mapping) and "multiscales" in ome else attributes
    entries = holder.get("multiscales")
    return entries[0] if isinstance(entries, list) and entries and isinstance(
        entries[0], Mapping) else {}


def _image_transform(multiscale: Mapping[str, Any], kind: str, ndim: int) -> tuple[float, ...] | None:
    for transform in multiscale.get("coordinateTransformations", ()) or ():
        if isinstance(transform, Mapping) and transform.get("type") == kind:
            values = transform.get(kind)
            if isinstance(values, list) and len(values) == ndim:
                return tuple(float(v) for v in values)
    return None


def _channel_names(attributes: Mapping[str, Any]) -> tuple[str, ...] | None:
    """The ``omero`` channel labels (NGFF 0.5 under ``ome``), when every channel has one."""
    ome = attributes.get("ome")
    omero = (ome if isinstance(ome, Mapping) and "omero" in ome else attributes).get("omero")
    channels = omero.get("channels") if isinstance(omero, Mapping) else None
    if not isinstance(channels, list) or not channels:
        return None
    labels = [c.get("label") if isinstance(c, Mapping) else None for c in channels]
    if not all(isinstance(label, str) for label in labels) or len(set(labels)) != len(labels):
        return None
    return tuple(labels)  # type: ignore[arg-type]  # every label checked to be a str


def level_geometry(attributes: Mapping[str, Any], path: str) -> LevelGeometry | None:
    """The geometry of the level ``path`` of the image whose group attributes are
    ``attributes``; ``None`` when the group is no OME-Zarr image, ``path`` is none of
    its levels, or its axes and transformations disagree in length.

    Examples
    --------
    >>> level_geometry({"title": "no image"}, "0") is None
    True
    """
    multiscales = read_multiscales(attributes)
    if multiscales is None or path not in multiscales.paths:
        return None
    index = multiscales.paths.index(path)
    ndim = len(multiscales.axes)
    scale = multiscales.scales[index] or (1.0,) * ndim
    translation = multiscales.translations[index] or (0.0,) * ndim
    if ndim == 0 or len(scale) != ndim or len(translation) != ndim:
        return None
    image = _first_multiscale(attributes)
    outer_scale = _image_transform(image, "scale", ndim) or (1.0,) * ndim
    outer_shift = _image_transform(image, "translation", ndim) or (0.0,) * ndim
    # NGFF applies the level's transformations first, then the image's.
    scale = tuple(s * o for s, o in zip(scale, outer_scale))
    translation = tuple(t * o + u for t, o, u in zip(translation, outer_scale, outer_shift))
    return LevelGeometry(multiscales.axes, scale, translation, _channel_names(attributes))


def coordinate_variables(geometry: LevelGeometry, dims: Sequence[str],
                         shape: Sequence[int]) -> dict[str, Variable]:
    """The coordinates of a level of shape ``shape`` whose dimensions are ``dims``:
    one per space or time axis (``translation + index * scale``, with its ``units``),
    and the channel names for a channel axis of as many entries."""
    coords: dict[str, Variable] = {}
    if len(dims) != len(geometry.axes) or len(shape) != len(geometry.axes):
        return coords
    for d, (dim, axis, size) in enumerate(zip(dims, geometry.axes, shape)):
        if axis.type in _PHYSICAL:
            attrs = {"units": axis.unit} if axis.unit else {}
            values = geometry.translation[d] + np.arange(size, dtype="f8") * geometry.scale[d]
            coords[dim] = Variable((dim,), values, attrs)
        elif axis.type == "channel" and geometry.channels and len(geometry.channels) == size:
            coords[dim] = Variable((dim,), np.array(geometry.channels, dtype=object))
    return coords


def named_members(attributes: Mapping[str, Any]) -> list[str] | None:
    """The members an OME-Zarr group's metadata names: an image's levels and its
    ``labels`` group, a ``labels`` group's label images; ``None`` for other groups.

    Examples
    --------
    >>> named_members({"ome": {"version": "0.5", "labels": ["cells", "nuclei"]}})
    ['cells', 'nuclei']
    >>> named_members({"title": "climate"}) is None
    True
    """
    multiscales = read_multiscales(attributes)
    if multiscales is not None:
        return [*multiscales.paths, "labels"]
    ome = attributes.get("ome")
    labels = (ome if isinstance(ome, Mapping) and "labels" in ome else attributes).get("labels")
    if isinstance(labels, list) and all(isinstance(name, str) for name in labels):
        return list(labels)
    return None


def listed_members(group: Group) -> list[tuple[str, Array | Group]]:
    """The group's members, listed; on a store that cannot list them (or lists none
    of those its metadata names), those its OME-Zarr metadata names that exist (other
    groups raise :class:`~chunkflow.errors.IncompleteListingError` or its
    :class:`~chunkflow.errors.UnlistableGroupError`, as before).

    Examples
    --------
    >>> import chunkflow
    >>> [name for name, _ in listed_members(chunkflow.group())]
    []
    """
    try:
        return list(group.members())
    except IncompleteListingError:
        named = named_members(group.attrs.asdict())
        if named is None:
            raise
        found = ((name, group.get(name)) for name in named)  # known paths: no listing
        return sorted((name, node) for name, node in found if node is not None)
