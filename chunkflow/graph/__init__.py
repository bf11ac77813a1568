"""Dask graphs on the chunk grid.

- :func:`to_dask` reads any basic selection as a lazy dask array, one ``Blockwise``
  layer whose blocks fall on chunk (shard) edges, at constant cost per array;
- :func:`store` and :func:`to_chunkflow` write dask arrays with one task per
  chunk-aligned write block;
- :mod:`~chunkflow.graph.reductions` reduces arrays larger than memory in bounded
  memory, with numpy's exact answers for :func:`histogram` and, from
  :mod:`~chunkflow.graph.quantiles`, :func:`percentile`, :func:`quantile`,
  :func:`median` and their ``nan*`` variants;
- :func:`map_chunks` runs a function (a filter with halos) over every block, one task
  per block, and :func:`summarize_chunks` gathers a small result per block;
- :func:`rechunk` copies an array to new chunks (dtype, codecs, format) in bounded
  memory, through an intermediate array when it must;
- :func:`pyramid` writes an OME-Zarr multiscale image, every level from the one
  before it in one job;
- :func:`label` finds the connected components of an array larger than memory,
  numbered as ``scipy.ndimage.label`` numbers them (:mod:`chunkflow.graph.labels`);
- :func:`compute` runs any of it on the scheduler named by ``scheduler=``, with
  ``progress=``.
"""

from chunkflow.graph import reductions
from chunkflow.graph.labels import label, measure, segment
from chunkflow.graph.map import MemoryPlanError, map_chunks, summarize_chunks
from chunkflow.graph.pyramids import pyramid
from chunkflow.graph.read import ArraySource, BlockChunks, to_dask
from chunkflow.graph.rechunking import rechunk
from chunkflow.graph.reduction_tree import ReductionSource
from chunkflow.graph.reductions import (
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
from chunkflow.graph.write import aligned_edges, store, to_chunkflow

__all__ = [
    "ArraySource", "BlockChunks", "MemoryPlanError", "ReductionSource", "SchedulerLike",
    "aligned_edges", "compute", "histogram", "label", "map_chunks", "measure", "median", "nanmedian",
    "nanpercentile", "nanquantile", "percentile", "pyramid", "quantile", "rechunk", "reduce",
    "reductions", "segment", "store",
    "summarize_chunks", "to_chunkflow", "to_dask",
]
