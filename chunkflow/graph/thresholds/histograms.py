"""scikit-image's histogram of a whole array (``skimage.exposure.histogram(image,
nbins, source_range="image")``), exact, in bounded memory.

scikit-image bins integers by value (one bin per integer between the minimum and the
maximum, its centers ``numpy.arange(min, max + 1)``) and everything else as
``numpy.histogram(image, nbins)`` with the centers of its edges. Both are sums of
per-block counts, so the tree of :func:`~chunkflow.graph.reductions.tree.tree_reduce`
gives them exactly; the minimum and maximum come from one first pass.

Examples
--------
>>> import numpy as np
>>> import chunkflow
>>> z = chunkflow.array(np.array([[3, 5], [5, 9]], dtype="u1"), chunks=(1, 2))
>>> x, _ = reduction_input(z)
>>> counts, centers = image_histogram(x, 256, extrema(x))
>>> counts.tolist(), centers.tolist()
([1, 0, 2, 0, 0, 0, 1], [3, 4, 5, 6, 7, 8, 9])
"""

from __future__ import annotations

import warnings
from collections.abc import Mapping
from functools import partial
from typing import TYPE_CHECKING, Any

import dask.array as da
import numpy as np

from chunkflow.errors import ArgumentTypeError, InvalidArgumentError, MemoryPlanError
from chunkflow.graph.memory import task_max_memory
from chunkflow.graph.reductions.plan import reduction_input, split_every
from chunkflow.graph.reductions.tree import tree_reduce
from chunkflow.graph.scheduler import compute as run

if TYPE_CHECKING:
    from chunkflow.graph.reductions.plan import ReductionSource
    from chunkflow.graph.scheduler import ProgressArg, SchedulerLike

__all__ = ["Extrema", "ThresholdInput", "extrema", "image_histogram", "open_image",
           "reduction_input"]


class ThresholdInput:
    """What a threshold reads: the dask array of the image, how to run it, and the
    memory one task may use."""

    def __init__(self, x: da.Array, block_bytes: int, scheduler: SchedulerLike,
                 progress: ProgressArg, max_memory: int | str | None, what: str) -> None:
        self.x, self.block_bytes, self.what = x, block_bytes, what
        self.scheduler, self.progress, self.max_memory = scheduler, progress, max_memory

    def run(self, *lazy: Any) -> tuple[Any, ...]:
        return tuple(run(*lazy, scheduler=self.scheduler, progress=self.progress))

    @property
    def every(self) -> int:
        return split_every(self.x, None, self.block_bytes)


def open_image(source: ReductionSource, what: str, *, max_memory: int | str | None = None,
               scheduler: SchedulerLike = None, progress: ProgressArg = False,
               storage_options: Mapping[str, Any] | None = None) -> ThresholdInput:
    """``source`` (an array, path, URL, dask or numpy array) as a :class:`ThresholdInput`,
    refusing the dtypes scikit-image's thresholds do not take."""
    x, block_bytes = reduction_input(source, Ellipsis, None, max_memory, scheduler,
                                     storage_options, what)
    if x.dtype.kind not in "biuf":
        raise ArgumentTypeError(f"{what}: the image's dtype {x.dtype} is not a number "
                                "scikit-image thresholds (booleans, integers or floats)")
    if x.size == 0:
        raise InvalidArgumentError(f"{what}: the image has no values (shape {x.shape}); "
                                   "scikit-image fails on it too")
    return ThresholdInput(x, block_bytes, scheduler, progress, max_memory, what)


class Extrema:
    """The image's minimum, maximum (in its dtype) and first value (C order)."""

    def __init__(self, low: Any, high: Any, first: Any) -> None:
        self.low, self.high, self.first = low, high, first

    @property
    def constant(self) -> bool:
        """Whether every value equals the first (NaN never does)."""
        return bool(self.low == self.high == self.first)


