"""Windows with halos, read straight from the store, with boundary modes at the array's edge.

A map-over-chunks task needs its block plus ``depth`` elements on each side. Inside the
array those come from the neighbouring chunks (through the chunk cache, however many
chunks the halo spans); beyond the array's edge they are made up by the boundary mode,
as dask's ``map_overlap`` and scipy.ndimage make them up for the whole array:

==========  ==================  ========================================
boundary    scipy.ndimage mode  beyond the edge
==========  ==================  ========================================
reflect     reflect             d c b a | a b c d | d c b a
nearest     nearest             a a a a | a b c d | d d d d
constant    constant            k k k k | a b c d | k k k k
periodic    wrap                a b c d | a b c d | a b c d
none        (none)              nothing: the window stops at the edge
==========  ==================  ========================================

The boundary names and their numpy (:data:`NUMPY_PAD_MODES`) and scipy
(:data:`SCIPY_MODES`) spellings live here only; :func:`check_boundary` refuses any
other name.

**scipy.ndimage, bit for bit.** A scipy filter over each window (depth at least its
radius, its ``mode`` the boundary's :data:`SCIPY_MODES` spelling) gives exactly the
bits of the filter on the whole array, on every dtype, for every filter that computes
each output element from its footprint alone: gaussian_filter (any order),
gaussian_laplace, sobel, prewitt, laplace, correlate/convolve (1-D and n-D), median,
rank and percentile filters over 2-D and larger arrays, minimum/maximum filters
without NaN. ``reflect``, ``nearest`` and ``periodic`` give it by padding: a separable
filter's later passes see the earlier passes' results in the halo, and those equal
what scipy's own padding of those results holds. ``constant`` cannot (scipy pads every
pass with ``cval``, the window's halo holds the filtered constant, a rounding away:
uint8 results off by one), so when the function pads with the same constant itself
(:func:`window_boundary`: ``mode="constant"`` and ``cval`` equal to
``constant_value``), windows stop at the array's edge as with ``none`` and the function
pads every pass there, as it does on the whole array. ``none`` with any of the
function's own modes but ``wrap`` (``reflect``, ``mirror``, ``nearest``, ``constant``)
is scipy's result the same way.

Some scipy filters are not local, and no halo reproduces their bits: uniform_filter
keeps a running sum along each line (floats differ in the last bits, an inf turns the
rest of scipy's line into NaN), minimum/maximum_filter with ``size`` and 1-D
median/rank filters give NaN results that depend on the line before the footprint.

Examples
--------
>>> import numpy as np
>>> import chunkflow
>>> z = chunkflow.array(np.arange(10), chunks=3)
>>> read_window(z, (slice(0, 3),), (2,), "reflect")[0].tolist()
[1, 0, 0, 1, 2, 3, 4]
>>> read_window(z, (slice(0, 3),), (2,), "periodic")[0].tolist()
[8, 9, 0, 1, 2, 3, 4]
>>> window, halo = read_window(z, (slice(0, 3),), (2,), "none")
>>> window.tolist(), halo
([0, 1, 2, 3, 4], ((0, 2),))
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Mapping, Sequence
from typing import Any, Literal

import numpy as np

from chunkflow.core.array import Array
from chunkflow.engine.pool import serial_io
from chunkflow.errors import InvalidArgumentError, InvalidSelectionError

__all__ = [
    "BOUNDARIES", "NUMPY_PAD_MODES", "SCIPY_MODES", "check_boundary", "check_constant",
    "normalize_depth", "read_window", "window_boundary", "window_bounds",
]

BOUNDARIES = ("reflect", "nearest", "constant", "periodic", "none")
#: ``numpy.pad``'s mode for each boundary that pads a window (``periodic`` reads the
#: other side of the array instead; ``none`` does not pad).
NUMPY_PAD_MODES: dict[str, Literal["symmetric", "edge", "constant"]] = {
    "reflect": "symmetric", "nearest": "edge", "constant": "constant"}
#: scipy.ndimage's mode for each boundary: with a full halo only the array's edges use
#: it, and ``none`` (no halo past the edge) treats the edge as scipy's ``reflect`` does.
SCIPY_MODES = {"reflect": "reflect", "nearest": "nearest", "constant": "constant",
               "periodic": "wrap", "none": "reflect"}


def check_boundary(boundary: str) -> None:
    """Refuse a boundary name that is not one of :data:`BOUNDARIES`.

    Examples
    --------
    >>> check_boundary("wrap")  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    chunkflow.errors.InvalidSelectionError: boundary 'wrap' is not one of reflect, nearest, ...
    """
    if boundary not in BOUNDARIES:
        raise InvalidSelectionError(
            f"boundary {boundary!r} is not one of {', '.join(BOUNDARIES)}"
        )


def check_constant(constant_value: Any, array: Array, what: str = "map_chunks") -> None:
    """Refuse a ``constant_value`` that the windows of ``array`` cannot hold as it is
    (NaN or 0.5 in integers, 300 in uint8): the padding would change it.

    Examples
    --------
    >>> import chunkflow
    >>> check_constant(7, chunkflow.zeros(3, dtype="u1"))
    >>> check_constant(300, chunkflow.zeros(3, dtype="u1"))  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    chunkflow.errors.InvalidArgumentError: map_chunks: constant_value 300 does not fit ...
    """
    try:
        with np.errstate(invalid="ignore", over="ignore"):
            held = np.asarray(constant_value).astype(array.dtype)
        same = held.shape == () and bool(
            held == constant_value or (held != held and constant_value != constant_value))
    except (TypeError, ValueError, OverflowError):
        same = False
    if not same:
        raise InvalidArgumentError(
            f"{what}: constant_value {constant_value!r} does not fit the dtype {array.dtype} "
            f"of source {array.path or array!r}: boundary='constant' pads the windows with "
            f"it; pass a value of that dtype, or let the function pad with its own (for "
            f"scipy.ndimage: mode='constant', cval={constant_value!r})"
        )


Halo = tuple[tuple[int, int], ...]

#: The ``mode`` names by which scipy.ndimage (and scikit-image) pad with ``cval``.
CONSTANT_MODES = ("constant", "grid-constant")


def _call_keywords(func: Callable[..., Any], kwargs: Mapping[str, Any]) -> dict[str, Any]:
    """The keywords ``func(window, **kwargs)`` receives, those of partials included."""
    keywords: dict[str, Any] = {}
    while isinstance(func, functools.partial):
        keywords = {**func.keywords, **keywords}
        func = func.func
    return {**keywords, **kwargs}


def _same_value(a: Any, b: Any) -> bool:
    try:
        return bool(np.array_equal(np.asarray(a, dtype=float), np.asarray(b, dtype=float),
                                   equal_nan=True))
    except (TypeError, ValueError):  # not numbers: never the function's own cval
        return False


def window_boundary(boundary: str, constant_value: Any, func: Callable[..., Any],
                    kwargs: Mapping[str, Any]) -> str:
    """The boundary the windows of ``func`` are read with: ``boundary``, or ``"none"``
    where ``func`` pads the array's edge itself exactly as ``boundary`` asks.

    That is ``boundary="constant"`` with ``func`` given (in ``kwargs`` or a
    ``functools.partial``) ``mode="constant"`` (on every axis) and ``cval`` (scipy's
    default 0) equal to ``constant_value``. A separable filter then pads each of its
    passes with ``cval``, as scipy does on the whole array, instead of filtering a
    padded halo (whose later passes see the filtered constant, off by a rounding).

    Examples
    --------
    >>> from scipy import ndimage
    >>> window_boundary("constant", 0, ndimage.gaussian_filter, {"mode": "constant"})
    'none'
    >>> window_boundary("constant", 2, ndimage.gaussian_filter, {"mode": "constant"})
    'constant'
    >>> window_boundary("reflect", 0, ndimage.gaussian_filter, {"mode": "constant"})
    'reflect'
    """
    if boundary != "constant":
        return boundary
    keywords = _call_keywords(func, kwargs)
    mode = keywords.get("mode")
    modes = [mode] if isinstance(mode, str) else mode
    if (not isinstance(modes, Sequence) or not modes
            or not all(isinstance(m, str) and m in CONSTANT_MODES for m in modes)):
        return boundary
    return "none" if _same_value(keywords.get("cval", 0.0), constant_value) else boundary


def normalize_depth(depth: int | Sequence[int] | Mapping[int, int], ndim: int) -> tuple[int, ...]:
    """``depth`` (an int, a per-axis tuple or a ``{axis: depth}`` dict) per axis.

    Examples
    --------
    >>> normalize_depth(2, 3), normalize_depth({1: 4}, 3), normalize_depth((1, 0), 2)
    ((2, 2, 2), (0, 4, 0), (1, 0))
    """
    if isinstance(depth, Mapping):
        per_axis = [0] * ndim
        for axis, value in depth.items():
            if not isinstance(axis, int) or not -ndim <= axis < ndim:
                raise InvalidSelectionError(f"depth: axis {axis!r} is not an axis of {ndim}-D data")
            per_axis[axis % ndim] = value
    elif isinstance(depth, Sequence) and not isinstance(depth, str):
        if len(depth) != ndim:
            raise InvalidSelectionError(
                f"depth {tuple(depth)!r} has {len(depth)} entries for {ndim}-D data"
            )
        per_axis = list(depth)
    else:
        per_axis = [depth] * ndim
    for axis, value in enumerate(per_axis):
        if not isinstance(value, (int, np.integer)) or isinstance(value, bool) or value < 0:
            raise InvalidSelectionError(
                f"depth along axis {axis} must be a whole number >= 0, got {value!r}"
            )
    return tuple(int(v) for v in per_axis)


def window_bounds(
    region: Sequence[slice], depth: Sequence[int], shape: Sequence[int], boundary: str
) -> tuple[tuple[int, int], ...]:
    """Where the window of ``region`` begins and ends, in array coordinates.

    With ``boundary="none"`` the window stops at the array's edge; otherwise it may
    reach beyond it (negative, or past the end), where the boundary mode fills it.

    Examples
    --------
    >>> window_bounds((slice(0, 4),), (3,), (10,), "reflect")
    ((-3, 7),)
    >>> window_bounds((slice(0, 4),), (3,), (10,), "none")
    ((0, 7),)
    """
    bounds = []
    for part, d, size in zip(region, depth, shape):
        lo, hi = part.start - d, part.stop + d
        if boundary == "none":
            lo, hi = max(lo, 0), min(hi, size)
        bounds.append((lo, hi))
    return tuple(bounds)


def _wrapped_read(array: Array, bounds: Sequence[tuple[int, int]]) -> np.ndarray:
    """The periodic window: indices taken modulo the shape, one orthogonal read."""
    selection: list[Any] = []
    for (lo, hi), size in zip(bounds, array.shape):
        if 0 <= lo and hi <= size:
            selection.append(slice(lo, hi))
        else:
            selection.append(np.arange(lo, hi) % size)
    return np.asarray(array.get_orthogonal_selection(tuple(selection)))


def read_window(
    array: Array,
    region: Sequence[slice],
    depth: Sequence[int],
    boundary: str,
    constant_value: Any = 0,
) -> tuple[np.ndarray, Halo]:
    """``region`` of ``array`` with ``depth`` more on each side, and the halo it got.

    The part inside the array is read in one selection, each chunk decoded straight
    into the window (a padded one too: its margins are then filled in place). The
    returned halo says how
    many elements before and after the region each axis of the window holds: ``depth``,
    except at the array's edge with ``boundary="none"``.
    """
    check_boundary(boundary)
    bounds = window_bounds(region, depth, array.shape, boundary)
    halo = tuple((part.start - lo, hi - part.stop) for part, (lo, hi) in zip(region, bounds))
    inside = tuple(slice(max(lo, 0), min(hi, size)) for (lo, hi), size in zip(bounds, array.shape))
    pads = tuple((s.start - lo, hi - s.stop) for s, (lo, hi) in zip(inside, bounds))
    with serial_io():  # a task's thread; dask runs the tasks in parallel
        if not any(before or after for before, after in pads):
            return np.asarray(array.get_basic_selection(inside)), halo
        if boundary == "periodic":
            return _wrapped_read(array, bounds), halo
        lengths = [part.stop - part.start for part in inside]
        if min(lengths, default=1) > 0 and (boundary != "reflect" or all(
                max(p) <= n for p, n in zip(pads, lengths))):
            # Read straight into the padded window and fill its margins in place: no
            # second window-sized array (np.pad copies), no copying time.
            window = np.empty(tuple(hi - lo for lo, hi in bounds), dtype=array.dtype)
            core = tuple(slice(before, n - after)
                         for (before, after), n in zip(pads, window.shape))
            array.get_basic_selection(inside, out=window[core])
            return _fill_margins(window, pads, boundary, constant_value), halo
        data = np.asarray(array.get_basic_selection(inside))
    # A reflection wider than the data (numpy reflects it again and again).
    return np.pad(data, pads, mode=NUMPY_PAD_MODES[boundary]), halo


def _fill_margins(window: np.ndarray, pads: Sequence[tuple[int, int]], boundary: str,
                  constant_value: Any) -> np.ndarray:
    """Fill the margins of ``window`` around its data by ``boundary``, as np.pad would.

    Axis by axis over the whole extent of the other axes (margins filled before
    included), so corners come out as np.pad makes them. ``reflect`` needs each margin
    to be no wider than the data along its axis.

    Examples
    --------
    >>> w = np.array([0, 0, 1, 2, 3, 0])
    >>> _fill_margins(w.copy(), [(2, 1)], "reflect", 0).tolist()
    [2, 1, 1, 2, 3, 3]
    >>> _fill_margins(w.copy(), [(2, 1)], "nearest", 0).tolist()
    [1, 1, 1, 2, 3, 3]
    """
    for axis, (before, after) in enumerate(pads):
        moved = np.moveaxis(window, axis, 0)  # a view: writes land in window
        n = moved.shape[0]
        for lo, hi, source in ((0, before, before), (n - after, n, n - after - 1)):
            if hi <= lo:
                continue
            if boundary == "constant":
                moved[lo:hi] = constant_value
            elif boundary == "nearest":
                moved[lo:hi] = moved[source]
            elif lo == 0:  # reflect: d c b a | a b c d
                moved[lo:hi] = moved[before:2 * before][::-1]
            else:
                moved[lo:hi] = moved[n - 2 * after:n - after][::-1]
    return window
