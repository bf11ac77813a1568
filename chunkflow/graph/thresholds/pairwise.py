"""numpy's sum of a float array, bit for bit, from the blocks of a chunked array.

``numpy.sum`` of a contiguous float array is a *pairwise* sum (numpy's
``pairwise_sum``): a run of ``n > 128`` values is split at ``n2 = n // 2`` rounded
down to a multiple of 8 and the two halves' sums are added; a run of 8 to 128 values
is summed with 8 running sums, combined as ``((r0 + r1) + (r2 + r3)) + ((r4 + r5) +
(r6 + r7))``, then the remaining values one by one; fewer than 8, one by one from 0.
The result is ``0 + pairwise_sum(values)``. A sum that casts its input (float16 in
float32, a byte order not the machine's) runs through numpy's buffers of 8192 values:
each buffer's pairwise sum is added in turn to a running total from 0.

The tree depends only on the number of values, so the sum of the values ``x[lo:hi]``
of a longer sequence is known once the sequence's length is: each block of a chunked
array, given where its values start in the whole sequence (a first pass counts them),
sums the largest tree nodes inside its range with numpy itself
(``numpy.add.reduce(part, initial=-0.0)`` is exactly ``pairwise_sum(part)``) and hands
over the values of the at most two leaves (128 values or fewer) it shares with its
neighbours; the tree's few remaining nodes are added here, in numpy's order. Blocks
must hold C-order runs of the array (:func:`c_order_blocks`).

Examples
--------
>>> import numpy as np
>>> values = np.random.default_rng(0).random(1000, dtype="f4")
>>> parts = [block_parts(values[a:b], a, 1000, False) for a, b in [(0, 300), (300, 1000)]]
>>> bool(assemble(parts, 1000, np.dtype("f4"), False) == np.sum(values))
True
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import dask.array as da
import numpy as np

__all__ = ["assemble", "block_parts", "buffered", "c_order_blocks", "numpy_mean"]

#: numpy's PW_BLOCKSIZE: runs of at most this many values are not split.
LEAF = 128
#: numpy's default buffer size (``numpy.getbufsize()``), in values.
BUFFER = 8192

Part = tuple[str, int, int, Any]  # ("node" | "piece", offset, size, sum | (start, values))


def buffered(dtype: np.dtype) -> bool:
    """Whether numpy's sum of ``dtype`` casts through buffers: float16 (summed in
    float32) and a byte order not the machine's."""
    return dtype.itemsize == 2 or not dtype.isnative


def accumulator(dtype: np.dtype) -> np.dtype:
    """The dtype numpy sums ``dtype`` in (float32 for float16), native."""
    return np.dtype(np.float32) if dtype.itemsize == 2 else dtype.newbyteorder("=")


def _half(size: int) -> int:
    n2 = size // 2
    return n2 - n2 % 8


def _roots(total: int, lo: int, hi: int, cast: bool) -> list[tuple[int, int]]:
    """The trees (offset, size) whose ranges meet ``[lo, hi)``: one, or numpy's buffers."""
    if not cast:
        return [(0, total)]
    first, last = lo // BUFFER, (hi - 1) // BUFFER
    return [(k * BUFFER, min(BUFFER, total - k * BUFFER)) for k in range(first, last + 1)]


def _cover(offset: int, size: int, lo: int, hi: int, found: list[tuple[str, int, int]]) -> None:
    """The largest nodes of the tree at (offset, size) inside ``[lo, hi)``, and the
    leaves that only meet it, in order."""
    end = offset + size
    if end <= lo or offset >= hi:
        return
    if lo <= offset and end <= hi:
        found.append(("node", offset, size))
    elif size <= LEAF:
        found.append(("piece", offset, size))
    else:
        n2 = _half(size)
        _cover(offset, n2, lo, hi, found)
        _cover(offset + n2, size - n2, lo, hi, found)


def _pairwise(values: np.ndarray, dtype: np.dtype) -> Any:
    # initial=-0.0 is the identity of every sum, -0.0 ones included: the result is
    # numpy's pairwise_sum itself (its 0 + ... comes once, in assemble).
    return np.add.reduce(values.astype(dtype, copy=False), initial=dtype.type(-0.0))


def block_parts(values: np.ndarray, lo: int, total: int, cast: bool) -> list[Part]:
    """What one block hands over of the sum of a sequence of ``total`` values:
    ``values`` are its ``[lo, lo + len(values))``.

    Each part is a node of numpy's tree with its sum, or a piece of a leaf with the
    values it has of it.
    """
    hi = lo + values.size
    if values.size == 0:
        return []
    dtype = accumulator(values.dtype)
    values = values.astype(dtype, copy=False)
    found: list[tuple[str, int, int]] = []
    for offset, size in _roots(total, lo, hi, cast):
        _cover(offset, size, lo, hi, found)
    parts: list[Part] = []
    for kind, offset, size in found:
        start, stop = max(offset, lo), min(offset + size, hi)
        part = values[start - lo:stop - lo]
        parts.append((kind, offset, size, _pairwise(part, dtype) if kind == "node"
                      else (start, part.copy())))
    return parts


def assemble(blocks: Sequence[list[Part]], total: int, dtype: np.dtype, cast: bool) -> Any:
    """numpy's sum (in ``dtype``, the accumulator) of the sequence of ``total`` values
    whose blocks handed over ``blocks``, in their order."""
    acc = accumulator(dtype)
    known: dict[tuple[int, int], Any] = {}
    pieces: dict[tuple[int, int], list[tuple[int, np.ndarray]]] = {}
    for parts in blocks:
        for kind, offset, size, value in parts:
            if kind == "node":
                known[(offset, size)] = value
            else:
                pieces.setdefault((offset, size), []).append(value)

    def node(offset: int, size: int) -> Any:
        if (offset, size) in known:
            return known[(offset, size)]
        if size <= LEAF:
            ordered = sorted(pieces[(offset, size)], key=lambda p: p[0])
            return _pairwise(np.concatenate([p[1] for p in ordered]), acc)
        n2 = _half(size)
        return node(offset, n2) + node(offset + n2, size - n2)

    result = acc.type(0)
    for offset, size in (_roots(total, 0, total, cast) if total else []):
        result = result + node(offset, size)
    return result


def numpy_mean(total: Any, count: int, dtype: np.dtype) -> Any:
    """``numpy.mean``'s value from numpy's sum ``total`` of ``count`` values of ``dtype``:
    the sum divided by the count (an intp, so float32 divides in float64), in ``dtype``."""
    with np.errstate(divide="ignore", invalid="ignore"):
        return dtype.newbyteorder("=").type(total / np.intp(count))


def c_order_blocks(x: da.Array, values: int) -> da.Array:
    """``x`` in blocks that are C-order runs of about ``values`` values: one along the
    leading axes, whole along the trailing ones.

    Examples
    --------
    >>> c_order_blocks(da.zeros((6, 5, 4), chunks=2), 40).chunks
    ((2, 2, 2), (5,), (4,))
    >>> c_order_blocks(da.zeros((6, 5, 4), chunks=2), 8).chunks[:2]
    ((1, 1, 1, 1, 1, 1), (2, 2, 1))
    """
    if x.ndim == 0:
        return x
    values = max(1, int(values))
    axis = 0
    while axis < x.ndim - 1 and math.prod(x.shape[axis + 1:]) > values:
        axis += 1
    inner = math.prod(x.shape[axis + 1:])
    step = max(1, values // max(1, inner))
    chunks = tuple([1] * axis + [min(step, max(1, x.shape[axis]))] + list(x.shape[axis + 1:]))
    return x.rechunk(chunks)