def extrema(x: da.Array, image: ThresholdInput | None = None) -> Extrema:
    """The minimum, maximum and first value of ``x``, in one pass."""
    first = x[(0,) * x.ndim]
    lazy = (x.min(), x.max(), first)
    low, high, value = image.run(*lazy) if image is not None else \
        tuple(run(*lazy, scheduler="sync"))
    return Extrema(*(np.asarray(v, x.dtype)[()] for v in (low, high, value)))


def _block_bincount(block: np.ndarray, low: int, size: int) -> np.ndarray:
    # Values relative to the minimum: int64 holds them (the range is checked first),
    # and uint64 blocks subtract in uint64 (no value is below the minimum).
    shifted = block.ravel() - block.dtype.type(low) if block.dtype.kind == "u" else \
        block.ravel().astype(np.int64) - np.int64(low)
    return np.bincount(shifted.astype(np.intp), minlength=size).astype(np.int64)


def _block_histogram(block: np.ndarray, bins: int, range: tuple[Any, Any]) -> np.ndarray:
    with warnings.catch_warnings():
        # numpy's cast of booleans, warned once for the whole image by the caller.
        warnings.simplefilter("ignore", RuntimeWarning)
        return np.histogram(block, bins=bins, range=range)[0].astype(np.int64)


def _check_integer_range(low: int, high: int, dtype: np.dtype, image: ThresholdInput | None,
                         what: str) -> int:
    if dtype.kind == "u" and dtype.itemsize == 8 and high > np.iinfo(np.int64).max:
        raise InvalidArgumentError(
            f"{what}: uint64 values above {np.iinfo(np.int64).max} (the maximum is {high}): "
            "scikit-image wraps them to negative int64 bins; convert the image first")
    size = high - low + 1
    budget = task_max_memory(image.max_memory if image else None,
                             image.scheduler if image else None)
    if size * 8 * 4 > budget:
        raise MemoryPlanError(
            f"{what}: an integer image from {low} to {high} has {size} histogram bins "
            f"(scikit-image bins every integer value), more than a task's budget of "
            f"{budget} bytes holds; raise max_memory or rescale the image")
    return size


def image_histogram(x: da.Array, nbins: int, found: Extrema,
                    image: ThresholdInput | None = None) -> tuple[np.ndarray, np.ndarray]:
    """``skimage.exposure.histogram(x, nbins, source_range="image")``: int64 counts and
    the bin centers (int64 values for integers, the edges' dtype otherwise)."""
    what = image.what if image is not None else "histogram"
    every = image.every if image is not None else 8
    if x.dtype.kind in "iu":
        low, high = int(found.low), int(found.high)
        size = _check_integer_range(low, high, x.dtype, image, what)
        lazy = tree_reduce(x, partial(_block_bincount, low=low, size=size), every=every)
        (counts,) = image.run(lazy) if image is not None else (lazy.compute(scheduler="sync"),)
        return counts, np.arange(low, high + 1)
    if isinstance(nbins, bool) or not isinstance(nbins, (int, np.integer)) or nbins < 1:
        raise InvalidArgumentError(f"{what}: nbins={nbins!r}; expected a positive integer")
    if x.dtype.kind == "b":
        warnings.warn(f"Converting input from {x.dtype} to {np.uint8} for compatibility.",
                      RuntimeWarning, stacklevel=4)
        bounds: tuple[Any, Any] = (np.uint8(found.low), np.uint8(found.high))
    else:
        bounds = (found.low, found.high)
    if not (np.isfinite(bounds[0]) and np.isfinite(bounds[1])):
        raise InvalidArgumentError(f"{what}: autodetected range of [{bounds[0]}, {bounds[1]}] "
                                   "is not finite (as numpy says)")
    dtype = np.uint8 if x.dtype.kind == "b" else x.dtype
    edges = np.histogram_bin_edges(np.empty(0, dtype), bins=int(nbins), range=bounds)
    lazy = tree_reduce(x, partial(_block_histogram, bins=int(nbins), range=bounds), every=every)
    (counts,) = image.run(lazy) if image is not None else (lazy.compute(scheduler="sync"),)
    return counts, (edges[:-1] + edges[1:]) / 2.0
