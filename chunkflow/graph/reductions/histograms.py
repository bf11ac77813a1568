"""histogram: numpy's counts and bin edges over an array larger than memory.

Each block is counted by numpy against numpy's own edges, so the counts add up to
``numpy.histogram``'s over the whole array. Integers of one or two bytes (and booleans)
are counted per value instead, in one pass whatever the range, and numpy bins the values
that occur (:mod:`~chunkflow.graph.reductions.value_counts`).
"""

from __future__ import annotations

import warnings
from collections.abc import Mapping, Sequence
from functools import partial
from typing import TYPE_CHECKING, Any

import dask
import numpy as np

from chunkflow.config.renames import renamed_parameters
from chunkflow.errors import InvalidArgumentError
from chunkflow.graph.reductions.histogram_axes import histogram_along
from chunkflow.graph.reductions.plan import reduction_input, split_every, split_every_of
from chunkflow.graph.reductions.tree import gather_tree, tree_reduce
from chunkflow.graph.reductions.value_counts import (
    counts_by_value,
    histogram_of_values,
    value_counts,
    value_range,
)
from chunkflow.graph.scheduler import ProgressArg, deferred_scheduler
from chunkflow.graph.scheduler import compute as run
from chunkflow.heap import roomy_heap

if TYPE_CHECKING:
    from chunkflow.graph.read import BlockChunks
    from chunkflow.graph.reductions.plan import ReductionSource
    from chunkflow.graph.scheduler import SchedulerLike
    from chunkflow.indexing import Selection

__all__ = ["histogram"]

StorageOptions = Mapping[str, Any] | None


def _block_histogram(block: np.ndarray, bins: Any, range: Any) -> np.ndarray:
    # numpy's own counting, against numpy's own edges: each value's bin depends only on
    # the value, the bins, the range and the dtype, so the blocks' counts add up to
    # numpy's counts over the whole array. roomy_heap: 2.2x faster in a dask worker.
    with roomy_heap():
        return np.histogram(block, bins=bins, range=range)[0].astype(np.int64)


def _block_extremes(block: np.ndarray) -> np.ndarray:
    """The block's minimum and maximum (none for an empty block), as numpy's min and max."""
    if not block.size:
        return np.empty(0, block.dtype.newbyteorder("="))
    return np.array([np.min(block), np.max(block)], block.dtype.newbyteorder("="))


def _extremes(x: Any, scheduler: SchedulerLike, progress: ProgressArg) -> tuple[Any, Any]:
    """``x.min()`` and ``x.max()`` in one pass: one task a block reads it and finds both."""
    pairs = gather_tree(x, _block_extremes, x.dtype.newbyteorder("="),
                        every=split_every_of(int(np.prod(x.chunksize)) * x.dtype.itemsize, 16))
    (pairs,) = run(pairs, scheduler=scheduler, progress=progress)
    pairs = pairs.reshape(-1, 2)
    return np.min(pairs[:, 0]), np.max(pairs[:, 1])


def _from_values(per_value: np.ndarray, dtype: np.dtype[Any], bins: Any, range: Any,
                 density: bool) -> tuple[np.ndarray, np.ndarray]:
    """numpy's counts and edges from the counts of each value (1- and 2-byte integers)."""
    if range is None and np.ndim(bins) == 0:
        # numpy's a.min() and a.max(), in the array's dtype: the first and last value
        # that occurs.
        range = value_range(per_value, dtype)
    edges = np.histogram_bin_edges(np.empty(0, dtype), bins=bins, range=range)
    block_bins = edges if np.ndim(bins) else bins
    return _finish(histogram_of_values(per_value, dtype, block_bins, range), edges, density)


def _finish(counts: np.ndarray, edges: np.ndarray, density: bool) -> tuple[np.ndarray, np.ndarray]:
    counts = counts.astype(np.intp)
    if density:
        # numpy's formula, on the total counts (of each channel: the last axis).
        widths = np.array(np.diff(edges), float)
        if counts.ndim > 1:
            return counts / widths / counts.sum(axis=-1, keepdims=True), edges
        return counts / widths / counts.sum(), edges
    return counts, edges


