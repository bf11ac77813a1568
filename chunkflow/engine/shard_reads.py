"""Reading part of a shard: its index and the inner chunks a selection touches.

A sharded array stores many inner chunks in one object, with an index of their byte
ranges (see :mod:`chunkflow.codecs.sharding`). Reading a few pixels of a 64 MiB shard
must not fetch the shard: :class:`ShardReader` opens the shard for byte-range reads
(``Store.open_ranges``: ``pread`` on a local file, ``cat_ranges`` on fsspec, slices of
the bytes in memory and zip stores), reads the index, then only the inner chunks the
selection touches, in one batched call, and decodes them into a buffer that covers
just their bounding box.

Every range comes from one snapshot of the shard: a reader either pins the value it
opened (local files, memory, zip) or refuses to mix bytes of two versions
(``StoreValueChangedError``); then the read starts over, and after a few changes in a
row falls back to fetching the whole shard at once.

With a decoded-chunk cache, inner chunks are cached on their own, as children of their
shard's location (see :mod:`chunkflow.cache.families`): any change of the shard drops
them, and a viewer panning over the array decodes each inner chunk once.

Examples
--------
>>> import chunkflow
>>> z = chunkflow.create_array({}, shape=(64, 64), chunks=(8, 8), shards=(32, 32),
...                            dtype="u2", cache=False)
>>> z[:] = np.arange(64 * 64, dtype="u2").reshape(64, 64)
>>> int(z[10, 20])  # reads the index and one inner chunk of shard (0, 0)
660
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from chunkflow.buffers import scratch_buffer
from chunkflow.cache import ChunkCache
from chunkflow.cache.families import child_key
from chunkflow.codecs.sharding import ShardingStage
from chunkflow.engine.freshness import recheck, recheck_threshold
from chunkflow.engine.pool import PARALLEL_MIN_CHUNK_BYTES, io_threads, map_groups, map_sharing
from chunkflow.engine.shard_fetch import KnownIndex, ShardFetching, ShardPart
from chunkflow.engine.shard_geometry import shifted_selection, touched_inner_chunks, unit_step_parts
from chunkflow.errors import ChunkDecodeError
from chunkflow.grid import RegularChunkGrid
from chunkflow.indexing import BasicIndexer, ChunkProjection

if TYPE_CHECKING:
    from chunkflow.engine.chunk_space import ChunkSpace

__all__ = ["ShardPart", "ShardReader", "shifted_selection", "touched_inner_chunks",
           "unit_step_parts"]  # the last three from shard_geometry

def _is_basic(projection: ChunkProjection) -> bool:
    """Whether the projection selects by slices and integers into a view of the output."""
    return bool(projection.chunk_selection) and all(
        isinstance(entry, (slice, int, np.integer)) for entry in projection.chunk_selection
    ) and all(isinstance(entry, slice) for entry in projection.out_selection)


class ShardReader(ShardFetching):
    """Reads of part of the shards of one array (see the module docstring).

    Parameters
    ----------
    io : ChunkSpace
        The array's chunk I/O (its grid's chunks are the shards).
    stage : ShardingStage
        The array's sharding codec, the only codec of its pipeline.
    """

    def __init__(self, io: ChunkSpace, stage: ShardingStage) -> None:
        self.io = io
        self.stage = stage
        self.inner_nbytes = stage.dtype.itemsize * int(np.prod(stage.inner_shape))
        self._parallel = self.inner_nbytes >= PARALLEL_MIN_CHUNK_BYTES
        self._inner_grid = RegularChunkGrid(stage.shape, stage.inner_shape)
        # Parsed indexes by shard key, with the version of the shard they came from:
        # a handle without a cache reads a shard's index once, not on every read.
        self._indexes: dict[str, KnownIndex] = {}

    def read(
        self, projections: Sequence[ChunkProjection], out: np.ndarray, cache: ChunkCache | None
    ) -> list[ChunkProjection]:
        """Fill ``out`` for the projections read by parts; return the others.

        Without a cache, whole interior shards are left to the caller (one request,
        decoded straight into ``out``); with one, every projection is read by inner
        chunks, so that the cache holds inner chunks, never shards.
        """
        parts, rest = [], []
        io = self.io
        for proj in projections:
            if cache is None and proj.is_complete_chunk and io.is_interior(proj.chunk_coords):
                rest.append(proj)
                continue
            parts.append(self._part(proj))
        if parts:
            keep: ChunkCache | None = None
            ticket = 0
            if cache is not None:
                wanted = sum(len(p.flats) for p in parts) * self.inner_nbytes
                # A read larger than half the budget would only churn the cache.
                if wanted <= cache.max_bytes // 2:
                    keep, ticket = cache, cache.ticket()
            def read(group: Sequence[ShardPart]) -> None:
                for part in group:
                    self._read_part(part, out, cache, keep, ticket)

            # Threads pay off for parts with enough to decode: a part of a few small
            # inner chunks costs less than handing it to another thread (and the
            # two threads then fight over the GIL for their Python work).
            parallel = io.parallel and all(
                len(part.flats) * self.inner_nbytes >= PARALLEL_MIN_CHUNK_BYTES for part in parts)
            if len(parts) > 2 * io_threads():
                # Many shards: one per task, to whichever I/O thread is free.
                map_groups(read, parts, parallel=parallel, batch=1)
            else:  # a few (a window): the caller's thread takes its share
                map_sharing(read, parts, parallel=parallel)
        return rest

    def _part(self, proj: ChunkProjection) -> ShardPart:
        key, loc = self.io.keys(proj.chunk_coords)
        if _is_basic(proj):
            grid = self.stage.grid
            inner = unit_step_parts(proj.chunk_selection, self.stage.inner_shape, grid)
            if inner is None:
                inner = tuple((int(np.ravel_multi_index(p.chunk_coords, grid)), p)
                              for p in BasicIndexer(proj.chunk_selection, self._inner_grid))
            flats = np.array(sorted(flat for flat, _ in inner), dtype=np.intp)
            return ShardPart(proj, key, loc, flats, inner)
        flats, origin, box = touched_inner_chunks(
            proj.chunk_selection, self.stage.inner_shape, self.stage.grid)
        whole = (slice(None),) * len(box)
        placed = tuple((flat, ChunkProjection((), whole, self._region(flat, origin), True))
                       for flat in flats.tolist())
        return ShardPart(proj, key, loc, flats, placed, origin, box)

    # -- one shard --------------------------------------------------------------

    def _read_part(self, part: ShardPart, out: np.ndarray, cache: ChunkCache | None,
                   keep: ChunkCache | None, ticket: int) -> None:
        hits = self._cached(part, cache) if cache is not None else {}
        missing = [flat for flat in part.flats.tolist() if flat not in hits]
        proj = part.projection
        if part.box:
            target = np.empty(part.box, self.stage.dtype)
        else:
            target = out[proj.out_selection] if proj.out_selection else out[...]  # a view
        skip = self._first_whole_reads(part, cache, missing)
        # One shard's inner chunks in parallel (several shards already are, one per
        # thread: map_sharing runs inline in a worker thread).
        parallel = self._parallel and len(missing) > 1

        def place(group: Sequence[tuple[int, Any]], found: dict[int, bytes | memoryview | None],
                  version: Any) -> None:
            for flat, inner in group:
                self._place(part, flat, inner, target, hits, found,
                            None if flat in skip else keep, version, ticket)

        # A few inner chunks of a shard on a store that is not latency-bound: each
        # thread reads the bytes it decodes, so reads overlap decodes (instead of all
        # the reads coming first, in one thread). Else one batched read, then decodes.
        overlap = not self.io.store.latency_bound and len(missing) * 2 <= self.stage.count
        if missing:
            found, version = self._fetch(part, missing, cache, ticket,
                                         place if overlap else None, parallel)
            if found is None:
                return self._copy_box(part, target, out)
        else:
            found, version = {}, None
        map_sharing(lambda group: place(group, found, version), part.inner, parallel=parallel)
        self._copy_box(part, target, out)

    def _copy_box(self, part: ShardPart, target: np.ndarray, out: np.ndarray) -> None:
        """For points and index arrays: what the selection reads of the box of inner
        chunks ``target``, into ``out``."""
        if part.box:
            proj = part.projection
            selection = shifted_selection(proj.chunk_selection, part.origin, self.stage.shape)
            out[proj.out_selection] = target[selection]

    @staticmethod
    def _first_whole_reads(part: ShardPart, cache: ChunkCache | None,
                           missing: list[int]) -> set[int]:
        """The inner chunks ``missing`` that this read covers wholly, for the first
        time: not cached (see :mod:`chunkflow.cache.admission`). Inner chunks placed
        whole in a box for points or index arrays are read in part."""
        if cache is None or part.box or not missing:
            return set()
        wanted = set(missing)
        whole = {child_key(part.location, flat): flat for flat, inner in part.inner
                 if inner.is_complete_chunk and flat in wanted}
        return {whole[name] for name in cache.first_whole_reads(list(whole))} if whole else set()

    def _place(self, part: ShardPart, flat: int, inner: ChunkProjection, target: np.ndarray,
               hits: dict[int, np.ndarray], found: dict[int, bytes | memoryview | None],
               keep: ChunkCache | None, version: Any, ticket: int) -> None:
        """Put what ``inner`` selects of inner chunk ``flat`` at its place in ``target``."""
        stage = self.stage
        where = inner.out_selection
        chunk = hits.get(flat)
        if chunk is not None:
            target[where] = chunk[inner.chunk_selection]
            return
        data = found.get(flat)
        if data is None:
            target[where] = stage.fill_value
        elif keep is not None:
            chunk = self._decode(part.key, flat, lambda: stage.inner.decode(data))
            target[where] = chunk[inner.chunk_selection]
            keep.put(child_key(part.location, flat), chunk, version, ticket=ticket,
                     parent=part.location)
        elif inner.is_complete_chunk:
            self._decode(part.key, flat, lambda: stage.inner.decode_into(data, target[where]))
        elif stage.dtype.hasobject:
            chunk = self._decode(part.key, flat, lambda: stage.inner.decode(data))
            target[where] = chunk[inner.chunk_selection]
        else:
            # Decoded into this thread's reused buffer, then the part selected is copied;
            # of blosc, only the blocks holding that part are decoded.
            chunk = scratch_buffer(stage.inner_shape, stage.dtype, slot="inner chunk")
            selection = inner.chunk_selection
            self._decode(part.key, flat,
                         lambda: stage.inner.decode_region_into(data, chunk, selection))
            target[where] = chunk[selection]

    def _region(self, flat: int, origin: Sequence[int]) -> tuple[slice, ...]:
        """Where inner chunk ``flat`` lies in a box starting at ``origin``."""
        return tuple(slice(r.start - o, r.stop - o)
                     for r, o in zip(self.stage.region(flat), origin))

    def _decode(self, key: str, flat: int, decode: Any) -> Any:
        try:
            return decode()
        except Exception as err:
            where = tuple(int(i) for i in np.unravel_index(flat, self.stage.grid))
            raise ChunkDecodeError(
                f"array {self.io.path or '/'!r}: inner chunk {where} of shard {key!r} "
                f"could not be decoded: {err}"
            ) from err

    def _cached(self, part: ShardPart, cache: ChunkCache) -> dict[int, np.ndarray]:
        """The usable cached inner chunks of ``part``, proven current where due."""
        names = {child_key(part.location, flat): flat for flat in part.flats.tolist()}
        found = cache.lookup(list(names))
        if not found:
            return {}
        io = self.io
        threshold = recheck_threshold(io.options.resolve_recheck(), io.opened_at)
        due = [(part.key, name) for name, entry in found.items() if entry.checked < threshold]
        if due:
            recheck(io, cache, found, due)
        inner, dtype = self.stage.inner_shape, self.stage.dtype
        # A chunk of another dtype or shape can only be a leftover of an array that
        # was replaced behind this process's back: never serve it.
        return {names[name]: entry.chunk for name, entry in found.items()
                if entry.chunk.shape == inner and entry.chunk.dtype == dtype}

