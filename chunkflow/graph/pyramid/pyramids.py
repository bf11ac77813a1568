"""OME-Zarr multiscale pyramids, every level from the one before it, in one job.

:func:`pyramid` writes an OME-Zarr image: level ``0`` (the source, re-chunked and
re-encoded as asked) and each coarser level made from the previous one, with NGFF 0.4
metadata for Zarr v2 or NGFF 0.5 for Zarr v3 (:mod:`chunkflow.metadata.ngff`).

One dask graph makes every level. A task reads a block of the source (or of a level an
earlier task wrote), computes the next levels in memory, each from the one before, and
writes whole chunks of each (:mod:`chunkflow.graph.pyramid.geometry`): 343 tasks for a
16384^2 uint16 image in 512^2 chunks, where ome-zarr-py's writer makes 3411 and
ngff-zarr's levels 8186. No level is held whole, and the kernels keep the dtype, averaging
integers in a wider integer type per block with one rounding rule
(:mod:`chunkflow.graph.pyramid.downsample`).

Examples
--------
>>> import numpy as np
>>> import chunkflow
>>> image = np.arange(64 * 48, dtype="u2").reshape(64, 48)
>>> source = chunkflow.array(image, chunks=(16, 16), zarr_format=2)
>>> out = chunkflow.MemoryStore()
>>> levels = pyramid(source, out)
>>> [a.shape for a in levels]
[(64, 48), (32, 24), (16, 12)]
>>> g = chunkflow.open_group(out, mode="r")
>>> [d["path"] for d in g.attrs["multiscales"][0]["datasets"]]
['0', '1', '2']
>>> int(g["1"][0, 0]) == int(np.round(image[:2, :2].mean()))
True
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import replace
from typing import TYPE_CHECKING, Any

import numpy as np
from dask.base import tokenize
from dask.delayed import Delayed

from chunkflow.api.hierarchy import open_group
from chunkflow.config import byte_count
from chunkflow.core.array import Array
from chunkflow.core.group import Group
from chunkflow.errors import PyramidError
from chunkflow.graph.memory import default_max_memory
from chunkflow.graph.pyramid.channels import ImageAttributes, channel_entries
from chunkflow.graph.pyramid.downsample import (
    LABEL_METHODS,
    WINDOW_METHODS,
    check_method,
    gaussian_radius,
    method_work_factor,
)
from chunkflow.graph.pyramid.frame import Frame, PerAxis, image_multiscales, resolve_frame
from chunkflow.graph.pyramid.geometry import PyramidGeometry, plan_geometry, resolve_factors
from chunkflow.graph.pyramid.output import PyramidOutput, codec_kwargs, plan_output
from chunkflow.graph.pyramid.plan import PyramidPlan
from chunkflow.graph.read import BLOCKS_PER_THREAD, writer_source
from chunkflow.graph.scheduler import ProgressArg, worker_threads
from chunkflow.graph.scheduler import compute as run
from chunkflow.graph.transactions import (
    check_commit,
    refuse_deferred_commit,
    settle,
    through_forks,
    transaction,
)
from chunkflow.heap import roomy_heap
from chunkflow.jobs import (
    Job,
    JobSpec,
    job_identity,
    job_progress,
    job_status,
    open_job,
    quiet_open,
    recorded_plan,
    source_parts,
)
from chunkflow.metadata.ngff import Axis, level_transforms, multiscales_attributes, ngff_version
from chunkflow.storage import output_location
from chunkflow.version import __version__

if TYPE_CHECKING:
    from chunkflow.graph.read import ArraySource
    from chunkflow.graph.scheduler import SchedulerLike
    from chunkflow.metadata.ngff import AxesLike
    from chunkflow.storage import StoreLike

__all__ = ["DEFAULT_TASK_BYTES", "pyramid"]

# Stages grow deeper (more levels per task, fewer stages re-reading a level) while one
# task's plan stays under this many bytes. Measured on 2 cores (quiet), mean pyramid of
# 16384^2 uint16 in 512^2 chunks (6 levels; the interpreter with chunkflow loaded:
# 119 MiB): 64 MiB made 2048^2 blocks, 87 tasks, 2.5 s at 168 MiB peak RSS; 16 MiB makes
# 1024^2 blocks, 343 tasks, 2.0 s at 149 MiB (fewer levels per task, but two tasks'
# blocks in memory at a time instead of 8 MiB ones).
DEFAULT_TASK_BYTES = 16 * 2**20


def _run_task(plan: PyramidPlan, number: int, index: tuple[int, ...], waited: list[Any]) -> bool:
    with roomy_heap():  # a block's temporaries, not mapped anew in a worker
        return plan.run(number, index)


def _finish(plan: PyramidPlan, output: PyramidOutput, image: Group,
            attributes: ImageAttributes, version: str, done: list[Any]) -> bool:
    # The image becomes visible only now, whole; then the resume records go (a crash
    # in between leaves records of finished tasks: a resume skips them all).
    output.finish(image, attributes.complete(plan.levels[-1]), version)
    plan.finish()
    return True


def _graph(plan: PyramidPlan, output: PyramidOutput, image: Group,
           attributes: ImageAttributes, version: str, token: str, rounds: bool = False) -> list[Delayed]:
    """The job's graph: one (each stage waits for the blocks of the one before it that
    it reads), or with ``rounds`` one per stage and one for the metadata, to compute in
    turn (a job writing through forks of an Icechunk session, whose tasks see only what
    their own worker wrote: :func:`~chunkflow.graph.transactions.settle` between two)."""
    graph: dict[Any, Any] = {}
    parts: list[Delayed] = []
    plan_key = f"chunkflow-job-{token}"
    previous = ""
    for number, stage in enumerate(plan.geometry.stages):
        if rounds:  # keys of its own per round: a round never reuses another's plan
            graph, plan_key, previous = {}, f"chunkflow-job-{number}-{token}", ""
        graph[plan_key] = plan
        name = f"chunkflow-pyramid-{number}-{token}"
        for index in np.ndindex(*stage.numblocks):
            waited = ([(previous, *d) for d in plan.geometry.dependencies(number, index)]
                      if previous else [])
            graph[(name, *index)] = (_run_task, plan_key, number, tuple(index), waited)
        previous = name
        if rounds:
            parts.append(_gathered(graph, name, f"chunkflow-pyramid-{number}-done-{token}"))
    last = [key for key in graph if isinstance(key, tuple) and key[0] == previous]
    final = f"chunkflow-pyramid-done-{token}"
    if rounds:
        graph, plan_key, last = {}, f"chunkflow-job-finish-{token}", []
        graph[plan_key] = plan
    graph[final] = (_finish, plan_key, output, image, attributes, version, last)
    return [*parts, Delayed(final, graph)]


def _gathered(graph: dict[Any, Any], name: str, key: str) -> Delayed:
    """The tasks of ``graph`` named ``name``, gathered in one key."""
    graph[key] = (_all_done, [k for k in graph if isinstance(k, tuple) and k[0] == name])
    return Delayed(key, graph)


def _all_done(done: list[Any]) -> bool:
    return True


def pyramid(
    source: ArraySource,
    out: StoreLike,
    *,
    levels: int | None = None,
    factors: int | Sequence[int] | Mapping[str, int] = 2,
    method: str | None = None,
    axes: AxesLike = None,
    units: Mapping[str, str] | None = None,
    scale: PerAxis = None,
    translation: PerAxis = None,
    channels: Sequence[str | Mapping[str, Any]] | None = None,
    chunks: Sequence[int] | None = None,
    zarr_format: int | None = None,
    labels: str | None = None,
    overwrite: bool = False,
    max_memory: int | str | None = None,
    scheduler: SchedulerLike = None,
    progress: ProgressArg = False,
    compute: bool = True,
    resume: bool = False,
    job_name: str | None = None,
    storage_options: Mapping[str, Any] | None = None,
    commit: str | None = None,
) -> Any:
    """Write ``source`` and its downsampled levels as an OME-Zarr image at ``out``.

    Parameters
    ----------
    source : chunkflow.Array, path, URL or store
        The full-resolution image (2 to 5 dimensions).
    out : path, URL or store
        Where the image group goes (created; see ``overwrite``). With ``labels=``, the
        image group the label image joins, under ``labels/NAME``.
    levels : int, optional
        How many levels, level 0 included. Default: until every downsampled axis fits
        in one chunk.
    factors : int, sequence or mapping
        The factor between levels: an int for every space axis (time and channel axes
        keep 1), one per axis, or a mapping by axis name (``{"z": 1}``).
    method : {"mean", "gaussian", "max", "nearest", "mode"}, optional
        ``mean`` by default (``mode`` for labels); see :mod:`chunkflow.graph.pyramid.downsample`.
        ``mean``, ``max`` and ``mode`` summarize windows: a level's translation moves by
        half a window (as ngff-zarr writes); ``nearest`` and ``gaussian`` sample each
        window's first element.
    axes : str or sequence, optional
        Axis names (``"tczyx"``) or NGFF axis mappings (name, type, unit). Default: the
        source's ``dimension_names`` when they are t, c, z, y, x, else ``yx``, ``zyx``,
        ``czyx`` or ``tczyx`` by dimension.
    units : mapping, optional
        Unit per axis name (``{"x": "micrometer", "t": "second"}``).
    scale : sequence of float or mapping, optional
        The physical size of a level-0 pixel per axis, or by axis name (default 1).
    translation : sequence of float or mapping, optional
        Where the level-0 pixel ``(0, ...)`` stands, per axis or by axis name (default 0).
        With ``labels=``, the axes, units, scale and translation not given are the
        image's (by axis name; a label image may lack its channel and time axes), so
        that the labels overlay the image in napari; see
        :mod:`chunkflow.graph.pyramid.frame`.
    channels : sequence of str or mapping, optional
        A name per channel (the channel axis's length), written as the ``omero``
        metadata viewers name layers by; see :mod:`chunkflow.graph.pyramid.channels`.
    chunks : sequence of int, optional
        Chunk shape of every level (cut to the level's shape). Default: the source's.
    zarr_format : {2, 3}, optional
        Default: the source's (labels: the image's). v2 writes NGFF 0.4, v3 NGFF 0.5.
    labels : str, optional
        Write a label image of this name (``out/labels/NAME`` with ``image-label``
        metadata); its method must be ``mode`` or ``nearest``.
    overwrite : bool
        Replace an image (or label image) that exists at ``out``.
    max_memory : int or str, optional
        What one task may use (default: as :func:`chunkflow.map_chunks`); the plan is
        checked before anything is created.
    scheduler, progress
        See :func:`chunkflow.compute`.
    compute : bool
        Write now and return the level arrays (default), or return a lazy
        ``dask.delayed`` object that writes when computed (its graph holds every task).
    resume : bool
        When the output exists (an interrupted run of the same job), skip the tasks it
        recorded: the result is bit-identical to an uninterrupted run. Every run
        records its finished tasks in the output's store, with ``resume=True`` or not. A different
        unfinished job there is refused (:class:`~chunkflow.errors.JobMismatchError`).
        See :mod:`chunkflow.jobs`.
    job_name : str, optional
        A name for the job (kept in the unfinished levels' marks; part of their
        identity, so a resume must name it alike).
    storage_options : dict, optional
        fsspec options for URLs.
    commit : str, optional
        With an output in an Icechunk session: commit the session with this message
        once the job succeeded (one commit). On a cluster the tasks write into forks of
        the session, merged back at the end; see :mod:`chunkflow.graph.transactions`.

    Returns
    -------
    tuple of chunkflow.Array, one per level (finest first), or a Delayed.
    """
    refuse_deferred_commit(commit, compute, "pyramid")
    out = output_location(out)  # a zarr-python Store as chunkflow's Store over it
    check_commit(out, commit, "pyramid")
    array = writer_source(source, storage_options, cache=False)
    method = method or ("mode" if labels is not None else "mean")
    where = f"pyramid of {array.path or '/'!r}"
    check_method(method, array.dtype, where)
    if labels is not None and method not in LABEL_METHODS:
        raise PyramidError(f"{where}: a label image keeps its labels: method must be one of "
                           f"{', '.join(LABEL_METHODS)}, not {method!r}")
    frame = resolve_frame(axes, units, scale, translation, array.ndim, array.dimension_names,
                          image_multiscales(out, storage_options) if labels else None)
    resolved_axes = frame.axes
    per_axis = resolve_factors(factors, resolved_axes)
    entries = _channel_entries(channels, resolved_axes, array.shape, labels)
    recorded = _recorded_stages(out, labels, storage_options) if resume else None
    geometry = _geometry(array, per_axis, levels, method, chunks, max_memory, scheduler, recorded)
    nlevels = len(geometry.shapes)
    output = plan_output(array, source, out, storage_options, zarr_format, labels, overwrite,
                         resume, ())
    # The levels take the output's format (a label image: the image's, whatever the
    # source's).
    output = replace(output, levels=tuple(
        _level_kwargs(array, shape, chunk, resolved_axes, output.zarr_format)
        for shape, chunk in zip(geometry.shapes, geometry.level_chunks)))
    version = ngff_version(output.zarr_format)
    attributes = _image_attributes(frame, per_axis, nlevels, method, labels, version, entries)
    image, arrays = output.create()  # last: every check passed
    trackers = _trackers(array, arrays, geometry, method, resume, job_name)
    plan = PyramidPlan(array, arrays, geometry, method, trackers)
    token = tokenize("pyramid", array, [(a.store.identity, a.path) for a in arrays], method,
                     geometry, [(t.token, t.n_done) if t else None for t in trackers])
    if not compute:
        return _graph(plan, output, image, attributes, version, token)[0]
    with job_progress(progress, trackers) as shown, transaction(
            arrays, scheduler=scheduler, commit=commit, what="pyramid") as on:
        parts = _graph(plan, output, image, attributes, version, token,
                       rounds=through_forks())
        for number, part in enumerate(parts):
            if number:
                settle()  # the next stage reads the levels this one wrote
            run(part, scheduler=on, progress=shown)
    for level in arrays:
        level.forget_cached()
    return arrays


def _image_attributes(frame: Frame, factors: Sequence[int], levels: int, method: str,
                      name: str | None, version: str,
                      channels: list[dict[str, Any]] | None) -> ImageAttributes:
    """The image's ``multiscales`` attributes (written once every level is), each level
    moved by the level-0 translation."""
    transforms = [(path, scale, [t + o for t, o in zip(translation, frame.translation)])
                  for path, scale, translation in level_transforms(
                      factors, levels, frame.scale, centered=method in WINDOW_METHODS)]
    attributes = multiscales_attributes(
        frame.axes, transforms, version=version, name=name, method=method,
        metadata={"method": "chunkflow.pyramid", "version": __version__,
                  "kwargs": {"method": method, "factors": list(factors)}})
    kinds = [a.type for a in frame.axes]
    return ImageAttributes(attributes, version, None if channels is None else tuple(channels),
                           kinds.index("channel") if "channel" in kinds else None)


def _channel_entries(channels: Sequence[str | Mapping[str, Any]] | None, axes: Sequence[Axis],
                     shape: tuple[int, ...], labels: str | None) -> list[dict[str, Any]] | None:
    """``channels=`` checked against the channel axis (before anything is created)."""
    if channels is None:
        return None
    kinds = [a.type for a in axes]
    if labels is not None or "channel" not in kinds:
        where = "a label image" if labels is not None else f"axes {''.join(a.name for a in axes)!r}"
        raise PyramidError(f"pyramid: channels= names the channels of a channel axis; "
                           f"{where} has none")
    return channel_entries(channels, shape[kinds.index("channel")])


def _trackers(source: Array, arrays: Sequence[Array], geometry: PyramidGeometry,
              method: str, resume: bool, job_name: str | None = None
              ) -> tuple[Job | None, ...]:
    """A recorded job per stage, on the stage's last level (its tasks' grid), with
    ``resume=True`` or not."""
    what = tokenize(method, geometry.shapes, geometry.chunk, geometry.factors, geometry.radius)
    sources = source_parts([source])  # one listing for every stage's job
    stages = {"stages": [[stage.first, stage.last] for stage in geometry.stages]}
    trackers: dict[int, Job | None] = {}
    # Levels that carry a job first: another job there is refused before any new mark
    # is written elsewhere (a refusal changes nothing).
    marked = sorted(range(len(geometry.stages)),
                    key=lambda k: job_status(arrays[geometry.stages[k].last], count=False) is None)
    for number in marked:
        stage = geometry.stages[number]
        out = arrays[stage.last]
        spec = job_identity(out, sources=sources, kept=stages, job_name=job_name, plan={
            "pyramid": what, "block plan": tokenize(stage.first, stage.last, stage.numblocks)})
        trackers[number] = open_job(out, stage.numblocks, resume=resume,
                                    identity=_returning(spec))
    return tuple(trackers[number] for number in range(len(geometry.stages)))


def _returning(spec: JobSpec) -> Callable[[], JobSpec]:
    """A function returning ``spec`` (open_job asks for the identity only when needed)."""
    return lambda: spec


def _level_kwargs(source: Array, shape: tuple[int, ...], chunk: tuple[int, ...],
                  axes: Sequence[Axis], zarr_format: int | None) -> dict[str, Any]:
    fmt = source.zarr_format if zarr_format is None else zarr_format
    kwargs: dict[str, Any] = {"shape": shape, "chunks": chunk, "dtype": source.dtype,
                              "fill_value": source.fill_value if source.fill_value is not None
                              else 0, **codec_kwargs(source, fmt)}
    if fmt == 3:
        kwargs["dimension_names"] = [a.name for a in axes]
    return kwargs


def _recorded_stages(out: StoreLike, labels: str | None,
                     storage_options: Mapping[str, Any] | None) -> list[tuple[int, int]] | None:
    """The stages an unfinished pyramid at ``out`` started with, from its jobs' marks."""
    try:
        with quiet_open():
            image = open_group(out, mode="r", path=f"labels/{labels}" if labels else None,
                               storage_options=dict(storage_options or {}) or None)
    except FileNotFoundError:
        return None
    with quiet_open():
        levels = [node for _, node in image.arrays()]
    for level in levels:
        stages = (recorded_plan(level) or {}).get("stages")
        if isinstance(stages, list):
            return [(int(first), int(last)) for first, last in stages]
    return None


