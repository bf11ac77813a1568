"""Downsampling kernels: one level of a pyramid from the level before it, block by block.

Every kernel takes a block of the finer level whose first element lies on a multiple of
the factor along each axis (so windows never straddle two blocks) and returns the
coarser block; only a block at the end of an axis may hold a partial window, which
covers the elements that remain (an axis of ``n`` gives ``ceil(n / f)``).

``mean``
    The mean of each window. Integers are summed in a wider integer type, per block,
    and rounded half to even (``2.5 -> 2``, ``3.5 -> 4``), as ``numpy.round`` does,
    with no floating-point step: the same inputs give the same output whatever the
    blocks. Floats are summed in float64 per block, one axis at a time, and cast back.
``max``
    The largest element of each window (NaN propagates, as ``numpy.maximum``).
``nearest``
    The first element of each window (``level[::f]``): values are kept as they are.
``mode``
    The most frequent value of each window, the smallest on a tie: for label images.
    Values count and sort as ``numpy.unique`` counts and sorts them: NaN equals NaN
    (NaT equals NaT) and comes last.
``gaussian``
    A Gaussian blur (``sigma = f / 3`` per downsampled axis, scikit-image's
    ``pyramid_reduce`` default, truncated at 4 sigma, scipy's ``reflect`` edges), then
    ``[::f]``; integers are rounded half to even and clipped to the dtype's range. The
    blur reaches :func:`gaussian_radius` elements past a window, so blocks are read with
    that halo (see :mod:`chunkflow.graph.pyramid.geometry`).

Examples
--------
>>> import numpy as np
>>> block = np.array([[1, 2, 3], [4, 5, 6]], dtype="u1")
>>> downsample(block, (2, 2), "mean").tolist()  # (1+2+4+5)/4 = 3, (3+6)/2 = 4.5 -> 4
[[3, 4]]
>>> downsample(block, (2, 2), "max").tolist(), downsample(block, (1, 2), "nearest").tolist()
([[5, 6]], [[1, 3], [4, 6]])
>>> downsample(np.array([7, 7, 2, 2, 2, 9], dtype="u4"), (3,), "mode").tolist()
[7, 2]
>>> downsample(np.array([np.nan, 1, np.nan, 2, np.nan, 1]), (3,), "mode").tolist()
[nan, 1.0]
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Callable, Sequence

import numpy as np

from chunkflow.errors import PyramidError

__all__ = [
    "IMAGE_METHODS", "LABEL_METHODS", "METHODS", "WINDOW_METHODS", "check_method",
    "downsample", "gaussian_radius", "gaussian_sigma", "gaussian_smooth",
    "method_work_factor", "round_half_even_divide",
]

METHODS = ("mean", "gaussian", "max", "nearest", "mode")
#: Methods whose output element summarizes a window (NGFF translation shifts by half
#: a window); ``nearest`` and ``gaussian`` sample the window's first element.
WINDOW_METHODS = ("mean", "max", "mode")
#: Methods that keep label values (no value is invented): what a label image allows.
LABEL_METHODS = ("mode", "nearest")
IMAGE_METHODS = METHODS
GAUSSIAN_TRUNCATE = 4.0
# Strips of this many input elements: the temporaries of a strip (sums in a wider type,
# quotients, remainders) stay near a MiB, where reducing a 2048^2 uint16 block at once
# held about 30 MiB of them.
STRIP_ELEMENTS = 2**18


def check_method(method: str, dtype: np.dtype, where: str) -> None:
    """Refuse a method that does not exist or does not apply to ``dtype``.

    Examples
    --------
    >>> check_method("mean", np.dtype("c8"), "array 'x'")
    Traceback (most recent call last):
    ...
    chunkflow.errors.PyramidError: array 'x': method='mean' needs integers, floats or booleans, not complex64
    """
    if method not in METHODS:
        raise PyramidError(f"{where}: method={method!r} is not one of {', '.join(METHODS)}")
    numeric = dtype.kind in "biuf"
    if method in ("mean", "gaussian", "max") and not numeric:
        raise PyramidError(f"{where}: method={method!r} needs integers, floats or booleans, "
                           f"not {dtype}")


def round_half_even_divide(total: np.ndarray, count: np.ndarray | int) -> np.ndarray:
    """``total / count`` rounded half to even, in integers only (``count >= 1``).

    Examples
    --------
    >>> round_half_even_divide(np.array([5, 7, -5, 6]), 2).tolist()
    [2, 4, -2, 3]
    """
    quotient = total // count  # floor division: the remainder is >= 0
    remainder = total - quotient * count  # (np.divmod has no loop for Python integers)
    twice = 2 * remainder
    up = (twice > count) | ((twice == count) & (quotient % 2 == 1))
    quotient += up
    return quotient


def _accumulator(dtype: np.dtype, window: int) -> np.dtype:
    """A type that holds the sum of ``window`` elements of integer ``dtype`` exactly."""
    info = np.iinfo(dtype)
    need = max(abs(int(info.min)), int(info.max)) * window
    for candidate in ("i2", "i4", "i8") if info.min < 0 else ("u2", "u4", "u8"):
        wide = np.iinfo(candidate)
        if np.dtype(candidate).itemsize >= dtype.itemsize and need <= wide.max:
            return np.dtype(candidate)
    return np.dtype(object)  # 64-bit sums that overflow: exact Python integers


def _pad_to_windows(block: np.ndarray, factors: Sequence[int], mode: str) -> np.ndarray:
    pad = [(0, -n % f) for n, f in zip(block.shape, factors)]
    if not any(after for _, after in pad):
        return block
    if mode == "constant":
        return np.pad(block, pad, mode="constant")
    return np.pad(block, pad, mode="edge")


def _window_counts(shape: Sequence[int], factors: Sequence[int]) -> np.ndarray | int:
    """Elements per output window: ``prod(f)`` except in partial windows at the end."""
    if all(n % f == 0 for n, f in zip(shape, factors)):
        return math.prod(factors)
    counts = np.ones((1,) * len(shape), dtype=np.int64)
    for axis, (n, f) in enumerate(zip(shape, factors)):
        per = np.full(-(-n // f), f, dtype=np.int64)
        if n % f:
            per[-1] = n % f
        counts = counts * per.reshape([-1 if a == axis else 1 for a in range(len(shape))])
    return counts


def _axis_sum(block: np.ndarray, axis: int, factor: int, dtype: np.dtype) -> np.ndarray:
    """Sum of ``factor`` neighbours along ``axis`` (already padded), in ``dtype``."""
    def part(j: int) -> np.ndarray:
        return block[(slice(None),) * axis + (slice(j, None, factor),)]

    total = part(0).astype(dtype)
    for j in range(1, factor):
        total += part(j)
    return total


def _mean(block: np.ndarray, factors: Sequence[int]) -> np.ndarray:
    counts = _window_counts(block.shape, factors)
    padded = _pad_to_windows(block, factors, "constant")
    if block.dtype.kind == "f":
        wide = np.dtype("f8") if block.dtype.itemsize < 8 else block.dtype
    else:
        wide = _accumulator(np.dtype("u1") if block.dtype.kind == "b" else block.dtype,
                            math.prod(factors))
    total = padded
    for axis, f in enumerate(factors):
        if f > 1:
            total = _axis_sum(total, axis, f, wide)
    if total is padded:
        return block.copy()
    if block.dtype.kind == "f":
        return (total / counts).astype(block.dtype)
    return round_half_even_divide(total, counts).astype(block.dtype)


def _max(block: np.ndarray, factors: Sequence[int]) -> np.ndarray:
    padded = _pad_to_windows(block, factors, "edge")  # the edge value is in the window
    result = padded
    for axis, f in enumerate(factors):
        if f > 1:
            parts = [result[(slice(None),) * axis + (slice(j, None, f),)] for j in range(f)]
            result = np.maximum.reduce(parts) if f > 2 else np.maximum(*parts)
    return result if result is not padded else block.copy()


def _mode(block: np.ndarray, factors: Sequence[int]) -> np.ndarray:
    padded = _pad_to_windows(block, factors, "edge")
    out_shape = tuple(-(-n // f) for n, f in zip(block.shape, factors))
    offsets = list(itertools.product(*(range(f) for f in factors)))
    views, valid = [], []
    for offset in offsets:
        views.append(padded[tuple(slice(j, None, f) for j, f in zip(offset, factors))])
        # Offsets past the end of a partial window hold padding: never counted.
        ok = np.ones(out_shape, dtype=bool)
        for axis, (j, n, f) in enumerate(zip(offset, block.shape, factors)):
            if n % f and j >= n % f:
                index: list[int | slice] = [slice(None)] * len(out_shape)
                index[axis] = -1
                ok[tuple(index)] = False
        valid.append(ok)
    same, less = _value_order(block.dtype)
    best = views[0].copy()
    best_count = np.full(out_shape, -1, dtype=np.int32)
    for view, ok in zip(views, valid):
        count = np.zeros(out_shape, dtype=np.int32)
        for other, other_ok in zip(views, valid):
            count += same(other, view) & other_ok
        count[~ok] = -1
        better = (count > best_count) | ((count == best_count) & less(view, best))
        best[better] = view[better]
        best_count[better] = count[better]
    return best


def _value_order(dtype: np.dtype) -> tuple[Callable[[np.ndarray, np.ndarray], np.ndarray],
                                            Callable[[np.ndarray, np.ndarray], np.ndarray]]:
    """Equality and order of values as ``numpy.unique`` counts and sorts them: NaN (in
    either part of a complex) equals NaN and comes after every other value, as NaT
    does among times."""
    if dtype.kind not in "fcmM":
        return np.equal, np.less
    missing = np.isnat if dtype.kind in "mM" else np.isnan

    def same(a: np.ndarray, b: np.ndarray) -> np.ndarray:
        return (a == b) | (missing(a) & missing(b))

    def less(a: np.ndarray, b: np.ndarray) -> np.ndarray:
        return (a < b) | (~missing(a) & missing(b))

    return same, less


def _kernel(method: str) -> Callable[[np.ndarray, Sequence[int]], np.ndarray]:
    kernels = {"mean": _mean, "max": _max, "mode": _mode}
    if method not in kernels:
        raise PyramidError(f"downsample: method={method!r} is not one of mean, max, nearest, "
                           "mode")
    return kernels[method]


def downsample(block: np.ndarray, factors: Sequence[int], method: str) -> np.ndarray:
    """One level coarser: ``block`` reduced by ``factors`` with a window ``method``.

    ``block`` starts on a window edge along every axis. ``gaussian`` needs a halo; see
    :func:`gaussian_smooth`. The block is reduced in strips along its first axis of
    about :data:`STRIP_ELEMENTS` elements each (windows never straddle two), so the
    widened sums and counts stay small whatever the block's size.
    """
    factors = tuple(int(f) for f in factors)
    if method == "nearest":
        return block[tuple(slice(None, None, f) for f in factors)].copy()
    kernel = _kernel(method)
    if block.ndim == 0 or block.shape[0] == 0:
        return kernel(block, factors)
    rows = max(1, math.prod(block.shape[1:]))
    step = max(1, STRIP_ELEMENTS // rows // factors[0]) * factors[0]
    if step >= block.shape[0]:
        return kernel(block, factors)
    out = np.empty(tuple(-(-n // f) for n, f in zip(block.shape, factors)), block.dtype)
    for start in range(0, block.shape[0], step):
        part = kernel(block[start:start + step], factors)
        first = start // factors[0]
        out[first:first + part.shape[0]] = part
    return out


def gaussian_sigma(factor: int) -> float:
    """The blur before subsampling by ``factor``: none for 1, else ``factor / 3``.

    Examples
    --------
    >>> gaussian_sigma(1), round(gaussian_sigma(2), 4)
    (0.0, 0.6667)
    """
    return 2.0 * factor / 6.0 if factor > 1 else 0.0


def gaussian_radius(factor: int) -> int:
    """Elements the blur reaches on each side (scipy's kernel radius).

    Examples
    --------
    >>> gaussian_radius(1), gaussian_radius(2), gaussian_radius(4)
    (0, 3, 5)
    """
    return int(GAUSSIAN_TRUNCATE * gaussian_sigma(factor) + 0.5)


def gaussian_smooth(window: np.ndarray, factors: Sequence[int]) -> np.ndarray:
    """The blurred window in float64 (``reflect`` at its edges: exact where the window
    edge is the level's edge, and cut off by the halo elsewhere)."""
    from scipy import ndimage

    sigma = [gaussian_sigma(int(f)) for f in factors]
    return ndimage.gaussian_filter(window.astype(np.float64), sigma, mode="reflect",
                                   truncate=GAUSSIAN_TRUNCATE)


def cast_like(values: np.ndarray, dtype: np.dtype) -> np.ndarray:
    """Float64 values as ``dtype``: integers rounded half to even and clipped.

    A 64-bit type's largest value is no float64 (``float(2**63 - 1)`` is ``2**63``),
    so values from there on are set to it, not cast (which would wrap round).

    Examples
    --------
    >>> top = float(np.iinfo("i8").max)
    >>> cast_like(np.array([top, -1e30, 2.5]), np.dtype("i8")).tolist()
    [9223372036854775807, -9223372036854775808, 2]
    >>> cast_like(np.array([1e30, -3.0]), np.dtype("u8")).tolist()
    [18446744073709551615, 0]
    """
    if dtype.kind not in "iub":
        return values.astype(dtype)
    rounded = np.rint(values)
    if dtype.kind == "b":
        return rounded.astype(dtype)
    info = np.iinfo(dtype)
    high = rounded >= float(info.max)  # float(max) rounds up for 64-bit types
    low = rounded <= float(info.min)  # float(min) is exact: -2**63 or 0
    inside = np.where(high | low, 0, rounded).astype(dtype)
    inside[high] = info.max
    inside[low] = info.min
    return inside


def method_work_factor(method: str, itemsize: int) -> float:
    """Bytes a kernel holds per byte of its input block, beyond the block itself and
    the coarser result (for the memory plan). Window methods work in strips
    (:data:`STRIP_ELEMENTS`); the Gaussian blurs the whole window in float64."""
    if method == "gaussian":
        return 3 * 8.0 / itemsize  # float64 copy, the blur and scipy's line buffers
    return 0.25
