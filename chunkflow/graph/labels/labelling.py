"""label: connected components of an array larger than memory, numbered as
``scipy.ndimage.label`` numbers them.

Examples
--------
>>> import numpy as np
>>> import chunkflow
>>> from scipy import ndimage
>>> image = np.random.default_rng(1).random((60, 50)) > 0.6
>>> z = chunkflow.array(image, chunks=(16, 16))
>>> out, count = chunkflow.label(z, chunkflow.MemoryStore(), blocks=(1, 1))
>>> expected, n = ndimage.label(image)
>>> count == n, bool((out[:] == expected).all()), out.dtype
(True, True, dtype('uint32'))
"""

from __future__ import annotations

import math
import os
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any

import dask.array as da
import numpy as np
from dask.base import tokenize
from dask.delayed import Delayed

from chunkflow.api.zarr3 import create_array
from chunkflow.core.array import Array
from chunkflow.errors import ArgumentTypeError, InvalidArgumentError, LabelError
from chunkflow.graph.labels.fusion import FUSE_BLOCKS, fuse_merge
from chunkflow.graph.labels.geometry import BlockGrid
from chunkflow.graph.labels.graph import build_graph
from chunkflow.graph.labels.output import OutputPlan, plan_output
from chunkflow.graph.labels.placement import placed
from chunkflow.graph.labels.plan import LabelJob, Source, label_voxel_bytes, plan_blocks
from chunkflow.graph.labels.rounds import run_in_rounds
from chunkflow.graph.labels.structure import normalize_structure
from chunkflow.graph.read import writer_source
from chunkflow.graph.scheduler import compute as run
from chunkflow.graph.scheduler import scheduler_choice
from chunkflow.graph.sources import source_locations
from chunkflow.graph.transactions import (
    check_commit,
    refuse_deferred_commit,
    through_forks,
    transaction,
)
from chunkflow.jobs import array_location, function_parts
from chunkflow.storage import Store, output_location

if TYPE_CHECKING:
    from numpy.typing import ArrayLike, DTypeLike

    from chunkflow.graph.read import ArraySource, BlockChunks
    from chunkflow.graph.scheduler import ProgressArg, SchedulerLike

__all__ = ["check_source_dtype", "in_memory", "job_sources", "label", "open_source", "run_label_job",
           "source_reads"]


def open_source(source: ArraySource | da.Array | ArrayLike,
                storage_options: Mapping[str, Any] | None, what: str = "label",
                check: Callable[[np.dtype, str], None] | None = None) -> Source:
    """``source`` as a :class:`Source`: an array (read past the process-wide chunk
    cache, as map jobs read), a dask array, or anything ``numpy.asarray`` takes (as
    ``scipy.ndimage`` takes it), copied into an in-memory array. Its dtype is checked
    by ``check`` (default :func:`check_source_dtype`)."""
    if isinstance(source, da.Array):
        if storage_options:
            raise InvalidArgumentError(f"{what}: storage_options apply to URLs, not to a dask array")
        found = Source(lazy=source)
    else:
        if not isinstance(source, (Array, str, os.PathLike, Store, Mapping)):
            # Copied here: storage_options are the output URL's then, not the source's.
            source, storage_options = in_memory(source, what), None
        array = writer_source(source, storage_options,
                              **({} if isinstance(source, Array) else {"cache": False}))
        if array.options.cache is None:
            array = array.with_options(cache=False)
        found = Source(array=array)
    (check or check_source_dtype)(np.dtype(found.dtype), what)
    if not found.shape:
        raise LabelError(f"{what}: the source is 0-dimensional; label arrays of 1 or more "
                         "dimensions (a 0-d value v is the 1-d array [v])")
    return found


def in_memory(data: Any, what: str) -> Array:
    """``data`` (a numpy array, a list, anything ``numpy.asarray`` takes) as an
    in-memory chunkflow array."""
    try:
        values = np.asarray(data)
    except (TypeError, ValueError) as error:
        raise ArgumentTypeError(f"{what}: the source must be a chunkflow.Array, a path, a URL, "
                                "a store, a dask array or an array numpy.asarray takes; "
                                f"{type(data).__name__} is none of them ({error})") from error
    if values.dtype.kind == "O":
        raise ArgumentTypeError(f"{what}: the source holds Python objects ({type(data).__name__}"
                                " as numpy gives dtype object); pass numbers")
    return create_array(None, data=values)


