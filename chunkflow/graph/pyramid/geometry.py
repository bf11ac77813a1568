"""The geometry of a pyramid: level shapes, stages of tasks, and what each task reads.

A task of a *stage* reads a window of the stage's first level (the source, or a level
an earlier stage wrote), computes the next levels in memory, one from the other, and
writes whole chunks of each: its region at the stage's last level is one chunk, so at
level ``k`` it spans ``chunk * factor**(last - k)`` elements (cut at the level's end).
No two tasks write one chunk, and no level is ever held whole.

A stage covers as many levels as fit the memory of one task; the next stage reads the
level the previous one wrote last, and each of its tasks waits only for the tasks whose
regions its window overlaps. With a halo (``gaussian``), windows reach past the region
at every level by the blur's radius, widened level by level toward the first, so that
every value a task writes equals the whole-level computation.

Examples
--------
>>> geometry = plan_geometry((1000, 1000), (100, 100), (2, 2), levels=None, radius=(0, 0),
...                          task_bytes=lambda stage: 0, target=1, limit=1, min_tasks=1)
>>> geometry.shapes[-1], len(geometry.shapes), [(s.first, s.last) for s in geometry.stages]
((63, 63), 5, [(0, 4)])
>>> geometry.stages[0].numblocks
(1, 1)
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np
from dask.utils import format_bytes

from chunkflow.errors import MemoryPlanError, PyramidError

if TYPE_CHECKING:
    from chunkflow.metadata.ngff import Axis

__all__ = [
    "PyramidGeometry", "Stage", "level_shapes", "natural_levels", "plan_geometry", "resolve_factors",
]

Region = tuple[slice, ...]


def resolve_factors(factors: int | Sequence[int] | Mapping[str, int],
                    axes: Sequence[Axis]) -> tuple[int, ...]:
    """``factors=`` as one whole factor >= 1 per axis.

    An int applies to the space axes (time, channel and custom axes keep 1); a mapping
    by axis name overrides those defaults; a sequence gives every axis.

    Examples
    --------
    >>> from chunkflow.metadata.ngff import resolve_axes
    >>> axes = resolve_axes("tczyx", 5)
    >>> resolve_factors(2, axes), resolve_factors({"z": 1}, axes)
    ((1, 1, 2, 2, 2), (1, 1, 1, 2, 2))
    """
    names = [a.name for a in axes]
    if isinstance(factors, Mapping):
        unknown = sorted(set(factors) - set(names))
        if unknown:
            raise PyramidError(f"pyramid: factors names axes {unknown} that the image (axes "
                               f"{''.join(names)!r}) does not have")
        base = resolve_factors(2, axes)
        values: list[Any] = [factors.get(n, b) for n, b in zip(names, base)]
    elif isinstance(factors, (int, np.integer)) and not isinstance(factors, bool):
        values = [int(factors) if a.type == "space" else 1 for a in axes]
    elif isinstance(factors, Sequence):
        values = list(factors)
        if len(values) != len(axes):
            raise PyramidError(f"pyramid: factors={factors!r} gives {len(values)} factors for "
                               f"{len(axes)} axes ({''.join(names)!r})")
    else:
        raise PyramidError(f"pyramid: factors must be an int, a sequence of ints or a mapping "
                           f"from axis names to ints, got {factors!r}")
    for name, value in zip(names, values):
        if not isinstance(value, (int, np.integer)) or isinstance(value, bool) or value < 1:
            raise PyramidError(f"pyramid: the factor of axis {name!r} must be a whole number "
                               f">= 1, got {value!r}")
    if all(v == 1 for v in values):
        raise PyramidError(f"pyramid: factors={factors!r} downsample no axis of "
                           f"{''.join(names)!r}; give a factor > 1")
    return tuple(int(v) for v in values)


def level_shapes(shape: Sequence[int], factors: Sequence[int], levels: int) -> list[tuple[int, ...]]:
    """Shapes of ``levels`` levels, each ``ceil(previous / factor)``.

    Examples
    --------
    >>> level_shapes((5, 8), (2, 2), 3)
    [(5, 8), (3, 4), (2, 2)]
    """
    shapes = [tuple(int(n) for n in shape)]
    for _ in range(levels - 1):
        shapes.append(tuple(-(-n // f) for n, f in zip(shapes[-1], factors)))
    return shapes


def natural_levels(shape: Sequence[int], chunks: Sequence[int], factors: Sequence[int]) -> int:
    """Levels until every downsampled axis fits in one chunk (level 0 included).

    Examples
    --------
    >>> natural_levels((16384, 16384), (512, 512), (2, 2))
    6
    >>> natural_levels((3, 100), (4, 40), (1, 2))
    3
    """
    levels, current = 1, tuple(shape)
    while any(n > c for n, c, f in zip(current, chunks, factors) if f > 1):
        current = tuple(-(-n // f) for n, f in zip(current, factors))
        levels += 1
    return levels


@dataclass(frozen=True)
class Stage:
    """Tasks that read level ``first`` and write levels ``first + 1 .. last`` (and
    level 0 too when ``first`` is 0, copied from the source); one task per chunk of
    level ``last``. A pyramid of one level has one stage from 0 to 0: the copy."""

    first: int
    last: int
    numblocks: tuple[int, ...]

    @property
    def ntasks(self) -> int:
        """How many tasks the stage has."""
        return math.prod(self.numblocks)


@dataclass(frozen=True)
class PyramidGeometry:
    """Shapes, chunks and stages of a pyramid; regions and windows of its tasks."""

    shapes: tuple[tuple[int, ...], ...]
    chunk: tuple[int, ...]
    factors: tuple[int, ...]
    radius: tuple[int, ...]
    stages: tuple[Stage, ...]

    @property
    def level_chunks(self) -> tuple[tuple[int, ...], ...]:
        """Each level's chunk shape: ``chunk``, cut to the level's shape."""
        return tuple(tuple(max(1, min(c, n)) for c, n in zip(self.chunk, shape))
                     for shape in self.shapes)

    @property
    def ntasks(self) -> int:
        """Tasks of every stage together."""
        return sum(stage.ntasks for stage in self.stages)

    def region(self, stage: Stage, index: Sequence[int], level: int) -> Region:
        """What the task ``index`` of ``stage`` writes at ``level``: whole chunks."""
        region = []
        for i, c, f, n in zip(index, self.chunk, self.factors, self.shapes[level]):
            span = c * f ** (stage.last - level)
            region.append(slice(min(i * span, n), min((i + 1) * span, n)))
        return tuple(region)

    def windows(self, stage: Stage, index: Sequence[int]) -> list[Region]:
        """What the task holds at each level ``first .. last``: its region there, and
        at the levels it computes from, the halo the next level's blur needs."""
        windows = [self.region(stage, index, stage.last)]
        for level in range(stage.last - 1, stage.first - 1, -1):
            finer = self.region(stage, index, level)
            window = []
            for coarse, own, f, r, n in zip(windows[0], finer, self.factors, self.radius,
                                            self.shapes[level]):
                lo = min(coarse.start * f - r, own.start)
                hi = max((coarse.stop - 1) * f + 1 + r, own.stop)
                window.append(slice(max(0, lo), min(n, hi)))
            windows.insert(0, tuple(window))
        return windows

    def dependencies(self, number: int, index: Sequence[int]) -> list[tuple[int, ...]]:
        """Tasks of the stage before ``number`` whose writes the task ``index`` reads."""
        stage = self.stages[number]
        window = self.windows(stage, index)[0]
        before = self.stages[number - 1].numblocks
        ranges = [range(w.start // c, min(k, -(-w.stop // c)))
                  for w, c, k in zip(window, self.chunk, before)]
        return list(itertools.product(*ranges))

    def largest_window(self, stage: Stage) -> tuple[int, ...]:
        """The first-level window shape of the stage's largest task (an inner one)."""
        inner = tuple(k // 2 for k in stage.numblocks)
        shapes = [tuple(w.stop - w.start for w in self.windows(stage, i)[0])
                  for i in (inner, (0,) * len(inner))]
        return tuple(max(lengths) for lengths in zip(*shapes))


def _stage(shapes: Sequence[tuple[int, ...]], chunk: Sequence[int], first: int,
           last: int) -> Stage:
    return Stage(first, last, tuple(-(-n // c) for n, c in zip(shapes[last], chunk)))


def plan_geometry(
    shape: Sequence[int],
    chunk: Sequence[int],
    factors: Sequence[int],
    *,
    levels: int | None,
    radius: Sequence[int],
    task_bytes: Callable[[PyramidGeometry], int],
    target: int,
    limit: int,
    min_tasks: int,
    recorded: Sequence[tuple[int, int]] | None = None,
) -> PyramidGeometry:
    """Lay out a pyramid: ``levels`` levels (default :func:`natural_levels`), in stages
    as deep as fit ``target`` bytes per task (``task_bytes`` of a one-stage geometry)
    while keeping ``min_tasks`` tasks where one level per stage would.

    ``recorded``: the (first, last) levels of the stages an interrupted job started
    with (a resume keeps them: the default stages depend on the scheduler's threads).

    Raises
    ------
    MemoryPlanError
        When even one level per stage needs more than ``limit`` bytes per task.
    """
    count = natural_levels(shape, chunk, factors) if levels is None else levels
    shapes = tuple(level_shapes(shape, factors, count))
    base = PyramidGeometry(shapes, tuple(chunk), tuple(factors), tuple(radius), ())
    if recorded is not None and _chained(recorded, count):
        geometry = _with(base, *(_stage(shapes, chunk, first, last) for first, last in recorded))
        for stage in geometry.stages:
            need = task_bytes(_with(base, stage))
            if need > limit:
                raise MemoryPlanError(
                    f"pyramid: the interrupted job makes levels {stage.first + 1}-{stage.last} "
                    f"in tasks of about {format_bytes(need)}, more than max_memory "
                    f"{format_bytes(limit)}; resume it with more memory, or start over")
        return geometry
    stages: list[Stage] = []
    first = 0
    while first < count - 1:
        chosen = _stage(shapes, chunk, first, first + 1)
        need = task_bytes(_with(base, chosen))
        if need > limit:
            raise MemoryPlanError(
                f"pyramid: each task would need about {format_bytes(need)} to make level "
                f"{first + 1} {shapes[first + 1]} from level {first}, more than max_memory "
                f"{format_bytes(limit)}; use smaller chunks= or raise max_memory"
            )
        wanted = min(min_tasks, chosen.ntasks)
        for last in range(first + 2, count):
            deeper = _stage(shapes, chunk, first, last)
            if deeper.ntasks < wanted or task_bytes(_with(base, deeper)) > target:
                break
            chosen = deeper
        stages.append(chosen)
        first = chosen.last
    if not stages:  # one level: the tasks copy level 0, a chunk each
        stages.append(_stage(shapes, chunk, 0, 0))
    return _with(base, *stages)


def _chained(stages: Sequence[tuple[int, int]], count: int) -> bool:
    """Whether ``stages`` make levels 1 .. count - 1, each stage from the last one."""
    edges = [0, *(last for _, last in stages)]
    return (bool(stages) and edges[-1] == count - 1
            and all(first == edges[i] and last > first
                    for i, (first, last) in enumerate(stages)))


def _with(geometry: PyramidGeometry, *stages: Stage) -> PyramidGeometry:
    return PyramidGeometry(geometry.shapes, geometry.chunk, geometry.factors, geometry.radius, tuple(stages))
