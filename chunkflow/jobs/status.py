"""What an unfinished output tells: its job's status, the warning on open, the blocks
that remain (for ``Array.info``, the repr and ``chunkflow status``)."""

from __future__ import annotations

import contextlib
import contextvars
import warnings
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field

import numpy as np

from chunkflow.errors import IncompleteJobWarning
from chunkflow.jobs.records import ArraySetup, listed_done, read_mark

__all__ = ["JobStatus", "job_status", "quiet_open", "remaining_blocks", "warn_if_incomplete"]

_WARNED: set[tuple[str, str, str]] = set()


@dataclass(frozen=True)
class JobStatus:
    """An unfinished job on an array: its token, name, block grid and finished blocks.

    ``done`` is ``None`` where counting was not asked for (it needs a listing).
    """

    token: str
    name: str | None
    grid: tuple[int, ...]
    done: int | None = None
    remaining: tuple[tuple[int, ...], ...] = field(default=(), repr=False)

    @property
    def total(self) -> int:
        return int(np.prod(self.grid, dtype=np.int64))

    def describe(self) -> str:
        """One line, as ``Array.info`` and the repr show it.

        Examples
        --------
        >>> JobStatus("ab12", None, (10, 10), 37).describe()
        'job incomplete: 37 of 100 blocks done'
        """
        done = "?" if self.done is None else str(self.done)
        return f"job incomplete: {done} of {self.total} blocks done"


def job_status(array: ArraySetup, count: bool = True) -> JobStatus | None:
    """The unfinished job writing ``array``, or ``None`` when there is none.

    Reads nothing to know whether a job is unfinished (the mark comes with the
    metadata); ``count=True`` lists the records (one listing) to count the finished
    blocks and name the remaining ones.
    """
    mark = read_mark(array)
    if mark is None:
        return None
    grid = tuple(int(n) for n in mark.get("grid", ()))
    if not count:
        return JobStatus(mark["token"], mark.get("name"), grid)
    done = listed_done(array.store, array.path, mark["token"], grid)
    remaining = tuple(tuple(int(i) for i in index) for index in np.argwhere(~done))
    return JobStatus(mark["token"], mark.get("name"), grid, int(done.sum()), remaining)


_QUIET: contextvars.ContextVar[bool] = contextvars.ContextVar("chunkflow_quiet_open",
                                                             default=False)


@contextlib.contextmanager
def quiet_open() -> Iterator[None]:
    """Within: opening an unfinished output does not warn (a writer about to resume it)."""
    token = _QUIET.set(True)
    try:
        yield
    finally:
        _QUIET.reset(token)


def warn_if_incomplete(array: ArraySetup) -> None:
    """Warn (once per array, job and process) that ``array``'s job is unfinished."""
    mark = read_mark(array)
    if mark is None or _QUIET.get():
        return
    seen = (array.store.identity, array.path, mark["token"])
    if seen in _WARNED:
        return
    _WARNED.add(seen)
    warnings.warn(
        f"array {array.path or '/'!r} in {array.store.identity} is the output of an "
        f"unfinished job ({mark.get('name') or mark['token']}): some blocks are not written "
        "yet. Rerun the job with resume=True to finish it; `chunkflow status` lists the "
        "remaining blocks.", IncompleteJobWarning, stacklevel=3)


def remaining_blocks(status: JobStatus, limit: int | None = None) -> Iterable[str]:
    """The remaining blocks of ``status`` as text lines (at most ``limit``)."""
    for count, index in enumerate(status.remaining):
        if limit is not None and count >= limit:
            yield f"... and {len(status.remaining) - limit} more"
            return
        yield f"block {index}"
