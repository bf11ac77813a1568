"""The plan of a pyramid job: what every task needs, in the graph once.

A :class:`PyramidPlan` holds the source, the level arrays, their
:class:`~chunkflow.graph.pyramid.geometry.PyramidGeometry`, the method and, with
``resume=True``, a record keeper per stage; a task computes its levels from one window
(:meth:`PyramidPlan.run`).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from chunkflow.core.array import Array
from chunkflow.engine.pool import serial_io
from chunkflow.graph.pyramid.downsample import cast_like, downsample, gaussian_smooth
from chunkflow.graph.pyramid.geometry import PyramidGeometry
from chunkflow.jobs import Job

__all__ = ["PyramidPlan"]


@dataclass(frozen=True)
class PyramidPlan:
    """What every task needs, in the graph once: the source, the levels, the geometry."""

    source: Array
    levels: tuple[Array, ...]
    geometry: PyramidGeometry
    method: str
    # resume=True: per stage, the job on its last level that skips and records tasks.
    trackers: tuple[Job | None, ...] = ()

    def run(self, number: int, index: tuple[int, ...]) -> bool:
        """Task ``index`` of stage ``number`` (skipped when a resumed job did it)."""
        tracker = self.trackers[number] if self.trackers else None
        if tracker is None:
            return self._run(number, index)
        stage = self.geometry.stages[number]
        return tracker.run(index, lambda: self._run(number, index), True,
                           lambda: f"the task {index} of levels {stage.first}-{stage.last}")

    def finish(self) -> None:
        """Every task succeeded: drop the resume records and marks."""
        for stage, tracker in zip(self.geometry.stages, self.trackers):
            if tracker is not None:
                tracker.finish(self.levels[stage.last])

    def _run(self, number: int, index: tuple[int, ...]) -> bool:
        stage = self.geometry.stages[number]
        windows = self.geometry.windows(stage, index)
        reader = self.source if stage.first == 0 else self.levels[stage.first]
        with serial_io():
            data = np.asarray(reader.get_basic_selection(windows[0]))
            if stage.first == 0:
                self._write(0, data, windows[0], self.geometry.region(stage, index, 0))
            for offset, level in enumerate(range(stage.first + 1, stage.last + 1)):
                data = self._next(data, windows[offset], windows[offset + 1])
                self._write(level, data, windows[offset + 1],
                            self.geometry.region(stage, index, level))
        return True

    def _next(self, data: np.ndarray, finer: tuple[slice, ...],
              coarser: tuple[slice, ...]) -> np.ndarray:
        factors = self.geometry.factors
        if self.method != "gaussian":
            # ``finer`` starts on a window edge: its windows are the level's windows.
            reduced = downsample(data, factors, self.method)
            return reduced[tuple(slice(c.start - w.start // f, c.stop - w.start // f)
                                 for c, w, f in zip(coarser, finer, factors))]
        smooth = gaussian_smooth(data, factors)
        samples = tuple(slice(c.start * f - w.start, (c.stop - 1) * f - w.start + 1, f)
                        for c, w, f in zip(coarser, finer, factors))
        return cast_like(smooth[samples], data.dtype)

    def _write(self, level: int, data: np.ndarray, window: tuple[slice, ...],
               region: tuple[slice, ...]) -> None:
        local = tuple(slice(r.start - w.start, r.stop - w.start) for r, w in zip(region, window))
        self.levels[level].set_basic_selection(region, data[local])
