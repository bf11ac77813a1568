"""Read-only properties of an array: shape, codecs, storage statistics, ``.info``."""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any

import numcodecs
import numpy as np

from chunkflow import config
from chunkflow.codecs import compressor_of
from chunkflow.core.array_info import array_info
from chunkflow.core.info import InfoReport
from chunkflow.core.node import NodeProperties
from chunkflow.core.reprs import array_html, array_repr
from chunkflow.engine.layout import (
    ARRAY_TO_ARRAY,
    ARRAY_TO_BYTES,
    BYTES_TO_BYTES,
    ChunkLayout,
    ceil_grid,
)
from chunkflow.metadata import ArrayMetadataV2

if TYPE_CHECKING:
    from chunkflow.core.attrs import Attributes
    from chunkflow.engine.chunk_io import ChunkIO
    from chunkflow.engine.options import ArrayOptions
    from chunkflow.metadata import ArrayMetadata
    from chunkflow.storage import Store
    from chunkflow.sync import Synchronizer

__all__ = ["ArrayProperties"]


class ArrayProperties(NodeProperties):
    """Mixin of :class:`chunkflow.Array` with everything that only describes it."""

    _metadata: ArrayMetadata
    _io: ChunkIO
    _store: Store
    _path: str
    _options: ArrayOptions
    _attrs: Attributes
    _layout: ChunkLayout

    @property
    def metadata(self) -> ArrayMetadata:
        """The parsed metadata document (``.zarray`` or ``zarr.json``).

        Like zarr-python 3's ``Array.metadata`` it has ``to_dict()`` (the JSON document)
        and ``shape``/``dtype``/``fill_value``/``zarr_format`` fields. Unlike it, its
        ``chunks`` is the regular chunk grid as stored (the *shard* shape of a sharded
        array, where zarr-python's ``metadata.chunks`` gives the inner chunk), its
        ``dtype`` is a numpy dtype and v3 ``codecs`` are JSON documents, not codec
        objects.

        Examples
        --------
        >>> import chunkflow
        >>> z = chunkflow.create_array(None, shape=(8,), chunks=(2,), shards=(4,), dtype="u1")
        >>> z.metadata.to_dict()["chunk_grid"]
        {'name': 'regular', 'configuration': {'chunk_shape': [4]}}
        """
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
        """The chunk shape; for a sharded array the *inner* chunk, as in zarr-python 3.

        Examples
        --------
        >>> import chunkflow
        >>> z = chunkflow.create_array(None, shape=(8, 8), chunks=(2, 2), shards=(4, 8),
        ...                            dtype="u1")
        >>> z.chunks, z.shards, z.write_chunks
        ((2, 2), (4, 8), (4, 8))
        """
        return self._layout.chunks

    @property
    def shards(self) -> tuple[int, ...] | None:
        """The shard shape, or ``None`` when the array is not sharded (always in v2)."""
        return self._layout.shards

    @property
    def write_chunks(self) -> tuple[int, ...]:
        """The shape of one stored object: the shard of a sharded array, else the chunk.

        A write that covers whole ``write_chunks`` never reads anything back and needs
        no lock; dask blocks of :func:`chunkflow.to_dask` and the writes of
        :func:`chunkflow.store` and :func:`chunkflow.map_chunks` fall on these edges.
        (zarr-python 3 has no public name for it; it uses the shard grid internally.)
        """
        return self._layout.write_chunks

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
        """Number of (inner) chunks along each dimension, as zarr-python 3 counts them."""
        return ceil_grid(self.shape, self.chunks)

    @property
    def nchunks(self) -> int:
        """Total number of (inner) chunks; a sharded array stores fewer objects
        (:attr:`nshards`)."""
        return math.prod(self.cdata_shape)

    @property
    def nshards(self) -> int:
        """Number of stored objects of the grid: shards, or chunks without sharding."""
        return self._io.grid.nchunks

    @property
    def nshards_initialized(self) -> int:
        """Number of stored objects (shards, or chunks without sharding) present."""
        return len(self._io.stored_chunks())

    @property
    def nchunks_initialized(self) -> int:
        """Stored shards times chunks per shard, as zarr-python 3.1 defines it (without
        sharding: the number of chunks present).

        Examples
        --------
        >>> import chunkflow
        >>> z = chunkflow.create_array(None, shape=(10,), chunks=(1,), shards=(2,), dtype="u1")
        >>> z[:5] = 1
        >>> z.nchunks_initialized, z.nshards_initialized
        (6, 3)
        """
        return self.nshards_initialized * self._layout.chunks_per_shard

    @property
    def nbytes_stored(self) -> int:
        """Bytes the array occupies in the store (metadata and chunks)."""
        return self._store.getsize_prefix(self._path)

    @property
    def compressor(self) -> numcodecs.abc.Codec | None:
        """The (first) compressor as a numcodecs codec, or ``None`` (zarr-python 2's
        spelling; see :attr:`compressors`). For a sharded array, the inner chunks'."""
        if isinstance(self._metadata, ArrayMetadataV2):
            return compressor_of(2, self._metadata.compressor)
        return compressor_of(3, self._layout.inner_codecs)

    @property
    def compressors(self) -> tuple[Any, ...]:
        """The bytes->bytes stage: v2 a tuple of the numcodecs compressor (or ``()``); v3
        the codec documents (checksums included), inside the shard if sharded.

        The documents equal ``codec.to_dict()`` of what zarr-python 3's ``compressors``
        holds.

        Examples
        --------
        >>> import chunkflow
        >>> chunkflow.create_array(None, shape=(4,), dtype="u1").compressors
        ({'name': 'zstd', 'configuration': {'level': 0, 'checksum': False}},)
        """
        if isinstance(self._metadata, ArrayMetadataV2):
            compressor = self.compressor
            return () if compressor is None else (compressor,)
        return self._layout.stage(BYTES_TO_BYTES)

    @property
    def filters(self) -> tuple[Any, ...] | list[Any] | None:
        """The array->array stage: v2 numcodecs filter codecs; v3 codec documents
        (inside the shard if sharded).

        A tuple, empty when there are none, as in zarr-python 3. Under the setting
        ``chunkflow.array.zarr-format = 2`` (zarr-python 2's spellings), the filters of
        a v2 array are what zarr-python 2 gave: a list of codecs, or ``None``.

        Examples
        --------
        >>> import chunkflow, numcodecs
        >>> z = chunkflow.zeros(4, zarr_format=2, filters=[numcodecs.Delta("<f8")])
        >>> z.filters
        (Delta(dtype='<f8'),)
        >>> with chunkflow.config.set({"chunkflow.array.zarr-format": 2}):
        ...     z.filters, chunkflow.zeros(4).filters
        ([Delta(dtype='<f8')], None)
        """
        if isinstance(self._metadata, ArrayMetadataV2):
            codecs = [numcodecs.get_codec(dict(doc)) for doc in self._metadata.filters or ()]
            if config.get("chunkflow.array.zarr-format") == 2:
                return codecs or None
            return tuple(codecs)
        return self._layout.stage(ARRAY_TO_ARRAY)

    @property
    def serializer(self) -> dict[str, Any] | None:
        """The array->bytes codec document of the (inner) chunks; ``None`` in v2."""
        if isinstance(self._metadata, ArrayMetadataV2):
            return None
        stage = self._layout.stage(ARRAY_TO_BYTES)
        return stage[0] if stage else None

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
        """A report of type, shape, shards and chunks, codec stages and store, like
        zarr-python 3's ``Array.info``.

        Where listing the store is cheap (memory, folder and zip stores) it also shows
        zarr-python 2's "No. bytes stored", "Storage ratio" and "Chunks Initialized"
        rows; elsewhere (object storage) it reads nothing from the store, and
        :meth:`info_complete` adds them.

        Examples
        --------
        >>> import chunkflow
        >>> z = chunkflow.create_array(None, shape=(4, 4), chunks=(2, 2), dtype="u1")
        >>> z[:2, :2] = 1
        >>> z.info["Chunk shape"], z.info["Filters"], z.info["Chunks Initialized"]
        ('(2, 2)', '()', '1/4')
        """
        return array_info(self)

    def info_complete(self) -> InfoReport:
        """:attr:`info` plus what needs a store listing: bytes stored, storage ratio
        and initialized shards (or chunks), as zarr-python 3's ``info_complete()``."""
        return array_info(self, complete=True)

    def __repr__(self) -> str:
        return array_repr(self)

    def _repr_html_(self) -> str:
        """Notebook display: a table of location, layout, codecs and sizes."""
        return array_html(self)
