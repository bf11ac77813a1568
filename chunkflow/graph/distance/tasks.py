"""The task of one block of one pass: read, replay scipy's pass on its lines, write.

Pass 0 reads the source and writes, per element, the position along axis 0 of its
nearest background element (``-1`` where its line has none). Pass ``d`` reads the
features of axes ``0 .. d-1`` and writes those of axes ``0 .. d`` (an element's
feature lies on its own position along the later axes, which need no storing). The
last pass writes the indices and the distances, computed from the indices as
``scipy.ndimage.distance_transform_edt`` computes them: the int32 offsets to the
feature, as float64, times the sampling, squared, summed over the axes in order, and
the square root.

Examples
--------
>>> import numpy as np
>>> features = np.array([[1, 1, 1, 1, 5, 5, 5]])
>>> distances_from(features, (slice(0, 7),), (2.0,)).tolist()
[2.0, 0.0, 2.0, 4.0, 2.0, 0.0, 2.0]
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from chunkflow.engine.pool import serial_io
from chunkflow.graph.distance.voronoi import nearest_background, squares_increase, voronoi_pass

if TYPE_CHECKING:
    from chunkflow.core.array import Array
    from chunkflow.graph.labels.plan import Source
    from chunkflow.jobs import Job

__all__ = ["PassJob", "distances_from", "later_terms"]


def later_terms(sampling: tuple[float, ...], axis: int) -> float:
    """What scipy adds for the axes after ``axis`` in a pass along it: ``(0 * s) ** 2``
    for each (``0.0``, or NaN for an infinite or NaN sampling).

    Examples
    --------
    >>> later_terms((1.0, 2.0), 0), later_terms((1.0, float("inf")), 0)
    (0.0, nan)
    """
    total = np.float64(0.0)
    with np.errstate(all="ignore"):  # 0 * inf: NaN, silently in scipy's C loops
        for spacing in sampling[axis + 1:]:
            term = np.float64(0.0) * np.float64(spacing)
            total = total + term * term
    return float(total)


def distances_from(features: np.ndarray, region: tuple[slice, ...],
                   sampling: tuple[float, ...]) -> np.ndarray:
    """The distances of ``region``'s elements to their ``features`` (int32, one row
    per axis), in scipy's arithmetic."""
    grid = np.indices(features.shape[1:], dtype=np.int32)
    for axis, part in enumerate(region):
        grid[axis] += np.int32(part.start)
    terms = (features.astype(np.int32) - grid).astype(np.float64)
    del grid
    for axis, spacing in enumerate(sampling):
        terms[axis, ...] *= spacing
    np.multiply(terms, terms, terms)
    return np.sqrt(np.add.reduce(terms, axis=0))


def _coordinates(region: tuple[slice, ...], axis: int, of: int) -> np.ndarray:
    """The global positions along axis ``of`` of a block moved ``axis``-first."""
    moved = [region[axis]] + [part for a, part in enumerate(region) if a != axis]
    where = 1 + of if of < axis else 0
    shape = [1] * len(region)
    shape[where] = moved[where].stop - moved[where].start
    return np.arange(moved[where].start, moved[where].stop, dtype=np.int64).reshape(shape)


@dataclass(frozen=True)
class PassJob:
    """The pass along ``axis``: what its tasks read and write (in the graph once)."""

    axis: int
    ndim: int
    sampling: tuple[float, ...]
    source: Source | None = None
    previous: Array | None = None
    features: Array | None = None
    distances: Array | None = None
    indices: Array | None = None
    jobs: tuple[Job | None, ...] = ()  # of features, or of indices and distances

    @property
    def last(self) -> bool:
        return self.axis == self.ndim - 1

    def _first(self, region: tuple[slice, ...]) -> np.ndarray:
        assert self.source is not None, "pass 0 reads the source"
        background = self.source.read(region) == 0
        length = background.shape[0]
        lines = background.reshape(length, -1)
        spacing, tail = self.sampling[0], later_terms(self.sampling, 0)
        if squares_increase(spacing, length) and tail == 0.0:
            owner = nearest_background(lines, spacing)
        else:
            owner = voronoi_pass(lines, np.zeros(lines.shape), spacing, tail)
        return owner.reshape((1,) + background.shape)

    def _along(self, region: tuple[slice, ...]) -> np.ndarray:
        assert self.previous is not None, "a later pass reads the features before it"
        axis = self.axis
        with serial_io():
            before = np.asarray(self.previous.get_basic_selection((slice(None),) + region))
        moved = np.moveaxis(before, axis + 1, 1)
        moved_shape = moved.shape[1:]
        has = moved[0] >= 0
        heights = np.zeros(moved_shape)
        with np.errstate(all="ignore"):  # as scipy's C loops: no warnings
            for other in range(axis):
                t = (moved[other] - _coordinates(region, axis, other)).astype(np.float64)
                t *= self.sampling[other]
                heights += t * t  # 0.0 + x is x: scipy's wR starts at 0.0 too
        length = moved_shape[0]
        owner = voronoi_pass(has.reshape(length, -1), heights.reshape(length, -1),
                             self.sampling[axis], later_terms(self.sampling, axis))
        del heights, has
        none = owner < 0
        rows = np.where(none, 0, owner)
        found = np.empty((axis + 1, length, owner.shape[1]), np.int32)
        for other in range(axis):
            found[other] = np.take_along_axis(moved[other].reshape(length, -1), rows, axis=0)
        found[axis] = rows
        found[1:, none] = 0  # scipy leaves zeros where no feature was found
        found[0, none] = -1
        return np.moveaxis(found.reshape((axis + 1,) + moved_shape), 1, axis + 1)

    def _writes(self) -> list[tuple[Array, bool]]:
        """The arrays a task writes: (array, whether it takes the distances)."""
        if not self.last:
            assert self.features is not None
            return [(self.features, False)]
        return [(array, distances) for array, distances in ((self.indices, False),
                                                            (self.distances, True))
                if array is not None]

    def __call__(self, index: tuple[int, ...], region: tuple[slice, ...]) -> None:
        """Compute block ``index`` (at ``region``) and write it, where a resumed job
        has not; each array's job records it."""
        writes = self._writes()
        jobs = self.jobs or (None,) * len(writes)
        todo = [(array, distances, job) for (array, distances), job in zip(writes, jobs)
                if job is None or not job.is_done(index)]
        if not todo:
            return
        found = self._first(region) if self.axis == 0 else self._along(region)
        for array, distances, job in todo:
            values = distances_from(found, region, self.sampling) if distances else found
            where = region if distances else (slice(None),) + region

            def write(array: Array = array, where: tuple[slice, ...] = where,
                      values: np.ndarray = values) -> None:
                with serial_io():  # dask supplies the parallelism
                    array.set_basic_selection(where, values)

            if job is None:
                write()
            else:
                job.run(index, write, None, lambda: f"block {index} ({region})")
