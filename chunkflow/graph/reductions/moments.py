"""Means and variances in one pass over the blocks, merged exactly for empty blocks.

Each block gives its count, its sum and the sum of its squared deviations from its own
mean (one numpy record per position kept); partial results merge by the parallel
formula of Chan, Golub and LeVeque (``M2 = M2_a + M2_b + n_a (mean_a - mean)^2 +
n_b (mean_b - mean)^2``), in which a part of no values contributes nothing at all: a
zero-size block, or one a selection cut away, never turns the answer into NaN.

Sums run in float64 (complex128 for complex data) whatever the input, as numpy's do for
integers; for float16 and float32 that is wider than numpy's own arithmetic (float32
for float16, float32 for float32), so a sum that overflows float32 on the way but not
in the end is finite here. The result has numpy's dtype (``numpy.mean``'s,
``numpy.var``'s), and is numpy's value up to the rounding of a sum (numpy's pairwise
sums run in another order): the tests bound the difference from the exact value by a
few units of the last place per value summed.

Examples
--------
>>> import dask.array as da
>>> x = da.from_array(np.arange(8.0), chunks=((1, 0, 0, 7),))
>>> records = moments(x, axis=None, every=4)
>>> float(statistic(records, "var", x.dtype).compute(scheduler="sync"))
5.25
"""

from __future__ import annotations

from functools import partial
from typing import Any

import dask.array as da
import numpy as np
from dask.array.utils import validate_axis

__all__ = ["STATISTICS", "accumulator", "moments", "statistic", "sum_dtype"]

#: The statistics :func:`statistic` computes.
STATISTICS = ("mean", "var", "std")
#: Deviations squared and summed at a time (float64: a 256 KiB buffer), when a whole
#: block is reduced: float64 temporaries of the block's size (8 bytes a value, twice)
#: are what a ``distributed`` worker, whose nanny pins glibc's ``mmap`` threshold with
#: ``MALLOC_TRIM_THRESHOLD_``, maps and faults in afresh for every block.
LEAF = 2**15


def accumulator(dtype: np.dtype[Any]) -> np.dtype[Any]:
    """The dtype sums run in: complex128 for complex data, float64 for the rest.

    >>> accumulator(np.dtype("f2")), accumulator(np.dtype("c8"))
    (dtype('float64'), dtype('complex128'))
    """
    return np.dtype(np.complex128 if dtype.kind == "c" else np.float64)


def sum_dtype(dtype: np.dtype[Any]) -> np.dtype[Any]:
    """numpy's dtype of ``numpy.sum`` over ``dtype`` (native byte order).

    >>> sum_dtype(np.dtype(">i2")), sum_dtype(np.dtype("u1")), sum_dtype(np.dtype("f2"))
    (dtype('int64'), dtype('uint64'), dtype('float16'))
    """
    return np.sum(np.zeros(1, dtype.newbyteorder("="))).dtype


def _record(dtype: np.dtype[Any]) -> np.dtype[Any]:
    # One record per position kept: count, sum, squared deviations from the part's mean.
    return np.dtype([("n", np.int64), ("total", accumulator(dtype)), ("m2", np.float64)])


def _squares(deviations: np.ndarray) -> np.ndarray:
    if deviations.dtype.kind == "c":
        return deviations.real * deviations.real + deviations.imag * deviations.imag
    return deviations * deviations


def _chunk(block: np.ndarray, axis: tuple[int, ...], keepdims: bool, *, spread: bool,
           computing_meta: bool = False) -> np.ndarray:
    """A block's record: its count, sum and (with ``spread``) squared deviations from
    its mean, along ``axis``."""
    if computing_meta:  # dask's probe of the output type
        return np.empty((0,) * block.ndim, _record(block.dtype))
    total = np.sum(block, axis=axis, dtype=accumulator(block.dtype), keepdims=True)
    count = int(np.prod([block.shape[a] for a in axis]))
    out = np.empty(total.shape, _record(block.dtype))
    out["n"] = count
    out["total"] = total
    if count == 0 or not spread:
        out["m2"] = 0.0
        return out
    with np.errstate(invalid="ignore", over="ignore"):
        if _in_leaves(block, axis):
            out["m2"] = _squared_deviations(block.reshape(-1), (total / count).reshape(()))
            return out
        deviations = np.subtract(block, total / count, dtype=total.dtype)
        out["m2"] = np.sum(_squares(deviations), axis=axis, keepdims=True)
    return out


def _in_leaves(block: np.ndarray, axis: tuple[int, ...]) -> bool:
    """Whether a block's squared deviations are summed in leaves: a C-contiguous block
    of real values larger than one leaf, reduced whole (numpy then sums it as one
    line, which the leaves follow)."""
    return (block.size > LEAF and block.dtype.kind != "c" and block.flags.c_contiguous
            and len(axis) == block.ndim)


