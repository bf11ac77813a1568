"""The passes of a rechunk: which blocks each pass reads and writes, and the chunks of
the intermediate array between two passes, chosen before anything runs.

The algorithm is rechunker's (Abernathey et al., ``rechunker/algorithm.py``), written
again for chunkflow's unit of I/O. A *pass* reads whole chunks of one grid and writes
whole chunks (shards) of another, one task per block, so a block must be a union of
both grids' chunks along every axis:

- **one pass** (source -> target) when blocks of ``lcm(source chunk, target chunk)``
  along every axis fit the task budget; blocks then grow by whole multiples, from the
  last axis to the first, while they fit;
- **two passes** through an intermediate array otherwise. As in rechunker, the write
  blocks are the target chunks grown to fit (last axis first); the read blocks are the
  source chunks grown, on the axes where the write block is larger, toward the write
  block (to a divisor of it where one exists); the intermediate chunk is the largest
  size that divides both blocks (their greatest common divisor, or the one block that
  spans the whole axis). Pass 1 reads source chunks and writes intermediate chunks;
  pass 2 reads intermediate chunks and writes target chunks.

A task's peak (:func:`task_memory`) is its block (twice when the dtype changes) and
what the engine holds while reading and writing it.

Examples
--------
>>> import numpy as np
>>> u2 = np.dtype("u2")
>>> choice = choose_passes((64, 4096, 4096), (1, 4096, 4096), (64, 256, 256), u2, u2,
...                        task_budget=128 * 2**20)
>>> choice.intermediate_chunks, [p.block for p in choice.passes]
((1, 256, 2048), [(1, 4096, 4096), (64, 256, 2048)])
>>> len(choose_passes((100, 100), (10, 100), (100, 10), u2, u2, task_budget=2**20).passes)
1
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np

from chunkflow.engine.chunk_io import BATCH_BYTES

__all__ = [
    "Pass", "PassChoice", "block_grid", "choose_passes", "consolidate", "intermediate_dtype",
    "task_memory",
]

Shape = tuple[int, ...]


def task_memory(block: Sequence[int], read_chunk: Sequence[int], read_dtype: np.dtype,
                write_chunk: Sequence[int], write_dtype: np.dtype, *,
                partial_reads: bool = True) -> int:
    """Bytes one task holds at its peak.

    The block as read, and again converted when the dtype changes; the encoded chunks
    of one read batch (the engine fetches about ``BATCH_BYTES`` at a time, at least one
    chunk, never more than the block's) and, with ``partial_reads`` (a block that
    covers part of a stored chunk: a region's or the array's edge), one decoded chunk
    (whole chunks are decoded straight into the block); the encoded chunks of one write
    batch, one chunk's contiguous copy and one padded edge chunk. Encoded chunks are
    counted at their decoded size (incompressible data).

    Examples
    --------
    >>> u1 = np.dtype("u1")
    >>> task_memory((4, 4), (2, 2), u1, (4, 4), u1)
    84
    >>> task_memory((4, 4), (2, 2), u1, (4, 4), np.dtype("i1"))
    100
    >>> task_memory((4, 4), (2, 2), u1, (4, 4), u1, partial_reads=False)
    80
    """
    cells = math.prod(block)
    block_in, block_out = cells * read_dtype.itemsize, cells * write_dtype.itemsize
    read = math.prod(read_chunk) * read_dtype.itemsize
    write = math.prod(write_chunk) * write_dtype.itemsize
    converted = block_out if write_dtype != read_dtype else 0
    read_batch = min(max(BATCH_BYTES, read), max(block_in, read))
    write_batch = min(max(BATCH_BYTES, write), max(block_out, write))
    decoded = read if partial_reads else 0
    return block_in + converted + read_batch + decoded + write_batch + 2 * write


@dataclass(frozen=True)
class Pass:
    """One pass: tasks over ``block``-shaped regions of the output, each reading whole
    ``read_chunks`` and writing whole ``write_chunks``, each within ``memory`` bytes."""

    block: Shape
    read_chunks: Shape
    write_chunks: Shape
    memory: int

    @property
    def multiples(self) -> Shape:
        """Write chunks per block along each axis (a whole-axis block: enough of them)."""
        return tuple(max(1, -(-b // w)) for b, w in zip(self.block, self.write_chunks))


def block_grid(shape: Sequence[int], step: Pass) -> tuple[int, ...]:
    """Blocks per axis of one pass over ``shape``.

    Examples
    --------
    >>> block_grid((10, 10), Pass((4, 10), (2, 10), (2, 5), 0))
    (3, 1)
    """
    return tuple(max(1, math.ceil(n / (k * w)))
                 for n, k, w in zip(shape, step.multiples, step.write_chunks))


@dataclass(frozen=True)
class PassChoice:
    """The passes of a rechunk, and the intermediate array's chunks between them (the
    choice of one pass or two, made within a task budget)."""

    shape: Shape
    passes: tuple[Pass, ...]
    intermediate_chunks: Shape | None
    task_budget: int

    @property
    def task_memory(self) -> int:
        """The largest estimated peak of any task, in bytes."""
        return max((p.memory for p in self.passes), default=0)


def consolidate(unit: Sequence[int], shape: Sequence[int], limits: Sequence[int | None],
                fits: Callable[[Shape], bool]) -> Shape:
    """Grow ``unit`` by whole multiples, from the last axis to the first, while ``fits``.

    ``limits[a]`` caps axis ``a`` (``None``: keep the unit). Whole-axis blocks are
    written as the axis length.

    Examples
    --------
    >>> consolidate((1, 4), (10, 16), (None, 16), lambda b: b[0] * b[1] <= 12)
    (1, 8)
    >>> consolidate((1, 4), (10, 16), (10, 16), lambda b: b[0] * b[1] <= 64)
    (4, 16)
    """
    block = [min(u, n) for u, n in zip(unit, shape)]
    for axis in reversed(range(len(block))):
        limit = limits[axis]
        if limit is None or block[axis] >= shape[axis]:
            continue
        top = max(1, min(limit, shape[axis]) // unit[axis])
        lo, hi = 1, top  # the largest multiple that fits, by bisection (fits is monotonic)
        while lo < hi:
            mid = (lo + hi + 1) // 2
            trial = block.copy()
            trial[axis] = min(mid * unit[axis], shape[axis])
            lo, hi = (mid, hi) if fits(tuple(trial)) else (lo, mid - 1)
        block[axis] = min(_even(lo, unit[axis], shape[axis]) * unit[axis], shape[axis])
    return tuple(block)


def _even(k: int, unit: int, length: int) -> int:
    """``k`` units, or fewer (not under half) when fewer tile the axis evenly: blocks
    of one size, and intermediate chunks that divide the other pass's blocks."""
    for fewer in range(k, k // 2, -1):
        if length % (fewer * unit) == 0:
            return fewer
    return k


def _capped(size: int, length: int) -> int:
    return min(size, length)


def _shared_chunk(read: int, write: int, length: int) -> int:
    """The intermediate chunk along one axis: it divides both blocks (a block spanning
    the whole axis holds any chunk grid)."""
    if read >= length:
        return min(write, length)
    if write >= length:
        return read
    return math.gcd(read, write)


def _toward_divisor(read: int, unit: int, write: int, length: int) -> int:
    """``read`` shrunk to a multiple of ``unit`` dividing ``write``, where one exists
    (so that the intermediate chunk is the read block itself)."""
    if read >= length or write >= length or write % unit:
        return read
    k = read // unit
    while (write // unit) % k:
        k -= 1
    return k * unit


def _one_pass(shape: Shape, source: Shape, target: Shape, dtypes: tuple[np.dtype, np.dtype],
              budget: int, enough: Callable[[Shape], bool], partial: bool) -> Pass | None:
    unit = tuple(_capped(math.lcm(s, t), n) for s, t, n in zip(source, target, shape))

    def cost(block: Shape) -> int:
        return task_memory(block, source, dtypes[0], target, dtypes[1], partial_reads=partial)

    if cost(unit) > budget:
        return None
    block = consolidate(unit, shape, shape, lambda b: cost(b) <= budget and enough(b))
    return Pass(block, source, target, cost(block))


def intermediate_dtype(source: np.dtype, target: np.dtype) -> np.dtype:
    """The dtype of the intermediate array: the smaller of the two (less to write and
    read again; the conversion is elementwise, so where it happens changes no value).

    Examples
    --------
    >>> intermediate_dtype(np.dtype("f8"), np.dtype("u2"))
    dtype('uint16')
    """
    return target if target.itemsize < source.itemsize else source


def choose_passes(shape: Sequence[int], source_chunks: Sequence[int],
                  target_chunks: Sequence[int], source_dtype: np.dtype, target_dtype: np.dtype,
                  *, task_budget: int, min_blocks: int = 1,
                  source_aligned: bool = False) -> PassChoice | None:
    """The passes for one task budget, or ``None`` when even the smallest tasks exceed it.

    Parameters
    ----------
    shape : the output's shape
    source_chunks, target_chunks : the units read and written (shards where sharded)
    source_dtype, target_dtype : the dtypes read and written
    task_budget : bytes one task may hold
    min_blocks : blocks stop growing before a pass would have fewer (parallelism)
    source_aligned : the region read starts and ends on source chunk edges on every
        axis, so that whole chunks are decoded straight into the blocks

    Examples
    --------
    >>> u1 = np.dtype("u1")
    >>> choose_passes((0, 5), (1, 1), (1, 1), u1, u1, task_budget=1).task_memory
    0
    """
    shape = tuple(int(n) for n in shape)
    source = tuple(max(1, int(c)) for c in source_chunks)
    target = tuple(max(1, int(c)) for c in target_chunks)

    def enough(block: Shape) -> bool:
        blocks = math.prod(-(-n // max(b, 1)) for n, b in zip(shape, block))
        return blocks >= min_blocks

    source_dtype, target_dtype = np.dtype(source_dtype), np.dtype(target_dtype)
    if 0 in shape:  # nothing to copy: one pass of empty blocks fits any budget
        empty = tuple(min(math.lcm(s, t), n) for s, t, n in zip(source, target, shape))
        return PassChoice(shape, (Pass(empty, source, target, 0),), None, task_budget)
    partial = not source_aligned
    direct = _one_pass(shape, source, target, (source_dtype, target_dtype),
                       task_budget, enough, partial)
    if direct is not None:
        return PassChoice(shape, (direct,), None, task_budget)
    mid = intermediate_dtype(source_dtype, target_dtype)
    dtypes = (source_dtype, mid, target_dtype)
    # The blocks depend on the intermediate chunk, which depends on the blocks: plan
    # with a guess of the chunk (the smaller of the two chunks), then with the chunk
    # that gave, and keep the first choice whose exact costs fit.
    guess = tuple(min(a, b, n) for a, b, n in zip(source, target, shape))
    for _ in range(3):
        choice = _two_passes(shape, source, target, dtypes, task_budget, enough, guess, partial)
        if choice is None or choice.task_memory <= task_budget:
            break
        guess = choice.intermediate_chunks or guess
    else:
        choice = None
    if choice is not None and choice.task_memory <= task_budget:
        return choice
    # The smallest passes: single chunks read and written.
    smallest = tuple(_shared_chunk(min(s, n), min(t, n), n)
                     for s, t, n in zip(source, target, shape))
    choice = _two_passes(shape, source, target, dtypes, task_budget, lambda b: False, smallest,
                         partial)
    return choice if choice is not None and choice.task_memory <= task_budget else None


def _two_passes(shape: Shape, source: Shape, target: Shape,
                dtypes: tuple[np.dtype, np.dtype, np.dtype], budget: int,
                enough: Callable[[Shape], bool], guess: Shape, partial: bool) -> PassChoice | None:
    """Pass 1 (source -> intermediate) and pass 2 (intermediate -> target), the blocks
    sized with ``guess`` as the intermediate chunk (``None`` when not even single
    chunks fit); the passes' costs are then reckoned with the chunk they give."""
    source_dtype, mid, target_dtype = dtypes

    def edges(chunks: Shape) -> bool:  # the intermediate has partial edge chunks
        return any(n % c for n, c in zip(shape, chunks))

    def write_cost(block: Shape) -> int:
        return task_memory(block, guess, mid, target, target_dtype, partial_reads=edges(guess))

    def read_cost(block: Shape) -> int:
        return task_memory(block, source, source_dtype, guess, mid, partial_reads=partial)

    unit_in = tuple(_capped(s, n) for s, n in zip(source, shape))
    unit_out = tuple(_capped(t, n) for t, n in zip(target, shape))
    if write_cost(unit_out) > budget or read_cost(unit_in) > budget:
        return None
    write = consolidate(unit_out, shape, shape, lambda b: write_cost(b) <= budget and enough(b))
    limits = [w if w > s else None for w, s in zip(write, source)]
    read = consolidate(unit_in, shape, limits, lambda b: read_cost(b) <= budget and enough(b))
    read = tuple(_toward_divisor(r, s, w, n) for r, s, w, n in zip(read, source, write, shape))
    chunks = tuple(_shared_chunk(r, w, n) for r, w, n in zip(read, write, shape))
    first = Pass(read, source, chunks, task_memory(read, source, source_dtype, chunks, mid,
                                                   partial_reads=partial))
    second = Pass(write, chunks, target, task_memory(write, chunks, mid, target, target_dtype,
                                                     partial_reads=edges(chunks)))
    return PassChoice(shape, (first, second), chunks, budget)
