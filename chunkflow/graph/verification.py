"""``chunkflow.verify``, ``Array.verify`` and ``Group.verify``: every chunk read and
decoded, on this process or a dask cluster.

What is checked and reported is :mod:`chunkflow.core.verify`'s. Here: which arrays
(an array, or every array below a group), and where the reading runs:

- ``scheduler=None`` (default): in this process, a region of the chunk grid at a time,
  the engine's I/O threads fetching and decoding each region's chunks;
- ``scheduler=`` anything else (``"threads"``, ``"processes"``, a
  ``distributed.Client``...): one dask task per region of the chunk grid, every
  array's tasks in one graph; each task reads its chunks one at a time (a shard at a
  time), so a task holds one fetched batch and one decoded chunk (``max_memory`` is
  checked against that before anything runs).

Each array is listed once, on the client, before the tasks run (a byte per grid cell
goes to each task for its region only).

Examples
--------
>>> import numpy as np, chunkflow
>>> root = chunkflow.group()
>>> root.create_array("a", data=np.arange(10), chunks=(3,)).store["a/c/9"] = b"stray"
>>> report = verify(root, scheduler="sync")
>>> report.ok, report.unexpected_keys
(False, ('a/c/9',))
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any

import dask
from dask.utils import format_bytes

from chunkflow.core.array import Array
from chunkflow.core.group import Group
from chunkflow.core.verify import (
    VerifyReport,
    arrays_below,
    build_report,
    check_region,
    chunk_grid,
    regions,
    survey,
    verify_node,
)
from chunkflow.engine.verify import CellResults
from chunkflow.errors import MemoryPlanError
from chunkflow.graph.memory import task_max_memory
from chunkflow.graph.scheduler import ProgressArg, compute

if TYPE_CHECKING:
    from chunkflow.graph.scheduler import SchedulerLike

__all__ = ["TASK_BYTES", "verify"]

#: Decoded bytes of the chunks one task reads (whole chunks or shards; at least one):
#: small enough that a few tasks per thread balance the load (2 GiB: 32 tasks).
TASK_BYTES = 64 * 2**20


def verify(node: Array | Group, *, scheduler: SchedulerLike = None,
           progress: ProgressArg = False, max_memory: int | str | None = None) -> VerifyReport:
    """Read every chunk key of ``node`` (an array, or every array below a group) and
    decode every stored chunk; report missing, corrupt, unexpected and lost chunks.

    Parameters
    ----------
    node : Array or Group
        What to verify.
    scheduler, progress
        ``None`` (default): in this process, with chunkflow's I/O threads; otherwise
        one dask task per region of each array's chunk grid, on that scheduler (see
        :func:`chunkflow.compute`), with a progress bar or callback.
    max_memory : int or str, optional
        The budget of one task (with a scheduler): it holds one stored chunk (shard)
        and one decoded chunk at a time; a chunk that does not fit is refused
        (:class:`~chunkflow.MemoryPlanError`) before anything is read.

    Returns
    -------
    VerifyReport
        Counts and (capped) lists of keys; ``report.ok`` is false when a chunk is
        corrupt or lost, or a key unexpected. See :mod:`chunkflow.core.verify`.
    """
    if scheduler is None:
        return verify_node(node)
    arrays = list(arrays_below(node))
    limit = task_max_memory(max_memory, scheduler)
    surveys = []
    tasks: list[Any] = []
    for array in arrays:
        _check_memory(array, limit)
        found = survey(array)
        stored = found.inventory.stored
        own = []
        for region in regions(chunk_grid(array), _task_cells(array)):
            part = None if stored is None else stored[region]
            if part is not None and not part.any():
                continue
            own.append(dask.delayed(_check, pure=True)(array, region, part))
        surveys.append((array, found, len(own)))
        tasks += own
    results = compute(*tasks, scheduler=scheduler, progress=progress) if tasks else ()
    report = VerifyReport()
    at = 0
    for array, found, count in surveys:
        merged = CellResults()
        for part in results[at:at + count]:
            merged.add(part)
        at += count
        report = report.merge(build_report(array, found, merged))
    return report


def _check(array: Array, region: tuple[slice, ...], stored: Any) -> CellResults:
    # A dask task: its chunks one at a time in its own thread (no nested I/O pool).
    return check_region(array, region, stored, parallel=False)


def _unit_bytes(array: Array) -> int:
    return math.prod(array.write_chunks) * array.dtype.itemsize


def _task_cells(array: Array) -> int:
    return max(1, TASK_BYTES // max(1, _unit_bytes(array)))


def _check_memory(array: Array, limit: int) -> None:
    # One stored object (at most about its decoded size: a raw chunk, a shard of raw
    # inner chunks) and one decoded chunk (one inner chunk for a shard).
    need = _unit_bytes(array) + math.prod(array.chunks) * array.dtype.itemsize
    if need > limit:
        raise MemoryPlanError(
            f"verify: array {array.path or '/'!r} holds {format_bytes(need)} per chunk read "
            f"(its stored {'shard' if array.shards else 'chunk'} and a decoded chunk), more "
            f"than max_memory {format_bytes(limit)}; raise max_memory")


