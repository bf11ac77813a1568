"""measure_groups: :func:`chunkflow.measure`'s table group by group of labels, so that
a table of any number of objects (10**8 and more) is written without ever being whole
in memory.

The first pass is :func:`chunkflow.measure`'s, but each block task writes its partial
table (one row per label in the block, ascending) to a scratch folder as one ``.npy``
file of records, and returns only its row count and first label. The tables are
then merged a *group* at a time: a group is a range of label values ``[lo, hi)``; each
block's rows in it are contiguous (the rows are sorted), found by a binary search in
the memory-mapped file, and read alone. ``hi`` is chosen so that a group has at most
``group_size`` partial rows (hence at most as many objects): it starts at
``lo + group_size`` (no more labels than that fit in the range) and widens while groups
come out small (sparse labels), narrows when they come out large (objects in several
blocks). A label whose parts alone are more rows than that is a group by itself.
Each group's columns (and its objects' crop properties) are computed from its merged
rows, as :func:`chunkflow.measure` computes the whole table's.

Examples
--------
>>> import numpy as np
>>> labels = np.array([[1, 1, 0, 2], [0, 3, 0, 2], [4, 0, 5, 5]])
>>> for group in measure_groups(labels, properties=["label", "area"], group_size=2):
...     group["label"].tolist(), group["area"].tolist()
([1, 2], [2.0, 2.0])
([3, 4], [1.0, 1.0])
([5], [2.0])
"""

from __future__ import annotations

import heapq
import os
import shutil
import tempfile
from collections.abc import Iterator, Mapping, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np
from dask.delayed import Delayed

from chunkflow.errors import InvalidArgumentError
from chunkflow.graph.labels.geometry import BlockGrid
from chunkflow.graph.labels.measuring import (
    DEFAULT_PROPERTIES,
    MeasurePlan,
    finish_table,
    partial_table,
    plan_measure,
)
from chunkflow.graph.labels.plan import Source
from chunkflow.graph.labels.tables import merge_tables
from chunkflow.graph.scheduler import compute as run

if TYPE_CHECKING:
    from chunkflow.graph.read import ArraySource, BlockChunks
    from chunkflow.graph.scheduler import ProgressArg, SchedulerLike

__all__ = ["GROUP_SIZE", "measure_groups"]

#: Objects per group by default (a million: tens of MiB of columns).
GROUP_SIZE = 1_000_000
_END = 2**64  # past every label (labels are below 2**64)


def _records(table: dict[str, np.ndarray]) -> np.ndarray:
    """The columns of a partial table as one array of records (a column of several
    values as a sub-array field)."""
    dtype = np.dtype([(name, column.dtype, column.shape[1:]) for name, column in table.items()])
    records = np.empty(len(table["label"]), dtype)
    for name, column in table.items():
        records[name] = column
    return records


def _spill(grid: BlockGrid, labels: Source, intensity: Source | None, stats: set[str],
           folder: str, index: tuple[int, ...]) -> tuple[str, int, int]:
    """Block ``index``'s partial table, written to ``folder``: (its file, rows, first
    label); no file for a block without objects."""
    table = partial_table(grid, labels, intensity, stats, index)
    rows = len(table["label"])
    if not rows:
        return "", 0, 0
    path = os.path.join(folder, "-".join(map(str, index)) + ".npy")
    np.save(path, _records(table))
    return path, rows, int(table["label"][0])


def _collect(*parts: tuple[str, int, int]) -> list[tuple[str, int, int]]:
    return list(parts)


def _first_pass(plan: MeasurePlan, folder: str, scheduler: SchedulerLike,
                progress: ProgressArg) -> list[tuple[str, int, int]]:
    graph: dict[Any, Any] = {}
    keys = []
    for index in plan.grid.blocks():
        key = (f"chunkflow-measure-spill-{plan.token}", *index)
        graph[key] = (_spill, plan.grid, plan.source, plan.image, plan.stats, folder, index)
        keys.append(key)
    root = f"chunkflow-measure-spilled-{plan.token}"
    graph[root] = (_collect, *keys)
    (found,) = run(Delayed(root, graph), scheduler=scheduler, progress=progress)
    return [part for part in found if part[1]]


