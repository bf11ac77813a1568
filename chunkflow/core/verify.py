"""``Array.verify()``: is every stored chunk readable, and is anything gone or stray?

A verification reads every key of an array's chunk grid and decodes every stored
chunk (shard: its index and each inner chunk), and reports, in a
:class:`VerifyReport`:

- **missing**: grid cells with no stored chunk. Valid Zarr (they read as the fill
  value), so no error: counted and listed, not wrong;
- **lost**: missing cells whose chunk the last finished job stored
  (:mod:`chunkflow.jobs.written`): something deleted them since. Wrong;
- **corrupt**: stored chunks that do not decode, or decode to another shape (a
  shard's corrupt index or inner chunk is named). Wrong;
- **unexpected**: keys below the array that are no chunk of its grid (a chunk key
  outside the grid, a stray file; not metadata documents or chunkflow's job records).
  Wrong: ``Array.repair()`` removes chunks outside the grid; other files are not
  Zarr's. A store that cannot list (HTTP serving no folder listings) is read key by
  key instead, and its unexpected keys cannot be seen (the report says so).

This module holds the steps (:func:`survey`, :func:`check_region`,
:func:`build_report`), the plain loop in this process (:func:`verify_array`) and the
methods ``Array.verify`` and ``Group.verify`` (:func:`verify_node`);
:mod:`chunkflow.graph.verification` runs the regions as dask tasks
(``chunkflow.verify(node, scheduler=...)``); it sits above this layer.
Memory stays bounded: a byte per grid cell, one region's list of cells, and per
thread one fetched batch and one decoded chunk.
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING

import numpy as np

from chunkflow.core.array import Array
from chunkflow.core.group import Group
from chunkflow.engine.verify import CellResults, Inventory, check_cells, grid_cells, take_inventory
from chunkflow.errors import ArgumentTypeError
from chunkflow.jobs.written import written_keys

if TYPE_CHECKING:
    from chunkflow.engine.chunk_space import ChunkSpace

__all__ = ["LIMIT", "REGION_CELLS", "Survey", "VerifyReport", "arrays_below",
           "build_report", "check_region", "chunk_grid", "regions", "survey", "verify_array",
           "verify_node"]

#: Entries each list of a report keeps (the counts are always complete).
LIMIT = 1000
#: Grid cells per region of the plain loop (one list of cells in memory at a time).
REGION_CELLS = 4096
#: Entries of each list that ``str(report)`` prints.
SHOWN = 10


@dataclass(frozen=True)
class VerifyReport:
    """What :meth:`chunkflow.Array.verify` (or ``Group.verify``) found.

    Counts are complete; the lists (full store keys) keep the first :data:`LIMIT`.
    ``chunks`` counts the cells of the chunk grid: shards for a sharded array, whose
    inner chunks decoded are ``inner_chunks``. :attr:`ok` is true when nothing is
    wrong: no corrupt chunk, no unexpected key, no lost chunk (missing chunks are
    valid Zarr: they read as the fill value).

    Examples
    --------
    >>> import numpy as np, chunkflow
    >>> z = chunkflow.array(np.arange(16).reshape(4, 4), chunks=(2, 2))
    >>> z.store["c/1/1"] = b"garbage"
    >>> report = z.verify()
    >>> report.ok, report.corrupt, report.checked
    (False, 1, 4)
    >>> print(report)  # doctest: +ELLIPSIS
    1 array, 4 chunks: 4 stored, 4 decoded; 0 missing, 1 corrupt, 0 unexpected, 0 lost
    corrupt:
      c/1/1: does not decode: ...
    """

    arrays: tuple[str, ...] = ()
    chunks: int = 0
    stored: int = 0
    checked: int = 0
    inner_chunks: int = 0
    missing: int = 0
    corrupt: int = 0
    unexpected: int = 0
    lost: int = 0
    missing_keys: tuple[str, ...] = ()
    corrupt_keys: tuple[tuple[str, str], ...] = ()
    unexpected_keys: tuple[str, ...] = ()
    lost_keys: tuple[str, ...] = ()
    unlisted: tuple[str, ...] = field(default=())

    @property
    def ok(self) -> bool:
        """No corrupt chunk, no unexpected key, no lost chunk."""
        return not (self.corrupt or self.unexpected or self.lost)

    def merge(self, other: VerifyReport) -> VerifyReport:
        """The report of both (the lists still capped at :data:`LIMIT`)."""
        counts = {name: getattr(self, name) + getattr(other, name)
                  for name in ("chunks", "stored", "checked", "inner_chunks", "missing",
                               "corrupt", "unexpected", "lost")}
        lists = {name: (getattr(self, name) + getattr(other, name))[:LIMIT]
                 for name in ("missing_keys", "corrupt_keys", "unexpected_keys", "lost_keys")}
        return replace(self, arrays=self.arrays + other.arrays,
                       unlisted=self.unlisted + other.unlisted, **counts, **lists)

    def __str__(self) -> str:
        return self.describe(SHOWN)

    def describe(self, shown: int | None = SHOWN) -> str:
        """The report as text: a line of counts, then the first ``shown`` entries of
        each list (``None``: every entry kept, up to :data:`LIMIT`)."""
        n = len(self.arrays)
        inner = f", {self.inner_chunks} inner chunks decoded" if self.inner_chunks else ""
        lines = [f"{n} array{'s' if n != 1 else ''}, {self.chunks} chunks: {self.stored} stored, "
                 f"{self.checked} decoded{inner}; {self.missing} missing, {self.corrupt} "
                 f"corrupt, {self.unexpected} unexpected, {self.lost} lost"]
        sections = [("lost (stored by a finished job, gone now)", self.lost, self.lost_keys),
                    ("corrupt", self.corrupt, [f"{k}: {why}" for k, why in self.corrupt_keys]),
                    ("unexpected (no chunk of the grid)", self.unexpected, self.unexpected_keys),
                    ("missing (never written: read as the fill value)", self.missing,
                     self.missing_keys)]
        for title, count, entries in sections:
            if count:
                listed = list(entries)[:shown] if shown is not None else list(entries)
                lines.append(f"{title}:")
                lines += [f"  {entry}" for entry in listed]
                if count > len(listed):
                    lines.append(f"  ... and {count - len(listed)} more")
        if self.unlisted:
            lines.append("not listed (the store cannot list; unexpected keys not checked): "
                         + ", ".join(repr(p) for p in self.unlisted[:SHOWN]))
        return "\n".join(lines)


@dataclass
class Survey:
    """An array's inventory (one listing) and what its last finished job stored."""

    inventory: Inventory
    written: set[str] | None


