"""Filters whose every output element equals scipy.ndimage's on the whole array.

Two job shapes, both map_chunks jobs (:func:`chunkflow.map_chunks`):

- :func:`filter_windows`: a *local* filter (each output element computed from its
  footprint alone: Gaussian, Sobel, correlate, rank filters over 2-D and larger
  arrays, morphology with a structure) runs on windows with a halo of the kernel's
  reach. Windows stop at the array's edge (``boundary="none"``), where the filter
  applies its own ``mode`` (``reflect``, ``mirror``, ``nearest``, ``constant``) as on the
  whole array, every pass of a separable filter included; ``wrap`` reads the other side
  of the array instead (``boundary="periodic"``);
- :func:`line_passes`: a filter whose 1-D passes keep a state along each line (the
  running sum of ``uniform_filter``, the running minimum of ``minimum_filter`` over a
  box, whose NaN results depend on the line before the footprint, and 1-D rank filters,
  whose path depends on the array's length) runs one pass per axis on blocks that
  hold whole lines along that axis, each pass writing the output's dtype as scipy's
  passes do (through an intermediate array between passes, see :class:`JobOptions`).

Examples
--------
>>> import numpy as np
>>> from scipy import ndimage
>>> import chunkflow
>>> image = np.random.default_rng(0).random((30, 20))
>>> z = chunkflow.array(image, chunks=(7, 6))
>>> result = filter_windows(ndimage.sobel, z, depth=(1, 1), modes=["mirror"],
...                         dtype=z.dtype, job=JobOptions(), kwargs={"mode": "mirror"})
>>> bool((result[...] == ndimage.sobel(image, mode="mirror")).all())
True
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from chunkflow.api.zarr3 import create_array
from chunkflow.core.array import Array
from chunkflow.errors import ArgumentTypeError, InvalidArgumentError
from chunkflow.graph.map import map_chunks
from chunkflow.graph.read import as_source_array
from chunkflow.graph.rechunk.arrays import Intermediate
from chunkflow.storage import MemoryStore, Store, make_store, output_location

if TYPE_CHECKING:
    from chunkflow.graph.scheduler import ProgressArg, SchedulerLike

__all__ = ["WRAP_MODES", "JobOptions", "Pass", "boundary_for", "filter_windows", "line_passes", "open_image"]

#: scipy.ndimage's spellings of the periodic mode.
WRAP_MODES = ("wrap", "grid-wrap")


@dataclass(frozen=True)
class JobOptions:
    """chunkflow's job keywords of a filter, as :func:`chunkflow.map_chunks` takes them.

    ``out=None`` writes the result into an in-memory array (returned), or with
    ``compute=False`` returns the lazy dask array of the result. ``temp``: where
    :func:`line_passes` keeps the intermediate array between two passes (a path, URL or
    store; default in memory). ``blocks``: the blocks of a windowed job, as
    :func:`chunkflow.map_chunks` takes them (passes over whole lines choose their own).
    """

    out: Any = None
    overwrite: bool = False
    resume: bool = False
    scheduler: SchedulerLike = None
    progress: ProgressArg = False
    max_memory: int | str | None = None
    storage_options: Mapping[str, Any] | None = None
    compute: bool = True
    temp: Any = None
    blocks: Any = None

    def map_keywords(self) -> dict[str, Any]:
        """The keywords :func:`chunkflow.map_chunks` takes as they are."""
        return {"scheduler": self.scheduler, "progress": self.progress,
                "max_memory": self.max_memory}

    def target(self) -> Any:
        """``out`` as map_chunks takes it: a path or URL becomes its store (opened with
        ``storage_options``, which then apply to nothing else); ``None`` an in-memory
        store (or, with ``compute=False``, stays ``None``: a lazy dask array)."""
        if self.out is None:
            return MemoryStore() if self.compute else None
        if isinstance(self.out, str) or hasattr(self.out, "__fspath__"):
            return make_store(self.out, storage_options=dict(self.storage_options or {}) or None)
        return output_location(self.out)


def open_image(source: Any, storage_options: Mapping[str, Any] | None, what: str) -> Array:
    """``source`` as an open array: a chunkflow Array, a path, URL or store (opened
    read-only, past the process-wide chunk cache as map jobs read), or anything
    ``numpy.asarray`` takes (copied into an in-memory array)."""
    if isinstance(source, (Array, str, Store, Mapping)) or hasattr(source, "__fspath__"):
        if isinstance(source, Array):
            return source
        return as_source_array(source, storage_options, cache=False)
    values = np.asarray(source)
    if values.dtype.kind == "O":
        raise ArgumentTypeError(f"{what}: the input holds Python objects (dtype object); pass "
                                "numbers, a chunkflow.Array, a path or a URL")
    return create_array(None, data=values)


def boundary_for(modes: Sequence[str], what: str) -> str:
    """The map_chunks boundary that makes ``modes`` (scipy's, one per axis) exact:
    ``periodic`` when every axis wraps, else ``none`` (the filter pads the edge).

    Examples
    --------
    >>> boundary_for(["reflect", "constant"], "f"), boundary_for(["wrap"], "f")
    ('none', 'periodic')
    """
    wraps = [mode in WRAP_MODES for mode in modes]
    if all(wraps):
        return "periodic"
    if any(wraps):
        raise InvalidArgumentError(
            f"{what}: mode={list(modes)!r} mixes 'wrap' with other modes; chunkflow reads "
            "the halos of every axis one way: give 'wrap' on every axis or on none")
    return "none"


def filter_windows(func: Callable[..., Any], source: Any, *, depth: Sequence[int],
                   modes: Sequence[str], dtype: np.dtype, job: JobOptions,
                   kwargs: Mapping[str, Any], sources: Sequence[Any] = (),
                   what: str = "filter") -> Any:
    """``func(window, *other_windows, **kwargs)`` over windows with ``depth`` of halo,
    exact where ``func`` is local and ``depth`` covers its reach (see the module).

    ``sources`` are further arrays of the same shape read with the same halo (a mask).
    """
    boundary = boundary_for(modes, what)
    return map_chunks(func, source, *sources, out=job.target(), depth=tuple(depth),
                      boundary=boundary, dtype=dtype, overwrite=job.overwrite,
                      resume=job.resume, compute=job.compute, blocks=job.blocks,
                      **job.map_keywords(), **kwargs)


def _whole_lines(target: Array, axis: int) -> tuple[int, ...]:
    """Blocks of whole lines along ``axis``: every write chunk (shard) along it."""
    units = target.write_chunks
    return tuple(math.ceil(n / max(u, 1)) if a == axis else 1
                 for a, (n, u) in enumerate(zip(target.shape, units)))


@dataclass(frozen=True)
class Pass:
    """One pass of :func:`line_passes`: ``func(block, **kwargs)`` on blocks of whole
    lines along ``axis``, writing ``dtype``."""

    axis: int
    func: Callable[..., Any]
    kwargs: Mapping[str, Any]
    dtype: np.dtype


def _targets(passes: Sequence[Pass], final: np.dtype) -> list[str]:
    """Where each pass writes: ``out`` (the last, and others of the final dtype) or one
    of two intermediates, never where the pass before it wrote.

    Examples
    --------
    >>> f, i = np.dtype("f8"), np.dtype("i2")
    >>> _targets([Pass(0, id, {}, f)] * 3, f)
    ['out', 'a', 'out']
    >>> _targets([Pass(0, id, {}, i), Pass(0, id, {}, i), Pass(0, id, {}, f)], f)
    ['b', 'a', 'out']
    """
    names = ["out"]
    for step in reversed(passes[:-1]):
        after = names[0]
        if step.dtype == final and after != "out":
            names.insert(0, "out")
        else:
            names.insert(0, "a" if after != "a" else "b")
    return names


def line_passes(passes: Sequence[Pass], source: Array, *, dtype: np.dtype, job: JobOptions,
                what: str = "filter") -> Any:
    """Run each :class:`Pass` in turn on blocks that hold whole lines along its axis
    (as scipy's separable filters run their 1-D passes, each into the output).

    Passes go to ``out`` and to intermediate arrays (``job.temp``, default in memory)
    so that the last pass writes ``out`` (of ``dtype``). No pass: ``out`` is a copy of
    ``source`` in ``dtype`` (as scipy copies when every size is 1).
    """
    if not job.compute:
        raise InvalidArgumentError(f"{what}: compute=False is not available for this filter "
                                   "(it runs one job per axis, in turn); leave compute=True")
    steps = list(passes) or [Pass(0, _copy, {}, dtype)]
    if job.resume and len(steps) > 1:
        raise InvalidArgumentError(f"{what}: resume=True is not available for this filter "
                                   f"(it runs {len(steps)} passes, one per axis, through an "
                                   "intermediate array); run it again with overwrite=True")
    places: dict[str, Any] = {"out": job.target()}
    current = source
    for step, name in zip(steps, _targets(steps, dtype)):
        if name != "out":
            held = places.get(name)
            if not isinstance(held, Array) or held.dtype != step.dtype:
                if isinstance(held, Array):
                    _remove(job, held)
                places[name] = _intermediate(job, source, step.dtype, name)
        target = places[name]
        grid = target if isinstance(target, Array) else source
        current = map_chunks(step.func, current, out=target, depth=0, dtype=step.dtype,
                             blocks=_whole_lines(grid, step.axis), blocks_per_task=1,
                             overwrite=job.overwrite and not isinstance(target, Array),
                             resume=job.resume, **job.map_keywords(), **step.kwargs)
        places[name] = current  # open from now on: a later pass writes into it
    for name in ("a", "b"):
        if isinstance(places.get(name), Array):
            _remove(job, places[name])
    return current


def _copy(block: np.ndarray) -> np.ndarray:
    return block


def _intermediate(job: JobOptions, source: Array, dtype: np.dtype, name: str) -> Array:
    """An array between two passes: ``name`` in ``job.temp`` (replaced), else in memory."""
    if job.temp is None:
        return create_array(MemoryStore(), shape=source.shape, chunks=source.write_chunks,
                            dtype=dtype, compressors=None)
    place = Intermediate.under(job.temp, f"chunkflow-pass-{name}", job.storage_options)
    return place.create(source.shape, source.write_chunks, dtype, None, {})


def _remove(job: JobOptions, array: Array) -> None:
    """Delete an intermediate array (and the root group its creation made in temp)."""
    if job.temp is None:
        array.store.clear()
    else:
        name = array.path.rsplit("/", 1)[-1]
        Intermediate.under(job.temp, name, job.storage_options).remove(array)
