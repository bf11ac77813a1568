"""The arrays a map_chunks job reads and writes, opened and checked before it runs.

The sources are opened and their shapes compared; the output is opened, or, when it
does not exist yet, described (:class:`NewOut`) and created only once the whole plan
holds, so that a refused job leaves nothing behind.
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
from chunkflow.errors import ArgumentTypeError, InvalidSelectionError, ReadOnlyError, ShapeMismatchError
from chunkflow.graph.read import as_source_array
from chunkflow.jobs import quiet_open
from chunkflow.storage import Store

if TYPE_CHECKING:
    from numpy.typing import DTypeLike

    from chunkflow.graph.read import ArraySource
    from chunkflow.storage import StoreLike

__all__ = ["NewOut", "open_sources", "resolve_out"]


def open_sources(sources: Sequence[ArraySource],
                 storage_options: Mapping[str, Any] | None) -> tuple[Array, ...]:
    """The sources as open arrays of one shape, past the process-wide chunk cache."""
    if not sources:
        raise ArgumentTypeError("map_chunks needs at least one source array")
    # Sources skip the process-wide chunk cache (as to_dask's do): a map job reads each
    # chunk about once per task (halos are reused inside a task, see map.groups), and
    # caching a whole source (up to the cache budget) doubled the peak memory of a
    # folder-to-folder filter without making it faster (8192^2 uint16, 512^2 chunks:
    # 1.36 s either way, 154 vs 293 MB). An Array opened with its own cache
    # (cache=True or a ChunkCache) still reads through it.
    arrays = tuple(_uncached(as_source_array(s, storage_options, **({} if isinstance(s, Array)
                                                                    else {"cache": False})))
                   for s in sources)
    shape = arrays[0].shape
    for i, array in enumerate(arrays[1:], start=1):
        if array.shape != shape:
            raise ShapeMismatchError(
                f"map_chunks: source {i} ({array.path or '/'!r}) has shape {array.shape}; "
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
    memory are planned, so that a refusal leaves nothing behind.
    """

    location: StoreLike
    spec: Mapping[str, Any]
    storage_options: Mapping[str, Any] | None
    template: Array

    def create(self) -> Array:
        return create(**self.spec, store=self.location,
                      storage_options=dict(self.storage_options or {}) or None)


def resolve_out(out: ArraySource | None, first: Array, dtype: DTypeLike,
                storage_options: Mapping[str, Any] | None) -> Array | NewOut | None:
    """``out`` as an open writable array, a :class:`NewOut` to create, or ``None``.

    Raises
    ------
    ShapeMismatchError, ReadOnlyError, InvalidSelectionError, TypeError
        For an output that cannot take the result; nothing is created.
    """
    if out is None or isinstance(out, Array):
        array = out
    elif isinstance(out, (str, os.PathLike, Store)):
        try:
            with quiet_open():  # an unfinished output is what resume=True continues
                array = open_node(out, mode="r+",
                                  storage_options=dict(storage_options or {}) or None)
        except FileNotFoundError:
            array = None
        if array is None:
            like = like_kwargs(first, dtype=np.dtype(dtype) if dtype is not None else first.dtype)
            return NewOut(out, like, storage_options, create(**like))
        if not isinstance(array, Array):
            raise InvalidSelectionError(f"map_chunks: out={out!r} holds a group, not an array")
    else:
        raise ArgumentTypeError(f"map_chunks: out must be None, a chunkflow.Array, a path or a URL, "
                                f"got {type(out).__name__}")
    if array is not None:
        if array.shape != first.shape:
            raise ShapeMismatchError(
                f"map_chunks: out {array.path or '/'!r} has shape {array.shape}; the sources "
                f"have {first.shape}"
            )
        if array.read_only:
            raise ReadOnlyError(f"map_chunks: out {array.path or '/'!r} is read-only")
    return array
