"""How much one rechunk task may hold, and what a refusal tells the user.

``max_memory`` is what one task may hold, as everywhere in chunkflow (rechunker's
``max_mem``, cubed's ``allowed_mem``). Tasks exchange no data (each reads from and
writes to stores), so a worker holds what its running tasks hold: ``max_memory`` times
its threads at most. Each task is planned within ``max_memory`` less
:data:`UNTRACED_SHARE`.

Examples
--------
>>> task_budget(64 * 2**20) // 2**20
56
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

from dask.utils import format_bytes, parse_bytes

from chunkflow.errors import MemoryPlanError
from chunkflow.graph.rechunk.passes import PassChoice, choose_passes, task_memory

if TYPE_CHECKING:
    from chunkflow.core.array import Array

__all__ = ["UNTRACED_SHARE", "at_least", "max_memory_for", "refuse_plan", "task_budget"]

#: The share of ``max_memory`` the plan leaves for what no task estimate counts: the
#: allocator's retained pages, codec contexts, thread stacks. Measured: a process ran
#: about 1 MiB over a 64 MiB budget planned to the full budget (benchmarks/bench_rechunk.py).
UNTRACED_SHARE = 0.125


def task_budget(max_memory: int) -> int:
    """Bytes a task's estimate may reach under ``max_memory``.

    Examples
    --------
    >>> task_budget(256 * 2**20) // 2**20
    224
    """
    return int(max_memory * (1 - UNTRACED_SHARE))


def max_memory_for(per_task: int) -> int:
    """The ``max_memory`` that gives a task ``per_task`` bytes.

    Examples
    --------
    >>> task_budget(max_memory_for(10**6)) >= 10**6
    True
    """
    return math.ceil(per_task / (1 - UNTRACED_SHARE)) + 1


def at_least(nbytes: int) -> str:
    """``nbytes`` as ``format_bytes`` writes it, rounded up, so that the text given as
    ``max_memory`` is never less (``format_bytes`` rounds to the nearest).

    Examples
    --------
    >>> format_bytes(1240), at_least(1240), parse_bytes(at_least(1240)) >= 1240
    ('1.21 kiB', '1.22 kiB', True)
    """
    text = format_bytes(nbytes)
    if parse_bytes(text) >= nbytes:
        return text
    unit = text.split()[-1]
    scale = parse_bytes(f"1 {unit}")
    hundredths = math.ceil(nbytes * 100 / scale)
    while parse_bytes(f"{hundredths / 100:.2f} {unit}") < nbytes:  # float rounding
        hundredths += 1
    return f"{hundredths / 100:.2f} {unit}"


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
                shape: tuple[int, ...], max_memory: int, has_temp: bool,
                aligned: bool) -> None:
    """Raise :class:`MemoryPlanError` saying what would fit: the ``max_memory`` a plan
    needs, with or without an intermediate array, or that ``temp=`` is needed."""
    name = source.path or "/"
    direct = _direct_need(shape, source, target, aligned)
    one_pass = (f"one pass (blocks of {_direct_block(shape, source, target)}, whole chunks "
                f"{source.chunks} read and {target.write_chunks} written) needs about "
                f"{format_bytes(direct)} per task, max_memory="
                f"{at_least(max_memory_for(direct))}")
    if choice is not None and not has_temp:
        raise MemoryPlanError(
            f"rechunk: array {name!r}: {one_pass}, more than max_memory "
            f"{format_bytes(max_memory)}; within it the job needs an intermediate array "
            f"(about {format_bytes(choice.task_memory)} per task): pass temp= (a path, URL or "
            "store for it), or raise max_memory"
        )
    least, through = _smallest_budget(shape, source, target, aligned)
    where = "through an intermediate array (temp=)" if through else "in one pass"
    raise MemoryPlanError(
        f"rechunk: array {name!r}: even the smallest tasks ({where}) need about "
        f"{format_bytes(least)} each, so max_memory="
        f"{at_least(max_memory_for(least))} would "
        f"fit; {one_pass}; got max_memory {format_bytes(max_memory)}: raise it, or use "
        "smaller chunks"
    )
