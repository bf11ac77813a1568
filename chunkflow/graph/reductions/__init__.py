"""Reductions of arrays larger than memory, with memory bounded by a few blocks.

- :mod:`~chunkflow.graph.reductions.reductions`: :func:`reduce` and the named
  reductions (``mean``, ``std``, ``var``, ``min``, ``max``, ``sum``); means and
  variances from mergeable moment records (:mod:`~chunkflow.graph.reductions.moments`);
- :mod:`~chunkflow.graph.reductions.histograms`: numpy's exact histogram;
- :mod:`~chunkflow.graph.reductions.quantiles`: exact percentiles, quantiles and
  medians, from order-preserving keys (:mod:`~chunkflow.graph.reductions.order_keys`)
  and the passes of a radix selection (:mod:`~chunkflow.graph.reductions.radix`);
- :mod:`~chunkflow.graph.reductions.plan`: block sizes from the memory budget, and the
  dask array a reduction reads;
- :mod:`~chunkflow.graph.reductions.tree`: the tree of per-block results.
"""

from chunkflow.graph.reductions.histograms import histogram
from chunkflow.graph.reductions.plan import ReductionSource
from chunkflow.graph.reductions.quantiles import (
    median,
    nanmedian,
    nanpercentile,
    nanquantile,
    percentile,
    quantile,
)
from chunkflow.graph.reductions.reductions import OPERATIONS, mean, reduce, std, var

# Importable by name (numpy's names), but out of __all__: a star import must not hide
# the builtins.
from chunkflow.graph.reductions.reductions import max as max
from chunkflow.graph.reductions.reductions import min as min
from chunkflow.graph.reductions.reductions import sum as sum

__all__ = [
    "OPERATIONS", "ReductionSource", "histogram", "mean", "median", "nanmedian",
    "nanpercentile", "nanquantile", "percentile", "quantile", "reduce", "std", "var",
]
