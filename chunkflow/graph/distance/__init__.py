"""distance_transform_edt: scipy's exact Euclidean distance transform on arrays larger
than memory, one axis whole at a time.

- :mod:`~chunkflow.graph.distance.transform`: the function and its passes;
- :mod:`~chunkflow.graph.distance.voronoi`: one pass along one axis, as scipy's
  ``_VoronoiFT`` computes it, on many lines at once;
- :mod:`~chunkflow.graph.distance.plan`: the chunks and each pass's blocks within
  ``max_memory``;
- :mod:`~chunkflow.graph.distance.tasks`: the task of one block of one pass.
"""

from chunkflow.graph.distance.transform import distance_transform_edt

__all__ = ["distance_transform_edt"]
