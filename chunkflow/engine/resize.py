"""Changing an array's shape: ``resize`` and ``append``.

Both work on what :class:`~chunkflow.Array` hands over (its chunk I/O, its metadata
and two callables: ``publish`` writes new metadata and returns the chunk I/O of the
new shape, ``stage`` opens a handle on metadata not yet published), never on the
array's private state.

Elsewhere data goes first and metadata last, so that a crash leaves the old array. On
a :attr:`transactional <chunkflow.storage.Store.transactional>` store (an Icechunk
session) the commit makes the whole change visible at once, and the store refuses
chunks outside the shape it holds: there a growing shape is published first and the
data written into it, and a shrinking one is tidied while the old shape still holds
what it drops.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import numpy as np

from chunkflow.engine.repair import clear_grown_region, trim_beyond_shape
from chunkflow.engine.values import convert_dtype, is_chunked_source
from chunkflow.errors import ShapeMismatchError
from chunkflow.grid import normalize_shape

if TYPE_CHECKING:
    from numpy.typing import ArrayLike

    from chunkflow.engine.chunk_io import ChunkIO
    from chunkflow.metadata import ArrayMetadata

__all__ = ["append_to_array", "resize_array"]


def resize_array(io: ChunkIO, metadata: ArrayMetadata, shape_args: tuple[Any, ...],
                 publish: Callable[[ArrayMetadata], ChunkIO],
                 stage: Callable[[ArrayMetadata], ChunkIO]) -> None:
    """Give the array of ``io`` and ``metadata`` a new shape (same rank); see
    :meth:`chunkflow.Array.resize`. ``stage`` gives the chunk I/O of metadata that is
    not published.

    The caller holds the array-level lock when a synchronizer is set.
    """
    if len(shape_args) == 1 and not isinstance(shape_args[0], (int, np.integer)):
        shape_args = tuple(shape_args[0])
    new_shape = normalize_shape(shape_args)
    old_shape = metadata.shape
    if len(new_shape) != len(old_shape):
        raise ShapeMismatchError(
            f"array {io.path or '/'!r}: resize keeps the number of dimensions "
            f"({len(old_shape)}), got new shape {new_shape}"
        )
    shrunk = [d for d, (n, o) in enumerate(zip(new_shape, old_shape)) if n < o]
    new_metadata = metadata.with_shape(new_shape)
    if io.store.transactional:
        # One commit shows it all; the session refuses chunks outside its shape.
        if shrunk:
            trim_beyond_shape(stage(new_metadata), shrunk)
        clear_grown_region(publish(new_metadata), old_shape, new_shape)
        io.forget_cached()
        return
    # Data first, metadata last: the grown region is cleared while it is still outside
    # the published shape (a crash leaves the old array intact), then the shape is
    # published. Shrinking publishes first (readers stop looking beyond the new shape)
    # and tidies afterwards; what a crash leaves there is garbage the next grow clears.
    clear_grown_region(io, old_shape, new_shape)
    new_io = publish(new_metadata)
    if shrunk:
        trim_beyond_shape(new_io, shrunk)
    io.forget_cached()


def append_to_array(
    metadata: ArrayMetadata,
    path: str,
    data: ArrayLike,
    axis: int,
    *,
    stage: Callable[[ArrayMetadata], Any],
    publish: Callable[[ArrayMetadata], Any],
    transactional: bool = False,
) -> tuple[int, ...]:
    """Append ``data`` along ``axis`` to the array at ``path`` described by ``metadata``;
    see :meth:`chunkflow.Array.append`. ``transactional``: the store's commit publishes
    the change (see the module's notes)."""
    if not is_chunked_source(data):
        # Convert before the shape changes, so bad data leaves the array as it was.
        data = convert_dtype(data, metadata.dtype, path)
    old_shape = metadata.shape
    ndim = len(old_shape)
    if not -ndim <= axis < ndim:
        raise ShapeMismatchError(
            f"array {path or '/'!r}: axis {axis} is out of range for {ndim} dimensions"
        )
    axis %= ndim
    data_shape = tuple(data.shape)
    if len(data_shape) != ndim or any(
        d != s for i, (d, s) in enumerate(zip(data_shape, old_shape)) if i != axis
    ):
        raise ShapeMismatchError(
            f"array {path or '/'!r}: cannot append data of shape {data_shape} along "
            f"axis {axis} to shape {old_shape}; all other dimensions must match"
        )
    new_shape = tuple(
        s + d if i == axis else s for i, (s, d) in enumerate(zip(old_shape, data_shape))
    )
    region = tuple(
        slice(old_shape[i], new_shape[i]) if i == axis else slice(None) for i in range(ndim)
    )
    grown = metadata.with_shape(new_shape)
    if transactional:
        publish(grown)  # the rows go into the published shape; the commit shows both
        stage(grown)[region] = data
        return new_shape
    # Data first, through a handle on the grown grid that nobody else sees yet: the
    # appended rows cover the whole grown region (overwriting whatever a crash or a
    # stale handle left there), and only then is the new shape published. A failure
    # before that leaves the old array, never rows of fill_value posing as data.
    staged = stage(grown)
    staged[region] = data
    publish(grown)
    return new_shape
