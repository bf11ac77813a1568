"""Where a pyramid's pixels stand: its axes (names, types, units), and the scale and
translation of level 0, per axis.

An image takes them from ``axes=``, ``units=``, ``scale=`` and ``translation=`` (scale 1
and translation 0 by default). A label image joins an image: whatever it is not given it
inherits from that image's level 0, axis by axis by name, so that the labels overlay the
image in a viewer (napari places each layer by its own scale and translation). A label
image may lack the image's channel (and time) axis: ``labels`` of ``zyx`` under a
``czyx`` image take the image's ``z``, ``y`` and ``x``.

Examples
--------
>>> from chunkflow.metadata.ngff import resolve_axes, Multiscales
>>> image = Multiscales("0.4", resolve_axes("czyx", 4, units={"x": "micrometer"}), ("0",),
...                     ((1.0, 2.0, 0.5, 0.5),), ((0.0, 10.0, 0.0, 0.0),))
>>> frame = resolve_frame(None, None, None, None, 3, None, image)
>>> "".join(a.name for a in frame.axes), frame.scale, frame.translation
('zyx', (2.0, 0.5, 0.5), (10.0, 0.0, 0.0))
>>> frame.axes[2].unit
'micrometer'
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from chunkflow.api.hierarchy import open_group
from chunkflow.errors import ContainsArrayError, NodeNotFoundError, PyramidError
from chunkflow.jobs import quiet_open
from chunkflow.metadata.ngff import (
    Axis,
    Multiscales,
    check_axes,
    read_multiscales,
    resolve_axes,
)

if TYPE_CHECKING:
    from chunkflow.metadata.ngff import AxesLike
    from chunkflow.storage import StoreLike

__all__ = ["Frame", "PerAxis", "image_multiscales", "per_axis_values", "resolve_frame"]

#: ``scale=`` or ``translation=``: one number per axis, or a mapping by axis name.
PerAxis = Sequence[float] | Mapping[str, float] | None


@dataclass(frozen=True)
class Frame:
    """The axes of a pyramid and the scale and translation of its level 0."""

    axes: tuple[Axis, ...]
    scale: tuple[float, ...]
    translation: tuple[float, ...]


def image_multiscales(out: StoreLike, storage_options: Mapping[str, Any] | None
                      ) -> Multiscales | None:
    """The multiscales of the image at ``out`` (the image a label image joins), or
    ``None`` when there is none yet."""
    try:
        with quiet_open():
            group = open_group(out, mode="r", storage_options=dict(storage_options or {}) or None)
    except (FileNotFoundError, NodeNotFoundError, KeyError, ContainsArrayError):
        return None  # nothing to inherit (plan_output says what is wrong there, if anything)
    return read_multiscales(dict(group.attrs))


def per_axis_values(what: str, values: PerAxis, names: Sequence[str],
                    inherited: Mapping[str, float], default: float) -> tuple[float, ...]:
    """``values`` (a sequence or a mapping by name) as one finite number per axis;
    axes it leaves out take ``inherited``, else ``default``.

    Examples
    --------
    >>> per_axis_values("scale", {"x": 0.5}, "yx", {"y": 2.0}, 1.0)
    (2.0, 0.5)
    >>> per_axis_values("scale", (1, 2, 3), "yx", {}, 1.0)
    Traceback (most recent call last):
    ...
    chunkflow.errors.PyramidError: pyramid: scale=(1, 2, 3) gives 3 values for 2 axes ('yx')
    """
    joined = "".join(names)
    if values is None:
        chosen: list[Any] = [inherited.get(n, default) for n in names]
    elif isinstance(values, Mapping):
        unknown = sorted(set(values) - set(names))
        if unknown:
            raise PyramidError(f"pyramid: {what} names axes {unknown} that the image (axes "
                               f"{joined!r}) does not have")
        chosen = [values.get(n, inherited.get(n, default)) for n in names]
    elif isinstance(values, (str, bytes)) or not isinstance(values, Sequence):
        raise PyramidError(f"pyramid: {what} must be a sequence of numbers or a mapping from "
                           f"axis names to numbers, got {values!r}")
    else:
        chosen = list(values)
        if len(chosen) != len(names):
            raise PyramidError(f"pyramid: {what}={values!r} gives {len(chosen)} values for "
                               f"{len(names)} axes ({joined!r})")
    numbers = []
    for name, value in zip(names, chosen):
        try:
            number = float(value)
        except (TypeError, ValueError):
            number = math.nan
        if not math.isfinite(number) or (what == "scale" and not number > 0):
            kind = "a positive number" if what == "scale" else "a finite number"
            raise PyramidError(f"pyramid: the {what} of axis {name!r} must be {kind}, "
                               f"got {value!r}")
        numbers.append(number)
    return tuple(numbers)


def _check_units(units: Mapping[str, str] | None, names: Sequence[str]) -> None:
    unknown = sorted(set(units or {}) - set(names))
    if unknown:
        raise PyramidError(f"pyramid: units names axes {unknown} that the image (axes "
                           f"{''.join(names)!r}) does not have")


def _inherited_names(image: Multiscales, ndim: int,
                     dimension_names: Sequence[str | None] | None) -> list[str] | None:
    """The image's axes a label image of ``ndim`` dimensions takes: its own NGFF
    dimension names when it has them, else the image's, less its channel axis (then
    its time axis) when the labels have fewer dimensions."""
    names = [a.name for a in image.axes]
    if dimension_names and all(isinstance(n, str) and n in names for n in dimension_names):
        return [str(n) for n in dimension_names]
    kept = list(image.axes)
    for kind in ("channel", "time"):
        if len(kept) > ndim:
            kept = [a for a in kept if a.type != kind]
    return [a.name for a in kept] if len(kept) == ndim else None


def _level0(image: Multiscales | None, which: str) -> dict[str, float]:
    if image is None or not image.paths:
        return {}
    values = (image.scales if which == "scale" else image.translations)[0]
    if values is None or len(values) != len(image.axes):
        return {}
    return {a.name: float(v) for a, v in zip(image.axes, values)}


def resolve_frame(axes: AxesLike, units: Mapping[str, str] | None, scale: PerAxis,
                  translation: PerAxis, ndim: int,
                  dimension_names: Sequence[str | None] | None,
                  image: Multiscales | None = None) -> Frame:
    """The checked axes, level-0 scale and translation of a pyramid; ``image``: the
    multiscales of the image a label image joins (what it inherits)."""
    inherited_axes = {a.name: a for a in image.axes} if image is not None else {}
    if axes is None and image is not None:
        names = _inherited_names(image, ndim, dimension_names)
        if names is not None:
            axes = [_document(inherited_axes.get(n), n) for n in names]
    if axes is not None and not isinstance(axes, str) and inherited_axes:
        axes = [_document(inherited_axes.get(e), e) if isinstance(e, str) else e for e in axes]
    elif isinstance(axes, str) and inherited_axes:
        axes = [_document(inherited_axes.get(n), n) for n in axes]
    resolved = resolve_axes(axes, ndim, dimension_names, units)
    names = [a.name for a in resolved]
    _check_units(units, names)
    if units:  # the user's units win over the ones an axis mapping (or the image) gave
        resolved = tuple(Axis(a.name, a.type, units.get(a.name, a.unit)) for a in resolved)
        check_axes(resolved)
    return Frame(resolved, per_axis_values("scale", scale, names, _level0(image, "scale"), 1.0),
                 per_axis_values("translation", translation, names,
                                 _level0(image, "translation"), 0.0))


def _document(axis: Axis | None, name: str) -> str | dict[str, Any]:
    """An axis as ``axes=`` takes it: the image's axis of that name, else the name."""
    return name if axis is None else axis.document()
