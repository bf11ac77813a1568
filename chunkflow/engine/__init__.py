"""The chunk I/O engine: where an array's bytes move between store, codecs and cache.

:class:`ChunkIO` reads and writes the chunks a selection touches, on top of a
:class:`~chunkflow.engine.chunk_space.ChunkSpace` (where the chunks live and how they
are cut and coded); beside it live the freshness rechecks of cached chunks, shard reads
and writes, the I/O thread pool, the layout of chunks and shards, value conversion, and
maintenance (resize, repair).

Words: in ``ChunkIO`` and ``ChunkSpace`` a *chunk* is a cell of the array's chunk grid,
the object stored under one key: :attr:`chunkflow.Array.write_chunks`, which for a
sharded array is the shard. The chunks inside a shard are *inner chunks* everywhere
(:mod:`~chunkflow.engine.shard_reads`, :mod:`~chunkflow.engine.shard_writes`), and
:attr:`chunkflow.Array.chunks` is the inner chunk, as in zarr-python 3.
"""

from chunkflow.engine.chunk_io import ChunkIO
from chunkflow.engine.options import ArrayOptions
from chunkflow.engine.repair import RepairReport

__all__ = [
    "ArrayOptions",
    "ChunkIO",
    "RepairReport",
]
