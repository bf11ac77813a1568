"""The memory plan: what a worker may use (:func:`memory_budget`), what one task may
use (:func:`task_max_memory`: ``max_memory``, always one task's budget), and what one
map-over-chunks task needs in memory (a :class:`MemoryPlan`), known before anything runs.

A task holds, at its peak:

- for each source, its window (block plus halo) as read, plus a padded copy when the
  window reaches beyond the array's edge (counted always, though only a reflection
  wider than the data still makes one: other windows are padded in place), plus one
  chunk's decode buffer;
- the function's result over the window and one temporary of that size (a filter's
  output and its work array; a function that needs more says so with
  ``func_memory_factor``);
- the trimmed output block and one encoded output chunk.

:func:`plan_task_memory` adds these up for the largest block; :func:`fitting_multiples`
finds the largest block that fits a budget, for the error message.

Examples
--------
>>> estimate = plan_task_memory(
...     block=(1024, 1024), depth=(8, 8), sources=[(2, (256, 256))],
...     out_itemsize=4, out_chunk=(256, 256))
>>> estimate.total // 2**20
16
"""

from __future__ import annotations

import builtins
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

import dask
from dask.utils import format_bytes

from chunkflow.cache.capacity import cache_bytes_for
from chunkflow.config import byte_count
from chunkflow.config.resources import physical_memory, usable_cores
from chunkflow.errors import MemoryPlanError
from chunkflow.graph.scheduler import active_client, scheduler_choice

if TYPE_CHECKING:
    from chunkflow.graph.scheduler import SchedulerLike

__all__ = [
    "MemoryPlan", "check_memory", "default_max_memory", "fitting_multiples",
    "memory_budget", "plan_task_memory", "task_max_memory",
]


def memory_budget(scheduler: SchedulerLike = None) -> tuple[int, int]:
    """(bytes one worker may use, threads per worker) for the chosen scheduler.

    On a distributed cluster: the smallest worker's memory limit and thread count.
    Locally: a quarter of physical memory and the cores this process may use (both
    from :mod:`chunkflow.config.resources`).

    Examples
    --------
    >>> budget, threads = memory_budget("threads")
    >>> budget > 0 and threads >= 1
    True
    """
    _, client = scheduler_choice(scheduler)
    if client is not None and not isinstance(client, str):
        workers = client.scheduler_info().get("workers", {}).values()
        limits = [w.get("memory_limit") or 0 for w in workers]
        threads = [w.get("nthreads") or 1 for w in workers]
        if limits and builtins.min(limits) > 0:
            return builtins.min(limits), builtins.max(threads)
    return physical_memory() // 4, usable_cores()


def task_max_memory(max_memory: int | str | None, scheduler: SchedulerLike = None,
                    name: str = "max_memory") -> int:
    """Bytes one task may use: ``max_memory`` when given (bytes or text such as
    ``"64 MiB"``, named ``name`` in errors), else :func:`default_max_memory`.

    ``max_memory`` is always the budget of one task (as rechunker's ``max_mem`` and
    cubed's ``allowed_mem``), never of a worker: a worker running ``n`` tasks at once
    may hold ``n`` times as much.

    Examples
    --------
    >>> task_max_memory("64 MiB", "threads")
    67108864
    """
    if max_memory is not None:
        return byte_count(name, max_memory)
    return default_max_memory(scheduler)[0]


@dataclass(frozen=True)
class MemoryPlan:
    """The parts of one task's peak memory, in bytes, estimated before it runs."""

    windows: int
    padding: int
    decode: int
    result: int
    output: int

    @property
    def total(self) -> int:
        return self.windows + self.padding + self.decode + self.result + self.output

    def describe(self) -> str:
        return (
            f"{format_bytes(self.total)} (windows {format_bytes(self.windows)}, padding "
            f"{format_bytes(self.padding)}, decoding {format_bytes(self.decode)}, result "
            f"{format_bytes(self.result)}, output {format_bytes(self.output)})"
        )


