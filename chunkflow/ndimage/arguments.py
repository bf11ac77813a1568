"""The arguments every function of :mod:`chunkflow.ndimage` shares.

scipy.ndimage's own arguments keep their names and meanings; they are checked by
scipy itself, on a small array of the input's dtype (:func:`probe`), before any job
starts, so a bad one raises scipy's error and creates nothing. chunkflow's job
keywords (:data:`JOB_KEYWORDS`) come after them, by name only:

``out``
    Where an image result goes: a path, URL or store (a new array like the input,
    refused if something is there unless ``overwrite=True``), or an open
    :class:`chunkflow.Array` of the input's shape, written whole. Default: an in-memory
    chunkflow array, returned (``numpy.asarray`` or ``[...]`` reads it).
``overwrite``, ``resume``, ``scheduler``, ``progress``, ``max_memory``
    As :func:`chunkflow.map_chunks` takes them.
``storage_options``
    fsspec options for an input or ``out`` given as a URL.
``compute``
    ``False``: return the lazy dask object instead of running (a dask array of the
    result when ``out`` is ``None``).
``blocks``
    The blocks of a job over windows, as :func:`chunkflow.map_chunks` takes them.
``temp``
    Filters that run one job per axis (``uniform_filter``, ``minimum_filter`` and
    ``maximum_filter`` over a box on floats) keep the passes between ``out`` and an
    intermediate array here (a path, URL or store; default: in memory).

scipy's ``output`` is a dtype (the result's) or an array: a numpy array is filled with
the result and returned, as scipy fills it; a chunkflow Array is written as ``out``.

Examples
--------
>>> job_options("gaussian_filter", {"scheduler": "sync"}).scheduler
'sync'
>>> job_options("gaussian_filter", {"chunks": 4})  # doctest: +ELLIPSIS
Traceback (most recent call last):
...
chunkflow.errors.ArgumentTypeError: gaussian_filter: unexpected keyword 'chunks' (it is not ...
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, fields
from typing import Any

import numpy as np

from chunkflow.core.array import Array
from chunkflow.errors import ArgumentTypeError, InvalidArgumentError, ShapeMismatchError
from chunkflow.graph.filters import JobOptions, open_image

__all__ = [
    "JOB_KEYWORDS",
    "Output",
    "axes_of",
    "box_reach",
    "check_origin",
    "depth_on",
    "finish",
    "job_options",
    "modes_on",
    "open_input",
    "per_axis",
    "probe",
    "reach",
    "resolve_output",
]

JOB_KEYWORDS = tuple(sorted(f.name for f in fields(JobOptions)))


def job_options(what: str, job: Mapping[str, Any]) -> JobOptions:
    """``job`` (a function's keywords past scipy's) as :class:`JobOptions`; a keyword
    that is neither scipy's nor chunkflow's is refused by name."""
    for name in job:
        if name not in JOB_KEYWORDS:
            raise ArgumentTypeError(
                f"{what}: unexpected keyword {name!r} (it is not scipy.ndimage.{what}'s, nor "
                f"one of chunkflow's: {', '.join(JOB_KEYWORDS)})")
    return JobOptions(**job)


@dataclass(frozen=True)
class Output:
    """scipy's ``output`` resolved: the dtype the windows compute (``dtype``), a numpy
    array to fill at the end (``fill``), and the job options (``out`` set from a
    chunkflow Array given as ``output``)."""

    dtype: np.dtype | None
    fill: np.ndarray | None
    job: JobOptions


def resolve_output(what: str, output: Any, shape: tuple[int, ...], job: JobOptions) -> Output:
    """scipy's ``output`` argument (None, a dtype, a numpy or chunkflow array)."""
    if output is None:
        return Output(None, None, job)
    if isinstance(output, Array):
        if job.out is not None:
            raise InvalidArgumentError(f"{what}: output= is a chunkflow.Array and out= is "
                                       "given too; pass one of them")
        return Output(output.dtype, None, JobOptions(**{**_as_dict(job), "out": output}))
    if isinstance(output, np.ndarray):
        if output.shape != shape:
            raise ShapeMismatchError(f"{what}: output shape {output.shape} is not the input's "
                                     f"{shape} (scipy: 'output shape not correct')")
        if job.out is not None or not job.compute:
            raise InvalidArgumentError(f"{what}: output= is a numpy array (filled in memory); "
                                       "out= and compute=False do not apply to it")
        return Output(output.dtype, output, job)
    return Output(np.dtype(output), None, job)


def _as_dict(job: JobOptions) -> dict[str, Any]:
    return {f.name: getattr(job, f.name) for f in fields(JobOptions)}


