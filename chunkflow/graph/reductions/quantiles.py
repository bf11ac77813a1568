"""Exact percentiles, quantiles and medians of arrays larger than memory.

numpy's answer, bit for bit, for any data and any chunking, in a bounded memory: the
values at the ranks numpy's ``linear`` method needs are found by a radix selection over
order-preserving integer keys (:mod:`~chunkflow.graph.reductions.order_keys`):

1. one pass counts, over all blocks, the keys by their top bits (16 at most): a
   histogram of a fixed size, whatever the data;
2. the cumulative counts say in which bucket each wanted rank lies, and its rank
   inside that bucket; ties and constant data just make a full bucket;
3. the next pass counts the next bits of the keys in those buckets only, and so on,
   until the values in the chosen buckets fit the budget: one last pass gathers them
   and selects exactly (or, after the last bit, each key is known outright).

All ranks of all ``q`` move together: a float32 array takes two or three passes (each
resolves up to 16 bits of the keys), a float64 one up to four or five. NaN is counted in
the first pass (numpy's NaN rules follow from the count). Merging per-block percentiles,
as ``dask.array.percentile`` does, is only right when every block looks like the whole;
nothing here approximates (for dask's approximation, call it on ``chunkflow.to_dask``).

Examples
--------
>>> import numpy as np
>>> import chunkflow
>>> data = np.random.default_rng(0).normal(size=(60, 50)).astype("f4")
>>> z = chunkflow.array(data, chunks=(7, 9))
>>> np.array_equal(percentile(z, [5, 50, 95]), np.percentile(data, [5, 50, 95]))
True
>>> median(z) == np.median(data)
np.True_
"""

from __future__ import annotations

import warnings
from collections.abc import Mapping
from dataclasses import dataclass
from functools import partial
from typing import TYPE_CHECKING, Any

import dask
import dask.array as da
import numpy as np

from chunkflow.config.renames import renamed_parameters
from chunkflow.errors import InvalidArgumentError, InvalidSelectionError
from chunkflow.graph.memory import task_max_memory
from chunkflow.graph.reductions.order_keys import (
    check_dtype,
    first_counts,
    linear_quantile,
    median_of,
    median_ranks,
    prepare_q,
    quantile_ranks,
    wanted_ranks,
)
from chunkflow.graph.reductions.plan import reduction_input
from chunkflow.graph.reductions.quantile_axes import along
from chunkflow.graph.reductions.radix import PassOptions, next_digit_bits, select
from chunkflow.graph.reductions.tree import tree_reduce
from chunkflow.graph.scheduler import ProgressArg, compute, deferred_scheduler

if TYPE_CHECKING:
    from numpy.typing import ArrayLike

    from chunkflow.graph.read import BlockChunks
    from chunkflow.graph.reductions.plan import ReductionSource
    from chunkflow.graph.scheduler import SchedulerLike
    from chunkflow.indexing import Selection

__all__ = ["median", "nanmedian", "nanpercentile", "nanquantile", "percentile", "quantile"]

#: ``axis=``: numpy's (the axes reduced; None: all).
AxisArg = int | tuple[int, ...] | None

@dataclass(frozen=True)
class _Found:
    """What the passes found: values at ranks among the ``n`` non-NaN values, found in
    ``dtype`` (native) for data of ``source_dtype`` (numpy keeps its byte order where it
    takes values as they are)."""

    n: int
    nans: int
    values: dict[int, Any]
    dtype: np.dtype[Any]
    source_dtype: np.dtype[Any]


def _scalar_selection(source: ReductionSource, selection: Selection) -> bool:
    """Whether numpy's ``source[selection]`` of one element is a scalar (integers only)
    rather than a 0-d array (an ``Ellipsis`` among them; a dask array)."""
    entries = selection if isinstance(selection, tuple) else (selection,)
    return not isinstance(source, da.Array) and all(e is not Ellipsis for e in entries)


