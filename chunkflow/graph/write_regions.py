"""Where a ``store`` writes: unit-step regions, and write blocks whose inner edges fall
on the target's chunk edges, with the source blocks that fill each one.
"""

from __future__ import annotations

import bisect
import itertools
from collections.abc import Sequence
from typing import Any

from chunkflow.core.array import Array
from chunkflow.errors import InvalidSelectionError

__all__ = ["DimPiece", "aligned_edges", "block_edges", "dim_pieces", "unit_region"]

# One dimension of a piece: (source block index, slice in that block, slice in the
# write block).
DimPiece = tuple[int, slice, slice]


def aligned_edges(start: int, stop: int, chunk: int, per_block: int) -> list[int]:
    """Edges (relative to ``start``) of write blocks covering ``[start, stop)``.

    Inner edges fall on multiples of ``chunk * per_block`` in absolute coordinates,
    so each chunk lies in exactly one block; only the first and last block can be cut
    by the region's own edges.

    Examples
    --------
    >>> aligned_edges(0, 10, chunk=4, per_block=1)
    [0, 4, 8, 10]
    >>> aligned_edges(3, 13, chunk=4, per_block=2)
    [0, 5, 10]
    >>> aligned_edges(5, 5, chunk=4, per_block=1)
    [0]
    """
    step = chunk * per_block
    first_inner = (start // step + 1) * step
    inner = range(first_inner, stop, step)
    return [0, *(edge - start for edge in inner), stop - start] if stop > start else [0]


def block_edges(sizes: Sequence[int]) -> list[int]:
    """Edges of consecutive blocks of ``sizes``: ``[0, s0, s0 + s1, ...]``."""
    return [0, *itertools.accumulate(sizes)]


def dim_pieces(source_edges: list[int], lo: int, hi: int) -> list[DimPiece]:
    """Source blocks overlapping ``[lo, hi)`` along one dimension, as slices."""
    pieces = []
    k = bisect.bisect_right(source_edges, lo) - 1
    while k < len(source_edges) - 1 and source_edges[k] < hi:
        first, last = max(lo, source_edges[k]), min(hi, source_edges[k + 1])
        pieces.append(
            (k, slice(first - source_edges[k], last - source_edges[k]),
             slice(first - lo, last - lo))
        )
        k += 1
    return pieces


def unit_region(region: Any, array: Array, what: str) -> tuple[slice, ...]:
    """``region`` (``None``, a slice or a tuple of slices) as unit-step slices, one per
    dimension of ``array``; ``what`` names the caller in errors ("store", "rechunk").

    Examples
    --------
    >>> import chunkflow
    >>> unit_region((slice(2, None),), chunkflow.zeros((4, 6), chunks=2), "store")
    (slice(2, 4, None), slice(0, 6, None))
    """
    name = array.path or "/"
    entries = () if region is None else region if isinstance(region, tuple) else (region,)
    if len(entries) > array.ndim or any(not isinstance(s, slice) for s in entries):
        raise InvalidSelectionError(
            f"{what}: array {name!r}: selection= must be a tuple of at most {array.ndim} "
            f"slices, got {region!r}"
        )
    entries = entries + (slice(None),) * (array.ndim - len(entries))
    normalized = []
    for dim, (entry, size) in enumerate(zip(entries, array.shape)):
        start, stop, step = entry.indices(size)
        if step != 1:
            raise InvalidSelectionError(
                f"{what}: array {name!r}: selection= slices need unit steps, got {entry!r} for "
                f"axis {dim}"
            )
        normalized.append(slice(start, max(start, stop)))
    return tuple(normalized)
