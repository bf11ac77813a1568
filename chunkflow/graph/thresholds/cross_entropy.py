"""Li's iterative minimum cross entropy threshold (``skimage.filters.threshold_li``)
over an array larger than memory.

scikit-image removes NaN, returns the value of a constant image, drops infinities,
shifts the image by its minimum (in the image's dtype: signed integers wrap, as
scikit-image's in-place subtraction does), then iterates ``t = (mb - mf) / (log mb -
log mf)`` on the means of the values below and above ``t``.

- Integers: scikit-image iterates on the histogram of the shifted image; the exact
  global histogram (:mod:`~chunkflow.graph.thresholds.histograms`) makes every step
  scikit-image's, bit for bit (the first mean is exact while the image's sum is below
  2**53).
- Floats: scikit-image takes each mean with ``numpy.mean`` of the values on one side,
  in C order: a pairwise sum in the image's dtype (float32 for float16, through
  numpy's buffers of 8192 values for float16 and a byte order not the machine's)
  divided by the count. Each step here is two passes over the image in blocks that
  are C-order runs: one counts the values on each side in each block, the next sums
  each block's part of numpy's tree with numpy itself and hands over the shared
  leaves (:mod:`~chunkflow.graph.thresholds.pairwise`), so each mean, and the
  threshold, is scikit-image's bit for bit (with numpy's default buffer size). The
  default tolerance (half the smallest gap between distinct values) gathers the
  distinct values in a tree: an image with more distinct values than a task's budget
  holds is refused; pass ``tolerance=``.
- An iteration that goes round in a cycle never ends, in scikit-image as here (a
  tolerance below the spacing of the image's values: float16 around 6000 moves in
  steps of 4). It is refused as soon as a threshold comes back, naming the tolerance
  that ends it.

Examples
--------
>>> import numpy as np
>>> import chunkflow
>>> from skimage.filters import threshold_li
>>> data = np.array([[1, 2, 3], [50, 60, 255]], dtype="u1")
>>> x = open_image(chunkflow.array(data, chunks=(1, 2)), "threshold_li")
>>> bool(li(x) == threshold_li(data))
True
"""

from __future__ import annotations

from collections.abc import Callable
from functools import partial
from typing import Any

import dask
import dask.array as da
import numpy as np

from chunkflow.errors import ArgumentTypeError, InvalidArgumentError, MemoryPlanError
from chunkflow.graph.memory import task_max_memory
from chunkflow.graph.thresholds.histograms import (
    ThresholdInput,
    extrema,
    image_histogram,
    open_image,
)
from chunkflow.graph.thresholds.pairwise import (
    LEAF,
    assemble,
    block_parts,
    buffered,
    c_order_blocks,
    numpy_mean,
)

__all__ = ["li", "open_image"]

Callback = Callable[[Any], Any] | None


def _first_kept(block: np.ndarray, start: tuple[int, ...], shape: tuple[int, ...]
                ) -> tuple[int, Any] | None:
    """(flat C-order index in the whole array, value) of the block's first non-NaN
    value (C order inside a block is C order of the array, block by block)."""
    kept = np.flatnonzero(~np.isnan(block.ravel()))
    if kept.size == 0:
        return None
    local = np.unravel_index(kept[0], block.shape)
    index = np.ravel_multi_index(tuple(int(i) + s for i, s in zip(local, start)), shape)
    return int(index), block.ravel()[kept[0]]


def _first_non_nan(image: ThresholdInput) -> Any:
    """The first value that is not NaN, in C order (its bits: -0.0 or 0.0)."""
    x = image.x
    starts = [np.cumsum((0,) + c[:-1]) for c in x.chunks]
    blocks = x.to_delayed()
    found = [dask.delayed(_first_kept)(blocks[index],
                                       tuple(int(starts[a][i]) for a, i in enumerate(index)),
                                       x.shape)
             for index in np.ndindex(*x.numblocks)]
    firsts = [f for f in image.run(*found) if f is not None]
    return np.asarray(min(firsts, key=lambda f: f[0])[1], x.dtype)[()]


def _sides(block: np.ndarray, threshold: Any) -> tuple[np.ndarray, ...]:
    """The block's values (C order) that scikit-image kept: all of them (``threshold``
    None), or those above ``threshold`` and the others."""
    # NaN marks what scikit-image dropped (NaN, infinities) before shifting; an
    # infinity here comes from the shift's own overflow, and scikit-image keeps it.
    values = block.ravel()
    values = values[~np.isnan(values)]
    if threshold is None:
        return (values,)
    above = values > threshold
    return values[above], values[~above]


def _side_counts(block: np.ndarray, threshold: Any) -> np.ndarray:
    return np.array([side.size for side in _sides(block, threshold)], dtype=np.int64)