def _order_statistics(source: ReductionSource, ranks_of: Any, what: str, skip_nan: bool,
                      booleans: bool, selection: Selection, blocks: BlockChunks,
                      max_memory: int | str | None, scheduler: SchedulerLike,
                      progress: ProgressArg, storage_options: Mapping[str, Any] | None) -> _Found:
    """Count, then select the values at ``ranks_of(n)`` (n: the non-NaN values); none
    when NaN makes the answer NaN (``skip_nan`` false). ``booleans``: whether booleans
    are taken (numpy refuses them where it interpolates)."""
    x, _ = reduction_input(source, selection, blocks, max_memory, scheduler, storage_options,
                           what)
    # numpy's order of refusals: data that is no number, then no data, then booleans.
    dtype = check_dtype(x.dtype, what, booleans=True)
    # numpy indexes one element by integers alone as a scalar, of native byte order.
    source_dtype = dtype if x.ndim == 0 and _scalar_selection(source, selection) else x.dtype
    if x.size == 0:
        return _Found(0, 0, {}, dtype, source_dtype)
    check_dtype(x.dtype, what, booleans)
    if x.dtype != dtype:
        x = x.astype(dtype)
    budget = task_max_memory(max_memory, scheduler)
    options = PassOptions(what, scheduler, progress, budget)
    first_bits = next_digit_bits(8 * dtype.itemsize, 0, 1, budget)
    lazy = tree_reduce(x, partial(first_counts, digit_bits=first_bits), every=4)
    (first,) = compute(lazy, scheduler=scheduler, progress=progress)
    nans, below = int(first[-2]), int(first[-1])
    n = int(x.size) - nans
    ranks = ranks_of(n) if n and (skip_nan or not nans) else []
    # NaN with the sign bit set has the lowest keys: ranks among keys start above them.
    found = select(x, first[:-2], first_bits, [r + below for r in ranks], options) \
        if ranks else {}
    values = {r: found[r + below] for r in ranks}
    return _Found(n, nans, values, dtype, source_dtype)


def _per_axis(func: Any, source: ReductionSource, axis: Any, compute: bool,
              kwargs: dict[str, Any]) -> Any:
    """``func`` of each index of the axes not in ``axis`` (numpy's ``axis=``), see
    :mod:`chunkflow.graph.reductions.quantile_axes`."""
    if not compute:
        return _deferred(partial(along, func, axis=axis), source, kwargs)
    return along(func, source, axis, **kwargs)


def _deferred(run: Any, source: ReductionSource, kwargs: dict[str, Any]) -> Any:
    """``run(source, **kwargs)`` as one ``dask.delayed`` task; a partial hides a dask
    ``source`` from dask, which would load it whole as the task's argument."""
    kwargs = {**kwargs, "scheduler": deferred_scheduler(kwargs.get("scheduler")),
              "progress": False}
    return dask.delayed(partial(run, source, **kwargs), pure=True)()


def _quantile(source: ReductionSource, q: ArrayLike, *, percent: bool, skip_nan: bool, what: str,
              compute: bool = True, **kwargs: Any) -> Any:
    if not compute:
        return _deferred(partial(_quantile, q=q, percent=percent, skip_nan=skip_nan, what=what),
                         source, kwargs)
    q_array, weak_q = prepare_q(q, percent)

    def ranks_of(n: int) -> list[int]:
        return wanted_ranks(n, quantile_ranks(n, q_array))

    # Integer q (quantile's, not percentile's) takes values at integer ranks as they are:
    # numpy then takes booleans too.
    found = _order_statistics(source, ranks_of, what, skip_nan, q_array.dtype.kind in "iu",
                              **kwargs)
    if not found.n and not found.nans:
        if skip_nan:  # numpy's nanquantile of no values is nanmean's: NaN, whatever q
            return np.nanmean(np.empty(0, found.dtype))
        quantile_ranks(0, q_array)  # numpy's own refusal first (uint8 q: OverflowError)
        raise InvalidSelectionError(
            f"{what} of an empty selection: numpy refuses it too (IndexError); select at "
            "least one value")
    if found.nans and skip_nan and not found.n:
        warnings.warn("All-NaN slice encountered", RuntimeWarning, stacklevel=3)
        return np.full(q_array.shape, np.nan, dtype=found.source_dtype)[()]
    has_nan = bool(found.nans) and not skip_nan
    n = found.n + (found.nans if has_nan else 0)
    if has_nan:  # the result is NaN: only its dtype matters, which any value gives
        return linear_quantile(n, q_array, weak_q, found.source_dtype, lambda r: 0,
                               has_nan=True)
    return linear_quantile(n, q_array, weak_q, found.source_dtype, found.values.__getitem__)


def _median(source: ReductionSource, *, skip_nan: bool, what: str, compute: bool = True,
            **kwargs: Any) -> Any:
    if not compute:
        return _deferred(partial(_median, skip_nan=skip_nan, what=what), source, kwargs)
    found = _order_statistics(source, median_ranks, what, skip_nan, True, **kwargs)
    dtype = found.dtype
    if not found.n and not found.nans:  # numpy's mean (nanmean) of no values: NaN
        return (np.nanmean if skip_nan else np.mean)(np.empty(0, dtype))
    if found.nans and (not skip_nan or not found.n):
        if skip_nan:
            warnings.warn("All-NaN slice encountered", RuntimeWarning, stacklevel=3)
        return dtype.type(np.nan)
    middle = np.array([found.values[r] for r in median_ranks(found.n)], dtype=dtype)
    return median_of(middle)


