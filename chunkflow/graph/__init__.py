"""Dask graphs on the chunk grid.

- :func:`to_dask` (:mod:`~chunkflow.graph.read`) reads any basic selection as a lazy
  dask array, one ``Blockwise`` layer whose blocks fall on chunk (shard) edges
  (:mod:`~chunkflow.graph.blocks`), at constant cost per array;
- :func:`store` and :func:`to_chunkflow` (:mod:`~chunkflow.graph.write`) write dask
  arrays with one task per chunk-aligned write block;
- :func:`compute` (:mod:`~chunkflow.graph.scheduler`) runs any of it on the scheduler
  named by ``scheduler=``, with ``progress=``; :mod:`~chunkflow.graph.memory` holds
  the memory plan of one task, checked before anything runs.

One subpackage per kind of job, each with its function, its ``plan`` module and its
tasks:

- :mod:`~chunkflow.graph.map`: :func:`map_chunks` runs a function (a filter with
  halos) over every block, one task per block or group of blocks, and
  :func:`summarize_chunks` gathers a small result per block;
- :mod:`~chunkflow.graph.rechunk`: ``rechunk`` copies an array to new chunks (dtype,
  codecs, format) in bounded memory, through an intermediate array when it must;
- :mod:`~chunkflow.graph.pyramid`: ``pyramid`` writes an OME-Zarr multiscale image,
  every level from the one before it in one job;
- :mod:`~chunkflow.graph.reductions`: :func:`reduce`, :func:`histogram`,
  :func:`percentile`, :func:`quantile`, :func:`median` and their ``nan*`` variants
  reduce arrays larger than memory in bounded memory, with numpy's exact answers;
- :mod:`~chunkflow.graph.labels`: :func:`label` finds the connected components of an
  array larger than memory, numbered as ``scipy.ndimage.label`` numbers them;
  :func:`measure` tables the objects, :func:`segment` makes per-block labels global.

``chunkflow.graph.rechunk`` and ``chunkflow.graph.pyramid`` name the subpackages; the
functions are ``chunkflow.rechunk`` and ``chunkflow.pyramid``.
"""

from chunkflow.errors import MemoryPlanError
from chunkflow.graph.copies import copy, copy_all
from chunkflow.graph.labels import label, measure, segment
from chunkflow.graph.map import map_chunks, summarize_chunks
from chunkflow.graph.read import ArraySource, BlockChunks, to_dask
from chunkflow.graph.reductions import (
    ReductionSource,
    histogram,
    median,
    nanmedian,
    nanpercentile,
    nanquantile,
    percentile,
    quantile,
    reduce,
)
from chunkflow.graph.scheduler import SchedulerLike, compute
from chunkflow.graph.verification import verify
from chunkflow.graph.write import aligned_edges, store, to_chunkflow

__all__ = [
    "ArraySource", "BlockChunks", "MemoryPlanError", "ReductionSource", "SchedulerLike",
    "aligned_edges", "compute", "copy", "copy_all", "histogram", "label", "map_chunks", "measure", "median",
    "nanmedian",
    "nanpercentile", "nanquantile", "percentile", "quantile", "reduce", "segment", "store",
    "summarize_chunks", "to_chunkflow", "to_dask", "verify",
]