def _geometry(array: Array, factors: tuple[int, ...], levels: int | None, method: str,
          chunks: Sequence[int] | None, max_memory: int | str | None,
          scheduler: SchedulerLike, recorded: list[tuple[int, int]] | None = None,
          ) -> PyramidGeometry:
    chunk = tuple(int(c) for c in (array.chunks if chunks is None else chunks))
    if len(chunk) != array.ndim or any(c < 1 for c in chunk):
        raise PyramidError(f"pyramid: chunks={chunks!r} must give {array.ndim} sizes >= 1")
    if levels is not None and (not isinstance(levels, int) or levels < 1):
        raise PyramidError(f"pyramid: levels={levels!r} must be a whole number >= 1")
    itemsize = array.dtype.itemsize
    work = method_work_factor(method, itemsize)
    fixed = itemsize * (math.prod(array.chunks) + math.prod(chunk))  # decode + encode

    def task_bytes(geometry: PyramidGeometry) -> int:
        window = math.prod(geometry.largest_window(geometry.stages[0]))
        return int(window * itemsize * (2 + work)) + fixed

    limit = (default_max_memory(scheduler)[0] if max_memory is None
             else byte_count("pyramid: max_memory", max_memory))
    radius = tuple(gaussian_radius(f) if method == "gaussian" else 0 for f in factors)
    geometry = plan_geometry(array.shape, chunk, factors, levels=levels, radius=radius,
                     task_bytes=task_bytes, target=min(limit, DEFAULT_TASK_BYTES), limit=limit,
                     min_tasks=BLOCKS_PER_THREAD * worker_threads(scheduler), recorded=recorded)
    last = geometry.shapes[-1]
    if levels is not None and len(geometry.shapes) > 1 and geometry.shapes[-2] == last:
        raise PyramidError(f"pyramid: levels={levels} goes past the smallest image {last}: "
                           f"level {levels - 2} already has that shape")
    return geometry