def check_source_dtype(dtype: np.dtype, what: str) -> None:
    """Refuse what ``scipy.ndimage.label`` refuses: complex values, float16, dates,
    durations, strings and objects (raised as :class:`TypeError`, as scipy raises)."""
    if dtype.kind in "biuS" or (dtype.kind == "f" and dtype.itemsize > 2):
        return
    hint = ("complex values have no foreground" if dtype.kind == "c" else
            "scipy.ndimage.label has no loop for it")
    raise ArgumentTypeError(f"{what}: the source's dtype {dtype} is not labelled ({hint}, as in "
                            "scipy.ndimage.label); label a comparison instead, such as "
                            "chunkflow.to_dask(source) != 0")


def source_reads(source: Source) -> list[tuple[str, str]]:
    """The arrays the job reads, for the check of its output
    (:func:`~chunkflow.jobs.check_not_source`)."""
    if source.array is not None:
        return [("its source", array_location(source.array))]
    return source_locations(source.lazy)


def job_sources(source: Source, job_name: str | None) -> list[Any]:
    """What the job's identity names as its sources (:func:`~chunkflow.jobs.job_identity`):
    the array, or the dask array, whose graph name gives way to ``job_name``."""
    if job_name is not None:
        function_parts(None, None, job_name)  # checks the name
        if source.lazy is not None:
            return []
    return [source.array if source.array is not None else source.lazy]


def run_label_job(job: LabelJob, output: OutputPlan, token: str, *, compute: bool,
                  scheduler: SchedulerLike, progress: ProgressArg,
                  commit: str | None = None,
                  build: Callable[..., tuple[dict[Any, Any], Any]] = build_graph) -> Any:
    """Build (with ``build``, default :func:`~chunkflow.graph.labels.graph.build_graph`)
    and run (or return, ``compute=False``) the graph of ``job``."""
    graph, key = build(job, output, token)
    delayed = Delayed(key, graph)
    if not compute:
        return delayed
    written = output.existing if output.existing is not None else output.location
    with transaction([written], scheduler=scheduler, commit=commit, what=output.what) as on:
        if output.existing is None and through_forks():  # created on the client, between
            (array, count), = run_in_rounds(graph, key, output, on, progress)
        else:
            _, client = scheduler_choice(on)
            if client is not None and not isinstance(client, str):
                if math.prod(job.grid.numblocks) <= FUSE_BLOCKS:
                    graph = fuse_merge(graph, key)  # one task, not a chain of round trips
                delayed = placed(graph, key, client)  # each block's passes on one worker
            (array, count), = run(delayed, scheduler=on, progress=progress)
    array.forget_cached()  # blocks written by other processes
    return array, count


