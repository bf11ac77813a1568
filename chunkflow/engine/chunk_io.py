"""Reading and writing the chunks a selection touches.

:class:`ChunkIO` joins one array's chunks (a
:class:`~chunkflow.engine.chunk_space.ChunkSpace`: store, grid, key encoding, codec
pipeline) to its decoded-chunk cache and synchronizer. It receives chunk projections
from the indexing layer and moves data between the store and an output (or input)
buffer:

- reads serve chunks from the cache (see :mod:`chunkflow.engine.freshness` for when a
  cached copy must first be proven current), fetch the others in batches
  (``Store.get_many``) and decode chunks the selection covers wholly straight into
  the output buffer (when the cache does not keep them); on latency-bound stores
  (object stores, HTTP) the fetches are a stream (``Store.stream_many``) that the
  I/O threads decode as it arrives;
- writes are :mod:`chunkflow.engine.chunk_writes`' (``ChunkIO.write`` hands them
  over), with the chunk-level helpers they share with reads: encoding, decoding,
  locks and :meth:`ChunkIO.discard`.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import NamedTuple, TypeVar

import numpy as np

from chunkflow.buffers import scratch_buffer
from chunkflow.cache import ChunkCache, discard_everywhere
from chunkflow.engine.chunk_space import ChunkSpace
from chunkflow.engine.chunk_writes import write_chunks
from chunkflow.engine.freshness import serve_hits, unchanged_window
from chunkflow.engine.pool import inflight_window, io_lanes, map_groups, map_sharing
from chunkflow.engine.shard_reads import ShardReader
from chunkflow.errors import ChunkDecodeError, ChunkEncodeError, ChunkTooLargeError
from chunkflow.indexing import ChunkProjection
from chunkflow.indexing.plans import KeptProjections
from chunkflow.jobs.written import WRITTEN_KEY
from chunkflow.storage.coherence import location

_T = TypeVar("_T")

__all__ = ["BATCH_BYTES", "ChunkIO"]

#: Decoded bytes of the chunks fetched by one store call.
BATCH_BYTES = 4 * 1024 * 1024
#: Chunks of at least this many decoded bytes are read into place or into a reused
#: buffer (Store.reads_into). Smaller encoded ones come from the heap (below glibc's
#: mmap threshold, 128 KiB: no page faults), where the buffer's bookkeeping costs more
#: than it saves (256 chunks of 64x64 uint16, blosc: 4.0 ms fetched, 5.1 ms into
#: buffers); small chunks stored as is still land in place (no copy at all).
READ_INTO_MIN_BYTES = 128 * 1024

_BYTES = np.dtype(np.uint8)


class _Keep(NamedTuple):
    """What a read caches: into ``cache``, with the ``ticket`` taken before fetching,
    every chunk it decodes except those of the keys ``skip``."""

    cache: ChunkCache
    ticket: int
    skip: frozenset[str]


@dataclass
class ChunkIO(ChunkSpace):
    """Chunk-level reads and writes of one array.

    Parameters
    ----------
    store : Store
        Where the encoded chunks live.
    path : str
        The array's path inside the store (``""`` for the root).
    grid : RegularChunkGrid
        The array's chunk grid.
    key_encoding : ChunkKeyEncoding
        How chunk coordinates become keys.
    pipeline : CodecPipeline
        Encodes and decodes one chunk.
    fill_value : numpy scalar
        The value of missing chunks and of the padding of edge chunks.
    options : ArrayOptions
        Empty-chunk policy, synchronizer, cache, lock timeout and staleness policy.
    opened_at : float
        ``time.monotonic()`` when the array handle was opened (for
        ``recheck_cached_data="open"``).
    """

    def __post_init__(self) -> None:
        super().__post_init__()
        # Fetch a few MiB per store call: enough keys per call for remote stores to
        # batch requests, few enough that fetched buffers are decoded and freed before
        # the next call (memory that is reused stays mapped; fresh memory page-faults:
        # holding 64 fetched 1 MiB chunks at once made reading 8x slower).
        self._batch = max(1, BATCH_BYTES // max(self._chunk_bytes, 1))
        self._reads_into = self.store.reads_into and (
            self._chunk_bytes >= READ_INTO_MIN_BYTES or self.pipeline.stored_as_is)
        # Sharded arrays: the grid's chunks are shards; parts of them are read by byte
        # ranges, and the cache holds their inner chunks (never whole shards).
        stage = getattr(self.pipeline, "shard_stage", None)
        self.shards: ShardReader | None = None if stage is None else ShardReader(self, stage)

    # -- single chunks ------------------------------------------------------------

    def empty_chunk(self, key: str = "<new chunk>") -> np.ndarray:
        """A new chunk-shaped array filled with the fill value."""
        return self._allocating(key, lambda: np.full(
            self.grid.chunks, self.fill_value, dtype=self.pipeline.dtype))

    def _allocating(self, key: str, make: Callable[[], _T]) -> _T:
        # An absurd chunk shape in the metadata ([10**12]) must not surface as a bare
        # MemoryError deep inside numpy or a codec.
        try:
            return make()
        except MemoryError as err:
            raise ChunkTooLargeError(
                f"array {self.path or '/'!r}: chunk {key!r} of shape {self.grid.chunks} and "
                f"dtype {self.pipeline.dtype} needs {self._chunk_bytes} bytes decoded, which "
                "could not be allocated; expected chunks that fit in memory"
            ) from err

    def decode(self, key: str, data: bytes | memoryview) -> np.ndarray:
        """Decode one chunk, naming the array and chunk key if it is corrupt."""
        try:
            return self._allocating(key, lambda: self.pipeline.decode(data))
        except ChunkTooLargeError:
            raise
        except Exception as err:
            raise self._decode_error(key, err) from err

    def decode_into(self, key: str, data: bytes | memoryview, out: np.ndarray) -> None:
        """Decode one chunk into ``out`` (chunk-shaped, maybe a view), naming it if corrupt."""
        try:
            self._allocating(key, lambda: self.pipeline.decode_into(data, out))
        except ChunkTooLargeError:
            raise
        except Exception as err:
            raise self._decode_error(key, err) from err

    def encode(self, key: str, chunk: np.ndarray) -> bytes | memoryview:
        """Encode one chunk, naming the array and chunk key on failure.

        The result may be a view of ``chunk`` (uncompressed chunks): it goes to the
        store, which copies what it keeps, before the write returns to its caller.
        """
        try:
            return self.pipeline.encode(chunk, detached=False)
        except Exception as err:
            raise ChunkEncodeError(
                f"array {self.path or '/'!r}: chunk {key!r} could not be encoded: {err}"
            ) from err

    def read_chunk(self, coords: tuple[int, ...]) -> np.ndarray:
        """The decoded chunk at ``coords``, fresh from the store (fill value if absent)."""
        key = self.key(coords)
        try:
            data = self.store[key]
        except KeyError:
            return self.empty_chunk()
        return self.decode(key, data)

    def stored_chunks(self) -> list[tuple[tuple[int, ...], str]]:
        """``(coords, key)`` of every chunk of the grid present in the store."""
        ndim = len(self.grid.shape)
        start = len(self._prefix)
        found = []
        for key in self.store.list_prefix(self.path):
            coords = self.key_encoding.decode(key[start:], ndim)
            if coords is not None and self.grid.contains(coords):
                found.append((coords, key))
        return found

    def forget_cached(self) -> None:
        """Drop every cached chunk of this array from every cache of the process.

        Store changes made in this process already reach every cache; this is for
        changes made elsewhere that this process knows of (a finished cluster job).
        """
        discard_everywhere(location(self.identity, self.path) + "/" if self.path
                           else self.identity + "/")

    # -- locks -----------------------------------------------------------------

    def locked(self, projections: Sequence[ChunkProjection]) -> contextlib.AbstractContextManager[None]:
        """Hold the synchronizer's locks of every chunk in ``projections``."""
        if self.options.synchronizer is None:
            return contextlib.nullcontext()
        return self.lock_keys([self.key(p.chunk_coords) for p in projections])

    def lock_keys(self, keys: Sequence[str]) -> contextlib.AbstractContextManager[None]:
        """Hold the synchronizer's locks of the chunks ``keys`` (sorted, deduplicated)."""
        synchronizer = self.options.synchronizer
        if synchronizer is None:
            return contextlib.nullcontext()
        return synchronizer.locks(sorted(set(keys)), timeout=self.options.lock_timeout)

    # -- reads -----------------------------------------------------------------

    def read(
        self, projections: Sequence[ChunkProjection], out: np.ndarray, *, fresh: bool = False
    ) -> None:
        """Fill ``out`` from the chunks named by ``projections``.

        ``fresh`` bypasses the cache (a locked read-modify-write must see the store).
        """
        cache, policy = (None, False) if fresh else self.options.resolve_read(self.store)
        self._read(projections, out, cache, policy)

    def read_new(self, projections: Sequence[ChunkProjection], shape: tuple[int, ...],
                 dtype: np.dtype) -> np.ndarray:
        """A new array of ``shape`` and ``dtype`` filled from the chunks named by ``projections``
        (which tile it): a copy of the window a cache kept, when it kept this one
        (see :func:`~chunkflow.engine.freshness.serve_hits`)."""
        cache, policy = self.options.resolve_read(self.store)
        if cache is not None and self.shards is None \
                and isinstance(projections, KeptProjections):
            window = unchanged_window(self, cache, projections, shape, policy)
            if window is not None:  # of this handle: assembled in its dtype
                return window
        out = np.empty(shape, dtype=dtype)
        self._read(projections, out, cache, policy)
        return out

    def _read(self, projections: Sequence[ChunkProjection], out: np.ndarray,
              cache: ChunkCache | None, policy: bool | str | float) -> None:
        keep: _Keep | None = None
        if self.shards is not None:
            projections = self.shards.read(projections, out, cache)
            cache = None  # what is left are whole shards, read without the cache
        if cache is not None:
            projections = serve_hits(self, cache, projections, out, policy)
            if not projections:
                return
            # Counted as read wholly even when not kept: the next whole read caches.
            skip = self._first_whole_reads(cache, projections)
            # A read larger than half the budget would only churn the cache.
            if len(projections) * self._chunk_bytes <= cache.max_bytes // 2:
                # The ticket is taken before fetching: a write landing meanwhile makes
                # the cache refuse the copies fetched here.
                keep = _Keep(cache, cache.ticket(), skip)
        if not projections:
            return
        if self.store.latency_bound:
            self._read_streamed(projections, out, keep)
            return
        # Groups of one store call each, handed to whichever I/O thread is free: a
        # slower thread (another process on its core) then takes fewer of them.
        map_groups(lambda group: self._read_group(group, out, keep, self._batch),
                   projections, parallel=self.parallel, batch=self._batch)

    def _first_whole_reads(self, cache: ChunkCache,
                           projections: Sequence[ChunkProjection]) -> frozenset[str]:
        """The keys of the chunks read wholly here and never before: not cached (see
        :mod:`chunkflow.cache.admission`)."""
        whole = {}
        for proj in projections:
            if proj.is_complete_chunk:
                key, loc = self.keys(proj.chunk_coords)
                whole[loc] = key
        if not whole:
            return frozenset()
        return frozenset(whole[loc] for loc in cache.first_whole_reads(list(whole)))

    def _read_streamed(
        self,
        projections: Sequence[ChunkProjection],
        out: np.ndarray,
        keep: _Keep | None,
    ) -> None:
        """Read from a latency-bound store: the in-flight budget of requests out at
        once (:func:`~chunkflow.engine.pool.inflight_window`), each chunk decoded by
        whichever I/O thread is free as soon as it arrives."""
        wanted = {self.key(p.chunk_coords): p for p in projections}
        lanes = io_lanes(len(wanted))
        window = inflight_window(self._chunk_bytes, lanes)
        versioned = keep is not None and len(keep.skip) < len(wanted)
        with self.store.stream_many(list(wanted), window=window, lanes=lanes,
                                    versioned=versioned) as stream:
            def drain(_: object) -> None:  # one lane: one I/O thread's share
                try:
                    for key, data, version in stream.take():
                        self._place(wanted[key], key, data, version, out, keep)
                except BaseException:
                    stream.close()  # the other lanes stop too
                    raise

            map_sharing(drain, range(lanes))

    def _read_group(
        self,
        group: Sequence[ChunkProjection],
        out: np.ndarray,
        keep: _Keep | None,
        batch: int,
    ) -> None:
        for start in range(0, len(group), batch):
            self._read_batch(group[start:start + batch], out, keep)

    def _read_batch(
        self,
        group: Sequence[ChunkProjection],
        out: np.ndarray,
        keep: _Keep | None,
    ) -> None:
        keys = [self.key(p.chunk_coords) for p in group]
        if keep is not None and any(key not in keep.skip for key in keys):
            # Kept chunks are cached with the versions of the bytes they came from.
            versioned = self.store.get_many_versioned(keys)
            for proj, key in zip(group, keys):
                data, version = versioned.get(key, (None, None))
                self._place(proj, key, data, version, out, keep)
            return
        if self._reads_into:
            for proj, key in zip(group, keys):
                self._read_into(proj, key, out)
            return
        found = self.store.get_many(keys)
        for proj, key in zip(group, keys):
            self._place(proj, key, found.get(key), None, out, None)

    def _read_into(self, proj: ChunkProjection, key: str, out: np.ndarray) -> None:
        """Read one chunk that is not kept from a store that reads into buffers
        (``Store.reads_into``): a whole interior chunk stored as is (uncompressed, in
        ``out``'s layout) straight into its place in ``out``; anything else into this
        thread's reused fetch buffer, then decoded (no fresh memory per chunk)."""
        direct = None
        if proj.is_complete_chunk and self.is_interior(proj.chunk_coords):
            direct = self.pipeline.stored_view(out[proj.out_selection] if proj.out_selection
                                               else out[...])
        used = False

        def buffer_for(size: int) -> memoryview:
            nonlocal used
            if direct is not None and size == direct.nbytes:
                used = True
                return direct
            return scratch_buffer((size,), _BYTES, slot="fetch").data

        data = self.store.get_into(key, buffer_for)
        if used and direct is not None and data is not None and len(data) == direct.nbytes:
            return  # the chunk is in place
        # A short read into `out` (a file truncated by a foreign writer) fails to
        # decode here, naming the chunk.
        self._place(proj, key, data, None, out, None)

    def _place(
        self,
        proj: ChunkProjection,
        key: str,
        data: bytes | memoryview | None,
        version: object,
        out: np.ndarray,
        keep: _Keep | None,
    ) -> None:
        """Decode one fetched chunk (``None``: missing) into its part of ``out``, and
        cache it with ``version`` if ``keep`` says so."""
        if data is None:
            out[proj.out_selection] = self.fill_value
        elif keep is not None and key not in keep.skip:
            chunk = self.decode(key, data)
            out[proj.out_selection] = chunk[proj.chunk_selection]
            keep.cache.put(self.location(key), chunk, version, ticket=keep.ticket)
        elif proj.is_complete_chunk and self.is_interior(proj.chunk_coords):
            # A whole interior chunk decodes straight into the output (its region
            # is a view: the indexer makes complete chunks' out_selection slices).
            # out[()] of a 0-d array is a scalar, out[...] a view.
            self.decode_into(key, data, out[proj.out_selection] if proj.out_selection else out[...])
        elif not self.pipeline.dtype.hasobject:
            # Not kept: decode into this thread's reused buffer, not fresh memory
            # (measured: a column read of 8 chunks of 2 MiB, 7.3 -> 1.6 ms).
            chunk = self._allocating(key, lambda: scratch_buffer(
                self.grid.chunks, self.pipeline.dtype, slot="chunk"))
            self.decode_into(key, data, chunk)
            out[proj.out_selection] = chunk[proj.chunk_selection]
        else:
            out[proj.out_selection] = self.decode(key, data)[proj.chunk_selection]

    def _decode_error(self, key: str, err: Exception) -> ChunkDecodeError:
        # A sharded array's grid keys are shards (whose index or inner chunks are bad).
        what = "chunk" if self.shards is None else "shard"
        return ChunkDecodeError(
            f"array {self.path or '/'!r}: {what} {key!r} could not be decoded: {err}"
        )

    # -- writes (see chunk_writes) ---------------------------------------------

    def write(
        self, projections: Sequence[ChunkProjection], value: np.ndarray, *, locked: bool = False
    ) -> None:
        """Write ``value`` (shaped like the indexer's buffer, or 0-d) to the chunks.

        Takes the locks of every touched chunk first, unless the caller holds them
        (``locked=True``); a lock timeout therefore writes nothing. See
        :func:`~chunkflow.engine.chunk_writes.write_chunks`.
        """
        write_chunks(self, projections, value, locked=locked)

    def discard(self, keys: Sequence[str]) -> None:
        """Remove chunks; where the store cannot delete (zip), store fill chunks instead."""
        if getattr(self.store, "supports_deletes", True):
            # The list of what a finished job stored no longer holds (same store call).
            self.store.delete_many([*keys, self._prefix + WRITTEN_KEY])
            return
        present = [key for key in keys if key in self.store]
        if present:
            encoded = bytes(self.encode(present[0], self.empty_chunk(present[0])))
            self.store.set_many({key: encoded for key in present})
