"""Where one array's chunks live and what they are: store, path, chunk grid, key
encoding, codec pipeline, fill value and handle options, and the store and cache keys of
each chunk.

These are the parts of an array's chunk I/O that the rest of the engine reads
(freshness rechecks, shard reads); :class:`~chunkflow.engine.chunk_io.ChunkIO` adds the
reads and writes on top, so those modules never need ChunkIO itself.

Examples
--------
>>> import numpy as np
>>> from chunkflow.codecs import v3_pipeline
>>> from chunkflow.grid import ChunkKeyEncoding, RegularChunkGrid
>>> from chunkflow.storage import MemoryStore
>>> space = ChunkSpace(MemoryStore(), "img", RegularChunkGrid((10, 10), (4, 4)),
...                    ChunkKeyEncoding("default", "/"),
...                    v3_pipeline(np.dtype("u1"), (4, 4), [{"name": "bytes"}]), np.uint8(0))
>>> space.key((1, 2)), space.is_interior((1, 1)), space.is_interior((2, 0))
('img/c/1/2', True, False)
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field

import numpy as np

from chunkflow.codecs import CodecPipeline
from chunkflow.engine.options import ArrayOptions
from chunkflow.engine.pool import PARALLEL_MIN_CHUNK_BYTES
from chunkflow.grid import ChunkKeyEncoding, RegularChunkGrid
from chunkflow.storage import Store
from chunkflow.storage.coherence import location

__all__ = ["ChunkSpace"]

#: Chunk keys remembered per array (see ChunkSpace.keys); a few MiB at most.
_MAX_MEMO_KEYS = 65536


@dataclass
class ChunkSpace:
    """The chunks of one array: where they are stored, how they are cut and coded.

    Parameters are those of :class:`~chunkflow.engine.chunk_io.ChunkIO`.
    """

    store: Store
    path: str
    grid: RegularChunkGrid
    key_encoding: ChunkKeyEncoding
    pipeline: CodecPipeline
    fill_value: np.generic
    options: ArrayOptions = field(default_factory=ArrayOptions)
    opened_at: float = field(default_factory=time.monotonic)
    _prefix: str = field(init=False, repr=False)
    _full_chunks: tuple[int, ...] = field(init=False, repr=False)
    _chunk_bytes: int = field(init=False, repr=False)

    def __post_init__(self) -> None:
        self._prefix = f"{self.path}/" if self.path else ""
        # Chunks with an index below this, in every dimension, are interior (not cut
        # by the array's edge): a cheap test on the hot path.
        self._full_chunks = tuple(s // c for s, c in zip(self.grid.shape, self.grid.chunks))
        chunk_bytes = self.pipeline.dtype.itemsize
        for size in self.grid.chunks:
            chunk_bytes *= size
        self._chunk_bytes = chunk_bytes
        #: Whether chunks are large enough to decode in the I/O pool (shard reads ask).
        self.parallel = chunk_bytes >= PARALLEL_MIN_CHUNK_BYTES
        # Cache keys are locations: the store's identity joined with the chunk key, the
        # same for every handle, path alias or store object reaching this chunk.
        self.identity = self.store.identity
        self._keys: dict[tuple[int, ...], tuple[str, str]] = {}

    def key(self, coords: tuple[int, ...]) -> str:
        """The store key of the chunk at ``coords``."""
        return self.keys(coords)[0]

    def keys(self, coords: tuple[int, ...]) -> tuple[str, str]:
        """The store key and the cache key (location) of the chunk at ``coords``."""
        # Memoized: keys are built for every chunk of every read and write, and a dict
        # lookup costs a fifth of encoding. Bounded, so huge grids cannot grow it forever.
        pair = self._keys.get(coords)
        if pair is None:
            if len(self._keys) >= _MAX_MEMO_KEYS:
                self._keys.clear()
            key = self._prefix + self.key_encoding.encode(coords)
            pair = self._keys[coords] = (key, location(self.identity, key))
        return pair

    def location(self, key: str) -> str:
        """The cache key of the store key ``key``."""
        return location(self.identity, key)

    def is_interior(self, coords: tuple[int, ...]) -> bool:
        """Whether the chunk lies wholly inside the array (not an edge chunk)."""
        for c, full in zip(coords, self._full_chunks):
            if c >= full:
                return False
        return True
