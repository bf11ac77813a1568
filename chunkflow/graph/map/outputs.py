"""The arrays a map_chunks job reads and writes, opened and checked before it runs.

The sources are opened and their shapes compared; the output is opened, or, when it
does not exist yet (or is replaced), described (:class:`NewOut`) and created only once
the whole plan holds, so that a refused job leaves nothing behind. An output that
exists is written only when asked (:func:`resolve_out`).
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from chunkflow.api.creation import create, like_kwargs
from chunkflow.api.hierarchy import open_node
from chunkflow.core.array import Array
from chunkflow.core.group import Group
from chunkflow.core.replacing import check_location
from chunkflow.errors import (
    ArgumentTypeError,
    ContainsArrayError,
    ContainsGroupError,
    ReadOnlyError,
    ShapeMismatchError,
)
from chunkflow.graph.read import writer_source
from chunkflow.jobs import array_location, check_not_source, job_status, location_of, quiet_open
from chunkflow.storage import Store

if TYPE_CHECKING:
    from numpy.typing import DTypeLike

    from chunkflow.graph.read import ArraySource
    from chunkflow.storage import StoreLike

__all__ = ["NewOut", "open_sources", "resolve_out"]


def open_sources(sources: Sequence[ArraySource],
                 storage_options: Mapping[str, Any] | None,
                 what: str = "map_chunks") -> tuple[Array, ...]:
    """The sources as open arrays of one shape, past the process-wide chunk cache."""
    if not sources:
        raise ArgumentTypeError(f"{what} needs at least one source array")
    # Sources skip the process-wide chunk cache (as to_dask's do): a map job reads each
    # chunk about once per task (halos are reused inside a task, see map.groups), and
    # caching a whole source (up to the cache budget) doubled the peak memory of a
    # folder-to-folder filter without making it faster (8192^2 uint16, 512^2 chunks:
    # 1.36 s either way, 154 vs 293 MB). An Array opened with its own cache
    # (cache=True or a ChunkCache) still reads through it.
    arrays = tuple(_uncached(writer_source(s, storage_options, **({} if isinstance(s, Array)
                                                                  else {"cache": False})))
                   for s in sources)
    shape = arrays[0].shape
    for i, array in enumerate(arrays[1:], start=1):
        if array.shape != shape:
            raise ShapeMismatchError(
                f"{what}: source {i} ({array.path or '/'!r}) has shape {array.shape}; "
                f"source 0 ({arrays[0].path or '/'!r}) has {shape}; sources must match"
            )
    return arrays


def _uncached(array: Array) -> Array:
    return array.with_options(cache=False) if array.options.cache is None else array


@dataclass(frozen=True)
class NewOut:
    """An output array to create at ``location`` once the plan holds.

    ``template`` is the same array in memory (no chunks): creating it checks every
    creation argument, and it stands in for the output while the blocks and their
    memory are planned, so that a refusal leaves nothing behind. ``overwrite``: an
    array or group there is replaced (``overwrite=True``).
    """

    location: StoreLike
    spec: Mapping[str, Any]
    storage_options: Mapping[str, Any] | None
    template: Array
    overwrite: bool = False

    def create(self) -> Array:
        return create(**self.spec, store=self.location, overwrite=self.overwrite,
                      storage_options=dict(self.storage_options or {}) or None)


def _open_existing(out: Any, storage_options: Mapping[str, Any] | None) -> Array | Group | None:
    try:
        with quiet_open():  # an unfinished output is what resume=True continues
            return open_node(out, mode="r+", storage_options=dict(storage_options or {}) or None)
    except FileNotFoundError:
        return None


def resolve_out(out: ArraySource | None, sources: Sequence[Array], dtype: DTypeLike | None,
                storage_options: Mapping[str, Any] | None, *, depth: Sequence[int] = (),
                overwrite: bool = False, resume: bool = False) -> Array | NewOut | None:
    """``out`` as an open writable array, a :class:`NewOut` to create, or ``None``.

    An open :class:`~chunkflow.Array` is written into (as ``dask.array.store`` writes
    into its target). A location (path, URL, store) that holds nothing gets a new array
    like the first source; one that holds an array is refused unless
    ``overwrite=True`` (it is replaced) or ``resume=True`` continues the unfinished job
    writing it. An output that is (or overlaps) a source is refused with a halo, and
    needs ``overwrite=True`` without one (:func:`~chunkflow.jobs.check_not_source`).

    Raises
    ------
    OutputIsSourceError, ContainsArrayError, ContainsGroupError, ShapeMismatchError,
    ReadOnlyError, TypeError
        For an output that cannot take the result; nothing is created.
    """
    if out is None:
        return None
    first = sources[0]
    read = [(f"source {i}", array_location(s)) for i, s in enumerate(sources)]
    if isinstance(out, Array):
        check_not_source("map_chunks", array_location(out), read, depth=depth,
                         overwrite=overwrite)
        return _checked(out, first)
    if not isinstance(out, (str, os.PathLike, Store)):
        raise ArgumentTypeError(f"map_chunks: out must be None, a chunkflow.Array, a path or a URL, "
                                f"got {type(out).__name__}")
    in_place = check_not_source("map_chunks", location_of(out, storage_options), read,
                                depth=depth, overwrite=overwrite)
    existing = _open_existing(out, storage_options)
    unfinished = isinstance(existing, Array) and job_status(existing, count=False) is not None
    if not (in_place or (resume and unfinished)):  # an output created: a user's files stay
        check_location(out, what="map_chunks", array=True,
                       storage_options=dict(storage_options or {}) or None)
    if existing is None or (overwrite and not in_place and not (resume and unfinished)):
        like = like_kwargs(first, dtype=np.dtype(dtype) if dtype is not None else first.dtype)
        return NewOut(out, like, storage_options, create(**like), existing is not None)
    if not isinstance(existing, Array):
        raise ContainsGroupError(f"map_chunks: out={str(out)!r} holds a group, not an array; "
                                 "pass overwrite=True to replace it")
    if not (in_place or (resume and unfinished)):
        raise ContainsArrayError(
            f"map_chunks: out={str(out)!r} holds an array already ({existing.shape}, "
            f"{existing.dtype}); pass overwrite=True to replace it, or resume=True to "
            "continue the unfinished job writing it. Nothing was written")
    return _checked(existing, first)


def _checked(array: Array, first: Array) -> Array:
    if array.shape != first.shape:
        raise ShapeMismatchError(
            f"map_chunks: out {array.path or '/'!r} has shape {array.shape}; the sources "
            f"have {first.shape}"
        )
    if array.read_only:
        raise ReadOnlyError(f"map_chunks: out {array.path or '/'!r} is read-only")
    return array