def probe(func: Callable[..., Any], dtype: np.dtype, ndim: int, **kwargs: Any) -> np.dtype:
    """Call ``func`` (scipy's) on a small array of ``dtype``: scipy's own refusal of its
    arguments, raised here before any job, or the dtype of its result.

    Examples
    --------
    >>> from scipy import ndimage
    >>> probe(ndimage.gaussian_filter, np.dtype("u1"), 2, sigma=1.0, output=np.dtype("f4"))
    dtype('float32')
    """
    result = func(np.zeros((3,) * ndim, dtype), **kwargs)
    return np.asarray(result).dtype


def finish(result: Any, fill: np.ndarray | None) -> Any:
    """The value returned: ``result``, or the numpy ``output`` array filled with it."""
    if fill is None:
        return result
    fill[...] = result[...]
    return fill


def axes_of(axes: Any, ndim: int) -> tuple[int, ...]:
    """scipy's ``axes`` (None, an int or a sequence) as non-negative axes, in order.

    Examples
    --------
    >>> axes_of(None, 3), axes_of(-1, 3), axes_of((2, 0), 3)
    ((0, 1, 2), (2,), (2, 0))
    """
    if axes is None:
        return tuple(range(ndim))
    listed = [axes] if isinstance(axes, (int, np.integer)) else list(axes)
    return tuple(int(a) % ndim for a in listed)


def per_axis(value: Any, n: int) -> list[Any]:
    """A scalar repeated ``n`` times, or a sequence as a list (scipy's
    ``_normalize_sequence``: strings are scalars).

    Examples
    --------
    >>> per_axis(2, 3), per_axis("wrap", 2), per_axis((1, 2), 2)
    ([2, 2, 2], ['wrap', 'wrap'], [1, 2])
    """
    if isinstance(value, str) or not isinstance(value, Sequence | np.ndarray):
        return [value] * n
    return list(value)


def reach(sizes: Sequence[int], origins: Sequence[int]) -> list[int]:
    """Elements a footprint of ``sizes`` shifted by ``origins`` reads on either side (one
    more for even sizes: a convolution flips the origin).

    Examples
    --------
    >>> reach([3, 4, 1], [0, 1, 0])
    [1, 4, 0]
    """
    return [s // 2 + abs(int(o)) + (1 - s % 2) if s > 1 else abs(int(o))
            for s, o in zip(sizes, origins)]


def box_reach(shape: Sequence[int], origin: Any) -> int:
    """One reach enough on every axis of a footprint of ``shape`` and ``origin`` (a
    scalar or per axis), whichever axis scipy pairs a size or an origin with.

    Examples
    --------
    >>> box_reach((3, 5), (0, -1)), box_reach((), 0)
    (3, 0)
    """
    origins = [abs(int(o)) for o in per_axis(origin, max(len(shape), 1))]
    return reach([max(shape, default=1)], [max(origins, default=0)])[0]


def check_origin(what: str, shape: Sequence[int], origin: Any) -> None:
    """Refuse an ``origin`` that moves a structure of ``shape`` off its own centre
    element, by scipy's rule for its filters (``-(n // 2) <= origin <= (n - 1) // 2``
    per axis). scipy's binary_erosion does not check it and reads outside its buffers
    (a crash; scipy issue 22533), so the binary operations check it first.

    Examples
    --------
    >>> check_origin("binary_erosion", (3, 2), (1, -1))
    >>> check_origin("binary_erosion", (1, 2), (0, -2))  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    chunkflow.errors.InvalidArgumentError: binary_erosion: origin=(0, -2) is invalid on axis 1 ...to 0
    """
    origins = per_axis(origin, len(shape))
    if len(origins) != len(shape):
        return  # scipy's own refusal (a sequence of the wrong length) says it
    for axis, (size, shift) in enumerate(zip(shape, origins)):
        low, high = -(int(size) // 2), (int(size) - 1) // 2
        if not low <= int(shift) <= high:
            raise InvalidArgumentError(
                f"{what}: origin={origin!r} is invalid on axis {axis} of the structure of "
                f"shape {tuple(shape)}: expected {low} to {high}")


def depth_on(ndim: int, axes: Sequence[int], per: Sequence[int]) -> tuple[int, ...]:
    """Depth per axis of the array: ``per[i]`` on ``axes[i]``, 0 elsewhere.

    Examples
    --------
    >>> depth_on(3, (2, 0), [4, 1])
    (1, 0, 4)
    """
    depth = [0] * ndim
    for axis, d in zip(axes, per):
        depth[axis] = max(depth[axis], int(d))
    return tuple(depth)


def modes_on(ndim: int, axes: Sequence[int], modes: Sequence[str],
             depth: Sequence[int]) -> list[str]:
    """The modes of the axes that read a halo (the others need no boundary)."""
    by_axis = {axis: mode for axis, mode in zip(axes, modes)}
    return [by_axis.get(axis, "reflect") for axis in range(ndim) if depth[axis] > 0]


def open_input(what: str, input: Any, job: JobOptions) -> Array:
    """The input as an open array (see :func:`chunkflow.graph.filters.open_image`)."""
    return open_image(input, job.storage_options, what)
