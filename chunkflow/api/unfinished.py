"""Unfinished outputs seen by the API: opened by a writer about to resume them, and
copied by :func:`chunkflow.copy`.

A writer with ``resume=True`` opens its output quietly (no
:class:`~chunkflow.errors.IncompleteJobWarning`: it is about to finish the job) and,
where its default plan depends on the scheduler, reuses the plan the job started with
(:func:`~chunkflow.jobs.records.recorded_block_plan`).

A copy refuses an unfinished source (:func:`check_copy_source`) unless told
``unfinished="copy"``; then the copy carries the source's mark and its records
(:func:`carry_unfinished`), so that the copy is unfinished exactly as the source is:
``chunkflow.open`` warns, ``chunkflow status`` counts the same blocks done, and the
xarray engine marks its variables.

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
from typing import Any, Literal

from chunkflow.api.hierarchy import open_node
from chunkflow.core.array import Array
from chunkflow.errors import InvalidArgumentError, UnfinishedSourceError
from chunkflow.jobs import (
    JOB_ATTRIBUTE,
    job_status,
    quiet_open,
    recorded_block_plan,
    records_prefix,
)

__all__ = ["UNFINISHED_CHOICES", "Unfinished", "carry_unfinished", "check_copy_source",
           "check_unfinished_argument", "open_recorded_block_plan", "open_unfinished",
           "source_mark"]

#: What a copy does with a source an unfinished job is writing: refuse it
#: (``"raise"``), or copy it as it is, marked unfinished (``"copy"``).
Unfinished = Literal["raise", "copy"]
UNFINISHED_CHOICES = ("raise", "copy")


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


def check_unfinished_argument(unfinished: object) -> None:
    """Refuse an ``unfinished=`` that is not one of :data:`UNFINISHED_CHOICES`."""
    if unfinished not in UNFINISHED_CHOICES:
        raise InvalidArgumentError(
            f"unfinished must be one of {UNFINISHED_CHOICES}, got {unfinished!r}")


def source_mark(source: Any) -> dict[str, Any] | None:
    """The unfinished-job mark of ``source`` (any node with ``attrs``: a zarr-python
    array carries it too), or ``None`` for a finished one. Reads nothing: the mark
    comes with the metadata.

    Examples
    --------
    >>> import chunkflow
    >>> source_mark(chunkflow.zeros((2,))) is None
    True
    """
    attrs = getattr(source, "attrs", None)
    try:
        mark = attrs.get(JOB_ATTRIBUTE) if attrs is not None else None
    except (AttributeError, TypeError):  # an array-like whose attrs are no mapping
        return None
    return mark if isinstance(mark, dict) and isinstance(mark.get("token"), str) else None


def check_copy_source(source: Any, unfinished: Unfinished, what: str) -> None:
    """Refuse to copy ``source`` when an unfinished job is writing it and
    ``unfinished="raise"``; ``what`` names the source in the message.

    Raises
    ------
    UnfinishedSourceError
        Naming the source, its job and how many blocks are done, and the two ways
        on: finish the job, or ``unfinished="copy"``.

    Examples
    --------
    >>> import chunkflow
    >>> check_copy_source(chunkflow.zeros((2,)), "raise", "'/x'")  # finished: no error
    """
    mark = source_mark(source)
    if mark is None or unfinished == "copy":
        return
    status = job_status(source) if isinstance(source, Array) else None
    described = status.describe() if status is not None else "job incomplete"
    raise UnfinishedSourceError(
        f"cannot copy {what}: it is the output of an unfinished job "
        f"({mark.get('name') or mark['token'][:8]}; {described}), whose missing blocks "
        f"would read as the fill value. Finish the job first (rerun it with resume=True; "
        f"`chunkflow status` lists the remaining blocks), or pass unfinished='copy' to "
        f"copy it as it is: the copy is then marked unfinished too. Nothing was copied."
    )


def carry_unfinished(source: Any, target: Array) -> None:
    """Mark ``target``, a finished copy of the unfinished ``source``, as unfinished:
    the source's mark goes into its attributes first, then the source's records (the
    blocks done) are copied (a chunkflow source's; one listing), so that a crash in
    between leaves a mark with fewer records, never a finished-looking copy.

    Examples
    --------
    >>> import chunkflow
    >>> from chunkflow.jobs import Job, JobSpec
    >>> src = chunkflow.zeros((4,), chunks=(2,))
    >>> job = Job.open(src, JobSpec({"function": "f"}), (2,), resume=True)
    >>> job.commit((1,))
    >>> copy = chunkflow.zeros((4,), chunks=(2,))
    >>> carry_unfinished(src, copy)
    >>> job_status(copy).done, job_status(copy).total
    (1, 2)
    """
    mark = source_mark(source)
    if mark is None:
        return
    target.attrs[JOB_ATTRIBUTE] = mark
    if not isinstance(source, Array):
        return
    old = records_prefix(source.path, mark["token"])
    new = records_prefix(target.path, mark["token"])
    records = source.store.get_many(list(source.store.list_prefix(old)))
    if records:
        target.store.set_many({new + key[len(old):]: value for key, value in records.items()})
