"""The plan of a labelling job: its source, its blocks, and one block task's memory,
fixed before anything runs.

Blocks are whole chunks (shards) of the output, so the write pass writes whole chunks
and no two tasks touch one. By default blocks grow toward :data:`DEFAULT_BLOCK_VOXELS`
(larger blocks leave fewer parts on faces for the merge), but never leave fewer than
:data:`~chunkflow.graph.read.BLOCKS_PER_THREAD` blocks per worker thread where the
output has that many chunks.

A block task holds, at its peak (:func:`block_memory`): the block as read, its local
labels (``int32``) and what ``scipy.ndimage.label`` allocates beside them (a merge
table of up to one ``intp`` per two voxels), the map from local labels to global ones
(up to one ``int64`` per two voxels), the output block, and one source and one output
chunk being decoded or encoded. The merge tree's tasks hold the parts that cross their
halves' faces: a surface, not a volume (see the benchmark's notes for figures).

Examples
--------
>>> block_memory((1024, 1024), label_voxel_bytes(1, 4), [(1, (256, 256)), (4, (256, 256))])
18153472
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from functools import cached_property
from typing import TYPE_CHECKING, Any

import dask.array as da
import numpy as np
from dask.utils import format_bytes

from chunkflow.core.array import Array
from chunkflow.engine.pool import serial_io
from chunkflow.errors import MemoryPlanError
from chunkflow.graph.blocks import default_per_block
from chunkflow.graph.labels.geometry import BlockGrid, first_rows
from chunkflow.graph.labels.local import cc3d_connectivity, local_labels
from chunkflow.graph.labels.parts import BlockInfo, block_pairs, scan_labels
from chunkflow.graph.labels.provisional import keep, new_run, take
from chunkflow.graph.labels.structure import block_offsets
from chunkflow.graph.labels.tree import MergeTree
from chunkflow.graph.memory import default_max_memory, fitting_multiples
from chunkflow.graph.read import BLOCKS_PER_THREAD, block_multiples
from chunkflow.graph.scheduler import worker_threads

if TYPE_CHECKING:
    from chunkflow.graph.read import BlockChunks
    from chunkflow.graph.scheduler import SchedulerLike

__all__ = ["DEFAULT_BLOCK_VOXELS", "LabelJob", "Source", "block_memory", "label_voxel_bytes",
           "native", "plan_blocks"]

# Blocks grow toward this many voxels (16 MiB of int32 labels). Larger blocks leave
# fewer parts on their faces to merge, and a task's memory is a few bytes per voxel.
DEFAULT_BLOCK_VOXELS = 1 << 22


@dataclass(frozen=True)
class Source:
    """What a block task reads: a chunkflow array, or a dask array (a lazy
    expression, computed block by block in the task, on the task's own thread)."""

    array: Array | None = None
    lazy: da.Array | None = None

    def _lazy(self) -> da.Array:
        assert self.lazy is not None, "a Source holds an array or a dask array"
        return self.lazy

    @property
    def shape(self) -> tuple[int, ...]:
        return self.array.shape if self.array is not None else tuple(self._lazy().shape)

    @property
    def ndim(self) -> int:
        return len(self.shape)

    @property
    def dtype(self) -> np.dtype:
        return self.array.dtype if self.array is not None else np.dtype(self._lazy().dtype)

    @property
    def chunks(self) -> tuple[int, ...]:
        """Its chunk (shard) shape: what a new output is chunked like by default."""
        if self.array is not None:
            return self.array.write_chunks
        return tuple(int(c[0]) if c else 1 for c in self._lazy().chunks)

    @property
    def token(self) -> Any:
        """What names the source in a graph's token (no I/O)."""
        if self.array is not None:
            return (self.array.store.identity, self.array.path)
        return self._lazy().name

    def read(self, region: tuple[slice, ...]) -> np.ndarray:
        """The values of ``region``, in native byte order (scipy's and scikit-image's
        loops take no other; the values are the same)."""
        if self.array is not None:
            with serial_io():  # dask supplies the parallelism
                data = np.asarray(self.array.get_basic_selection(region))
        else:
            data = np.asarray(self._lazy()[region].compute(scheduler="sync"))
        return native(data)


def native(data: np.ndarray) -> np.ndarray:
    """``data`` in native byte order (itself when it is).

    Examples
    --------
    >>> native(np.array([1, 2], ">i4")).dtype.isnative
    True
    """
    if data.dtype.isnative:
        return data
    return data.astype(data.dtype.newbyteorder("="))


@dataclass(frozen=True)
class LabelJob:
    """Everything a task of a labelling job needs, in the graph once: the blocks, the
    structure, the source, and how a block is labelled and its parts paired with its
    neighbours' (``scipy.ndimage.label``'s labels, by cc3d where it may, and face
    slabs here; see
    :class:`~chunkflow.graph.labels.segments.SegmentJob` for per-block segmenters).
    """

    grid: BlockGrid
    structure: np.ndarray
    source: Source
    offsets: list[tuple[tuple[int, ...], list[tuple[int, ...]]]] = field(default_factory=list)
    # cc3d's connectivity for the structure, chosen where the job is planned (None:
    # scipy labels; see chunkflow.graph.labels.local).
    connectivity: int | None = field(default=None, kw_only=True)
    # Names the labels the first pass keeps for the write pass (None: kept nowhere;
    # see chunkflow.graph.labels.provisional).
    run: str | None = field(default=None, kw_only=True)

    @cached_property
    def tree(self) -> MergeTree:
        return MergeTree(self.grid.numblocks)

    @classmethod
    def create(cls, grid: BlockGrid, structure: np.ndarray, source: Source) -> LabelJob:
        return cls(grid, structure, source, block_offsets(structure),
                   connectivity=cc3d_connectivity(structure), run=new_run())

    def labels(self, index: tuple[int, ...]) -> tuple[np.ndarray, int]:
        """Block ``index``'s local labels (numbered by first voxel) and their count."""
        return local_labels(self.source.read(self.grid.region(index)), self.structure,
                            self.connectivity)

    def scan(self, index: tuple[int, ...]) -> tuple[Any, BlockInfo]:
        """The first pass over block ``index``: what its pairs need, and its info."""
        labels, count = self.labels(index)
        rows, places = first_rows(labels, count)
        found = scan_labels(self.grid, index, labels, count, (rows, places))
        keep(self.run, index, labels, rows)
        return found

    def labels_again(self, index: tuple[int, ...],
                     info: BlockInfo) -> tuple[np.ndarray, np.ndarray]:
        """Block ``index``'s local labels for the write pass and the first row of each:
        those the first pass kept, or labelled again (and checked against ``info``)."""
        kept = take(self.run, index)
        if kept is not None:
            return kept
        labels, count = self.labels(index)
        self.check_again(index, count, info)
        return labels, first_rows(labels, info.count)[0]

    def pairs(self, own: Any, other: Any, offset: tuple[int, ...],
              voxels: list[tuple[int, ...]]) -> np.ndarray:
        """Key pairs of the parts of two neighbouring blocks that are one object."""
        return block_pairs(own, other, offset, voxels)

    def check_again(self, index: tuple[int, ...], count: int, info: BlockInfo) -> None:
        """The write pass labelled block ``index`` as the first pass did (scipy does)."""

    def neighbours(self, index: tuple[int, ...]) -> list[tuple[tuple[int, ...], list[tuple[int, ...]]]]:
        """The offsets to the blocks after ``index`` that it may touch, within the grid."""
        return [(o, voxels) for o, voxels in self.offsets
                if all(0 <= i + d < n for i, d, n in zip(index, o, self.grid.numblocks))]

    def __getstate__(self) -> dict[str, Any]:
        state = dict(self.__dict__)
        state.pop("tree", None)  # rebuilt where needed: cheaper than pickled
        return state

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__dict__.update(state)


def block_memory(block: Sequence[int], per_voxel: int,
                 chunks: Sequence[tuple[int, Sequence[int]]]) -> int:
    """The peak bytes of one block task: ``per_voxel`` bytes per voxel of the block, and
    one chunk of each of ``chunks`` (itemsize, chunk shape) being decoded or encoded."""
    return math.prod(block) * per_voxel + sum(itemsize * math.prod(chunk)
                                              for itemsize, chunk in chunks)


def label_voxel_bytes(source_itemsize: int, out_itemsize: int) -> int:
    """A labelling block task's bytes per voxel (see the module notes)."""
    return source_itemsize + 4 + 4 + 4 + out_itemsize


def _default_multiples(shape: tuple[int, ...], unit: tuple[int, ...],
                       scheduler: SchedulerLike, voxels: int) -> tuple[int, ...]:
    return default_per_block(shape, unit, Ellipsis, 1, voxels,
                             BLOCKS_PER_THREAD * worker_threads(scheduler))


def plan_blocks(template: Array, per_voxel: int, chunks: Sequence[tuple[int, Sequence[int]]],
                blocks: BlockChunks, max_memory: int | str | None, scheduler: SchedulerLike,
                what: str = "label", voxels: int = DEFAULT_BLOCK_VOXELS) -> tuple[int, ...]:
    """The block shape (whole chunks of ``template``, the output or the labels read),
    checked against ``max_memory`` (see :func:`block_memory`); by default blocks grow
    toward ``voxels``.

    Raises
    ------
    MemoryPlanError
        One block task would need more than ``max_memory``; the message says which
        blocks would fit. Nothing is created.
    """
    from chunkflow.config import byte_count

    shape, unit = template.shape, template.write_chunks
    multiples = (_default_multiples(shape, unit, scheduler, voxels) if blocks is None
                 else block_multiples(template, Ellipsis, blocks))

    def need(block: tuple[int, ...]) -> int:
        return block_memory(block, per_voxel, chunks)

    if max_memory is None:
        limit, note = default_max_memory(scheduler)
    else:
        limit, note = byte_count(f"{what}: max_memory", max_memory), ""
    block = tuple(min(k * u, n) for k, u, n in zip(multiples, unit, shape))
    if need(block) > limit:
        fit = fitting_multiples(multiples, unit, shape, lambda b: need(b) <= limit)
        advice = (f"blocks={fit} (blocks of {tuple(k * u for k, u in zip(fit, unit))}) would fit"
                  if fit is not None else
                  f"not even one chunk {unit} per block fits: {_smaller_chunks(what)} or raise "
                  "max_memory")
        raise MemoryPlanError(
            f"{what}: each block task would need about {format_bytes(need(block))} (blocks of "
            f"{block}), more than max_memory {format_bytes(limit)}"
            f"{f' ({note})' if note else ''}; {advice}")
    return tuple(k * u for k, u in zip(multiples, unit))


def _smaller_chunks(what: str) -> str:
    # measure has no output array: its blocks are made of the labels' chunks.
    return ("store the labels in smaller chunks" if what in ("measure", "regionprops_table")
            else "give the output smaller chunks")


def neighbour_mapping(job: LabelJob) -> Mapping[tuple[int, ...], list[tuple[int, ...]]]:
    """Block -> the blocks after it that it may touch (for building the graph)."""
    return {index: [tuple(i + d for i, d in zip(index, o)) for o, _ in job.neighbours(index)]
            for index in job.grid.blocks()}
