"""Checking one array's stored chunks: which keys are there, which decode.

The engine half of :meth:`chunkflow.Array.verify` (:mod:`chunkflow.core.verify` adds
the job records and builds the report; :mod:`chunkflow.graph.verification` runs it on a
scheduler):

- :func:`take_inventory` lists the array's prefix once (streamed) and marks the grid
  cells whose key is stored in a boolean array over the chunk grid (one byte per
  chunk or shard); any other key there that is not a metadata document or
  chunkflow's bookkeeping (``.chunkflow-job/``, :data:`~chunkflow.jobs.WRITTEN_KEY`) is
  *unexpected*: a chunk key outside the grid, a key of another encoding, a stray
  file. A store that lists nothing at all, not even the metadata document, cannot
  list: the inventory says so, and every key of the grid is then read;
- :func:`check_cells` fetches the given cells' keys (batches of a few MiB) and
  decodes each one alone: a chunk that does not decode, or decodes to another shape,
  is *corrupt*. A shard is checked part by part: its index first, then every inner
  chunk it lists, decoded one at a time into one inner chunk's buffer, so a corrupt
  inner chunk is named by its place in the shard.

Memory stays bounded whatever the array's size: one fetched batch and one decoded
chunk (one inner chunk, plus the whole encoded shard) per thread, and the inventory's
byte per grid cell.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import numpy as np

from chunkflow.codecs.sharding import MISSING
from chunkflow.engine.pool import map_groups

if TYPE_CHECKING:
    from chunkflow.codecs.sharding import ShardingStage
    from chunkflow.engine.chunk_space import ChunkSpace

__all__ = ["CellResults", "Inventory", "check_cells", "grid_cells",
           "take_inventory"]

#: Names below an array that are no chunk keys and expected there.
_DOCUMENTS = frozenset({"zarr.json", ".zarray", ".zattrs", ".zgroup", ".zmetadata"})
#: Keys fetched per store call, in decoded bytes of their chunks.
BATCH_BYTES = 8 * 2**20


@dataclass
class Inventory:
    """What listing an array's prefix found (see :func:`take_inventory`).

    ``stored`` is ``None`` when the store cannot list (the keys are then read to know).
    """

    stored: np.ndarray | None
    unexpected: list[str] = field(default_factory=list)
    n_unexpected: int = 0


@dataclass
class CellResults:
    """What :func:`check_cells` found: objects decoded (chunks or shards), inner chunks
    decoded, problems (key, reason), and the cells whose key was absent."""

    checked: int = 0
    inner: int = 0
    corrupt: list[tuple[str, str]] = field(default_factory=list)
    absent: list[tuple[int, ...]] = field(default_factory=list)

    def add(self, other: CellResults) -> None:
        self.checked += other.checked
        self.inner += other.inner
        self.corrupt += other.corrupt
        self.absent += other.absent


def take_inventory(io: ChunkSpace, limit: int) -> Inventory:
    """List the array's keys once: the stored cells, and the unexpected keys (the
    first ``limit`` of them, and their count).

    Examples
    --------
    >>> io = _example()
    >>> io.store.set_many({"z/zarr.json": b"{}", "z/c/0/0": b"", "z/c/9/9": b"?"})
    >>> found = take_inventory(io, 10)
    >>> found.stored.tolist(), found.unexpected
    ([[True, False], [False, False]], ['z/c/9/9'])
    """
    stored = np.zeros(io.grid.grid_shape, dtype=bool)
    inventory = Inventory(stored)
    start = len(io.path) + 1 if io.path else 0
    ndim = len(io.grid.shape)
    listed = False
    for key in io.store.list_prefix(io.path):
        listed = True
        rest = key[start:]
        coords = io.key_encoding.decode(rest, ndim)
        if coords is not None and io.grid.contains(coords):
            stored[coords] = True
        elif rest not in _DOCUMENTS and not rest.startswith(".chunkflow"):
            inventory.n_unexpected += 1
            if len(inventory.unexpected) < limit:
                inventory.unexpected.append(key)
    if not listed:  # not even the metadata document: the store cannot list
        inventory.stored = None
    return inventory


def check_cells(io: ChunkSpace, cells: Sequence[tuple[int, ...]], *,
                parallel: bool = True) -> CellResults:
    """Fetch and decode the keys of ``cells`` (grid coordinates), one at a time per
    thread; ``parallel=False`` keeps to the calling thread (a dask task).

    Examples
    --------
    >>> io = _example()
    >>> io.store.set_many({"z/c/0/0": bytes(4), "z/c/1/1": b"not a chunk"})
    >>> found = check_cells(io, [(0, 0), (0, 1), (1, 1)])
    >>> found.checked, [key for key, _ in found.corrupt], found.absent
    (2, ['z/c/1/1'], [(0, 1)])
    """
    stage: ShardingStage | None = getattr(io.pipeline, "shard_stage", None)  # v3 only
    per_call = max(1, BATCH_BYTES // max(1, io.pipeline.dtype.itemsize * math.prod(io.grid.chunks)))

    def check(group: Sequence[tuple[int, ...]]) -> CellResults:
        results = CellResults()
        for start in range(0, len(group), per_call):
            batch = group[start:start + per_call]
            keys = [io.key(coords) for coords in batch]
            fetched = io.store.get_many(keys)
            for coords, key in zip(batch, keys):
                data = fetched.pop(key, None)
                if data is None:
                    results.absent.append(coords)
                    continue
                results.checked += 1
                if stage is None:
                    _check_chunk(io, key, data, results)
                else:
                    _check_shard(stage, key, data, results)
        return results

    total = CellResults()
    for part in map_groups(check, list(cells), parallel=parallel and io.parallel,
                           batch=per_call):
        total.add(part)
    return total


def _check_chunk(io: ChunkSpace, key: str, data: bytes, results: CellResults) -> None:
    try:
        chunk = io.pipeline.decode(data)
    except Exception as err:  # any codec's failure: that is what is being looked for
        results.corrupt.append((key, f"does not decode: {type(err).__name__}: {err}"))
        return
    if chunk.shape != tuple(io.grid.chunks):
        results.corrupt.append((key, f"decodes to shape {chunk.shape}, expected the chunk "
                                     f"shape {tuple(io.grid.chunks)}"))


def _check_shard(stage: ShardingStage, key: str, data: bytes, results: CellResults) -> None:
    raw = np.frombuffer(data, dtype=np.uint8)
    try:
        start, stop = stage.index_range(len(raw))
        offsets, lengths = stage.parse_index(raw[start:stop], len(raw))
    except Exception as err:  # a corrupt index: no inner chunk can be trusted
        results.corrupt.append((key, f"shard index does not decode: {type(err).__name__}: {err}"))
        return
    stored = np.flatnonzero(~((offsets == MISSING) & (lengths == MISSING)))
    out = np.empty(stage.inner_shape, stage.dtype)
    for flat, begin, length in zip(stored.tolist(), offsets[stored].tolist(),
                                   lengths[stored].tolist()):
        results.inner += 1
        try:
            stage.inner.decode_into(raw[begin:begin + length], out)
        except Exception as err:  # any codec's failure
            where = tuple(int(i) for i in np.unravel_index(flat, stage.grid))
            results.corrupt.append((key, f"inner chunk {where} does not decode: "
                                         f"{type(err).__name__}: {err}"))


def grid_cells(stored: np.ndarray | None, region: tuple[slice, ...],
               shape: Sequence[int]) -> list[tuple[int, ...]]:
    """The cells of ``region`` (slices of the chunk grid of ``shape``) to read: those
    ``stored`` marks (the inventory over the region), or every one when the store
    cannot list (``stored`` is ``None``).

    Examples
    --------
    >>> grid_cells(np.array([[False], [True]]), (slice(0, 2), slice(1, 2)), (2, 2))
    [(1, 1)]
    >>> grid_cells(None, (slice(0, 2), slice(1, 2)), (2, 2))
    [(0, 1), (1, 1)]
    """
    starts = [s.start or 0 for s in region]
    if stored is None:
        ranges: Iterable[range] = (range(s.start or 0, min(s.stop, n))
                                   for s, n in zip(region, shape))
        return list(itertools.product(*ranges))
    return [tuple(int(i) + o for i, o in zip(index, starts)) for index in np.argwhere(stored)]


def _example() -> ChunkSpace:
    """A 4x4 uint8 array of 2x2 chunks at ``z`` in a new memory store (for examples)."""
    from chunkflow.codecs import v3_pipeline
    from chunkflow.engine.chunk_space import ChunkSpace
    from chunkflow.grid import ChunkKeyEncoding, RegularChunkGrid
    from chunkflow.storage import MemoryStore

    return ChunkSpace(MemoryStore(), "z", RegularChunkGrid((4, 4), (2, 2)),
                   ChunkKeyEncoding("default", "/"),
                   v3_pipeline(np.dtype("u1"), (2, 2), [{"name": "bytes"}]), np.uint8(0))
