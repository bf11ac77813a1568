"""OME-NGFF multiscale metadata: axes, per-level transformations, build and parse.

An OME-Zarr image is a group whose attributes describe its resolution levels
(``multiscales``): the axes (name, type, unit) and, for each level, the array's path
and its ``scale`` and ``translation`` from array indices to physical coordinates.
NGFF 0.4 (Zarr v2) keeps that list at the top of ``.zattrs``; NGFF 0.5 (Zarr v3) puts
it under ``"ome"`` next to ``"version": "0.5"``. Label images (``labels/NAME`` below
an image) add ``image-label``; the ``labels`` group lists them.

Examples
--------
>>> axes = resolve_axes("yx", ndim=2)
>>> [(a.name, a.type) for a in axes]
[('y', 'space'), ('x', 'space')]
>>> attrs = multiscales_attributes(axes, [("0", (1.0, 1.0), (0.0, 0.0)),
...                                      ("1", (2.0, 2.0), (0.5, 0.5))], version="0.5")
>>> attrs["ome"]["version"], attrs["ome"]["multiscales"][0]["datasets"][1]["path"]
('0.5', '1')
>>> parsed = read_multiscales(attrs)
>>> parsed.version, parsed.paths, parsed.axis_names
('0.5', ('0', '1'), 'yx')
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, TypeAlias

from chunkflow.errors import PyramidError

__all__ = [
    "AXIS_TYPES", "AxesLike", "Axis", "Multiscales", "check_axes", "default_axis_names",
    "image_label_attributes", "labels_attributes", "level_transforms",
    "multiscales_attributes", "multiscales_rows", "ngff_version", "read_multiscales",
    "resolve_axes",
]

#: The type NGFF gives each conventional axis name.
AXIS_TYPES = {"t": "time", "c": "channel", "z": "space", "y": "space", "x": "space"}
_DEFAULT_NAMES = {2: "yx", 3: "zyx", 4: "czyx", 5: "tczyx"}

#: ``axes=``: a string of one-letter names (``"tczyx"``), a sequence of names, or of
#: mappings with ``name`` and optional ``type`` and ``unit``.
AxesLike: TypeAlias = "str | Sequence[str | Mapping[str, Any]] | None"


@dataclass(frozen=True)
class Axis:
    """One axis of an OME-Zarr image."""

    name: str
    type: str | None = None
    unit: str | None = None

    def document(self) -> dict[str, str]:
        """The axis as NGFF writes it (no ``unit`` key when there is none)."""
        doc = {"name": self.name}
        if self.type is not None:
            doc["type"] = self.type
        if self.unit is not None:
            doc["unit"] = self.unit
        return doc


def ngff_version(zarr_format: int) -> str:
    """The NGFF version chunkflow writes for a Zarr format: 0.4 for v2, 0.5 for v3.

    Examples
    --------
    >>> ngff_version(2), ngff_version(3)
    ('0.4', '0.5')
    """
    return "0.4" if zarr_format == 2 else "0.5"


def default_axis_names(ndim: int, dimension_names: Sequence[str | None] | None = None) -> str:
    """Axis names for an array: its ``dimension_names`` when they are NGFF's (t, c, z,
    y, x), else ``yx``, ``zyx``, ``czyx`` or ``tczyx`` by ``ndim``.

    Examples
    --------
    >>> default_axis_names(3), default_axis_names(3, ["c", "y", "x"])
    ('zyx', 'cyx')
    """
    if dimension_names and all(isinstance(n, str) and n.lower() in AXIS_TYPES
                               for n in dimension_names):
        names = "".join(str(n).lower() for n in dimension_names)
        if len(set(names)) == len(names):
            return names
    if ndim not in _DEFAULT_NAMES:
        raise PyramidError(f"an OME-Zarr image has 2 to 5 axes; this array has {ndim}")
    return _DEFAULT_NAMES[ndim]


def _axis(entry: str | Mapping[str, Any], units: Mapping[str, str]) -> Axis:
    if isinstance(entry, Mapping):
        name = str(entry.get("name", ""))
        kind = entry.get("type", AXIS_TYPES.get(name.lower()))
        unit = entry.get("unit", units.get(name))
    else:
        name, kind, unit = str(entry), AXIS_TYPES.get(str(entry).lower()), units.get(str(entry))
    if not name:
        raise PyramidError(f"axes: every axis needs a name, got {entry!r}")
    if kind is None:
        raise PyramidError(f"axes: axis {name!r} has no type; name it t, c, z, y or x, or give "
                           "{'name': ..., 'type': 'space' | 'time' | 'channel' | ...}")
    return Axis(name, str(kind), None if unit is None else str(unit))


def resolve_axes(axes: AxesLike, ndim: int, dimension_names: Sequence[str | None] | None = None,
                 units: Mapping[str, str] | None = None) -> tuple[Axis, ...]:
    """``axes=`` as checked :class:`Axis` entries, one per dimension.

    Examples
    --------
    >>> resolve_axes(None, 4)[0], resolve_axes(["y", "x"], 2, units={"x": "micrometer"})[1]
    (Axis(name='c', type='channel', unit=None), Axis(name='x', type='space', unit='micrometer'))
    >>> resolve_axes("xyz", 2)
    Traceback (most recent call last):
    ...
    chunkflow.errors.PyramidError: axes: 3 axes ('xyz') for an array of 2 dimensions
    """
    entries = default_axis_names(ndim, dimension_names) if axes is None else axes
    resolved = tuple(_axis(entry, dict(units or {})) for entry in entries)
    if len(resolved) != ndim:
        shown = axes if isinstance(axes, str) else [a.name for a in resolved]
        raise PyramidError(f"axes: {len(resolved)} axes ({shown!r}) for an array of {ndim} "
                           "dimensions")
    check_axes(resolved)
    return resolved


def check_axes(axes: Sequence[Axis]) -> None:
    """Refuse axes NGFF does not allow: 2 to 5 axes, 2 or 3 of type space, at most one
    time and one channel axis, unique names, ordered time, then channel (or custom),
    then space.

    Examples
    --------
    >>> check_axes(resolve_axes("tcyx", 4))
    >>> check_axes([Axis("y", "space"), Axis("t", "time"), Axis("x", "space")])
    ... # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    chunkflow.errors.PyramidError: axes ['y', 't', 'x']: NGFF orders them time, then channel or ...
    """
    names = [a.name for a in axes]
    kinds = [a.type for a in axes]
    problems = []
    if not 2 <= len(axes) <= 5:
        problems.append(f"an image has 2 to 5 axes, not {len(axes)}")
    if len(set(names)) != len(names):
        problems.append("axis names must be unique")
    if kinds.count("space") not in (2, 3):
        problems.append(f"an image has 2 or 3 axes of type space, not {kinds.count('space')}")
    if kinds.count("time") > 1 or kinds.count("channel") > 1:
        problems.append("at most one time and one channel axis")
    rank = [0 if k == "time" else 2 if k == "space" else 1 for k in kinds]
    if rank != sorted(rank):
        problems.append("NGFF orders them time, then channel or custom, then space")
    if problems:
        raise PyramidError(f"axes {names}: {'; '.join(problems)}")


def level_transforms(factors: Sequence[int], levels: int, scale: Sequence[float] | None = None,
                     *, centered: bool) -> list[tuple[str, list[float], list[float]]]:
    """(path, scale, translation) of each level, level 0 at ``scale`` (default 1).

    A level's pixel is ``factors`` pixels of the one before; ``centered``: it stands at
    the center of its window (a mean, as ngff-zarr and ome-zarr-py place it), so its
    origin moves by half a window less half a pixel; otherwise at the window's first
    pixel (a sample), and the origin stays.

    Examples
    --------
    >>> level_transforms((1, 2), 3, centered=True)[2]
    ('2', [1.0, 4.0], [0.0, 1.5])
    >>> level_transforms((2,), 2, (0.5,), centered=False)[1]
    ('1', [1.0], [0.0])
    """
    base = [1.0] * len(factors) if scale is None else [float(s) for s in scale]
    if len(base) != len(factors) or any(not s > 0 for s in base):
        raise PyramidError(f"pyramid: scale={scale!r} must give one positive size per axis "
                           f"({len(factors)})")
    result, current, offset = [], list(base), [0.0] * len(factors)
    for level in range(levels):
        result.append((str(level), list(current), list(offset)))
        for d, f in enumerate(factors):
            if centered:
                offset[d] += 0.5 * (f - 1) * current[d]
            current[d] *= f
    return result


def _dataset(path: str, scale: Sequence[float], translation: Sequence[float]) -> dict[str, Any]:
    transforms: list[dict[str, Any]] = [{"type": "scale", "scale": [float(s) for s in scale]}]
    transforms.append({"type": "translation", "translation": [float(t) for t in translation]})
    return {"path": path, "coordinateTransformations": transforms}


def multiscales_attributes(
    axes: Sequence[Axis],
    levels: Sequence[tuple[str, Sequence[float], Sequence[float]]],
    *,
    version: str,
    name: str | None = None,
    method: str | None = None,
    metadata: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    """The group attributes of an OME-Zarr image with ``levels`` (path, scale,
    translation), finest first, in NGFF ``version`` ``"0.4"`` or ``"0.5"``."""
    multiscale: dict[str, Any] = {}
    if version == "0.4":
        multiscale["version"] = "0.4"
    if name is not None:
        multiscale["name"] = name
    multiscale["axes"] = [a.document() for a in axes]
    multiscale["datasets"] = [_dataset(*level) for level in levels]
    if method is not None:
        multiscale["type"] = method
    if metadata:
        multiscale["metadata"] = dict(metadata)
    return _versioned({"multiscales": [multiscale]}, version)


def _versioned(content: dict[str, Any], version: str) -> dict[str, Any]:
    if version == "0.4":
        return content
    return {"ome": {"version": version, **content}}


def image_label_attributes(version: str, source_image: str = "../../") -> dict[str, Any]:
    """The ``image-label`` entry of a label image (to merge into its attributes).

    Examples
    --------
    >>> image_label_attributes("0.4")
    {'image-label': {'version': '0.4', 'source': {'image': '../../'}}}
    """
    label: dict[str, Any] = {"version": version} if version == "0.4" else {}
    label["source"] = {"image": source_image}
    return _versioned({"image-label": label}, version)


def labels_attributes(names: Sequence[str], version: str) -> dict[str, Any]:
    """The attributes of an image's ``labels`` group listing label images ``names``.

    Examples
    --------
    >>> labels_attributes(["cells"], "0.5")
    {'ome': {'version': '0.5', 'labels': ['cells']}}
    """
    return _versioned({"labels": list(names)}, version)


@dataclass(frozen=True)
class Multiscales:
    """The first ``multiscales`` entry of an OME-Zarr image, parsed."""

    version: str
    axes: tuple[Axis, ...]
    paths: tuple[str, ...]
    scales: tuple[tuple[float, ...] | None, ...]
    translations: tuple[tuple[float, ...] | None, ...]
    name: str | None = None
    method: str | None = None

    @property
    def axis_names(self) -> str:
        """The axis names joined (``"tczyx"``)."""
        return "".join(a.name for a in self.axes)


def _transform(dataset: Mapping[str, Any], kind: str) -> tuple[float, ...] | None:
    for transform in dataset.get("coordinateTransformations", ()):
        if isinstance(transform, Mapping) and transform.get("type") == kind:
            values = transform.get(kind)
            return tuple(float(v) for v in values) if isinstance(values, list) else None
    return None


def read_multiscales(attributes: Mapping[str, Any]) -> Multiscales | None:
    """The image's first multiscale (NGFF 0.4 or 0.5), or ``None`` when there is none.

    Examples
    --------
    >>> read_multiscales({"title": "not an image"}) is None
    True
    """
    ome = attributes.get("ome")
    if isinstance(ome, Mapping) and "multiscales" in ome:
        entries, version = ome["multiscales"], str(ome.get("version", "0.5"))
    elif "multiscales" in attributes:
        entries, version = attributes["multiscales"], None
    else:
        return None
    if not isinstance(entries, list) or not entries or not isinstance(entries[0], Mapping):
        return None
    first = entries[0]
    version = version or str(first.get("version", "0.4"))
    axes = tuple(_axis(a, {}) if isinstance(a, Mapping) and "type" in a else
                 Axis(str(a.get("name", a)) if isinstance(a, Mapping) else str(a))
                 for a in first.get("axes", ()))
    datasets = [d for d in first.get("datasets", ()) if isinstance(d, Mapping)]
    return Multiscales(
        version, axes, tuple(str(d.get("path")) for d in datasets),
        tuple(_transform(d, "scale") for d in datasets),
        tuple(_transform(d, "translation") for d in datasets),
        first.get("name"), first.get("type"),
    )


def _numbers(values: Sequence[float] | None) -> str:
    if values is None:
        return "-"
    return "(" + ", ".join(f"{v:g}" for v in values) + ")"


def multiscales_rows(multiscales: Multiscales, arrays: Mapping[str, Any]) -> list[tuple[str, str]]:
    """``.info`` rows of an OME-Zarr image: its NGFF version, axes and, per level, the
    array's shape and chunks and the level's scale and translation.

    Examples
    --------
    >>> import numpy as np
    >>> attrs = multiscales_attributes(resolve_axes("yx", 2), [("0", (1, 1), (0, 0))],
    ...                                version="0.4", method="mean")
    >>> multiscales_rows(read_multiscales(attrs), {"0": np.zeros((4, 6))})
    [('OME-NGFF', '0.4 image, 1 level, axes yx (space, space), method mean'), \
('Level 0', '(4, 6) chunks - scale (1, 1) translation (0, 0)')]
    """
    count = len(multiscales.paths)
    kinds = ", ".join((a.type or "?") + (f" in {a.unit}" if a.unit else "")
                      for a in multiscales.axes)
    summary = (f"{multiscales.version} image, {count} level{'s' if count != 1 else ''}, "
               f"axes {multiscales.axis_names} ({kinds})")
    if multiscales.method:
        summary += f", method {multiscales.method}"
    rows = [("OME-NGFF", summary)]
    for path, scale, translation in zip(multiscales.paths, multiscales.scales,
                                        multiscales.translations):
        array = arrays.get(path)
        shape = str(tuple(array.shape)) if array is not None else "missing"
        chunks = getattr(array, "chunks", None)
        shown = str(tuple(chunks)) if isinstance(chunks, tuple) else "-"
        rows.append((f"Level {path}", f"{shape} chunks {shown} scale {_numbers(scale)} "
                                      f"translation {_numbers(translation)}"))
    return rows
