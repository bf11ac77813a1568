"""Block plans: where the blocks of a dask array over a selection begin and end.

A basic selection (integers, slices with any step, Ellipsis) of an array becomes one
:class:`DimBlocks` per dimension. Block edges fall on the edges of the array's chunks
(for a sharded array, of its shards: the unit chunkflow reads and writes); blocks may
hold several whole chunks (``per_block``), and only the first and last block of a
dimension can be cut by the selection's own ends. Everything here is arithmetic over
the blocks of one dimension at a time (numpy over block indices), never over chunks of
the whole grid, so plans for grids of 10**12 chunks are as cheap as for 10.

Examples
--------
>>> plan = dim_blocks((100, 100), (10, 10), (slice(5, 35), 7), per_block=(2, None))
>>> [dim.chunks for dim in plan if dim.kept]
[(15, 15)]
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from chunkflow.errors import BoundsCheckError, InvalidSelectionError
from chunkflow.indexing import expand_ellipsis

if TYPE_CHECKING:
    from chunkflow.indexing import Selection

__all__ = [
    "DimBlocks",
    "auto_per_block",
    "block_counts",
    "canonical_selection",
    "compose_selection",
    "default_per_block",
    "dim_blocks",
    "normalize_selection",
]


@dataclass(frozen=True)
class DimBlocks:
    """One dimension of a selection: an integer, or a slice cut into blocks.

    Attributes
    ----------
    index : int or None
        The integer selecting this dimension (which the result drops), else ``None``.
    start, step, length : int
        The slice: output element ``i`` is array element ``start + i * step``.
    chunks : tuple of int
        The block sizes along this dimension (dask's ``chunks`` entry).
    span : int
        Array elements per block (chunk size times chunks per block): with ``start``,
        ``step`` and ``length`` it determines ``chunks``, so it names the plan.
    edges : tuple of int
        Where the blocks start in the output, and the output length last.
    """

    index: int | None
    start: int = 0
    step: int = 1
    length: int = 0
    chunks: tuple[int, ...] = ()
    span: int = 0
    edges: tuple[int, ...] = (0,)

    @property
    def token(self) -> tuple[int | None, int, int, int, int]:
        """A small value that determines this plan (for deterministic task names)."""
        return (self.index, self.start, self.step, self.length, self.span)

    @property
    def kept(self) -> bool:
        """Whether the result keeps this dimension (a slice, not an integer)."""
        return self.index is None

    def array_slice(self, lo: int, hi: int) -> slice:
        """The array slice holding output elements ``lo:hi`` of this dimension.

        Examples
        --------
        >>> DimBlocks(None, start=9, step=-3, length=4, chunks=(4,)).array_slice(1, 4)
        slice(6, None, -3)
        """
        if hi <= lo:
            return slice(0, 0)  # an empty block: start may lie outside the array
        first = self.start + lo * self.step
        stop = self.start + hi * self.step
        return slice(first, stop if stop >= 0 else None, self.step)


def _as_slice(positions: range) -> slice:
    """The array slice of the (in-range) ``positions``.

    An empty range may have its start and stop outside the array (``range(7, -1,
    -1)[10:2]`` is ``range(-1, 5, -1)``), where a slice would wrap them round: it
    becomes ``slice(0, 0)``. A non-empty one starts on an element; only a stop below 0
    (stepping down past element 0) must become ``None``.
    """
    if not positions:
        return slice(0, 0, 1)
    stop = positions.stop
    return slice(positions.start, stop if stop >= 0 else None, positions.step)


def compose_selection(dims: Sequence[DimBlocks], selection: Selection) -> tuple[int | slice, ...]:
    """The array selection equal to ``array[planned selection][selection]``.

    ``selection`` is a basic selection of the planned result (its kept dimensions).

    Examples
    --------
    >>> dims = dim_blocks((100, 100), (10, 10), (slice(90, 10, -2), 3), per_block=(1, 1))
    >>> compose_selection(dims, slice(1, 4))
    (slice(88, 82, -2), 3)
    >>> compose_selection(dims, -1)
    (12, 3)

    An empty range stays empty (its ends may lie outside the array):

    >>> reverse = dim_blocks((8,), (2,), slice(None, None, -1), per_block=(1,))
    >>> compose_selection(reverse, slice(10, 2))
    (slice(0, 0, 1),)
    """
    kept = [dim for dim in dims if dim.kept]
    inner = iter(normalize_selection(selection, [dim.length for dim in kept]))
    composed: list[int | slice] = []
    for dim in dims:
        if not dim.kept:
            composed.append(dim.index)  # type: ignore[arg-type]  # a dimension not kept has an int index
            continue
        positions = range(dim.start, dim.start + dim.length * dim.step, dim.step)
        entry = next(inner)
        if isinstance(entry, slice):
            composed.append(_as_slice(positions[entry]))
        else:
            composed.append(positions[entry])
    return tuple(composed)


def canonical_selection(selection: Selection, shape: Sequence[int]) -> tuple[int | slice, ...]:
    """``selection`` in its plainest form for an array of ``shape``: one entry per
    dimension, integers in range and non-negative, and slices that start on an element
    and stop past the last one (``slice(0, 0)`` when empty).

    dask's getitem misreads negative-step slices that start before the first element
    (dask issue 10555, open in dask 2026.8: ``x[-7::-1]`` of 5 elements gives 5,
    numpy none); it reads these right.

    Examples
    --------
    >>> canonical_selection((slice(-7, None, -1), -1), (5, 3))
    (slice(0, 0, 1), 2)
    >>> canonical_selection(slice(None, None, -2), (5,))
    (slice(4, None, -2),)
    """
    return tuple(_as_slice(range(*entry.indices(size))) if isinstance(entry, slice) else entry
                 for entry, size in zip(normalize_selection(selection, shape), shape))


def normalize_selection(selection: Selection, shape: Sequence[int]) -> tuple[int | slice, ...]:
    """One integer (in range, non-negative) or slice per dimension.

    Raises
    ------
    InvalidSelectionError
        For anything but integers, slices and one Ellipsis, or too many entries.
    BoundsCheckError
        For an integer outside its dimension.

    Examples
    --------
    >>> normalize_selection((Ellipsis, -1), (4, 5, 6))
    (slice(None, None, None), slice(None, None, None), 5)
    """
    entries = expand_ellipsis(selection, tuple(shape), taken=_one_dim)
    out: list[int | slice] = []
    for dim, (entry, size) in enumerate(zip(entries, shape)):
        if isinstance(entry, slice):
            out.append(entry)
        elif isinstance(entry, (int, np.integer)) and not isinstance(entry, (bool, np.bool_)):
            index = int(entry) + (size if entry < 0 else 0)
            if not 0 <= index < size:
                raise BoundsCheckError(
                    f"index {int(entry)} is out of bounds for dimension {dim} of size {size}"
                )
            out.append(index)
        else:
            raise InvalidSelectionError(
                f"selection entry {entry!r} (dimension {dim}): expected an integer, a slice "
                "or Ellipsis; use z.oindex/z.vindex for arrays of indices"
            )
    return tuple(out)


def _one_dim(entry: object) -> int:
    return 1  # None and arrays are refused below, one dimension each


def _edges(start: int, step: int, length: int, span: int) -> np.ndarray:
    """Output positions where the array crosses a multiple of ``span`` (block edges).

    No block is empty (dask answers wrongly around empty blocks), unless the whole
    selection is: then there is one empty block, as dask has. A step of at least
    ``span`` puts every element in a span of its own, so every element is a block;
    a shorter step leaves an element in every span between the first and the last,
    so each crossing is a block edge. Either way the cost is one entry per block,
    never one per span the step skips.
    """
    if length == 0:
        return np.zeros(2, dtype=np.int64)  # one empty block, as dask has
    if abs(step) >= span:
        return np.arange(length + 1, dtype=np.int64)
    last = start + (length - 1) * step
    if step > 0:
        groups = np.arange(start // span + 1, last // span + 1, dtype=np.int64)
        inner = -((start - groups * span) // step)  # ceil((g*span - start) / step)
    else:
        groups = np.arange(start // span, last // span, -1, dtype=np.int64)
        inner = (start - groups * span) // -step + 1
    return np.concatenate([[0], inner, [length]]).astype(np.int64)


def _dim_blocks(entry: int | slice, size: int, chunk: int, per_block: int | None) -> DimBlocks:
    if not isinstance(entry, slice):
        return DimBlocks(entry)
    start, stop, step = entry.indices(size)
    if step == 0:
        raise InvalidSelectionError("slice step cannot be zero")
    length = len(range(start, stop, step))
    span = chunk * max(1, per_block or 1)
    edges = _edges(start, step, length, span)
    # tolist(): one C call, where a generator of ints costs 0.2 s per million blocks.
    chunks = tuple(np.diff(edges).tolist()) or (0,)
    return DimBlocks(None, start, step, length, chunks, span, tuple(edges.tolist()))


def dim_blocks(
    shape: Sequence[int],
    chunks: Sequence[int],
    selection: Selection,
    per_block: Sequence[int | None],
) -> tuple[DimBlocks, ...]:
    """Plan every dimension of ``selection`` over an array of ``shape`` and ``chunks``.

    ``per_block[d]`` is how many chunks of dimension ``d`` a block spans.

    Examples
    --------
    >>> plan = dim_blocks((10,), (4,), (slice(None, None, -1),), per_block=(1,))
    >>> plan[0].chunks, plan[0].array_slice(0, 2)
    ((2, 4, 4), slice(9, 7, -1))

    A step that skips chunks makes a block of each element, none empty:

    >>> dim_blocks((6,), (1,), slice(None, None, 2), per_block=(1,))[0].chunks
    (1, 1, 1)
    """
    normalized = normalize_selection(selection, shape)
    return tuple(
        _dim_blocks(entry, size, chunk, k)
        for entry, size, chunk, k in zip(normalized, shape, chunks, per_block)
    )


def auto_per_block(
    shape: Sequence[int],
    chunks: Sequence[int],
    selection: Selection,
    itemsize: int,
    target_bytes: int,
) -> tuple[int, ...]:
    """How many whole chunks per dimension make blocks of about ``target_bytes``.

    Blocks grow by doubling the dimension whose block is shortest (so they stay
    roughly square), as long as a block stays within ``target_bytes``.

    Examples
    --------
    >>> auto_per_block((4096, 4096), (256, 256), (), itemsize=2, target_bytes=2**21)
    (4, 4)
    """
    normalized = normalize_selection(selection, shape)
    extents: list[int] = []  # output elements one chunk gives, per dimension
    limits: list[int] = []  # output length, per dimension
    for entry, size, chunk in zip(normalized, shape, chunks):
        if isinstance(entry, slice):
            start, stop, step = entry.indices(size)
            extents.append(max(1, math.ceil(chunk / abs(step))))
            limits.append(len(range(start, stop, step)))
        else:
            extents.append(1)
            limits.append(1)
    per_block = [1] * len(shape)

    def block_bytes(multiples: list[int]) -> int:
        return itemsize * math.prod(
            min(k * e, n) for k, e, n in zip(multiples, extents, limits)
        )

    while True:
        growable = [d for d in range(len(shape)) if per_block[d] * extents[d] < limits[d]]
        if not growable:
            break
        dim = min(growable, key=lambda d: (per_block[d] * extents[d], -d))
        trial = list(per_block)
        trial[dim] *= 2
        if block_bytes(trial) > target_bytes:
            break
        per_block = trial
    return tuple(per_block)


def block_counts(
    shape: Sequence[int],
    chunks: Sequence[int],
    selection: Selection,
    per_block: Sequence[int],
) -> tuple[int, ...]:
    """Blocks along each kept dimension of a plan, by arithmetic alone (no edges).

    Examples
    --------
    >>> block_counts((100, 100), (10, 10), (slice(5, 35), 7), per_block=(2, 1))
    (2,)
    >>> block_counts((100,), (10,), (slice(None, None, -1),), per_block=(1,))
    (10,)
    """
    counts = []
    for entry, size, chunk, k in zip(normalize_selection(selection, shape), shape, chunks,
                                     per_block):
        if not isinstance(entry, slice):
            continue
        start, stop, step = entry.indices(size)
        length = len(range(start, stop, step))
        if length == 0:
            counts.append(1)  # one empty block, as dask has
            continue
        span = chunk * max(1, k)
        if abs(step) >= span:
            counts.append(length)  # every element in a span of its own (see _edges)
            continue
        last = start + (length - 1) * step
        counts.append(abs(last // span - start // span) + 1)
    return tuple(counts)


def default_per_block(
    shape: Sequence[int],
    chunks: Sequence[int],
    selection: Selection,
    itemsize: int,
    min_bytes: int,
    min_blocks: int,
) -> tuple[int, ...]:
    """One chunk per block, tiny chunks grouped up to ``min_bytes``, but never fewer
    than ``min_blocks`` blocks where the selection spans that many chunks.

    Grouping is undone (the largest multiple halved first) until the plan has
    ``min_blocks`` blocks or every block is one chunk again.

    Examples
    --------
    >>> default_per_block((8192, 8192), (64, 64), (), 2, min_bytes=2**20, min_blocks=8)
    (8, 16)
    >>> default_per_block((512, 512), (64, 64), (), 2, min_bytes=2**20, min_blocks=8)
    (2, 4)
    >>> default_per_block((4096, 4096), (1024, 1024), (), 2, min_bytes=2**20, min_blocks=8)
    (1, 1)
    """
    per_block = list(auto_per_block(shape, chunks, selection, itemsize, min_bytes))
    while math.prod(block_counts(shape, chunks, selection, per_block)) < min_blocks:
        grouped = [d for d in range(len(per_block)) if per_block[d] > 1]
        if not grouped:
            break
        dim = max(grouped, key=lambda d: (per_block[d], -d))
        per_block[dim] //= 2
    return tuple(per_block)