def plan_task_memory(
    block: Sequence[int],
    depth: Sequence[int],
    sources: Sequence[tuple[int, Sequence[int]]],
    out_itemsize: int,
    out_chunk: Sequence[int],
    func_memory_factor: float = 2.0,
    group: Sequence[int] | None = None,
) -> MemoryPlan:
    """The peak of one task over ``block`` (the largest block's shape).

    Parameters
    ----------
    block : shape of the output block
    depth : halo per axis
    sources : (itemsize, chunk shape) of each source
    out_itemsize : bytes per output element
    out_chunk : the output's chunk (shard) shape, for the encoding buffer
    func_memory_factor : result-sized arrays the function holds at its peak
    group : the shape of the region one task runs, when it runs several blocks: it
        reads the group's window, and copies each block's window out of it
    """
    window = math.prod(b + 2 * d for b, d in zip(block, depth))
    halo_cells = window - math.prod(block)
    read = held = window
    if group is not None and tuple(group) != tuple(block):
        read = math.prod(g + 2 * d for g, d in zip(group, depth))
        held = read + window  # the group's window and a copy of one block's window
    windows = sum(itemsize * held for itemsize, _ in sources)
    padding = sum(itemsize * read for itemsize, _ in sources) if halo_cells else 0
    decode = sum(itemsize * math.prod(chunk) for itemsize, chunk in sources)
    result = int(func_memory_factor * out_itemsize * window)
    output = out_itemsize * (math.prod(block) + math.prod(out_chunk))
    return MemoryPlan(windows, padding, decode, result, output)


def fitting_multiples(
    multiples: Sequence[int],
    unit: Sequence[int],
    shape: Sequence[int],
    fits: Callable[[tuple[int, ...]], bool],
) -> tuple[int, ...] | None:
    """The largest block (chunks per axis, halving the largest axis first) that fits.

    ``fits(block_shape)`` says whether a block of that shape fits the budget. ``None``
    when not even one chunk per axis fits.

    Examples
    --------
    >>> fitting_multiples((8, 8), (100, 100), (800, 800), lambda b: b[0] * b[1] <= 40000)
    (2, 2)
    """
    current = list(multiples)
    while True:
        block = tuple(min(k * u, n) for k, u, n in zip(current, unit, shape))
        if fits(block):
            return tuple(current)
        shrinkable = [a for a in range(len(current)) if current[a] > 1]
        if not shrinkable:
            return None
        axis = max(shrinkable, key=lambda a: (current[a] * unit[a], -a))
        current[axis] //= 2


def default_max_memory(scheduler: SchedulerLike) -> tuple[int, str]:
    """What one task may use by default, and how that was reckoned (for messages).

    The memory of a worker (or of this machine's share, see :func:`memory_budget`)
    less the decoded-chunk cache each of its processes may fill, shared by its
    threads: dask's memory manager does not see the cache, so the plan must.
    """
    client = active_client(scheduler)
    on_cluster = client is not None
    budget, threads = memory_budget(client if on_cluster else scheduler)
    choice, _ = scheduler_choice(scheduler)
    # One cache per process: a distributed worker's is sized from its memory limit;
    # the "processes" scheduler runs one process (one cache) per thread.
    cache = cache_bytes_for(budget if on_cluster else None)
    local = choice if choice is not None else dask.config.get("scheduler", None)
    processes = not on_cluster and local in ("processes", "multiprocessing")
    caches = cache * (threads if processes else 1)
    per_task = max(0, budget - caches) // max(1, threads)
    where = "each worker's" if on_cluster else "this machine's"
    note = (f"{where} {format_bytes(budget)} less {format_bytes(caches)} of chunk cache "
            f"(chunkflow.cache.max-bytes), shared by {threads} threads")
    return per_task, note


def check_memory(estimate: MemoryPlan, limit: int, multiples: tuple[int, ...],
                  unit: tuple[int, ...], shape: tuple[int, ...],
                  estimate_for: Callable[[tuple[int, ...]], MemoryPlan],
                  note: str = "", what: str = "map_chunks") -> None:
    """Raise :class:`MemoryPlanError` naming ``what`` unless ``estimate`` fits ``limit``."""
    if estimate.total <= limit:
        return
    fit = fitting_multiples(multiples, unit, shape, lambda b: estimate_for(b).total <= limit)
    if fit is None:
        advice = (f"not even one chunk {unit} per block fits: use smaller chunks for the "
                  "output, a smaller depth, or raise max_memory")
    else:
        advice = f"blocks={fit} (blocks of {tuple(k * u for k, u in zip(fit, unit))}) would fit"
    raise MemoryPlanError(
        f"{what}: each task would need about {estimate.describe()}, more than max_memory "
        f"{format_bytes(limit)}{f' ({note})' if note else ''}; {advice}"
    )
