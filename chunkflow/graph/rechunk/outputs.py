"""Resumable rechunks: the output and the intermediate array, each with its job records.

The output is marked with the job (with ``resume=True`` in its attributes from its
creation, one write) and each block of the last pass is recorded when written, with
``resume=True`` or not (see :mod:`chunkflow.jobs`); an output that is (or holds) the
source is refused before anything is created. The intermediate array, named after the job, records the
blocks of pass 1 the same way; it is never marked finished, only removed once the
output is complete. A rerun of the same rechunk therefore skips the blocks of either
pass that were written, and finds both arrays by the job alone.

Examples
--------
>>> import numpy as np
>>> import chunkflow
>>> z = chunkflow.array(np.arange(64).reshape(8, 8), chunks=(1, 8))
>>> out = chunkflow.MemoryStore()
>>> _ = chunkflow.rechunk(z, (8, 1), out, max_memory="1 MiB", resume=True)
>>> "chunkflow_job" in chunkflow.open_array(out).attrs
False
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from chunkflow.api.hierarchy import open_node
from chunkflow.api.unfinished import open_unfinished
from chunkflow.core.array import Array
from chunkflow.core.replacing import check_location
from chunkflow.graph.rechunk.arrays import Intermediate, refuse_existing
from chunkflow.graph.rechunk.passes import block_grid
from chunkflow.jobs import (
    Job,
    JobSpec,
    array_location,
    check_not_source,
    job_identity,
    job_status,
    location_of,
    quiet_open,
)

if TYPE_CHECKING:
    from chunkflow.graph.rechunk.plan import RechunkPlan
    from chunkflow.storage import StoreLike

__all__ = ["job_spec", "open_intermediate", "open_output"]


def job_spec(plan: RechunkPlan, which: str, job_name: str | None = None) -> JobSpec:
    """What identifies the rechunk (and which of its arrays ``which`` names)."""
    passes = [(p.block, p.read_chunks, p.write_chunks) for p in plan.choice.passes]
    return job_identity(plan.template, sources=[plan.source], plan={
        "array": which, "region": str((plan.offset, plan.choice.shape)),
        "block plan": str(passes)}, job_name=job_name)


def open_output(plan: RechunkPlan, out: StoreLike, *, resume: bool, overwrite: bool,
                job_name: str | None = None,
                storage_options: Mapping[str, Any] | None) -> tuple[Array, Job | None]:
    """The output (created, or the unfinished one this job was writing) and its job.

    Raises
    ------
    ContainsArrayError
        Something finished is at ``out`` (without ``overwrite``).
    JobMismatchError
        ``out`` is the unfinished output of another job; nothing is written.
    """
    last = plan.choice.passes[-1]
    grid = block_grid(plan.choice.shape, last)
    check_not_source("rechunk", location_of(out, storage_options),
                     [("its source", array_location(plan.source))], creates=True)
    target = open_unfinished(out, storage_options=storage_options) if resume else None
    spec = job_spec(plan, "output", job_name)
    if target is None:
        check_location(out, what="rechunk", array=True,
                       storage_options=dict(storage_options or {}) or None)
        if not overwrite:
            refuse_existing(out, storage_options)
        # resume=True: the mark comes with the metadata (one write); without, the job
        # is recorded all the same (Job.open marks it, unless recording is off).
        mark = Job.mark(spec, grid) if resume else {}
        target = plan.output.create(out, storage_options, overwrite, mark)
    return target, Job.open(target, spec, grid, resume=resume)


def open_intermediate(plan: RechunkPlan, place: Intermediate, *, resume: bool,
                      ) -> tuple[Array, Job | None]:
    """The intermediate array (continued when an interrupted run of this job left it)
    and its job of pass 1."""
    assert plan.choice.intermediate_chunks is not None
    grid = block_grid(plan.choice.shape, plan.choice.passes[0])
    spec = job_spec(plan, "intermediate")
    if resume:
        try:
            with quiet_open():
                left = open_node(place.store, path=place.name, mode="r+")
        except FileNotFoundError:
            left = None
        status = job_status(left, count=False) if isinstance(left, Array) else None
        if isinstance(left, Array) and status is not None and status.token == spec.token:
            return left, Job.open(left, spec, grid, resume=True)
    middle = place.create(plan.choice.shape, plan.choice.intermediate_chunks, plan.intermediate_dtype,
                          plan.intermediate_fill, Job.mark(spec, grid) if resume else {})
    return middle, Job.open(middle, spec, grid, resume=True) if resume else None
