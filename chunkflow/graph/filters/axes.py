"""Which axes of an image a filter smooths: space, never channels or time unless asked.

A filter's size (a Gaussian's sigma, a box's side) is a length in space. On an image
with a channel axis (``c``) or a time axis (``t``) a scalar size applies to the other
axes only: a Gaussian of sigma 2 on ``czyx`` is sigma ``(0, 2, 2, 2)``, a median of 3
is ``(1, 3, 3, 3)``, so channels never bleed into each other and frames stay apart.
Values given per axis (a sequence, or a mapping by axis name) are taken as given.

The axis names come from the array: its ``dimension_names`` (Zarr v3), its
``_ARRAY_DIMENSIONS`` attribute (xarray's, Zarr v2), else the NGFF axes of the
OME-Zarr image it is a level of. Without names every axis is space (scipy's meaning).

Examples
--------
>>> per_axis_sizes(2.0, ("c", "z", "y", "x"), neutral=0.0)
(0.0, 2.0, 2.0, 2.0)
>>> per_axis_sizes(3, ("t", "y", "x"), neutral=1)
(1, 3, 3)
>>> per_axis_sizes({"y": 5, "x": 3}, ("t", "c", "y", "x"), neutral=1)
(1, 1, 5, 3)
>>> per_axis_sizes((1.0, 0.5, 0.5), ("c", "y", "x"), neutral=0.0)
(1.0, 0.5, 0.5)
>>> per_axis_sizes(2.0, (None, None), neutral=0.0)
(2.0, 2.0)
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, TypeVar

from chunkflow.api.hierarchy import open_group
from chunkflow.core.array import Array
from chunkflow.errors import InvalidArgumentError, NodeNotFoundError
from chunkflow.jobs import quiet_open
from chunkflow.metadata.ngff import read_multiscales

__all__ = ["NOT_SPACE", "axis_names", "per_axis_sizes", "spatial_axes"]

#: Axis names (lower case) a filter leaves alone by default: channels and time.
NOT_SPACE = frozenset({"c", "ch", "channel", "channels", "t", "time"})

#: NGFF axis types a filter leaves alone by default.
_NOT_SPACE_TYPES = frozenset({"channel", "time"})

Size = TypeVar("Size", int, float)


def _named(names: Any, ndim: int) -> tuple[str | None, ...] | None:
    if not isinstance(names, (list, tuple)) or len(names) != ndim:
        return None
    if not any(isinstance(n, str) and n for n in names):
        return None
    return tuple(str(n) if isinstance(n, str) and n else None for n in names)


def _ngff_names(array: Array, location: str | None) -> tuple[str | None, ...] | None:
    """The NGFF axes of the OME-Zarr image ``array`` is a level of (its parent group in
    its own store, else the folder above ``location``)."""
    candidates: list[tuple[Any, str | None, str]] = []
    if array.path:
        parent, _, name = array.path.rstrip("/").rpartition("/")
        candidates.append((array.store, parent or None, name))
    if location:
        parent, _, name = location.rstrip("/").rpartition("/")
        if parent:
            candidates.append((parent, None, name))
    for store, path, name in candidates:
        try:
            with quiet_open():
                group = open_group(store, mode="r", path=path)
        except (FileNotFoundError, NodeNotFoundError, KeyError, ValueError, TypeError):
            continue
        multiscales = read_multiscales(dict(group.attrs))
        if multiscales is not None and name in multiscales.paths and \
                len(multiscales.axes) == array.ndim:
            return tuple(a.name if a.type not in _NOT_SPACE_TYPES else
                         ("c" if a.type == "channel" else "t") for a in multiscales.axes)
    return None


def axis_names(array: Array, location: str | None = None) -> tuple[str | None, ...]:
    """The names of ``array``'s axes (``None`` for an unnamed one): its
    ``dimension_names``, its ``_ARRAY_DIMENSIONS`` attribute, else the NGFF axes of the
    image it is a level of (``location``: where it was opened, to find that image).

    Examples
    --------
    >>> import chunkflow
    >>> axis_names(chunkflow.zeros((2, 4, 4), dimension_names=["c", "y", "x"]))
    ('c', 'y', 'x')
    >>> axis_names(chunkflow.zeros((4, 4)))
    (None, None)
    """
    for names in (array.dimension_names, array.attrs.get("_ARRAY_DIMENSIONS")):
        found = _named(names, array.ndim)
        if found is not None:
            return found
    return _ngff_names(array, location) or (None,) * array.ndim


def _not_space(name: str | None) -> bool:
    return name is not None and name.lower() in NOT_SPACE


def spatial_axes(names: Sequence[str | None]) -> tuple[int, ...]:
    """The axes a filter smooths by default (all but channels and time), as scipy's
    ``axes=`` takes them.

    Examples
    --------
    >>> spatial_axes(("t", "c", "z", "y", "x")), spatial_axes((None, None))
    ((2, 3, 4), (0, 1))
    """
    return tuple(d for d, name in enumerate(names) if not _not_space(name))


def per_axis_sizes(value: Any, names: Sequence[str | None], *, neutral: Size) -> tuple[Size, ...]:
    """A filter's size per axis: a scalar on the space axes (``neutral``, which does
    nothing, on channels and time), a sequence as given, a mapping by axis name
    (``neutral`` on the axes it does not name).

    Raises
    ------
    InvalidArgumentError
        A sequence of another length than the axes, or a name that is not an axis.
    """
    kind = type(neutral)
    if isinstance(value, Mapping):
        unknown = sorted(str(k) for k in value if k not in names)
        if unknown:
            raise InvalidArgumentError(f"sizes name axes {unknown}; the image's axes are "
                                       f"{list(names)}")
        return tuple(kind(value.get(n, neutral)) if n is not None else neutral for n in names)
    if isinstance(value, Sequence) and not isinstance(value, str):
        if len(value) != len(names):
            raise InvalidArgumentError(f"{len(value)} sizes {tuple(value)} for an image of "
                                       f"{len(names)} axes {list(names)}")
        return tuple(kind(v) for v in value)
    return tuple(neutral if _not_space(n) else kind(value) for n in names)
