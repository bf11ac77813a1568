"""``chunkflow.copy`` and ``chunkflow.copy_all``: the copies of :mod:`chunkflow.api.copying`
with ``scheduler=`` and ``progress=``, as every function that computes takes them.

Each array's values are written by a dask job (:func:`~chunkflow.graph.write.store` of
:func:`~chunkflow.graph.read.to_dask`: blocks of whole source chunks, writes regrouped
onto the copy's chunks) on the scheduler named; the groups, attributes and the
``if_exists`` rules are the API's. A source that is not a chunkflow array (an h5py
dataset, a zarr-python array) is read in this process, as before. With
``resume=True`` arrays are copied block by block in this process, each block recorded
(see :mod:`chunkflow.api.block_copy`).

With ``compute=False`` the groups, arrays and attributes are created now and the call
returns ``(counts, delayed)``: the values are written when ``delayed`` is computed
(one dask job for every array; a source that is not a chunkflow array is read through
``dask.array.from_array``).

Examples
--------
>>> import numpy as np
>>> import chunkflow
>>> src = chunkflow.array(np.arange(10), chunks=4)
>>> dst = chunkflow.group()
>>> seen = []
>>> chunkflow.copy(src, dst, "x", scheduler="sync",
...                progress=lambda done, total: seen.append((done, total)))
(1, 0, 80)
>>> int(dst["x"][9]), seen[-1][0] == seen[-1][1]
(9, True)
>>> counts, pending = chunkflow.copy(src, dst, "y", compute=False)
>>> counts, int(dst["y"][9])
((1, 0, 80), 0)
>>> _ = pending.compute(scheduler="sync")
>>> int(dst["y"][9])
9
"""

from __future__ import annotations

import functools
import inspect
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import dask
import dask.array as da
from dask.delayed import Delayed

from chunkflow.api import copying
from chunkflow.api.block_copy import ARRAY_WRITER, DEFERRED_CARRIES
from chunkflow.api.unfinished import carry_unfinished
from chunkflow.config.renames import renamed_parameters
from chunkflow.core.array import Array
from chunkflow.errors import InvalidArgumentError
from chunkflow.graph.read import to_dask
from chunkflow.graph.scheduler import ProgressArg
from chunkflow.graph.write import store

if TYPE_CHECKING:
    from chunkflow.graph.scheduler import SchedulerLike

__all__ = ["copy", "copy_all"]

_DOC = """    scheduler, progress
        Where each array's values are copied, and whether to show a bar (see
        :func:`chunkflow.compute`). Sources that are not chunkflow arrays, and copies
        with ``resume=True``, are copied in this process.
    compute : bool
        Copy now (default), or create the groups and arrays now and return
        ``(counts, delayed)``, whose ``delayed.compute()`` writes the values. Not with
        ``resume=True`` (a resumed copy runs block by block in this process).
"""


def _writer(scheduler: SchedulerLike, progress: ProgressArg) -> Callable[[Any, Array], None]:
    def write(source: Any, target: Array) -> None:
        if isinstance(source, Array):
            store(to_dask(source), target, scheduler=scheduler, progress=progress)
        else:  # not readable by to_dask: the engine reads it here, chunk by chunk
            target[...] = source

    return write


def _deferred_writer(pending: list[Delayed]) -> Callable[[Any, Array], None]:
    """Collects each array's write as a delayed job instead of running it."""
    def write(source: Any, target: Array) -> None:
        values = to_dask(source) if isinstance(source, Array) else \
            da.from_array(source, chunks=target.write_chunks)
        job = store(values, target, compute=False)
        if job is not None:
            pending.append(job)

    return write


def _all_written(carries: list[tuple[Any, Array]], *_: Any) -> None:
    """The last task of a deferred copy: every array's job ran; copies of unfinished
    sources (``unfinished="copy"``) are marked unfinished now (their own jobs, which
    just finished, removed their marks)."""
    for source, target in carries:
        carry_unfinished(source, target)


def _with_scheduler(func: Callable[..., Any]) -> Callable[..., Any]:
    name = func.__name__

    @renamed_parameters(dest="out")
    @functools.wraps(func)
    def wrapper(*args: Any, scheduler: SchedulerLike = None, progress: ProgressArg = False,
                compute: bool = True, **kwargs: Any) -> Any:
        if compute:
            token = ARRAY_WRITER.set(_writer(scheduler, progress))
            try:
                return func(*args, **kwargs)
            finally:
                ARRAY_WRITER.reset(token)
        if kwargs.get("resume"):
            raise InvalidArgumentError(
                f"{name}: compute=False with resume=True; a resumed copy runs block by block "
                "in this process: pass compute=True (or resume=False)")
        pending: list[Delayed] = []
        carries: list[tuple[Any, Array]] = []
        token = ARRAY_WRITER.set(_deferred_writer(pending))
        carried = DEFERRED_CARRIES.set(carries)
        try:
            counts = func(*args, **kwargs)
        finally:
            DEFERRED_CARRIES.reset(carried)
            ARRAY_WRITER.reset(token)
        return counts, dask.delayed(_all_written, pure=False)(carries, *pending)

    signature = inspect.signature(func)
    parameters = list(signature.parameters.values())
    at = next(i for i, p in enumerate(parameters) if p.kind is p.VAR_KEYWORD)
    added = [inspect.Parameter("scheduler", inspect.Parameter.KEYWORD_ONLY, default=None,
                               annotation="SchedulerLike"),
             inspect.Parameter("progress", inspect.Parameter.KEYWORD_ONLY, default=False,
                               annotation="ProgressArg"),
             inspect.Parameter("compute", inspect.Parameter.KEYWORD_ONLY, default=True,
                               annotation="bool")]
    wrapper.__signature__ = signature.replace(  # type: ignore[attr-defined]  # inspect reads it
        parameters=parameters[:at] + added + parameters[at:])
    if func.__doc__ and "    resume : bool\n" in func.__doc__:
        wrapper.__doc__ = func.__doc__.replace("    resume : bool\n", _DOC + "    resume : bool\n", 1)
    wrapper.__module__ = __name__
    return wrapper


copy = _with_scheduler(copying.copy)
copy_all = _with_scheduler(copying.copy_all)
