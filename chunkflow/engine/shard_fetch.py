"""Fetching the bytes of inner chunks from one snapshot of a shard.

The byte-range half of :class:`~chunkflow.engine.shard_reads.ShardReader` (see that
module): opening a shard for ranged reads, its index (known from a cache entry or
this handle, or read and parsed), the inner chunks' ranges, starting over when the
shard is replaced meanwhile, and fetching it whole after a few changes in a row.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, NamedTuple, TypeVar

import numpy as np

from chunkflow.cache import ChunkCache
from chunkflow.cache.families import child_key
from chunkflow.codecs.sharding import MISSING, ShardingStage
from chunkflow.engine.pool import map_sharing
from chunkflow.errors import ChunkDecodeError, StoreValueChangedError
from chunkflow.indexing import ChunkProjection

if TYPE_CHECKING:
    from chunkflow.engine.chunk_space import ChunkSpace

__all__ = ["KnownIndex", "ShardFetching", "ShardPart"]

#: Attempts at reading one snapshot of a shard that keeps changing before fetching
#: it whole (one request, atomic in every store).
_ATTEMPTS = 3
#: Shard indexes remembered per array handle without a cache (see ShardReader._index).
_MAX_INDEXES = 1024


class KnownIndex(NamedTuple):
    """A shard's index as ``(offsets, lengths)`` rows, and the shard version it was read
    from (the shape of a cache entry, for a handle that keeps indexes without a cache)."""

    chunk: np.ndarray
    version: Any


_T = TypeVar("_T")

#: Places inner chunks of a group ``(flat, projection)`` from their stored bytes (by
#: flat; ``None``: not stored) and the shard's version.
_Place = Callable[[Sequence[tuple[int, Any]], dict[int, Any], Any], None]


@dataclass(frozen=True)
class ShardPart:
    """What one projection needs from one shard.

    ``inner`` pairs each touched inner chunk (its number) with where it goes. For
    selections of slices and integers these are the selection's projections onto the
    inner chunks, and each inner chunk lands straight in the output. Otherwise (points,
    index arrays) the inner chunks are placed whole in a box of ``box`` elements at
    ``origin``, which the selection then reads.
    """

    projection: ChunkProjection
    key: str
    location: str
    flats: np.ndarray
    inner: tuple[tuple[int, ChunkProjection], ...]
    origin: tuple[int, ...] = ()
    box: tuple[int, ...] = ()


class ShardFetching:
    """Mixin of :class:`~chunkflow.engine.shard_reads.ShardReader`: the byte ranges of
    a shard (needs ``io``, ``stage`` and ``_indexes``)."""

    io: ChunkSpace
    stage: ShardingStage
    _indexes: dict[str, KnownIndex]

    def _parsed_index(self, key: str, read: Callable[[], _T]) -> _T:
        """``read()``'s ``(offsets, lengths)``, a corrupt index named by array and shard."""
        try:
            return read()
        except Exception as err:
            raise ChunkDecodeError(
                f"array {self.io.path or '/'!r}: the index of shard {key!r} could not be "
                f"decoded: {err}"
            ) from err

    def _fetch(self, part: ShardPart, flats: list[int], cache: ChunkCache | None,
               ticket: int, place: _Place | None = None, parallel: bool = False,
               ) -> tuple[dict[int, bytes | memoryview | None] | None, Any]:
        """The stored bytes of inner chunks ``flats`` (``None``: not stored) and the
        shard's version, all from one snapshot of the shard.

        With ``place``, the inner chunks of ``part`` are read and placed by groups,
        one group per thread (``parallel``), each reading the bytes it places: then
        ``None`` is returned for the bytes, once all are placed.
        """
        store, key = self.io.store, part.key
        # The version of the shard whose index the cache holds: object stores then
        # read the chunks straight away and prove the version afterwards (one round
        # trip less); if the shard changed, the next attempt opens it afresh.
        index = self._cached_index(part, cache)
        expect = None if index is None else index.version
        for attempt in range(_ATTEMPTS):
            try:
                with store.open_ranges(key, expect=expect if attempt == 0 else None) as reader:
                    if place is not None:
                        self._fetch_and_place(reader, part, flats, cache, ticket, index,
                                              place, parallel)
                        return None, reader.version
                    found = self._fetch_from(reader, part, flats, cache, ticket, index)
                    return found, reader.version
            except KeyError:
                return {}, None
            except StoreValueChangedError:
                continue  # the shard was replaced between two reads: start over
        # It keeps changing: one whole fetch is a snapshot in every store.
        versioned = store.get_many_versioned([key]).get(key)
        if versioned is None:
            return {}, None
        data, version = versioned
        return self._slices(part.key, memoryview(data), flats), version

    def _fetch_and_place(self, reader: Any, part: ShardPart, flats: list[int],
                         cache: ChunkCache | None, ticket: int, index: Any,
                         place: _Place, parallel: bool) -> None:
        """Read and place the inner chunks of ``part`` by groups (see :meth:`_fetch`);
        what a group placed before a change of the shard is placed again by the next
        attempt."""
        offsets, lengths, fresh = self._index(reader, part, index)
        version = reader.version
        wanted = set(flats)
        reads = 0

        def fetch_and_place(group: Sequence[tuple[int, ChunkProjection]]) -> None:
            nonlocal reads
            mine = [flat for flat, _ in group if flat in wanted]
            stored = [flat for flat in mine if offsets[flat] != MISSING]
            found: dict[int, bytes | memoryview | None] = dict.fromkeys(mine)
            if stored:
                ranges = [(int(offsets[f]), int(offsets[f] + lengths[f])) for f in stored]
                found.update(zip(stored, reader.read(ranges)))
                reads += 1
            place(group, found, version)

        map_sharing(fetch_and_place, part.inner, parallel=parallel)
        if not reads:
            reader.verify()  # the index was read unverified (see _fetch_from)
        if fresh and version is not None:
            self._remember_index(part, offsets, lengths, version, cache, ticket)

    def _cached_index(self, part: ShardPart, cache: ChunkCache | None) -> Any:
        """The known index of the shard, with the shard version it came from: the
        cache's entry if it holds one that fits this array, or, for a handle without a
        cache, the one this handle remembers; else ``None``."""
        if cache is None:
            return self._indexes.get(part.key)
        name = child_key(part.location, "index")
        entry = cache.lookup([name]).get(name)
        if entry is None or entry.version is None or \
                entry.chunk.shape != (self.stage.count, 2):
            return None
        return entry

    def _fetch_from(self, reader: Any, part: ShardPart, flats: list[int],
                    cache: ChunkCache | None, ticket: int,
                    index: Any) -> dict[int, bytes | memoryview | None]:
        size = reader.size
        if len(flats) * 2 > self.stage.count:
            # Most of the shard: one request for all of it.
            [whole] = reader.read([(0, size)])
            return self._slices(part.key, memoryview(whole), flats)
        offsets, lengths, read = self._index(reader, part, index)
        stored = [flat for flat in flats if offsets[flat] != MISSING]
        ranges = [(int(offsets[f]), int(offsets[f] + lengths[f])) for f in stored]
        # An index just read was not yet proven to be of the opened shard (one request
        # less on object stores), nor was the shard opened as an expected version:
        # reading the chunks proves both, or verify() does.
        datas = reader.read(ranges) if ranges else []
        if not ranges:
            reader.verify()
        if read and reader.version is not None:
            # Every range of this snapshot was read without a change: the index is
            # the one of this version of the shard.
            self._remember_index(part, offsets, lengths, reader.version, cache, ticket)
        found: dict[int, bytes | memoryview | None] = dict.fromkeys(flats)
        found.update(zip(stored, datas))
        return found

    def _index(self, reader: Any, part: ShardPart,
               index: Any) -> tuple[np.ndarray, np.ndarray, bool]:
        """The shard's ``(offsets, lengths)``, and whether they were read now: from the
        cached ``index`` entry when it is the index of this very version of the shard
        (one request less per read on object stores), else read (unverified: see
        _fetch_from) and checked."""
        if index is not None and index.version == reader.version:
            return index.chunk[:, 0], index.chunk[:, 1], False
        start, stop = self._parsed_index(part.key, lambda: self.stage.index_range(reader.size))
        [encoded] = reader.read([(start, stop)], verify=False)
        try:
            offsets, lengths = self._parsed_index(
                part.key, lambda: self.stage.parse_index(encoded, reader.size))
        except ChunkDecodeError:
            reader.verify()  # bytes of a replaced shard: StoreValueChangedError, read again
            raise
        return offsets, lengths, True

    def _remember_index(self, part: ShardPart, offsets: np.ndarray, lengths: np.ndarray,
                        version: Any, cache: ChunkCache | None, ticket: int) -> None:
        """Keep a shard's index, read and proven of shard ``version``: in the cache (as
        a child of the shard) or, without a cache, in this handle (the same version is
        the same bytes)."""
        stacked = np.stack([offsets, lengths], axis=1)
        if cache is not None:
            cache.put(child_key(part.location, "index"), stacked, version, ticket=ticket,
                      parent=part.location)
            return
        if len(self._indexes) >= _MAX_INDEXES:
            self._indexes.clear()
        stacked.flags.writeable = False
        self._indexes[part.key] = KnownIndex(stacked, version)

    def _slices(self, key: str, whole: memoryview,
                flats: list[int]) -> dict[int, bytes | memoryview | None]:
        """The inner chunks ``flats`` cut out of the whole shard ``whole`` (at ``key``)."""
        size = len(whole)

        def index() -> tuple[np.ndarray, np.ndarray]:
            start, stop = self.stage.index_range(size)
            return self.stage.parse_index(whole[start:stop], size)

        offsets, lengths = self._parsed_index(key, index)
        return {flat: None if offsets[flat] == MISSING
                else whole[int(offsets[flat]):int(offsets[flat] + lengths[flat])]
                for flat in flats}