def _side_parts(block: np.ndarray, threshold: Any, starts: tuple[int, ...],
                totals: tuple[int, ...], cast: bool) -> list[Any]:
    return [block_parts(side, start, total, cast)
            for side, start, total in zip(_sides(block, threshold), starts, totals)]


def _run_values(image: ThresholdInput) -> int:
    """Values in a C-order run: a task holds about 16 times its bytes (the run, its
    NaN mask, the two sides and their casts), at most 2**24 (runs are tasks)."""
    per_task = task_max_memory(image.max_memory, image.scheduler)
    return max(LEAF, min(2**24, per_task // (16 * image.x.dtype.itemsize)))


def _run_blocks(runs: da.Array) -> list[Any]:
    """The blocks of ``runs`` in C order (they are C-order runs of the image), as
    delayed values. Each step of the iteration reads them again; their graph is
    optimized once, here, not at every step."""
    return list(runs.to_delayed().ravel())


def _numpy_means(image: ThresholdInput, blocks: list[Any], threshold: Any) -> list[Any]:
    """numpy's means, bit for bit, of the values above ``threshold`` and of the others
    (of all values when ``threshold`` is None), as scikit-image takes them from the
    whole image (``blocks``: C-order runs, see :func:`_run_blocks`): a pass counts each
    block's values on each side, a second hands over its parts of numpy's pairwise
    sums (:mod:`~chunkflow.graph.thresholds.pairwise`)."""
    dtype, cast = image.x.dtype, buffered(image.x.dtype)
    counts = np.array(image.run(*[dask.delayed(_side_counts)(b, threshold) for b in blocks]))
    totals = counts.sum(axis=0)
    starts = np.cumsum(counts, axis=0) - counts
    parts = image.run(*[dask.delayed(_side_parts)(
        b, threshold, tuple(int(s) for s in starts[i]), tuple(int(t) for t in totals), cast)
        for i, b in enumerate(blocks)])
    means = []
    for side, total in enumerate(int(t) for t in totals):
        with np.errstate(over="ignore", invalid="ignore"):
            summed = assemble([p[side] for p in parts], total, dtype, cast)
        means.append(numpy_mean(summed, total, dtype))
    return means


def _unique_finite(block: np.ndarray, axis: Any = None, keepdims: bool = False) -> np.ndarray:
    return np.unique(block[~np.isnan(block)])


def _union(parts: Any, axis: Any = None, keepdims: bool = False, *, cap: int) -> np.ndarray:
    arrays = [parts] if isinstance(parts, np.ndarray) else list(_flatten(parts))
    union = np.unique(np.concatenate(arrays))
    if union.size > cap:
        raise MemoryPlanError(
            f"threshold_li: the image has more than {cap} distinct values, more than a "
            "task's budget holds to find the default tolerance (half the smallest gap "
            "between them); pass tolerance=")
    return union


def _flatten(parts: Any) -> Any:
    for part in parts:
        if isinstance(part, list):
            yield from _flatten(part)
        else:
            yield part


def _min_gap(shifted: da.Array, image: ThresholdInput) -> Any:
    cap = task_max_memory(image.max_memory, image.scheduler) // (4 * shifted.dtype.itemsize)
    union = partial(_union, cap=cap)
    lazy = da.reduction(shifted, _unique_finite, union, combine=union, axis=None,
                        concatenate=False, dtype=shifted.dtype, split_every=image.every,
                        meta=np.empty(0, shifted.dtype))
    (values,) = image.run(lazy)
    return np.min(np.diff(values))


def _is_scalar(value: Any) -> bool:
    return bool(np.isscalar(value))  # (a bool: numpy's TypeGuard narrows to str and bytes)


def _start(initial_guess: Any, low: Any, high_shifted: Any, dtype: np.dtype) -> Any:
    """A numeric initial guess moved into the shifted image's range, as scikit-image."""
    if callable(initial_guess):
        raise ArgumentTypeError("threshold_li: initial_guess as a function needs the whole "
                                "image in memory; pass its value (a number) instead")
    if not _is_scalar(initial_guess):
        raise ArgumentTypeError("Incorrect type for `initial_guess`; should be a floating "
                                "point value (a function is not supported here)")
    start = initial_guess - float(low)
    if not 0 < start < high_shifted:
        raise InvalidArgumentError(
            f"The initial guess for threshold_li must be within the range of the image. "
            f"Got {initial_guess!r} for image min {low} and max {high_shifted + low}.")
    return dtype.type(start)


def _refuse_cycle(visited: set[Any], t_curr: Any, t_next: Any, tolerance: Any,
                  low: Any) -> None:
    """Refuse an iteration that has entered a cycle: it would never end.

    Each step's threshold is a function of the last one alone, so a threshold met
    again repeats the steps since, each of which moved by more than the tolerance:
    the loop would go round forever (scikit-image's does). Floats have finitely many
    values, so every iteration that never ends comes here. ``visited`` holds the
    thresholds stepped from so far (shifted by ``low``, the image's minimum).
    """
    if t_next not in visited:
        visited.add(t_next)
        return
    with np.errstate(over="ignore", invalid="ignore"):
        step = abs(t_next - t_curr)
        around = sorted({float(t_curr + low), float(t_next + low)})
    raise InvalidArgumentError(
        f"threshold_li: the iterations go round in a cycle (through {around[0]!r} and "
        f"{around[-1]!r}, steps of {float(step)!r}) and never come within "
        f"tolerance={float(tolerance)!r} (scikit-image's threshold_li loops forever on "
        f"this image); expected a tolerance of at least the step, such as "
        f"tolerance={float(step)!r}")


def _integer_li(image: ThresholdInput, low: Any, tolerance: Any, initial_guess: Any,
                callback: Callback) -> Any:
    x = image.x
    shifted = x - low  # in the dtype, wrapping as scikit-image's `image -= image_min`
    found = extrema(shifted, image)
    counts, centers = image_histogram(shifted, 256, found, image)
    tolerance = tolerance or 0.5
    if initial_guess is None:
        total = int(np.dot(counts.astype(object), centers.astype(object)))
        t_next = np.float64(total) / int(counts.sum())
    else:
        t_next = _start(initial_guess, low, found.high, x.dtype)
    t_curr = -2 * tolerance
    if callback is not None:
        callback(t_next + low)
    hist = counts.astype("float32", copy=False)
    visited: set[Any] = set()
    while abs(t_next - t_curr) > tolerance:
        _refuse_cycle(visited, t_curr, t_next, tolerance, low)
        t_curr = t_next
        above = centers > t_curr
        mean_fore = np.average(centers[above], weights=hist[above])
        mean_back = np.average(centers[~above], weights=hist[~above])
        if mean_back == 0:
            break
        t_next = (mean_back - mean_fore) / (np.log(mean_back) - np.log(mean_fore))
        if callback is not None:
            callback(t_next + low)
    return t_next + low


def _float_li(image: ThresholdInput, tolerance: Any, initial_guess: Any,
              callback: Callback) -> Any:
    x = image.x
    finite = da.isfinite(x)
    lowest, highest, count = image.run(da.where(finite, x, np.inf).min(),
                                       da.where(finite, x, -np.inf).max(), finite.sum())
    if count == 0:
        return 0.0  # both infinities and nothing else, as scikit-image
    low = np.asarray(lowest, x.dtype)[()]
    with np.errstate(over="ignore"):
        # In the dtype (float16 overflows as scikit-image's `image -= image_min`); the
        # values scikit-image dropped first become NaN.
        shifted = da.where(finite, x - low, np.asarray(np.nan, x.dtype))
    high_shifted = np.asarray(highest, x.dtype)[()] - low
    tolerance = tolerance or _min_gap(shifted, image) / 2
    blocks = _run_blocks(c_order_blocks(shifted, _run_values(image)))
    if initial_guess is None:
        (t_next,) = _numpy_means(image, blocks, None)
    else:
        t_next = _start(initial_guess, low, high_shifted, x.dtype)
    t_curr = -2 * tolerance
    if callback is not None:
        callback(t_next + low)
    visited: set[Any] = set()
    while abs(t_next - t_curr) > tolerance:
        _refuse_cycle(visited, t_curr, t_next, tolerance, low)
        t_curr = t_next
        mean_fore, mean_back = _numpy_means(image, blocks, t_curr)
        if mean_back == 0.0:
            break
        t_next = (mean_back - mean_fore) / (np.log(mean_back) - np.log(mean_fore))
        if callback is not None:
            callback(t_next + low)
    return t_next + low


def li(image: ThresholdInput, *, tolerance: Any = None, initial_guess: Any = None,
       iter_callback: Callback = None) -> Any:
    """Li's threshold of ``image`` (see the module's notes for what is exact)."""
    x = image.x
    if x.dtype.kind == "f":
        # Not nanmin/nanmax: numpy's fmin and fmax turn a signaling NaN into a NaN
        # result ([0, sNaN] has no nanmin), where scikit-image drops every NaN first.
        kept = ~da.isnan(x)
        low, high, count = image.run(da.where(kept, x, np.inf).min(),
                                     da.where(kept, x, -np.inf).max(), kept.sum())
        if count == 0:
            return np.nan
        if low == high:  # every value that is not NaN is one value (infinities too)
            return _first_non_nan(image)
        return _float_li(image, tolerance, initial_guess, iter_callback)
    found = extrema(x, image)
    if found.constant:
        return found.first
    if x.dtype.kind == "b":
        raise ArgumentTypeError("threshold_li: a boolean image of both values has no Li "
                                "threshold (scikit-image fails subtracting booleans); pass numbers")
    return _integer_li(image, found.low, tolerance, initial_guess, iter_callback)
