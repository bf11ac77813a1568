"""Where a distance transform writes: the group of its results, the group of the
features between passes, and the resumable job of every array it writes.

Every array a pass writes (the features of each pass, then ``distances`` and
``indices``) carries a job (:class:`~chunkflow.jobs.Job`): its finished blocks are
recorded, and the results are marked unfinished until the last pass ends. A rerun with
``resume=True`` starts after the last pass whose features are complete (each pass
removes the features it read once it has run) and writes only the blocks its arrays
miss.

Examples
--------
>>> import chunkflow
>>> outputs = Outputs.create(None, None, overwrite=False, resume=False, storage_options=None,
...                          scheduler="sync", reads=[], parts={}, sources={}, job_name=None)
>>> array, job = outputs.array("distances", (4, 5), (2, 5), "f8", (2, 1))
>>> array.shape, array.dtype, job is None or job.total
((4, 5), dtype('float64'), 2)
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from chunkflow.api.hierarchy import group, open_node
from chunkflow.api.zarr3 import create_array
from chunkflow.core.array import Array
from chunkflow.core.replacing import check_location
from chunkflow.errors import ArgumentTypeError, ContainsArrayError, InvalidArgumentError
from chunkflow.graph.rechunk.arrays import INTERMEDIATE_COMPRESSORS
from chunkflow.graph.scheduler import active_client, scheduler_choice
from chunkflow.jobs import Job, check_not_source, job_identity, job_status, location_of, quiet_open
from chunkflow.storage import MemoryStore, Store

if TYPE_CHECKING:
    from chunkflow.core.group import Group
    from chunkflow.graph.scheduler import SchedulerLike

__all__ = ["FEATURES", "WHAT", "Outputs"]

WHAT = "distance_transform_edt"
#: The name of the features pass ``k`` writes, in the group of the features.
FEATURES = "edt-features-{}"


def _refuse_existing(out: Any, storage_options: Mapping[str, Any] | None) -> None:
    try:
        with quiet_open():
            open_node(out, mode="r", storage_options=dict(storage_options or {}) or None)
    except (FileNotFoundError, KeyError):
        return
    raise ContainsArrayError(f"{WHAT}: out {str(out)!r} holds an array or group already; pass "
                             "overwrite=True to replace it (or resume=True to finish the "
                             "unfinished job that wrote it)")


def _check_scheduler(temp: Any, scheduler: SchedulerLike) -> None:
    if temp is None and (active_client(scheduler) is not None
                         or scheduler_choice(scheduler)[0] in ("processes", "address")):
        raise InvalidArgumentError(
            f"{WHAT}: with out=None the arrays between passes are kept in this process's "
            f"memory, which scheduler={scheduler!r} cannot reach; pass temp= (a folder or "
            "URL for them) or out=")


@dataclass(frozen=True)
class Outputs:
    """The groups a job writes to, and what names its jobs."""

    results: Group
    middle: Group
    resume: bool
    parts: Mapping[str, str]
    sources: Mapping[str, str]
    job_name: str | None
    zarr_format: int | None = None

    @classmethod
    def create(cls, out: Any, temp: Any, *, overwrite: bool, resume: bool,
               storage_options: Mapping[str, Any] | None, scheduler: SchedulerLike,
               reads: list[tuple[str, str]], parts: Mapping[str, str],
               sources: Mapping[str, str], job_name: str | None,
               zarr_format: int | None = None) -> Outputs:
        """Check ``out`` and create (or, resuming, open) the groups.

        Raises
        ------
        ContainsArrayError
            Something is at ``out`` (without ``overwrite`` or ``resume``).
        OutputIsSourceError
            ``out`` holds the input.
        """
        options = dict(storage_options or {}) or None
        if resume and overwrite:
            raise InvalidArgumentError(f"{WHAT}: resume=True continues the output that exists "
                                       "and overwrite=True replaces it; pass one of them")
        if out is None:
            if resume:
                raise InvalidArgumentError(f"{WHAT}: resume=True continues a job that writes "
                                           "to out=; with out=None nothing is kept to resume")
            _check_scheduler(temp, scheduler)
            results = group(MemoryStore(WHAT))
        else:
            if not isinstance(out, (str, os.PathLike, Store)):
                raise ArgumentTypeError(f"{WHAT}: out must be a path, a URL or a store (a group "
                                        f"for 'distances' and 'indices'), got {type(out).__name__}")
            check_location(out, what=WHAT, array=False, storage_options=options)
            # A group created anew: a source inside it would be gone before it is read.
            check_not_source(WHAT, location_of(out, storage_options), reads, creates=True)
            if not overwrite and not resume:
                _refuse_existing(out, storage_options)
            results = group(out, overwrite=overwrite, storage_options=options)
        middle = group(temp, storage_options=options) if temp is not None else results
        return cls(results, middle, resume, dict(parts), dict(sources), job_name, zarr_format)

    def _existing(self, where: Group, name: str) -> Array | None:
        try:
            with quiet_open():
                node = where[name]
        except KeyError:
            return None
        return node if isinstance(node, Array) else None

    def array(self, name: str, shape: tuple[int, ...], chunks: tuple[int, ...], dtype: str,
              grid: tuple[int, ...], *, temporary: bool = False) -> tuple[Array, Job | None]:
        """The array ``name`` (created, or kept when resuming its job) and its job."""
        where = self.middle if temporary else self.results
        kwargs: dict[str, Any] = {"shape": shape, "chunks": chunks, "dtype": dtype, "fill_value": 0}
        if temporary:  # written once and read once, by this job only: a fast codec
            kwargs.update(zarr_format=3, compressors=INTERMEDIATE_COMPRESSORS)
        else:
            kwargs.update(zarr_format=self.zarr_format)
        spec = job_identity(create_array(None, **kwargs), plan={**self.parts, "array": name},
                            sources=self.sources, job_name=self.job_name)
        array = self._existing(where, name) if self.resume else None
        if array is not None and job_status(array, count=False) is None:
            raise ContainsArrayError(
                f"{WHAT}: {name!r} in {self.results.store!r} was written by a job that "
                "finished; pass overwrite=True to compute it again")
        if array is None:
            array = create_array(where.store, name=f"{where.path}/{name}".strip("/"), **kwargs,
                                 overwrite=True, cache=False)
        return array, Job.open(array, spec, grid, resume=self.resume)

    def complete(self, name: str, shape: tuple[int, ...], chunks: tuple[int, ...],
                 grid: tuple[int, ...]) -> Array | None:
        """The features ``name`` when an earlier run of this job wrote them whole."""
        if not self.resume or self._existing(self.middle, name) is None:
            return None
        array, job = self.array(name, shape, chunks, "i4", grid, temporary=True)
        return array if job is not None and job.n_done == job.total else None

    def remove(self, name: str) -> None:
        del self.middle[name]
