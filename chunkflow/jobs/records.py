"""Where a resumable job keeps its state in the output store: the mark and the records.

The low layer of :mod:`chunkflow.jobs.job` (which documents the scheme): key names,
reading the mark from an array's attributes, and listing the finished blocks.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Protocol

import numpy as np

if TYPE_CHECKING:
    from chunkflow.storage import Store

__all__ = [
    "JOB_ATTRIBUTE",
    "RECORDS_FOLDER",
    "ArraySetup",
    "listed_done",
    "parse_record",
    "read_mark",
    "record_name",
    "recorded_block_plan",
    "recorded_plan",
    "records_folder",
    "records_prefix",
    "without_mark",
]

#: The attribute of an unfinished output that marks it (removed on completion).
JOB_ATTRIBUTE = "chunkflow_job"
#: The folder under the array's prefix holding the completion records.
RECORDS_FOLDER = ".chunkflow-job"


class ArraySetup(Protocol):
    """What the job bookkeeping needs of an output array (a chunkflow Array has it)."""

    @property
    def store(self) -> Store: ...

    @property
    def path(self) -> str: ...

    @property
    def attrs(self) -> Any: ...


def records_prefix(path: str, token: str) -> str:
    """Where the records of job ``token`` on the array at ``path`` live.

    Examples
    --------
    >>> records_prefix("out", "0123456789abcdef0123456789abcdef")
    'out/.chunkflow-job/0123456789abcdef0123'
    """
    return f"{records_folder(path)}/{token[:20]}"


def records_folder(path: str) -> str:
    return f"{path}/{RECORDS_FOLDER}" if path else RECORDS_FOLDER


def record_name(index: tuple[int, ...]) -> str:
    return "b" + ".".join(str(i) for i in index)


def parse_record(name: str, grid: tuple[int, ...]) -> tuple[int, ...] | None:
    if not name.startswith("b"):
        return None
    try:
        index = tuple(int(i) for i in name[1:].split(".")) if name != "b" else ()
    except ValueError:
        return None
    if len(index) != len(grid) or any(not 0 <= i < n for i, n in zip(index, grid)):
        return None
    return index


def read_mark(array: ArraySetup) -> dict[str, Any] | None:
    mark = array.attrs.get(JOB_ATTRIBUTE)
    if not isinstance(mark, dict) or not isinstance(mark.get("token"), str):
        return None
    return mark


def listed_done(store: Store, path: str, token: str, grid: tuple[int, ...]) -> np.ndarray:
    """The finished blocks of job ``token``, as a boolean array over its block grid."""
    done = np.zeros(grid, dtype=bool)
    prefix = records_prefix(path, token)
    for key in store.list_prefix(prefix):  # one listing, however many blocks
        index = parse_record(key.rpartition("/")[2], grid)
        if index is not None:
            done[index] = True
    return done


def recorded_plan(array: ArraySetup) -> dict[str, Any] | None:
    """The ``plan`` of the unfinished job writing ``array`` (see :class:`JobSpec`)."""
    mark = read_mark(array)
    plan = mark.get("plan") if mark is not None else None
    return plan if isinstance(plan, dict) else None


def recorded_block_plan(array: ArraySetup) -> dict[str, tuple[int, ...]]:
    """The block plan of the unfinished job on ``array``: its ``"multiples"`` (chunks
    per block) and, for grouped map tasks, ``"group"`` (blocks per task); ``{}``: no job.

    A default block plan depends on the scheduler (blocks per worker thread); a resume
    on another cluster reuses the plan the job started with instead of refusing it.
    """
    plan = recorded_plan(array) or {}
    return {name: tuple(int(m) for m in value) for name, value in plan.items()
            if isinstance(value, list) and all(isinstance(m, int) for m in value)}


def without_mark(attributes: dict[str, Any] | None) -> dict[str, Any]:
    """``attributes`` without a job's mark (a copy of an unfinished output is no job).

    Examples
    --------
    >>> without_mark({"units": "m", JOB_ATTRIBUTE: {"token": "ab12"}})
    {'units': 'm'}
    """
    return {k: v for k, v in (attributes or {}).items() if k != JOB_ATTRIBUTE}