_PARAMETERS = """
    Parameters
    ----------
    source : chunkflow.Array, path, URL, store, dask array or numpy array
        As :func:`chunkflow.reduce`.
    {q}axis : int or tuple of int, optional
        As numpy's: the axes reduced (``None``: all). One exact selection per index of
        the other axes (per channel), see :mod:`chunkflow.graph.reductions.quantile_axes`.
    method : {{"linear"}}
        numpy's default method, the only one supported (not taken by the medians).
    selection, blocks, max_memory, scheduler, progress, storage_options
        As :func:`chunkflow.reduce`. ``max_memory`` bounds what one task holds: a
        block with its keys, a histogram of at most 16 bits per followed bucket, and
        the values gathered for the final selection (a quarter of it).
    compute : bool
        ``False`` returns a ``dask.delayed`` object that computes to the result: the
        passes, which depend on each other's counts, run inside its one task (see
        :func:`chunkflow.graph.scheduler.deferred_scheduler`).

    Returns
    -------
    numpy scalar or array
        numpy's result, same value and dtype, bit for bit (but for the sign of a zero
        result where the data holds zeros of both signs: numpy's partition leaves
        either at a zero's rank, by position; here -0.0 ranks first). Where numpy
        answers, so do these: medians of booleans, and NaN (with numpy's warning) for
        the medians and ``nan*`` quantiles of no values; where numpy refuses, they
        refuse with an error of the same class (quantiles of no values: ``IndexError``;
        of booleans, except at integer ``q``: ``TypeError``).
"""


def _check_call(axis: object, method: str, what: str) -> None:
    if method != "linear":
        raise InvalidArgumentError(f"{what}: method={method!r} is not supported; only numpy's default "
                                   "'linear'")


def _document(summary: str, q: str, example: str) -> str:
    q_doc = f"q : float or sequence of floats\n        {q}\n    " if q else ""
    return (f"{summary}\n{_PARAMETERS.format(q=q_doc)}\n    Examples\n    --------\n"
            "    >>> import numpy as np\n    >>> import chunkflow\n"
            "    >>> data = np.arange(12.0).reshape(3, 4)\n    >>> data[1, 1] = np.nan\n"
            f"    >>> z = chunkflow.array(data, chunks=(2, 2))\n{example}")


@renamed_parameters(chunks="blocks", memory_limit="max_memory")
def percentile(source: ReductionSource, q: ArrayLike, *, axis: AxisArg = None, method: str = "linear",
               selection: Selection = Ellipsis, blocks: BlockChunks = None,
               max_memory: int | str | None = None, scheduler: SchedulerLike = None,
               progress: ProgressArg = False, compute: bool = True,
               storage_options: Mapping[str, Any] | None = None) -> Any:
    _check_call(axis, method, "percentile")
    if axis is not None:
        return _per_axis(percentile, source, axis, compute, dict(q=q, selection=selection,
                         blocks=blocks, max_memory=max_memory, scheduler=scheduler,
                         progress=progress, storage_options=storage_options))
    return _quantile(source, q, percent=True, skip_nan=False, what="percentile",
                     selection=selection, blocks=blocks, max_memory=max_memory,
                     scheduler=scheduler, progress=progress, storage_options=storage_options,
                     compute=compute)


@renamed_parameters(chunks="blocks", memory_limit="max_memory")
def nanpercentile(source: ReductionSource, q: ArrayLike, *, axis: AxisArg = None, method: str = "linear",
                  selection: Selection = Ellipsis, blocks: BlockChunks = None,
                  max_memory: int | str | None = None, scheduler: SchedulerLike = None,
                  progress: ProgressArg = False, compute: bool = True,
                  storage_options: Mapping[str, Any] | None = None) -> Any:
    _check_call(axis, method, "nanpercentile")
    if axis is not None:
        return _per_axis(nanpercentile, source, axis, compute, dict(q=q, selection=selection,
                         blocks=blocks, max_memory=max_memory, scheduler=scheduler,
                         progress=progress, storage_options=storage_options))
    return _quantile(source, q, percent=True, skip_nan=True, what="nanpercentile",
                     selection=selection, blocks=blocks, max_memory=max_memory,
                     scheduler=scheduler, progress=progress, storage_options=storage_options,
                     compute=compute)


@renamed_parameters(chunks="blocks", memory_limit="max_memory")
def quantile(source: ReductionSource, q: ArrayLike, *, axis: AxisArg = None, method: str = "linear",
             selection: Selection = Ellipsis, blocks: BlockChunks = None,
             max_memory: int | str | None = None, scheduler: SchedulerLike = None,
             progress: ProgressArg = False, compute: bool = True,
             storage_options: Mapping[str, Any] | None = None) -> Any:
    _check_call(axis, method, "quantile")
    if axis is not None:
        return _per_axis(quantile, source, axis, compute, dict(q=q, selection=selection,
                         blocks=blocks, max_memory=max_memory, scheduler=scheduler,
                         progress=progress, storage_options=storage_options))
    return _quantile(source, q, percent=False, skip_nan=False, what="quantile",
                     selection=selection, blocks=blocks, max_memory=max_memory,
                     scheduler=scheduler, progress=progress, storage_options=storage_options,
                     compute=compute)


