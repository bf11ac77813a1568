"""Writing part of a shard: re-encode the inner chunks touched, copy the others' bytes.

A write that covers only part of a shard is a read-modify-write of the shard object
(under the synchronizer's lock when one is set, like any partial-chunk write). Only
the inner chunks the write touches are decoded, changed and encoded again; the bytes
of every other stored inner chunk are copied from the old shard unchanged, and a new
index is written. Writing a 256x256 window into a 4096x4096 shard therefore costs
one inner chunk's decode and encode, not the shard's.

As in :meth:`~chunkflow.codecs.sharding.ShardingStage.encode`, an inner chunk equal to
the fill value everywhere is left out of the shard (it reads as the fill value).

Examples
--------
>>> import chunkflow
>>> z = chunkflow.create_array({}, shape=(8, 8), chunks=(2, 2), shards=(8, 8), dtype="u1")
>>> z[:] = 1
>>> z[3, 3] = 9  # re-encodes one inner chunk, copies the other fifteen
>>> int(z[:].sum())
72
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import numpy as np

from chunkflow.codecs.sharding import MISSING, ShardingStage
from chunkflow.engine.shard_reads import shifted_selection, touched_inner_chunks
from chunkflow.errors import ChunkDecodeError
from chunkflow.indexing import ChunkProjection
from chunkflow.metadata import is_all_fill

if TYPE_CHECKING:
    from numpy.typing import ArrayLike

__all__ = ["rewrite_shard"]

#: Raises a decode error naming the array, the shard key and the inner chunk.
DecodeErrorFactory = Callable[[str, Exception], ChunkDecodeError]


def rewrite_shard(
    stage: ShardingStage,
    key: str,
    old: bytes | None,
    projection: ChunkProjection,
    value: ArrayLike,
    decode_error: DecodeErrorFactory,
) -> bytes | None:
    """The shard ``key`` after writing ``value`` at ``projection.chunk_selection``.

    Parameters
    ----------
    stage : ShardingStage
        The array's sharding codec.
    key : str
        The shard's store key (for error messages).
    old : bytes or None
        The stored shard (``None``: not stored, every inner chunk is fill).
    projection : ChunkProjection
        Where in the shard the write lands.
    value : numpy.ndarray or scalar
        What is written there (broadcast like numpy assignment).
    decode_error : callable
        Builds the error raised when an old inner chunk cannot be decoded.

    Returns
    -------
    bytes or None
        The new shard, or ``None`` when no inner chunk is left to store.
    """
    flats, origin, box_shape = touched_inner_chunks(
        projection.chunk_selection, stage.inner_shape, stage.grid)
    if old is None:
        offsets = np.full(stage.count, MISSING, dtype="<u8")
        lengths = offsets.copy()
        raw = memoryview(b"")
    else:
        raw = memoryview(old)
        start, stop = stage.index_range(len(raw))
        try:
            offsets, lengths = stage.parse_index(raw[start:stop], len(raw))
        except Exception as err:
            raise decode_error(key, err) from err
    box = np.empty(box_shape, stage.dtype)
    for flat in flats.tolist():
        region = _region(stage, flat, origin)
        if offsets[flat] == MISSING:
            box[region] = stage.fill_value
            continue
        begin = int(offsets[flat])
        try:
            stage.inner.decode_into(raw[begin:begin + int(lengths[flat])], box[region])
        except Exception as err:
            raise decode_error(key, ChunkDecodeError(
                f"inner chunk {stage.region(flat)}: {err}")) from err
    box[shifted_selection(projection.chunk_selection, origin, stage.shape)] = value
    changed: dict[int, bytes | None] = {}
    for flat in flats.tolist():
        inner = box[_region(stage, flat, origin)]
        changed[flat] = None if is_all_fill(inner, stage.fill_value) \
            else bytes(stage.inner.encode(np.ascontiguousarray(inner)))
    return _assemble(stage, raw, offsets, lengths, changed)


def _region(stage: ShardingStage, flat: int, origin: tuple[int, ...]) -> tuple[slice, ...]:
    return tuple(slice(r.start - o, r.stop - o) for r, o in zip(stage.region(flat), origin))


def _assemble(
    stage: ShardingStage,
    raw: memoryview,
    offsets: np.ndarray,
    lengths: np.ndarray,
    changed: dict[int, bytes | None],
) -> bytes | None:
    """The shard bytes: kept inner chunks copied, changed ones replaced, a new index."""
    index = np.full((stage.count, 2), MISSING, dtype="<u8")
    parts: list[Any] = []
    position = stage.index_nbytes if stage.index_at_start else 0
    kept = np.flatnonzero(offsets != MISSING).tolist()
    for flat in sorted(set(kept) | set(changed)):
        if flat in changed:
            data: Any = changed[flat]
            if data is None:
                continue  # now all fill: left out
        else:
            begin = int(offsets[flat])
            data = raw[begin:begin + int(lengths[flat])]
        index[flat] = (position, len(data))
        position += len(data)
        parts.append(data)
    if not parts:
        return None
    encoded_index = bytes(stage.index.encode(index.reshape(*stage.grid, 2)))
    return b"".join([encoded_index, *parts] if stage.index_at_start else [*parts, encoded_index])
