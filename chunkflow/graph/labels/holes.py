"""Holes filled with the label job's first pass and merge, and one write pass.

``scipy.ndimage.binary_fill_holes`` keeps the background voxels its dilation reaches
from outside the array; with a structure symmetric about its centre those are the
background's connected components with a voxel on a face across a *border axis* (an
axis along which the structure has an offset). Here:

1. ``scan``: each block's background (``source == 0``: NaN is foreground, as
   ``numpy.logical_not`` says) is labelled as :func:`chunkflow.label` labels it, its
   labels kept for the write pass (:mod:`chunkflow.graph.labels.provisional`), and the
   parts on the array's own faces across border axes (*outer* parts) noted;
2. ``pairs``, ``up``, ``down``: the label job's merge gives every exposed part its
   component's final key;
3. ``outer``: each block names the final keys of its exposed outer parts; their union
   (a tree of unions) is every component that spans blocks and reaches the outside;
4. ``write``: a part is kept as background when it is outer or its component is in
   that union; everything else (the foreground and the holes) is ``True``: one gather
   through a table of the block's parts, written as whole chunks.

No labels are numbered or stored. A task holds one block, its faces, or the
components crossing one merge-tree node or the border.

Examples
--------
>>> import numpy as np
>>> from scipy import ndimage
>>> import chunkflow
>>> a = np.ones((9, 12), bool); a[2:7, 2:5] = False; a[4, 7:12] = False
>>> filled = fill_holes(chunkflow.array(a, chunks=(4, 5)), ndimage.generate_binary_structure(2, 1),
...                     [0, 1], chunkflow.MemoryStore(), blocks=(1, 1))
>>> bool((filled[...] == ndimage.binary_fill_holes(a)).all())
True
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, fields
from typing import TYPE_CHECKING, Any

import numpy as np
from dask.base import tokenize

from chunkflow.core.array import Array
from chunkflow.graph.labels.geometry import BlockGrid, first_rows
from chunkflow.graph.labels.graph import FAN_IN, Key, _Builder, create_output, finish
from chunkflow.graph.labels.labelling import (
    job_sources,
    open_source,
    run_label_job,
    source_reads,
)
from chunkflow.graph.labels.local import cc3d_connectivity, local_labels
from chunkflow.graph.labels.output import OutputHandle, plan_output
from chunkflow.graph.labels.parts import BlockInfo, Faces, scan_labels
from chunkflow.graph.labels.plan import LabelJob, label_voxel_bytes, plan_blocks
from chunkflow.graph.labels.provisional import keep, new_run
from chunkflow.graph.labels.ranks import gather
from chunkflow.graph.labels.structure import block_offsets

if TYPE_CHECKING:
    from chunkflow.graph.labels.merge import KeyMap
    from chunkflow.graph.labels.output import OutputPlan
    from chunkflow.graph.read import BlockChunks
    from chunkflow.graph.scheduler import ProgressArg, SchedulerLike

__all__ = ["FillInfo", "FillJob", "fill_holes", "outer_labels"]


@dataclass(frozen=True)
class FillInfo(BlockInfo):
    """A block's info, with its outer parts (local labels, ascending, 0 left out)."""

    outer: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int64))


def outer_labels(grid: BlockGrid, index: tuple[int, ...], labels: np.ndarray,
                 axes: Sequence[int]) -> np.ndarray:
    """The labels of block ``index`` on the array's faces across ``axes``.

    Examples
    --------
    >>> grid = BlockGrid((4, 4), (2, 4))
    >>> outer_labels(grid, (0, 0), np.array([[0, 1, 0, 2], [3, 0, 4, 0]]), [1]).tolist()
    [2, 3]
    >>> outer_labels(grid, (0, 0), np.array([[0, 1, 0, 2], [3, 0, 4, 0]]), [0]).tolist()
    [1, 2]
    """
    found = [np.zeros(0, labels.dtype)]
    for axis in axes:
        for side in (0, 1):
            if not grid.interior_face(index, axis, side):
                found.append(np.take(labels, 0 if side == 0 else -1, axis=axis).reshape(-1))
    values = np.unique(np.concatenate(found)).astype(np.int64)
    return values[values != 0]


@dataclass(frozen=True)
class FillJob(LabelJob):
    """A label job over the background of its source, noting the outer parts."""

    border: tuple[int, ...] = field(default=(), kw_only=True)

    @classmethod
    def create_fill(cls, grid: BlockGrid, structure: np.ndarray, source: Any,
                    border: Sequence[int]) -> FillJob:
        return cls(grid, structure, source, block_offsets(structure),
                   connectivity=cc3d_connectivity(structure), run=new_run(),
                   border=tuple(int(a) for a in border))

    def labels(self, index: tuple[int, ...]) -> tuple[np.ndarray, int]:
        """The local labels of block ``index``'s background."""
        data = self.source.read(self.grid.region(index))
        return local_labels(data == 0, self.structure, self.connectivity)

    def scan(self, index: tuple[int, ...]) -> tuple[Faces, FillInfo]:
        labels, count = self.labels(index)
        rows, places = first_rows(labels, count)
        faces, info = scan_labels(self.grid, index, labels, count, (rows, places))
        keep(self.run, index, labels, rows)
        values = {f.name: getattr(info, f.name) for f in fields(BlockInfo)}
        return faces, FillInfo(**values, outer=outer_labels(self.grid, index, labels,
                                                            self.border))


