"""Histograms per channel: :func:`numpy.histogram` of each index of the axes kept.

``histogram(x, bins, axis=(1, 2, 3))`` of a ``czyx`` image counts the values of each
channel apart: ``counts[c], edges[c] == numpy.histogram(x[c], bins)``. The axes not in
``axis`` are kept (in their order) and lead the result: counts of shape
``(*kept, nbins)``, edges of shape ``(*kept, nbins + 1)``. Without ``range`` each
channel's edges span its own minimum and maximum, as numpy's do.

Each block is counted by numpy, index by index of the kept axes, against the edges of
that index, so the counts add up to numpy's over each channel.

Examples
--------
>>> import dask.array as da
>>> import numpy as np
>>> data = np.arange(2 * 5 * 4, dtype="u2").reshape(2, 5, 4)
>>> counts, edges = histogram_along(da.from_array(data, chunks=(1, 2, 3)), 4, None, (1, 2))
>>> all(np.array_equal(counts[c], np.histogram(data[c], 4)[0]) for c in range(2))
True
>>> edges[1].tolist()
[20.0, 24.75, 29.5, 34.25, 39.0]
"""

from __future__ import annotations

import builtins
from functools import partial
from typing import Any

import dask.array as da
import numpy as np

from chunkflow.errors import InvalidArgumentError

__all__ = ["histogram_along", "kept_axes"]


def kept_axes(axis: Any, ndim: int) -> tuple[tuple[int, ...], tuple[int, ...]]:
    """(reduced, kept) axes of ``axis=`` (an int or a tuple, negative counted from the
    end), refused as numpy refuses a bad ``axis``.

    Examples
    --------
    >>> kept_axes((1, -1), 4), kept_axes(0, 2)
    (((1, 3), (0, 2)), ((0,), (1,)))
    """
    listed = list(axis) if isinstance(axis, (tuple, list)) else [axis]
    reduced = []
    for a in listed:
        if not isinstance(a, (int, np.integer)) or isinstance(a, bool):
            raise InvalidArgumentError(f"histogram: axis={axis!r} must be an int or a tuple "
                                       "of ints")
        if not -ndim <= a < ndim:
            raise np.exceptions.AxisError(int(a), ndim)
        reduced.append(int(a) % ndim)
    if len(set(reduced)) != len(reduced):
        raise InvalidArgumentError(f"duplicate value in 'axis': {axis!r} names an axis twice")
    return tuple(sorted(reduced)), tuple(d for d in range(ndim) if d not in reduced)


def _edges(dtype: np.dtype, bins: Any, bounds: Any) -> np.ndarray:
    return np.histogram_bin_edges(np.empty(0, dtype), bins=bins, range=bounds)


def _block_counts(block: np.ndarray, *, ranges: np.ndarray | None, bins: Any, range: Any,
                  nkept: int, nbins: int, block_info: Any = None) -> np.ndarray:
    """Counts of each kept index of ``block`` (kept axes first), shaped
    ``(*kept, 1, ..., 1, nbins)`` for the sum over the reduced axes."""
    starts = [lo for lo, _ in block_info[0]["array-location"][:nkept]] if block_info else []
    kept_shape = block.shape[:nkept]
    out = np.zeros((*kept_shape, *(1,) * (block.ndim - nkept), nbins), np.int64)
    for index in np.ndindex(*kept_shape):
        bounds = range
        if ranges is not None:
            where = tuple(s + i for s, i in zip(starts, index))
            bounds = (ranges[where][0], ranges[where][1])
        counts = np.histogram(block[index], bins=bins, range=bounds)[0]
        out[index] = counts.reshape((1,) * (block.ndim - nkept) + (nbins,))
    return out


def histogram_along(x: da.Array, bins: Any, range: Any, axis: Any, scheduler: Any = None,
                    progress: Any = False) -> tuple[np.ndarray, np.ndarray]:
    """Counts (int64) and edges of each index of the axes not in ``axis``."""
    from chunkflow.graph.scheduler import compute as run

    reduced, kept = kept_axes(axis, x.ndim)
    x = x.transpose(kept + reduced)
    tail = tuple(builtins.range(len(kept), x.ndim))  # the reduced axes, after the move
    kept_shape = x.shape[:len(kept)]
    empty = any(x.shape[d] == 0 for d in tail)
    ranges: np.ndarray | None = None
    if range is None and np.ndim(bins) == 0 and not empty and x.size:
        # numpy takes a.min() and a.max() of each channel in the array's dtype.
        low, high = run(x.min(axis=tail), x.max(axis=tail), scheduler=scheduler,
                        progress=progress)
        low, high = np.asarray(low, x.dtype), np.asarray(high, x.dtype)
        bad = ~(np.isfinite(low) & np.isfinite(high))
        if bad.any():
            where = tuple(int(i) for i in np.argwhere(bad)[0])
            raise InvalidArgumentError(
                f"histogram: autodetected range of [{low[where]}, {high[where]}] at index "
                f"{where} of the axes kept is not finite (as numpy says); pass range=")
        ranges = np.stack([low, high], axis=-1)
    edges_of = np.empty((*kept_shape,), object)
    for index in np.ndindex(*kept_shape):
        bounds = range if ranges is None else (ranges[index][0], ranges[index][1])
        edges_of[index] = _edges(x.dtype, bins, bounds)
    first = _edges(x.dtype, bins, range if ranges is None else None) if not edges_of.size \
        else edges_of[(0,) * len(kept_shape)]
    nbins = len(first) - 1
    edges = (np.stack(list(edges_of.ravel())).reshape(*kept_shape, nbins + 1)
             if edges_of.size else np.empty((*kept_shape, nbins + 1), first.dtype))
    if empty or not x.size:
        return np.zeros((*kept_shape, nbins), np.int64), edges
    block_bins = first if np.ndim(bins) else bins
    counted = da.map_blocks(
        # ``ranges`` in the partial: a numpy argument would be cut into blocks by dask.
        partial(_block_counts, ranges=ranges, bins=block_bins, range=range, nkept=len(kept),
                nbins=nbins),
        x, dtype=np.int64, new_axis=x.ndim,
        chunks=(*x.chunks[:len(kept)], *((1,) * len(c) for c in x.chunks[len(kept):]),
                (nbins,)))
    (counts,) = run(counted.sum(axis=tail, dtype=np.int64), scheduler=scheduler,
                    progress=progress)
    return np.asarray(counts, np.int64), edges

