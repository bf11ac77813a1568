"""segment: a per-block segmenter's labels made global, numbered as :func:`label` numbers.

``fn`` labels each block's window (the block and ``depth`` voxels around it, cut at
the array's edge) with labels of its own. A block's *parts* are ``fn``'s labels inside
the block. Two neighbouring blocks (across faces, edges and corners) both labelled the
voxels where their windows overlap: a label of one and a label of the other whose
overlap there has an intersection over union of at least ``min_overlap`` (and any
common voxel) are one object, if both are parts of their blocks. From there the job
is :func:`label`'s: the merge tree, the numbering by first voxel in C order, and a
write pass that runs ``fn`` again (it must give the same labels; a different count
raises).

Why ``fn = lambda b: ndimage.label(b > t)[0]`` with ``depth >= 1`` gives
``label(source > t)``: two parts of neighbouring blocks that touch (voxels ``p`` and
``q`` next to each other) are one component in the window of ``p``'s block, which holds
``q``, so they overlap at ``q``; and labels that overlap anywhere in both windows are
connected through real voxels. The unions are exactly the components.

Examples
--------
>>> import numpy as np
>>> import chunkflow
>>> from scipy import ndimage
>>> image = np.random.default_rng(2).random((40, 50)) > 0.6
>>> z = chunkflow.array(image, chunks=(10, 10))
>>> out, count = chunkflow.segment(lambda b: ndimage.label(b)[0], z, chunkflow.MemoryStore(),
...                                depth=1, blocks=(1, 1))
>>> expected, n = ndimage.label(image)
>>> count == n, bool((out[:] == expected).all())
(True, True)
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import dask.array as da
import numpy as np
from dask.base import tokenize

from chunkflow.errors import ArgumentTypeError, LabelError, ShapeMismatchError
from chunkflow.graph.labels.geometry import BlockGrid, face_bit
from chunkflow.graph.labels.labelling import (
    job_sources,
    open_source,
    run_label_job,
    source_reads,
)
from chunkflow.graph.labels.output import plan_output
from chunkflow.graph.labels.parts import BlockInfo, block_info
from chunkflow.graph.labels.plan import LabelJob, label_voxel_bytes, plan_blocks
from chunkflow.graph.labels.tables import compact_labels
from chunkflow.graph.map.halo import normalize_depth
from chunkflow.graph.transactions import check_commit, refuse_deferred_commit
from chunkflow.jobs import function_parts
from chunkflow.storage import output_location

if TYPE_CHECKING:
    from numpy.typing import ArrayLike, DTypeLike

    from chunkflow.graph.read import ArraySource, BlockChunks
    from chunkflow.graph.scheduler import ProgressArg, SchedulerLike

__all__ = ["Rims", "SegmentJob", "core_labels", "segment"]


def core_labels(core: np.ndarray, what: str = "segment") -> tuple[np.ndarray, int, np.ndarray,
                                                                    np.ndarray]:
    """``fn``'s labels inside a block renumbered 1..n by first voxel in C order (as
    ``scipy.ndimage.label`` numbers): (local labels, n, ``fn``'s labels ascending, and
    the local label of each).

    Examples
    --------
    >>> local, n, values, numbers = core_labels(np.array([[0, 7, 3], [3, 0, 9]]))
    >>> local.tolist(), n, values.tolist(), numbers.tolist()
    ([[0, 1, 2], [2, 0, 3]], 3, [3, 7, 9], [2, 1, 3])
    """
    values, index = compact_labels(core, what)
    count = len(values)
    flat = index.reshape(-1)
    first = np.full(count + 1, flat.size, np.int64)
    np.minimum.at(first, flat, np.arange(flat.size, dtype=np.int64))
    numbers = np.empty(count + 1, np.int64)
    numbers[0] = 0
    numbers[1 + np.argsort(first[1:], kind="stable")] = np.arange(1, count + 1)
    local = numbers[index].astype(np.int32 if count < 2**31 else np.int64)
    return local, count, values, numbers[1:]


@dataclass(frozen=True)
class Rims:
    """A block's window labels near its faces (face -> (global start, labels)), and
    ``fn``'s labels of its exposed parts (``values`` ascending) with their keys."""

    slabs: dict[int, tuple[tuple[int, ...], np.ndarray]]
    values: np.ndarray
    keys: np.ndarray

    def keys_of(self, values: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """(which of ``values`` are exposed parts, their keys)."""
        pos = np.minimum(np.searchsorted(self.values, values), max(0, len(self.values) - 1))
        found = (self.values[pos] == values) if len(self.values) else np.zeros(len(values), bool)
        return found, self.keys[pos[found]]

    def zone(self, face: int, box: tuple[slice, ...]) -> np.ndarray:
        start, labels = self.slabs[face]
        return labels[tuple(slice(b.start - s, b.stop - s) for b, s in zip(box, start))]


def _overlaps(a: np.ndarray, b: np.ndarray, min_overlap: float) -> tuple[np.ndarray, np.ndarray]:
    """The label pairs of ``a`` and ``b`` (same voxels, both nonzero) whose intersection
    over union there is at least ``min_overlap``."""
    both = (a != 0) & (b != 0)
    if not both.any():
        return np.zeros(0, a.dtype), np.zeros(0, b.dtype)
    pairs, inter = np.unique(np.stack([a[both], b[both]], axis=1), axis=0, return_counts=True)
    if min_overlap > 0:
        va, ca = np.unique(a[a != 0], return_counts=True)
        vb, cb = np.unique(b[b != 0], return_counts=True)
        union = (ca[np.searchsorted(va, pairs[:, 0])] + cb[np.searchsorted(vb, pairs[:, 1])]
                 - inter)
        pairs = pairs[inter / union >= min_overlap]
    return pairs[:, 0], pairs[:, 1]


@dataclass(frozen=True)
class SegmentJob(LabelJob):
    """A :class:`LabelJob` whose blocks ``fn`` labels, paired by overlaps in the halos."""

    fn: Callable[..., Any] | None = None
    depth: tuple[int, ...] = ()
    min_overlap: float = 0.0
    kwargs: Mapping[str, Any] = field(default_factory=dict)

    def window(self, index: tuple[int, ...]) -> tuple[slice, ...]:
        return tuple(slice(max(0, r.start - d), min(n, r.stop + d))
                     for r, d, n in zip(self.grid.region(index), self.depth, self.grid.shape))

    def _segmented(self, index: tuple[int, ...]) -> tuple[np.ndarray, tuple[slice, ...]]:
        window = self.window(index)
        assert self.fn is not None
        result = np.asarray(self.fn(self.source.read(window), **self.kwargs))
        expected = tuple(w.stop - w.start for w in window)
        if result.shape != expected or result.dtype.kind not in "iub":
            raise ShapeMismatchError(
                f"segment: {getattr(self.fn, '__qualname__', self.fn)!r} returned "
                f"{result.dtype} of shape {result.shape} for block {index} (window "
                f"{[(w.start, w.stop) for w in window]}); expected integer labels of shape "
                f"{expected}")
        if result.dtype.kind == "i" and result.size and int(result.min()) < 0:
            raise LabelError(
                f"segment: {getattr(self.fn, '__qualname__', self.fn)!r} returned negative "
                f"labels ({int(result.min())}) for block {index}; labels must be non-negative "
                "(0 for background)")
        return result, window

    def _core(self, result: np.ndarray, window: tuple[slice, ...],
              index: tuple[int, ...]) -> np.ndarray:
        return result[tuple(slice(r.start - w.start, r.stop - w.start)
                            for r, w in zip(self.grid.region(index), window))]

    def labels(self, index: tuple[int, ...]) -> tuple[np.ndarray, int]:
        result, window = self._segmented(index)
        local, count, _, _ = core_labels(self._core(result, window, index))
        return local, count

    def scan(self, index: tuple[int, ...]) -> tuple[Rims, BlockInfo]:
        result, window = self._segmented(index)
        local, count, values, numbers = core_labels(self._core(result, window, index))
        masks = np.zeros(count + 1, np.uint16)
        slabs = {}
        for axis, side in itertools.product(range(self.grid.ndim), (0, 1)):
            if not self.grid.interior_face(index, axis, side) or not self.depth[axis]:
                continue
            face = self.grid.region(index)[axis]
            edge = face.stop if side else face.start
            lo = max(window[axis].start, edge - self.depth[axis])
            hi = min(window[axis].stop, edge + self.depth[axis])
            box = tuple(slice(lo, hi) if a == axis else w for a, w in enumerate(window))
            slab = result[tuple(slice(b.start - w.start, b.stop - w.start)
                                for b, w in zip(box, window))]
            slabs[2 * axis + side] = (tuple(b.start for b in box), slab)
            # Compared as uint64 (int64 against uint64 would compare as float64).
            seen = np.unique(slab).astype(np.uint64)
            pos = np.minimum(np.searchsorted(values, seen), max(0, len(values) - 1))
            parts = numbers[pos[values[pos] == seen]] if len(values) else []
            masks[parts] |= face_bit(axis, side)
        info = block_info(self.grid, index, local, count, masks)
        # fn's label of each exposed part (the parts' local labels sorted by fn's label).
        by_value = np.zeros(count + 1, np.uint64)
        by_value[numbers] = values
        exposed_values = by_value[info.exposed]
        order = np.argsort(exposed_values)
        return Rims(slabs, exposed_values[order], info.keys[order]), info

    def pairs(self, own: Rims, other: Rims, offset: tuple[int, ...],
              voxels: list[tuple[int, ...]]) -> np.ndarray:
        axis = next(a for a in range(len(offset)) if offset[a])
        forward = offset[axis] > 0
        mine = own.slabs.get(2 * axis + (1 if forward else 0))
        theirs = other.slabs.get(2 * axis + (0 if forward else 1))
        if mine is None or theirs is None:
            return np.zeros((0, 2), np.int64)
        box = tuple(slice(max(a, b), min(a + n, b + m)) for a, b, n, m in
                    zip(mine[0], theirs[0], mine[1].shape, theirs[1].shape))
        if any(b.stop <= b.start for b in box):
            return np.zeros((0, 2), np.int64)
        a, b = _overlaps(own.zone(2 * axis + (1 if forward else 0), box),
                         other.zone(2 * axis + (0 if forward else 1), box), self.min_overlap)
        found_a, keys_a = own.keys_of(a.astype(np.uint64))
        found_b, keys_b = other.keys_of(b.astype(np.uint64))
        both = found_a & found_b
        return np.stack([keys_a[both[found_a]], keys_b[both[found_b]]], axis=1)

    def check_again(self, index: tuple[int, ...], count: int, info: BlockInfo) -> None:
        if count != info.count:
            raise LabelError(
                f"segment: {getattr(self.fn, '__qualname__', self.fn)!r} labelled block "
                f"{index} with {info.count} labels in the first pass and {count} in the "
                "write pass; fn must give the same labels for the same window")


def _any_dtype(dtype: np.dtype, what: str) -> None:
    """``fn`` reads the source: any dtype it takes."""


def all_offsets(ndim: int) -> list[tuple[tuple[int, ...], list[tuple[int, ...]]]]:
    """Every neighbouring block after a block (windows overlap across faces, edges and
    corners)."""
    return [(o, []) for o in itertools.product((-1, 0, 1), repeat=ndim)
            if any(o) and next(x for x in o if x) > 0]


def segment(
    fn: Callable[..., Any],
    source: ArraySource | da.Array | ArrayLike,
    out: ArraySource,
    *,
    depth: int | Sequence[int] | Mapping[int, int],
    min_overlap: float = 0.0,
    dtype: DTypeLike | None = None,
    chunks: tuple[int, ...] | None = None,
    shards: tuple[int, ...] | None = None,
    zarr_format: int | None = None,
    blocks: BlockChunks = None,
    max_memory: int | str | None = None,
    func_memory_factor: float = 2.0,
    scheduler: SchedulerLike = None,
    progress: ProgressArg = False,
    compute: bool = True,
    resume: bool = False,
    job_name: str | None = None,
    overwrite: bool = False,
    storage_options: Mapping[str, Any] | None = None,
    commit: str | None = None,
    **kwargs: Any,
) -> Any:
    """Segment ``source`` block by block with ``fn`` and make its labels global.

    Parameters
    ----------
    fn : callable
        ``fn(window, **kwargs)`` returns integer labels of the window's shape (0 for
        background; any numbering). Called twice per block (first pass and write pass);
        it must give the same labels both times.
    source, out
        As :func:`chunkflow.label`'s (any source values: ``fn`` reads them).
    depth : int, tuple or dict
        Halo per axis: windows of neighbouring blocks overlap by twice this. 1 is enough
        for a connected-components ``fn``; a segmenter whose objects are decided by
        their surroundings needs more.
    min_overlap : float
        The least intersection over union, in the overlap of two windows, of two
        labels that are one object (default 0: any common voxel). Raise it for models
        whose tiles disagree at their edges.
    func_memory_factor : float
        Window-sized arrays ``fn`` holds at its peak (for the memory plan).
    dtype, chunks, shards, zarr_format, blocks, max_memory, scheduler, progress,
    compute, resume, job_name, overwrite, storage_options, commit
        As :func:`chunkflow.label`'s; ``job_name`` names the job instead of ``fn`` and
        ``kwargs`` (for functions that cannot be tokenized deterministically).
    **kwargs
        Passed to ``fn``.

    Returns
    -------
    (chunkflow.Array, int)
        The labels, numbered by first voxel in C order, and their number.
    """
    if not callable(fn):
        raise ArgumentTypeError(f"segment: fn must be callable, got {type(fn).__name__}")
    if not 0 <= min_overlap <= 1:
        raise LabelError(f"segment: min_overlap must lie in [0, 1], got {min_overlap!r}")
    refuse_deferred_commit(commit, compute, "segment")
    out = output_location(out)  # a zarr-python Store as chunkflow's Store over it
    check_commit(out, commit, "segment")
    src = open_source(source, storage_options, "segment", check=_any_dtype)
    shape = tuple(int(n) for n in src.shape)
    halo = normalize_depth(depth, len(shape))
    fn_parts = function_parts(fn, (kwargs, min_overlap), job_name, strict=resume)
    output = plan_output("segment", out, shape, tuple(max(1, c) for c in (chunks or src.chunks)),
                         shards=shards, dtype=dtype, zarr_format=zarr_format,
                         overwrite=overwrite, resume=resume, job_name=job_name,
                         storage_options=storage_options, reads=source_reads(src))
    template = output.template()
    # The window as read, fn's result over it (func_memory_factor of int64 labels), then
    # as label's write pass.
    window_share = np.prod([1 + 2 * d / max(1, c) for d, c in zip(halo, template.write_chunks)])
    per_voxel = int(window_share * (src.dtype.itemsize + 8 * func_memory_factor)) + \
        label_voxel_bytes(0, template.dtype.itemsize)
    reads = [(src.dtype.itemsize, src.chunks), (template.dtype.itemsize, template.write_chunks)]
    block = plan_blocks(template, per_voxel, reads, blocks, max_memory, scheduler, "segment")
    job = SegmentJob(BlockGrid(shape, tuple(max(1, b) for b in block)), np.ones((3,) * len(shape), bool), src,
                     all_offsets(len(shape)), fn, halo, float(min_overlap), dict(kwargs))
    parts = {"segment": tokenize(halo, float(min_overlap)), "block plan": tokenize(job.grid.block)}
    output = output.with_job(parts, job.grid.numblocks, sources=job_sources(src, job_name),
                             function=fn_parts)
    token = tokenize("segment", fn, kwargs, halo, min_overlap, job.grid, src.token,
                     output, resume)
    return run_label_job(job, output, token, compute=compute, scheduler=scheduler,
                         progress=progress, commit=commit)

