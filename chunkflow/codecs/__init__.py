"""Codec pipelines for Zarr v2 and v3 chunks; all compression through numcodecs.

* :func:`v2_pipeline` — filters in order, then the compressor (``.zarray``).
* :func:`v3_pipeline` — array->array, one array->bytes, bytes->bytes (``zarr.json``).
* :func:`normalize_v2_compressor`, :func:`normalize_v2_filters`,
  :func:`normalize_v3_codecs` — user input to stored documents.
* v3 codec objects: :class:`BytesCodec`, :class:`TransposeCodec`, :class:`BloscCodec`,
  :class:`GzipCodec`, :class:`ZstdCodec`, :class:`Crc32cCodec`,
  :class:`VLenUTF8Codec`, :class:`VLenBytesCodec`, :class:`NumcodecsCodec`.

Examples
--------
>>> import numpy as np
>>> codecs = normalize_v3_codecs(None, dtype="uint16")
>>> p = v3_pipeline("uint16", (8, 8), codecs)
>>> chunk = np.arange(64, dtype="uint16").reshape(8, 8)
>>> out = np.empty_like(chunk)
>>> p.decode_into(p.encode(chunk), out)
>>> bool((out == chunk).all())
True
"""

from __future__ import annotations

from typing import Any, Protocol

import numpy as np

from chunkflow.codecs.normalize import (
    CodecLike,
    compressor_of,
    default_v2_compressor,
    evolved,
    normalize_v2_compressor,
    normalize_v2_filters,
    normalize_v3_codecs,
    object_serializer,
    to_v3_codec,
)
from chunkflow.codecs.pipeline_v2 import OBJECT_CODEC_IDS, V2Pipeline, v2_pipeline
from chunkflow.codecs.pipeline_v3 import V3Pipeline, v3_pipeline
from chunkflow.codecs.registry import NumcodecsCodec, V3Codec, codec_from_json
from chunkflow.codecs.v3_codecs import (
    BloscCodec,
    BytesCodec,
    Crc32cCodec,
    GzipCodec,
    TransposeCodec,
    VLenBytesCodec,
    VLenUTF8Codec,
    ZstdCodec,
)

__all__ = [
    "OBJECT_CODEC_IDS",
    "BloscCodec",
    "BytesCodec",
    "CodecLike",
    "CodecPipeline",
    "Crc32cCodec",
    "GzipCodec",
    "NumcodecsCodec",
    "TransposeCodec",
    "V2Pipeline",
    "V3Codec",
    "V3Pipeline",
    "VLenBytesCodec",
    "VLenUTF8Codec",
    "ZstdCodec",
    "codec_from_json",
    "compressor_of",
    "default_v2_compressor",
    "evolved",
    "normalize_v2_compressor",
    "normalize_v2_filters",
    "normalize_v3_codecs",
    "object_serializer",
    "to_v3_codec",
    "v2_pipeline",
    "v3_pipeline",
]


class CodecPipeline(Protocol):
    """What the array layer needs from a pipeline (both versions implement it)."""

    dtype: np.dtype[Any]
    chunk_shape: tuple[int, ...]

    def encode(self, chunk: np.ndarray, *, detached: bool = True) -> bytes | memoryview:
        """Encode one chunk of exactly ``chunk_shape`` (``detached=False``: the result
        may be a view of ``chunk``)."""

    def decode(self, data: bytes | memoryview) -> np.ndarray:
        """Decode to a new writable ``chunk_shape`` array of ``dtype``."""

    def decode_into(self, data: bytes | memoryview, out: np.ndarray) -> None:
        """Decode into `out` (decompressing in place when the layout allows)."""

    @property
    def stored_as_is(self) -> bool:
        """Whether a stored chunk is its decoded bytes (no codec transforms them)."""

    def stored_view(self, out: np.ndarray) -> memoryview | None:
        """The bytes of `out` when stored chunks are its very bytes (no codec
        transforms them), so that reading a chunk into them decodes it; else ``None``."""
