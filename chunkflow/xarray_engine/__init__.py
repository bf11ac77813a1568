"""The parts of ``engine="chunkflow"`` (entry module: :mod:`chunkflow.xarray_backend`).

* :mod:`~chunkflow.xarray_engine.wrapper` — the lazily indexed array (sync and async);
* :mod:`~chunkflow.xarray_engine.variables` — dimensions, attributes, encoding;
* :mod:`~chunkflow.xarray_engine.opening` — the group, with or without consolidated
  metadata.

Everything here needs xarray; ``import chunkflow`` imports none of it.
"""
