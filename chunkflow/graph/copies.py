"""``chunkflow.copy`` and ``chunkflow.copy_all``: the copies of :mod:`chunkflow.api.copying`
with ``scheduler=`` and ``progress=``, as every function that computes takes them.

Each array's values are written by a dask job (:func:`~chunkflow.graph.write.store` of
:func:`~chunkflow.graph.read.to_dask`: blocks of whole source chunks, writes regrouped
onto the copy's chunks) on the scheduler named; the groups, attributes and the
``if_exists`` rules are the API's. A source that is not a chunkflow array (an h5py
dataset, a zarr-python array) is read in this process, as before. With
``resume=True`` arrays are copied block by block in this process, each block recorded
(see :mod:`chunkflow.api.block_copy`).

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
"""

from __future__ import annotations

import functools
import inspect
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from chunkflow.api import copying
from chunkflow.api.block_copy import ARRAY_WRITER
from chunkflow.config.renames import renamed_parameters
from chunkflow.core.array import Array
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
"""


def _writer(scheduler: SchedulerLike, progress: ProgressArg) -> Callable[[Any, Array], None]:
    def write(source: Any, target: Array) -> None:
        if isinstance(source, Array):
            store(to_dask(source), target, scheduler=scheduler, progress=progress)
        else:  # not readable by to_dask: the engine reads it here, chunk by chunk
            target[...] = source

    return write


def _with_scheduler(func: Callable[..., Any]) -> Callable[..., Any]:
    @renamed_parameters(dest="out")
    @functools.wraps(func)
    def wrapper(*args: Any, scheduler: SchedulerLike = None, progress: ProgressArg = False,
                **kwargs: Any) -> Any:
        token = ARRAY_WRITER.set(_writer(scheduler, progress))
        try:
            return func(*args, **kwargs)
        finally:
            ARRAY_WRITER.reset(token)

    signature = inspect.signature(func)
    parameters = list(signature.parameters.values())
    at = next(i for i, p in enumerate(parameters) if p.kind is p.VAR_KEYWORD)
    added = [inspect.Parameter("scheduler", inspect.Parameter.KEYWORD_ONLY, default=None,
                               annotation="SchedulerLike"),
             inspect.Parameter("progress", inspect.Parameter.KEYWORD_ONLY, default=False,
                               annotation="ProgressArg")]
    wrapper.__signature__ = signature.replace(  # type: ignore[attr-defined]  # inspect reads it
        parameters=parameters[:at] + added + parameters[at:])
    if func.__doc__ and "    resume : bool\n" in func.__doc__:
        wrapper.__doc__ = func.__doc__.replace("    resume : bool\n", _DOC + "    resume : bool\n", 1)
    wrapper.__module__ = __name__
    return wrapper


copy = _with_scheduler(copying.copy)
copy_all = _with_scheduler(copying.copy_all)
