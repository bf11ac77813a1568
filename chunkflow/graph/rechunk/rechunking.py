"""rechunk: copy an array to new chunks (and dtype, codecs, format) in bounded memory.

Every task reads whole chunks and writes whole chunks (whole shards of a sharded
output), so no two tasks write one chunk and none reads anything back. When no block
that is whole chunks of both grids fits the memory plan, the job goes through an
intermediate array in ``temp``, as rechunker does (:mod:`chunkflow.graph.rechunk.passes`):
pass 1 writes it, pass 2 reads it, in one dask graph where pass 2 waits for pass 1.
Tasks exchange nothing but their completion, so a worker holds only what its running
tasks hold.

Examples
--------
>>> import numpy as np
>>> import chunkflow
>>> z = chunkflow.array(np.arange(48).reshape(6, 8), chunks=(1, 8))
>>> out = chunkflow.rechunk(z, (6, 2), chunkflow.MemoryStore(), max_memory="1 MiB")
>>> out.chunks, bool((out[:] == z[:]).all())
((6, 2), True)
>>> chunkflow.rechunk(z, (6, 2), chunkflow.MemoryStore(), max_memory=300)
Traceback (most recent call last):
...
chunkflow.errors.MemoryPlanError: rechunk: ...
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import dask.array as da
import numpy as np
from dask._task_spec import TaskRef
from dask.blockwise import blockwise
from dask.highlevelgraph import HighLevelGraph, MaterializedLayer

from chunkflow.config.renames import renamed_parameters
from chunkflow.core.array import Array
from chunkflow.engine.pool import serial_io
from chunkflow.graph.blocks import dim_blocks
from chunkflow.graph.casting import DEFAULT_CASTING, cast_block
from chunkflow.graph.map.tasks import RegionDep
from chunkflow.graph.rechunk.arrays import Intermediate, TargetChunks
from chunkflow.graph.rechunk.outputs import open_intermediate, open_output
from chunkflow.graph.rechunk.passes import Pass
from chunkflow.graph.rechunk.plan import RechunkPlan, prepare_rechunk
from chunkflow.graph.scheduler import ProgressArg
from chunkflow.graph.scheduler import compute as run
from chunkflow.graph.transactions import check_commit, refuse_deferred_commit, transaction
from chunkflow.jobs import Job, block_keys, job_progress
from chunkflow.storage import output_location

if TYPE_CHECKING:
    from numpy.typing import DTypeLike

    from chunkflow.graph.read import ArraySource
    from chunkflow.graph.scheduler import SchedulerLike
    from chunkflow.storage import StoreLike

__all__ = ["CopyPlan", "RechunkPlan", "prepare_rechunk", "rechunk"]


@dataclass(frozen=True)
class CopyPlan:
    """One pass, pickled once into the graph: copy blocks of ``source`` (from
    ``offset`` on) to the same blocks of ``target``, cast to its dtype by the
    ``casting`` rule (:func:`~chunkflow.graph.casting.cast_block`: by default a value
    the dtype cannot hold fails the task, and nothing of that block is written)."""

    source: Array
    target: Array
    offset: tuple[int, ...]
    tracker: Job | None = None  # resume=True: skips recorded blocks, records new ones
    casting: str = DEFAULT_CASTING

    def run(self, region: tuple[slice, ...]) -> None:
        read = tuple(slice(r.start + o, r.stop + o) for r, o in zip(region, self.offset))
        with serial_io():  # dask supplies the parallelism
            block = self.source.get_basic_selection(read)
            if block.dtype != self.target.dtype:  # the message's keys only when casting
                where = (f"rechunk: the block for array {self.target.path or '/'!r} in "
                         f"{self.target.store.identity} ({block_keys(self.target, region)})")
                block = cast_block(block, self.target.dtype, self.casting, where,
                                   tuple(s.start for s in region))
            self.target.set_basic_selection(region, block)


def _copy_block(plan: CopyPlan, located: tuple[tuple[int, ...], tuple[slice, ...]],
                *after: Any) -> np.ndarray:
    index, region = located
    marker = np.ones((1,) * len(region), dtype=bool)
    if plan.tracker is None:
        plan.run(region)
        return marker

    def write() -> np.ndarray:
        plan.run(region)
        return marker

    return plan.tracker.run(index, write, marker, lambda: block_keys(plan.target, region))


def _pass_graph(plan: CopyPlan, step: Pass, token: str, after: da.Array | None) -> da.Array:
    """One pass as a lazy 0-d array that is True once every block is written."""
    plan_key = f"chunkflow-job-{token}"
    name = f"chunkflow-rechunk-{token}"
    dep = RegionDep(dim_blocks(plan.target.shape, step.write_chunks, Ellipsis, step.multiples))
    ind = tuple(range(len(dep.numblocks)))
    extra: tuple[Any, ...] = ()
    layers: dict[str, Any] = {plan_key: MaterializedLayer({plan_key: plan})}
    dependencies: dict[str, set[str]] = {plan_key: set()}
    if after is not None:  # pass 2 starts once pass 1 is written
        extra = (TaskRef((after.name,)), None)  # the 0-d array's one key
        layers.update(after.dask.layers)
        dependencies.update(after.dask.dependencies)
    layers[name] = blockwise(_copy_block, name, ind, TaskRef(plan_key), None, dep, ind, *extra,
                             numblocks={}, _data_producer=True)
    dependencies[name] = {plan_key} | ({after.name} if after is not None else set())
    markers = da.Array(HighLevelGraph(layers, dependencies), name,
                       tuple((1,) * n for n in dep.numblocks),
                       meta=np.empty((0,) * len(ind), bool))
    return markers.all(split_every={axis: max(2, n) for axis, n in enumerate(markers.numblocks)})


@renamed_parameters(target_chunks="chunks", target_shards="shards",
                    region="selection")
def rechunk(
    source: ArraySource,
    chunks: TargetChunks,
    out: StoreLike,
    *,
    max_memory: int | str,
    temp: StoreLike | None = None,
    shards: Sequence[int] | None = None,
    zarr_format: int | None = None,
    compressors: Any = ...,
    dtype: DTypeLike | None = None,
    casting: str = DEFAULT_CASTING,
    selection: Any = None,
    overwrite: bool = False,
    scheduler: SchedulerLike = None,
    progress: ProgressArg = False,
    resume: bool = False,
    job_name: str | None = None,
    storage_options: Mapping[str, Any] | None = None,
    commit: str | None = None,
    compute: bool = True,
) -> Any:
    """Copy ``source`` (or a region of it) to a new array with other chunks.

    Parameters
    ----------
    source : chunkflow.Array, path, URL or store
        The array to read.
    chunks : int, tuple or dict
        The output's chunks (inner chunks with ``shards``): one size per axis
        (``-1``: the whole axis), or ``{axis: size}`` for some axes, the others keeping
        the source's chunks.
    out : path, URL or store
        Where to create the output array (it must not exist, unless ``overwrite``).
    max_memory : int or str
        What one task may hold (``"256 MiB"``), as rechunker's ``max_mem``: a worker
        running ``n`` tasks at once holds up to ``n`` times as much. The plan is checked
        before anything runs; a refusal (:class:`~chunkflow.MemoryPlanError`) says what
        would fit and creates nothing.
    temp : path, URL or store, optional
        Where the intermediate array goes when one is needed (the error says so). It is
        created under ``temp`` as ``chunkflow-rechunk-<token>`` and removed after (also
        after a failure, unless ``resume=True`` keeps it for the next run).
    shards : tuple, optional
        The output's shard shape (Zarr v3 sharding); tasks then write whole shards.
    zarr_format : {2, 3}, optional
        The output's format (default: the source's; 3 with ``shards``).
    compressors : optional
        The output's compressors, as :func:`chunkflow.create_array` takes them
        (default: the source's compressor; ``None`` for none).
    dtype : optional
        The output's dtype (default: the source's).
    casting : str
        How values become the output's dtype, as for :func:`chunkflow.map_chunks`
        (:mod:`chunkflow.graph.casting`): by default (``"same_value"``) a value the dtype
        cannot hold (uint16 ``300`` into uint8, a fraction into an integer) fails the
        job with :class:`~chunkflow.CastingError`, naming it and where it lies;
        ``"unsafe"`` converts as numpy's ``astype`` (wrapping, truncating).
    selection : tuple of slices, optional
        Rechunk only this part of ``source`` (unit steps); the output has its shape.
    overwrite : bool
        Replace what is at ``out``.
    scheduler, progress
        See :func:`chunkflow.compute`.
    resume : bool
        Skip the blocks (of both passes) an earlier run of the same rechunk recorded;
        the output of an interrupted run is continued, not refused. The output's
        blocks are recorded (and the output marked unfinished until done) with
        ``resume=True`` or not; the intermediate's only with it. See
        :mod:`chunkflow.jobs`.
    job_name : str, optional
        A name for the job (kept in the unfinished output's mark; part of its
        identity, so a resume must name it alike).
    storage_options : dict, optional
        fsspec options for URLs (source, out and temp).
    commit : str, optional
        With an output in an Icechunk session: commit the session with this message
        once the job succeeded (one commit). On a cluster the tasks write into forks of
        the session, merged back at the end; see :mod:`chunkflow.graph.transactions`.
    compute : bool
        Copy now and return the output (default), or create the output and return a
        lazy dask scalar that copies when computed (to ``True``), finishing the job and
        removing the intermediate array last. Not with ``commit``.

    Returns
    -------
    chunkflow.Array
        The output, or the lazy dask scalar with ``compute=False``.
    """
    refuse_deferred_commit(commit, compute, "rechunk")
    out = output_location(out)  # a zarr-python Store as chunkflow's Store over it
    check_commit(out, commit, "rechunk")
    plan = prepare_rechunk(source, chunks, max_memory=max_memory, temp=temp,
                          shards=shards, zarr_format=zarr_format,
                          compressors=compressors, dtype=dtype, selection=selection,
                          casting=casting, scheduler=scheduler,
                          storage_options=storage_options)
    target, tracker = open_output(plan, out, resume=resume, overwrite=overwrite,
                                  job_name=job_name,
                                  storage_options=storage_options)
    trackers: list[Job | None] = [tracker]
    last = CopyPlan(plan.source, target, plan.offset, tracker, casting)
    if plan.choice.intermediate_chunks is None:
        done = _pass_graph(last, plan.choice.passes[0], plan.token, None)
        middle = place = None
    else:
        assert temp is not None
        place = Intermediate.under(temp, plan.intermediate_name, storage_options)
        middle, first_tracker = open_intermediate(plan, place, resume=resume)
        trackers.insert(0, first_tracker)
        # The intermediate has the smaller of the two dtypes: the one cast happens in
        # whichever pass converts, under the same rule.
        first = _pass_graph(CopyPlan(plan.source, middle, plan.offset, first_tracker, casting),
                            plan.choice.passes[0], f"{plan.token}-1", None)
        last = dataclasses.replace(last, source=middle, offset=(0,) * target.ndim)
        done = _pass_graph(last, plan.choice.passes[1], f"{plan.token}-2", first)
    if not compute:
        return da.map_blocks(_finish_flag, done, tracker, target, place, middle, dtype=bool,
                             meta=np.empty((), bool))
    try:
        with job_progress(progress, trackers) as shown, transaction(
                [target], scheduler=scheduler, commit=commit, what="rechunk") as on:
            run(done, scheduler=on, progress=shown)
    except BaseException:
        if place is not None and middle is not None and not resume:
            place.remove(middle)  # nothing will resume it: no stray copy in temp
        raise
    _finish(tracker, target, place, middle)
    return target


def _finish(tracker: Job | None, target: Array, place: Intermediate | None,
            middle: Array | None) -> None:
    """After the last block: the job is finished, the intermediate array goes."""
    if tracker is not None:
        tracker.finish(target)
    if place is not None and middle is not None:
        place.remove(middle)
    target.forget_cached()  # written by other processes


def _finish_flag(flag: np.ndarray, tracker: Job | None, target: Array,
                 place: Intermediate | None, middle: Array | None) -> np.ndarray:
    """:func:`_finish` as the last task of a deferred rechunk."""
    _finish(tracker, target, place, middle)
    return flag
