"""Histograms of 8- and 16-bit integers in one pass: how often each value occurs.

An integer of one or two bytes has at most 65,536 values, so a block's counts per value
(:func:`np.bincount <numpy.bincount>` of its bit patterns) are a short array, and the
sum of the blocks' counts holds everything a histogram of the whole array needs: its
minimum and maximum (the first and last value that occurs) and, through numpy's own
binning of each value that occurs (:func:`histogram_of_values`), numpy's counts.

That is one pass where bins from the data need two (the range, then the counts), and
``bincount`` counts 3-4 times faster than ``numpy.histogram`` bins (which works in
float64 temporaries of 64 Ki values: 512 KiB each, the size that a ``distributed``
worker, whose nanny pins glibc's ``mmap`` threshold with ``MALLOC_TRIM_THRESHOLD_``,
maps and faults in afresh every time; that made histograms 3x slower on a cluster than
on threads).

Examples
--------
>>> import numpy as np
>>> data = np.array([[3, -2, 3], [7, 7, 7]], dtype="i1")
>>> per_value = value_counts(data)
>>> value_range(per_value, data.dtype)
(np.int8(-2), np.int8(7))
>>> histogram_of_values(per_value, data.dtype, 3, (-2, 7)).tolist()
[1, 2, 3]
>>> np.histogram(data, 3, (-2, 7))[0].tolist()
[1, 2, 3]
"""

from __future__ import annotations

from typing import Any

import numpy as np

__all__ = ["PIECE", "counts_by_value", "histogram_of_values", "value_counts", "value_range"]

#: Values counted at a time: the bit patterns are widened to ``intp`` (what bincount
#: counts) in a buffer of this many (8 MiB), whatever the block's size.
PIECE = 2**20


def counts_by_value(dtype: np.dtype[Any]) -> bool:
    """Whether a histogram of ``dtype`` is counted per value (integers of 1 or 2 bytes).

    >>> counts_by_value(np.dtype("u2")), counts_by_value(np.dtype("i4")), counts_by_value(np.dtype("f2"))
    (True, False, False)
    """
    return dtype.kind in "iu" and dtype.itemsize <= 2


def _patterns(dtype: np.dtype[Any]) -> np.dtype[Any]:
    """The unsigned integer of ``dtype``'s size and byte order: its bit patterns."""
    return np.dtype(f"u{dtype.itemsize}").newbyteorder(dtype.byteorder)


def value_counts(block: np.ndarray) -> np.ndarray:
    """How often each bit pattern of ``block`` (1- or 2-byte integers) occurs: int64
    counts indexed by the pattern read as an unsigned integer (256 or 65,536 of them)."""
    flat = block.reshape(-1).view(_patterns(block.dtype))
    size = 1 << (8 * block.dtype.itemsize)
    counts = np.zeros(size, np.int64)
    # One widened buffer reused for every piece: bincount would widen the whole block
    # (8 bytes a value) in a temporary of its own.
    scratch = np.empty(min(flat.size, PIECE), np.intp)
    for start in range(0, flat.size, PIECE):
        part = flat[start:start + PIECE]
        wide = scratch[:part.size]
        np.copyto(wide, part)
        counts += np.bincount(wide, minlength=size)
    return counts


def _values(dtype: np.dtype[Any]) -> np.ndarray:
    """Every value of ``dtype`` (native order), indexed by its bit pattern."""
    size = 1 << (8 * dtype.itemsize)
    return np.arange(size, dtype=f"u{dtype.itemsize}").view(dtype.newbyteorder("="))


def value_range(per_value: np.ndarray, dtype: np.dtype[Any]) -> tuple[Any, Any]:
    """The smallest and largest value that occurs, as scalars of ``dtype`` (native order),
    as ``a.min()`` and ``a.max()`` give them. At least one value must occur."""
    present = _values(dtype)[per_value > 0]
    return present.min(), present.max()


def histogram_of_values(per_value: np.ndarray, dtype: np.dtype[Any], bins: Any,
                        range: Any) -> np.ndarray:
    """numpy's counts of the values ``per_value`` counts, as int64.

    numpy bins each value that occurs (an array of ``dtype``, as the data) and adds its
    count as a weight: numpy decides a value's bin from the value, the bins, the range
    and the dtype alone, so these are ``numpy.histogram(data, bins, range)``'s counts.
    Integer weights add up exactly (as float64, below 2**53 values).
    """
    occurs = np.flatnonzero(per_value)
    values = _values(dtype)[occurs]
    return np.histogram(values, bins=bins, range=range,
                        weights=per_value[occurs])[0].astype(np.int64)