def chunk_grid(array: Array) -> tuple[int, ...]:
    """The shape of ``array``'s grid of stored objects (chunks, or shards).

    Examples
    --------
    >>> import chunkflow
    >>> chunk_grid(chunkflow.zeros((10, 4), chunks=(3, 4)))
    (4, 1)
    """
    return array._io.grid.grid_shape


def survey(array: Array) -> Survey:
    """List ``array``'s keys once, and read the list of what its last job stored."""
    return Survey(take_inventory(array._io, LIMIT), written_keys(array.store, array.path))


def regions(grid: tuple[int, ...], cells: int) -> Iterator[tuple[slice, ...]]:
    """Regions of the chunk grid of about ``cells`` cells, whole rows last axis first.

    Examples
    --------
    >>> [tuple((s.start, s.stop) for s in r) for r in regions((3, 4), 8)]
    [((0, 2), (0, 4)), ((2, 3), (0, 4))]
    """
    block = [1] * len(grid)
    room = max(1, cells)
    for axis in reversed(range(len(grid))):
        block[axis] = max(1, min(grid[axis], room))
        room //= max(1, grid[axis])
        if block[axis] < grid[axis] or room < 1:
            break
    counts = [math.ceil(n / b) if n else 0 for n, b in zip(grid, block)]
    for index in np.ndindex(*counts):
        yield tuple(slice(i * b, min(n, (i + 1) * b)) for i, b, n in zip(index, block, grid))


def check_region(array: Array, region: tuple[slice, ...], stored: np.ndarray | None, *,
                 parallel: bool = True) -> CellResults:
    """Fetch and decode the stored cells of ``region`` (``stored``: the inventory over
    the region; ``None``: read every cell of it)."""
    return check_cells(array._io, grid_cells(stored, region, array._io.grid.grid_shape),
                       parallel=parallel)


