"""Writing the chunks a selection touches: :meth:`ChunkIO.write
<chunkflow.engine.chunk_io.ChunkIO.write>`.

A write takes the locks of every chunk it touches (sorted, so writers never
deadlock), encodes wholly overwritten chunks without reading them, and
read-modify-writes the others, starting from a cached copy only when the store's
version proves it current. Chunks equal to the fill value everywhere are deleted
instead of stored unless ``write_empty_chunks`` is set. On latency-bound stores
(object stores) each encoded chunk is sent as soon as it is encoded
(``Store.put_stream``); elsewhere chunks go in batches of a few MiB, one
``set_many_versioned`` call each. The chunks a write built itself are kept in the
cache once they are stored (write-through).
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Mapping, Sequence
from typing import Any, Protocol

import numpy as np

from chunkflow.cache import ChunkCache
from chunkflow.engine.freshness import current_copies
from chunkflow.engine.options import ArrayOptions
from chunkflow.engine.pool import batch_chunks, inflight_window, io_lanes, map_groups
from chunkflow.engine.shard_writes import rewrite_shard
from chunkflow.errors import ChunkDecodeError
from chunkflow.grid import RegularChunkGrid
from chunkflow.indexing import ChunkProjection
from chunkflow.metadata import is_all_fill
from chunkflow.storage import Store

__all__ = ["ChunkWriter", "ScalarChunk", "write_chunks"]


class ChunkWriter(Protocol):
    """What a write needs of :class:`chunkflow.engine.chunk_io.ChunkIO` (which calls
    :func:`write_chunks` with itself; a protocol here keeps the two modules out of an
    import circle)."""

    store: Store
    grid: RegularChunkGrid
    pipeline: Any
    fill_value: np.generic
    options: ArrayOptions
    shards: Any
    parallel: bool
    _chunk_bytes: int
    _batch: int

    def key(self, coords: tuple[int, ...]) -> str: ...
    def location(self, key: str) -> str: ...
    def is_interior(self, coords: tuple[int, ...]) -> bool: ...
    def locked(self, projections: Sequence[ChunkProjection]
               ) -> contextlib.AbstractContextManager[None]: ...
    def empty_chunk(self, key: str = ...) -> np.ndarray: ...
    def encode(self, key: str, chunk: np.ndarray) -> bytes | memoryview: ...
    def decode(self, key: str, data: bytes) -> np.ndarray: ...
    def discard(self, keys: Sequence[str]) -> None: ...
    def _decode_error(self, key: str, err: Exception) -> ChunkDecodeError: ...


def write_chunks(
    io: ChunkWriter, projections: Sequence[ChunkProjection], value: np.ndarray, *, locked: bool = False
) -> None:
    """Write ``value`` (shaped like the indexer's buffer, or 0-d) to the chunks.

    Takes the locks of every touched chunk first, unless the caller holds them
    (``locked=True``); a lock timeout therefore writes nothing.
    """
    scalar = ScalarChunk(io, value) if value.ndim == 0 else None
    # Shards are never cached whole (their inner chunks are, and the store's
    # announcement of this write drops those).
    # Object items do not all survive their codec unchanged (JSON turns tuples into
    # lists, vlen-array None into an empty array): such chunks are cached when read back.
    cache = None if io.shards is not None or io.pipeline.dtype.hasobject else (
        io.options.resolve_cache(io.store))
    context = contextlib.nullcontext() if locked else io.locked(projections)
    with context:
        if io.store.latency_bound:
            _write_streamed(io, projections, value, scalar, cache)
            return
        map_groups(
            lambda group: _write_group(io, group, value, scalar, cache),
            projections,
            parallel=io.parallel,
            batch=io._batch,  # one store call per group, to whichever thread is free
        )


def _write_streamed(
    io: ChunkWriter,
    projections: Sequence[ChunkProjection],
    value: np.ndarray,
    scalar: ScalarChunk | None,
    cache: ChunkCache | None,
) -> None:
    """Write to a latency-bound store: each chunk is sent as soon as it is encoded,
    while the I/O threads encode the next, with the in-flight budget of requests
    out at most (:func:`~chunkflow.engine.pool.inflight_window`). Chunks read to
    be partly overwritten are fetched in batches of a thread's share."""
    lanes = io_lanes(len(projections))
    batch = batch_chunks(io._chunk_bytes)
    # Before anything is written: see ChunkCache.put(written=True).
    ticket = cache.ticket() if cache is not None else 0
    with io.store.put_stream(window=inflight_window(io._chunk_bytes, lanes),
                             lanes=lanes) as sink:
        built = map_groups(lambda group: _write_batch(io, group, value, scalar, sink.put, cache),
                           projections, parallel=True, batch=batch)
    for owned in built:  # every write has landed
        _keep_written(io, cache, owned, sink.versions, ticket)


def _write_group(
    io: ChunkWriter,
    group: Sequence[ChunkProjection],
    value: np.ndarray,
    scalar: ScalarChunk | None,
    cache: ChunkCache | None,
) -> None:
    for start in range(0, len(group), io._batch):
        part = group[start:start + io._batch]
        # Before anything is written: see ChunkCache.put(written=True).
        ticket = cache.ticket() if cache is not None else 0
        to_store: dict[str, bytes | memoryview] = {}
        owned = _write_batch(io, part, value, scalar, to_store.__setitem__, cache)
        versions = io.store.set_many_versioned(to_store) if to_store else {}
        _keep_written(io, cache, owned, versions, ticket)


def _keep_written(io: ChunkWriter, cache: ChunkCache | None, owned: dict[str, np.ndarray],
                  versions: Mapping[str, object], ticket: int) -> None:
    """Cache the chunks a write built itself, once stored (write-through).

    The store announced the write, which dropped the touched chunks from every cache;
    the chunks built here are the new truth. Views of the caller's data are not
    among them (see :func:`_write_batch`). ``ticket`` was taken before the write.
    """
    if cache is not None:
        for key, chunk in owned.items():
            cache.put(io.location(key), chunk, versions.get(key), ticket=ticket, written=True)


def _write_batch(
    io: ChunkWriter,
    group: Sequence[ChunkProjection],
    value: np.ndarray,
    scalar: ScalarChunk | None,
    send: Callable[[str, bytes | memoryview], object],
    cache: ChunkCache | None = None,
) -> dict[str, np.ndarray]:
    """Encode the chunks of ``group`` and ``send`` each (``send(key, bytes)``) as
    soon as it is encoded; delete those left all fill. Returns the chunks this
    write built itself (edges and partly overwritten chunks), which a cache may
    keep once they are stored."""
    keys = [io.key(p.chunk_coords) for p in group]
    partial = [k for p, k in zip(group, keys) if not p.is_complete_chunk]
    # Shards written in part are rewritten from their stored bytes (see
    # shard_writes); other chunks from a decoded copy.
    old_shards = io.store.get_many(partial) if io.shards is not None else {}
    existing = _existing_chunks(io, partial, cache) if io.shards is None else {}
    to_delete: list[str] = []
    owned: dict[str, np.ndarray] = {}
    for proj, key in zip(group, keys):
        interior = proj.is_complete_chunk and io.is_interior(proj.chunk_coords)
        if interior and scalar is not None:
            encoded = scalar.encoded()
            if encoded is None:
                to_delete.append(key)
            else:
                send(key, encoded)
            continue
        # value[()] is a 0-d value's item: numpy stores a 0-d array put into one item of
        # an object array as the array object itself.
        part = value[()] if scalar is not None else value[proj.out_selection]
        if io.shards is not None and not interior:
            shard = _rewrite_shard(io, key, old_shards.get(key), proj, part)
            if shard is None:
                to_delete.append(key)
            else:
                send(key, shard)
            continue
        if interior:
            chunk = part  # a view of the caller's data: never cached
        else:
            chunk = existing.get(key)
            chunk = io.empty_chunk(key) if chunk is None else chunk
            chunk[proj.chunk_selection] = part
            owned[key] = chunk
        if not io.options.write_empty_chunks and is_all_fill(chunk, io.fill_value):
            to_delete.append(key)
            owned.pop(key, None)
        else:
            send(key, io.encode(key, chunk))
    if to_delete:
        io.discard(to_delete)
    return owned


def _rewrite_shard(
    io: ChunkWriter, key: str, old: bytes | None, proj: ChunkProjection, part: np.ndarray
) -> bytes | memoryview | None:
    """The shard ``key`` with ``part`` written at ``proj`` (``None``: delete it)."""
    assert io.shards is not None
    shard = rewrite_shard(io.shards.stage, key, old, proj, part, io._decode_error)
    if shard is None and io.options.write_empty_chunks:
        return io.encode(key, io.empty_chunk(key))  # the index alone
    return shard


def _existing_chunks(
    io: ChunkWriter, keys: list[str], cache: ChunkCache | None
) -> dict[str, np.ndarray]:
    """Writable decoded copies of the stored chunks ``keys`` (absent ones left out).

    A cached copy is used only when the store's version proves it current;
    everything else is read from the store.
    """
    chunks = current_copies(io, cache, keys) if cache is not None and keys else {}
    missing = [key for key in keys if key not in chunks]
    if missing:
        for key, data in io.store.get_many(missing).items():
            chunks[key] = io.decode(key, data)
    return chunks


class ScalarChunk:
    """One encoding of a whole chunk of a scalar, shared by every interior chunk."""

    def __init__(self, io: ChunkWriter, value: np.ndarray) -> None:
        self._io = io
        self._value = value
        self._encoded: bytes | None = None
        self._done = False

    def encoded(self) -> bytes | None:
        """The encoded chunk, or ``None`` when it equals the fill value and is skipped."""
        if not self._done:
            chunk = np.full(self._io.grid.chunks, self._value, dtype=self._io.pipeline.dtype)
            keep = self._io.options.write_empty_chunks
            if keep or not is_all_fill(chunk, self._io.fill_value):
                self._encoded = bytes(self._io.encode("<all chunks>", chunk))
            self._done = True
        return self._encoded
