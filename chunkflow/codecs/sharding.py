"""The ``sharding_indexed`` codec: many inner chunks stored in one shard object.

A shard is the stored form of one (outer) chunk of the array: the encoded inner
chunks one after another, plus an index of ``(offset, nbytes)`` pairs, one per inner
chunk in C order, with ``2**64 - 1`` twice for an inner chunk that is not stored
(it reads as the fill value). The index is encoded with ``index_codecs`` (by default
little-endian ``bytes`` + ``crc32c``) and sits at the ``end`` (default) or ``start``.

A shard is decoded and encoded whole here: reads of part of a shard fetch the whole
shard object (the decoded-chunk cache then serves the rest of it).

Examples
--------
>>> import numpy as np
>>> from chunkflow.codecs.pipeline_v3 import v3_pipeline
>>> sharded = {"name": "sharding_indexed", "configuration": {
...     "chunk_shape": [2, 2], "codecs": [{"name": "bytes"}],
...     "index_codecs": [{"name": "bytes", "configuration": {"endian": "little"}},
...                      {"name": "crc32c"}]}}
>>> p = v3_pipeline("uint8", (4, 4), [sharded], fill_value=np.uint8(0))
>>> shard = np.zeros((4, 4), "uint8"); shard[0, 0] = 7
>>> len(p.encode(shard))  # one stored inner chunk (4 bytes) + index (4 x 16 + 4 bytes)
72
>>> int(p.decode(p.encode(shard))[0, 0])
7
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np

from chunkflow.codecs.stages import BufferLike, as_u8
from chunkflow.errors import ChunkDecodeError, UnsupportedCodecError
from chunkflow.metadata import is_all_fill

__all__ = ["ShardingCodec", "ShardingStage"]

#: Offset and size of an inner chunk that is not stored.
MISSING = 2**64 - 1

_DEFAULT_INDEX_CODECS = (
    {"name": "bytes", "configuration": {"endian": "little"}},
    {"name": "crc32c"},
)


@dataclass(frozen=True)
class ShardingCodec:
    """``sharding_indexed``: array->bytes; inner chunks of ``chunk_shape`` plus an index.

    ``codecs`` and ``index_codecs`` are kept as their JSON documents; the pipeline
    builds (and so validates) them when the array is opened.

    Examples
    --------
    >>> c = ShardingCodec.from_json({"name": "sharding_indexed", "configuration": {
    ...     "chunk_shape": [32, 32], "codecs": ["bytes"]}})
    >>> c.chunk_shape, c.index_location, c.to_json()["configuration"]["index_codecs"][1]
    ((32, 32), 'end', {'name': 'crc32c'})
    """

    chunk_shape: tuple[int, ...]
    codecs: tuple[Any, ...]
    index_codecs: tuple[Any, ...] = _DEFAULT_INDEX_CODECS
    index_location: str = "end"
    name: ClassVar[str] = "sharding_indexed"
    kind: ClassVar[str] = "array_to_bytes"

    def __post_init__(self) -> None:
        if not self.chunk_shape or not all(
            isinstance(n, int) and not isinstance(n, bool) and n >= 1 for n in self.chunk_shape
        ):
            raise UnsupportedCodecError(
                f"codec 'sharding_indexed': chunk_shape must be a list of integers >= 1, "
                f"got {list(self.chunk_shape)!r}"
            )
        if self.index_location not in ("start", "end"):
            raise UnsupportedCodecError(
                "codec 'sharding_indexed': index_location must be 'start' or 'end', got "
                f"{self.index_location!r}"
            )
        for key, value in (("codecs", self.codecs), ("index_codecs", self.index_codecs)):
            if not value:
                raise UnsupportedCodecError(
                    f"codec 'sharding_indexed': {key} must be a non-empty list of codecs"
                )

    def to_json(self) -> dict[str, Any]:
        return {"name": self.name, "configuration": {
            "chunk_shape": list(self.chunk_shape),
            "codecs": [_codec_json(c) for c in self.codecs],
            "index_codecs": [_codec_json(c) for c in self.index_codecs],
            "index_location": self.index_location,
        }}

    @classmethod
    def from_json(cls, doc: Any) -> ShardingCodec:
        config = doc.get("configuration") if isinstance(doc, dict) else None
        if not isinstance(config, dict):
            raise UnsupportedCodecError(
                f"codec 'sharding_indexed' needs a configuration object, got {doc!r}"
            )
        unknown = sorted(set(config) - {"chunk_shape", "codecs", "index_codecs", "index_location"})
        if unknown:
            raise UnsupportedCodecError(
                f"codec 'sharding_indexed': unknown configuration keys {unknown} in {doc!r}"
            )
        shape, codecs = config.get("chunk_shape"), config.get("codecs")
        index_codecs = config.get("index_codecs", list(_DEFAULT_INDEX_CODECS))
        if not (isinstance(shape, list) and isinstance(codecs, list)
                and isinstance(index_codecs, list)):
            raise UnsupportedCodecError(
                "codec 'sharding_indexed': chunk_shape, codecs and index_codecs must be "
                f"lists, got {doc!r}"
            )
        return cls(tuple(shape), tuple(codecs), tuple(index_codecs),
                   config.get("index_location", "end"))

    def numcodecs_config(self) -> dict[str, Any]:
        # Reached when a sharding codec is given as a Zarr v2 compressor or filter.
        raise UnsupportedCodecError(
            "codec 'sharding_indexed' exists only in Zarr v3; it cannot be a v2 compressor "
            "or filter"
        )


def _codec_json(codec: Any) -> Any:
    return codec.to_json() if hasattr(codec, "to_json") else codec


PipelineFactory = Callable[[np.dtype, Sequence[int], Sequence[Any]], Any]


class ShardingStage:
    """Encode a shard-shaped array to shard bytes and back (the pipeline's array->bytes).

    ``make_pipeline(dtype, chunk_shape, codecs)`` builds the inner chunks' and the
    index's pipelines (passed in, since they are v3 pipelines themselves).
    """

    def __init__(
        self,
        codec: ShardingCodec,
        spec: tuple[tuple[int, ...], np.dtype],
        fill_value: Any,
        make_pipeline: PipelineFactory,
    ) -> None:
        self.shape, self.dtype = spec
        inner = codec.chunk_shape
        if len(inner) != len(self.shape) or any(s % c for s, c in zip(self.shape, inner)):
            raise UnsupportedCodecError(
                f"codec 'sharding_indexed': the inner chunk shape {list(inner)} must divide "
                f"the shard shape {list(self.shape)} in every dimension"
            )
        self.grid = tuple(s // c for s, c in zip(self.shape, inner))
        self.fill_value = np.zeros((), self.dtype)[()] if fill_value is None else fill_value
        self.inner = make_pipeline(self.dtype, inner, codec.codecs)
        self.index = make_pipeline(np.dtype("<u8"), (*self.grid, 2), codec.index_codecs)
        self.index_nbytes = len(as_u8(self.index.encode(np.zeros((*self.grid, 2), "<u8"))))
        self.index_at_start = codec.index_location == "start"
        self.regions = [
            tuple(slice(i * c, (i + 1) * c) for i, c in zip(coords, inner))
            for coords in itertools.product(*(range(n) for n in self.grid))
        ]

    def encode(self, shard: np.ndarray) -> bytes:
        """Shard bytes: the inner chunks that are not all fill, then (or before) the index."""
        index = np.full((len(self.regions), 2), MISSING, dtype="<u8")
        parts: list[bytes] = []
        offset = self.index_nbytes if self.index_at_start else 0
        for i, region in enumerate(self.regions):
            chunk = shard[region]
            if is_all_fill(chunk, self.fill_value):
                continue  # not stored: reads as the fill value, like zarr-python's shards
            data = bytes(self.inner.encode(chunk))
            index[i] = (offset, len(data))
            offset += len(data)
            parts.append(data)
        encoded_index = bytes(self.index.encode(index.reshape(*self.grid, 2)))
        return b"".join([encoded_index, *parts] if self.index_at_start else [*parts, encoded_index])

    def decode(self, data: BufferLike) -> np.ndarray:
        """A new shard-shaped array; inner chunks not stored hold the fill value."""
        raw = as_u8(data)
        size = len(raw)
        if size < self.index_nbytes:
            raise ChunkDecodeError(
                f"shard of {size} bytes is shorter than its index ({self.index_nbytes} bytes)"
            )
        where = slice(0, self.index_nbytes) if self.index_at_start else slice(size - self.index_nbytes, size)
        index = np.asarray(self.index.decode(raw[where])).reshape(-1, 2)
        out = np.empty(self.shape, self.dtype)
        for (offset, nbytes), region in zip(index.tolist(), self.regions):
            if offset == MISSING and nbytes == MISSING:
                out[region] = self.fill_value
                continue
            if offset + nbytes > size:
                raise ChunkDecodeError(
                    f"shard index points at bytes {offset}..{offset + nbytes} of a "
                    f"{size}-byte shard (inner chunk {region})"
                )
            self.inner.decode_into(raw[offset:offset + nbytes], out[region])
        return out
