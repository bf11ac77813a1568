"""The jobs of ``bench_scale.py``: chunkflow's and dask + zarr-python's, over the same
synthetic chunks, into the same checksumming sink; and what their results must be.

Each case's ``build(size)`` returns ``(lazy collection, check)``: the collection is
computed on the cluster, ``check(result, tally)`` says whether the result is right
(the formula of :class:`~chunkflow.testing.synthetic.SyntheticStore`, worked out per
distinct chunk content, so checking 10^6 chunks costs little).
"""

from __future__ import annotations

import math
import tempfile
import zlib
from collections.abc import AsyncIterator, Callable, Iterable
from dataclasses import dataclass
from typing import Any

import numpy as np
import zarr
from zarr.abc.store import ByteRequest
from zarr.abc.store import Store as ZarrStore
from zarr.core.buffer import Buffer, BufferPrototype

import chunkflow
from chunkflow.storage import LocalStore
from chunkflow.storage import Store as ChunkflowStore
from chunkflow.testing.sink import ChecksumStore, Tally
from chunkflow.testing.synthetic import SyntheticStore

CHUNK = 32  # 32^2 uint16 chunks: 2 KiB each, 2 GiB at 10^6 chunks
PERIOD = 16
SPACING = 3  # label: one object every 3 pixels per axis, ~114 per chunk
BINS = 64


def shape_for(nchunks: int) -> tuple[int, int]:
    """An image of exactly ``nchunks`` chunks, as square as the divisors allow."""
    rows = max(d for d in range(1, math.isqrt(nchunks) + 1) if nchunks % d == 0)
    return rows * CHUNK, nchunks // rows * CHUNK


def ramp_source(nchunks: int) -> SyntheticStore:
    return SyntheticStore(shape_for(nchunks), (CHUNK, CHUNK), "u2", period=PERIOD)


def dots_source(nchunks: int) -> SyntheticStore:
    return SyntheticStore(shape_for(nchunks), (CHUNK, CHUNK), "u1", pattern="dots",
                          spacing=SPACING, size=1)


def halve(x: np.ndarray) -> np.ndarray:
    """The map job's function (cheap: the cost measured is the machinery's)."""
    return x >> 1


# ------------------------------------------------------------- zarr-python


class ZarrView(ZarrStore):
    """A chunkflow store seen as a zarr-python 3 store (for dask + zarr-python's side):
    the synthetic source, or the checksum sink (writes pass through to it)."""

    supports_writes = True
    supports_deletes = True
    supports_listing = True
    supports_partial_writes = False

    def __init__(self, inner: ChunkflowStore, *, read_only: bool = False) -> None:
        super().__init__(read_only=read_only)
        self.inner = inner

    def __eq__(self, other: object) -> bool:
        return isinstance(other, ZarrView) and other.inner == self.inner

    def __getstate__(self) -> dict[str, Any]:
        return {"inner": self.inner, "read_only": self.read_only}

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__init__(state["inner"], read_only=state["read_only"])  # type: ignore[misc]

    async def get(self, key: str, prototype: BufferPrototype,
                  byte_range: ByteRequest | None = None) -> Buffer | None:
        try:
            data = self.inner[key]
        except KeyError:
            return None
        if byte_range is not None:
            raise NotImplementedError("no byte ranges: the peer reads whole chunks")
        return prototype.buffer.from_bytes(data)

    async def get_partial_values(self, prototype: BufferPrototype,
                                 key_ranges: Iterable[tuple[str, ByteRequest | None]]) -> list[Buffer | None]:
        return [await self.get(key, prototype, byte_range) for key, byte_range in key_ranges]

    async def exists(self, key: str) -> bool:
        return key in self.inner

    async def set(self, key: str, value: Buffer) -> None:
        self.inner[key] = value.to_bytes()

    async def delete(self, key: str) -> None:
        self.inner.delete_many([key])

    async def list(self) -> AsyncIterator[str]:
        for key in list(self.inner.list_prefix("")):
            yield key

    async def list_prefix(self, prefix: str) -> AsyncIterator[str]:
        for key in list(self.inner.list_prefix("")):
            if key.startswith(prefix):
                yield key

    async def list_dir(self, prefix: str) -> AsyncIterator[str]:
        keys, folders = self.inner.list_dir(prefix.rstrip("/"))
        for name in [*keys, *folders]:
            yield name


