"""Tasks of several blocks: one window read per task, the halos shared inside it.

A map task over one block reads the block's window (block plus halo) from the store,
and so decodes every chunk the halo touches: in 2-D a block of one chunk decodes up
to 9 chunks, in 3-D up to 27, and a job decodes each source chunk that many times. A
task over a *group* of blocks reads the group's window once (each chunk it touches
decoded once) and hands each block its own window cut out of it, so the halos of
neighbouring blocks in the group are read once: halo reuse with a budget of one task,
sized by the memory plan (:func:`blocks_per_task`), instead of the process-wide chunk
cache. The function still sees one block's window at a time, exactly the window a task
of that one block would read, so results do not depend on the grouping.

Examples
--------
>>> import numpy as np
>>> import chunkflow
>>> z = chunkflow.array(np.arange(12), chunks=3)
>>> group = TaskWindows.read((z,), (slice(0, 6),), (2,), "reflect")
>>> [(index, w.tolist(), halo) for index, _, (w,), halo in group.blocks((3,))]
[((0,), [1, 0, 0, 1, 2, 3, 4], ((2, 2),)), ((1,), [1, 2, 3, 4, 5, 6, 7], ((2, 2),))]
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from chunkflow.core.array import Array
from chunkflow.graph.map.halo import Halo, read_window, window_bounds

__all__ = ["DEFAULT_TASK_WINDOW_BYTES", "TaskWindows", "block_regions", "blocks_per_task"]

# A task's windows (all sources: its group of blocks plus halos) grow toward the larger
# of this and the plan of one block alone, so that halo reuse at most doubles a task's
# memory. Measured on 2 cores (loaded), Gaussian sigma 2 of 8192^2 uint16 in 512^2
# chunks to float32, peak RSS above the interpreter's: one block per task (258 tasks)
# 32 MiB; windows up to 8 MiB (34 tasks) 49 MiB, 16 MiB (18 tasks) 61 MiB, 32 MiB (10
# tasks) 93 MiB, where dask's map_overlap + to_zarr took 144 MiB. With edge windows
# padded in place (halo.py), 16 MiB came to 47 MiB; CPU time 3.5 s against dask's 4.9 s
# and 4.2 s with one block per task (each source chunk decoded by up to 9 tasks).
DEFAULT_TASK_WINDOW_BYTES = 16 * 2**20


def block_regions(region: Sequence[slice], spans: Sequence[int]
                  ) -> Iterator[tuple[tuple[int, ...], tuple[slice, ...]]]:
    """(block index, block region) of every block of a task's ``region``, in C order.

    Blocks start at multiples of ``spans`` (array elements per block and axis).

    Examples
    --------
    >>> [(i, [(s.start, s.stop) for s in r]) for i, r in block_regions(
    ...     (slice(4, 10), slice(0, 3)), (4, 3))]
    [((1, 0), [(4, 8), (0, 3)]), ((2, 0), [(8, 10), (0, 3)])]
    """
    per_axis = []
    for part, span in zip(region, spans):
        starts = range(part.start, part.stop, span) if part.stop > part.start else [part.start]
        per_axis.append([(start // span, slice(start, min(start + span, part.stop)))
                         for start in starts])
    for combo in itertools.product(*per_axis):
        yield tuple(i for i, _ in combo), tuple(s for _, s in combo)


@dataclass(frozen=True)
class TaskWindows:
    """Each source's window over a task's region, and the block windows cut from it.

    Attributes
    ----------
    windows : tuple of numpy arrays
        One per source: the task's region plus its halo, as :func:`read_window` reads.
    origin : tuple of int
        The array coordinates of every window's first element.
    region : tuple of slice
        The task's region.
    depth, shape, boundary
        The halo per axis, the array's shape and the boundary mode.
    """

    windows: tuple[np.ndarray, ...]
    origin: tuple[int, ...]
    region: tuple[slice, ...]
    depth: tuple[int, ...]
    shape: tuple[int, ...]
    boundary: str

    @classmethod
    def read(cls, sources: Sequence[Array], region: Sequence[slice], depth: Sequence[int],
             boundary: str, constant_value: Any = 0) -> TaskWindows:
        """Read the task's window of every source (each chunk it touches decoded once)."""
        windows: list[np.ndarray] = []
        halo: tuple[tuple[int, int], ...] = ()
        for source in sources:
            window, halo = read_window(source, region, depth, boundary, constant_value)
            windows.append(window)
        origin = tuple(part.start - lo for part, (lo, _) in zip(region, halo))
        return cls(tuple(windows), origin, tuple(region), tuple(depth),
                   tuple(sources[0].shape), boundary)

    def block(self, region: Sequence[slice], copy: bool) -> tuple[list[np.ndarray], Halo]:
        """The windows of one block inside the task, and the halo they hold.

        ``copy=True`` hands out copies: the function may write into its window, and
        the task's window holds the halos of the other blocks.
        """
        bounds = window_bounds(region, self.depth, self.shape, self.boundary)
        cut = tuple(slice(lo - o, hi - o) for (lo, hi), o in zip(bounds, self.origin))
        halo = tuple((part.start - lo, hi - part.stop) for part, (lo, hi) in zip(region, bounds))
        views = [window[cut] for window in self.windows]
        return [np.array(v, copy=True) if copy else v for v in views], halo

    def blocks(self, spans: Sequence[int]) -> Iterator[
            tuple[tuple[int, ...], tuple[slice, ...], list[np.ndarray], Halo]]:
        """(block index, block region, windows, halo) of every block of the task, in C
        order (``spans``: array elements per block and axis)."""
        regions = list(block_regions(self.region, spans))
        # Without a halo the blocks' windows do not overlap: views are safe to hand out.
        copy = len(regions) > 1 and any(self.depth)
        for index, region in regions:
            windows, halo = self.block(region, copy=copy)
            yield index, region, windows, halo


def blocks_per_task(numblocks: Sequence[int], min_tasks: int,
                    fits: Callable[[tuple[int, ...]], bool]) -> tuple[int, ...]:
    """How many blocks per axis one task runs: groups grow while they fit.

    The group doubles along the axis where it holds fewest blocks (the last such axis
    first, where the source is contiguous), as long as ``fits(group)`` holds and at
    least ``min_tasks`` tasks remain (or the grid had fewer blocks to begin with).

    Examples
    --------
    >>> blocks_per_task((16, 16), 8, lambda g: g[0] * g[1] <= 16)
    (4, 4)
    >>> blocks_per_task((16, 16), 128, lambda g: True)
    (1, 2)
    >>> blocks_per_task((3,), 1, lambda g: True)
    (3,)
    """
    group = [1] * len(numblocks)

    def tasks(trial: Sequence[int]) -> int:
        return math.prod(-(-n // k) for n, k in zip(numblocks, trial))

    while True:
        growable = [a for a in range(len(group)) if group[a] < numblocks[a]]
        if not growable:
            break
        axis = min(growable, key=lambda a: (group[a], -a))
        trial = list(group)
        trial[axis] = min(2 * group[axis], numblocks[axis])
        if tasks(trial) < min_tasks or not fits(tuple(trial)):
            break
        group = trial
    return tuple(group)
