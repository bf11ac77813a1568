"""Reductions of arrays larger than memory, with memory bounded by a few blocks.

``mean``, ``std``, ``var``, ``min``, ``max`` and ``sum`` are dask reductions (trees of
per-block results) over a :func:`~chunkflow.graph.read.to_dask` array whose blocks are
sized for the reduction rather than for storage, with a ``split_every`` chosen from the
memory budget, on the scheduler the caller names.

What they promise, whatever the blocks (empty ones included): numpy's result dtype,
numpy's refusals, and

- ``min``, ``max`` and sums of integers and booleans: numpy's values exactly (integer
  sums wrap around as numpy's do); a zero minimum may differ from numpy's in its sign,
  which numpy's own loops pick by position;
- ``mean``, ``var``, ``std`` and float sums: numpy's NaN and infinities, and otherwise
  the exact value to within the rounding of a sum (they sum in float64 and merge
  partial variances exactly, :mod:`~chunkflow.graph.reductions.moments`; numpy sums
  pairwise, float32 data in float32): not numpy's bits.

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
from functools import partial
from typing import TYPE_CHECKING, Any

import dask.array as da
import numpy as np
from dask.array.utils import validate_axis

from chunkflow.config.renames import renamed_parameters
from chunkflow.errors import InvalidArgumentError
from chunkflow.graph.reductions.moments import (
    STATISTICS,
    accumulator,
    moments,
    statistic,
    sum_dtype,
)
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


def _identity(op: str, dtype: np.dtype[Any]) -> Any:
    """A value no other value of ``dtype`` beats in ``op``: the start of an empty block's
    minimum or maximum (never an answer: a result position has values)."""
    sign = 1 if op == "min" else -1
    if dtype.kind == "b":
        return op == "min"
    if dtype.kind in "iu":
        info = np.iinfo(dtype)
        return info.max if op == "min" else info.min
    if dtype.kind == "c":
        return complex(sign * np.inf, sign * np.inf)
    return sign * np.inf


def _extreme(block: np.ndarray, axis: tuple[int, ...], keepdims: bool, *, op: str) -> np.ndarray:
    """numpy's min or max of a block, an empty one included (dask's leave it a
    different shape)."""
    reduce_: Any = (np.minimum if op == "min" else np.maximum).reduce
    return reduce_(block, axis=axis, keepdims=keepdims, initial=_identity(op, block.dtype))


def _axes(x: da.Array, axis: int | tuple[int, ...] | None) -> tuple[int, ...]:
    """``axis`` as numpy reads it, refused as numpy refuses it."""
    if axis is None:
        return tuple(range(x.ndim))
    axes = validate_axis(axis, x.ndim)  # numpy's AxisError when out of range
    axes = tuple(a % x.ndim for a in (axes if isinstance(axes, tuple) else (axes,)))
    if len(set(axes)) != len(axes):
        raise InvalidArgumentError(f"duplicate value in 'axis': {axis!r} names an axis twice")
    return axes


def _min_or_max(x: da.Array, op: str, axis: int | tuple[int, ...] | None, every: int) -> da.Array:
    if x.ndim == 0 and isinstance(axis, (int, np.integer)) and axis in (0, -1):
        # numpy's ufunc reductions take axis 0 or -1 of a 0-d array (its mean does not).
        axis = None
    axes = _axes(x, axis)
    if 0 in [x.shape[a] for a in axes]:
        raise InvalidArgumentError(
            f"{op} of no values (shape {x.shape}, axis={axis!r}): numpy refuses it too "
            f"(a zero-size array has no {op}imum); select at least one value along the "
            "reduced axes")
    dtype = x.dtype.newbyteorder("=")
    chunk = partial(_extreme, op=op)
    return da.reduction(x, chunk, chunk, axis=axes, dtype=dtype, split_every=every,
                        meta=np.empty((), dtype))


def _reduction(x: da.Array, op: str, axis: int | tuple[int, ...] | None, every: int) -> da.Array:
    if op not in OPERATIONS:
        raise InvalidArgumentError(f"unknown reduction {op!r}; expected one of {', '.join(OPERATIONS)}")
    if op in ("min", "max"):
        return _min_or_max(x, op, axis, every)
    if x.ndim == 0 and isinstance(axis, (int, np.integer)) and axis in (0, -1):
        axis = None  # as numpy's sum (see _min_or_max)
    # Sums of floats run in float64 (complex128), numpy's dtype in the end: partial sums
    # of float16 or float32 blocks must not overflow where the whole sum does not.
    total = x.sum(axis=axis, split_every=every, dtype=accumulator(x.dtype)
                  if x.dtype.kind in "fc" else None)
    return total.astype(sum_dtype(x.dtype))


@renamed_parameters(chunks="blocks", memory_limit="max_memory", compute_now="compute")
def reduce(
    source: ReductionSource,
    ops: str | Sequence[str] = ("mean", "std"),
    *,
    selection: Selection = Ellipsis,
    axis: int | tuple[int, ...] | None = None,
    ddof: float = 0,
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
    source : chunkflow.Array, path, URL, store, dask array or numpy array
        What to reduce. Arrays given by location are opened read-only and read past
        the process-wide chunk cache (one pass reads each chunk once; caching them would
        hold up to the cache budget for nothing); an open Array reads through its own.
        Values in memory (a numpy array, nested lists) are reduced as they are.
    ops : str or sequence of str
        Any of ``mean``, ``std``, ``var``, ``min``, ``max``, ``sum`` (one name is a list
        of one: ``reduce(z, "sum")`` gives ``{"sum": ...}``).
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
    ops = [ops] if isinstance(ops, str) else list(ops)  # "sum" is not "s", "u", "m"
    x, block_bytes = reduction_input(source, selection, blocks, max_memory, scheduler,
                                     storage_options)
    every = split_every(x, axis, block_bytes)
    lazy = {op: _reduction(x, op, axis, every) for op in ops if op not in STATISTICS}
    wanted = [op for op in ops if op in STATISTICS]
    if wanted:
        # One tree of records for mean, var and std; squared deviations only if needed.
        records = moments(x, axis, every, spread=bool(set(wanted) - {"mean"}))
        lazy.update({op: statistic(records, op, x.dtype, ddof) for op in wanted})
    lazy = {op: lazy[op] for op in ops}
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
