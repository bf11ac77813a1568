"""The plan of a reduction: the block size the memory budget implies
(:func:`~chunkflow.graph.memory.task_max_memory`), the dask array a reduction reads, and
how many partial results the tree combines at a time.

Every reduction (:mod:`~chunkflow.graph.reductions.reductions`,
:mod:`~chunkflow.graph.reductions.histograms`, :mod:`~chunkflow.graph.reductions.quantiles`)
starts here, so they share one rule for the budget and one way of opening a source.

Examples
--------
>>> import numpy as np
>>> import chunkflow
>>> z = chunkflow.array(np.arange(12, dtype="u1").reshape(3, 4), chunks=(2, 2))
>>> x, block_bytes = reduction_input(z)
>>> x.shape, split_every(x, None, block_bytes) >= 2
((3, 4), True)
"""

from __future__ import annotations

import builtins
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, TypeAlias

import dask.array as da
import numpy as np
from dask.array.core import normalize_chunks
from dask.utils import format_bytes

from chunkflow.core.array import Array
from chunkflow.errors import ArgumentTypeError, InvalidArgumentError, MemoryPlanError
from chunkflow.graph.memory import memory_budget, task_max_memory
from chunkflow.graph.read import as_source_array, to_dask
from chunkflow.graph.scheduler import local_scheduler, worker_threads

if TYPE_CHECKING:
    from numpy.typing import ArrayLike

    from chunkflow.graph.read import ArraySource, BlockChunks
    from chunkflow.graph.scheduler import SchedulerLike
    from chunkflow.indexing import Selection

__all__ = [
    "CLUSTER_BLOCK_BYTES", "REDUCTION_BLOCK_BYTES", "ReductionSource", "reduction_block_bytes",
    "reduction_input", "split_every", "split_every_of", "task_bytes_per_block_byte",
]

#: What the reductions read: an array to open (:data:`~chunkflow.graph.read.ArraySource`),
#: a dask array, or values in memory (a numpy array, nested lists of numbers).
ReductionSource: TypeAlias = "ArraySource | da.Array | np.ndarray | list[Any] | tuple[Any, ...]"

# The largest block a reduction reads by default (decoded bytes). Measured on 2 cores,
# mean + std of 8192^2 uint16 in 512^2 chunks: 2 MiB blocks 0.7-0.9 s at 143 MB peak
# RSS, 4 MiB 0.57-0.64 s at 180 MB, 8 MiB 0.59-0.68 s at 260 MB (dask + zarr-python:
# 1.3 s at 118 MB; 86 MB of every figure is the interpreter and its libraries).
REDUCTION_BLOCK_BYTES = 4 * 2**20
# The largest block on a distributed cluster. A task there costs about 1 ms of the
# scheduler's and the worker's time besides its work, and reading and reducing 4 MiB
# takes 5-10 ms: 16 MiB blocks keep that cost near 5% of the work (2-worker
# LocalCluster, 16384^2 uint16: histogram 138 -> 35 tasks).
CLUSTER_BLOCK_BYTES = 16 * 2**20
#: Bytes of float64 work per input element while one block is reduced (std: x - mean,
#: then its square), on top of the block itself.
WORK_BYTES_PER_ELEMENT = 16


def reduction_block_bytes(itemsize: int, max_memory: int | str | None = None,
                          scheduler: SchedulerLike = None) -> int:
    """Decoded bytes per block so that a task's block and its work fit in half of
    ``max_memory`` (one task's budget): the other half holds the block dask reads ahead
    and the partial results waiting for their combine.

    Examples
    --------
    >>> reduction_block_bytes(2) == REDUCTION_BLOCK_BYTES
    True
    >>> reduction_block_bytes(2, max_memory="36 MiB") // 2**20
    2
    """
    budget = task_max_memory(max_memory, scheduler)
    fits = int(budget / task_bytes_per_block_byte(itemsize))
    # At least 1 MiB per block keeps the tasks few under the machine's own budget; a
    # budget the user gave is kept, down to one chunk per block (reduction_input then
    # refuses a budget that one chunk does not fit).
    floor = 2**20 if max_memory is None else 1
    largest = REDUCTION_BLOCK_BYTES if local_scheduler(scheduler) else CLUSTER_BLOCK_BYTES
    return builtins.max(floor, builtins.min(largest, fits))


def task_bytes_per_block_byte(itemsize: int) -> float:
    """A task's bytes per decoded block byte: the block and its work, twice (the block
    dask reads ahead and the partial results waiting for their combine).

    One rule for every reduction: std's float64 work is the most any of them needs
    (the order statistics' keys and bucket rows are fewer bytes, in steps).

    >>> task_bytes_per_block_byte(8)
    6.0
    """
    return 2 * (1 + WORK_BYTES_PER_ELEMENT / itemsize)


