"""``chunkflow.convert``: the files users have, as sharded OME-Zarr with its pyramid.

One job reads the source in windows of whole output shards (the source's tiles or
strips divide them with the default, power-of-two shards), writes level 0 and computes
the coarser levels from it in memory, each shard of each level written once, whole
(the stages of :mod:`chunkflow.graph.pyramid.geometry`, run by a
:class:`~chunkflow.graph.pyramid.PyramidPlan` over the source's reader). The
``multiscales`` (NGFF 0.4 for Zarr v2, 0.5 for v3) and ``omero`` metadata (channel
names, display windows) are written last: a reader finds every level whole or no image.

Every task is recorded in the output (:mod:`chunkflow.jobs`): after a crash,
``resume=True`` does only what is missing, bit-identical to an uninterrupted run.

Examples
--------
>>> import numpy as np
>>> import chunkflow
>>> image = np.arange(2 * 64 * 48, dtype="u2").reshape(2, 64, 48)
>>> out = chunkflow.MemoryStore()
>>> levels = convert(image, out, axes="cyx", scale=(1, 0.5, 0.5), units={"x": "micrometer"},
...                  channel_names=["DAPI", "GFP"], chunks=(1, 16, 16))
>>> [a.shape for a in levels], levels[0].shards
([(2, 64, 48), (2, 32, 24), (2, 16, 12)], (1, 64, 48))
>>> attrs = chunkflow.open_group(out, mode="r").attrs["ome"]
>>> [c["label"] for c in attrs["omero"]["channels"]], attrs["multiscales"][0]["axes"][2]
(['DAPI', 'GFP'], {'name': 'x', 'type': 'space', 'unit': 'micrometer'})
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np
from dask.base import tokenize
from dask.delayed import Delayed

from chunkflow.api.hierarchy import open_group, open_node
from chunkflow.config import byte_count
from chunkflow.core.array import Array
from chunkflow.core.group import Group
from chunkflow.errors import (
    ContainsArrayError,
    ContainsGroupError,
    InvalidArgumentError,
    JobMismatchError,
    MemoryPlanError,
    NodeNotFoundError,
)
from chunkflow.graph.memory import default_max_memory
from chunkflow.graph.pyramid import PyramidPlan
from chunkflow.graph.pyramid.downsample import check_method, gaussian_radius, method_work_factor
from chunkflow.graph.pyramid.geometry import (
    PyramidGeometry,
    natural_levels,
    plan_geometry,
    resolve_factors,
)
from chunkflow.graph.read import BLOCKS_PER_THREAD
from chunkflow.graph.scheduler import ProgressArg, worker_threads
from chunkflow.graph.scheduler import compute as run
from chunkflow.io.layout import Layout, level_layout, plan_layout
from chunkflow.io.metadata import ImageMetadata, image_attributes, resolve_image
from chunkflow.io.opening import open_source
from chunkflow.io.source import Reader, ZarrReader
from chunkflow.jobs import (
    Job,
    array_location,
    check_not_source,
    job_identity,
    job_progress,
    location_of,
    open_job,
    quiet_open,
    recorded_plan,
)
from chunkflow.metadata.ngff import ngff_version
from chunkflow.storage import output_location

if TYPE_CHECKING:
    from chunkflow.graph.scheduler import SchedulerLike
    from chunkflow.metadata.ngff import AxesLike
    from chunkflow.storage import StoreLike

__all__ = ["convert"]

#: Target bytes of one task's plan (as :func:`chunkflow.pyramid`'s): stages grow deeper
#: while a task stays under it, or under ``max_memory`` when that is smaller.
TASK_BYTES = 64 * 2**20


def convert(
    source: Any,
    out: StoreLike,
    *,
    axes: AxesLike = None,
    scale: Sequence[float] | Mapping[str, float] | None = None,
    units: Mapping[str, str] | None = None,
    channel_names: Sequence[str] | None = None,
    chunks: Sequence[int] | None = None,
    shards: Sequence[int] | None = None,
    levels: int | None = None,
    method: str = "mean",
    dataset: str | None = None,
    stack_axis: str = "z",
    shape: Sequence[int] | None = None,
    dtype: Any = None,
    offset: int = 0,
    order: str = "C",
    zarr_format: int = 3,
    overwrite: bool = False,
    resume: bool = False,
    job_name: str | None = None,
    scheduler: SchedulerLike = None,
    progress: ProgressArg = False,
    max_memory: int | str | None = None,
    storage_options: Mapping[str, Any] | None = None,
    compute: bool = True,
) -> Any:
    """Write ``source`` as a sharded OME-Zarr image with its pyramid at ``out``.

    Parameters
    ----------
    source : path, glob, URL, list of paths, array or reader
        A TIFF or OME-TIFF file, a glob or folder of TIFF files (stacked along
        ``stack_axis``), an HDF5 or NetCDF file (``dataset=``, or ``"f.h5::name"``),
        an h5py dataset, a ``.npy`` file, a raw file (``shape=``, ``dtype=``,
        ``offset=``, ``order=``), a numpy array or ``memmap``, or a Zarr array (a
        path, URL, store, chunkflow or zarr-python array). See
        :func:`chunkflow.io.open_source`.
    out : path, URL or store
        Where the image group goes (see ``overwrite`` and ``resume``).
    axes : str or sequence, optional
        NGFF axis names in order (``"tczyx"``). Default: what the file says (OME-XML,
        tifffile's axes, NetCDF dimensions), else ``yx``, ``zyx``, ``czyx``, ``tczyx``.
    scale : sequence or mapping, optional
        Physical size of a level-0 pixel, per axis or by axis name. Default: the file's
        (OME-XML physical sizes, ImageJ's spacing), else 1.
    units : mapping, optional
        Unit per axis name (``{"x": "micrometer"}``), over the file's.
    channel_names : sequence of str, optional
        One name per channel (the ``c`` axis), over the file's (OME-XML): they go into
        the ``omero`` metadata, where viewers find them.
    chunks, shards : sequence of int, optional
        Chunk and shard shape of level 0 (each level's are cut to its shape). Default:
        see :mod:`chunkflow.io.layout`. Zarr v2 has no shards.
    levels : int, optional
        Levels, level 0 included. Default: until each space axis fits in one chunk.
    method : str
        How a level is made from the one before (see :func:`chunkflow.pyramid`).
    zarr_format : {3, 2}
        3 writes NGFF 0.5 with sharding (default); 2 writes NGFF 0.4, unsharded.
    overwrite, resume, job_name
        Replace an image at ``out``; continue an interrupted convert there (skipping
        what it recorded, bit-identical to an uninterrupted run); name the job.
    scheduler, progress
        See :func:`chunkflow.compute` (threads, processes, a ``distributed`` client).
    max_memory : int or str, optional
        What one task may use; the plan is checked before anything is created.
    storage_options : dict, optional
        fsspec options for URLs (of ``out``, and of a TIFF or Zarr source).
    compute : bool
        Write now and return the level arrays, or return a ``Delayed`` that does.

    Returns
    -------
    tuple of chunkflow.Array (finest first), or a Delayed.
    """
    if zarr_format not in (2, 3):
        raise InvalidArgumentError(f"convert: zarr_format={zarr_format!r} must be 2 or 3")
    if resume and overwrite:
        raise InvalidArgumentError("convert: resume=True continues the output that exists and "
                                   "overwrite=True replaces it; pass one of them")
    if levels is not None and (isinstance(levels, bool) or not isinstance(levels, int)
                               or levels < 1):
        raise InvalidArgumentError(f"convert: levels={levels!r} must be a whole number >= 1")
    if shards is not None and zarr_format == 2:
        plan_layout((1,) * len(shards), "x" * len(shards), "u1", None, shards, 2)  # refuses
    reader = open_source(source, dataset=dataset, stack_axis=stack_axis, shape=shape,
                         dtype=dtype, offset=offset, order=order,
                         storage_options=storage_options)
    check_method(method, reader.dtype, f"convert of {reader.info.description}")
    image = resolve_image(reader, axes, scale, units, channel_names)
    names = "".join(a.name for a in image.axes)
    layout = plan_layout(reader.shape, names, reader.dtype, chunks, shards, zarr_format)
    factors = resolve_factors(2, image.axes)
    count = natural_levels(reader.shape, layout.chunks, factors) if levels is None else levels
    location = output_location(out)
    options = dict(storage_options or {}) or None
    if isinstance(reader, ZarrReader):  # creating the output must not delete the source
        check_not_source("convert", location_of(location, storage_options),
                         [(f"its source {reader.info.description}", array_location(reader.array))],
                         creates=True)
    existing = _existing(location, options, overwrite, resume)
    recorded = _recorded_stages(existing) if resume else None
    geometry = _geometry(reader, layout, factors, count, method, max_memory, scheduler, recorded)
    if len(geometry.shapes) > 1 and geometry.shapes[-2] == geometry.shapes[-1]:
        raise InvalidArgumentError(f"convert: levels={count} goes past the smallest image "
                                   f"{geometry.shapes[-1]}: level {count - 2} has that shape "
                                   "already")
    group, arrays = _create(location, options, existing, overwrite, zarr_format, reader,
                            layout, geometry, names)
    trackers = _trackers(reader, arrays, geometry, method, layout, resume, job_name)
    # The plan reads its source through ``get_basic_selection``, which a reader has.
    plan = PyramidPlan(reader, arrays, geometry, method, trackers)  # type: ignore[arg-type]  # a Reader reads as an Array does
    metadata = image_attributes(image, factors, len(geometry.shapes), method,
                                ngff_version(zarr_format))
    token = tokenize("convert", reader.identity(), [(a.store.identity, a.path) for a in arrays],
                     method, geometry, [(t.token, t.n_done) if t else None for t in trackers])
    job = _graph(plan, group, metadata, token)
    if not compute:
        return job
    with job_progress(progress, trackers) as shown:
        run(job, scheduler=scheduler, progress=shown)
    for level in arrays:
        level.forget_cached()
    return arrays


def _existing(location: Any, options: dict[str, Any] | None, overwrite: bool,
              resume: bool) -> Group | None:
    """The image group to resume in (``resume=True``), after refusing what is there
    without ``overwrite``."""
    try:
        with quiet_open():
            node = open_node(location, mode="r", storage_options=options)
    except (NodeNotFoundError, FileNotFoundError):
        return None
    if isinstance(node, Group) and resume:
        return node
    if not overwrite:
        kind, error = (("an array", ContainsArrayError) if isinstance(node, Array)
                       else ("a group", ContainsGroupError))
        raise error(f"convert: {str(location)!r} holds {kind} already; pass overwrite=True "
                    "to replace it (or resume=True to continue an interrupted convert)")
    return None


def _recorded_stages(group: Group | None) -> list[tuple[int, int]] | None:
    """The stages an interrupted convert started with, from its jobs' marks."""
    if group is None:
        return None
    with quiet_open():
        found = [node for _, node in group.arrays()]
    for level in found:
        stages = (recorded_plan(level) or {}).get("stages")
        if isinstance(stages, list):
            return [(int(first), int(last)) for first, last in stages]
    return None


def _geometry(reader: Reader, layout: Layout, factors: tuple[int, ...], count: int, method: str,
              max_memory: int | str | None, scheduler: SchedulerLike,
              recorded: list[tuple[int, int]] | None) -> PyramidGeometry:
    itemsize = reader.dtype.itemsize
    work = method_work_factor(method, itemsize)
    fixed = 2 * itemsize * math.prod(layout.unit)  # a shard's encoding

    def task_bytes(geometry: PyramidGeometry) -> int:
        window = math.prod(geometry.largest_window(geometry.stages[0]))
        return int(window * itemsize * (2 + work)) + fixed

    limit = (default_max_memory(scheduler)[0] if max_memory is None
             else byte_count("convert: max_memory", max_memory))
    radius = tuple(gaussian_radius(f) if method == "gaussian" else 0 for f in factors)
    try:
        return plan_geometry(reader.shape, layout.unit, factors, levels=count, radius=radius,
                             task_bytes=task_bytes, target=min(limit, TASK_BYTES), limit=limit,
                             min_tasks=BLOCKS_PER_THREAD * worker_threads(scheduler),
                             recorded=recorded)
    except MemoryPlanError as err:  # the pyramid's plan, in the words of this function
        raise MemoryPlanError(str(err).replace("pyramid:", "convert:", 1)
                              .replace("smaller chunks=", "smaller chunks or shards")) from None


def _level_kwargs(reader: Reader, layout: Layout, shape: tuple[int, ...], names: str,
                  zarr_format: int) -> dict[str, Any]:
    chunks, shards = level_layout(layout, shape)
    # Levels in the machine's byte order (Zarr v3 has no other; a v2 copy of a
    # big-endian file would be slower to read for no gain): the values are the same.
    kwargs: dict[str, Any] = {"shape": shape, "chunks": chunks,
                              "dtype": reader.dtype.newbyteorder("="), "fill_value": 0}
    if zarr_format == 3:
        kwargs["shards"] = shards
        kwargs["dimension_names"] = list(names)
    else:
        kwargs["dimension_separator"] = "/"  # NGFF 0.4's nested chunk keys
    return kwargs


def _create(location: Any, options: dict[str, Any] | None, existing: Group | None,
            overwrite: bool, zarr_format: int, reader: Reader, layout: Layout,
            geometry: PyramidGeometry, names: str) -> tuple[Group, tuple[Array, ...]]:
    """The image group and its empty levels (or, resuming, the ones there, checked)."""
    specs = [_level_kwargs(reader, layout, shape, names, zarr_format) for shape in geometry.shapes]
    if existing is not None:
        group = open_group(location, mode="r+", storage_options=options, cache=False)
        return group, tuple(_resumed_level(group, str(k), spec) for k, spec in enumerate(specs))
    group = open_group(location, mode="w" if overwrite else "w-", zarr_format=zarr_format,
                       storage_options=options, cache=False)
    return group, tuple(group.create_array(str(k), **spec) for k, spec in enumerate(specs))


def _resumed_level(group: Group, name: str, spec: Mapping[str, Any]) -> Array:
    if name not in group:
        return group.create_array(name, **spec)
    level = group[name]
    expected = (tuple(spec["shape"]), tuple(spec["chunks"]), spec.get("shards"), spec["dtype"])
    found = ((level.shape, level.chunks, level.shards, level.dtype)
             if isinstance(level, Array) else "a group")
    if not isinstance(level, Array) or found != expected:
        raise JobMismatchError(f"convert: resume=True found level {name!r} as {found}, where "
                               f"this convert writes (shape, chunks, shards, dtype) {expected}; "
                               "pass overwrite=True (without resume) to start over")
    return level


def _trackers(reader: Reader, arrays: Sequence[Array], geometry: PyramidGeometry, method: str,
              layout: Layout, resume: bool, job_name: str | None) -> tuple[Job | None, ...]:
    """A recorded job per stage, on the stage's last level (its tasks' grid)."""
    what = tokenize(method, geometry.shapes, geometry.chunk, geometry.factors, geometry.radius,
                    layout, reader.identity())
    stages = {"stages": [[stage.first, stage.last] for stage in geometry.stages]}
    trackers = []
    for stage in geometry.stages:
        out = arrays[stage.last]
        spec = job_identity(out, kept=stages, job_name=job_name, plan={
            "convert": what, "block plan": tokenize(stage.first, stage.last, stage.numblocks)})
        trackers.append(open_job(out, stage.numblocks, resume=resume,
                                 identity=lambda spec=spec: spec))  # type: ignore[misc]  # a default binds this stage's spec
    return tuple(trackers)


def _run_task(plan: PyramidPlan, number: int, index: tuple[int, ...], waited: list[Any]) -> bool:
    return plan.run(number, index)


def _finish(plan: PyramidPlan, group: Group, metadata: ImageMetadata, done: list[Any]) -> bool:
    # The image becomes visible only now, whole; then the resume records go (a crash
    # in between leaves records of finished tasks: a resume skips them all).
    group.attrs.update(metadata.document(plan.levels[-1]))
    plan.finish()
    return True


def _graph(plan: PyramidPlan, group: Group, metadata: ImageMetadata, token: str) -> Delayed:
    """Every stage's tasks (each waits for the tasks of the stage before whose writes it
    reads), then the metadata."""
    graph: dict[Any, Any] = {}
    plan_key = f"chunkflow-convert-plan-{token}"
    graph[plan_key] = plan
    previous = ""
    for number, stage in enumerate(plan.geometry.stages):
        name = f"chunkflow-convert-{number}-{token}"
        for index in np.ndindex(*stage.numblocks):
            waited = ([(previous, *d) for d in plan.geometry.dependencies(number, index)]
                      if previous else [])
            graph[(name, *index)] = (_run_task, plan_key, number, tuple(index), waited)
        previous = name
    last = [key for key in graph if isinstance(key, tuple) and key[0] == previous]
    final = f"chunkflow-convert-done-{token}"
    graph[final] = (_finish, plan_key, group, metadata, last)
    return Delayed(final, graph)
