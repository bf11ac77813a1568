"""How much one rechunk task may hold, and what a refusal tells the user.

``max_memory`` is what the job may hold in one worker process. Tasks exchange no data
(each reads from and writes to stores), so a process holds what its running tasks
hold: one per thread. Each task is therefore planned within ``max_memory`` divided by
the tasks a process runs at once.

Where this machine's threads would leave each task too little, a local threaded run
uses fewer of them (:func:`task_counts`) rather than refusing.

Examples
--------
>>> task_counts("sync")
[1]
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

from dask.utils import format_bytes

from chunkflow.errors import MemoryPlanError
from chunkflow.graph.rechunk.passes import PassChoice, choose_passes, task_memory
from chunkflow.graph.scheduler import local_threads, tasks_per_process

if TYPE_CHECKING:
    from chunkflow.core.array import Array
    from chunkflow.graph.scheduler import SchedulerLike

__all__ = ["UNTRACED_SHARE", "max_memory_for", "refuse_plan", "task_budget", "task_counts"]

#: The share of ``max_memory`` the plan leaves for what no task estimate counts: the
#: allocator's retained pages, codec contexts, thread stacks. Measured: a process ran
#: about 1 MiB over a 64 MiB budget planned to the full budget (benchmarks/bench_rechunk.py).
UNTRACED_SHARE = 0.125


def task_budget(max_memory: int, tasks: int) -> int:
    """Bytes one of ``tasks`` concurrent tasks may hold under ``max_memory`` per process.

    Examples
    --------
    >>> task_budget(256 * 2**20, 2) // 2**20
    112
    """
    return int(max_memory * (1 - UNTRACED_SHARE)) // tasks


def max_memory_for(per_task: int, tasks: int) -> int:
    """The ``max_memory`` that gives ``tasks`` tasks ``per_task`` bytes each.

    Examples
    --------
    >>> task_budget(max_memory_for(10**6, 3), 3) >= 10**6
    True
    """
    return math.ceil(per_task * tasks / (1 - UNTRACED_SHARE)) + tasks


def task_counts(scheduler: SchedulerLike = None) -> list[int]:
    """Tasks at once per process to plan for, most first: all the threads, then (on
    local threads, which a run may use fewer of) half as many, down to one.

    Examples
    --------
    >>> task_counts("sync")
    [1]
    """
    tasks = tasks_per_process(scheduler)
    if not local_threads(scheduler):
        return [tasks]
    counts = [tasks]
    while counts[-1] > 1:
        counts.append(counts[-1] // 2)
    return counts


def _smallest_budget(shape: tuple[int, ...], source: Array, target: Array,
                     aligned: bool) -> tuple[int, bool]:
    """The least task budget any plan fits in (bisection: plans grow with the budget),
    and whether that plan goes through an intermediate array."""

    def plan(budget: int) -> PassChoice | None:
        return choose_passes(shape, source.chunks, target.write_chunks, source.dtype,
                             target.dtype, task_budget=budget, source_aligned=aligned)

    lo, hi = 1, _direct_need(shape, source, target, aligned)
    while lo < hi:
        mid = (lo + hi) // 2
        lo, hi = (lo, mid) if plan(mid) is not None else (mid + 1, hi)
    least = plan(lo)
    return lo, least is not None and least.intermediate_chunks is not None


def _direct_block(shape: tuple[int, ...], source: Array, target: Array) -> tuple[int, ...]:
    return tuple(min(math.lcm(s, t), n)
                 for s, t, n in zip(source.chunks, target.write_chunks, shape))


def _direct_need(shape: tuple[int, ...], source: Array, target: Array, aligned: bool) -> int:
    return task_memory(_direct_block(shape, source, target), source.chunks, source.dtype,
                       target.write_chunks, target.dtype, partial_reads=not aligned)


def refuse_plan(choice: PassChoice | None, source: Array, target: Array,
                shape: tuple[int, ...], max_memory: int, tasks: int, has_temp: bool,
                aligned: bool) -> None:
    """Raise :class:`MemoryPlanError` saying what would fit: the ``max_memory`` a plan
    needs, with or without an intermediate array, or that ``temp=`` is needed."""
    name = source.path or "/"
    direct = _direct_need(shape, source, target, aligned)
    per = f" ({tasks} tasks at once per process)" if tasks > 1 else " (one task at a time)"
    one_pass = (f"one pass (blocks of {_direct_block(shape, source, target)}, whole chunks "
                f"{source.chunks} read and {target.write_chunks} written) needs about "
                f"{format_bytes(direct)} per task, max_memory="
                f"{format_bytes(max_memory_for(direct, tasks))}")
    if choice is not None and not has_temp:
        raise MemoryPlanError(
            f"rechunk: array {name!r}: {one_pass}{per}, more than max_memory "
            f"{format_bytes(max_memory)}; within it the job needs an intermediate array "
            f"(about {format_bytes(choice.task_memory)} per task): pass temp= (a path, URL or "
            "store for it), or raise max_memory"
        )
    least, through = _smallest_budget(shape, source, target, aligned)
    where = "through an intermediate array (temp=)" if through else "in one pass"
    raise MemoryPlanError(
        f"rechunk: array {name!r}: even the smallest tasks ({where}) need about "
        f"{format_bytes(least)} each{per}, so max_memory="
        f"{format_bytes(max_memory_for(least, tasks))} would "
        f"fit; {one_pass}; got max_memory {format_bytes(max_memory)}: raise it, or use "
        "smaller chunks"
    )
