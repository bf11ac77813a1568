"""Resumable array copies: ``copy(..., resume=True)`` block by block, with records.

A copy with ``resume=True`` writes the destination array in blocks of whole write
chunks (shards) of about :data:`COPY_BLOCK_BYTES`, records each finished block (see
:mod:`chunkflow.jobs`) and, when an earlier copy into the same array was
interrupted, copies only the blocks it did not record. The destination is created
with the job's mark in its attributes (one write), so an interrupted copy is never
mistaken for a finished one, even by ``if_exists="skip"``.

Examples
--------
>>> import numpy as np
>>> import chunkflow
>>> from chunkflow.api import group
>>> src = chunkflow.array(np.arange(100).reshape(10, 10), chunks=(4, 4))
>>> dst = group()
>>> chunkflow.copy(src, dst, "x", resume=True)
(1, 0, 800)
>>> int(dst["x"][9, 9]), "chunkflow_job" in dst["x"].attrs
(99, False)
"""

from __future__ import annotations

import functools
import itertools
import math
from collections.abc import Callable
from contextvars import ContextVar
from typing import TYPE_CHECKING, Any

from chunkflow.core.array import Array
from chunkflow.core.documents import join_path
from chunkflow.errors import InternalError
from chunkflow.jobs import Job, job_identity, job_status, records_in, without_mark

if TYPE_CHECKING:
    from chunkflow.core.group import Group
    from chunkflow.engine.values import ChunkedSource

__all__ = ["ARRAY_WRITER", "COPY_BLOCK_BYTES", "DEFERRED_CARRIES", "copy_array_resumable",
           "copy_blocks"]

#: How a copy that is not resumed (into a new array) writes the array's values: ``None`` for
#: ``target[...] = source`` in this process (the engine's I/O threads, a few chunks per
#: thread). ``chunkflow.copy`` (:mod:`chunkflow.graph.copies`) sets a dask job on the
#: scheduler its caller names, for the duration of one call: a context variable,
#: because this layer cannot import the graph layer.
ARRAY_WRITER: ContextVar[Callable[[Any, Array], None] | None] = ContextVar(
    "chunkflow_copy_array_writer", default=None)

#: Copies of unfinished sources (``unfinished="copy"``) whose values a deferred copy
#: (``compute=False``) writes later: ``(source, target)`` pairs, marked unfinished by
#: the deferred job's last task (:mod:`chunkflow.graph.copies`) once the values are
#: written, since the copy's own job removes its mark when it finishes. ``None``: mark
#: them at once.
DEFERRED_CARRIES: ContextVar[list[tuple[Any, Array]] | None] = ContextVar(
    "chunkflow_copy_deferred_carries", default=None)

#: A resumable copy reads and writes blocks of about this many bytes (whole chunks).
COPY_BLOCK_BYTES = 16 * 2**20


def copy_blocks(shape: tuple[int, ...], chunks: tuple[int, ...], itemsize: int,
                target: int | None = None) -> tuple[int, ...]:
    """Block shape in elements: whole ``chunks``, grown from the last axis to ``target``.

    Examples
    --------
    >>> copy_blocks((100, 100), (10, 10), 8, target=8000)
    (10, 100)
    >>> copy_blocks((100, 100), (10, 10), 8, target=1)
    (10, 10)
    """
    target = COPY_BLOCK_BYTES if target is None else target
    block = list(chunks)
    for axis in reversed(range(len(shape))):
        nbytes = math.prod(block) * itemsize
        fits = max(1, target // max(1, nbytes))
        block[axis] = min(shape[axis], block[axis] * fits) if shape[axis] else block[axis]
        if block[axis] < shape[axis]:
            break
    return tuple(block)


def _regions(shape: tuple[int, ...], block: tuple[int, ...]) -> tuple[tuple[int, ...],
                                                                        list[tuple[int, ...]]]:
    grid = tuple(math.ceil(n / b) if n else 0 for n, b in zip(shape, block))
    return grid, list(itertools.product(*(range(g) for g in grid)))


def copy_array_resumable(source: ChunkedSource, dest: Group, name: str,
                         kwargs: dict[str, Any], *, resume: bool,
                         job_name: str | None, attributes: dict[str, Any] | None = None,
                         existing: bool = False) -> Array:
    """Copy ``source`` into ``dest[name]``, marked unfinished until it completes; with
    ``resume=True`` block by block, each block recorded, resuming an unfinished copy.

    ``existing``: ``dest[name]`` exists and carries this copy's unfinished job.

    Raises
    ------
    JobMismatchError
        ``dest[name]`` carries another job (another source, other creation arguments).
    """
    from chunkflow.api.hierarchy import group

    template = group(zarr_format=dest.zarr_format).create_array(name, **kwargs)
    block = copy_blocks(template.shape, template.write_chunks, template.dtype.itemsize)
    grid, indices = _regions(template.shape, block)
    spec = job_identity(template, plan={"block plan": str(block)}, sources=[source],
                        job_name=job_name)
    attrs = without_mark(attributes)
    write = ARRAY_WRITER.get()
    if not resume and write is not None:
        target = dest.create_array(name, **kwargs, attributes=attrs)
        write(source, target)  # a dask job (chunkflow.store), which records itself
        return target
    if not resume and not records_in(dest.store, join_path(dest.path, name)):
        target = dest.create_array(name, **kwargs, attributes=attrs)  # not recorded here
        target[...] = source
        return target
    if existing:
        found = dest[name]
        if not isinstance(found, Array):  # resumable_here saw an array there
            raise InternalError(f"copy: {join_path(dest.path, name)!r} is no longer an array")
        target = found
    else:  # the mark comes with the metadata (one write)
        target = dest.create_array(name, **kwargs, attributes={**attrs, **Job.mark(spec, grid)})
    job = Job.open(target, spec, grid, resume=True)
    assert job is not None
    if not resume:
        # Marked unfinished until it completes (a resume=True of a failed copy starts
        # it over), but copied chunk by chunk, whose memory stays within a few chunks
        # per I/O thread (see chunkflow.engine.values.copy_from_source): no records.
        target[...] = source
        job.finish(target)
        return target
    for index in indices:
        region = tuple(slice(i * b, min(n, (i + 1) * b)) for i, b, n in zip(index, block, target.shape))
        job.run(index, functools.partial(_copy_region, source, target, region), None,
                functools.partial(_describe_region, region, join_path(dest.path, name)))
    job.finish(target)
    return target


def _copy_region(source: ChunkedSource, target: Array, region: tuple[slice, ...]) -> None:
    target[region] = source[region]


def _describe_region(region: tuple[slice, ...], path: str) -> str:
    return f"array region {[(s.start, s.stop) for s in region]} of {path!r}"


def resumable_here(dest: Group, name: str) -> bool:
    """Whether ``dest[name]`` is an array an unfinished job is writing."""
    node = dest[name]
    return isinstance(node, Array) and job_status(node, count=False) is not None
