"""pyramid: an OME-Zarr multiscale image, every level from the one before it, in one job.

- :mod:`~chunkflow.graph.pyramid.pyramids`: the function and its dask graph;
- :mod:`~chunkflow.graph.pyramid.plan`: :class:`PyramidPlan`, what every task needs;
- :mod:`~chunkflow.graph.pyramid.geometry`: level shapes, stages of tasks and the
  windows they read;
- :mod:`~chunkflow.graph.pyramid.output`: the image group and its level arrays;
- :mod:`~chunkflow.graph.pyramid.downsample`: the kernels (mean, gaussian, max,
  nearest, mode).
"""

from chunkflow.graph.pyramid.plan import PyramidPlan
from chunkflow.graph.pyramid.pyramids import pyramid

__all__ = ["PyramidPlan", "pyramid"]
