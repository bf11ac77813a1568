"""Reading and writing the chunks a selection touches.

:class:`ChunkIO` joins one array's chunk grid, key encoding, codec pipeline and store.
It receives chunk projections from the indexing layer and moves data between the
store and an output (or input) buffer:

- reads fetch chunks in batches (``Store.get_many``) and decode chunks the selection
  covers wholly straight into the output buffer;
- writes encode wholly overwritten chunks without reading them, and read-modify-write
  the others;
- chunks equal to the fill value everywhere are deleted instead of stored unless
  ``write_empty_chunks`` is set.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Sequence

import numpy as np

from chunkflow.codecs import CodecPipeline
from chunkflow.errors import ChunkDecodeError, ChunkEncodeError
from chunkflow.grid import ChunkKeyEncoding, RegularChunkGrid
from chunkflow.indexing import ChunkProjection
from chunkflow.storage import Store

from chunkflow.array.parallel import PARALLEL_MIN_CHUNK_BYTES, map_groups

__all__ = ["BATCH_BYTES", "ChunkIO", "is_all_fill"]

#: Decoded bytes of the chunks fetched by one store call.
BATCH_BYTES = 4 * 1024 * 1024


def is_all_fill(chunk: np.ndarray, fill_value: np.generic) -> bool:
    """Whether every element of ``chunk`` equals ``fill_value`` (NaN equals NaN).

    Examples
    --------
    >>> is_all_fill(np.full(4, np.nan), np.float64("nan"))
    True
    >>> is_all_fill(np.array([0, 0, 1]), np.int64(0))
    False
    """
    if chunk.size == 0:
        return True
    kind = chunk.dtype.kind
    if kind in "fc" and np.isnan(fill_value):
        return bool(np.isnan(chunk).all())
    if kind in "mM" and np.isnat(fill_value):
        return bool(np.isnat(chunk).all())
    # The first element decides most data chunks without a full comparison (indexed,
    # not reshaped: reshaping a strided view would copy the whole chunk).
    if chunk[(0,) * chunk.ndim] != fill_value:
        return False
    return bool((chunk == fill_value).all())


@dataclass
class ChunkIO:
    """Chunk-level reads and writes of one array.

    Parameters
    ----------
    store : Store
        Where the encoded chunks live.
    path : str
        The array's path inside the store (``""`` for the root).
    grid : RegularChunkGrid
        The array's chunk grid.
    key_encoding : ChunkKeyEncoding
        How chunk coordinates become keys.
    pipeline : CodecPipeline
        Encodes and decodes one chunk.
    fill_value : numpy scalar
        The value of missing chunks and of the padding of edge chunks.
    write_empty_chunks : bool
        Store chunks that equal ``fill_value`` everywhere (``False`` deletes them).
    """

    store: Store
    path: str
    grid: RegularChunkGrid
    key_encoding: ChunkKeyEncoding
    pipeline: CodecPipeline
    fill_value: np.generic
    write_empty_chunks: bool = False
    _prefix: str = field(init=False, repr=False)
    _full_chunks: tuple[int, ...] = field(init=False, repr=False)
    _parallel: bool = field(init=False, repr=False)

    def __post_init__(self) -> None:
        self._prefix = f"{self.path}/" if self.path else ""
        # Chunks with an index below this, in every dimension, are interior (not cut
        # by the array's edge): a cheap test on the hot path.
        self._full_chunks = tuple(s // c for s, c in zip(self.grid.shape, self.grid.chunks))
        chunk_bytes = self.pipeline.dtype.itemsize
        for size in self.grid.chunks:
            chunk_bytes *= size
        self._parallel = chunk_bytes >= PARALLEL_MIN_CHUNK_BYTES
        # Fetch a few MiB per store call: enough keys per call for remote stores to
        # batch requests, few enough that fetched buffers are decoded and freed before
        # the next call (memory that is reused stays mapped; fresh memory page-faults:
        # holding 64 fetched 1 MiB chunks at once made reading 8x slower).
        self._batch = max(1, BATCH_BYTES // max(chunk_bytes, 1))

    def is_interior(self, coords: tuple[int, ...]) -> bool:
        """Whether the chunk lies wholly inside the array (not an edge chunk)."""
        for c, full in zip(coords, self._full_chunks):
            if c >= full:
                return False
        return True

    def key(self, coords: tuple[int, ...]) -> str:
        """The store key of the chunk at ``coords``."""
        return self._prefix + self.key_encoding.encode(coords)

    def empty_chunk(self) -> np.ndarray:
        """A new chunk-shaped array filled with the fill value."""
        return np.full(self.grid.chunks, self.fill_value, dtype=self.pipeline.dtype)

    def decode(self, key: str, data: bytes) -> np.ndarray:
        """Decode one chunk, naming the array and chunk key if it is corrupt."""
        try:
            return self.pipeline.decode(data)
        except Exception as err:
            raise self._decode_error(key, err) from err

    def stored_chunks(self) -> list[tuple[tuple[int, ...], str]]:
        """``(coords, key)`` of every chunk of the grid present in the store."""
        ndim = len(self.grid.shape)
        start = len(self._prefix)
        found = []
        for key in self.store.list_prefix(self.path):
            coords = self.key_encoding.decode(key[start:], ndim)
            if coords is not None and self.grid.contains(coords):
                found.append((coords, key))
        return found

    def read_chunk(self, coords: tuple[int, ...]) -> np.ndarray:
        """The decoded chunk at ``coords`` (fill value when it is not stored)."""
        key = self.key(coords)
        try:
            data = self.store[key]
        except KeyError:
            return self.empty_chunk()
        return self.decode(key, data)

    # -- reads -----------------------------------------------------------------

    def read(self, projections: Sequence[ChunkProjection], out: np.ndarray) -> None:
        """Fill ``out`` from the chunks named by ``projections``."""
        map_groups(lambda group: self._read_group(group, out), projections,
                   parallel=self._parallel)

    def _read_group(self, group: Sequence[ChunkProjection], out: np.ndarray) -> None:
        for start in range(0, len(group), self._batch):
            self._read_batch(group[start:start + self._batch], out)

    def _read_batch(self, group: Sequence[ChunkProjection], out: np.ndarray) -> None:
        keys = [self.key(p.chunk_coords) for p in group]
        found = self.store.get_many(keys)
        for proj, key in zip(group, keys):
            data = found.get(key)
            if data is None:
                out[proj.out_selection] = self.fill_value
            elif proj.is_complete_chunk and self.is_interior(proj.chunk_coords):
                # A whole interior chunk decodes straight into the output (its region
                # is a view: the indexer makes complete chunks' out_selection slices).
                try:
                    # out[()] of a 0-d array is a scalar, out[...] a view.
                    view = out[proj.out_selection] if proj.out_selection else out[...]
                    self.pipeline.decode_into(data, view)
                except Exception as err:
                    raise self._decode_error(key, err) from err
            else:
                out[proj.out_selection] = self.decode(key, data)[proj.chunk_selection]

    def _decode_error(self, key: str, err: Exception) -> ChunkDecodeError:
        return ChunkDecodeError(
            f"array {self.path or '/'!r}: chunk {key!r} could not be decoded: {err}"
        )

    # -- writes ----------------------------------------------------------------

    def write(self, projections: Sequence[ChunkProjection], value: np.ndarray) -> None:
        """Write ``value`` (shaped like the indexer's buffer, or 0-d) to the chunks."""
        scalar = _ScalarChunk(self, value) if value.ndim == 0 else None
        map_groups(lambda group: self._write_group(group, value, scalar), projections,
                   parallel=self._parallel)

    def _write_group(
        self,
        group: Sequence[ChunkProjection],
        value: np.ndarray,
        scalar: _ScalarChunk | None,
    ) -> None:
        for start in range(0, len(group), self._batch):
            self._write_batch(group[start:start + self._batch], value, scalar)

    def _write_batch(
        self,
        group: Sequence[ChunkProjection],
        value: np.ndarray,
        scalar: _ScalarChunk | None,
    ) -> None:
        keys = [self.key(p.chunk_coords) for p in group]
        partial = [k for p, k in zip(group, keys) if not p.is_complete_chunk]
        existing = self.store.get_many(partial) if partial else {}
        to_store: dict[str, bytes] = {}
        to_delete: list[str] = []
        for proj, key in zip(group, keys):
            interior = proj.is_complete_chunk and self.is_interior(proj.chunk_coords)
            if interior and scalar is not None:
                encoded = scalar.encoded()
                if encoded is None:
                    to_delete.append(key)
                else:
                    to_store[key] = encoded
                continue
            part = value if scalar is not None else value[proj.out_selection]
            if interior:
                chunk = part
            else:
                data = existing.get(key)
                chunk = self.empty_chunk() if data is None else self.decode(key, data)
                chunk[proj.chunk_selection] = part
            if not self.write_empty_chunks and is_all_fill(chunk, self.fill_value):
                to_delete.append(key)
            else:
                to_store[key] = self.encode(key, chunk)
        if to_store:
            self.store.set_many(to_store)
        if to_delete:
            self.discard(to_delete)

    def discard(self, keys: Sequence[str]) -> None:
        """Remove chunks; where the store cannot delete (zip), store fill chunks instead."""
        if getattr(self.store, "supports_deletes", True):
            self.store.delete_many(keys)
            return
        present = [key for key in keys if key in self.store]
        if present:
            encoded = bytes(self.encode(present[0], self.empty_chunk()))
            self.store.set_many({key: encoded for key in present})

    def encode(self, key: str, chunk: np.ndarray) -> bytes:
        """Encode one chunk, naming the array and chunk key on failure."""
        try:
            return self.pipeline.encode(chunk)
        except Exception as err:
            raise ChunkEncodeError(
                f"array {self.path or '/'!r}: chunk {key!r} could not be encoded: {err}"
            ) from err


class _ScalarChunk:
    """One encoding of a whole chunk of a scalar, shared by every interior chunk."""

    def __init__(self, io: ChunkIO, value: np.ndarray) -> None:
        self._io = io
        self._value = value
        self._encoded: bytes | None = None
        self._done = False

    def encoded(self) -> bytes | None:
        """The encoded chunk, or ``None`` when it equals the fill value and is skipped."""
        if not self._done:
            chunk = np.full(self._io.grid.chunks, self._value, dtype=self._io.pipeline.dtype)
            if self._io.write_empty_chunks or not is_all_fill(chunk, self._io.fill_value):
                self._encoded = bytes(self._io.encode("<all chunks>", chunk))
            self._done = True
        return self._encoded
