"""map_chunks: tasks over output blocks, halos read from the store, whole chunks written.

Each task reads its window (its region plus ``depth`` on every side) of every source
straight from the store, however many chunks the halo spans; fills what lies beyond
the array's edge by the boundary mode (see :mod:`chunkflow.graph.map.halo`); calls the
function on each block's window; trims the halo; and either returns the block (a lazy
dask array: one task per block) or writes it to ``out`` (one task per group of blocks,
chosen by the memory plan: see :mod:`chunkflow.graph.map.tasks` and
:mod:`chunkflow.graph.map.groups`). Output blocks are whole chunks (or shards) of
``out``, so no two tasks write one chunk: no lock, and a retried task writes the same
bytes again.

There are no ``getitem``, ``concatenate`` or ``trim`` tasks, as ``map_overlap`` makes:
the graph is one lazy ``Blockwise`` layer over the task grid, plus one task that waits
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
from typing import TYPE_CHECKING, Any

import dask.array as da
import numpy as np
from dask._task_spec import TaskRef
from dask.base import tokenize
from dask.blockwise import blockwise
from dask.highlevelgraph import HighLevelGraph, MaterializedLayer

from chunkflow.api.unfinished import open_recorded_block_plan
from chunkflow.config.renames import renamed_parameters
from chunkflow.errors import ArgumentTypeError, MemoryPlanError
from chunkflow.graph.casting import DEFAULT_CASTING, check_casting
from chunkflow.graph.map.halo import (
    check_boundary,
    check_constant,
    normalize_depth,
    window_boundary,
)
from chunkflow.graph.map.outputs import NewOut, open_sources, resolve_out
from chunkflow.graph.map.plan import MapPlan
from chunkflow.graph.map.tasks import RegionDep, TaskGrid, plan_tasks
from chunkflow.graph.scheduler import ProgressArg
from chunkflow.graph.scheduler import compute as run
from chunkflow.graph.transactions import check_commit, refuse_deferred_commit, transaction
from chunkflow.jobs import (
    block_keys,
    finish_after,
    function_parts,
    job_identity,
    job_progress,
    open_job,
)
from chunkflow.storage import output_location

if TYPE_CHECKING:
    from numpy.typing import DTypeLike

    from chunkflow.graph.read import ArraySource, BlockChunks
    from chunkflow.graph.scheduler import SchedulerLike

__all__ = ["MapPlan", "MemoryPlanError", "map_chunks", "summarize_chunks"]


def _run_block(plan: MapPlan, located: tuple[tuple[int, ...], tuple[slice, ...]]) -> np.ndarray:
    if plan.tracker is None or plan.out is None:
        return plan.run(*located)
    index, region = located
    out = plan.out
    return plan.tracker.run(index, lambda: plan.run(index, region),
                            np.ones((1,) * len(region), dtype=bool),
                            lambda: block_keys(out, region))


def _graph(plan: MapPlan, dep: RegionDep, token: str,
           extra_shape: tuple[int, ...] = ()) -> tuple[HighLevelGraph, str]:
    plan_key = f"chunkflow-job-{token}"
    name = f"chunkflow-map-{token}"
    grid_ind = tuple(range(len(dep.numblocks)))
    # A summary's own axes are new axes of one block each.
    extra = {len(grid_ind) + k: n for k, n in enumerate(extra_shape)}
    layer = blockwise(_run_block, name, grid_ind + tuple(extra), TaskRef(plan_key), None,
                      dep, grid_ind, numblocks={}, new_axes=extra or None,
                      _data_producer=True)
    graph = HighLevelGraph(
        {plan_key: MaterializedLayer({plan_key: plan}), name: layer},
        {plan_key: set(), name: {plan_key}},
    )
    return graph, name


def _prepare_plan(func: Callable[..., Any], sources: Sequence[ArraySource], *,
                  out: ArraySource | None, depth: int | Sequence[int] | Mapping[int, int],
                  boundary: str, constant_value: Any, dtype: DTypeLike | None, chunks: BlockChunks,
                  block_info: bool, trim: bool, max_memory: int | str | None,
                  scheduler: SchedulerLike, storage_options: Mapping[str, Any] | None,
                  func_memory_factor: float, kwargs: Mapping[str, Any],
                  summary_shape: tuple[int, ...] | None,
                  blocks_per_task: int | Sequence[int] | None = None,
                  overwrite: bool = False, resume: bool = False,
                  casting: str = DEFAULT_CASTING,
                  what: str = "map_chunks") -> tuple[MapPlan, TaskGrid]:
    """Open, check and plan a job; ``what`` names the public function in its errors."""
    arrays = open_sources(sources, storage_options, what)
    first = arrays[0]
    check_boundary(boundary)
    halo = normalize_depth(depth, first.ndim)
    if window_boundary(boundary, constant_value, func, kwargs) == "constant" and any(halo):
        for array in arrays:
            check_constant(constant_value, array, what)
    resolved = resolve_out(out, arrays, dtype, storage_options, depth=halo,
                           overwrite=overwrite, resume=resume)
    # Everything is checked against the template of a new output before it is created.
    target = resolved.template if isinstance(resolved, NewOut) else resolved
    out_dtype = np.dtype(dtype if dtype is not None else (target.dtype if target is not None
                                                          else first.dtype))
    if target is not None and dtype is None:
        out_dtype = target.dtype
    itemsize = out_dtype.itemsize * max(1, math.prod(summary_shape or ()))
    tasks = plan_tasks(arrays, target if target is not None else first, itemsize, halo,
                       chunks, max_memory, scheduler, func_memory_factor,
                       grouped=target is not None and summary_shape is None,
                       per_task=blocks_per_task, what=what)
    if isinstance(resolved, NewOut):
        target = resolved.create()  # last: the plan holds
    plan = MapPlan(func, arrays, halo, boundary, constant_value, trim, block_info, out_dtype,
                   tasks.numblocks, dict(kwargs), target, summary_shape, tasks.spans,
                   casting=check_casting(casting, what))
    return plan, tasks


@renamed_parameters(chunks="blocks")
def map_chunks(
    func: Callable[..., Any],
    *sources: ArraySource,
    out: ArraySource | None = None,
    depth: int | Sequence[int] | Mapping[int, int] = 0,
    boundary: str = "reflect",
    dtype: DTypeLike | None = None,
    blocks: BlockChunks = None,
    block_info: bool = False,
    trim: bool = True,
    scheduler: SchedulerLike = None,
    progress: ProgressArg = False,
    max_memory: int | str | None = None,
    compute: bool = True,
    constant_value: Any = 0,
    storage_options: Mapping[str, Any] | None = None,
    func_memory_factor: float = 2.0,
    blocks_per_task: int | Sequence[int] | None = None,
    resume: bool = False,
    job_name: str | None = None,
    overwrite: bool = False,
    casting: str = DEFAULT_CASTING,
    commit: str | None = None,
    **kwargs: Any,
) -> Any:
    """Apply ``func`` to every block of the sources, with halos.

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
        All of one shape; their chunk grids may differ. Sources are read past the
        process-wide chunk cache (halos are reused inside each task instead; see
        ``blocks_per_task``), unless an open Array has its own ``cache=``.
    out : None, chunkflow.Array, path, URL or store
        ``None``: return a lazy dask array. An open array: write into it (as
        ``dask.array.store`` writes into its target). A location: a new array created
        there like the first source (with ``dtype``); a location that holds an array
        already is refused unless ``overwrite=True`` (it is replaced) or ``resume=True``
        continues the unfinished job writing it. Blocks are whole chunks (shards) of
        ``out``. An ``out`` that is (or overlaps) a source is refused with
        ``depth > 0`` (blocks would read halos other blocks have overwritten); with
        ``depth=0`` it is written in place only with ``overwrite=True``
        (:class:`~chunkflow.errors.OutputIsSourceError`).
    depth : int, tuple or dict
        Halo per axis; may exceed the chunk size.
    boundary : {"reflect", "nearest", "constant", "periodic", "none"}
        What lies beyond the array's edge, as in ``dask.array.map_overlap``
        (``constant_value=`` for ``constant``; a value the sources' dtype cannot hold
        is refused). A scipy.ndimage filter given the boundary's mode (``reflect``,
        ``nearest``, ``constant``, ``wrap`` for ``periodic``) gives the bits of the
        filter on the whole array: with ``constant`` and a function that pads with the
        same constant itself (``mode="constant"`` and ``cval`` equal to
        ``constant_value``, as keywords here or in a ``functools.partial``) the windows
        stop at the array's edge and the function pads each of its passes there, as
        scipy does on the whole array. ``none``: the windows stop at the edge and the
        function's own mode applies there. See :mod:`chunkflow.graph.map.halo` for
        the filters whose bits no halo gives (uniform_filter's running sum...).
    dtype : optional
        The result's dtype (default: ``out``'s, else the first source's).
    blocks : optional
        The dask blocks, as whole chunks of the output grid: ``"auto"``, a byte size or
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
        nothing; see :mod:`chunkflow.graph.memory`.
    compute : bool
        With ``out``: write now and return ``out`` (default), or return a lazy dask
        scalar that writes when computed (to ``True``). Without ``out`` it is ignored.
    func_memory_factor : float
        Window-sized result arrays ``func`` holds at its peak (for the memory plan).
    blocks_per_task : int or tuple, optional
        With ``out``: how many blocks (per axis) one task runs. Default: by the memory
        plan (see :mod:`chunkflow.graph.map.tasks`): a task reads one window for its
        group of blocks, so the halos inside it are read once, and calls ``func`` on
        each block's window in turn; ``1``: one task per block. Without ``out`` every
        task is one block of the returned dask array.
    resume : bool
        With ``out``: continue the unfinished job on ``out``, skipping the blocks an
        earlier run of the same job recorded (see :mod:`chunkflow.jobs`). Every job
        writing to ``out`` records its finished blocks and marks ``out`` unfinished
        until it completes, with ``resume=True`` or not, so a failed run can be
        resumed. A different unfinished job on ``out`` is refused
        (:class:`~chunkflow.errors.JobMismatchError`, naming what changed).
    job_name : str, optional
        Identifies the job instead of ``func`` and ``kwargs`` (for functions that
        cannot be tokenized deterministically).
    overwrite : bool
        Replace an array (or group) at an ``out`` location, or write a source in place
        (``depth=0`` only).
    casting : {"same_value", "unsafe", "same_kind", "safe", "equiv", "no"}
        The rule for casting each block's result to ``dtype`` (or ``out``'s), checked
        in the task on the block it writes. ``"same_value"`` (default): a cast that
        changes a value (uint16 300 into uint8, 2.5 or NaN into an integer, 2 into bool,
        1e300 into float32) is refused (:class:`~chunkflow.errors.CastingError`,
        naming the output, the block and the first value that changes); rounding a
        float into a narrower float is not a change. ``"unsafe"``: numpy's ``astype``
        whatever the values. ``"same_kind"``, ``"safe"``, ``"equiv"``, ``"no"``:
        numpy's dtype rules (``np.can_cast``), without looking at values. See
        :mod:`chunkflow.graph.casting`.
    commit : str, optional
        With ``out`` in an Icechunk session: commit the session with this message once
        every block is written (one commit). On a cluster the tasks write into forks of
        the session, merged back at the end; see :mod:`chunkflow.graph.transactions`.
    **kwargs
        Passed to ``func``.

    Returns
    -------
    dask.array.Array (``out=None``), the output Array, or a lazy dask scalar.
    """
    if out is not None:
        refuse_deferred_commit(commit, compute, "map_chunks")
    out = output_location(out)  # a zarr-python Store as chunkflow's Store over it
    check_commit(out, commit, "map_chunks")
    if resume and out is None:
        raise ArgumentTypeError("map_chunks: resume=True needs out= (an output to record blocks in)")
    # Before anything is created: a function that cannot be tokenized refuses here
    # (resume=True); every job writing to out is recorded, with resume=True or not.
    func_parts = function_parts(func, (kwargs, depth, boundary, constant_value, trim,
                                       block_info, str(dtype)), job_name,
                                strict=resume) if out is not None else {}
    if resume and (blocks is None or blocks_per_task is None):
        # The default plan varies with the scheduler's threads: reuse the job's own.
        recorded = open_recorded_block_plan(out, storage_options)
        blocks = recorded.get("multiples") if blocks is None else blocks
        blocks_per_task = recorded.get("group") if blocks_per_task is None else blocks_per_task
    plan, tasks = _prepare_plan(func, sources, out=out, depth=depth, boundary=boundary,
                                constant_value=constant_value, dtype=dtype, chunks=blocks,
                                block_info=block_info, trim=trim, max_memory=max_memory,
                                scheduler=scheduler, storage_options=storage_options,
                                func_memory_factor=func_memory_factor, kwargs=kwargs,
                                summary_shape=None, blocks_per_task=blocks_per_task,
                                overwrite=overwrite, resume=resume, casting=casting)
    token = tokenize(func, kwargs, plan.sources, plan.out, plan.depth, boundary, constant_value,
                     trim, block_info, str(plan.dtype), tasks.dep, plan.spans, casting)
    if plan.out is not None:
        plan = _track(plan, tasks, resume, job_name, func_parts)
        token = tokenize(token, plan.tracker.token if plan.tracker else None,
                         plan.tracker.n_done if plan.tracker else 0)
    graph, name = _graph(plan, tasks.dep, token)
    ndim = len(tasks.dep.numblocks)
    if plan.out is None:
        return da.Array(graph, name, tasks.dep.chunks, meta=np.empty((0,) * ndim, plan.dtype))
    markers = da.Array(graph, name, tuple((1,) * n for n in tasks.dep.numblocks),
                       meta=np.empty((0,) * ndim, bool))
    # One task gathers every block's marker: tasks = blocks + 2 (job, gather).
    done = markers.all(split_every={axis: max(2, n) for axis, n in enumerate(markers.numblocks)})
    if not compute:
        return done if plan.tracker is None else finish_after(done, plan.tracker, plan.out)
    with job_progress(progress, [plan.tracker]) as shown, transaction(
            [plan.out], scheduler=scheduler, commit=commit, what="map_chunks") as on:
        run(done, scheduler=on, progress=shown)
    if plan.tracker is not None:
        plan.tracker.finish(plan.out)
    plan.out.forget_cached()  # blocks written by other processes
    return plan.out


def _track(plan: MapPlan, tasks: TaskGrid, resume: bool, job_name: str | None,
           func_parts: dict[str, str]) -> MapPlan:
    """``plan`` with its record keeper (``resume=False``: an old job's records go)."""
    assert plan.out is not None
    out = plan.out
    tracker = open_job(out, tasks.dep.numblocks, resume=resume, identity=lambda: job_identity(
        out, plan={"block plan": tasks.dep.chunks}, sources=plan.sources, function=func_parts,
        job_name=job_name, kept={"multiples": list(tasks.multiples), "group": list(tasks.group)}))
    return dataclasses.replace(plan, tracker=tracker)


@renamed_parameters(chunks="blocks")
def summarize_chunks(
    func: Callable[..., Any],
    *sources: ArraySource,
    shape: tuple[int, ...] = (),
    dtype: DTypeLike = float,
    depth: int | Sequence[int] | Mapping[int, int] = 0,
    boundary: str = "reflect",
    blocks: BlockChunks = None,
    block_info: bool = False,
    scheduler: SchedulerLike = None,
    progress: ProgressArg = False,
    max_memory: int | str | None = None,
    compute: bool = True,
    constant_value: Any = 0,
    storage_options: Mapping[str, Any] | None = None,
    func_memory_factor: float = 2.0,
    casting: str = DEFAULT_CASTING,
    **kwargs: Any,
) -> Any:
    """One small result per block (a count, a histogram...), gathered over the block grid.

    ``func`` is called as in :func:`map_chunks` and returns a scalar or an array of
    ``shape``; the result is a numpy array of shape ``num_blocks + shape`` (or the lazy
    dask array with ``compute=False``), of ``dtype``: each summary is cast by the
    ``casting`` rule, as :func:`map_chunks` casts (by default a value ``dtype`` cannot
    hold, such as a negative count into ``uint8``, fails with
    :class:`~chunkflow.CastingError`). By default each block is one chunk (shard) of
    the first source, the tile a user thinks of; ``blocks=`` groups chunks as in
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
    plan, tasks = _prepare_plan(func, sources, out=None, depth=depth, boundary=boundary,
                                constant_value=constant_value, dtype=dtype,
                                chunks="chunk" if blocks is None else blocks,
                                block_info=block_info, trim=False, max_memory=max_memory,
                                scheduler=scheduler, storage_options=storage_options,
                                func_memory_factor=func_memory_factor, kwargs=kwargs,
                                summary_shape=tuple(shape), what="summarize_chunks",
                                casting=casting)
    token = tokenize("summary", func, kwargs, plan.sources, plan.depth, boundary,
                     constant_value, block_info, str(plan.dtype), tuple(shape), tasks.dep, casting)
    graph, name = _graph(plan, tasks.dep, token, tuple(shape))
    ndim = len(tasks.dep.numblocks)
    result = da.Array(graph, name,
                      tuple((1,) * n for n in tasks.dep.numblocks) + tuple((s,) for s in shape),
                      meta=np.empty((0,) * (ndim + len(shape)), plan.dtype))
    if not compute:
        return result
    (values,) = run(result, scheduler=scheduler, progress=progress)
    return values