def zarr_source(source: SyntheticStore) -> Any:
    import dask.array as da

    return da.from_zarr(zarr.open_array(ZarrView(source, read_only=True), mode="r"))


def zarr_sink(sink: ChecksumStore, shape: tuple[int, ...], dtype: str, path: str | None = None) -> Any:
    return zarr.create_array(ZarrView(sink), name=path, shape=shape, chunks=(CHUNK, CHUNK),
                             dtype=dtype, compressors=None, fill_value=0, overwrite=True)


# ---------------------------------------------------------------- oracles


def _contents(source: SyntheticStore) -> list[tuple[np.ndarray, int]]:
    """(chunk values, how many chunks hold them) for a ramp source of whole chunks."""
    n = source.nchunks
    return [(source.chunk(np.unravel_index(k, source.grid.grid_shape)), n // PERIOD
             + (1 if k < n % PERIOD else 0)) for k in range(min(PERIOD, n))]


def expected_moments(source: SyntheticStore) -> tuple[float, float]:
    parts = _contents(source)
    count = sum(c for _, c in parts) * CHUNK * CHUNK
    mean = sum(v.astype(np.float64).sum() * c for v, c in parts) / count
    var = sum(((v.astype(np.float64) - mean) ** 2).sum() * c for v, c in parts) / count
    return float(mean), float(math.sqrt(var))


def expected_histogram(source: SyntheticStore) -> np.ndarray:
    return sum((np.histogram(v, BINS, (0, 65536))[0] * c for v, c in _contents(source)),
               np.zeros(BINS, np.int64))


def expected_map_tally(source: SyntheticStore) -> Tally:
    """The tally of ``halve`` written chunk by chunk (raw little-endian bytes)."""
    encoded = {}
    grid = source.grid.grid_shape
    total = 0
    for index in range(source.nchunks):
        coords = np.unravel_index(index, grid)
        content = index % PERIOD
        if content not in encoded:
            encoded[content] = halve(source.chunk(coords)).astype("<u2").tobytes()
        key = "c/" + "/".join(map(str, coords))
        total += zlib.crc32(encoded[content], zlib.crc32(key.encode()))
    size = CHUNK * CHUNK * 2
    return Tally(source.nchunks, source.nchunks * size, total & ((1 << 64) - 1))


def _same_chunks(tally: Tally, source: SyntheticStore) -> bool:
    want = expected_map_tally(source)
    return (tally.chunks, tally.bytes, tally.checksum) == (want.chunks, want.bytes, want.checksum)


