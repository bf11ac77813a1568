"""map_chunks: one task per output block, halos read from the store, whole chunks written.

Each task reads its block's window (the block plus ``depth`` on every side) of every
source straight from the store, through the chunk cache, however many chunks the halo
spans; fills what lies beyond the array's edge by the boundary mode (see
:mod:`chunkflow.graph.halo`); calls the function; trims the halo; and either returns the
block (a lazy dask array) or writes it to ``out``. Output blocks are whole chunks (or
shards) of ``out``, so no two tasks write one chunk: no lock, and a retried task writes
the same bytes again.

There are no ``getitem``, ``concatenate`` or ``trim`` tasks, as ``map_overlap`` makes:
the graph is one lazy ``Blockwise`` layer over the block grid, plus one task that waits
for the writes.

Examples
--------
>>> import numpy as np
>>> import chunkflow
>>> from scipy import ndimage
>>> image = np.random.default_rng(0).random((60, 50)).astype("f4")
>>> z = chunkflow.array(image, chunks=(16, 16))
>>> smooth = map_chunks(ndimage.uniform_filter, z, depth=2, size=5, mode="reflect")
>>> np.allclose(smooth.compute(), ndimage.uniform_filter(image, size=5, mode="reflect"))
True
>>> counts = summarize_chunks(lambda block: (block > 0.5).sum(), z, dtype=int)
>>> counts.shape, int(counts.sum()) == int((image > 0.5).sum())
((4, 4), True)
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import dask.array as da
import numpy as np
from dask._task_spec import TaskRef
from dask.base import tokenize
from dask.blockwise import blockwise
from dask.highlevelgraph import HighLevelGraph, MaterializedLayer

from chunkflow.config import byte_count
from chunkflow.core.array import Array
from chunkflow.engine.pool import serial_io
from chunkflow.errors import InvalidSelectionError, ShapeMismatchError
from chunkflow.graph.blocks import default_per_block, dim_blocks
from chunkflow.graph.budget import (
    MemoryPlanError,
    TaskMemory,
    check_memory,
    default_max_memory,
    plan_task_memory,
)
from chunkflow.graph.halo import BOUNDARIES, normalize_depth, read_window
from chunkflow.graph.jobs import (
    Job,
    block_keys,
    finish_after,
    function_parts,
    job_progress,
    metadata_part,
    open_job,
    recorded_multiples,
    source_parts,
)
from chunkflow.graph.map_arrays import NewOut, open_sources, resolve_out
from chunkflow.graph.read import (
    BLOCKS_PER_THREAD,
    SelectionDep,
    block_multiples,
    worker_threads,
)
from chunkflow.graph.scheduler import ProgressArg
from chunkflow.graph.scheduler import compute as run

if TYPE_CHECKING:
    from numpy.typing import DTypeLike

    from chunkflow.graph.read import ArraySource, BlockChunks
    from chunkflow.graph.scheduler import SchedulerLike

__all__ = ["MapJob", "MemoryPlanError", "map_chunks", "summarize_chunks"]

# Blocks of small chunks grow toward this many output bytes (fewer, larger tasks), but
# never leave fewer than BLOCKS_PER_THREAD blocks per worker thread where the output
# has that many chunks (the same rule as to_dask's default).
# Measured on 2 cores, Gaussian of 8192^2 uint16 in 512^2 chunks to float32: blocks of
# 1 MiB took 1.6 s at 118 MB peak RSS, 2 MiB 1.3 s at 122 MB, 8 MiB 1.1 s at 150 MB
# (86 MB of it the interpreter and libraries); memory is what map jobs run out of.
DEFAULT_BLOCK_BYTES = 2**20


class RegionDep(SelectionDep):
    """Block index -> (block index, the array region of that output block)."""

    def __getitem__(self, idx: tuple[int, ...]) -> tuple[tuple[int, ...], tuple[slice, ...]]:
        return idx, super().__getitem__(idx)  # type: ignore[return-value]


@dataclass(frozen=True)
class MapJob:
    """Everything a task needs, pickled once into the graph (not once per task)."""

    func: Callable[..., Any]
    sources: tuple[Array, ...]
    depth: tuple[int, ...]
    boundary: str
    constant_value: Any
    trim: bool
    block_info: bool
    dtype: np.dtype
    numblocks: tuple[int, ...]
    kwargs: Mapping[str, Any] = field(default_factory=dict)
    out: Array | None = None
    summary_shape: tuple[int, ...] | None = None
    tracker: Job | None = None  # resume=True: skips finished blocks, records new ones

    def windows(self, region: tuple[slice, ...]) -> tuple[list[np.ndarray], tuple[tuple[int, int], ...]]:
        windows, halo = [], ()
        for source in self.sources:
            window, halo = read_window(source, region, self.depth, self.boundary,
                                       self.constant_value)
            windows.append(window)
        return windows, halo

    def info(self, index: tuple[int, ...], region: tuple[slice, ...],
             halo: tuple[tuple[int, int], ...]) -> dict[str, Any]:
        return {
            "block_index": index,
            "num_blocks": self.numblocks,
            "array_location": [(s.start, s.stop) for s in region],
            "halo": list(halo),
            "shape": self.sources[0].shape,
            "boundary": self.boundary,
        }

    def run(self, index: tuple[int, ...], region: tuple[slice, ...]) -> np.ndarray:
        windows, halo = self.windows(region)
        kwargs = dict(self.kwargs)
        if self.block_info:
            kwargs["block_info"] = self.info(index, region, halo)
        result = np.asarray(self.func(*windows, **kwargs))
        if self.summary_shape is not None:
            return self._summary(result, index)
        if self.trim and any(lo or hi for lo, hi in halo):
            result = result[tuple(slice(lo, n - hi) for (lo, hi), n in zip(halo, result.shape))]
        expected = tuple(s.stop - s.start for s in region)
        if result.shape != expected:
            raise ShapeMismatchError(
                f"map_chunks: {_name(self.func)} returned shape {result.shape} for block "
                f"{index} (array region {[(s.start, s.stop) for s in region]}); expected "
                f"{expected}" + (" after trimming the halo" if self.trim else "")
            )
        result = result.astype(self.dtype, copy=False)
        if self.out is None:
            return result
        with serial_io():
            self.out.set_basic_selection(region, result)
        return np.ones((1,) * len(region), dtype=bool)

    def _summary(self, result: np.ndarray, index: tuple[int, ...]) -> np.ndarray:
        assert self.summary_shape is not None
        if result.shape != self.summary_shape:
            raise ShapeMismatchError(
                f"summarize_chunks: {_name(self.func)} returned shape {result.shape} for block "
                f"{index}; expected {self.summary_shape} (pass shape=)"
            )
        return result.astype(self.dtype, copy=False).reshape((1,) * len(index) + result.shape)


def _name(func: Callable[..., Any]) -> str:
    return getattr(func, "__qualname__", None) or repr(func)


def _run_block(job: MapJob, located: tuple[tuple[int, ...], tuple[slice, ...]]) -> np.ndarray:
    if job.tracker is None or job.out is None:
        return job.run(*located)
    index, region = located
    out = job.out
    return job.tracker.run(index, lambda: job.run(index, region),
                           np.ones((1,) * len(region), dtype=bool),
                           lambda: block_keys(out, region))


# ---------------------------------------------------------------- planning


@dataclass(frozen=True)
class _Layout:
    dep: RegionDep
    multiples: tuple[int, ...]
    estimate: TaskMemory


def _layout(sources: tuple[Array, ...], grid_owner: Array, out_itemsize: int,
            depth: tuple[int, ...], chunks: BlockChunks, max_memory: int | str | None,
            scheduler: SchedulerLike,
            func_memory_factor: float) -> _Layout:
    shape = grid_owner.shape
    unit = grid_owner.write_chunks
    if chunks is None:
        multiples = default_per_block(shape, unit, Ellipsis, out_itemsize, DEFAULT_BLOCK_BYTES,
                                      BLOCKS_PER_THREAD * worker_threads(scheduler))
    elif chunks == "chunk":  # one chunk (shard) per block: the tiles of a summary
        multiples = (1,) * len(shape)
    else:
        multiples = block_multiples(grid_owner, Ellipsis, chunks)
    dims = dim_blocks(shape, unit, Ellipsis, multiples)
    dep = RegionDep(dims)
    source_shapes = [(s.dtype.itemsize, s.write_chunks) for s in sources]

    def estimate_for(block: tuple[int, ...]) -> TaskMemory:
        return plan_task_memory(block, depth, source_shapes, out_itemsize, unit,
                                func_memory_factor)

    block = tuple(max(c) for c in dep.chunks) if dep.chunks else ()
    estimate = estimate_for(block)
    if max_memory is None:
        limit, note = default_max_memory(scheduler)
    else:
        limit = byte_count("map_chunks: max_memory", max_memory)
        note = ""
    check_memory(estimate, limit, multiples, unit, shape, estimate_for, note)
    return _Layout(dep, multiples, estimate)


def _graph(job: MapJob, dep: RegionDep, token: str,
           extra_shape: tuple[int, ...] = ()) -> tuple[HighLevelGraph, str]:
    job_key = f"chunkflow-job-{token}"
    name = f"chunkflow-map-{token}"
    grid_ind = tuple(range(len(dep.numblocks)))
    # A summary's own axes are new axes of one block each.
    extra = {len(grid_ind) + k: n for k, n in enumerate(extra_shape)}
    layer = blockwise(_run_block, name, grid_ind + tuple(extra), TaskRef(job_key), None,
                      dep, grid_ind, numblocks={}, new_axes=extra or None,
                      _data_producer=True)
    graph = HighLevelGraph(
        {job_key: MaterializedLayer({job_key: job}), name: layer},
        {job_key: set(), name: {job_key}},
    )
    return graph, name


def _prepare_job(func: Callable[..., Any], sources: Sequence[ArraySource], *, out: ArraySource | None,
                 depth: int | Sequence[int] | Mapping[int, int],
                 boundary: str, constant_value: Any, dtype: DTypeLike, chunks: BlockChunks, block_info: bool,
                 trim: bool, max_memory: int | str | None, scheduler: SchedulerLike,
                 storage_options: Mapping[str, Any] | None,
                 func_memory_factor: float, kwargs: Mapping[str, Any],
                 summary_shape: tuple[int, ...] | None) -> tuple[MapJob, _Layout]:
    arrays = open_sources(sources, storage_options)
    first = arrays[0]
    if boundary not in BOUNDARIES:
        raise InvalidSelectionError(f"boundary {boundary!r} is not one of {', '.join(BOUNDARIES)}")
    halo = normalize_depth(depth, first.ndim)
    resolved = resolve_out(out, first, dtype, storage_options)
    # Everything is checked against the template of a new output before it is created.
    target = resolved.template if isinstance(resolved, NewOut) else resolved
    out_dtype = np.dtype(dtype if dtype is not None else (target.dtype if target is not None
                                                          else first.dtype))
    if target is not None and dtype is None:
        out_dtype = target.dtype
    itemsize = out_dtype.itemsize * max(1, math.prod(summary_shape or ()))
    layout = _layout(arrays, target if target is not None else first, itemsize, halo, chunks,
                     max_memory, scheduler, func_memory_factor)
    if isinstance(resolved, NewOut):
        target = resolved.create()  # last: the plan holds
    job = MapJob(func, arrays, halo, boundary, constant_value, trim, block_info, out_dtype,
                   layout.dep.numblocks, dict(kwargs), target, summary_shape)
    return job, layout


def map_chunks(
    func: Callable[..., Any],
    *sources: ArraySource,
    out: ArraySource | None = None,
    depth: int | Sequence[int] | Mapping[int, int] = 0,
    boundary: str = "reflect",
    dtype: DTypeLike = None,
    chunks: BlockChunks = None,
    block_info: bool = False,
    trim: bool = True,
    scheduler: SchedulerLike = None,
    progress: ProgressArg = False,
    max_memory: int | str | None = None,
    compute: bool = True,
    constant_value: Any = 0,
    storage_options: Mapping[str, Any] | None = None,
    func_memory_factor: float = 2.0,
    resume: bool = False,
    job_name: str | None = None,
    **kwargs: Any,
) -> Any:
    """Apply ``func`` to every block of the sources, with halos, one task per block.

    Parameters
    ----------
    func : callable
        Called as ``func(*windows, **kwargs)`` with one numpy window (block plus halo)
        per source; with ``block_info=True`` also ``block_info=`` a dict with
        ``block_index``, ``num_blocks``, ``array_location`` (the block's (start, stop)
        per axis), ``halo`` (elements given before and after the block per axis),
        ``shape`` and ``boundary``. Returns the window-shaped result (``trim=True``:
        the halo is cut off here) or, with ``trim=False``, the block itself.
    *sources : chunkflow arrays, paths or URLs
        All of one shape; their chunk grids may differ. Sources given by location are
        read without the process-wide chunk cache (each chunk is read about once);
        open Arrays read through their own cache setting.
    out : None, chunkflow.Array, path or URL
        ``None``: return a lazy dask array. An array: write into it. A path or URL: an
        existing array there, or a new one created like the first source (with
        ``dtype``). Blocks are whole chunks (shards) of ``out``.
    depth : int, tuple or dict
        Halo per axis; may exceed the chunk size.
    boundary : {"reflect", "nearest", "constant", "periodic", "none"}
        What lies beyond the array's edge, as in ``dask.array.map_overlap``
        (``constant_value=`` for ``constant``).
    dtype : optional
        The result's dtype (default: ``out``'s, else the first source's).
    chunks : optional
        Blocks as whole chunks of the output grid: ``"auto"``, a byte size or
        multiples per axis (see :func:`chunkflow.to_dask`). Default: one chunk per
        block, small chunks grouped toward 1 MiB, but never fewer than 4 blocks per
        worker thread where the output has that many chunks.
    scheduler, progress
        See :func:`chunkflow.compute`.
    max_memory : int or str, optional
        What one task may use. Default: the worker's memory limit (or a quarter of
        this machine's memory) less the decoded-chunk cache of its process, shared by
        its threads. That cache is per process and invisible to dask's memory manager;
        in a distributed worker it defaults to 1/8 of the worker's memory limit (at
        most 1 GiB); set ``chunkflow.cache.max-bytes`` to change it (0 for none), as
        in ``chunkflow.config.set({"chunkflow.cache.max-bytes": "256 MiB"})`` before
        the cluster starts. The plan is checked before anything runs, and a refused job creates
        nothing; see :mod:`chunkflow.graph.budget`.
    compute : bool
        With ``out``: write now and return ``out`` (default), or return a lazy dask
        scalar that writes when computed (to ``True``). Without ``out`` it is ignored.
    func_memory_factor : float
        Window-sized result arrays ``func`` holds at its peak (for the memory plan).
    resume : bool
        With ``out``: record each finished block in ``out``'s store, and skip the
        blocks an earlier run of the same job recorded (see :mod:`chunkflow.graph.jobs`).
        Pass it on the first run too. A different unfinished job on ``out`` is refused
        (:class:`~chunkflow.errors.JobMismatchError`, naming what changed).
    job_name : str, optional
        Identifies the job instead of ``func`` and ``kwargs`` (for functions that
        cannot be tokenized deterministically).
    **kwargs
        Passed to ``func``.

    Returns
    -------
    dask.array.Array (``out=None``), the output Array, or a lazy dask scalar.
    """
    if resume and out is None:
        raise TypeError("map_chunks: resume=True needs out= (an output to record blocks in)")
    # Before anything is created: a function that cannot be tokenized refuses here.
    func_parts = function_parts(func, (kwargs, depth, boundary, constant_value, trim,
                                       block_info, str(dtype)), job_name) if resume else {}
    if resume and chunks is None:  # the default plan varies with the scheduler's threads
        chunks = recorded_multiples(out, storage_options)
    job, layout = _prepare_job(func, sources, out=out, depth=depth, boundary=boundary,
                               constant_value=constant_value, dtype=dtype, chunks=chunks,
                               block_info=block_info, trim=trim, max_memory=max_memory,
                               scheduler=scheduler, storage_options=storage_options,
                               func_memory_factor=func_memory_factor, kwargs=kwargs,
                               summary_shape=None)
    token = tokenize(func, kwargs, job.sources, job.out, job.depth, boundary, constant_value,
                     trim, block_info, str(job.dtype), layout.dep)
    if job.out is not None:
        job = _track(job, layout, resume, job_name, func_parts)
        token = tokenize(token, job.tracker.token if job.tracker else None,
                         job.tracker.n_done if job.tracker else 0)
    graph, name = _graph(job, layout.dep, token)
    ndim = len(layout.dep.numblocks)
    if job.out is None:
        return da.Array(graph, name, layout.dep.chunks, meta=np.empty((0,) * ndim, job.dtype))
    markers = da.Array(graph, name, tuple((1,) * n for n in layout.dep.numblocks),
                       meta=np.empty((0,) * ndim, bool))
    # One task gathers every block's marker: tasks = blocks + 2 (job, gather).
    done = markers.all(split_every={axis: max(2, n) for axis, n in enumerate(markers.numblocks)})
    if not compute:
        return done if job.tracker is None else finish_after(done, job.tracker, job.out)
    with job_progress(progress, [job.tracker]) as shown:
        run(done, scheduler=scheduler, progress=shown)
    if job.tracker is not None:
        job.tracker.finish(job.out)
    job.out.forget_cached()  # blocks written by other processes
    return job.out


def _track(job: MapJob, layout: _Layout, resume: bool, job_name: str | None,
           func_parts: dict[str, str]) -> MapJob:
    """``job`` with its resume bookkeeping (``resume=False``: an old job's is dropped)."""
    assert job.out is not None
    out = job.out
    tracker = open_job(out, layout.dep.numblocks, resume=resume, job_name=job_name, parts=lambda: {
        **func_parts, "block plan": tokenize(layout.dep.chunks),
        "output metadata": metadata_part(out), **source_parts(job.sources, out)},
        plan={"multiples": list(layout.multiples)})
    return dataclasses.replace(job, tracker=tracker)


def summarize_chunks(
    func: Callable[..., Any],
    *sources: ArraySource,
    shape: tuple[int, ...] = (),
    dtype: DTypeLike = float,
    depth: int | Sequence[int] | Mapping[int, int] = 0,
    boundary: str = "reflect",
    chunks: BlockChunks = None,
    block_info: bool = False,
    scheduler: SchedulerLike = None,
    progress: ProgressArg = False,
    max_memory: int | str | None = None,
    compute: bool = True,
    constant_value: Any = 0,
    storage_options: Mapping[str, Any] | None = None,
    func_memory_factor: float = 2.0,
    **kwargs: Any,
) -> Any:
    """One small result per block (a count, a histogram...), gathered over the block grid.

    ``func`` is called as in :func:`map_chunks` and returns a scalar or an array of
    ``shape``; the result is a numpy array of shape ``num_blocks + shape`` (or the lazy
    dask array with ``compute=False``). By default each block is one chunk (shard) of
    the first source, the tile a user thinks of; ``chunks=`` groups chunks as in
    :func:`map_chunks`. ``block_info["array_location"]`` tells a block where it lies.

    Examples
    --------
    >>> import numpy as np
    >>> import chunkflow
    >>> z = chunkflow.array(np.arange(16).reshape(4, 4), chunks=(2, 2))
    >>> summarize_chunks(np.max, z, dtype=int).tolist()
    [[5, 7], [13, 15]]
    >>> summarize_chunks(lambda b: np.histogram(b, bins=2, range=(0, 16))[0], z,
    ...                  shape=(2,), dtype=int)[0, 0].tolist()
    [4, 0]
    """
    job, layout = _prepare_job(func, sources, out=None, depth=depth, boundary=boundary,
                               constant_value=constant_value, dtype=dtype,
                               chunks="chunk" if chunks is None else chunks,
                               block_info=block_info, trim=False, max_memory=max_memory,
                               scheduler=scheduler, storage_options=storage_options,
                               func_memory_factor=func_memory_factor, kwargs=kwargs,
                               summary_shape=tuple(shape))
    token = tokenize("summary", func, kwargs, job.sources, job.depth, boundary,
                     constant_value, block_info, str(job.dtype), tuple(shape), layout.dep)
    graph, name = _graph(job, layout.dep, token, tuple(shape))
    ndim = len(layout.dep.numblocks)
    result = da.Array(graph, name,
                      tuple((1,) * n for n in layout.dep.numblocks) + tuple((s,) for s in shape),
                      meta=np.empty((0,) * (ndim + len(shape)), job.dtype))
    if not compute:
        return result
    (values,) = run(result, scheduler=scheduler, progress=progress)
    return values
