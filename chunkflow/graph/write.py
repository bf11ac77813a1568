"""Write dask arrays into chunkflow arrays with blocks aligned to the chunk grid.

``dask.array.store(x, z, lock=False)`` writes each dask block with ``z[region] = block``.
When the blocks do not fall on chunk boundaries, two tasks write parts of one chunk:
without a synchronizer one update is lost, and with one every shared chunk is read,
decoded, re-encoded and written once per task that touches it (for 1500-wide blocks
over 1024-wide chunks, 169 chunk writes instead of 64 and three times the time).

:func:`store` instead builds one task per *write block*: a run of whole chunks (cut
only by the region's edges) assembled from the source blocks that overlap it. Every
chunk is then written by exactly one task, wholly, without reading it first; no two
tasks of the graph share a chunk, so no lock is needed between them (a synchronizer on
the target still guards against writers outside this graph).

:func:`to_chunkflow`: write a dask array to a new chunkflow array, as
``dask.array.to_zarr`` does.

Examples
--------
>>> import dask.array as da
>>> import numpy as np
>>> import chunkflow
>>> z = chunkflow.zeros((10, 10), chunks=(4, 4), dtype="i4")
>>> x = da.arange(100, dtype="i4", chunks=7).reshape(10, 10).rechunk(3)
>>> chunkflow.store(x, z)
>>> bool((z[:] == np.arange(100).reshape(10, 10)).all())
True
>>> x = da.arange(12, chunks=5).reshape(3, 4)
>>> z = to_chunkflow(x, chunkflow.MemoryStore(), zarr_format=2)
>>> z.chunks, z[:].sum() == x.sum().compute()
((1, 4), np.True_)
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, cast

import numpy as np
from dask.base import tokenize
from dask.delayed import Delayed
from dask.highlevelgraph import HighLevelGraph

from chunkflow.api.creation import create
from chunkflow.api.opening import open_array
from chunkflow.api.unfinished import open_unfinished
from chunkflow.config.renames import renamed_parameters
from chunkflow.core.array import Array
from chunkflow.errors import (
    ArgumentTypeError,
    InternalError,
    InvalidArgumentError,
    ReadOnlyError,
    ShapeMismatchError,
)
from chunkflow.graph.casting import DEFAULT_CASTING, cast_block, check_cast, check_casting
from chunkflow.graph.scheduler import ProgressArg
from chunkflow.graph.scheduler import compute as run
from chunkflow.graph.sources import source_reads
from chunkflow.graph.transactions import check_commit, refuse_deferred_commit, transaction
from chunkflow.graph.write_regions import (
    aligned_edges,
    block_edges,
    dim_pieces,
    unit_region,
)
from chunkflow.jobs import (
    Job,
    array_location,
    block_keys,
    check_not_source,
    check_same_output,
    function_parts,
    job_identity,
    job_progress,
    location_of,
    open_job,
)
from chunkflow.storage import output_location

if TYPE_CHECKING:
    import dask.array as da

    from chunkflow.graph.scheduler import SchedulerLike
    from chunkflow.grid import ChunksLike
    from chunkflow.storage import StoreLike

__all__ = ["aligned_edges", "store", "to_chunkflow", "unit_region"]


def _write_block(
    target: Array,
    region: tuple[slice, ...],
    shape: tuple[int, ...],
    placements: list[tuple[tuple[slice, ...], tuple[slice, ...]]],
    blocks: list[np.ndarray],
    casting: str = DEFAULT_CASTING,
) -> None:
    """Assemble one write block from its source pieces and write it to ``target``."""
    if len(blocks) == 1 and placements[0][1] == tuple(slice(0, n) for n in shape):
        value = np.asarray(blocks[0])[placements[0][0]]  # one source block covers it
    else:
        # One dtype as it is: result_type would make '>i2' native, and casting='no'
        # then refuses the block it came from.
        dtypes = {np.asarray(b).dtype for b in blocks}
        value = np.empty(shape, dtype=dtypes.pop() if len(dtypes) == 1 else np.result_type(*dtypes))
        for (in_block, in_value), block in zip(placements, blocks):
            value[in_value] = block[in_block]
    # Cast here as numpy casts (the checked rule allows it), not by the assignment's
    # conversion, which refuses some kinds; the values are checked on this block only.
    name = target.path or "/"
    target[region] = cast_block(
        value, target.dtype, casting,
        f"chunkflow.store: the source's block for array {name!r} in "
        f"{target.store.identity} ({block_keys(target, region)})",
        tuple(s.start for s in region))


def _check_pair(source: Any, target: Array, region: tuple[slice, ...],
                casting: str = DEFAULT_CASTING) -> None:
    name = getattr(target, "path", None) or "/"
    if getattr(target, "read_only", False):
        raise ReadOnlyError(f"array {name!r} is read-only: chunkflow.store refuses to write")
    if not hasattr(source, "__dask_graph__") or not hasattr(source, "chunks"):
        raise ArgumentTypeError(
            f"chunkflow.store: sources must be dask arrays, got {type(source).__name__}; "
            "write in-memory data with z[...] = data"
        )
    if any(np.isnan(n) for n in source.shape):
        raise ShapeMismatchError(
            f"array {name!r}: the source has unknown chunk sizes {source.chunks}; call "
            "compute_chunk_sizes() on it first"
        )
    expected = tuple(s.stop - s.start for s in region)
    if tuple(source.shape) != expected:
        raise ShapeMismatchError(
            f"array {name!r}: source of shape {tuple(source.shape)} does not fit region "
            f"{region!r} of shape {expected}"
        )
    check_cast(np.dtype(source.dtype), target.dtype, casting,
               f"chunkflow.store: array {name!r} in {target.store.identity}")


def _write_edges(source: da.Array, target: Array, region: tuple[slice, ...]) -> list[list[int]]:
    """Per dimension, the edges of the write blocks (the block plan)."""
    return [
        aligned_edges(r.start, r.stop, c, max(1, max(sizes, default=1) // c))
        for r, c, sizes in zip(region, target.write_chunks, source.chunks)
    ]


def _tracked_write(job: Job, index: tuple[int, ...], target: Array, region: tuple[slice, ...],
                   shape: tuple[int, ...], placements: list[tuple[tuple[slice, ...], tuple[slice, ...]]],
                   blocks: list[np.ndarray], casting: str = DEFAULT_CASTING) -> None:
    job.run(index, lambda: _write_block(target, region, shape, placements, blocks, casting),
            None, lambda: block_keys(target, region))


def _skipped(*_: Any) -> None:
    """A write block finished by an earlier run: nothing to compute (no source blocks)."""
    return None


def _store_layer(source: da.Array, target: Array, region: tuple[slice, ...], name: str,
                 job: Job | None = None, casting: str = DEFAULT_CASTING) -> dict:
    """Tasks ``(name, *block index)`` writing aligned blocks of ``source`` to ``target``.

    With a resumed ``job``, finished blocks become tasks without dependencies, so the
    source blocks only they need are culled from the graph (never computed).
    """
    source_edges = [block_edges(sizes) for sizes in source.chunks]
    write_edges = _write_edges(source, target, region)
    # Tasks record blocks through a copy without the done bitmap (it stays here).
    recorder = job.recorder() if job is not None else None
    per_dim = [
        [(lo, hi, dim_pieces(src, lo, hi)) for lo, hi in itertools.pairwise(edges)]
        for edges, src in zip(write_edges, source_edges)
    ]
    layer: dict = {}
    for index in itertools.product(*(range(len(d)) for d in per_dim)):
        spans = [per_dim[d][i] for d, i in enumerate(index)]
        block_region = tuple(slice(r.start + lo, r.start + hi) for r, (lo, hi, _) in zip(region, spans))
        shape = tuple(hi - lo for lo, hi, _ in spans)
        placements, keys = [], []
        for combo in itertools.product(*(pieces for _, _, pieces in spans)):
            keys.append((source.name, *(k for k, _, _ in combo)))
            placements.append((tuple(s for _, s, _ in combo), tuple(s for _, _, s in combo)))
        if job is not None and job.is_done(index):
            layer[(name, *index)] = (_skipped,)
        elif recorder is not None:
            layer[(name, *index)] = (_tracked_write, recorder, index, target, block_region, shape,
                                     placements, keys, casting)
        else:
            layer[(name, *index)] = (_write_block, target, block_region, shape, placements, keys,
                                     casting)
    return layer


def _finish(results: list[None], jobs: Sequence[Job | None] = (),
            targets: Sequence[Array] = ()) -> None:
    """Runs once every write block succeeded: the jobs are complete."""
    for job, target in zip(jobs, targets):
        if job is not None:
            job.finish(target)
    return None


def _open_store_job(source: da.Array, target: Array, region: tuple[slice, ...], resume: bool,
                    job_name: str | None) -> Job | None:
    edges = _write_edges(source, target, region)
    grid = tuple(len(e) - 1 for e in edges)
    parts = function_parts(source.name, None, job_name, what="source dask array",
                           strict=resume)
    return open_job(target, grid, resume=resume, identity=lambda: job_identity(
        target, plan={"regions and block plan": tokenize(region, edges)}, function=parts,
        job_name=job_name))


def _open_out(out: Array | StoreLike, storage_options: dict[str, Any] | None) -> Array:
    """An output of :func:`store`: an array, or the location of one (opened to write)."""
    if isinstance(out, Array):
        return out
    return open_array(out, mode="r+", storage_options=storage_options)


@renamed_parameters(targets="out", regions="selection")
def store(
    sources: da.Array | Sequence[da.Array],
    out: Array | StoreLike | Sequence[Array | StoreLike],
    selection: tuple[slice, ...] | Sequence[tuple[slice, ...] | None] | None = None,
    *,
    compute: bool = True,
    scheduler: SchedulerLike = None,
    progress: ProgressArg = False,
    resume: bool = False,
    job_name: str | None = None,
    casting: str = DEFAULT_CASTING,
    storage_options: dict[str, Any] | None = None,
    commit: str | None = None,
    overwrite: bool = False,
) -> Delayed | None:
    """Write dask arrays into chunkflow arrays, each chunk by exactly one task.

    Like :func:`dask.array.store`, but the blocks are regrouped onto the target's chunk
    grid inside the graph (one task per write block, no intermediate rechunk layer), so
    unaligned source blocks never make two tasks write one chunk: no race, no lock, no
    read-modify-write of interior chunks.

    Parameters
    ----------
    sources, out
        A dask array and a chunkflow array (or the path, URL or store of an existing
        one, opened for writing), or equal-length sequences of them.
    selection
        Where each source goes in its output: a tuple of unit-step slices (or one per
        pair); ``None`` means the whole output.
    compute
        Run the writes now (default) or return a :class:`dask.delayed.Delayed` to run
        later, for example together with other work (``dask.compute(delayed)``,
        ``delayed.compute()`` or :func:`chunkflow.compute`); it computes to ``None``.
    scheduler, progress
        Where to run and whether to show a bar counting written blocks; see
        :func:`chunkflow.compute`.
    resume : bool
        Skip (without computing their source blocks) the write blocks an earlier
        run of the same job recorded; see :mod:`chunkflow.jobs`. Every run records
        its finished blocks and marks the target unfinished until it completes,
        with ``resume=True`` or not. The job is identified by the
        source's dask name (deterministic for arrays built from chunkflow, zarr or
        numpy data), the regions, the block plan and the targets' metadata.
    job_name : str, optional
        Identifies the job instead of the sources' dask names (for sources whose
        names change from run to run, such as ``da.random`` without a seed).
    casting : {"same_value", "unsafe", "same_kind", "safe", "equiv", "no"}
        The rule for casting the sources to the targets' dtypes.
        ``"same_value"`` (default): each write task checks its block's values and
        refuses a cast that changes one (:class:`~chunkflow.errors.CastingError`,
        naming the target, the block and the first value that changes: an integer
        out of range, a fraction, NaN or inf into integers, not 0 or 1 into bool, a
        finite value that overflows a narrower float); rounding into a narrower float
        is not a change. ``"unsafe"``: numpy's ``astype`` whatever the values.
        numpy's dtype rules (``"same_kind"``, ``"safe"``, ``"equiv"``, ``"no"``)
        refuse a pair of dtypes before anything is written and do not look at
        values. See :mod:`chunkflow.graph.casting`.
    storage_options : dict, optional
        fsspec options for outputs given by URL.
    commit : str, optional
        For targets in an Icechunk session: commit it with this message once every
        block is written (one commit). On a cluster the tasks write into forks of the
        session, merged back at the end; see :mod:`chunkflow.graph.transactions`.
    overwrite : bool
        Allow a source that reads its own target (``store(to_dask(z) + 1, z)``):
        refused otherwise (:class:`~chunkflow.errors.OutputIsSourceError`), since
        what later tasks read may already be overwritten. ``overwrite=True`` asserts
        that each block reads only the elements it writes; a lazy
        :func:`~chunkflow.map_chunks` with a halo over its target is always refused.

    Returns
    -------
    None, or the delayed writes when ``compute=False``.

    Examples
    --------
    >>> import dask.array as da
    >>> import chunkflow
    >>> z = chunkflow.zeros((6, 6), chunks=(4, 4), dtype="f8")
    >>> pending = chunkflow.store(da.ones((3, 3), chunks=2), z, (slice(2, 5), slice(1, 4)),
    ...                           compute=False)
    >>> float(z[:].sum())
    0.0
    >>> pending.compute()
    >>> float(z[:].sum())
    9.0
    """
    refuse_deferred_commit(commit, compute, "chunkflow.store")
    single = hasattr(sources, "__dask_graph__")
    # Checked one by one below (_check_pair): dask arrays into chunkflow Arrays.
    source_list: list[Any] = [sources] if single else list(cast("Sequence[Any]", sources))
    outs: list[Any] = [output_location(t) for t in  # zarr-python Stores as chunkflow's
                       ([out] if single else list(cast("Sequence[Any]", out)))]
    target_list = [_open_out(t, storage_options) for t in outs]
    region_list: list[Any]
    if single:
        region_list = [selection]
    else:
        region_list = list(selection) if selection is not None else [None] * len(source_list)
    if not len(source_list) == len(target_list) == len(region_list):
        raise InvalidArgumentError(
            f"chunkflow.store: {len(source_list)} sources, {len(target_list)} outputs and "
            f"{len(region_list)} selections; give one output and one selection per source"
        )
    normalized = [unit_region(r, t, "chunkflow.store") for r, t in zip(region_list, target_list)]
    check_casting(casting, "chunkflow.store")
    for source, target, region in zip(source_list, target_list, normalized):
        _check_pair(source, target, region, casting)
    reads = [read for source in source_list for read in source_reads(source)]
    for target in target_list:
        check_not_source("chunkflow.store", array_location(target),
                         [(label, where) for label, where, _ in reads], overwrite=overwrite,
                         depth=max((depth for _, where, depth in reads
                                    if where == array_location(target)), default=()))

    jobs = [_open_store_job(source, target, region, resume, job_name)
            for source, target, region in zip(source_list, target_list, normalized)]
    token = tokenize(
        [s.name for s in source_list], [(t.store.identity, t.path) for t in target_list],
        normalized, [(j.token, j.n_done) if j else None for j in jobs], casting,
    )
    graph = HighLevelGraph({}, {})
    write_keys: list = []
    for i, (source, target, region) in enumerate(zip(source_list, target_list, normalized)):
        name = f"chunkflow-store-{i}-{token}"
        layer = _store_layer(source, target, region, name, jobs[i], casting)
        graph = HighLevelGraph.merge(
            graph, HighLevelGraph.from_collections(name, layer, dependencies=[source])
        )
        write_keys.extend(layer)
    final = f"chunkflow-stored-{token}"
    done = HighLevelGraph.from_collections(final, {final: (_finish, write_keys, jobs,
                                                           target_list)})
    graph = HighLevelGraph.merge(graph, done)
    graph.dependencies[final] = {k[0] for k in write_keys}  # type: ignore[index]  # a HighLevelGraph's dependencies are a dict
    delayed = Delayed(final, graph)
    if compute:
        with job_progress(progress, jobs) as shown, transaction(
                target_list, scheduler=scheduler, commit=commit, what="chunkflow.store") as on:
            run(delayed, scheduler=on, progress=shown)
        # Tasks that ran in other processes (scheduler="processes", a cluster) wrote
        # behind this process's caches: drop what they hold of the targets.
        for target in target_list:
            target.forget_cached()
        return None
    return delayed


@renamed_parameters(url_or_store="out")
def to_chunkflow(
    x: da.Array,
    out: StoreLike,
    *,
    path: str | None = None,
    chunks: ChunksLike = None,
    overwrite: bool = False,
    storage_options: dict[str, Any] | None = None,
    compute: bool = True,
    scheduler: SchedulerLike = None,
    progress: ProgressArg = False,
    resume: bool = False,
    job_name: str | None = None,
    casting: str = DEFAULT_CASTING,
    commit: str | None = None,
    **create_kwargs: Any,
) -> Array | tuple[Array, Delayed]:
    """Create an array shaped like ``x`` and write ``x`` into it with :func:`store`.

    Parameters
    ----------
    x : dask.array.Array
        What to write; its blocks need not match the chunks (writes are regrouped
        onto the chunk grid, so no two tasks share a chunk).
    out
        A path, URL or store for the new array.
    path : str, optional
        Where in the store (a group member path).
    chunks : optional
        Chunk shape; default: ``x``'s (largest) block shape.
    overwrite : bool
        Replace an existing node at that location.
    storage_options : dict, optional
        fsspec options for URLs.
    compute : bool
        Write now (default), or return ``(array, delayed)`` to write later with
        ``delayed.compute()``.
    scheduler, progress
        See :func:`chunkflow.compute`.
    resume, job_name
        See :func:`store`. With ``resume=True`` an existing array at the location
        that an unfinished job is writing is continued instead of created again
        (``overwrite`` is not needed); an existing finished array is refused unless
        ``overwrite=True``, as without ``resume``.
    casting : str
        See :func:`store`: a pair of dtypes the rule refuses is refused before
        anything is created; under ``"same_value"`` (default) the values are checked
        block by block as they are written.
    commit : str, optional
        See :func:`store`.
    **create_kwargs
        Passed to :func:`chunkflow.create` (``compressor``, ``zarr_format``, ...).

    Returns
    -------
    Array, or (Array, Delayed) with ``compute=False``.
    """
    if chunks is None:
        chunks = tuple(int(n) for n in x.chunksize) if x.ndim else ()
    spec = dict(shape=x.shape, chunks=chunks, dtype=create_kwargs.pop("dtype", x.dtype),
                **create_kwargs)
    check_cast(np.dtype(x.dtype), np.dtype(spec["dtype"]), check_casting(casting, "to_chunkflow"),
               f"to_chunkflow: {out!s}")
    refuse_deferred_commit(commit, compute, "to_chunkflow")
    out = output_location(out)  # a zarr-python Store as chunkflow's Store over it
    check_commit(out, commit, "to_chunkflow")
    # Creating the output where x reads would delete what it reads (and resuming there
    # would rewrite it): always refused.
    check_not_source("to_chunkflow", location_of(out, storage_options, path),
                     [(label, where) for label, where, _ in source_reads(x)], creates=True)
    target = open_unfinished(out, path, storage_options) if resume else None
    if target is None:
        target = create(**spec, store=out, path=path, overwrite=overwrite,
                        storage_options=storage_options)
    else:
        check_same_output(
            target, create(**spec),
            f"to_chunkflow: array {target.path or '/'!r} in {target.store.identity}",
            "Rerun the original job with resume=True, or pass resume=False, overwrite=True "
            "to start over.")
    # Checked above against dtype=; a Zarr v3 array holds it in native order, a change
    # of byte order only (which casting="no" would refuse).
    if casting == "no" and target.dtype != np.dtype(spec["dtype"]):
        casting = "equiv"
    pending = store(x, target, compute=compute, scheduler=scheduler, progress=progress,
                    resume=resume, job_name=job_name, casting=casting,
                    commit=commit)
    if compute:
        return target
    if pending is None:
        raise InternalError("to_chunkflow: store(compute=False) returned no graph")
    return target, pending

