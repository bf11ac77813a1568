"""distance_transform_edt: ``scipy.ndimage.distance_transform_edt`` on arrays larger
than memory, equal to scipy's bit for bit (distances and indices).

The feature transform is scipy's separable one (see
:mod:`chunkflow.graph.distance.voronoi`): pass ``d`` runs on blocks that hold axis
``d`` whole (:mod:`chunkflow.graph.distance.plan`), reading the features the pass
before it stored and storing its own (:mod:`chunkflow.graph.distance.tasks`); the last
pass writes the indices and the distances. Passes run one after the other.

Examples
--------
>>> import numpy as np
>>> from scipy import ndimage
>>> image = np.random.default_rng(1).random((40, 30)) > 0.2
>>> got = distance_transform_edt(image, sampling=(1.5, 0.7), chunks=(8, 8))
>>> bool((got.view("u8") == ndimage.distance_transform_edt(image, (1.5, 0.7)).view("u8")).all())
True
>>> import chunkflow
>>> dist, ind = distance_transform_edt(image, return_indices=True, out=chunkflow.MemoryStore())
>>> dist.dtype, ind.shape, ind.dtype
(dtype('float64'), (2, 40, 30), dtype('int32'))
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

import dask
import dask.array as da
import numpy as np
from dask.base import tokenize

from chunkflow.core.array import Array
from chunkflow.errors import ArgumentTypeError, DistanceTransformError, InvalidArgumentError
from chunkflow.graph.distance.output import FEATURES, WHAT, Outputs
from chunkflow.graph.distance.plan import PassPlan, plan_passes
from chunkflow.graph.distance.tasks import PassJob
from chunkflow.graph.labels.labelling import job_sources, open_source, source_reads
from chunkflow.graph.read import as_source_array
from chunkflow.graph.scheduler import compute as run
from chunkflow.jobs import source_parts
from chunkflow.storage import Store, output_location

if TYPE_CHECKING:
    from numpy.typing import ArrayLike

    from chunkflow.graph.labels.plan import Source
    from chunkflow.graph.read import ArraySource
    from chunkflow.graph.scheduler import ProgressArg, SchedulerLike
    from chunkflow.jobs import Job

__all__ = ["distance_transform_edt"]

# A new output's chunks when the source has none to copy (a numpy array).
DEFAULT_CHUNK = 256


def _check_dtype(dtype: np.dtype, what: str) -> None:
    """scipy takes anything ``np.where(input, 1, 0)`` takes; chunkflow takes numbers."""
    if dtype.kind not in "biufc":
        raise ArgumentTypeError(f"{what}: the input's dtype {dtype} holds no numbers; pass "
                                "a comparison instead, such as chunkflow.to_dask(source) != 0")


def _check_returns(return_distances: bool, return_indices: bool, distances: Any,
                   indices: Any) -> None:
    """scipy's checks of what to return (``_distance_tranform_arg_check``)."""
    errors = []
    if not return_distances and not return_indices:
        errors.append("at least one of return_distances/return_indices must be True")
    if distances is not None and not return_distances:
        errors.append("return_distances must be True if distances is supplied")
    if indices is not None and not return_indices:
        errors.append("return_indices must be True if indices is supplied")
    if errors:
        raise DistanceTransformError(f"{WHAT}: " + ", ".join(errors))
    for name, given in (("distances", distances), ("indices", indices)):
        if given is not None and not isinstance(given, np.ndarray):
            raise ArgumentTypeError(
                f"{WHAT}: {name}= takes a numpy array to fill, as in scipy; got "
                f"{type(given).__name__}. To write to a store, pass out= (a group where "
                "'distances' and 'indices' are written)")


def _normalized_sampling(sampling: Any, ndim: int) -> tuple[float, ...]:
    """scipy's ``_normalize_sequence`` then ``float64``: one value, or one per axis."""
    if sampling is None:
        return (1.0,) * ndim  # x * 1.0 is x: scipy's arithmetic without sampling
    if isinstance(sampling, str) or not np.iterable(sampling):
        values = [sampling] * ndim
    else:
        values = list(sampling)
        if len(values) != ndim:
            raise DistanceTransformError(f"{WHAT}: sampling {sampling!r} has {len(values)} "
                                         f"values; sequence argument must have length equal "
                                         f"to input rank ({ndim})")
    try:
        return tuple(float(v) for v in np.asarray(values, dtype=np.float64))
    except (TypeError, ValueError) as error:
        raise ArgumentTypeError(f"{WHAT}: sampling {sampling!r} is not numbers ({error})") from error


