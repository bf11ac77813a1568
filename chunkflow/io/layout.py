"""The layout ``convert`` writes: chunks inside shards, per level, and its defaults.

A task writes whole shards (the *write unit*; Zarr v2 has no shards, so there it is a
chunk). By default, chunks hold one channel and one time point and about
``CHUNK_SIDE`` elements along each space axis; shards grow from the chunks, x first,
by doubling, to about ``SHARD_BYTES`` (a task reads and holds its shards' windows, so
shards bound its memory, see :mod:`chunkflow.graph.pyramid.geometry`).

Examples
--------
>>> layout = plan_layout((40, 3000, 3000), "zyx", "u2", None, None, 3)
>>> layout.chunks, layout.shards
((40, 64, 64), (40, 256, 256))
>>> level_layout(layout, (5, 30, 3000))
((5, 30, 64), (5, 30, 256))
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from chunkflow.errors import InvalidArgumentError

__all__ = ["CHUNK_SIDE", "SHARD_BYTES", "Layout", "level_layout", "plan_layout"]

#: Chunk side along each space axis, by how many space axes: 256^2 or 64^3 elements.
CHUNK_SIDE = {1: 1024, 2: 256, 3: 64}
#: Shards of about this many bytes: a mean pyramid's task of one level holds 2^d of
#: them (d space axes) plus the next level's, well inside dask's default budgets.
SHARD_BYTES = 8 * 2**20


@dataclass(frozen=True)
class Layout:
    """Chunk and shard shape of level 0 (``shards`` is None for Zarr v2)."""

    chunks: tuple[int, ...]
    shards: tuple[int, ...] | None

    @property
    def unit(self) -> tuple[int, ...]:
        """What a task writes whole: a shard, or a chunk without shards."""
        return self.shards or self.chunks


def _checked(name: str, values: Sequence[int] | None, ndim: int) -> tuple[int, ...] | None:
    if values is None:
        return None
    shape = tuple(values)
    if len(shape) != ndim or not all(isinstance(n, (int, np.integer)) and not isinstance(n, bool)
                                     and n >= 1 for n in shape):
        raise InvalidArgumentError(f"convert: {name}={values!r} must give {ndim} whole sizes >= 1 "
                                   f"(one per axis of the source)")
    return tuple(int(n) for n in shape)


def _default_chunks(shape: Sequence[int], axes: str) -> tuple[int, ...]:
    space = sum(a in "zyx" for a in axes)
    side = CHUNK_SIDE.get(space, 64)
    return tuple(max(1, min(n, side)) if a in "zyx" else 1 for n, a in zip(shape, axes))


def _grown(shape: Sequence[int], axes: str, chunks: tuple[int, ...], itemsize: int) -> tuple[int, ...]:
    """Shards from ``chunks``, doubled along the space axes (x, then y, then z, in turn)
    while under ``SHARD_BYTES`` and smaller than the image."""
    shard = list(chunks)
    limits = [c * -(-n // c) for n, c in zip(shape, chunks)]
    space = [i for i in reversed(range(len(axes))) if axes[i] in "zyx"]
    grew = True
    while grew:
        grew = False
        for i in space:
            if shard[i] * 2 <= limits[i] or shard[i] < limits[i]:
                bigger = min(shard[i] * 2, limits[i])
                if math.prod(shard) // shard[i] * bigger * itemsize > SHARD_BYTES:
                    return tuple(shard)
                shard[i], grew = bigger, True
    return tuple(shard)


def plan_layout(shape: Sequence[int], axes: str, dtype: Any, chunks: Sequence[int] | None,
                shards: Sequence[int] | None, zarr_format: int) -> Layout:
    """Level 0's chunks and shards from the arguments and the defaults."""
    ndim = len(shape)
    given_chunks, given_shards = _checked("chunks", chunks, ndim), _checked("shards", shards, ndim)
    if zarr_format == 2:
        if given_shards is not None:
            raise InvalidArgumentError("convert: shards= needs zarr_format=3 (sharding is a Zarr "
                                       "v3 codec); pass zarr_format=3, or chunks= alone for v2")
        return Layout(given_chunks or _default_chunks(shape, axes), None)
    itemsize = np.dtype(dtype).itemsize
    if given_shards is None:
        inner = given_chunks or _default_chunks(shape, axes)
        return Layout(inner, _grown(shape, axes, inner, itemsize))
    if given_chunks is None:
        given_chunks = tuple(math.gcd(c, s) for c, s in
                             zip(_default_chunks(shape, axes), given_shards))
    if any(s % c for s, c in zip(given_shards, given_chunks)):
        raise InvalidArgumentError(f"convert: chunks={list(given_chunks)} must divide "
                                   f"shards={list(given_shards)} along every axis")
    return Layout(given_chunks, given_shards)


def level_layout(layout: Layout, shape: Sequence[int]) -> tuple[tuple[int, ...], tuple[int, ...] | None]:
    """Chunks and shards of a level of ``shape``: level 0's, cut to the level (a shard
    stays a whole number of chunks)."""
    chunks = tuple(max(1, min(c, n)) for c, n in zip(layout.chunks, shape))
    if layout.shards is None:
        return chunks, None
    shards = tuple(min(s, c * -(-n // c)) if n else c
                   for s, c, n in zip(layout.shards, chunks, shape))
    return chunks, shards
