"""Connected components, object tables and per-block segmentations, exact and in
bounded memory.

- :func:`label` labels the connected components of an array's nonzero values into a
  new array, bit-identical to ``scipy.ndimage.label`` on the whole array;
- :func:`measure` tables each object's size, position and intensity (the columns of
  ``skimage.measure.regionprops_table``) in one pass over the blocks;
- :func:`segment` makes a per-block segmenter's labels global, numbered as
  :func:`label` numbers.

Only the parts of objects on block faces take part in the global merge, a tree of
unions (:mod:`chunkflow.graph.labels.merge`); the numbering counts smaller keys from
per-block histograms (:mod:`chunkflow.graph.labels.ranks`).
"""

from chunkflow.graph.labels.labelling import label
from chunkflow.graph.labels.measuring import measure
from chunkflow.graph.labels.segments import segment

__all__ = ["label", "measure", "segment"]
