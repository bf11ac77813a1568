"""The plan of a map_chunks job: what every task needs, pickled once into the graph.

A :class:`MapPlan` holds the sources, the halo, the function and its arguments, the
output and its record keeper (:class:`~chunkflow.jobs.Job`); each task calls
:meth:`MapPlan.run` with its index and region. The block and task grid it runs over is
planned by :mod:`chunkflow.graph.map.tasks`.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from chunkflow.core.array import Array
from chunkflow.engine.pool import serial_io
from chunkflow.errors import ShapeMismatchError
from chunkflow.graph.casting import DEFAULT_CASTING, cast_block
from chunkflow.graph.map.groups import TaskWindows
from chunkflow.graph.map.halo import read_window, window_boundary
from chunkflow.heap import roomy_heap
from chunkflow.jobs import Job, block_keys

__all__ = ["MapPlan"]


@dataclass(frozen=True)
class MapPlan:
    """Everything a task needs, pickled once into the graph (not once per task)."""

    func: Callable[..., Any]
    sources: tuple[Array, ...]
    depth: tuple[int, ...]
    boundary: str
    constant_value: Any
    trim: bool
    block_info: bool
    dtype: np.dtype
    numblocks: tuple[int, ...]
    kwargs: Mapping[str, Any] = field(default_factory=dict)
    out: Array | None = None
    summary_shape: tuple[int, ...] | None = None
    # Array elements per block and axis when a task runs a group of blocks, else None.
    spans: tuple[int, ...] | None = None
    tracker: Job | None = None  # skips blocks finished before, records new ones
    casting: str = DEFAULT_CASTING  # the rule for the cast of a block to dtype (graph.casting)

    @property
    def window_boundary(self) -> str:
        """The boundary windows are read with (``"none"`` where ``func`` pads the
        constant itself: see :func:`~chunkflow.graph.map.halo.window_boundary`)."""
        return window_boundary(self.boundary, self.constant_value, self.func, self.kwargs)

    def windows(self, region: tuple[slice, ...]) -> tuple[list[np.ndarray], tuple[tuple[int, int], ...]]:
        windows: list[np.ndarray] = []
        halo: tuple[tuple[int, int], ...] = ()
        for source in self.sources:
            window, halo = read_window(source, region, self.depth, self.window_boundary,
                                       self.constant_value)
            windows.append(window)
        return windows, halo

    def info(self, index: tuple[int, ...], region: tuple[slice, ...],
             halo: tuple[tuple[int, int], ...]) -> dict[str, Any]:
        return {
            "block_index": index,
            "num_blocks": self.numblocks,
            "array_location": [(s.start, s.stop) for s in region],
            "halo": list(halo),
            "shape": self.sources[0].shape,
            "boundary": self.boundary,
        }

    def run(self, index: tuple[int, ...], region: tuple[slice, ...]) -> np.ndarray:
        """One task: its block, or (with ``spans``) each block of its group in turn."""
        # The function's temporaries (a filter's float64 copies of the window) reuse
        # heap memory in workers that would map and fault them in anew (roomy_heap).
        with roomy_heap():
            return self._run(index, region)

    def _run(self, index: tuple[int, ...], region: tuple[slice, ...]) -> np.ndarray:
        if self.spans is None:
            windows, halo = self.windows(region)
            return self.block(index, region, windows, halo)
        task = TaskWindows.read(self.sources, region, self.depth, self.window_boundary,
                                self.constant_value)
        for block_index, block_region, windows, halo in task.blocks(self.spans):
            try:
                self.block(block_index, block_region, windows, halo)
            except Exception as error:
                if self.out is not None:  # the task's note names all of its blocks
                    error.add_note(f"map_chunks: block {block_index} of this task, "
                                   f"{block_keys(self.out, block_region)}")
                raise
        return np.ones((1,) * len(region), dtype=bool)

    def block(self, index: tuple[int, ...], region: tuple[slice, ...],
              windows: list[np.ndarray], halo: tuple[tuple[int, int], ...]) -> np.ndarray:
        """``func`` over one block's windows: the block's result, written to ``out``."""
        kwargs = dict(self.kwargs)
        if self.block_info:
            kwargs["block_info"] = self.info(index, region, halo)
        result = np.asarray(self.func(*windows, **kwargs))
        if self.summary_shape is not None:
            return self._summary(result, index)
        if self.trim and any(lo or hi for lo, hi in halo):
            result = result[tuple(slice(lo, n - hi) for (lo, hi), n in zip(halo, result.shape))]
        expected = tuple(s.stop - s.start for s in region)
        if result.shape != expected:
            raise ShapeMismatchError(
                f"map_chunks: {_name(self.func)} returned shape {result.shape} for block "
                f"{index} (array region {[(s.start, s.stop) for s in region]}); expected "
                f"{expected}" + (" after trimming the halo" if self.trim else "")
            )
        if result.dtype != self.dtype:  # checked here, on the one block this task holds
            result = cast_block(result, self.dtype, self.casting, self._where(index, region),
                                tuple(s.start for s in region))
        if self.out is None:
            return result
        with serial_io():
            self.out.set_basic_selection(region, result)
        return np.ones((1,) * len(region), dtype=bool)

    def _where(self, index: tuple[int, ...], region: tuple[slice, ...]) -> str:
        if self.out is None:
            return (f"map_chunks: {_name(self.func)} returned block {index} (array region "
                    f"{[(s.start, s.stop) for s in region]})")
        return (f"map_chunks: {_name(self.func)} returned block {index} for array "
                f"{self.out.path or '/'!r} in {self.out.store.identity} "
                f"({block_keys(self.out, region)})")

    def _summary(self, result: np.ndarray, index: tuple[int, ...]) -> np.ndarray:
        assert self.summary_shape is not None
        if result.shape != self.summary_shape:
            raise ShapeMismatchError(
                f"summarize_chunks: {_name(self.func)} returned shape {result.shape} for block "
                f"{index}; expected {self.summary_shape} (pass shape=)"
            )
        where = f"summarize_chunks: {_name(self.func)} returned the summary of block {index}"
        cast = cast_block(result, self.dtype, self.casting, where) if result.dtype != self.dtype \
            else result
        return cast.reshape((1,) * len(index) + result.shape)


def _name(func: Callable[..., Any]) -> str:
    return getattr(func, "__qualname__", None) or repr(func)