def expected_objects(source: SyntheticStore) -> int:
    return math.prod(-(-n // SPACING) for n in source.grid.shape)


# ------------------------------------------------------------------ cases


@dataclass
class Built:
    """A job ready to compute: the collection, and its check."""

    collection: Any
    check: Callable[[Any, Tally], bool]
    sink: ChecksumStore | None = None
    source: SyntheticStore | None = None


def _moments_ok(result: Any, want: tuple[float, float]) -> bool:
    mean, std = (float(np.asarray(v)) for v in result)
    return math.isclose(mean, want[0], rel_tol=1e-9) and math.isclose(std, want[1], rel_tol=1e-6)


def chunkflow_case(op: str, nchunks: int, client: Any) -> Built:
    if op == "label":
        source = dots_source(nchunks)
        sink = ChecksumStore(name="label")
        job = chunkflow.label(source, sink, scheduler=client, compute=False)
        want = expected_objects(source)
        return Built(job, lambda result, tally: int(result[1]) == want, sink, source)
    source = ramp_source(nchunks)
    if op == "map":
        sink = ChecksumStore(name="map")
        job = chunkflow.map_chunks(halve, source, out=sink, dtype="u2", scheduler=client,
                                   compute=False)
        return Built(job, lambda result, tally: _same_chunks(tally, source), sink, source)
    if op == "reduce":
        lazy = chunkflow.reduce(source, ("mean", "std"), scheduler=client, compute=False)
        want = expected_moments(source)
        return Built([lazy["mean"], lazy["std"]], lambda result, tally: _moments_ok(result, want),
                     None, source)
    if op == "histogram":
        lazy = chunkflow.histogram(source, BINS, (0, 65536), scheduler=client, compute=False)
        want_counts = expected_histogram(source)
        return Built(lazy, lambda result, tally: np.array_equal(np.asarray(result[0]), want_counts),
                     None, source)
    if op == "pyramid":
        backing = LocalStore(tempfile.mkdtemp(prefix="chunkflow-bench-scale-"))
        sink = ChecksumStore(name="pyramid", backing=backing)
        job = chunkflow.pyramid(source, sink, scheduler=client, compute=False)
        sink.keep = reread_levels(job)  # before it is pickled: the levels stages read back
        return Built(job, lambda result, tally: tally.misses == 0, sink, source)
    raise ValueError(op)


def reread_levels(job: Any) -> tuple[str, ...]:
    """The levels a pyramid's later stages read (kept in the sink's backing folder)."""
    from chunkflow.graph.pyramid.plan import PyramidPlan

    for value in dict(job.__dask_graph__()).values():
        if isinstance(value, PyramidPlan):
            return tuple(str(stage.first) for stage in value.geometry.stages[1:])
    return ()


def dask_case(op: str, nchunks: int, client: Any) -> Built | None:
    """dask + zarr-python's equivalent, or ``None`` where there is none installed."""
    import dask.array as da

    if op == "label":
        try:
            from dask_image.ndmeasure import label as dask_label
        except ImportError:
            return None
        source = dots_source(nchunks)
        sink = ChecksumStore(name="label-dask")
        labels, count = dask_label(zarr_source(source))
        target = zarr_sink(sink, source.grid.shape, "i4")
        stored = da.store(labels, target, lock=False, compute=False, return_stored=False)
        want = expected_objects(source)
        return Built([stored, count], lambda result, tally: int(result[1]) == want, sink)
    source = ramp_source(nchunks)
    x = zarr_source(source)
    if op == "map":
        sink = ChecksumStore(name="map-dask")
        target = zarr_sink(sink, source.grid.shape, "u2")
        job = da.store(x.map_blocks(halve, dtype="u2"), target, lock=False, compute=False)
        return Built(job, lambda result, tally: _same_chunks(tally, source), sink)
    if op == "reduce":
        want = expected_moments(source)
        return Built([x.mean(), x.std()], lambda result, tally: _moments_ok(result, want))
    if op == "histogram":
        counts, _ = da.histogram(x, bins=BINS, range=(0, 65536))
        want_counts = expected_histogram(source)
        return Built([counts], lambda result, tally: np.array_equal(np.asarray(result[0]), want_counts))
    if op == "pyramid":
        sink = ChecksumStore(name="pyramid-dask")
        levels, targets = [], []
        level = x
        for number in range(len(_level_shapes(source.grid.shape))):
            if number:
                level = da.coarsen(np.mean, level, {0: 2, 1: 2}, trim_excess=True).astype("u2")
                level = level.rechunk(CHUNK)
            levels.append(level)
            targets.append(zarr_sink(sink, level.shape, "u2", path=str(number)))
        job = da.store(levels, targets, lock=False, compute=False)
        return Built(job, lambda result, tally: tally.chunks > 0, sink)
    raise ValueError(op)


def _level_shapes(shape: tuple[int, ...]) -> list[tuple[int, ...]]:
    """Levels until every axis fits in one chunk, as chunkflow's default."""
    shapes = [shape]
    while any(n > CHUNK for n in shapes[-1]):
        shapes.append(tuple(max(1, n // 2) for n in shapes[-1]))
    return shapes