@renamed_parameters(chunks="blocks", memory_limit="max_memory")
def nanquantile(source: ReductionSource, q: ArrayLike, *, axis: AxisArg = None, method: str = "linear",
                selection: Selection = Ellipsis, blocks: BlockChunks = None,
                max_memory: int | str | None = None, scheduler: SchedulerLike = None,
                progress: ProgressArg = False, compute: bool = True,
                storage_options: Mapping[str, Any] | None = None) -> Any:
    _check_call(axis, method, "nanquantile")
    if axis is not None:
        return _per_axis(nanquantile, source, axis, compute, dict(q=q, selection=selection,
                         blocks=blocks, max_memory=max_memory, scheduler=scheduler,
                         progress=progress, storage_options=storage_options))
    return _quantile(source, q, percent=False, skip_nan=True, what="nanquantile",
                     selection=selection, blocks=blocks, max_memory=max_memory,
                     scheduler=scheduler, progress=progress, storage_options=storage_options,
                     compute=compute)


@renamed_parameters(chunks="blocks", memory_limit="max_memory")
def median(source: ReductionSource, *, axis: AxisArg = None, selection: Selection = Ellipsis,
           blocks: BlockChunks = None,
           max_memory: int | str | None = None, scheduler: SchedulerLike = None,
           progress: ProgressArg = False, compute: bool = True,
           storage_options: Mapping[str, Any] | None = None) -> Any:
    _check_call(axis, "linear", "median")
    if axis is not None:
        return _per_axis(median, source, axis, compute, dict(selection=selection,
                         blocks=blocks, max_memory=max_memory, scheduler=scheduler,
                         progress=progress, storage_options=storage_options))
    return _median(source, skip_nan=False, what="median", selection=selection, blocks=blocks,
                   max_memory=max_memory, scheduler=scheduler, progress=progress,
                   storage_options=storage_options, compute=compute)


@renamed_parameters(chunks="blocks", memory_limit="max_memory")
def nanmedian(source: ReductionSource, *, axis: AxisArg = None, selection: Selection = Ellipsis,
              blocks: BlockChunks = None,
              max_memory: int | str | None = None, scheduler: SchedulerLike = None,
              progress: ProgressArg = False, compute: bool = True,
              storage_options: Mapping[str, Any] | None = None) -> Any:
    _check_call(axis, "linear", "nanmedian")
    if axis is not None:
        return _per_axis(nanmedian, source, axis, compute, dict(selection=selection,
                         blocks=blocks, max_memory=max_memory, scheduler=scheduler,
                         progress=progress, storage_options=storage_options))
    return _median(source, skip_nan=True, what="nanmedian", selection=selection, blocks=blocks,
                   max_memory=max_memory, scheduler=scheduler, progress=progress,
                   storage_options=storage_options, compute=compute)


percentile.__doc__ = _document(
    "Exactly ``numpy.percentile(source[selection], q)``, in bounded memory.",
    "Percentages, 0 to 100.",
    "    >>> percentile(z, [0, 100])\n    array([nan, nan])\n"
    "    >>> float(percentile(z, 50, selection=(0,)))\n    1.5\n")
nanpercentile.__doc__ = _document(
    "Exactly ``numpy.nanpercentile(source[selection], q)``: NaN left out.",
    "Percentages, 0 to 100.",
    "    >>> nanpercentile(z, [0, 50, 100]).tolist()\n    [0.0, 6.0, 11.0]\n")
quantile.__doc__ = _document(
    "Exactly ``numpy.quantile(source[selection], q)``, in bounded memory.",
    "Quantiles, 0 to 1.",
    "    >>> quantile(z, [0.0, 0.5], selection=(2,)).tolist()\n    [8.0, 9.5]\n")
nanquantile.__doc__ = _document(
    "Exactly ``numpy.nanquantile(source[selection], q)``: NaN left out.",
    "Quantiles, 0 to 1.",
    "    >>> float(nanquantile(z, 0.5))\n    6.0\n")
median.__doc__ = _document(
    "Exactly ``numpy.median(source[selection])``, in bounded memory.", "",
    "    >>> print(median(z), median(z, selection=(0,)))\n    nan 1.5\n")
nanmedian.__doc__ = _document(
    "Exactly ``numpy.nanmedian(source[selection])``: NaN left out.", "",
    "    >>> float(nanmedian(z))\n    6.0\n")
