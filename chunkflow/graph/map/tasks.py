"""The task grid of a map_chunks job: its blocks, how many blocks one task runs, and
the memory one task needs, all fixed before anything runs.

Blocks (what the function sees) are whole chunks (shards) of the output grid; by
default one chunk per block, small chunks grouped toward :data:`DEFAULT_BLOCK_BYTES`.
A job that writes to ``out`` also groups blocks into tasks (:func:`task_group`): a
task reads one window for its group and runs its blocks one after another (see
:mod:`chunkflow.graph.map.groups`), so each source chunk is decoded about once per
task instead of once per block whose halo touches it, and a cluster schedules fewer
tasks. Groups grow while the task's windows stay within the plan of one block alone
(at least :data:`~chunkflow.graph.map.groups.DEFAULT_TASK_WINDOW_BYTES`), the task's
whole plan within ``max_memory``, and every worker thread keeps
:data:`~chunkflow.graph.read.BLOCKS_PER_THREAD` tasks.

Examples
--------
>>> import dask
>>> import chunkflow
>>> z = chunkflow.zeros((8192, 8192), chunks=(512, 512), dtype="u2")
>>> with dask.config.set(num_workers=2):  # 2 threads: at least 8 tasks
...     tasks = plan_tasks((z,), z, 4, (8, 8), None, None, "threads", 2.0, grouped=True)
>>> tasks.multiples, tasks.group, tasks.dep.numblocks
((1, 1), (4, 4), (4, 4))
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from dask.utils import format_bytes

from chunkflow.config import byte_count
from chunkflow.core.array import Array
from chunkflow.errors import InvalidSelectionError, MemoryPlanError
from chunkflow.graph.blocks import DimBlocks, default_per_block, dim_blocks
from chunkflow.graph.map.groups import DEFAULT_TASK_WINDOW_BYTES, blocks_per_task
from chunkflow.graph.memory import (
    MemoryPlan,
    check_memory,
    default_max_memory,
    plan_task_memory,
)
from chunkflow.graph.read import BLOCKS_PER_THREAD, SelectionDep, block_multiples
from chunkflow.graph.scheduler import worker_threads

if TYPE_CHECKING:
    from chunkflow.graph.read import BlockChunks
    from chunkflow.graph.scheduler import SchedulerLike

__all__ = ["DEFAULT_BLOCK_BYTES", "RegionDep", "TaskGrid", "TaskGroup", "plan_tasks"]

# Blocks of small chunks grow toward this many output bytes (fewer, larger tasks), but
# never leave fewer than BLOCKS_PER_THREAD blocks per worker thread where the output
# has that many chunks (the same rule as to_dask's default).
# Measured on 2 cores, Gaussian of 8192^2 uint16 in 512^2 chunks to float32: blocks of
# 1 MiB took 1.6 s at 118 MB peak RSS, 2 MiB 1.3 s at 122 MB, 8 MiB 1.1 s at 150 MB
# (86 MB of it the interpreter and libraries); memory is what map jobs run out of.
DEFAULT_BLOCK_BYTES = 2**20

#: ``blocks_per_task=``: ``None`` (by the plan), an int for every axis, or one per axis.
TaskGroup = "int | Sequence[int] | None"


class RegionDep(SelectionDep):
    """Task index -> (task index, the array region of that task)."""

    # A task's (index, region) instead of a selection: dask only passes it to the task.
    def __getitem__(  # type: ignore[override]  # (index, region), not a selection
        self, idx: tuple[int, ...]
    ) -> tuple[tuple[int, ...], tuple[slice, ...]]:
        # Every dimension of a map job is kept: its selection holds slices only.
        return idx, super().__getitem__(idx)  # type: ignore[return-value]  # all slices: every axis is kept


@dataclass(frozen=True)
class TaskGrid:
    """The blocks of a map_chunks job and the tasks that run them.

    Attributes
    ----------
    dep : RegionDep
        The task grid (the dask layer's blocks).
    multiples : tuple of int
        Output chunks per block and axis.
    group : tuple of int
        Blocks per task and axis (all 1: one task per block).
    numblocks : tuple of int
        The block grid (what ``block_info`` reports).
    spans : tuple of int or None
        Array elements per block and axis when tasks run several blocks, else ``None``.
    estimate : MemoryPlan
        One task's peak, by the plan.
    """

    dep: RegionDep
    multiples: tuple[int, ...]
    group: tuple[int, ...]
    numblocks: tuple[int, ...]
    spans: tuple[int, ...] | None
    estimate: MemoryPlan


def _largest(dims: Sequence[DimBlocks]) -> tuple[int, ...]:
    return tuple(max(d.chunks) for d in dims)


def _multiples(grid_owner: Array, out_itemsize: int, chunks: BlockChunks,
               threads: int) -> tuple[int, ...]:
    shape, unit = grid_owner.shape, grid_owner.write_chunks
    if chunks is None:
        return default_per_block(shape, unit, Ellipsis, out_itemsize, DEFAULT_BLOCK_BYTES,
                                 BLOCKS_PER_THREAD * threads)
    if chunks == "chunk":  # one chunk (shard) per block: the tiles of a summary
        return (1,) * len(shape)
    return block_multiples(grid_owner, Ellipsis, chunks)


def _explicit_group(value: int | Sequence[int], ndim: int) -> tuple[int, ...]:
    group = tuple(value) if isinstance(value, Sequence) else (value,) * ndim
    if len(group) != ndim or not all(isinstance(k, int) and not isinstance(k, bool) and k >= 1
                                     for k in group):
        raise InvalidSelectionError(
            f"map_chunks: blocks_per_task={value!r}; expected a whole number >= 1 or one "
            f"per axis ({ndim})"
        )
    return group


def _group_fits(block: tuple[int, ...], spans: tuple[int, ...], shape: tuple[int, ...],
                depth: tuple[int, ...], window_itemsize: int,
                estimate_for: Callable[..., MemoryPlan], limit: int
                ) -> Callable[[tuple[int, ...]], bool]:
    """Whether a group of blocks fits: its windows within the halo-reuse budget, and
    the task's whole plan within ``limit``."""
    # Halo reuse gets a budget sized by the plan: a task's windows may hold as much as
    # one block's whole plan (at least DEFAULT_TASK_WINDOW_BYTES).
    budget = max(DEFAULT_TASK_WINDOW_BYTES, estimate_for(block).total)

    def fits(group: tuple[int, ...]) -> bool:
        region = tuple(min(g * s, n) for g, s, n in zip(group, spans, shape))
        window = math.prod(r + 2 * d for r, d in zip(region, depth)) * window_itemsize
        return window <= budget and estimate_for(block, region).total <= limit

    return fits


def plan_tasks(sources: Sequence[Array], grid_owner: Array, out_itemsize: int,
               depth: tuple[int, ...], chunks: BlockChunks, max_memory: int | str | None,
               scheduler: SchedulerLike, func_memory_factor: float, *, grouped: bool,
               per_task: int | Sequence[int] | None = None,
               what: str = "map_chunks") -> TaskGrid:
    """Plan the blocks and tasks of a job whose output grid is ``grid_owner``'s.

    ``grouped``: tasks may run several blocks (a job writing to ``out``);
    ``per_task`` fixes how many; ``what`` names the public function in errors. Raises
    :class:`~chunkflow.MemoryPlanError` when one block alone does not fit
    ``max_memory``.
    """
    shape, unit = grid_owner.shape, grid_owner.write_chunks
    threads = worker_threads(scheduler)
    multiples = _multiples(grid_owner, out_itemsize, chunks, threads)
    block_dims = dim_blocks(shape, unit, Ellipsis, multiples)
    source_shapes = [(s.dtype.itemsize, s.write_chunks) for s in sources]

    def estimate_for(block: tuple[int, ...], group: tuple[int, ...] | None = None) -> MemoryPlan:
        return plan_task_memory(block, depth, source_shapes, out_itemsize, unit,
                                func_memory_factor, group)

    if max_memory is None:
        limit, note = default_max_memory(scheduler)
    else:
        limit, note = byte_count(f"{what}: max_memory", max_memory), ""
    block = _largest(block_dims) if shape else ()
    check_memory(estimate_for(block), limit, multiples, unit, shape, estimate_for, note, what)
    numblocks = tuple(len(d.chunks) for d in block_dims)
    spans = tuple(d.span for d in block_dims)
    if not grouped or not shape:
        if per_task not in (None, 1):
            raise InvalidSelectionError("map_chunks: blocks_per_task applies to jobs that "
                                        "write to out=")
        group = (1,) * len(shape)
    elif per_task is not None:
        group = _explicit_group(per_task, len(shape))
    else:
        fits = _group_fits(block, spans, shape, depth, sum(s.dtype.itemsize for s in sources),
                           estimate_for, limit)
        group = blocks_per_task(numblocks, BLOCKS_PER_THREAD * threads, fits)
    task_dims = dim_blocks(shape, unit, Ellipsis, tuple(m * g for m, g in zip(multiples, group)))
    grouping = any(g > 1 for g in group)
    estimate = estimate_for(block, _largest(task_dims) if grouping else None)
    if grouping and estimate.total > limit:  # only an explicit group can get here
        raise MemoryPlanError(
            f"{what}: each task of blocks_per_task={group} would need about "
            f"{estimate.describe()}, more than max_memory {format_bytes(limit)}"
            f"{f' ({note})' if note else ''}; blocks_per_task=1 needs "
            f"{format_bytes(estimate_for(block).total)}"
        )
    return TaskGrid(RegionDep(task_dims), multiples, group, numblocks,
                    spans if grouping else None, estimate)
