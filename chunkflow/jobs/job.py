"""The record keeper of a resumable job: its mark and its completion records, kept in
the output store (:class:`Job`), and what identifies it (:class:`JobSpec`).

A *job* writes an output array block by block (one block: whole chunks or shards).
Every writer tracks its job, whether or not ``resume=True`` was passed, so that an
output left by a failed run says so (a warning on open, "job incomplete" in ``.info``
and ``chunkflow status``) and a later run of the same job with ``resume=True``, in
any process, recomputes only the blocks not yet written:

- **the mark**: the attribute ``chunkflow_job`` of the output array holds the job's
  token, the parts of the token (function, arguments, block plan, output metadata,
  sources) and the block grid. It is read with the array's metadata (no extra
  request when opening), tells chunkflow the output is unfinished, and is removed
  when the job completes;
- **the records**: one empty object per finished block, under the array's own
  prefix at ``<array>/.chunkflow-job/<token>/b<i>.<j>...``. Zarr readers never look
  there (zarr-python 3, tensorstore and xarray read ``zarr.json``/``.zarray`` and
  chunk keys; a group's member listing stops at the array). A block costs one small
  write; what is done is found with one listing of that prefix. The records are
  deleted before the mark, so that a crash in between leaves a mark with fewer
  records (blocks recomputed), never a finished-looking output with stale records.

A record is written only after all chunks of its block are stored, so a recorded
block is complete; a block without a record is recomputed whole, which is harmless
because blocks are whole chunks (the same bytes are written again).

What a resume cannot detect: writes into the output by other means while the job was
unfinished (``z[...] = x`` between runs); source chunks rewritten in place with the
same total stored size (sources are compared by location, metadata and the total
size of their stored keys, from one listing); functions whose behaviour changed
without a change of their token (a module function is tokenized by name, so an edit
of its body is not seen — pass a new ``job_name=``).

Examples
--------
>>> import chunkflow
>>> from chunkflow.jobs import job_status
>>> z = chunkflow.zeros((4, 4), chunks=(2, 2))
>>> spec = JobSpec({"function": "f1", "block plan": "p1"})
>>> job = Job.open(z, spec, (2, 2), resume=True)
>>> job.commit((0, 0))
>>> job_status(z).done, job_status(z).total
(1, 4)
>>> again = Job.open(z, spec, (2, 2), resume=True)
>>> again.n_done, again.is_done((0, 0)), again.is_done((1, 1))
(1, True, False)
>>> again.finish(z)
>>> job_status(z) is None
True
"""

from __future__ import annotations

import contextlib
import contextvars
import hashlib
import json
import logging
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, TypeVar

import numpy as np

from chunkflow.errors import JobMismatchError, ReadOnlyError
from chunkflow.heap import roomy_heap
from chunkflow.jobs.records import (
    JOB_ATTRIBUTE,
    ArraySetup,
    listed_done,
    read_mark,
    record_name,
    records_folder,
    records_prefix,
)
from chunkflow.jobs.written import drop_written, record_written

if TYPE_CHECKING:
    from chunkflow.storage import Store

__all__ = ["Job", "JobSpec", "not_recorded", "recording", "records_in"]


logger = logging.getLogger("chunkflow.jobs")
T = TypeVar("T")
# Outputs whose job a writer of this thread drives (see Job.driving): writers nested in
# it with resume=False leave that job's mark and records alone.
_DRIVEN: contextvars.ContextVar[frozenset[tuple[str, str]]] = contextvars.ContextVar(
    "chunkflow_driven_jobs", default=frozenset())
_RECORDING: contextvars.ContextVar[bool] = contextvars.ContextVar("chunkflow_recording",
                                                                  default=True)


def recording(out: ArraySetup) -> bool:
    """Whether a job run without ``resume=True`` on ``out`` is recorded (it is, unless
    within :func:`not_recorded`, on a store that cannot delete keys, or driven by
    another job: see :meth:`Job.open`)."""
    return records_in(out.store, out.path)


def records_in(store: Store, path: str) -> bool:
    """:func:`recording` for the array at ``path`` in ``store`` (before it exists)."""
    return (_RECORDING.get() and store.supports_deletes
            and not store.transactional
            and (store.identity, path) not in _DRIVEN.get())


@contextlib.contextmanager
def not_recorded() -> Iterator[None]:
    """Within: jobs run without ``resume=True`` are not recorded (no mark, no records).

    For measuring what recording costs (``benchmarks/bench_resume.py``); an output
    written so that fails halfway looks finished. ``resume=True`` still records.
    """
    token = _RECORDING.set(False)
    try:
        yield
    finally:
        _RECORDING.reset(token)