def _squared_deviations(flat: np.ndarray, mean: np.ndarray) -> Any:
    """``numpy.sum((flat - mean) ** 2)`` (float64) bit for bit, in one buffer of
    :data:`LEAF` values.

    numpy sums a line pairwise: below 128 values in eight running sums, above by
    halves whose first has a multiple of 8 values. Splitting as numpy does down to
    leaves of :data:`LEAF` values, and summing each leaf with numpy, adds the same
    numbers in the same order.

    >>> values = np.random.default_rng(0).normal(size=100_003)
    >>> whole = np.sum((values - values.mean()) ** 2)
    >>> bool(_squared_deviations(values, values.mean()) == whole)
    True
    """
    scratch = np.empty(min(flat.size, LEAF), np.float64)
    return _pairwise(flat, mean, scratch, 0, flat.size)


def _pairwise(flat: np.ndarray, mean: np.ndarray, scratch: np.ndarray, start: int,
              n: int) -> Any:
    """The squared deviations of ``flat[start:start + n]`` summed as numpy splits them.

    A module function, not a closure: a nested function that calls itself is a
    reference cycle, which kept each block's scratch buffer alive until the garbage
    collector ran (a 32 MiB reduction under a 4 MiB budget peaked at 64 MiB)."""
    if n <= LEAF:
        leaf = scratch[:n]
        np.subtract(flat[start:start + n], mean, out=leaf, dtype=np.float64)
        np.multiply(leaf, leaf, out=leaf)
        return np.add.reduce(leaf)
    half = n // 2
    half -= half % 8
    return (_pairwise(flat, mean, scratch, start, half)
            + _pairwise(flat, mean, scratch, start + half, n - half))


def _merge(parts: np.ndarray, axis: tuple[int, ...]) -> np.ndarray:
    """The record of all ``parts`` together (records side by side along ``axis``)."""
    counts, totals = parts["n"], parts["total"]
    out = np.empty(np.sum(counts, axis=axis, keepdims=True).shape, parts.dtype)
    out["n"] = np.sum(counts, axis=axis, keepdims=True)
    out["total"] = np.sum(totals, axis=axis, keepdims=True)
    with np.errstate(invalid="ignore", divide="ignore", over="ignore"):
        mean = out["total"] / out["n"]
        # A part of no values has no mean: its term is exactly zero, not 0 * NaN.
        spread = np.where(counts > 0, _squares(totals / counts - mean) * counts, 0.0)
        out["m2"] = np.sum(parts["m2"], axis=axis, keepdims=True) + \
            np.sum(spread, axis=axis, keepdims=True)
    return out


def _combine(parts: np.ndarray, axis: tuple[int, ...], keepdims: bool) -> np.ndarray:
    merged = _merge(parts, axis)
    return merged if keepdims else merged.squeeze(axis=axis)


def _finish(records: np.ndarray, *, statistic: str, ddof: float,
            dtype: np.dtype[Any]) -> np.ndarray:
    """numpy's mean, var or std from merged records (in numpy's dtype)."""
    counts = records["n"]
    with np.errstate(invalid="ignore", divide="ignore", over="ignore"):
        if statistic == "mean":
            value = records["total"] / counts
        else:
            # numpy's divisor: max(n - ddof, 0), so that too large a ddof gives inf or NaN.
            value = records["m2"] / np.maximum(counts - ddof, 0)
            if statistic == "std":
                value = np.sqrt(value)
        result = np.asarray(value).astype(dtype)
    return result[()] if result.ndim == 0 else result  # a scalar, as numpy's


def moments(x: da.Array, axis: int | tuple[int, ...] | None, every: int,
            spread: bool = True) -> da.Array:
    """The merged records of ``x`` along ``axis``: count, sum and (with ``spread``)
    squared deviations from the mean, one record per result position (a lazy dask
    array); :func:`statistic` turns them into numpy's mean, var or std.

    ``every`` is the number of partial results one combine step merges.
    """
    record = _record(x.dtype)
    axes = tuple(range(x.ndim)) if axis is None else tuple(
        validate_axis(a, x.ndim) for a in ((axis,) if isinstance(axis, int) else axis))
    # keepdims=True, the reduced axes dropped after: dask 2025.1 makes a 0-d result's
    # meta with meta.sum(), which numpy has no loop for on records.
    kept = da.reduction(x, partial(_chunk, spread=spread), _combine, combine=_combine,
                        axis=axes, dtype=record, split_every=every, concatenate=True,
                        keepdims=True, meta=np.empty((0,) * x.ndim, record))
    return kept[tuple(0 if dim in axes else slice(None) for dim in range(x.ndim))]


def statistic(records: da.Array, name: str, dtype: np.dtype[Any], ddof: float = 0) -> da.Array:
    """numpy's ``mean``, ``var`` or ``std`` (``name``) from :func:`moments` of data of
    ``dtype``, in numpy's result dtype."""
    native = np.zeros(1, dtype.newbyteorder("="))
    result = getattr(np, name)(native).dtype
    return da.map_blocks(partial(_finish, statistic=name, ddof=ddof, dtype=result), records,
                         dtype=result, meta=np.empty((), result))
