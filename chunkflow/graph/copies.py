"""``chunkflow.copy`` and ``chunkflow.copy_all``: the copies of :mod:`chunkflow.api.copying`
with ``scheduler=`` and ``progress=``, as every function that computes takes them.

The groups, arrays and attributes are created first (the ``if_exists`` rules are the
API's), then every array's values are written by one dask job
(:func:`~chunkflow.graph.write.store` of :func:`~chunkflow.graph.read.to_dask`: blocks
of whole source chunks, writes regrouped onto the copy's chunks) on the scheduler
named; into an Icechunk session on a cluster, through forks of the session that carry
every node the copy created (see :mod:`chunkflow.graph.transactions`). A source that is
not a chunkflow array (an h5py dataset, a zarr-python array) is read in this process,
as before. With ``resume=True`` arrays are copied block by block in this process, each
block recorded (see :mod:`chunkflow.api.block_copy`).

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
import os
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
from chunkflow.graph.scheduler import compute as run
from chunkflow.graph.transactions import transaction
from chunkflow.graph.write import store
from chunkflow.storage import Store, make_store, output_location

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


def _deferred_writer(pending: list[Delayed], targets: list[Array] | None = None
                     ) -> Callable[[Any, Array], None]:
    """Collects each array's write as a delayed job instead of running it. With
    ``targets`` (a copy computed here), only chunkflow arrays are: others are read in
    this process at once, and the targets collected are listed in ``targets``."""
    def write(source: Any, target: Array) -> None:
        if targets is not None and not isinstance(source, Array):
            target[...] = source  # not readable by to_dask: the engine reads it here
            return
        values = to_dask(source) if isinstance(source, Array) else \
            da.from_array(source, chunks=target.write_chunks)
        job = store(values, target, compute=False)
        if job is not None:
            pending.append(job)
            if targets is not None:
                targets.append(target)

    return write


def _copy_now(func: Callable[..., Any], name: str, scheduler: SchedulerLike,
              progress: ProgressArg, args: Any, kwargs: Any) -> Any:
    """Run ``func`` (a copy), then every array's write in one dask job: into an
    Icechunk session on a cluster the job's forks carry every node the copy created
    (a session with the chunks of one array written cannot be forked for the next)."""
    args, kwargs, opened = _open_out(args, kwargs)
    pending: list[Delayed] = []
    targets: list[Array] = []
    carries: list[tuple[Any, Array]] = []
    try:
        token = ARRAY_WRITER.set(_deferred_writer(pending, targets))
        carried = DEFERRED_CARRIES.set(carries)
        try:
            counts = func(*args, **kwargs)
        finally:
            DEFERRED_CARRIES.reset(carried)
            ARRAY_WRITER.reset(token)
        if pending:
            with transaction(targets, scheduler=scheduler, commit=None, what=name) as on:
                run(dask.delayed(_all_written, pure=False)([], *pending), scheduler=on,
                    progress=progress)
            for target in targets:
                target.forget_cached()  # written by other processes
        for source, target in carries:  # in this process: into the session itself
            carry_unfinished(source, target)
    finally:
        if opened is not None:
            opened.close()  # a zip file is valid once closed
    return counts


def _open_out(args: Any, kwargs: dict[str, Any]) -> tuple[Any, dict[str, Any], Store | None]:
    """The copy's arguments with ``out`` resolved as every writer resolves it
    (:func:`~chunkflow.storage.output_location`), a path or URL opened here as a store
    (the copy would close it before the job writes the values); and that store."""
    given = args[1] if len(args) > 1 else kwargs.get("out")
    out = output_location(given)
    opened = None
    if isinstance(out, (str, os.PathLike)):
        kwargs = dict(kwargs)
        out = opened = make_store(out, mode="a",
                                  storage_options=kwargs.pop("storage_options", None))
    if out is given:
        return args, kwargs, None
    if len(args) > 1:
        return (args[0], out, *args[2:]), kwargs, opened
    return args, {**kwargs, "out": out}, opened


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
        if compute and kwargs.get("resume"):  # block by block in this process
            return func(*args, **kwargs)
        if compute:
            return _copy_now(func, name, scheduler, progress, args, kwargs)
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
