"""Thresholds of arrays larger than memory, as scikit-image computes them.

- :mod:`~chunkflow.graph.thresholds.histograms`: scikit-image's histogram of the whole
  array (a bin per integer value, or ``nbins`` equal bins), exact, from per-block
  counts;
- :mod:`~chunkflow.graph.thresholds.methods`: Otsu, Yen, triangle and Multi-Otsu on a
  histogram, in scikit-image's dtypes and order of operations;
- :mod:`~chunkflow.graph.thresholds.cross_entropy`: Li's iteration, one pass per step.

:mod:`chunkflow.skimage.filters` gives them scikit-image's names and signatures.
"""

from chunkflow.graph.thresholds.cross_entropy import li
from chunkflow.graph.thresholds.histograms import (
    Extrema,
    ThresholdInput,
    extrema,
    image_histogram,
    open_image,
)
from chunkflow.graph.thresholds.methods import given_histogram, multiotsu, otsu, triangle, yen

__all__ = ["Extrema", "ThresholdInput", "extrema", "given_histogram", "image_histogram", "li",
           "multiotsu", "open_image", "otsu", "triangle", "yen"]
