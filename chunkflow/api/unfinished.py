"""Opening the unfinished output of a job, as a writer about to resume it.

A writer with ``resume=True`` opens its output quietly (no
:class:`~chunkflow.errors.IncompleteJobWarning`: it is about to finish the job) and,
where its default plan depends on the scheduler, reuses the plan the job started with
(:func:`~chunkflow.jobs.records.recorded_block_plan`).

Examples
--------
>>> import chunkflow
>>> store = chunkflow.MemoryStore()
>>> _ = chunkflow.zeros((4, 4), chunks=(2, 2), store=store)
>>> open_unfinished(store) is None  # a finished array
True
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from chunkflow.api.hierarchy import open_node
from chunkflow.core.array import Array
from chunkflow.jobs import job_status, quiet_open, recorded_block_plan

__all__ = ["open_recorded_block_plan", "open_unfinished"]


def open_unfinished(location: Any, path: str | None = None,
                    storage_options: Mapping[str, Any] | None = None) -> Array | None:
    """The array at ``location`` if an unfinished job is writing it, else ``None``
    (opened for writing, without the unfinished-job warning: a writer resumes it)."""
    try:
        with quiet_open():
            node = open_node(location, path=path, mode="r+",
                             storage_options=dict(storage_options or {}) or None)
    except FileNotFoundError:
        return None
    if isinstance(node, Array) and job_status(node, count=False) is not None:
        return node
    return None


def open_recorded_block_plan(out: Any, storage_options: Mapping[str, Any] | None
                             ) -> dict[str, tuple[int, ...]]:
    """The block plan of the unfinished job on ``out`` (an array or its location):
    see :func:`~chunkflow.jobs.records.recorded_block_plan`; ``{}``: no job."""
    if out is None:
        return {}
    try:
        with quiet_open():
            array = out if isinstance(out, Array) else open_node(
                out, mode="r", storage_options=dict(storage_options or {}) or None)
    except FileNotFoundError:
        return {}
    return recorded_block_plan(array) if isinstance(array, Array) else {}
