"""rechunk: copy an array to new chunks (dtype, codecs, format) in bounded memory.

- :mod:`~chunkflow.graph.rechunk.rechunking`: the function, its passes' dask graph and
  the task that copies one block;
- :mod:`~chunkflow.graph.rechunk.plan`: :class:`RechunkPlan` and
  :func:`prepare_rechunk`, checked before anything is created;
- :mod:`~chunkflow.graph.rechunk.passes`: one pass or two through an intermediate
  array (:class:`~chunkflow.graph.rechunk.passes.PassChoice`);
- :mod:`~chunkflow.graph.rechunk.memory`: what one task may hold, and the refusal;
- :mod:`~chunkflow.graph.rechunk.arrays`: the output's and the intermediate's
  metadata and location;
- :mod:`~chunkflow.graph.rechunk.outputs`: creating (or resuming) those arrays.
"""

from chunkflow.graph.rechunk.plan import RechunkPlan, prepare_rechunk
from chunkflow.graph.rechunk.rechunking import rechunk

__all__ = ["RechunkPlan", "prepare_rechunk", "rechunk"]
