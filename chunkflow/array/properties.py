"""Read-only properties of an array: shape, codecs, storage statistics, ``.info``."""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any

import numpy as np
import numcodecs

from chunkflow.codecs import compressor_of
from chunkflow.metadata import ArrayMetadataV2
from chunkflow.node.info import InfoReport, format_bytes
from chunkflow.node.base import NodeProperties
from chunkflow.node import array_html, array_repr, describe_codecs

if TYPE_CHECKING:
    from chunkflow.node.attrs import Attributes
    from chunkflow.node.documents import ArrayMetadata
    from chunkflow.array.chunk_io import ChunkIO
    from chunkflow.array.options import ArrayOptions
    from chunkflow.sync import Synchronizer
    from chunkflow.storage import Store

__all__ = ["ArrayProperties"]


class ArrayProperties(NodeProperties):
    """Mixin of :class:`chunkflow.Array` with everything that only describes it."""

    _metadata: ArrayMetadata
    _io: ChunkIO
    _store: Store
    _path: str
    _options: ArrayOptions
    _attrs: Attributes

    @property
    def metadata(self) -> ArrayMetadata:
        """The parsed metadata document (``.zarray`` or ``zarr.json``)."""
        return self._metadata

    @property
    def zarr_format(self) -> int:
        """2 or 3."""
        return self._metadata.zarr_format

    @property
    def read_only(self) -> bool:
        """Whether writes are refused."""
        return self._options.read_only

    @property
    def write_empty_chunks(self) -> bool:
        """Whether chunks equal to ``fill_value`` everywhere are stored."""
        return self._options.write_empty_chunks

    @property
    def synchronizer(self) -> Synchronizer | None:
        """The synchronizer that locks chunks for writes, if any."""
        return self._options.synchronizer

    @property
    def options(self) -> ArrayOptions:
        """Per-handle options (read-only, empty chunks, pickle, locks, cache)."""
        return self._options

    @property
    def shape(self) -> tuple[int, ...]:
        return self._metadata.shape

    @property
    def chunks(self) -> tuple[int, ...]:
        return self._metadata.chunks

    @property
    def dtype(self) -> np.dtype:
        return self._metadata.dtype

    @property
    def fill_value(self) -> Any:
        """The value of missing chunks and of edge-chunk padding."""
        return self._metadata.fill_value

    @property
    def order(self) -> str:
        """Memory layout inside a chunk: ``"C"`` or ``"F"``."""
        if isinstance(self._metadata, ArrayMetadataV2):
            return self._metadata.order
        for codec in self._metadata.codecs:
            if codec.get("name") == "transpose":
                order = list(codec.get("configuration", {}).get("order", []))
                if order == list(range(self.ndim))[::-1] and self.ndim > 1:
                    return "F"
        return "C"

    @property
    def dimension_names(self) -> tuple[str | None, ...] | None:
        return self._metadata.dimension_names

    @property
    def ndim(self) -> int:
        return len(self._metadata.shape)

    @property
    def size(self) -> int:
        return math.prod(self._metadata.shape)

    @property
    def itemsize(self) -> int:
        return self._metadata.dtype.itemsize

    @property
    def nbytes(self) -> int:
        """Bytes of the whole array decoded (``size * itemsize``)."""
        return self.size * self.itemsize

    @property
    def cdata_shape(self) -> tuple[int, ...]:
        """Number of chunks along each dimension."""
        return self._io.grid.grid_shape

    @property
    def nchunks(self) -> int:
        """Total number of chunks of the grid."""
        return self._io.grid.nchunks

    @property
    def nchunks_initialized(self) -> int:
        """Number of chunks present in the store."""
        return len(self._io.stored_chunks())

    @property
    def nbytes_stored(self) -> int:
        """Bytes the array occupies in the store (metadata and chunks)."""
        return self._store.getsize_prefix(self._path)

    @property
    def compressor(self) -> numcodecs.abc.Codec | None:
        """The (first) compressor as a numcodecs codec, or ``None``."""
        if isinstance(self._metadata, ArrayMetadataV2):
            return compressor_of(2, self._metadata.compressor)
        return compressor_of(3, self._metadata.codecs)

    @property
    def filters(self) -> tuple[Any, ...] | None:
        """v2: numcodecs filter codecs; v3: the array->array codec documents."""
        if isinstance(self._metadata, ArrayMetadataV2):
            if not self._metadata.filters:
                return None
            return tuple(numcodecs.get_codec(dict(doc)) for doc in self._metadata.filters)
        names = [codec.get("name") for codec in self._metadata.codecs]
        cut = next((i for i, n in enumerate(names) if n in ("bytes", "vlen-utf8")), 0)
        return tuple(self._metadata.codecs[:cut]) or None

    @property
    def codecs(self) -> tuple[dict[str, Any], ...]:
        """The codec documents: v3 ``codecs``; v2 filters then compressor configs."""
        if isinstance(self._metadata, ArrayMetadataV2):
            docs = list(self._metadata.filters or ())
            if self._metadata.compressor is not None:
                docs.append(self._metadata.compressor)
            return tuple(docs)
        return tuple(self._metadata.codecs)

    @property
    def info(self) -> InfoReport:
        """A report of type, shape, codecs and storage statistics."""
        stored = self.nbytes_stored
        rows = [
            ("Type", type(self).__name__),
            ("Name", self.name),
            ("Zarr format", str(self.zarr_format)),
            ("Data type", str(self.dtype)),
            ("Shape", str(self.shape)),
            ("Chunk shape", str(self.chunks)),
            ("Order", self.order),
            ("Read-only", str(self.read_only)),
            ("Codecs", describe_codecs(self.codecs)),
            ("Store type", type(self._store).__name__),
            ("No. bytes", format_bytes(self.nbytes)),
            ("No. bytes stored", format_bytes(stored)),
            ("Storage ratio", f"{self.nbytes / stored:.1f}" if stored else "-"),
            ("Chunks initialized", f"{self.nchunks_initialized}/{self.nchunks}"),
        ]
        return InfoReport(rows)

    def __repr__(self) -> str:
        return array_repr(self)

    def _repr_html_(self) -> str:
        """Notebook display: a table of location, layout, codecs and sizes."""
        return array_html(self)
