"""Resumable writers: opening a job, the keys a block covers, and progress.

Every chunkflow function that writes an output (:func:`chunkflow.map_chunks` with
``out=``, :func:`chunkflow.store`, :func:`chunkflow.to_chunkflow`,
:func:`chunkflow.rechunk`, :func:`chunkflow.pyramid`, :func:`chunkflow.copy`,
:func:`chunkflow.copy_all`, the CLI's writing commands) takes ``resume=``. Every run
records each output block it finishes, with ``resume=True`` or not (see
:mod:`chunkflow.jobs.job` for where and how); rerunning the same call with
``resume=True`` after a crash, in any process or on any cluster, recomputes only the
blocks not recorded, and the result is bit-identical to an uninterrupted run.

A job is identified by a token of what it computes
(:func:`~chunkflow.jobs.identity.job_identity`): the function and its arguments (or
``job_name=``), the plan, the output's metadata and each source's location, metadata
and stored size. Resuming a different job is refused with
:class:`~chunkflow.errors.JobMismatchError`, naming what changed.

A writer uses the jobs in four steps: take the function's tokens
(:func:`~chunkflow.jobs.identity.function_parts`, before creating anything, so that a
function that cannot be tokenized refuses early), :func:`open_job` on the output, wrap
each block's write in :meth:`Job.run <chunkflow.jobs.Job.run>`, and
:meth:`Job.finish <chunkflow.jobs.Job.finish>` once every block succeeded.

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
from collections.abc import Callable, Iterator, Sequence
from typing import Any

import numpy as np

from chunkflow.errors import JobMismatchError
from chunkflow.grid import ChunkKeyEncoding
from chunkflow.jobs.identity import metadata_part
from chunkflow.jobs.job import Job, JobSpec, recording

__all__ = ["block_keys", "check_same_output", "finish_after", "job_progress", "open_job"]

logger = logging.getLogger("chunkflow.jobs")

# What every progress= argument accepts (see chunkflow.graph.scheduler.compute).
ProgressArg = bool | Callable[[int, int], Any]


def open_job(out: Any, grid: tuple[int, ...], *, resume: bool,
             identity: Callable[[], JobSpec]) -> Job | None:
    """:meth:`Job.open <chunkflow.jobs.Job.open>` for ``out``, or ``None``.

    ``identity`` (a :func:`~chunkflow.jobs.identity.job_identity`; it may list the
    sources) is called unless the job is not tracked (see :meth:`Job.open`). With
    ``resume=False`` an unfinished job's mark and records on ``out`` are removed and
    the job starts anew, recorded all the same.
    """
    if not resume and not recording(out):
        return Job.open(out, JobSpec({}), grid, resume=False)  # drops an old job only
    return Job.open(out, identity(), grid, resume=resume)


def check_same_output(existing: Any, expected: Any, where: str, restart: str) -> None:
    """Refuse to resume into ``existing`` when its metadata is not ``expected``'s.

    An unfinished output created with another dtype, chunk shape, format or codecs
    belongs to another job; nothing is written. ``where`` names the output in the
    message, ``restart`` says how to start over.

    Raises
    ------
    JobMismatchError
        The metadata differ.

    Examples
    --------
    >>> import chunkflow
    >>> check_same_output(chunkflow.zeros(4, chunks=2), chunkflow.zeros(4, chunks=2),
    ...                   "out", "start over")
    >>> check_same_output(chunkflow.zeros(4, chunks=2), chunkflow.zeros(4, chunks=4),
    ...                   "out", "start over")  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    chunkflow.errors.JobMismatchError: out is the unfinished output of a job that differs ...
    """
    if metadata_part(expected) != metadata_part(existing):
        raise JobMismatchError(
            f"{where} is the unfinished output of a job that differs from this one in: "
            "output metadata (dtype, chunks, format or codecs). Nothing was written. "
            f"{restart}")


def block_keys(out: Any, region: tuple[slice, ...]) -> str:
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


def finish_after(done: Any, job: Job, out: Any) -> Any:
    """The lazy ``done`` marker of a write graph, finishing ``job`` once it is computed."""
    return done.map_blocks(_finish, job, out, dtype=bool, meta=np.empty((), bool))


def _finish(flag: np.ndarray, job: Job, out: Any) -> np.ndarray:
    job.finish(out)
    return flag
