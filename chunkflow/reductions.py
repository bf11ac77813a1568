"""Reductions of arrays larger than memory, in bounded memory: ``chunkflow.reductions``.

:func:`reduce` computes several at once; :func:`mean`, :func:`std`, :func:`var`,
:func:`min`, :func:`max` and :func:`sum` one each; :func:`histogram`,
:func:`percentile`, :func:`quantile`, :func:`median` and their ``nan*`` variants give
numpy's exact answers. The implementation lives in :mod:`chunkflow.graph.reductions`.

``min``, ``max`` and ``sum`` are importable by name (``from chunkflow.reductions import
sum``) but are not in ``__all__``, so ``from chunkflow.reductions import *`` keeps
Python's builtins.

Examples
--------
>>> import numpy as np
>>> import chunkflow
>>> from chunkflow.reductions import mean
>>> z = chunkflow.array(np.arange(100, dtype="u2").reshape(10, 10), chunks=(3, 3))
>>> float(mean(z)), int(chunkflow.reductions.max(z))
(49.5, 99)
"""

from chunkflow.graph.reductions import (
    OPERATIONS,
    histogram,
    mean,
    median,
    nanmedian,
    nanpercentile,
    nanquantile,
    percentile,
    quantile,
    reduce,
    std,
    var,
)
from chunkflow.graph.reductions import max as max
from chunkflow.graph.reductions import min as min
from chunkflow.graph.reductions import sum as sum

__all__ = [
    "OPERATIONS", "histogram", "mean", "median", "nanmedian", "nanpercentile", "nanquantile",
    "percentile", "quantile", "reduce", "std", "var",
]