@renamed_parameters(chunks="blocks", memory_limit="max_memory")
def histogram(
    source: ReductionSource,
    bins: int | Sequence[float] | np.ndarray = 10,
    range: tuple[float, float] | None = None,
    *,
    density: bool = False,
    weights: None = None,
    axis: int | tuple[int, ...] | None = None,
    selection: Selection = Ellipsis,
    blocks: BlockChunks = None,
    max_memory: int | str | None = None,
    scheduler: SchedulerLike = None,
    progress: ProgressArg = False,
    compute: bool = True,
    storage_options: StorageOptions = None,
) -> Any:
    """Counts and bin edges of all values, exactly as :func:`numpy.histogram`.

    The edges are numpy's (:func:`numpy.histogram_bin_edges`: float32 edges for float32
    data, float64 for integers), and each block is counted against them by numpy, so the
    counts equal ``numpy.histogram(source[...], bins, range)``'s. Without ``range`` (and
    with ``bins`` a number), a first pass finds the exact minimum and maximum in the
    array's dtype, as numpy does; integers of one or two bytes need no such pass (one
    pass counts each value, which gives both).

    Parameters
    ----------
    source : chunkflow.Array, path, URL, store, dask array or numpy array
        As :func:`reduce`.
    bins : int or sequence of edges
        A number of equal bins, or monotonically increasing edges. numpy's estimator
        names (``"auto"``, ``"fd"``...) need the whole data and are refused.
    range : (float, float), optional
        Lower and upper edges; default the data's minimum and maximum.
    density : bool
        Return numpy's probability density instead of counts.
    weights : None
        Not supported (refused when given).
    axis : int or tuple of int, optional
        Count over these axes only: one histogram per index of the other axes (per
        channel, with ``axis`` the spatial axes), each equal to ``numpy.histogram`` of
        that index's values. Counts have shape ``(*kept, nbins)`` and edges ``(*kept,
        nbins + 1)``; without ``range`` each index's edges span its own values (see
        :mod:`chunkflow.graph.reductions.histogram_axes`). ``None``: all values at once.
    selection, blocks, max_memory, scheduler, progress, storage_options
        As :func:`reduce`.
    compute : bool
        ``False`` returns a ``dask.delayed`` object that computes to ``(counts,
        edges)``. When ``range`` must be found first (no ``range``, a number of bins,
        data wider than two bytes), its two passes run inside that one task (see
        :func:`deferred_scheduler`); otherwise it is a graph of one task per block.

    Returns
    -------
    counts, edges : numpy.ndarray
        As ``numpy.histogram`` returns them.

    Examples
    --------
    >>> import numpy as np
    >>> import chunkflow
    >>> data = np.linspace(-1, 1, 1000, dtype="f4")
    >>> z = chunkflow.array(data, chunks=64)
    >>> counts, edges = histogram(z, bins=7)
    >>> expected = np.histogram(data, bins=7)
    >>> np.array_equal(counts, expected[0]), edges.dtype, np.array_equal(edges, expected[1])
    (True, dtype('float32'), True)

    Per channel of a ``cyx`` image:

    >>> image = np.stack([data.reshape(25, 40), 2 * data.reshape(25, 40)])
    >>> counts, edges = histogram(chunkflow.array(image, chunks=(1, 8, 8)), 5, axis=(1, 2))
    >>> counts.shape, np.array_equal(counts[1], np.histogram(image[1], 5)[0])
    ((2, 5), True)
    """
    if weights is not None:
        raise InvalidArgumentError("histogram: weights= is not supported; pass weights=None "
                                   "(or count with chunkflow.summarize_chunks and numpy.histogram)")
    if isinstance(bins, str):
        raise InvalidArgumentError(f"histogram: bins={bins!r} (a numpy bin estimator) needs the whole "
                                   "data in memory; give a number of bins or the edges")
    x, block_bytes = reduction_input(source, selection, blocks, max_memory, scheduler,
                                     storage_options, "histogram")
    if x.dtype == bool:
        # As numpy.histogram does (its edges and ranges subtract values).
        warnings.warn(f"Converting input from {x.dtype} to {np.uint8} for compatibility.",
                      RuntimeWarning, stacklevel=3)
        x = x.astype(np.uint8)
    if axis is not None:
        if not compute:
            return dask.delayed(partial(histogram, x, bins, range, density=density, axis=axis,
                                        scheduler=deferred_scheduler(scheduler)), pure=True)()
        return _finish(*histogram_along(x, bins, range, axis, scheduler, progress), density)
    if counts_by_value(x.dtype) and x.size:
        # One pass: the counts of each value give the range and numpy's counts.
        # numpy's refusals of bad bins or ranges come first, before any pass.
        np.histogram_bin_edges(np.empty(0, x.dtype), bins=bins,
                               range=range if range is not None or np.ndim(bins) else (0, 1))
        per_value = tree_reduce(x, value_counts,
                                every=split_every_of(block_bytes, 8 << (8 * x.dtype.itemsize)))
        finish = partial(_from_values, dtype=x.dtype, bins=bins, range=range, density=density)
        if not compute:
            return dask.delayed(finish, pure=True)(per_value)
        (per_value,) = run(per_value, scheduler=scheduler, progress=progress)
        return finish(per_value)
    if not compute and range is None and np.ndim(bins) == 0 and x.size:
        # The edges depend on a first pass: both passes run in one task when the result
        # is computed. A partial hides x from dask, which would load it whole.
        return dask.delayed(partial(histogram, x, bins, density=density,
                                    scheduler=deferred_scheduler(scheduler)), pure=True)()
    if range is None and np.ndim(bins) == 0 and x.size:
        low, high = _extremes(x, scheduler, progress)
        # numpy takes a.min() and a.max() in the array's dtype: so do we (the edges'
        # dtype follows from them).
        lowest, highest = np.asarray(low, x.dtype)[()], np.asarray(high, x.dtype)[()]
        if not (np.isfinite(lowest) and np.isfinite(highest)):
            raise InvalidArgumentError(f"histogram: autodetected range of [{lowest}, {highest}] is "
                                       "not finite (as numpy says); pass range=")
        bounds: tuple[Any, Any] | None = (lowest, highest)  # in the array's dtype
    else:
        bounds = range
    # numpy's edges (and its errors for bad bins or a non-finite range), before any pass.
    edges = np.histogram_bin_edges(np.empty(0, x.dtype), bins=bins, range=bounds)
    counts: Any = np.zeros(len(edges) - 1, np.int64)
    if x.size:
        block_bins = edges if np.ndim(bins) else bins
        counts = tree_reduce(x, partial(_block_histogram, bins=block_bins, range=bounds),
                             every=split_every(x, None, block_bytes))
    if not compute:
        return dask.delayed(_finish, pure=True)(counts, edges, density)
    if x.size:
        (counts,) = run(counts, scheduler=scheduler, progress=progress)
    return _finish(counts, edges, density)