def label(
    source: ArraySource | da.Array | ArrayLike,
    out: ArraySource,
    *,
    structure: Any = None,
    dtype: DTypeLike | None = None,
    chunks: tuple[int, ...] | None = None,
    shards: tuple[int, ...] | None = None,
    zarr_format: int | None = None,
    blocks: BlockChunks = None,
    max_memory: int | str | None = None,
    scheduler: SchedulerLike = None,
    progress: ProgressArg = False,
    compute: bool = True,
    resume: bool = False,
    job_name: str | None = None,
    overwrite: bool = False,
    storage_options: Mapping[str, Any] | None = None,
    commit: str | None = None,
) -> Any:
    """Label the connected components of ``source``'s nonzero values into ``out``.

    The labels are those of ``scipy.ndimage.label(source[:], structure)``, bit for
    bit: components are numbered 1, 2, ... by their first voxel in C order. The array
    is never held whole: each block is labelled alone, twice (once to find what
    touches its faces, once to write), and only the parts on block faces take part in
    a global merge, done as a tree (see :mod:`chunkflow.graph.labels.graph`).

    Parameters
    ----------
    source : chunkflow.Array, path, URL, store, dask or numpy array
        The image; every nonzero value is foreground (NaN too), of any dtype and byte
        order ``scipy.ndimage.label`` labels (complex values, float16, dates and
        strings are refused with :class:`TypeError`, as scipy refuses them). A dask
        array (a lazy expression such as ``chunkflow.to_dask(z) > 500``) is computed
        block by block, twice; anything else ``numpy.asarray`` takes is copied into an
        in-memory array.
    out : chunkflow.Array, path, URL or store
        Where the labels go: a new array (created once the number of labels is known;
        refused if something is there, unless ``overwrite``), or an existing integer
        array of the source's shape, written whole.
    structure : array-like, optional
        As ``scipy.ndimage.label``'s: a symmetric boolean array of shape ``(3,) *
        ndim``, the neighbours a voxel connects to (default: faces only). Blocks touch
        across faces, edges and corners as the structure says.
    dtype : optional
        The labels' integer dtype for a new output. Default ``uint32``, ``uint64`` when
        there are more than 2**32 - 1 labels; a dtype that cannot hold them is refused
        (:class:`~chunkflow.errors.LabelError`) before anything is created or written.
    chunks, shards, zarr_format : optional
        A new output's chunk shape (default: the source's chunks), shard shape (Zarr
        v3 sharding; tasks then write whole shards) and format (default 3).
    blocks : optional
        Blocks as whole chunks (shards) of the output: ``"auto"``, a byte size or chunks
        per axis, as :func:`chunkflow.to_dask`'s ``chunks=``. Default: about 4 Mi voxels
        per block, at least four blocks per worker thread.
    max_memory : int or str, optional
        What one block task may use (default: as :func:`chunkflow.map_chunks`). The
        plan is checked before anything runs; a refusal
        (:class:`~chunkflow.MemoryPlanError`) says which blocks would fit
        and creates nothing.
    scheduler, progress
        See :func:`chunkflow.compute`.
    compute : bool
        Run now (default), or return a ``dask.delayed`` object that runs when computed,
        to ``(array, count)``.
    resume : bool
        Skip the blocks an earlier run of the same job recorded (the first pass and
        the merge run again; they write nothing). Every run records its written
        blocks in the output's store, with ``resume=True`` or not. A different unfinished job on
        ``out`` is refused (:class:`~chunkflow.errors.JobMismatchError`).
    job_name : str, optional
        Names the job instead of the source's token (with a dask source whose graph
        name changes between runs).
    overwrite : bool
        Replace what is at ``out``.
    storage_options : dict, optional
        fsspec options for URLs.
    commit : str, optional
        With ``out`` in an Icechunk session (an array, ``session.store``, or a
        ``zarr.storage.StorePath`` of it): commit the session with this
        message once the labels are written (one commit). On a cluster the tasks write
        into forks of the session, merged back at the end; see
        :mod:`chunkflow.graph.transactions`.

    Returns
    -------
    (chunkflow.Array, int)
        The labels and their number, as ``scipy.ndimage.label`` returns them.
    """
    refuse_deferred_commit(commit, compute, "label")
    out = output_location(out)  # a zarr-python Store as chunkflow's Store over it
    check_commit(out, commit, "label")
    src = open_source(source, storage_options)
    shape = tuple(int(n) for n in src.shape)
    kernel = normalize_structure(structure, len(shape))
    output = plan_output("label", out, shape, tuple(max(1, c) for c in (chunks or src.chunks)),
                         shards=shards, dtype=dtype, zarr_format=zarr_format,
                         overwrite=overwrite, resume=resume, job_name=job_name,
                         storage_options=storage_options,
                         dimension_names=_dimension_names(src), reads=source_reads(src))
    template = output.template()
    reads = [(src.dtype.itemsize, src.chunks), (template.dtype.itemsize, template.write_chunks)]
    block = plan_blocks(template, label_voxel_bytes(src.dtype.itemsize, template.dtype.itemsize),
                        reads, blocks, max_memory, scheduler)
    grid = BlockGrid(shape, tuple(max(1, b) for b in block))
    job = LabelJob.create(grid, kernel, src)
    parts = {"label": tokenize(kernel.tolist()), "block plan": tokenize(grid.block)}
    output = output.with_job(parts, grid.numblocks, sources=job_sources(src, job_name))
    token = tokenize("label", kernel.tolist(), grid, src.token, output, resume)
    return run_label_job(job, output, token, compute=compute, scheduler=scheduler,
                         progress=progress, commit=commit)




def _dimension_names(source: Source) -> Any:
    if source.array is not None and source.array.zarr_format == 3:
        return source.array.dimension_names
    return None

