"""map_chunks and summarize_chunks: a function over every block, halos included.

- :mod:`~chunkflow.graph.map.chunks`: the two functions and their dask graph;
- :mod:`~chunkflow.graph.map.plan`: :class:`MapPlan`, what every task needs;
- :mod:`~chunkflow.graph.map.tasks`: the block and task grid, checked against the
  memory plan;
- :mod:`~chunkflow.graph.map.groups`: tasks that run a group of blocks from one window;
- :mod:`~chunkflow.graph.map.halo`: windows with halos and boundary modes;
- :mod:`~chunkflow.graph.map.outputs`: the sources and the output array.
"""

from chunkflow.graph.map.chunks import map_chunks, summarize_chunks
from chunkflow.graph.map.plan import MapPlan

__all__ = ["MapPlan", "map_chunks", "summarize_chunks"]
