"""The arguments of :func:`~chunkflow.graph.labels.measure` checked as
``skimage.measure.regionprops_table`` checks them: integer labels, real intensities of
the labels' shape, and a voxel spacing; refused with the builtin class skimage raises
(:class:`TypeError` for a type, :class:`ValueError` for a value), and a way out.

Examples
--------
>>> import numpy as np
>>> normalize_spacing(2, 3).tolist(), normalize_spacing((1, 0.5), 2).tolist()
([2, 2, 2], [1.0, 0.5])
>>> check_label_dtype(np.dtype("f4"), "measure")
Traceback (most recent call last):
...
chunkflow.errors.ArgumentTypeError: measure: labels must be integers ...
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np

from chunkflow.errors import ArgumentTypeError, LabelError, ShapeMismatchError
from chunkflow.graph.labels.labelling import open_source
from chunkflow.graph.labels.plan import Source

__all__ = ["check_intensity_dtype", "check_label_dtype", "normalize_spacing", "open_intensity"]


def check_label_dtype(dtype: np.dtype, what: str) -> None:
    """Labels are integers, as skimage takes them (booleans and floats are refused as
    ambiguous, with :class:`TypeError` as skimage raises)."""
    if dtype.kind in "iu":
        return
    hint = ("label its connected components with chunkflow.label, or measure it as one "
            "object with chunkflow.to_dask(labels).astype('u1')" if dtype.kind == "b" else
            "label a comparison with chunkflow.label first")
    raise ArgumentTypeError(f"{what}: labels must be integers (as skimage.measure.regionprops "
                            f"takes them), got dtype {dtype}; {hint}")


def check_intensity_dtype(dtype: np.dtype, what: str) -> None:
    """Intensities are real numbers (booleans, integers or floats)."""
    if dtype.kind not in "biuf":
        raise ArgumentTypeError(f"{what}: intensity must hold real numbers, got dtype {dtype}; "
                                "pass its real part or its magnitude")


def normalize_spacing(spacing: Any, ndim: int) -> np.ndarray | None:
    """``spacing`` as skimage takes it: one number for every axis, or one per axis,
    finite (``None``: skimage's default, 1 along every axis).

    Raises
    ------
    LabelError
        Neither a number nor ``ndim`` of them, or not finite (:class:`ValueError`, as
        skimage raises).
    ArgumentTypeError
        Not real numbers (:class:`TypeError`, as skimage raises).
    """
    if spacing is None:
        return None
    array = np.array(spacing)
    if array.shape == ():
        array = np.broadcast_to(array, (ndim,))
    elif array.shape != (ndim,):
        raise LabelError(f"measure: spacing must be a number or {ndim} numbers (one per axis), "
                         f"got {spacing!r}")
    if array.dtype.kind not in "iuf":
        raise ArgumentTypeError(f"measure: spacing must be real numbers, got {spacing!r}")
    if not np.isfinite(array).all():
        raise LabelError(f"measure: spacing must be finite, got {spacing!r}")
    return array


def open_intensity(intensity: Any, labels: Source,
                   storage_options: Mapping[str, Any] | None) -> Source:
    """The intensity image as a :class:`Source`, of the labels' shape.

    Raises
    ------
    ShapeMismatchError
        Another shape; one with channels along a last axis is refused with the way
        to measure each channel.
    """
    image = open_source(intensity, storage_options, "measure", check=check_intensity_dtype)
    if image.shape[:labels.ndim] == labels.shape and image.ndim == labels.ndim + 1:
        raise ShapeMismatchError(
            f"measure: intensity has shape {image.shape}, channels along its last axis; "
            "measure one channel at a time (intensity=chunkflow.to_dask(intensity)[..., c])")
    if image.shape != labels.shape:
        raise ShapeMismatchError(f"measure: intensity has shape {image.shape}; the labels "
                                 f"have {labels.shape}")
    return image
