"""The ``sharding_indexed`` codec: many inner chunks stored in one shard object.

A shard is the stored form of one (outer) chunk of the array: the encoded inner
chunks one after another, plus an index of ``(offset, nbytes)`` pairs, one per inner
chunk in C order, with ``2**64 - 1`` twice for an inner chunk that is not stored
(it reads as the fill value). The index is encoded with ``index_codecs`` (by default
little-endian ``bytes`` + ``crc32c``) and sits at the ``end`` (default) or ``start``.

A shard is encoded whole here and decoded whole by :meth:`ShardingStage.decode`; the
array layer reads part of a shard with :meth:`ShardingStage.index_range`,
:meth:`ShardingStage.parse_index` and the inner pipeline (see
:mod:`chunkflow.engine.shard_reads`): the index and the inner chunks it needs, no more.

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

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, ClassVar

import numpy as np

from chunkflow.buffers import scratch_buffer
from chunkflow.codecs.stages import BufferLike, as_u8
from chunkflow.errors import ChunkDecodeError, UnsupportedCodecError
from chunkflow.metadata import fill_mask, is_all_fill

if TYPE_CHECKING:
    from chunkflow.metadata.json import JSONValue

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
        # An empty `codecs` is left to the completion of a new array's codecs (which
        # adds the serializer, as zarr-python's create_array(shards=, compressors=None)
        # writes [bytes]); a stored one is refused when the shard pipeline is built.
        if not self.index_codecs:
            raise UnsupportedCodecError(
                "codec 'sharding_indexed': index_codecs must be a non-empty list of codecs"
            )

    def to_json(self) -> dict[str, Any]:
        return {"name": self.name, "configuration": {
            "chunk_shape": list(self.chunk_shape),
            "codecs": [_codec_json(c) for c in self.codecs],
            "index_codecs": [_codec_json(c) for c in self.index_codecs],
            "index_location": self.index_location,
        }}

    @classmethod
    def from_json(cls, doc: JSONValue) -> ShardingCodec:
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
        # Bare names (the spec's short form of {"name": name}) written out.
        return cls(tuple(shape), tuple(_spelled_out(c) for c in codecs),
                   tuple(_spelled_out(c) for c in index_codecs),
                   config.get("index_location", "end"))

    def numcodecs_config(self) -> dict[str, Any]:
        # Reached when a sharding codec is given as a Zarr v2 compressor or filter.
        raise UnsupportedCodecError(
            "codec 'sharding_indexed' exists only in Zarr v3; it cannot be a v2 compressor "
            "or filter"
        )


def _spelled_out(codec: Any) -> Any:
    return {"name": codec} if isinstance(codec, str) else codec


def _codec_json(codec: Any) -> Any:
    return codec.to_json() if hasattr(codec, "to_json") else codec


PipelineFactory = Callable[[np.dtype, Sequence[int], Sequence[Any]], Any]


class ShardingStage:
    """Encode a shard-shaped array to shard bytes and back (the pipeline's array->bytes).

    ``make_pipeline(dtype, chunk_shape, codecs)`` builds the inner chunks' and the
    index's pipelines (passed in, since they are v3 pipelines themselves).

    Nothing here is per inner chunk until a shard is encoded or decoded: a shard of
    4096x4096 inner chunks of 1x1 costs no more to open than one of 4x4. Decoding works
    on the whole index with numpy (which inner chunks are stored, whether their byte
    ranges fit) and loops only over the inner chunks that are stored.
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
        self.inner_shape = tuple(inner)
        self.grid = tuple(s // c for s, c in zip(self.shape, inner))
        self.count = math.prod(self.grid)
        self.fill_value: np.generic = np.zeros(1, self.dtype)[0] if fill_value is None else fill_value
        if not codec.codecs:
            raise UnsupportedCodecError(
                "codec 'sharding_indexed': codecs must be a non-empty list of codecs holding "
                "an array->bytes codec (such as bytes)"
            )
        self.inner = make_pipeline(self.dtype, inner, codec.codecs)
        self.index = make_pipeline(np.dtype("<u8"), (*self.grid, 2), codec.index_codecs)
        # The index codecs have a fixed overhead (bytes + crc32c): measure it on a
        # one-entry index instead of encoding a full one (256 MiB for 16M inner chunks).
        one = make_pipeline(np.dtype("<u8"), (1,) * len(self.grid) + (2,), codec.index_codecs)
        overhead = len(as_u8(one.encode(np.zeros((1,) * len(self.grid) + (2,), "<u8")))) - 16
        self.index_nbytes = 16 * self.count + overhead
        self.index_at_start = codec.index_location == "start"
        # Inner chunks of 64 KiB and more are checked for fill one by one (see encode).
        inner_bytes = self.dtype.itemsize * math.prod(inner)
        self._stage_inner = inner_bytes >= 65536 and not (
            self.dtype.hasobject or self.dtype.kind == "V")

    def region(self, flat: int) -> tuple[slice, ...]:
        """The part of the shard that inner chunk number ``flat`` (C order) covers."""
        region = []
        for count, size in zip(self.grid[::-1], self.inner_shape[::-1]):
            flat, i = divmod(flat, count)
            region.append(slice(i * size, i * size + size))
        return tuple(region[::-1])

    def _staged_inner(self, inner: np.ndarray) -> np.ndarray:
        """``inner`` copied into this thread's reused contiguous buffer (which the
        inner pipeline then encodes as it is; a raw result is copied out of it)."""
        staged = scratch_buffer(self.inner_shape, self.dtype, slot="shard inner")
        np.copyto(staged, inner)
        return staged

    def _blocks(self, shard: np.ndarray) -> np.ndarray:
        """``shard`` viewed as (grid..., inner chunk...) without copying."""
        split = [n for pair in zip(self.grid, self.inner_shape) for n in pair]
        order = list(range(0, 2 * len(self.grid), 2)) + list(range(1, 2 * len(self.grid), 2))
        return shard.reshape(split).transpose(order)

    def _stored(self, shard: np.ndarray) -> np.ndarray:
        """Flat numbers of the inner chunks that hold something besides the fill value."""
        blocks = self._blocks(shard)
        inner_axes = tuple(range(len(self.grid), 2 * len(self.grid)))
        if blocks.dtype.kind == "O":
            return np.array([i for i in range(self.count)
                             if not is_all_fill(shard[self.region(i)], self.fill_value)],
                            dtype=np.intp)
        # Bit for bit: an inner chunk of -0.0 (or of another NaN) is not the fill.
        empty = fill_mask(blocks, self.fill_value).all(axis=inner_axes)
        return np.flatnonzero(~empty.reshape(-1))

    def encode(self, shard: np.ndarray) -> bytes:
        """Shard bytes: the inner chunks that are not all fill, then (or before) the index.

        Inner chunks all fill are not stored (they read as the fill value, like
        zarr-python's shards). Large inner chunks are copied one by one into a reused
        contiguous buffer, checked there and encoded from it (one pass over each);
        small ones are checked all at once first, so that a sparse shard of many tiny
        inner chunks costs no Python step per empty one.
        """
        shard = np.ascontiguousarray(shard) if not shard.flags.c_contiguous else shard
        index = np.full((self.count, 2), MISSING, dtype="<u8")
        parts: list[bytes] = []
        offset = self.index_nbytes if self.index_at_start else 0
        staged = self._staged_inner if self._stage_inner else None
        for i in (range(self.count) if staged is not None else self._stored(shard).tolist()):
            inner = shard[self.region(i)]
            if staged is not None:
                inner = staged(inner)
                if is_all_fill(inner, self.fill_value):
                    continue
            data = bytes(self.inner.encode(inner))
            index[i] = (offset, len(data))
            offset += len(data)
            parts.append(data)
        encoded_index = bytes(self.index.encode(index.reshape(*self.grid, 2)))
        return b"".join([encoded_index, *parts] if self.index_at_start else [*parts, encoded_index])

    def index_range(self, size: int) -> tuple[int, int]:
        """Where the index lies in a shard of ``size`` bytes: ``(start, stop)``.

        Raises ``ChunkDecodeError`` when the shard is shorter than its index.
        """
        if size < self.index_nbytes:
            raise ChunkDecodeError(
                f"shard of {size} bytes is shorter than its index ({self.index_nbytes} bytes)"
            )
        return (0, self.index_nbytes) if self.index_at_start else (size - self.index_nbytes, size)

    def parse_index(self, encoded: BufferLike, size: int) -> tuple[np.ndarray, np.ndarray]:
        """``(offsets, lengths)`` per inner chunk (C order) from the encoded index of a
        shard of ``size`` bytes; both ``MISSING`` for inner chunks not stored.

        Every stored range is checked to lie inside the shard, so a corrupt index can
        neither read past the shard nor make a reader fetch absurd ranges.
        """
        index = np.asarray(self.index.decode(as_u8(encoded))).reshape(-1, 2)
        offsets, lengths = index[:, 0], index[:, 1]
        stored = np.flatnonzero(~((offsets == MISSING) & (lengths == MISSING)))
        ends = offsets[stored] + lengths[stored]
        bad = (ends > size) | (ends < offsets[stored])  # past the end, or wrapped around
        if bad.any():
            first = int(stored[np.argmax(bad)])
            raise ChunkDecodeError(
                f"shard index points at bytes {int(offsets[first])}.."
                f"{int(offsets[first]) + int(lengths[first])} of a {size}-byte shard "
                f"(inner chunk {self.region(first)})"
            )
        return offsets, lengths

    def decode(self, data: BufferLike) -> np.ndarray:
        """A new shard-shaped array; inner chunks not stored hold the fill value."""
        raw = as_u8(data)
        size = len(raw)
        start, stop = self.index_range(size)
        offsets, lengths = self.parse_index(raw[start:stop], size)
        stored = np.flatnonzero(offsets != MISSING)
        out = np.full(self.shape, self.fill_value, self.dtype) if len(stored) < self.count \
            else np.empty(self.shape, self.dtype)
        for i, begin, length in zip(stored.tolist(), offsets[stored].tolist(),
                                    lengths[stored].tolist()):
            self.inner.decode_into(raw[begin:begin + length], out[self.region(i)])
        return out
