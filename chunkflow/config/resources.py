"""What this process may use: physical memory, cores, a dask worker's memory limit.

Every size chunkflow derives from the machine starts here, so that the cache budget,
the I/O thread pool and the memory plans of reductions agree on what the machine has.
The default budget of the decoded-chunk cache (``chunkflow.cache.max-bytes: auto``) is
derived here too: a process's cache is invisible to dask's memory manager, so it is
sized from where it runs, 1 GiB or 1/16 of physical memory, whichever is smaller, and
inside a dask distributed worker no more than :data:`WORKER_CACHE_SHARE` of the
worker's memory limit.

Nothing here imports the rest of chunkflow.

Examples
--------
>>> physical_memory() > 0 and usable_cores() >= 1
True
>>> auto_cache_bytes(2**30) == 2**27  # a worker of 1 GiB: 128 MiB
True
"""

from __future__ import annotations

import functools
import os
import sys
import weakref
from typing import Any

__all__ = [
    "FALLBACK_PHYSICAL_MEMORY", "WORKER_CACHE_SHARE", "auto_cache_bytes",
    "default_cache_bytes", "physical_memory", "usable_cores", "worker_memory_limit",
]

#: What :func:`physical_memory` assumes where the system does not say (not POSIX):
#: a small machine, so that budgets derived from it err on the low side.
FALLBACK_PHYSICAL_MEMORY = 8 * 2**30

# Inside a dask worker the "auto" cache takes at most this fraction of the worker's
# memory limit. dask sees the cache only as unmanaged memory: it spills the worker's
# results at 60% of the limit (70% by process memory), pauses it at 80%. A cache of
# 1/8 (12.5%) leaves the tasks and their results about half the limit before spilling
# starts, and still holds a few hundred chunks of a 4 GiB worker (512 MiB).
WORKER_CACHE_SHARE = 1 / 8

# The worker this process hosts, once a task of it has asked: the chunk I/O threads
# that a task starts do not see distributed's per-task context, and the budget must
# not change with the thread that asks (that would resize the cache back and forth).
_worker: weakref.ref[Any] | None = None


@functools.cache  # physical memory does not change while the process runs
def physical_memory() -> int:
    """Bytes of physical memory, or :data:`FALLBACK_PHYSICAL_MEMORY` if unknown.

    Examples
    --------
    >>> physical_memory() >= 2**20
    True
    """
    try:
        return int(os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES"))
    except (ValueError, OSError, AttributeError):  # not a POSIX system
        return FALLBACK_PHYSICAL_MEMORY


def usable_cores() -> int:
    """The cores this process may use (its CPU affinity where the system has one).

    Examples
    --------
    >>> usable_cores() >= 1
    True
    """
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:  # macOS, Windows
        return max(1, os.cpu_count() or 1)


def worker_memory_limit() -> int | None:
    """The memory limit of the dask distributed worker this process hosts, if any.

    ``None`` outside a worker, when the worker has no limit, or once it has closed.
    Found with ``distributed.get_worker()`` from a task, and remembered for the other
    threads of the process.

    Examples
    --------
    >>> worker_memory_limit() is None  # not in a dask worker
    True
    """
    global _worker
    distributed = sys.modules.get("distributed")  # never imported here just to look
    if distributed is None:
        return None
    try:
        worker = distributed.get_worker()
    except ValueError:  # not in a task: the worker seen before, if it still runs
        worker = _worker() if _worker is not None else None
    else:
        if _worker is None or _worker() is not worker:
            _worker = weakref.ref(worker)
    if worker is None or worker.status.name in ("closing", "closed", "failed"):
        return None
    limit = worker.memory_manager.memory_limit
    return int(limit) if limit else None


def default_cache_bytes() -> int:
    """1 GiB or 1/16 of physical memory, whichever is smaller (``max-bytes: auto``).

    Examples
    --------
    >>> 0 < default_cache_bytes() <= 2**30
    True
    """
    return int(min(2**30, physical_memory() // 16))


def auto_cache_bytes(memory_limit: int | None = None) -> int:
    """The budget ``chunkflow.cache.max-bytes: auto`` gives a process's cache.

    :func:`default_cache_bytes`, or :data:`WORKER_CACHE_SHARE` of ``memory_limit`` if
    smaller. ``memory_limit`` defaults to the limit of the dask worker this process
    hosts (:func:`worker_memory_limit`).

    Examples
    --------
    >>> auto_cache_bytes(2**30) == 2**27  # a worker of 1 GiB: 128 MiB
    True
    >>> auto_cache_bytes() == default_cache_bytes()  # not in a worker
    True
    """
    if memory_limit is None:
        memory_limit = worker_memory_limit()
    if not memory_limit:
        return default_cache_bytes()
    return min(default_cache_bytes(), int(memory_limit * WORKER_CACHE_SHARE))
