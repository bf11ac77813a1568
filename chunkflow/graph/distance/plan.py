"""The plan of a distance transform: the chunks of every array it writes, the blocks of
each pass, and one task's memory, fixed before anything runs.

Pass ``d`` works on blocks that hold axis ``d`` whole and whole chunks along the other
axes, so each task reads and writes whole chunks and no two tasks touch one. A task
holds, per element of its block (:func:`element_bytes`): what it reads (the source
values in pass 0, the features of the axes before ``d`` otherwise), the lines moved
axis-first, the heights and weights of the parabolas (float64), the envelope's stack
and the chosen positions (int32), the features it writes, and in the last pass the
float64 terms of the distance and its ``int32`` offsets. Blocks grow by whole chunks
(last axis first) toward :data:`DEFAULT_BLOCK_ELEMENTS` while they fit ``max_memory``.

Examples
--------
>>> plan = plan_passes((100, 80), (10, 10), 1, "16 MiB", "sync")
>>> plan.blocks  # axis 0 whole, then axis 1 whole; at least four blocks where it can
((100, 20), (20, 80))
>>> plan_passes((100, 80), (100, 100), 1, "40 kiB", "sync").chunks  # made to fit
(3, 5)
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from dataclasses import dataclass
from itertools import product
from typing import TYPE_CHECKING

from dask.utils import format_bytes

from chunkflow.config import byte_count
from chunkflow.errors import MemoryPlanError
from chunkflow.graph.memory import default_max_memory

if TYPE_CHECKING:
    from chunkflow.graph.scheduler import SchedulerLike

__all__ = ["DEFAULT_BLOCK_ELEMENTS", "PassPlan", "element_bytes", "plan_passes"]

# Blocks grow toward this many elements: a pass loops in Python over the positions of
# its axis, so wider blocks (more lines per numpy call) run faster, up to a point.
DEFAULT_BLOCK_ELEMENTS = 1 << 22
# Blocks stop growing before a pass would have fewer (work for a few threads).
LEAST_BLOCKS = 4


def element_bytes(axis: int, ndim: int, itemsize: int) -> int:
    """The bytes one element of a block costs the task of the pass along ``axis``.

    Examples
    --------
    >>> element_bytes(0, 1, 1), element_bytes(1, 2, 1), element_bytes(0, 2, 8)
    (62, 105, 37)
    """
    if axis == 0:
        work = itemsize + 1 + 8 + 8 + 4 + 4 + 4  # values, mask, heights, weights, stack...
    else:
        work = 8 * axis + 1 + 16 + 8 + 4 + 4 + 8 * (axis + 1)
    if axis == ndim - 1:  # the distances: offsets, their float64 terms, the sums
        work += ndim * (4 + 4 + 8) + 8 + 8
    return work


@dataclass(frozen=True)
class PassPlan:
    """The chunks of the arrays a distance transform writes and each pass's block."""

    shape: tuple[int, ...]
    chunks: tuple[int, ...]
    blocks: tuple[tuple[int, ...], ...]
    memory: tuple[int, ...]

    def grid(self, axis: int) -> tuple[int, ...]:
        """Blocks per axis of the pass along ``axis``."""
        return tuple(-(-n // b) for n, b in zip(self.shape, self.blocks[axis]))

    def regions(self, axis: int) -> Iterator[tuple[tuple[int, ...], tuple[slice, ...]]]:
        """The blocks of the pass along ``axis`` (index, region), in C order."""
        block = self.blocks[axis]
        if 0 in self.shape:
            return
        for index in product(*[range(n) for n in self.grid(axis)]):
            yield index, tuple(slice(i * b, min((i + 1) * b, n))
                               for i, b, n in zip(index, block, self.shape))


def _block(shape: tuple[int, ...], chunks: tuple[int, ...], axis: int,
           multiples: list[int]) -> tuple[int, ...]:
    return tuple(n if a == axis else min(k * c, n)
                 for a, (n, c, k) in enumerate(zip(shape, chunks, multiples)))


def _need(block: tuple[int, ...], axis: int, ndim: int, itemsize: int,
          chunks: tuple[int, ...]) -> int:
    # The block, and one chunk of each array read and written being decoded or encoded.
    return (math.prod(block) * element_bytes(axis, ndim, itemsize)
            + 2 * (ndim * 4 + 8) * math.prod(chunks))


def _grow(shape: tuple[int, ...], chunks: tuple[int, ...], axis: int, itemsize: int,
          limit: int, least_blocks: int) -> tuple[int, ...]:
    """Whole chunks per block along the other axes, last first, while the block fits."""
    multiples = [1] * len(shape)
    for other in reversed(range(len(shape))):
        if other == axis:
            continue
        while multiples[other] * chunks[other] < shape[other]:
            trial = list(multiples)
            trial[other] *= 2
            block = _block(shape, chunks, axis, trial)
            count = math.prod(-(-n // b) for n, b in zip(shape, block))
            if (_need(block, axis, len(shape), itemsize, chunks) > limit
                    or math.prod(block) > DEFAULT_BLOCK_ELEMENTS or count < least_blocks):
                break
            multiples = trial
    return _block(shape, chunks, axis, multiples)


def _shrunk(shape: tuple[int, ...], chunks: tuple[int, ...], itemsize: int,
            limit: int) -> tuple[int, ...] | None:
    """``chunks`` halved on their largest axes until every pass's smallest block fits."""
    found = list(chunks)
    ndim = len(shape)
    while True:
        worst = [axis for axis in range(ndim)
                 if _need(_block(shape, tuple(found), axis, [1] * ndim), axis, ndim, itemsize,
                          tuple(found)) > limit]
        if not worst:
            return tuple(found)
        axis = worst[0]
        others = [a for a in range(ndim) if a != axis and found[a] > 1]
        if not others:
            return None
        widest = max(others, key=lambda a: found[a])
        found[widest] = max(1, found[widest] // 2)


def plan_passes(shape: tuple[int, ...], chunks: tuple[int, ...], itemsize: int,
                max_memory: int | str | None, scheduler: SchedulerLike, *,
                fixed: bool = False, what: str = "distance_transform_edt") -> PassPlan:
    """The chunks and blocks of every pass over ``shape`` (source values of
    ``itemsize`` bytes), within ``max_memory`` per task.

    ``chunks`` are the output's: kept when ``fixed`` (given by the user), else halved
    on their widest axes until the passes fit.

    Raises
    ------
    MemoryPlanError
        One task would need more than ``max_memory``: the message says what would fit.
        Nothing is created.
    """
    if max_memory is None:
        limit, note = default_max_memory(scheduler)
    else:
        limit, note = byte_count(f"{what}: max_memory", max_memory), ""
    ndim = len(shape)
    chunks = tuple(max(1, min(c, n)) for c, n in zip(chunks, shape))
    if 0 in shape:  # nothing to compute: no blocks
        return PassPlan(shape, chunks, (chunks,) * ndim, (0,) * ndim)
    lines = [_need(_block(shape, (1,) * ndim, axis, [1] * ndim), axis, ndim, itemsize,
                   (1,) * ndim) for axis in range(ndim)]
    budget = f"max_memory {format_bytes(limit)}{f' ({note})' if note else ''}"
    if max(lines) > limit:
        axis = lines.index(max(lines))
        raise MemoryPlanError(
            f"{what}: a pass holds whole lines along each axis; one line along axis {axis} "
            f"({shape[axis]} elements) needs about {format_bytes(max(lines))}, more than "
            f"{budget}; raise max_memory")
    fitting = _shrunk(shape, chunks, itemsize, limit)
    if fitting is None or (fixed and fitting != chunks):
        raise MemoryPlanError(
            f"{what}: a pass holds whole lines along each axis; with chunks {chunks} a "
            f"block needs more than {budget}; chunks={fitting} would fit")
    # Not from the scheduler's threads: a resumed job plans the same blocks anywhere.
    least = LEAST_BLOCKS
    blocks = tuple(_grow(shape, fitting, axis, itemsize, limit, least) for axis in range(ndim))
    memory = tuple(_need(b, axis, ndim, itemsize, fitting) for axis, b in enumerate(blocks))
    return PassPlan(shape, fitting, blocks, memory)