def _open(input: Any, storage_options: Mapping[str, Any] | None) -> Source:
    """The input as a :class:`Source`; a 0-d input is the 1-d array of its value
    (scipy's ``np.atleast_1d``). ``storage_options`` apply to a URL (and to ``out``)."""
    if isinstance(input, (str, os.PathLike, Store)) or (
            isinstance(input, Mapping) and not isinstance(input, np.ndarray)):
        array = as_source_array(input, storage_options)
        if array.ndim:
            return open_source(array, None, WHAT, _check_dtype)
        input = array
    if isinstance(input, Array):
        if input.ndim == 0:
            input = np.atleast_1d(np.asarray(input[()]))
    elif isinstance(input, da.Array):
        if input.ndim == 0:
            input = input.reshape(1)
    else:
        values = np.asarray(input)
        if values.dtype.kind == "O":
            raise ArgumentTypeError(f"{WHAT}: the input holds Python objects; pass numbers")
        input = np.atleast_1d(values)
    return open_source(input, None, WHAT, _check_dtype)


def _pass_tasks(job: PassJob, plan: PassPlan, after: Any) -> Any:
    """The tasks of one pass (run once ``after`` has run), joined in one that waits
    for them all."""
    shared = dask.delayed(job, traverse=False, name=f"chunkflow-job-edt-{job.axis}-{id(job)}")
    tasks = [dask.delayed(_run_block, pure=False)(shared, index, region, after)
             for index, region in plan.regions(job.axis)]
    return dask.delayed(_joined, pure=False)(*tasks)


def _run_block(job: PassJob, index: tuple[int, ...], region: tuple[slice, ...],
               after: Any) -> None:
    job(index, region)


def _joined(*done: Any) -> None:
    return None


def _removed(outputs: Outputs, name: str, after: Any) -> None:
    outputs.remove(name)


def distance_transform_edt(
    input: ArraySource | da.Array | ArrayLike,
    sampling: float | Sequence[float] | None = None,
    return_distances: bool = True,
    return_indices: bool = False,
    distances: np.ndarray | None = None,
    indices: np.ndarray | None = None,
    *,
    out: Any = None,
    chunks: Sequence[int] | None = None,
    zarr_format: int | None = None,
    temp: Any = None,
    max_memory: int | str | None = None,
    scheduler: SchedulerLike = None,
    progress: ProgressArg = False,
    resume: bool = False,
    job_name: str | None = None,
    overwrite: bool = False,
    storage_options: Mapping[str, Any] | None = None,
) -> Any:
    """The exact Euclidean distance transform of ``input``, as
    ``scipy.ndimage.distance_transform_edt`` computes it, in bounded memory.

    Every nonzero element (NaN too) is foreground; each gets its distance to the
    nearest zero (background) element and, with ``return_indices``, that element's
    indices. The distances are scipy's bit for bit, and so are the indices, ties
    included: each pass replays scipy's (Maurer's separable algorithm) on whole lines
    of one axis, in scipy's float64 arithmetic. Without background, scipy's result too
    (indices ``-1`` on axis 0 and ``0`` on the others, distances to that point).

    Parameters
    ----------
    input : chunkflow.Array, path, URL, store, dask or numpy array
        The image, of any numeric dtype (a 0-d input is the 1-d array of its value, as
        in scipy).
    sampling : float or sequence of floats, optional
        The spacing of the elements along each axis (one value for all), as scipy's.
    return_distances, return_indices : bool
        What to return, as scipy's (at least one).
    distances, indices : numpy.ndarray, optional
        With ``out=None``: numpy arrays to fill (float64 and int32 of scipy's shapes),
        which are then not returned, as in scipy.
    out : path, URL or store, optional
        A group to create, where the arrays ``distances`` (float64, the input's shape)
        and ``indices`` (int32, ``(ndim,) + shape``) are written, and returned as
        chunkflow arrays in scipy's order. ``None`` (default): numpy arrays are returned.
    chunks : sequence of int, optional
        The chunks of the arrays written (``indices``: one chunk spans its first axis).
        Default: the input's, made smaller where a pass's blocks would not fit
        ``max_memory``; given ones that do not fit are refused.
    zarr_format : int, optional
        The format of the arrays written (default 3).
    temp : path, URL or store, optional
        Where the features between passes are kept (int32, one per axis done, removed
        when the job ends). Default: inside ``out`` (in memory with ``out=None``, which
        the ``processes`` scheduler and clusters cannot share: pass ``temp=`` there).
    max_memory : int or str, optional
        What one block task may use; a pass holds whole lines of its axis, so a
        ``max_memory`` below one line's needs is refused
        (:class:`~chunkflow.MemoryPlanError`), naming the chunks that would fit.
    scheduler, progress
        See :func:`chunkflow.compute`.
    resume : bool
        Continue the unfinished job that writes ``out``: the passes whose features an
        earlier run completed are skipped, and each pass writes only the blocks its
        arrays miss (every run records its blocks, with ``resume=True`` or not). A
        different unfinished job on ``out`` is refused
        (:class:`~chunkflow.errors.JobMismatchError`); pass the same arguments, the same
        ``temp=`` and ``max_memory``.
    job_name : str, optional
        Names the job instead of the input's token (for a dask input whose graph name
        changes between runs).
    overwrite : bool
        Replace what is at ``out``.
    storage_options : dict, optional
        fsspec options for URLs (input, ``out`` and ``temp``).

    Returns
    -------
    distances, indices, or both (a tuple), as scipy returns them; ``None`` when both
    are written to the arrays given as ``distances=`` and ``indices=``.

    Raises
    ------
    DistanceTransformError
        Where scipy raises :class:`RuntimeError` (nothing to return, a sampling of the
        wrong length, ``distances=``/``indices=`` of the wrong shape or dtype).
    """
    _check_returns(return_distances, return_indices, distances, indices)
    if out is not None and (distances is not None or indices is not None):
        raise InvalidArgumentError(f"{WHAT}: distances= and indices= fill numpy arrays; with "
                                   "out= the results are written to its group: pass one of them")
    out = output_location(out) if out is not None else None
    source = _open(input, storage_options)
    shape = tuple(int(n) for n in source.shape)
    ndim = len(shape)
    spacing = _normalized_sampling(sampling, ndim)
    if max(shape) > np.iinfo(np.int32).max:
        raise InvalidArgumentError(f"{WHAT}: an axis of {max(shape)} elements; the indices are "
                                   "int32, as scipy's: at most 2**31 - 1 per axis")
    for name, given, want_shape, dtype in (("distances", distances, shape, np.float64),
                                           ("indices", indices, (ndim,) + shape, np.int32)):
        if given is not None and (given.shape != want_shape or given.dtype.type != dtype):
            raise DistanceTransformError(f"{WHAT}: {name} array has wrong shape or dtype "
                                         f"({given.shape} {given.dtype}; expected {want_shape} "
                                         f"{np.dtype(dtype)})")
    unit = tuple(chunks) if chunks is not None else tuple(
        min(c, DEFAULT_CHUNK) if source.array is None else c for c in source.chunks)
    if len(unit) != ndim:
        raise InvalidArgumentError(f"{WHAT}: chunks {tuple(unit)} has {len(unit)} values; the "
                                   f"input has {ndim} axes")
    plan = plan_passes(shape, tuple(int(c) for c in unit), source.dtype.itemsize, max_memory,
                       scheduler, fixed=chunks is not None)
    parts = {"edt": tokenize(spacing, return_distances, return_indices),
             "block plan": tokenize(plan.chunks, plan.blocks)}
    outputs = Outputs.create(out, temp, overwrite=overwrite, resume=resume,
                             storage_options=storage_options, scheduler=scheduler,
                             reads=source_reads(source), parts=parts,
                             sources=source_parts(job_sources(source, job_name)),
                             job_name=job_name, zarr_format=zarr_format)
    last = ndim - 1
    made, jobs = {}, []
    for name, wanted, shape_, chunks_, kind in (
            ("indices", return_indices, (ndim,) + shape, (ndim,) + plan.chunks, "i4"),
            ("distances", return_distances, shape, plan.chunks, "f8")):
        if wanted:
            made[name], job = outputs.array(name, shape_, chunks_, kind, plan.grid(last))
            jobs.append(job)
    _transform(source, plan, spacing, made, tuple(jobs), outputs, scheduler, progress)
    for array, job in zip(made.values(), jobs):
        if job is not None:
            job.finish(array)
    return _returned(made, out is not None, distances, indices)


