"""Where labels go: the output checked before anything runs, and created (or opened)
by one task once the number of labels is known.

The label dtype depends on the count (``uint32``, ``uint64`` past 2**32 - 1 labels),
which the first pass finds, so a new output is created by a task of the graph that
waits for the count: a dtype that cannot hold the labels is refused there, before
anything is created or written, and every other refusal (an array in the way, another
unfinished job on the output, the memory plan) comes before the graph runs.

The write pass records each finished block with ``resume=True`` (see
:mod:`chunkflow.jobs`): the job is named by the source, the structure (or the
segmenter), the block plan and the output's metadata.

Examples
--------
>>> label_dtype(None, 5), label_dtype(None, 2**32)
(dtype('uint32'), dtype('uint64'))
>>> label_dtype("u1", 300)
Traceback (most recent call last):
...
chunkflow.errors.LabelError: label: 300 labels do not fit dtype uint8 (at most 255); ...
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any

import numpy as np

from chunkflow.api.hierarchy import open_node
from chunkflow.api.unfinished import open_unfinished
from chunkflow.api.zarr3 import create_array
from chunkflow.core.array import Array
from chunkflow.core.replacing import check_location
from chunkflow.engine.pool import serial_io
from chunkflow.errors import (
    ArgumentTypeError,
    ContainsArrayError,
    LabelError,
    ReadOnlyError,
    ShapeMismatchError,
)
from chunkflow.jobs import (
    Job,
    JobSpec,
    array_location,
    block_keys,
    check_not_source,
    job_identity,
    job_status,
    location_of,
    quiet_open,
    source_parts,
)
from chunkflow.storage import Store

if TYPE_CHECKING:
    from numpy.typing import DTypeLike

    from chunkflow.storage import StoreLike

__all__ = ["OutputHandle", "OutputPlan", "label_dtype", "plan_output"]


def label_dtype(requested: DTypeLike, count: int, what: str = "label") -> np.dtype:
    """The dtype of the labels: ``requested`` if it holds ``count``, else the default.

    Raises
    ------
    LabelError
        ``requested`` is not an integer dtype, or cannot hold ``count``.
    """
    if requested is None:
        return np.dtype("uint32") if count <= np.iinfo(np.uint32).max else np.dtype("uint64")
    dtype = np.dtype(requested)
    if dtype.kind not in "iu":
        raise LabelError(f"{what}: dtype must be an integer dtype for labels, got {dtype}")
    if count > np.iinfo(dtype).max:
        raise LabelError(f"{what}: {count} labels do not fit dtype {dtype} (at most "
                         f"{np.iinfo(dtype).max}); pass a wider dtype, or none (uint32, "
                         "uint64 when needed). Nothing was written.")
    return dtype


@dataclass(frozen=True)
class OutputHandle:
    """The output as the write tasks see it: the array and its resumable job."""

    array: Array
    tracker: Job | None = None

    @property
    def dtype(self) -> np.dtype:
        return self.array.dtype

    def write(self, region: tuple[slice, ...], block: np.ndarray) -> None:
        with serial_io():
            self.array.set_basic_selection(region, block)

    def run(self, index: tuple[int, ...], region: tuple[slice, ...],
            write: Callable[[], bool]) -> bool:
        """``write`` block ``index`` (at ``region``), unless a resumed job did; recorded."""
        if self.tracker is None:
            return write()
        return self.tracker.run(index, write, True, lambda: block_keys(self.array, region))


@dataclass(frozen=True)
class OutputPlan:
    """The output of a labelling job, checked, not yet created (or opened)."""

    what: str
    location: StoreLike | None
    existing: Array | None
    kwargs: Mapping[str, Any]
    dtype: Any
    overwrite: bool
    storage_options: Mapping[str, Any] | None
    resume: bool = False
    job_name: str | None = None
    parts: Mapping[str, str] = field(default_factory=dict)
    grid: tuple[int, ...] = ()
    sources: Mapping[str, str] = field(default_factory=dict)
    function: Mapping[str, str] = field(default_factory=dict)
    # The dtype is the caller's (a fill's bool), not one that must hold the labels.
    fixed: bool = False

    def _dtype(self, count: int) -> np.dtype:
        return np.dtype(self.dtype) if self.fixed else label_dtype(self.dtype, count, self.what)

    def template(self) -> Array:
        """The output in memory (no chunks), with the dtype asked for or uint32."""
        if self.existing is not None:
            return self.existing
        dtype = np.dtype(self.dtype) if self.dtype is not None else np.dtype("uint32")
        return create_array(None, dtype=dtype, **self.kwargs)

    def spec(self, array: Array) -> JobSpec:
        # One helper names every job: the plan, the sources, the function, the output.
        return job_identity(array, plan=self.parts, sources=self.sources,
                            function=self.function, job_name=self.job_name)

    def with_job(self, parts: Mapping[str, str], grid: tuple[int, ...], *,
                 sources: Sequence[Any] = (),
                 function: Mapping[str, str] | None = None) -> OutputPlan:
        """The plan with the job's plan parts, the arrays it reads, the function's
        tokens (for :func:`~chunkflow.jobs.job_identity`) and its block grid; a
        resumed output carrying another unfinished job is refused here."""
        # The sources are listed once, here (their stored bytes), not per spec.
        plan = replace(self, parts=dict(parts), grid=tuple(grid),
                       sources=source_parts(sources), function=dict(function or {}))
        if self.resume and self.existing is not None:
            status = job_status(self.existing, count=False)
            if status is not None:  # the same job continues; another one is refused
                Job.open(self.existing, plan.spec(self.existing), plan.grid, resume=True)
        return plan

    def create(self, count: int) -> OutputHandle:
        """Create (or open) the output for ``count`` labels, with its job."""
        if self.existing is not None:
            if not self.fixed:
                label_dtype(self.existing.dtype, count, self.what)
            array = self.existing
        else:
            dtype = self._dtype(count)
            template = create_array(None, dtype=dtype, **self.kwargs)
            attributes = Job.mark(self.spec(template), self.grid) if self.resume else {}
            array = create_array(self.location, dtype=dtype, **self.kwargs,
                                 attributes=attributes, overwrite=self.overwrite, cache=False,
                                 storage_options=dict(self.storage_options or {}) or None)
        # Recorded with resume=True or not (see chunkflow.jobs).
        return OutputHandle(array, Job.open(array, self.spec(array), self.grid,
                                            resume=self.resume))


def _absolute(location: Any) -> Any:
    if isinstance(location, (str, os.PathLike)) and "://" not in str(location):
        return os.path.abspath(location)
    return location


def plan_output(what: str, out: Any, shape: tuple[int, ...], chunks: tuple[int, ...],
                *, shards: Any, dtype: DTypeLike | None, zarr_format: int | None, overwrite: bool,
                resume: bool, job_name: str | None,
                storage_options: Mapping[str, Any] | None,
                dimension_names: Any = None,
                reads: Sequence[tuple[str, str]] = (), fixed: bool = False) -> OutputPlan:
    """Check ``out`` can take labels of ``shape`` (nothing is created here); ``fixed``:
    ``dtype`` is the output's whatever the count (a fill's ``bool``), any dtype an
    existing output has is taken.

    Raises
    ------
    ContainsArrayError
        Something is at ``out`` (without ``overwrite``, and not this job's unfinished
        output with ``resume=True``).
    ShapeMismatchError, ReadOnlyError, LabelError
        An existing output array that cannot take the labels.
    """
    if resume and overwrite:
        raise LabelError(f"{what}: resume=True continues the output that exists and "
                         "overwrite=True replaces it; pass one of them")
    # Labels join across block faces (a halo of one): an output that is (or holds)
    # the source ``reads`` names is refused, whatever overwrite says.
    here = (array_location(out) if isinstance(out, Array) else
            location_of(out, storage_options) if isinstance(out, (str, os.PathLike, Store))
            else None)
    check_not_source(what, here, reads, depth=(1,) * len(shape),
                     creates=not isinstance(out, Array))
    if dtype is not None and not fixed:
        label_dtype(dtype, 0, what)  # an integer dtype
    if isinstance(out, Array):
        existing: Array | None = out
    elif isinstance(out, (str, os.PathLike, Store)):
        existing = open_unfinished(out, storage_options=storage_options) if resume else None
        if existing is None:
            check_location(out, what=what, array=True,
                           storage_options=dict(storage_options or {}) or None)
        if existing is None and not overwrite:
            _refuse_existing(what, out, storage_options)
    else:
        raise ArgumentTypeError(f"{what}: out must be a chunkflow.Array, a path, a URL or a store, "
                                f"got {type(out).__name__}")
    if existing is not None:
        if existing.shape != shape:
            raise ShapeMismatchError(f"{what}: out {existing.path or '/'!r} has shape "
                                     f"{existing.shape}; the source has {shape}")
        if existing.read_only:
            raise ReadOnlyError(f"{what}: out {existing.path or '/'!r} is read-only")
        if not fixed:
            label_dtype(existing.dtype, 0, what)
        return OutputPlan(what, None, existing, {}, existing.dtype, False, storage_options,
                          resume, job_name, fixed=fixed)
    fmt = zarr_format if zarr_format is not None else (3 if shards is not None else 3)
    kwargs: dict[str, Any] = {"shape": shape, "chunks": chunks, "fill_value": 0,
                              "zarr_format": fmt}
    if shards is not None:
        kwargs["shards"] = tuple(int(s) for s in shards)
    if dimension_names is not None and fmt == 3:
        kwargs["dimension_names"] = dimension_names
    plan = OutputPlan(what, _absolute(out), None, kwargs, dtype, overwrite, storage_options,
                      resume, job_name, fixed=fixed)
    plan.template()  # checks every creation argument, creating nothing
    return plan


def _refuse_existing(what: str, out: Any, storage_options: Mapping[str, Any] | None) -> None:
    try:
        with quiet_open():
            open_node(out, mode="r", storage_options=dict(storage_options or {}) or None)
    except (FileNotFoundError, KeyError):
        return
    raise ContainsArrayError(f"{what}: out {str(out)!r} holds an array or group already; "
                             "pass overwrite=True to replace it")
