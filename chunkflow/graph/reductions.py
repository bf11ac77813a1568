"""Reductions of arrays larger than memory, with memory bounded by a few blocks.

``mean``, ``std``, ``var``, ``min``, ``max`` and ``sum`` are dask's own reductions
over a :func:`~chunkflow.graph.read.to_dask` array whose blocks are sized for the
reduction rather than for storage, with a ``split_every`` chosen from the memory
budget, on the scheduler the caller names.

Why the block size matters: a reduction's per-block step works in float64 (``std``
subtracts the mean, then squares), so a block of 2-byte integers needs about nine
times its size while it is reduced. Blocks of a fixed, modest size (4 MiB decoded, or
less when the budget is tight) keep the peak at "a few blocks per thread", the same for
an 8192^2 array as for a 65536^2 one. The reduction tree then combines
``split_every`` partial results at a time, as many as fit the budget.

:func:`histogram` counts each block against numpy's own bin edges, so its counts are
``numpy.histogram``'s; :func:`percentile`, :func:`quantile` and :func:`median` (and
their ``nan*`` variants, from :mod:`~chunkflow.graph.quantiles`) are exact too.

Examples
--------
>>> import numpy as np
>>> import chunkflow
>>> z = chunkflow.array(np.arange(100, dtype="u2").reshape(10, 10), chunks=(3, 3))
>>> stats = reduce(z, ("mean", "max", "sum"))
>>> float(stats["mean"]), int(stats["max"]), int(stats["sum"])
(49.5, 99, 4950)
>>> counts, edges = histogram(z, bins=4, range=(0, 100))
>>> counts.tolist()
[25, 25, 25, 25]
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from functools import partial
from typing import TYPE_CHECKING, Any

import dask.array as da
import numpy as np

from chunkflow.graph.budget import memory_budget
from chunkflow.graph.quantiles import (
    median,
    nanmedian,
    nanpercentile,
    nanquantile,
    percentile,
    quantile,
)
from chunkflow.graph.reduction_tree import (
    reduction_block_bytes,
    reduction_input,
    split_every,
    tree_reduce,
)
from chunkflow.graph.scheduler import ProgressArg, compute

if TYPE_CHECKING:
    from chunkflow.graph.read import BlockChunks
    from chunkflow.graph.reduction_tree import ReductionSource
    from chunkflow.graph.scheduler import SchedulerLike
    from chunkflow.indexing import Selection

__all__ = [
    "OPERATIONS", "histogram", "max", "mean", "median", "memory_budget", "min", "nanmedian",
    "nanpercentile", "nanquantile", "percentile", "quantile", "reduce", "reduction_block_bytes",
    "reduction_input", "std", "sum", "var",
]

OPERATIONS = ("mean", "std", "var", "min", "max", "sum")
StorageOptions = Mapping[str, Any] | None


def _reduction(x: da.Array, op: str, axis: int | tuple[int, ...] | None, every: int, ddof: int) -> da.Array:
    if op not in OPERATIONS:
        raise ValueError(f"unknown reduction {op!r}; expected one of {', '.join(OPERATIONS)}")
    method = getattr(x, op)
    if op in ("std", "var"):
        return method(axis=axis, split_every=every, ddof=ddof)
    return method(axis=axis, split_every=every)


def reduce(
    source: ReductionSource,
    ops: Sequence[str] = ("mean", "std"),
    *,
    selection: Selection = Ellipsis,
    axis: int | tuple[int, ...] | None = None,
    ddof: int = 0,
    chunks: BlockChunks = None,
    memory_limit: int | str | None = None,
    scheduler: SchedulerLike = None,
    progress: ProgressArg = False,
    compute_now: bool = True,
    storage_options: StorageOptions = None,
) -> dict[str, Any]:
    """Several reductions of one array in one pass over its chunks.

    Parameters
    ----------
    source : chunkflow.Array, path, URL, store or dask array
        What to reduce. Arrays given by location are opened read-only and read past
        the process-wide chunk cache (one pass reads each chunk once; caching them would
        hold up to the cache budget for nothing); an open Array reads through its own.
    ops : sequence of str
        Any of ``mean``, ``std``, ``var``, ``min``, ``max``, ``sum``.
    selection : basic selection
        The part of the array to reduce.
    axis, ddof
        As in numpy.
    chunks : optional
        Block size (see :func:`~chunkflow.graph.read.to_dask`); default: sized from
        the memory budget (:func:`reduction_block_bytes`).
    memory_limit : int or str, optional
        Bytes one worker may use; default from :func:`memory_budget`.
    scheduler, progress
        See :func:`chunkflow.graph.scheduler.compute`.
    compute_now : bool
        ``False`` returns the lazy dask arrays instead of numbers.
    storage_options : dict, optional
        fsspec options (credentials, ``endpoint_url``...) when ``source`` is a URL.

    Returns
    -------
    dict
        ``{op: result}``, numpy scalars or arrays (dask arrays if not computed).
    """
    x, block_bytes = reduction_input(source, selection, chunks, memory_limit, scheduler,
                                     storage_options)
    every = split_every(x, axis, block_bytes)
    lazy = {op: _reduction(x, op, axis, every, ddof) for op in ops}
    if not compute_now:
        return lazy
    values = compute(*lazy.values(), scheduler=scheduler, progress=progress)
    return dict(zip(lazy, values))


def _single(op: str):  # type: ignore[no-untyped-def]
    def reduction(source: ReductionSource, axis: int | tuple[int, ...] | None = None, *,
                  storage_options: StorageOptions = None, **kwargs: Any) -> Any:
        return reduce(source, (op,), axis=axis, storage_options=storage_options, **kwargs)[op]

    reduction.__name__ = reduction.__qualname__ = op
    reduction.__doc__ = (
        f"The {op} of an array (or of ``selection`` of it), in bounded memory.\n\n"
        "Keywords as :func:`reduce` (``storage_options=`` for URLs among them).\n\n"
        "Examples\n--------\n>>> import chunkflow\n"
        ">>> z = chunkflow.ones((4, 4), chunks=(2, 2), dtype='u1')\n"
        f">>> float(chunkflow.reductions.{op}(z, scheduler='sync')) == float(getattr(z[:], '{op}')())\n"
        "True\n"
    )
    return reduction


mean = _single("mean")
std = _single("std")
var = _single("var")
min = _single("min")
max = _single("max")
sum = _single("sum")


def _block_histogram(block: np.ndarray, bins: Any, range: Any) -> np.ndarray:
    # numpy's own counting, against numpy's own edges: each value's bin depends only on
    # the value, the bins, the range and the dtype, so the blocks' counts add up to
    # numpy's counts over the whole array.
    return np.histogram(block, bins=bins, range=range)[0].astype(np.int64)


def histogram(
    source: ReductionSource,
    bins: int | Sequence[float] | np.ndarray = 10,
    range: tuple[float, float] | None = None,
    *,
    density: bool = False,
    weights: None = None,
    selection: Selection = Ellipsis,
    chunks: BlockChunks = None,
    memory_limit: int | str | None = None,
    scheduler: SchedulerLike = None,
    progress: ProgressArg = False,
    storage_options: StorageOptions = None,
) -> tuple[np.ndarray, np.ndarray]:
    """Counts and bin edges of all values, exactly as :func:`numpy.histogram`.

    The edges are numpy's (:func:`numpy.histogram_bin_edges`: float32 edges for float32
    data, float64 for integers), and each block is counted against them by numpy, so the
    counts equal ``numpy.histogram(source[...], bins, range)``'s. Without ``range`` (and
    with ``bins`` a number), a first pass finds the exact minimum and maximum in the
    array's dtype, as numpy does.

    Parameters
    ----------
    source : chunkflow.Array, path, URL, store or dask array
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
    selection, chunks, memory_limit, scheduler, progress, storage_options
        As :func:`reduce`.

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
    """
    if weights is not None:
        raise ValueError("histogram: weights= is not supported; pass weights=None "
                         "(or count with chunkflow.summarize_chunks and numpy.histogram)")
    if isinstance(bins, str):
        raise ValueError(f"histogram: bins={bins!r} (a numpy bin estimator) needs the whole "
                         "data in memory; give a number of bins or the edges")
    x, block_bytes = reduction_input(source, selection, chunks, memory_limit, scheduler,
                                     storage_options)
    if range is None and np.ndim(bins) == 0 and x.size:
        low, high = compute(x.min(), x.max(), scheduler=scheduler, progress=progress)
        # numpy takes a.min() and a.max() in the array's dtype: so do we (the edges'
        # dtype follows from them).
        range = (np.asarray(low, x.dtype)[()], np.asarray(high, x.dtype)[()])
        if not (np.isfinite(range[0]) and np.isfinite(range[1])):
            raise ValueError(f"histogram: autodetected range of [{range[0]}, {range[1]}] is "
                             "not finite (as numpy says); pass range=")
    # numpy's edges (and its errors for bad bins or a non-finite range), before any pass.
    edges = np.histogram_bin_edges(np.empty(0, x.dtype), bins=bins, range=range)
    counts = np.zeros(len(edges) - 1, np.int64)
    if x.size:
        block_bins = edges if np.ndim(bins) else bins
        lazy = tree_reduce(x, partial(_block_histogram, bins=block_bins, range=range),
                           every=split_every(x, None, block_bytes))
        (counts,) = compute(lazy, scheduler=scheduler, progress=progress)
    counts = counts.astype(np.intp)
    if density:
        # numpy's formula, on the total counts.
        widths = np.array(np.diff(edges), float)
        return counts / widths / counts.sum(), edges
    return counts, edges
