"""The floors of bench_zarrs: the same bytes read, decoded and written with numcodecs
and plain file calls on the same cores, with no Zarr library in between.

``disk``: read every byte a scenario reads (whole chunk files, or each inner chunk's
byte range) into a reused buffer per thread, nothing decoded.
``decode``: what ``disk`` reads, decoded with numcodecs into the result each request
returns (a chunk straight into its result; inner chunks of a shard into a reused
buffer, then copied to their place).
``write`` (round trip): each chunk read, decoded, encoded and written to a temporary
file renamed over its key, as chunkflow writes (``write-inplace``: written in place).

Threads: as many as cores where a request splits into independent decodes (a shard's
inner chunks, the chunks of a whole-array read or a round trip), else
``min(concurrency, cores)``: a zstd frame decodes on one thread, whoever decodes it.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Callable, Iterable, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import numpy as np

Region = tuple[slice, ...]
CORES = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1


class Geometry:
    """A dataset as the floors see it: files, chunk and inner chunk shapes, codec."""

    def __init__(self, path: str, side: int, chunk: int, inner: int, codec: str) -> None:
        self.path, self.side, self.chunk, self.inner = path, side, chunk, inner
        self.sharded = inner != chunk
        self.codec = None
        if codec == "zstd":
            from numcodecs import Zstd

            self.codec = Zstd(level=0)

    def file(self, region: Region) -> str:
        coords = [str(s.start // self.chunk) for s in region]
        return os.path.join(self.path, "c", *coords)

    def index(self, data: bytes | memoryview) -> np.ndarray:
        """A shard's (offset, nbytes) per inner chunk, C order (index at the end,
        16 bytes per chunk and a 4-byte crc32c)."""
        count = (self.chunk // self.inner) ** 3
        raw = np.frombuffer(data, "<u8", count=2 * count, offset=len(data) - 16 * count - 4)
        return raw.reshape(count, 2)

    def inner_regions(self) -> list[Region]:
        step = self.inner
        n = self.chunk // step
        return [(slice(i * step, i * step + step), slice(j * step, j * step + step),
                 slice(k * step, k * step + step))
                for i in range(n) for j in range(n) for k in range(n)]


def _pool_map(func: Callable[[Any], None], items: Iterable[Any], threads: int) -> None:
    items = list(items)
    if threads <= 1:
        for item in items:
            func(item)
        return
    with ThreadPoolExecutor(threads) as pool:
        for _ in pool.map(func, items):
            pass


class _Buffers(threading.local):
    """One reused read buffer and one inner-chunk buffer per thread."""

    def get(self, size: int) -> memoryview:
        buffer = getattr(self, "raw", None)
        if buffer is None or len(buffer) < size:
            buffer = self.raw = bytearray(size)
        return memoryview(buffer)[:size]

    def scratch(self, shape: tuple[int, ...]) -> np.ndarray:
        chunk = getattr(self, "inner", None)
        if chunk is None or chunk.shape != shape:
            chunk = self.inner = np.empty(shape, "u2")
        return chunk


_buffers = _Buffers()


def _read_file(name: str) -> memoryview:
    size = os.path.getsize(name)
    view = _buffers.get(size)
    with open(name, "rb", buffering=0) as file:
        got = file.readinto(view)
    return view[:got]


def _decode_shard(geo: Geometry, data: memoryview, out: np.ndarray) -> None:
    scratch = _buffers.scratch((geo.inner,) * 3)
    for (offset, nbytes), region in zip(geo.index(data), geo.inner_regions()):
        geo.codec.decode(data[offset:offset + nbytes], out=scratch)  # type: ignore[union-attr]
        out[region] = scratch


def _decode_chunk(geo: Geometry, name: str, out: np.ndarray) -> None:
    if geo.codec is None:
        with open(name, "rb", buffering=0) as file:
            file.readinto(memoryview(out).cast("B"))  # the file is the chunk's bytes
        return
    data = _read_file(name)
    if geo.sharded:
        _decode_shard(geo, data, out)
    else:
        geo.codec.decode(data, out=out)


def read_all(geo: Geometry, regions: Sequence[Region]) -> np.ndarray:
    """The decode floor of a whole-array read: every chunk decoded into its place."""
    out = np.empty((geo.side,) * 3, "u2")

    def one(region: Region) -> None:
        chunk = _buffers.scratch((geo.chunk,) * 3) if not geo.sharded else out[region]
        if geo.sharded:
            data = _read_file(geo.file(region))
            _decode_shard(geo, data, chunk)
            return
        _decode_chunk(geo, geo.file(region), chunk)
        out[region] = chunk

    _pool_map(one, regions, CORES)
    return out


def read_chunks(geo: Geometry, regions: Sequence[Region], concurrency: int,
                keep: Callable[[np.ndarray], None]) -> None:
    """The decode floor of chunk-by-chunk reads: each chunk decoded into its result."""
    if geo.sharded:
        parts = geo.inner_regions()
        for region in regions:  # a shard's inner chunks spread over the cores
            data = _read_file_shared(geo.file(region))
            out = np.empty((geo.chunk,) * 3, "u2")
            index = geo.index(data)

            def inner(i: int, data: bytes = data, out: np.ndarray = out,
                      index: np.ndarray = index) -> None:
                offset, nbytes = index[i]
                scratch = _buffers.scratch((geo.inner,) * 3)
                geo.codec.decode(memoryview(data)[offset:offset + nbytes], out=scratch)  # type: ignore[union-attr]
                out[parts[i]] = scratch

            _pool_map(inner, range(len(parts)), CORES)
            keep(out)
        return

    def one(region: Region) -> None:
        out = np.empty((geo.chunk,) * 3, "u2")
        _decode_chunk(geo, geo.file(region), out)
        keep(out)

    _pool_map(one, regions, min(concurrency, CORES))


def _read_file_shared(name: str) -> bytes:
    with open(name, "rb", buffering=0) as file:
        return file.read()


def _inner_ranges(geo: Geometry, regions: Sequence[Region]) -> list[tuple[str, int, int]]:
    """(file, offset, nbytes) of every inner chunk in ``regions`` (reads each index)."""
    indexes: dict[str, np.ndarray] = {}
    n = geo.chunk // geo.inner
    found = []
    for region in regions:
        name = geo.file(region)
        if name not in indexes:
            with open(name, "rb", buffering=0) as file:
                size = os.fstat(file.fileno()).st_size
                tail = os.pread(file.fileno(), 16 * n ** 3 + 4, size - 16 * n ** 3 - 4)
            indexes[name] = geo.index(tail)
        i, j, k = ((s.start % geo.chunk) // geo.inner for s in region)
        offset, nbytes = indexes[name][(i * n + j) * n + k]
        found.append((name, int(offset), int(nbytes)))
    return found


def read_inner(geo: Geometry, regions: Sequence[Region], concurrency: int,
               keep: Callable[[np.ndarray], None]) -> None:
    """The decode floor of inner-chunk-by-inner-chunk reads (each index read once)."""
    ranges = _inner_ranges(geo, regions)

    def one(item: tuple[str, int, int]) -> None:
        name, offset, nbytes = item
        fd = os.open(name, os.O_RDONLY)
        try:
            data = os.pread(fd, nbytes, offset)
        finally:
            os.close(fd)
        out = np.empty((geo.inner,) * 3, "u2")
        geo.codec.decode(data, out=out)  # type: ignore[union-attr]
        keep(out)

    _pool_map(one, ranges, min(concurrency, CORES))


def disk(geo: Geometry, regions: Sequence[Region], concurrency: int, inner: bool) -> None:
    """The disk floor: the bytes the scenario reads, read into a reused buffer."""
    if inner:
        ranges = _inner_ranges(geo, regions)

        def one(item: tuple[str, int, int]) -> None:
            name, offset, nbytes = item
            fd = os.open(name, os.O_RDONLY)
            try:
                os.preadv(fd, [_buffers.get(nbytes)], offset)
            finally:
                os.close(fd)

        _pool_map(one, ranges, min(concurrency, CORES))
        return
    _pool_map(lambda region: _read_file(geo.file(region)), regions, CORES)


def roundtrip(geo: Geometry, regions: Sequence[Region], out: str, atomic: bool = True) -> None:
    """The floor of a round trip: read, decode, encode and write each chunk (or
    shard: every inner chunk, then the index with its crc32c)."""
    import google_crc32c

    token = f".{os.getpid()}.tmp"

    def one(region: Region) -> None:
        target = Geometry(out, geo.side, geo.chunk, geo.inner, "none").file(region)
        if geo.codec is None:
            encoded: Any = _read_file(geo.file(region))
        elif geo.sharded:
            data = _read_file(geo.file(region))
            scratch = _buffers.scratch((geo.inner,) * 3)
            parts, table, offset = [], [], 0
            for start, nbytes in geo.index(data):
                geo.codec.decode(data[start:start + nbytes], out=scratch)
                part = geo.codec.encode(scratch)
                parts.append(part)
                table.append((offset, len(part)))
                offset += len(part)
            index = np.asarray(table, "<u8").tobytes()
            crc = google_crc32c.value(index).to_bytes(4, "little")
            encoded = b"".join([*parts, index, crc])
        else:
            chunk = _buffers.scratch((geo.chunk,) * 3)
            geo.codec.decode(_read_file(geo.file(region)), out=chunk)
            encoded = geo.codec.encode(chunk)
        os.makedirs(os.path.dirname(target), exist_ok=True)
        name = target + token + threading.current_thread().name if atomic else target
        with open(name, "wb", buffering=0) as file:
            file.write(encoded)
        if atomic:
            os.replace(name, target)

    _pool_map(one, regions, CORES)
