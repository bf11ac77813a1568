"""Resumable writers: job tokens, the task wrapper and progress for ``resume=True``.

Every chunkflow function that writes an output (:func:`chunkflow.map_chunks` with
``out=``, :func:`chunkflow.store`, :func:`chunkflow.to_chunkflow`,
:func:`chunkflow.copy`, :func:`chunkflow.copy_all`, the CLI's ``filter`` and ``copy``)
takes ``resume=`` and ``job_name=``. With ``resume=True`` a run records each output
block it finishes (see :mod:`chunkflow.core.jobs` for where and how); rerunning the
same call after a crash, in any process or on any cluster, recomputes only the blocks
not recorded, and the result is bit-identical to an uninterrupted run. Pass
``resume=True`` on the first run too: it starts the job when there is none.

A job is identified by a token of what it computes (:func:`job_spec`): the function
and its arguments (or ``job_name=``), the block plan, the output's metadata and each
source's location, metadata and stored size. Resuming a different job is refused with
:class:`~chunkflow.errors.JobMismatchError`, naming what changed.

A writer uses this module in four steps: build the spec (before creating anything,
so that a function that cannot be tokenized refuses early), :func:`open_job` on the
output, wrap each block's write in :meth:`Job.run <chunkflow.core.jobs.Job.run>`, and
:meth:`Job.finish <chunkflow.core.jobs.Job.finish>` once every block succeeded.

Examples
--------
>>> import numpy as np
>>> import chunkflow
>>> src = chunkflow.array(np.arange(64.0).reshape(8, 8), chunks=(4, 4))
>>> out = chunkflow.zeros((8, 8), chunks=(4, 4))
>>> _ = chunkflow.map_chunks(np.sqrt, src, out=out, resume=True)
>>> bool((out[:] == np.sqrt(src[:])).all()), "chunkflow_job" in out.attrs
(True, False)
"""

from __future__ import annotations

import contextlib
import logging
import sys
from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import TYPE_CHECKING, Any

import dask
import numpy as np
from dask.base import tokenize

from chunkflow.core.jobs import (
    Job,
    JobSpec,
    job_status,
    metadata_part,
    quiet_open,
    recorded_plan,
    source_parts,
)
from chunkflow.errors import JobTokenError
from chunkflow.grid import ChunkKeyEncoding

if TYPE_CHECKING:
    from chunkflow.core.array import Array
    from chunkflow.graph.scheduler import ProgressArg

__all__ = [
    "Job",
    "JobSpec",
    "block_keys",
    "function_parts",
    "job_progress",
    "job_spec",
    "metadata_part",
    "open_job",
    "recorded_multiples",
    "source_parts",
    "unfinished_output",
]

logger = logging.getLogger("chunkflow.jobs")


def function_parts(func: Any, arguments: Any, job_name: str | None,
                   *, what: str = "function") -> dict[str, str]:
    """Tokens of ``func`` and ``arguments`` (``{}`` when ``job_name`` names the job).

    Raises
    ------
    JobTokenError
        ``func`` or ``arguments`` cannot be tokenized deterministically; the message
        says to pass ``job_name=``.

    Examples
    --------
    >>> sorted(function_parts(np.sqrt, {"k": 1}, None)), function_parts(np.sqrt, {}, "j")
    (['arguments', 'function'], {})
    """
    if job_name is not None:
        if not isinstance(job_name, str) or not job_name:
            raise JobTokenError(f"job_name must be a non-empty str, got {job_name!r}")
        return {}
    try:
        with dask.config.set({"tokenize.ensure-deterministic": True}):
            return {what: tokenize(func), "arguments": tokenize(arguments)}
    except Exception as error:  # dask raises RuntimeError, pickling any error
        name = getattr(func, "__qualname__", None) or type(func).__name__
        raise JobTokenError(
            f"resume=True: the {what} {name!r} or its arguments cannot be tokenized "
            f"deterministically ({error}); pass job_name='...' to name the job instead "
            "(the same name in every run of it)"
        ) from error


def job_spec(parts: Mapping[str, str], job_name: str | None,
             plan: Mapping[str, Any] | None = None) -> JobSpec:
    """A :class:`JobSpec` from named parts (see :func:`function_parts`...)."""
    return JobSpec(dict(parts), job_name, dict(plan or {}))