def _final_keys(info: FillInfo, finals: KeyMap | None) -> np.ndarray:
    """The final keys of the block's exposed parts (their own where one block)."""
    if finals is None or not len(info.keys):
        return info.keys
    return finals.lookup(info.keys, "the final keys of the block's exposed parts")


def outer_keys(info: FillInfo, finals: KeyMap | None) -> np.ndarray:
    """The final keys (ascending) of the block's exposed outer parts."""
    on = np.isin(info.exposed, info.outer, assume_unique=True)
    return np.unique(_final_keys(info, finals)[on])


def union(*keys: np.ndarray) -> np.ndarray:
    return np.unique(np.concatenate([np.zeros(0, np.int64), *keys]))


def write(job: FillJob, index: tuple[int, ...], handle: OutputHandle, info: FillInfo,
          finals: KeyMap | None, reaching: np.ndarray) -> bool:
    """Block ``index`` filled: ``False`` on the parts the outside reaches."""
    def run() -> bool:
        labels, _ = job.labels_again(index, info)
        reached = np.zeros(info.count + 1, bool)
        reached[info.outer] = True
        if len(info.exposed):
            reached[info.exposed] |= np.isin(_final_keys(info, finals), reaching)
        table = ~reached  # label 0 (the foreground) stays True
        handle.write(job.grid.region(index), gather(table, labels))
        return True

    return handle.run(index, job.grid.region(index), run)


class _FillBuilder(_Builder):
    def fill(self, output: OutputPlan) -> Key:
        keys = [self.add(self.block("outer", b), outer_keys, self.block("info", b),
                         self.finals(b)) for b in self.blocks]
        depth = 0
        while len(keys) > 1:
            keys = [self.add(self.key("reaching", depth, i), union, *keys[i:i + FAN_IN])
                    for i in range(0, len(keys), FAN_IN)]
            depth += 1
        reaching = keys[0]
        total = self.add(self.key("total"), int, 0)  # no labels to count
        created = self.add(self.key("create"), create_output, output, total)
        written = [self.add(self.block("write", b), write, self.job_key, b, created,
                            self.block("info", b), self.finals(b), reaching)
                   for b in self.blocks]
        return self.add(self.key("done"), finish, created, total, self.job_key, *written)


def build_fill_graph(job: LabelJob, output: OutputPlan, token: str) -> tuple[dict[Key, Any], Key]:
    """The graph of a fill job and the key of its result ``(array, 0)``."""
    builder = _FillBuilder(job, token)
    builder.names["outer"] = builder.name("outer")
    builder.scan()
    builder.merge()
    return builder.graph, builder.fill(output)


def _any_dtype(dtype: np.dtype, what: str) -> None:
    """Every dtype compares with 0."""


def fill_holes(source: Array, structure: np.ndarray, border: Sequence[int], out: Any, *,
               overwrite: bool = False, resume: bool = False,
               scheduler: SchedulerLike = None, progress: ProgressArg = False,
               max_memory: int | str | None = None,
               storage_options: Mapping[str, Any] | None = None,
               blocks: BlockChunks = None, what: str = "binary_fill_holes") -> Array:
    """``source`` with the holes of its foreground filled, as a new boolean array at
    ``out`` (a location or store) or written into an existing array; ``structure`` a
    symmetric ``(3,) * ndim`` array, ``border`` its axes with an offset."""
    # storage_options are the output's where the source is open already.
    src = open_source(source, None if isinstance(source, Array) else storage_options, what,
                      check=_any_dtype)
    shape = tuple(int(n) for n in src.shape)
    # And where the output is a store already (a URL opened with them), none.
    options = storage_options if isinstance(out, (str, os.PathLike)) else None
    output = plan_output(what, out, shape, tuple(max(1, c) for c in src.chunks), shards=None,
                         dtype=np.dtype(bool), zarr_format=None, overwrite=overwrite,
                         resume=resume, job_name=None, storage_options=options,
                         reads=source_reads(src), fixed=True)
    template = output.template()
    reads = [(src.dtype.itemsize, src.chunks), (template.dtype.itemsize, template.write_chunks)]
    block = plan_blocks(template, label_voxel_bytes(src.dtype.itemsize, template.dtype.itemsize),
                        reads, blocks, max_memory, scheduler, what=what)
    grid = BlockGrid(shape, tuple(max(1, b) for b in block))
    job = FillJob.create_fill(grid, structure, src, border)
    parts = {"fill_holes": tokenize(structure.tolist(), list(border)),
             "block plan": tokenize(grid.block)}
    output = output.with_job(parts, grid.numblocks, sources=job_sources(src, None))
    token = tokenize("fill_holes", structure.tolist(), list(border), grid, src.token, output,
                     resume)
    array, _ = run_label_job(job, output, token, compute=True, scheduler=scheduler,
                             progress=progress, build=build_fill_graph)
    return array