def build_report(array: Array, found: Survey, results: CellResults) -> VerifyReport:
    """The report of ``array`` from its survey and the results of all its regions."""
    io = array._io
    grid = io.grid.grid_shape
    total = math.prod(grid)
    stored = found.inventory.stored
    if stored is None:  # read key by key: the absent cells are the missing ones
        stored = np.ones(grid, dtype=bool)
        for coords in results.absent:
            stored[coords] = False
    else:
        for coords in results.absent:  # deleted between the listing and the read
            stored[coords] = False
    lost = _lost(io, stored, found.written)
    lost_set = set(lost)
    missing_total = total - int(stored.sum()) - len(lost)
    missing = []
    for flat in _unstored(stored):
        key = io.key(tuple(int(i) for i in np.unravel_index(flat, grid)))
        if key not in lost_set:
            missing.append(key)
            if len(missing) >= LIMIT:
                break
    inv = found.inventory
    return VerifyReport(
        arrays=(array.path or "/",), chunks=total, stored=int(stored.sum()),
        checked=results.checked, inner_chunks=results.inner, missing=missing_total,
        corrupt=len(results.corrupt), unexpected=inv.n_unexpected, lost=len(lost),
        missing_keys=tuple(missing), corrupt_keys=tuple(results.corrupt[:LIMIT]),
        unexpected_keys=tuple(inv.unexpected[:LIMIT]), lost_keys=tuple(sorted(lost)[:LIMIT]),
        unlisted=(array.path or "/",) if inv.stored is None else ())


def _lost(io: ChunkSpace, stored: np.ndarray, written: set[str] | None) -> list[str]:
    """Keys the last finished job stored that are valid chunk keys, not stored now."""
    if not written:
        return []
    prefix = f"{io.path}/" if io.path else ""
    gone = []
    for relative in written:
        coords = io.key_encoding.decode(relative, len(io.grid.shape))
        if coords is not None and io.grid.contains(coords) and not stored[coords]:
            gone.append(prefix + relative)
    return gone


def _unstored(stored: np.ndarray) -> Iterator[int]:
    """Flat indices of the cells not stored, a slice of the grid at a time."""
    flat = stored.reshape(-1)
    step = 2**20
    for start in range(0, flat.size, step):
        for index in np.flatnonzero(~flat[start:start + step]).tolist():
            yield start + index


def verify_array(array: Array) -> VerifyReport:
    """Verify ``array`` in this process, a region at a time (the engine's I/O threads
    fetch and decode each region's chunks)."""
    found = survey(array)
    results = CellResults()
    stored = found.inventory.stored
    for region in regions(chunk_grid(array), REGION_CELLS):
        part = None if stored is None else stored[region]
        if part is not None and not part.any():
            continue
        results.add(check_region(array, region, part))
    return build_report(array, found, results)


def arrays_below(node: Array | Group) -> Iterator[Array]:
    """``node`` if it is an array, else every array below the group ``node``."""
    if isinstance(node, Array):
        yield node
        return
    if not isinstance(node, Group):
        raise ArgumentTypeError(f"verify takes a chunkflow Array or Group, got "
                                f"{type(node).__name__}")
    for _, member in node.members():
        yield from arrays_below(member)


def verify_node(node: Array | Group) -> VerifyReport:
    """Verify ``node`` (an array, or every array below a group) in this process, with
    chunkflow's I/O threads. On a dask scheduler (a cluster):
    :func:`chunkflow.verify` with ``scheduler=``.

    Examples
    --------
    >>> import numpy as np, chunkflow
    >>> z = chunkflow.array(np.arange(10), chunks=(3,))
    >>> z.verify().ok, z.verify().checked
    (True, 4)
    """
    report = VerifyReport()
    for array in arrays_below(node):
        report = report.merge(verify_array(array))
    return report


def _array_verify(self: Array) -> VerifyReport:
    """Read every chunk key and decode every stored chunk, in this process; report
    missing, corrupt, unexpected and lost chunks. On a dask scheduler:
    ``chunkflow.verify(array, scheduler=...)`` (see :func:`chunkflow.verify`).

    Examples
    --------
    >>> import numpy as np, chunkflow
    >>> chunkflow.array(np.arange(10), chunks=(3,)).verify().ok
    True
    """
    return verify_node(self)


def _group_verify(self: Group) -> VerifyReport:
    """Verify every array below this group, in this process (on a dask scheduler:
    ``chunkflow.verify(group, scheduler=...)``; see :func:`chunkflow.verify`).

    Examples
    --------
    >>> import chunkflow
    >>> root = chunkflow.group()
    >>> _ = root.create_group("g").create_array("a", shape=(4,), chunks=(2,), dtype="u1")
    >>> root.verify().arrays
    ('g/a',)
    """
    return verify_node(self)


# Array and Group are defined before this module; their verify methods are added here.
Array.verify = _array_verify  # type: ignore[attr-defined]  # added after the class
Group.verify = _group_verify  # type: ignore[attr-defined]  # added after the class