def open_job(out: Array, grid: tuple[int, ...], *, resume: bool, job_name: str | None,
             parts: Callable[[], Mapping[str, str]],
             plan: Mapping[str, Any] | None = None) -> Job | None:
    """:meth:`Job.open <chunkflow.core.jobs.Job.open>` for ``out``, or ``None``.

    ``parts`` is called only for ``resume=True`` (it may list the sources). With
    ``resume=False`` an unfinished job's mark and records on ``out`` are removed.
    ``plan`` is kept in the mark for :func:`recorded_multiples`.
    """
    if not resume:
        return Job.open(out, JobSpec({}), grid, resume=False)
    return Job.open(out, job_spec(parts(), job_name, plan), grid, resume=True)


def unfinished_output(location: Any, path: str | None = None,
                      storage_options: Mapping[str, Any] | None = None) -> Array | None:
    """The array at ``location`` if an unfinished job is writing it, else ``None``
    (opened for writing, without the unfinished-job warning: a writer resumes it)."""
    from chunkflow.api.hierarchy import open_node
    from chunkflow.core.array import Array as ArrayType

    try:
        with quiet_open():
            node = open_node(location, path=path, mode="r+",
                             storage_options=dict(storage_options or {}) or None)
    except FileNotFoundError:
        return None
    if isinstance(node, ArrayType) and job_status(node, count=False) is not None:
        return node
    return None


def recorded_multiples(out: Any, storage_options: Mapping[str, Any] | None
                       ) -> tuple[int, ...] | None:
    """The chunks per block of the unfinished job on ``out`` (``None``: none there).

    A default block plan depends on the scheduler (blocks per worker thread); a resume
    on another cluster reuses the plan the job started with instead of refusing it.
    """
    from chunkflow.api.hierarchy import open_node
    from chunkflow.core.array import Array as ArrayType

    if out is None:
        return None
    try:
        with quiet_open():
            array = out if isinstance(out, ArrayType) else open_node(
                out, mode="r", storage_options=dict(storage_options or {}) or None)
    except FileNotFoundError:
        return None
    plan = recorded_plan(array) if isinstance(array, ArrayType) else None
    multiples = (plan or {}).get("multiples")
    return tuple(int(m) for m in multiples) if isinstance(multiples, list) else None


def block_keys(out: Array, region: tuple[slice, ...]) -> str:
    """The chunk keys of ``out`` a block covers, as text for error messages.

    Examples
    --------
    >>> import chunkflow
    >>> z = chunkflow.zeros((8, 8), chunks=(4, 4), path="out", zarr_format=3)
    >>> block_keys(z, (slice(0, 8), slice(4, 8)))
    "chunk keys 'out/c/0/1' to 'out/c/1/1' (array region [(0, 8), (4, 8)])"
    """
    encoding = ChunkKeyEncoding(*out.metadata.chunk_key_encoding)
    chunks = out.write_chunks
    first = tuple(s.start // c for s, c in zip(region, chunks))
    last = tuple(max(s.start, s.stop - 1) // c for s, c in zip(region, chunks))
    prefix = f"{out.path}/" if out.path else ""
    where = [(s.start, s.stop) for s in region]
    if first == last:
        return f"chunk key {prefix + encoding.encode(first)!r} (array region {where})"
    return (f"chunk keys {prefix + encoding.encode(first)!r} to "
            f"{prefix + encoding.encode(last)!r} (array region {where})")


@contextlib.contextmanager
def job_progress(progress: ProgressArg, jobs: Sequence[Job | None]) -> Iterator[ProgressArg]:
    """``progress`` for a run that skips the blocks ``jobs`` finished before.

    Skipped blocks stay in the graph as instant tasks, so every bar counts them as
    done; this adds the note of how many were skipped (a line above a bar, at INFO
    on the ``chunkflow.jobs`` logger always).
    """
    skipped = sum(job.n_done for job in jobs if job is not None)
    total = sum(job.total for job in jobs if job is not None)
    if skipped:
        note = f"chunkflow: resuming, {skipped} of {total} blocks done before (skipped)"
        logger.info(note)
        if progress is True:
            print(note, file=sys.stderr)
    yield progress


def finish_after(done: Any, job: Job, out: Array) -> Any:
    """The lazy ``done`` marker of a write graph, finishing ``job`` once it is computed."""
    return done.map_blocks(_finish, job, out, dtype=bool, meta=np.empty((), bool))


def _finish(flag: np.ndarray, job: Job, out: Array) -> np.ndarray:
    job.finish(out)
    return flag
