"""A read-only store of one array whose chunks are computed from their index.

:class:`SyntheticStore` holds no data: its ``zarr.json`` (or ``.zarray``) describes an
array, and the value of a chunk key is the encoded chunk that a formula of the chunk's
index gives. Each distinct content is encoded once and kept, so reading a million
chunks costs a dictionary look-up each, and no disk. With
:class:`~chunkflow.testing.sink.ChecksumStore` as the output, jobs over 10^6 chunks fit
on one machine (``benchmarks/bench_scale.py``).

Patterns (the formulas, see :class:`Pattern`):

- ``"ramp"``: the chunk with linear (C order) index ``n`` holds
  ``(n % period) * chunk_size + i``, ``i`` the element's linear index inside the chunk,
  cast to the dtype (``period`` distinct contents);
- ``"dots"``: 1 where every coordinate ``c`` has ``c % spacing < size``, else 0: cubes
  of side ``size`` on a lattice of step ``spacing`` (one content when the chunks are
  multiples of ``spacing``), so ``label`` finds ``prod(ceil(shape / spacing))`` objects
  when ``size < spacing``.

The store pickles by value (its parameters), so workers of a cluster read the same
chunks without any shared storage.

Examples
--------
>>> import numpy as np
>>> import chunkflow
>>> store = SyntheticStore((4, 6), (2, 3), "u2", period=2)
>>> chunkflow.open(store, mode="r")[:]
array([[ 0,  1,  2,  6,  7,  8],
       [ 3,  4,  5,  9, 10, 11],
       [ 0,  1,  2,  6,  7,  8],
       [ 3,  4,  5,  9, 10, 11]], dtype=uint16)
>>> dots = SyntheticStore((6,), (3,), "u1", pattern="dots", spacing=3, size=2)
>>> chunkflow.open(dots, mode="r")[:]
array([1, 1, 0, 1, 1, 0], dtype=uint8)
"""

from __future__ import annotations

import hashlib
import math
import threading
import weakref
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from chunkflow.errors import InvalidArgumentError, KeyNotFoundError, ReadOnlyError
from chunkflow.grid import ChunkKeyEncoding, RegularChunkGrid
from chunkflow.storage import MemoryStore, Store

__all__ = ["Pattern", "SyntheticStore"]

_PATTERNS = ("ramp", "dots")


@dataclass(frozen=True)
class Pattern:
    """The formula of a :class:`SyntheticStore`'s chunks (see the module).

    Parameters
    ----------
    name : {"ramp", "dots"}
    period : int
        ``ramp``: how many distinct chunk contents cycle.
    spacing, size : int
        ``dots``: the lattice step and the side of each cube.

    Examples
    --------
    >>> ramp = Pattern("ramp", period=3)
    >>> ramp.content((1, 1), (2, 2))  # the linear index 3, modulo the period
    (0,)
    >>> ramp.values((1,), (0, 0), (2, 2), np.dtype("u1"))
    array([[4, 5],
           [6, 7]], dtype=uint8)
    >>> Pattern("dots", spacing=2, size=1).values((0,), (0,), (4,), np.dtype("u1"))
    array([1, 0, 1, 0], dtype=uint8)
    """

    name: str = "ramp"
    period: int = 16
    spacing: int = 8
    size: int = 4

    def __post_init__(self) -> None:
        if self.name not in _PATTERNS:
            raise InvalidArgumentError(f"pattern must be one of {_PATTERNS}, got {self.name!r}")
        for field, value, least in (("period", self.period, 1), ("spacing", self.spacing, 1),
                                    ("size", self.size, 0)):
            if int(value) < least:
                raise InvalidArgumentError(f"pattern {field} must be at least {least}, "
                                           f"got {value!r}")

    def content(self, coords: tuple[int, ...], grid_shape: tuple[int, ...]) -> tuple[int, ...]:
        """What the chunk at ``coords`` holds, as a key shared by equal chunks (given the
        chunk shape, which is the same for every chunk of a store)."""
        if self.name == "ramp":
            linear = 0
            for index, count in zip(coords, grid_shape):  # C order, without numpy's call
                linear = linear * count + index
            return (linear % self.period,)
        return coords  # dots: reduced to the origin modulo the spacing by the store

    def values(self, content: tuple[int, ...], origin: tuple[int, ...],
               chunks: tuple[int, ...], dtype: np.dtype[Any]) -> np.ndarray:
        """The full (unclipped) chunk of ``content`` whose first element is ``origin``."""
        if self.name == "ramp":
            size = math.prod(chunks)
            flat = np.arange(size, dtype=np.int64) + content[0] * size
            return flat.astype(dtype, casting="unsafe").reshape(chunks)
        inside = np.ones(chunks, dtype=bool)
        for axis, (start, length) in enumerate(zip(origin, chunks)):
            along = (np.arange(start, start + length) % self.spacing) < self.size
            shape = [1] * len(chunks)
            shape[axis] = length
            inside &= along.reshape(shape)
        return inside.astype(dtype)