@dataclass(frozen=True)
class JobSpec:
    """What a job computes, as named parts, each a deterministic token (a str).

    The job's token hashes the parts; comparing the parts of two jobs names what
    changed. ``name`` (a user's ``job_name=``) stands in for the function and its
    arguments where those cannot be tokenized deterministically. ``plan`` holds what a
    writer needs to rebuild the same block plan when resuming (for example the block
    shape a default chose from the number of worker threads); it is kept in the mark
    but is no part of the token (the plan's own token is one of the parts).

    Examples
    --------
    >>> a = JobSpec({"function": "f", "block plan": "p"})
    >>> b = JobSpec({"function": "g", "block plan": "p"})
    >>> a.token == JobSpec({"block plan": "p", "function": "f"}).token, a.changes(b.parts)
    (True, ['function'])
    """

    parts: Mapping[str, str]
    name: str | None = None
    plan: Mapping[str, Any] = field(default_factory=dict, compare=False)

    @property
    def token(self) -> str:
        described = json.dumps({"name": self.name, "parts": dict(self.parts)}, sort_keys=True)
        return hashlib.sha256(described.encode()).hexdigest()[:32]

    def changes(self, recorded: Mapping[str, str], recorded_name: str | None = None) -> list[str]:
        """The parts (and the name) that differ from ``recorded``, in this spec's order."""
        changed = [part for part in dict.fromkeys([*self.parts, *recorded])
                   if self.parts.get(part) != recorded.get(part)]
        if recorded_name != self.name:
            changed.insert(0, f"job_name ({recorded_name!r} -> {self.name!r})")
        return changed