def _transform(source: Source, plan: PassPlan, spacing: tuple[float, ...],
               made: dict[str, Array], jobs: tuple[Job | None, ...], outputs: Outputs,
               scheduler: SchedulerLike, progress: ProgressArg) -> None:
    """Run the passes in one graph, one after the other (from the first one an earlier
    run did not complete); the features a pass read are removed once it has run."""
    shape, ndim = plan.shape, len(plan.shape)
    if 0 in shape:
        return
    start, previous = 0, None
    for axis in reversed(range(ndim - 1)):
        previous = outputs.complete(FEATURES.format(axis), (axis + 1,) + shape,
                                    (axis + 1,) + plan.chunks, plan.grid(axis))
        if previous is not None:
            start = axis + 1
            break
    done: Any = None
    removals = []
    for axis in range(start, ndim):
        last = axis == ndim - 1
        features, job = (None, None) if last else outputs.array(
            FEATURES.format(axis), (axis + 1,) + shape, (axis + 1,) + plan.chunks, "i4",
            plan.grid(axis), temporary=True)
        step = PassJob(axis, ndim, spacing, source=source if axis == 0 else None,
                       previous=previous, features=features,
                       distances=made.get("distances") if last else None,
                       indices=made.get("indices") if last else None,
                       jobs=jobs if last else (job,))
        done = _pass_tasks(step, plan, done)
        if previous is not None:
            removals.append(dask.delayed(_removed, pure=False)(outputs, previous.basename, done))
        previous = features
    run(done, *removals, scheduler=scheduler, progress=progress)


def _returned(made: dict[str, Array], stored: bool, distances: np.ndarray | None,
              indices: np.ndarray | None) -> Any:
    result: list[Any] = []
    for name, given in (("distances", distances), ("indices", indices)):
        if name not in made:
            continue
        array = made[name]
        if stored:
            result.append(array)
        elif given is not None:
            given[...] = array[...]
        else:
            result.append(np.asarray(array[...]))
    if len(result) == 2:
        return tuple(result)
    return result[0] if result else None
