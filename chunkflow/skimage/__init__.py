"""scikit-image's names over arrays of any size: ``from chunkflow.skimage import
filters`` and ``filters.threshold_otsu(z)`` as with ``skimage.filters``.

- :mod:`~chunkflow.skimage.filters`: the thresholds (Otsu, Li, Yen, triangle,
  Multi-Otsu), from exact global histograms;
- :mod:`~chunkflow.skimage.measure`: ``label`` (regions of equal value, numbered in
  raster order) and ``regionprops_table``;
- :mod:`~chunkflow.skimage.morphology`: ``remove_small_objects`` and
  ``remove_small_holes``, from the objects' global areas;
- :mod:`~chunkflow.skimage.segmentation`: ``relabel_sequential``, from the table of
  the labels' values;

Each function takes a chunkflow array, a path or URL (with ``storage_options``), a
dask or a numpy array. Keywords scikit-image has and chunkflow does not support are
refused by name, never ignored. The computing lives in :mod:`chunkflow.graph`.
"""

from chunkflow.skimage import filters, measure, morphology, segmentation

__all__ = ["filters", "measure", "morphology", "segmentation"]
