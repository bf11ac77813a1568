"""How an array is cut: inner chunks, shards and the codecs of each stage, read from its
metadata the way zarr-python 3 reports them.

zarr-python 3 calls the *inner* chunk of a sharded array its ``chunks`` and the stored
object its ``shards``; the metadata's regular chunk grid is the shard grid. chunkflow
reads and writes whole stored objects, so its I/O unit (:attr:`ChunkLayout.write_chunks`)
is the shard when there is one, else the chunk.

Examples
--------
>>> sharded = {"name": "sharding_indexed", "configuration": {
...     "chunk_shape": [2, 2], "codecs": [{"name": "bytes"}, {"name": "gzip"}]}}
>>> layout = ChunkLayout.from_v3((8, 8), [sharded])
>>> layout.chunks, layout.shards, layout.write_chunks
((2, 2), (8, 8), (8, 8))
>>> [doc["name"] for doc in layout.inner_codecs]
['bytes', 'gzip']
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from chunkflow.codecs import to_v3_codec
from chunkflow.codecs.v3_codecs import ARRAY_TO_ARRAY, ARRAY_TO_BYTES, BYTES_TO_BYTES
from chunkflow.grid import ceil_div
from chunkflow.metadata import ArrayMetadataV3

if TYPE_CHECKING:
    from chunkflow.metadata import ArrayMetadata

__all__ = ["ARRAY_TO_ARRAY", "ARRAY_TO_BYTES", "BYTES_TO_BYTES", "ChunkLayout", "ceil_grid",
           "layout_of"]

SHARDING = "sharding_indexed"


def ceil_grid(shape: Sequence[int], chunks: Sequence[int]) -> tuple[int, ...]:
    """Number of ``chunks``-sized pieces along each dimension of ``shape``.

    Examples
    --------
    >>> ceil_grid((10, 7), (4, 7))
    (3, 1)
    """
    return tuple(ceil_div(s, c) for s, c in zip(shape, chunks))


@dataclass(frozen=True)
class ChunkLayout:
    """Inner chunk, shard and stage codecs of one array.

    Attributes
    ----------
    chunks : tuple of int
        The inner chunk of a sharded array, else the chunk (zarr-python 3's ``chunks``).
    shards : tuple of int or None
        The shard shape, ``None`` without sharding.
    inner_codecs : tuple of dict
        v3 codec documents applied to each (inner) chunk: inside the sharding codec when
        there is one (as zarr-python 3's ``inner_codecs``).
    """

    chunks: tuple[int, ...]
    shards: tuple[int, ...] | None
    inner_codecs: tuple[dict[str, Any], ...]

    @classmethod
    def from_v3(cls, grid_chunks: Sequence[int], codecs: Sequence[dict[str, Any]]) -> ChunkLayout:
        """The layout of a v3 array with regular grid ``grid_chunks`` and ``codecs``."""
        grid = tuple(int(c) for c in grid_chunks)
        for codec in codecs:
            if codec.get("name") == SHARDING:
                config = codec.get("configuration") or {}
                inner = tuple(int(c) for c in config["chunk_shape"])
                return cls(inner, grid, tuple(config.get("codecs") or ()))
        return cls(grid, None, tuple(codecs))

    @classmethod
    def unsharded(cls, grid_chunks: Sequence[int]) -> ChunkLayout:
        """The layout of a v2 array (v2 has no sharding; its codecs are not v3 codecs)."""
        return cls(tuple(int(c) for c in grid_chunks), None, ())

    @property
    def write_chunks(self) -> tuple[int, ...]:
        """The stored object: the shard if any, else the chunk."""
        return self.shards if self.shards is not None else self.chunks

    @property
    def chunks_per_shard(self) -> int:
        """Inner chunks in one shard (1 without sharding)."""
        if self.shards is None:
            return 1
        return math.prod(s // c for s, c in zip(self.shards, self.chunks))

    def stage(self, kind: str) -> tuple[dict[str, Any], ...]:
        """The inner codec documents of one kind (``"array_to_array"``...), in order."""
        return tuple(doc for doc in self.inner_codecs if _kind(doc) == kind)


def _kind(doc: dict[str, Any]) -> str:
    return to_v3_codec(doc).kind



def layout_of(metadata: ArrayMetadata) -> ChunkLayout:
    """The layout of an array's parsed metadata (v2 or v3).

    Examples
    --------
    >>> import chunkflow
    >>> layout_of(chunkflow.zeros(4, chunks=2, dtype="u1", zarr_format=2).metadata)
    ChunkLayout(chunks=(2,), shards=None, inner_codecs=())
    """
    if not isinstance(metadata, ArrayMetadataV3):
        return ChunkLayout.unsharded(metadata.chunks)
    return ChunkLayout.from_v3(metadata.chunks, metadata.codecs)