class Job:
    """The bookkeeping of one resumable job on one output array (pickles small).

    Create it with :meth:`open` before the job runs; tasks call :meth:`run` (or
    :meth:`is_done` and :meth:`commit`) per block; the client calls :meth:`finish`
    once every block succeeded.

    Parameters
    ----------
    store, path
        The output array's store and path.
    token
        The job's token (:attr:`JobSpec.token`).
    done
        Boolean array over the block grid: the blocks finished before this run.
    """

    def __init__(self, store: Store, path: str, token: str, done: np.ndarray) -> None:
        self.store = store
        self.path = path
        self.token = token
        self.done = done

    def __repr__(self) -> str:
        return (f"Job({self.path or '/'!r}, token={self.token[:8]}..., "
                f"{self.n_done} of {self.total} blocks done)")

    @property
    def grid(self) -> tuple[int, ...]:
        return tuple(self.done.shape)

    @property
    def total(self) -> int:
        return int(self.done.size)

    @property
    def n_done(self) -> int:
        """Blocks finished before this run (skipped by it)."""
        return int(self.done.sum())

    # -------------------------------------------------------------- client side

    @staticmethod
    def mark(spec: JobSpec, grid: tuple[int, ...]) -> dict[str, Any]:
        """The attributes that mark an output as written by the unfinished job ``spec``
        (for writers that create the output with them in one write)."""
        return {JOB_ATTRIBUTE: {"token": spec.token, "name": spec.name,
                                "grid": [int(n) for n in grid], "parts": dict(spec.parts),
                                "plan": dict(spec.plan)}}

    @classmethod
    def open(cls, out: ArraySetup, spec: JobSpec, grid: tuple[int, ...], *,
             resume: bool) -> Job | None:
        """Start or continue the job ``spec`` on ``out``; ``None`` when not tracked.

        ``resume=True``: continue the unfinished job on ``out`` if it is this one (one
        listing finds its finished blocks), start it if there is none (the mark is
        written), and refuse another job's output. ``resume=False``: an unfinished
        job's mark and records are removed first (its records would otherwise vouch for
        blocks this run overwrites), then the job starts anew: every job is recorded,
        so that an output left by a failed run says so and can be resumed. Not
        tracked (``None``): a ``spec`` without parts, a store that cannot delete keys
        (a zip store), an output whose job drives this writer (:meth:`driving`), and
        within :func:`not_recorded`. On a transactional store (Icechunk) no job is
        tracked: the whole job runs (see :mod:`chunkflow.graph.transactions`).

        Raises
        ------
        JobMismatchError
            ``out`` carries another unfinished job; the message names what differs.
            Nothing is written.
        """
        current = read_mark(out)
        if not resume:
            if (out.store.identity, out.path) in _DRIVEN.get():
                return None  # a block of the job driving this writer: that job records it
            if current is not None:
                _drop(out, current["token"])
            if not spec.parts or not recording(out):
                return None
            return cls._start(out, spec, grid)
        if out.store.transactional:
            # Icechunk: a record is no Zarr key there (refused), and a job's writes land
            # at once at the merge or commit; a failed job leaves nothing to continue.
            logger.info("job %s on %r: a transactional store; the whole job runs",
                        spec.token[:8], out.path)
            return None
        if not out.store.supports_deletes:
            raise ReadOnlyError(
                f"array {out.path or '/'!r} in {out.store.identity}: resume=True needs a store "
                "that deletes keys (its records are removed at the end); a zip store does not")
        if current is None:
            return cls._start(out, spec, grid)
        if current["token"] != spec.token:
            raise JobMismatchError(_mismatch_message(out, spec, current))
        done = listed_done(out.store, out.path, spec.token, grid)
        job = cls(out.store, out.path, spec.token, done)
        logger.info("job %s on %r: resumed, %d of %d blocks done", spec.token[:8], out.path,
                    job.n_done, job.total)
        return job

    @classmethod
    def _start(cls, out: ArraySetup, spec: JobSpec, grid: tuple[int, ...]) -> Job:
        # Records without a mark are leftovers (a mark removed by another tool): they
        # vouch for nothing, and a new job must not trust them.
        out.store.delete_prefix(records_folder(out.path))
        drop_written(out.store, out.path)  # what an earlier job stored (see jobs.written)
        out.attrs.update(cls.mark(spec, grid))
        logger.info("job %s on %r: started, %d blocks", spec.token[:8], out.path,
                    int(np.prod(grid)))
        return cls(out.store, out.path, spec.token, np.zeros(grid, dtype=bool))

    def finish(self, out: ArraySetup | None = None) -> None:
        """The job completed: delete its records, keep the list of the chunks stored
        (:mod:`chunkflow.jobs.written`), then delete its mark (in that order).

        The whole records folder goes (one listing): records of other tokens there are
        leftovers of jobs dropped without cleanup, vouching for nothing.
        """
        self.store.delete_prefix(records_folder(self.path))
        record_written(self.store, self.path)  # for verify: see jobs.written
        if out is not None and read_mark(out) is not None:
            del out.attrs[JOB_ATTRIBUTE]

    def recorder(self) -> Job:
        """A copy that records blocks but knows none as done: for plans that leave the
        finished blocks out of the graph, so tasks do not carry the done bitmap."""
        return type(self)(self.store, self.path, self.token, np.zeros((0,) * len(self.grid), bool))

    @contextlib.contextmanager
    def driving(self) -> Iterator[None]:
        """Within: this job writes its blocks through other writers (a slab with
        ``chunkflow.store``...) called with ``resume=False``; they leave its mark and
        records alone instead of dropping them as another job's."""
        token = _DRIVEN.set(_DRIVEN.get() | {(self.store.identity, self.path)})
        try:
            yield
        finally:
            _DRIVEN.reset(token)

    # ---------------------------------------------------------------- task side

    def is_done(self, index: tuple[int, ...]) -> bool:
        """Whether block ``index`` was finished before this run."""
        return bool(self.done.size) and bool(self.done[index])

    def commit(self, index: tuple[int, ...]) -> None:
        """Record block ``index`` as finished (call after all its chunks are stored)."""
        self.store[f"{records_prefix(self.path, self.token)}/{record_name(index)}"] = b""

    def run(self, index: tuple[int, ...], write: Callable[[], T], skipped: T,
            describe: Callable[[], str] = lambda: "") -> T:
        """Run ``write`` for block ``index`` unless it is done, then record it.

        Returns ``skipped`` for a block finished before; a failure of ``write`` gets a
        note naming the block (``describe()``, e.g. its chunk keys) and how to resume.
        """
        if self.is_done(index):
            return skipped
        try:
            with roomy_heap():  # the block's temporaries, not mapped anew in a worker
                result = write()
        except Exception as error:
            where = describe() or f"block {index}"
            error.add_note(f"chunkflow job {self.token[:8]} on array {self.path or '/'!r}: "
                           f"{where} failed; blocks already written are recorded, rerun "
                           "the same job with resume=True to finish it")
            raise
        self.commit(index)
        return result


def _drop(out: ArraySetup, token: str) -> None:
    out.store.delete_prefix(records_folder(out.path))
    del out.attrs[JOB_ATTRIBUTE]


def _mismatch_message(out: ArraySetup, spec: JobSpec, current: Mapping[str, Any]) -> str:
    recorded = current.get("parts") or {}
    changed = spec.changes(recorded, current.get("name")) or ["the job token"]
    hint = ""
    if any(part.startswith(("function", "arguments")) for part in changed) and spec.name is None:
        hint = (" If the function is the same but cannot be tokenized deterministically "
                "(a callable object whose token changes between processes), name the job "
                "with job_name= (in both runs).")
    return (
        f"array {out.path or '/'!r} in {out.store.identity} is the output of an unfinished "
        f"job ({current.get('name') or current['token'][:8]}) that differs from this one in: "
        f"{', '.join(changed)}. Nothing was written. Rerun the original job with "
        f"resume=True to finish it, or pass resume=False to start over.{hint}"
    )