class _Cursor:
    """One block's file of partial rows, read from ``row`` on."""

    def __init__(self, path: str, rows: int) -> None:
        self.path, self.rows, self.row = path, rows, 0

    def labels(self) -> np.ndarray:
        return np.load(self.path, mmap_mode="r")["label"]

    def end(self, labels: np.ndarray, hi: int) -> int:
        """The first row at or past the label ``hi``."""
        if hi >= _END:
            return self.rows
        return self.row + int(np.searchsorted(labels[self.row:], np.uint64(hi)))

    def take(self, end: int) -> dict[str, np.ndarray]:
        records = np.array(np.load(self.path, mmap_mode="r")[self.row:end])
        self.row = end
        return {name: records[name] for name in records.dtype.names or ()}


def _groups(parts: list[tuple[str, int, int]], size: int) -> Iterator[list[dict[str, np.ndarray]]]:
    """The partial rows of each group of labels, in order (see the module notes)."""
    cursors = [_Cursor(path, rows) for path, rows, _ in parts]
    heap = [(first, i) for i, (_, _, first) in enumerate(parts)]
    heapq.heapify(heap)
    width = size
    while heap:
        lo = heap[0][0]
        taken = []
        while heap and heap[0][0] < min(lo + width, _END):
            taken.append(heapq.heappop(heap)[1])
        labels = {i: cursors[i].labels() for i in taken}
        while True:
            hi = min(lo + width, _END)
            ends = {i: cursors[i].end(labels[i], hi) for i in taken}
            rows = sum(end - cursors[i].row for i, end in ends.items())
            if rows <= size or width == 1:
                break
            width = max(1, width * size // (2 * rows))  # narrower: objects in many blocks
        group = [cursors[i].take(ends[i]) for i in taken if ends[i] > cursors[i].row]
        for i in taken:
            if cursors[i].row < cursors[i].rows:
                heapq.heappush(heap, (int(labels[i][cursors[i].row]), i))
        del labels
        if rows < size // 2:
            width *= 2  # wider: sparse labels
        yield group


def measure_groups(
    labels: ArraySource | np.ndarray,
    intensity: ArraySource | np.ndarray | None = None,
    *,
    properties: Sequence[Any] = DEFAULT_PROPERTIES,
    spacing: Any = None,
    group_size: int = GROUP_SIZE,
    blocks: BlockChunks = None,
    max_memory: int | str | None = None,
    scheduler: SchedulerLike = None,
    progress: ProgressArg = False,
    storage_options: Mapping[str, Any] | None = None,
    scratch: str | None = None,
) -> Iterator[dict[str, np.ndarray]]:
    """:func:`chunkflow.measure`'s table, as tables of consecutive groups of at most
    ``group_size`` objects, in label order (at least one, empty for no objects).

    The arguments are :func:`chunkflow.measure`'s; ``scratch`` is a local folder for
    the first pass's partial tables (default: a new folder in the system's temporary
    folder, removed at the end; every worker must see it). What is held at once is
    one group's partial rows and columns, whatever the number of objects. The
    ``label`` column is ``uint64`` in every group when any label is 2**63 or more.
    """
    if isinstance(group_size, bool) or not isinstance(group_size, (int, np.integer)) \
            or group_size < 1:
        raise InvalidArgumentError(f"measure: group_size must be a positive integer, got "
                                   f"{group_size!r}")
    plan = plan_measure(labels, intensity, properties, spacing, blocks, max_memory, scheduler,
                        storage_options)
    folder = tempfile.mkdtemp(prefix="chunkflow-measure-", dir=scratch)
    try:
        parts = _first_pass(plan, folder, scheduler, progress)
        if not parts:
            # No objects: the empty columns, as measure gives them.
            yield finish_table(plan, {"label": np.zeros(0, np.uint64)}, max_memory, scheduler,
                               progress)
            return
        wide = max(_last_labels(parts)) > np.iinfo(np.int64).max
        for group in _groups(parts, int(group_size)):
            table = finish_table(plan, merge_tables(group), max_memory, scheduler, progress)
            yield _wide_labels(plan, table) if wide else table
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def _last_labels(parts: list[tuple[str, int, int]]) -> list[int]:
    return [int(np.load(path, mmap_mode="r")["label"][rows - 1]) for path, rows, _ in parts]


def _wide_labels(plan: MeasurePlan, table: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    """The ``label`` columns as ``uint64`` (some group has a label past ``int64``)."""
    named = {name for name, what in plan.request.entries if what == "label"}
    return {name: column.astype(np.uint64) if name in named else column
            for name, column in table.items()}
