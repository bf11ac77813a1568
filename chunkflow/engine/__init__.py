"""The chunk I/O engine: where an array's bytes move between store, codecs and cache.

:class:`ChunkIO` reads and writes the chunks a selection touches; beside it live the
freshness rechecks of cached chunks, shard reads and writes, the I/O thread pool, the
layout of chunks and shards, value conversion, and maintenance (resize, repair).
"""

from chunkflow.engine.chunk_io import ChunkIO
from chunkflow.engine.options import ArrayOptions
from chunkflow.engine.repair import RepairReport

__all__ = [
    "ArrayOptions",
    "ChunkIO",
    "RepairReport",
]