class SyntheticStore(Store):
    """A read-only store of one array (at its root) computed from the chunk index.

    Parameters
    ----------
    shape, chunks : tuple of int
        The array's shape and chunk shape.
    dtype : dtype-like
        Its data type.
    pattern : {"ramp", "dots"} or Pattern
        The formula (see the module); ``period``, ``spacing`` and ``size`` are its
        parameters when ``pattern`` is a name.
    zarr_format : {2, 3}
        The metadata document written.
    compressor : codec, dict or None
        Passed to :func:`chunkflow.create` (``None``: raw bytes, the cheapest).

    Examples
    --------
    >>> store = SyntheticStore((1000, 1000), (10, 10), "u2")
    >>> store.nchunks, sorted(store.list_prefix(""))[:1]
    (10000, ['c/0/0'])
    >>> len(store["c/99/99"])
    200
    >>> store == SyntheticStore((1000, 1000), (10, 10), "u2")
    True
    """

    read_only = True
    _read_only_reason = "a synthetic array computes its chunks"

    def __init__(self, shape: Sequence[int], chunks: Sequence[int], dtype: Any = "u2", *,
                 pattern: str | Pattern = "ramp", period: int = 16, spacing: int = 8,
                 size: int = 4, zarr_format: int = 3, compressor: Any = None) -> None:
        self.grid = RegularChunkGrid(tuple(shape), tuple(chunks))
        self.dtype = np.dtype(dtype)
        self.pattern = pattern if isinstance(pattern, Pattern) else Pattern(
            pattern, period=period, spacing=spacing, size=size)
        self.zarr_format = zarr_format
        self.compressor = compressor
        self._encoded: dict[tuple[int, ...], bytes] = {}
        #: Chunk keys listed (or sized by a listing) in this process: what a real
        #: store's listing would have returned.
        self.keys_listed = 0
        self._lock = threading.Lock()
        self._documents, self._encoding, self._scratch = self._describe()

    def _describe(self) -> tuple[dict[str, bytes], ChunkKeyEncoding, Any]:
        # The documents and the encoder come from an array chunkflow creates (one chunk
        # of it, in memory): the bytes are what chunkflow itself would store.
        from chunkflow.api import create

        documents = MemoryStore()
        create(self.grid.shape, chunks=self.grid.chunks, dtype=self.dtype, store=documents,
               compressor=self.compressor, zarr_format=self.zarr_format)
        scratch = create(self.grid.chunks, chunks=self.grid.chunks, dtype=self.dtype,
                         store=MemoryStore(), compressor=self.compressor,
                         zarr_format=self.zarr_format, write_empty_chunks=True)
        v3 = self.zarr_format == 3
        encoding = ChunkKeyEncoding("default", "/") if v3 else ChunkKeyEncoding("v2", ".")
        return {key: documents[key] for key in documents}, encoding, scratch

    def __reduce__(self) -> tuple[Any, ...]:
        # By value: the parameters rebuild the same store (and its identity) anywhere.
        return (_rebuild, (self.grid.shape, self.grid.chunks, self.dtype.str, self.pattern,
                           self.zarr_format, self.compressor))

    @property
    def identity(self) -> str:
        text = repr((self.grid.shape, self.grid.chunks, self.dtype.str, self.pattern,
                     self.zarr_format, repr(self.compressor)))
        return "synthetic:" + hashlib.sha256(text.encode()).hexdigest()[:24]

    def __repr__(self) -> str:
        return (f"SyntheticStore(shape={self.grid.shape}, chunks={self.grid.chunks}, "
                f"dtype={self.dtype.str!r}, pattern={self.pattern!r})")

    @property
    def nchunks(self) -> int:
        """The number of chunks of the array."""
        return self.grid.nchunks

    def chunk(self, coords: tuple[int, ...]) -> np.ndarray:
        """The full (unclipped) values of the chunk at ``coords``, as the formula gives."""
        origin = tuple(c * n for c, n in zip(coords, self.grid.chunks))
        return self.pattern.values(self._content(coords), origin, self.grid.chunks, self.dtype)

    def _content(self, coords: tuple[int, ...]) -> tuple[int, ...]:
        content = self.pattern.content(coords, self.grid.grid_shape)
        if self.pattern.name == "dots":  # equal chunks: equal origins modulo the lattice
            content = tuple(c * n % self.pattern.spacing
                            for c, n in zip(content, self.grid.chunks))
        return content

    # ---------------------------------------------------------------- hooks

    def _get(self, key: str) -> bytes:
        document = self._documents.get(key)
        if document is not None:
            return document
        coords = self._encoding.decode(key, self.grid.ndim)
        if coords is None or not self.grid.contains(coords):
            raise KeyNotFoundError(key)  # the one place a missing key raises KeyError
        content = self._content(coords)
        encoded = self._encoded.get(content)
        if encoded is None:
            encoded = self._encode(coords, content)
        return encoded

    def _encode(self, coords: tuple[int, ...], content: tuple[int, ...]) -> bytes:
        with self._lock:  # one encoder (the scratch array) for the threads
            self._scratch[...] = self.chunk(coords)
            key = self._encoding.encode((0,) * self.grid.ndim)
            encoded = self._scratch.store[key]
            self._encoded[content] = encoded
        return encoded

    def _contains(self, key: str) -> bool:
        if key in self._documents:
            return True
        coords = self._encoding.decode(key, self.grid.ndim)
        return coords is not None and self.grid.contains(coords)

    def _list_prefix(self, prefix: str) -> Iterator[str]:
        start = prefix + "/" if prefix else ""
        yield from (key for key in self._documents if key.startswith(start))
        if prefix and (self.zarr_format == 2 or prefix.split("/")[0] != "c"):
            return  # chunk keys are c/i/j (v3) or i.j (v2, no folders): none below it
        for coords in self.grid.all_chunk_coords():  # lazily: 10^6 keys cost only if asked
            key = self._encoding.encode(coords)
            if key.startswith(start):
                self.keys_listed += 1
                yield key

    def _getsize_prefix(self, prefix: str) -> int:
        # What a listing with sizes gives (a folder walk, an object-store listing): one
        # entry per key, here without making the keys (counted in ``keys_listed``).
        if prefix:  # a part of the array: key by key
            return sum(self._getsize(key) for key in self._list_prefix(prefix))
        total = sum(map(len, self._documents.values()))
        sizes: dict[tuple[int, ...], int] = {}
        for coords in self.grid.all_chunk_coords():
            content = self._content(coords)
            size = sizes.get(content)
            if size is None:
                size = sizes[content] = len(self._get(self._encoding.encode(coords)))
            total += size
        self.keys_listed += self.nchunks
        return total

    def _set(self, key: str, value: bytes | memoryview) -> None:
        raise ReadOnlyError(f"cannot write key {key!r}: {self!r} is read-only")

    def _delete(self, key: str) -> None:
        raise ReadOnlyError(f"cannot delete key {key!r}: {self!r} is read-only")


# One store per parameters in each process: a worker unpickles the store with every
# task, and should neither describe the array nor encode the contents again each time.
_STORES: weakref.WeakValueDictionary[tuple[Any, ...], SyntheticStore] = weakref.WeakValueDictionary()
_STORES_LOCK = threading.Lock()


def _rebuild(shape: tuple[int, ...], chunks: tuple[int, ...], dtype: str, pattern: Pattern,
             zarr_format: int, compressor: Any) -> SyntheticStore:
    parameters = (shape, chunks, dtype, pattern, zarr_format, repr(compressor))
    with _STORES_LOCK:
        store = _STORES.get(parameters)
        if store is None:
            store = _STORES[parameters] = SyntheticStore(
                shape, chunks, dtype, pattern=pattern, zarr_format=zarr_format,
                compressor=compressor)
    return store
