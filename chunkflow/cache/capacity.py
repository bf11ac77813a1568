"""The capacity of the process-wide cache in a process with a given memory limit.

A dask worker's cache is invisible to dask's memory manager, so memory plans
(``map_chunks``) take it off a worker's memory limit first: :func:`cache_bytes_for`
says how much that is under the current settings. The ``"auto"`` rule itself is
:func:`chunkflow.config.resources.auto_cache_bytes`.
"""

from __future__ import annotations

from typing import Any

import dask.config

from chunkflow import config
from chunkflow.config.resources import auto_cache_bytes, default_cache_bytes

__all__ = ["cache_bytes_for"]

_MAX_BYTES = "chunkflow.cache.max-bytes"


def cache_bytes_for(memory_limit: int | None, settings: dict[str, Any] | None = None) -> int:
    """The capacity (bytes) the process-wide cache has in a process with ``memory_limit``.

    What a dask worker with that memory limit (``None``: none) gives its cache under
    the dask config ``settings`` (default: this process's, which a ``LocalCluster``
    hands to its workers): 0 if the cache is disabled, the set
    ``chunkflow.cache.max-bytes``, or for ``"auto"``
    :func:`~chunkflow.config.resources.auto_cache_bytes` of ``memory_limit``.

    Examples
    --------
    >>> cache_bytes_for(2**30) == 2**27
    True
    >>> with config.set({"chunkflow.cache.max-bytes": "64 MiB"}):
    ...     cache_bytes_for(2**30)
    67108864
    >>> with config.set({"chunkflow.cache.enabled": False}):
    ...     cache_bytes_for(2**30)
    0
    """
    if not config.get("chunkflow.cache.enabled", settings):
        return 0
    raw = dask.config.get(_MAX_BYTES, default="auto",
                          config=dask.config.config if settings is None else settings)
    if config.is_auto(raw):
        return auto_cache_bytes(memory_limit) if memory_limit else default_cache_bytes()
    return int(config.get(_MAX_BYTES, settings))