def split_every(x: da.Array, axis: int | tuple[int, ...] | None, block_bytes: int) -> int:
    """How many partial results one combine step takes: as many as about four blocks'
    memory holds (between 4 and 64).

    A partial result keeps the block's extent along the axes not reduced, as float64
    sums, counts and second moments (3 x 8 bytes per element); with ``axis=None`` it is
    a few scalars.
    """
    reduced = range(x.ndim) if axis is None or not x.ndim else \
        {a % x.ndim for a in np.atleast_1d(axis)}
    kept = [n for a, n in enumerate(x.chunksize) if a not in reduced]
    one_partial = 3 * 8 * builtins.max(1, int(np.prod(kept)))
    return int(np.clip(4 * block_bytes // one_partial, 4, 64))


def split_every_of(block_bytes: int, partial_bytes: int) -> int:
    """How many partial results of ``partial_bytes`` each one combine step takes: as
    many as about four blocks' memory holds (between 2 and 64).

    >>> split_every_of(4 * 2**20, 2**19), split_every_of(4 * 2**20, 2**11)
    (32, 64)
    """
    return int(np.clip(4 * block_bytes // builtins.max(1, partial_bytes), 2, 64))


def reduction_input(source: ReductionSource, selection: Selection = Ellipsis, blocks: BlockChunks = None,
                    max_memory: int | str | None = None, scheduler: SchedulerLike = None,
                    storage_options: Mapping[str, Any] | None = None,
                    what: str = "reduce") -> tuple[da.Array, int]:
    """The dask array a reduction reads (blocks sized for the budget), and its block bytes.

    ``source`` is a chunkflow array, a dask array, a path, URL or store (opened
    read-only with ``storage_options``, past the chunk cache: one pass reads each chunk
    once), or values in memory (a numpy array, nested lists of numbers). A
    ``max_memory`` that one chunk per block does not fit raises
    :class:`~chunkflow.MemoryPlanError` naming ``what``.

    Examples
    --------
    >>> import chunkflow
    >>> z = chunkflow.zeros((4096, 4096), chunks=(256, 256), dtype="u2")
    >>> reduction_input(z)[0].chunksize, reduction_input(z, max_memory="18 MiB")[0].chunksize
    ((1024, 2048), (512, 1024))
    """
    if isinstance(source, da.Array):
        if storage_options:
            raise InvalidArgumentError("storage_options apply to URLs, not to a dask array")
        return source, int(np.prod(source.chunksize)) * source.dtype.itemsize
    if isinstance(source, (np.ndarray, list, tuple)):
        return _in_memory(source, selection, max_memory, scheduler, storage_options, what)
    array = as_source_array(source, storage_options,
                            **({} if isinstance(source, Array) else {"cache": False}))
    if blocks is None:
        blocks = reduction_block_bytes(array.dtype.itemsize, max_memory, scheduler)
        # At least two blocks per thread where the array allows: one block per thread
        # would leave cores idle while the last block is reduced.
        # (A cluster's threads are all its workers'; memory_budget gives one worker's.)
        threads = memory_budget(scheduler)[1] if local_scheduler(scheduler) else \
            worker_threads(scheduler)
        selected = to_dask(array, selection, 1).nbytes  # a plan only: no I/O
        blocks = builtins.min(blocks, builtins.max(2**20, int(selected) // (2 * threads)))
    x = to_dask(array, selection, blocks)
    block_bytes = int(np.prod(x.chunksize)) * x.dtype.itemsize
    if max_memory is not None:
        block = tuple(int(n) for n in x.chunksize)
        _check_fits(block_bytes, block, array.dtype.itemsize, max_memory, scheduler, what)
    return x, block_bytes


def _in_memory(source: ArrayLike, selection: Selection, max_memory: int | str | None,
               scheduler: SchedulerLike, storage_options: Mapping[str, Any] | None,
               what: str) -> tuple[da.Array, int]:
    """A numpy array (or nested lists of numbers), as numpy's own functions take it: in
    blocks of the budget's size (``blocks=`` counts stored chunks, which it has none)."""
    if storage_options:
        raise InvalidArgumentError(f"{what}: storage_options apply to URLs, not to values in memory")
    data = np.asarray(source)
    if data.dtype.hasobject:
        raise ArgumentTypeError(f"{what}: the values given are not numbers (numpy makes an object "
                                "array of them); pass an array of one numeric dtype")
    data = data[selection]
    limit = reduction_block_bytes(data.dtype.itemsize, max_memory, scheduler)
    chunks = normalize_chunks("auto", data.shape, limit=limit, dtype=data.dtype) \
        if data.size else -1  # (dask's auto-chunking divides by the size)
    x = da.from_array(data, chunks=chunks)
    return x, int(np.prod(x.chunksize)) * x.dtype.itemsize


def _check_fits(block_bytes: int, block: tuple[int, ...], itemsize: int,
                max_memory: int | str, scheduler: SchedulerLike, what: str) -> None:
    budget = task_max_memory(max_memory, scheduler)
    need = int(block_bytes * task_bytes_per_block_byte(itemsize))
    if need > budget:
        raise MemoryPlanError(
            f"{what}: each task would need about {format_bytes(need)} for blocks of {block} "
            f"(the block, its work and the next block), more than max_memory "
            f"{format_bytes(budget)}; raise max_memory, or store the array in smaller chunks"
        )
