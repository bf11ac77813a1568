"""Reductions of arrays larger than memory, with memory bounded by a few blocks.

``mean``, ``std``, ``var``, ``min``, ``max`` and ``sum`` are dask's own reductions
over a :func:`~chunkflow.graph.read.to_dask` array whose blocks are sized for the
reduction rather than for storage, with a ``split_every`` chosen from the memory
budget, on the scheduler the caller names.

Why the block size matters: a reduction's per-block step works in float64 (``std``
subtracts the mean, then squares), so a block of 2-byte integers needs about nine
times its size while it is reduced. Blocks of a fixed, modest size (4 MiB decoded, or
less when the budget is tight) keep the peak at "a few blocks per thread", the same for
an 8192^2 array as for a 65536^2 one. The reduction tree then combines
``split_every`` partial results at a time, as many as fit the budget.

Examples
--------
>>> import numpy as np
>>> import chunkflow
>>> z = chunkflow.array(np.arange(100, dtype="u2").reshape(10, 10), chunks=(3, 3))
>>> stats = reduce(z, ("mean", "max", "sum"))
>>> float(stats["mean"]), int(stats["max"]), int(stats["sum"])
(49.5, 99, 4950)
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

import dask.array as da

from chunkflow.config.renames import renamed_parameters
from chunkflow.errors import InvalidArgumentError
from chunkflow.graph.reductions.plan import reduction_input, split_every
from chunkflow.graph.scheduler import ProgressArg
from chunkflow.graph.scheduler import compute as run

if TYPE_CHECKING:
    from chunkflow.graph.read import BlockChunks
    from chunkflow.graph.reductions.plan import ReductionSource
    from chunkflow.graph.scheduler import SchedulerLike
    from chunkflow.indexing import Selection

# sum, min and max are reductions' names (as numpy's); they stay out of every __all__
# that a star import could carry into a namespace where they would hide the builtins.
__all__ = ["OPERATIONS", "mean", "reduce", "std", "var"]

OPERATIONS = ("mean", "std", "var", "min", "max", "sum")
StorageOptions = Mapping[str, Any] | None


def _reduction(x: da.Array, op: str, axis: int | tuple[int, ...] | None, every: int, ddof: int) -> da.Array:
    if op not in OPERATIONS:
        raise InvalidArgumentError(f"unknown reduction {op!r}; expected one of {', '.join(OPERATIONS)}")
    method = getattr(x, op)
    if op in ("std", "var"):
        return method(axis=axis, split_every=every, ddof=ddof)
    return method(axis=axis, split_every=every)


@renamed_parameters(chunks="blocks", memory_limit="max_memory", compute_now="compute")
def reduce(
    source: ReductionSource,
    ops: Sequence[str] = ("mean", "std"),
    *,
    selection: Selection = Ellipsis,
    axis: int | tuple[int, ...] | None = None,
    ddof: int = 0,
    blocks: BlockChunks = None,
    max_memory: int | str | None = None,
    scheduler: SchedulerLike = None,
    progress: ProgressArg = False,
    compute: bool = True,
    storage_options: StorageOptions = None,
) -> dict[str, Any]:
    """Several reductions of one array in one pass over its chunks.

    Parameters
    ----------
    source : chunkflow.Array, path, URL, store or dask array
        What to reduce. Arrays given by location are opened read-only and read past
        the process-wide chunk cache (one pass reads each chunk once; caching them would
        hold up to the cache budget for nothing); an open Array reads through its own.
    ops : sequence of str
        Any of ``mean``, ``std``, ``var``, ``min``, ``max``, ``sum``.
    selection : basic selection
        The part of the array to reduce.
    axis, ddof
        As in numpy.
    blocks : optional
        The dask blocks (groups of chunks, see :func:`~chunkflow.graph.read.to_dask`);
        default: sized from ``max_memory``
        (:func:`~chunkflow.graph.reductions.plan.reduction_block_bytes`).
    max_memory : int or str, optional
        Bytes one task may use (bytes or text such as ``"64 MiB"``); default: a
        worker's memory shared by its threads
        (:func:`~chunkflow.graph.memory.task_max_memory`).
    scheduler, progress
        See :func:`chunkflow.compute`.
    compute : bool
        ``False`` returns the lazy dask arrays instead of numbers.
    storage_options : dict, optional
        fsspec options (credentials, ``endpoint_url``...) when ``source`` is a URL.

    Returns
    -------
    dict
        ``{op: result}``, numpy scalars or arrays (dask arrays if not computed).
    """
    x, block_bytes = reduction_input(source, selection, blocks, max_memory, scheduler,
                                     storage_options)
    every = split_every(x, axis, block_bytes)
    lazy = {op: _reduction(x, op, axis, every, ddof) for op in ops}
    if not compute:
        return lazy
    values = run(*lazy.values(), scheduler=scheduler, progress=progress)
    return dict(zip(lazy, values))


def _single(op: str):
    # Renamed here too, so that the warning points at the caller's line.
    @renamed_parameters(chunks="blocks", memory_limit="max_memory", compute_now="compute")
    def reduction(source: ReductionSource, axis: int | tuple[int, ...] | None = None, *,
                  storage_options: StorageOptions = None, **kwargs: Any) -> Any:
        return reduce(source, (op,), axis=axis, storage_options=storage_options, **kwargs)[op]

    reduction.__name__ = reduction.__qualname__ = op
    reduction.__doc__ = (
        f"The {op} of an array (or of ``selection`` of it), in bounded memory.\n\n"
        "Keywords as :func:`reduce` (``storage_options=`` for URLs among them).\n\n"
        "Examples\n--------\n>>> import chunkflow\n"
        ">>> z = chunkflow.ones((4, 4), chunks=(2, 2), dtype='u1')\n"
        f">>> float(chunkflow.reductions.{op}(z, scheduler='sync')) == float(getattr(z[:], '{op}')())\n"
        "True\n"
    )
    return reduction


mean = _single("mean")
std = _single("std")
var = _single("var")
min = _single("min")
max = _single("max")
sum = _single("sum")
