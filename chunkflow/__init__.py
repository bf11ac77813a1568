"""chunkflow: chunked, compressed N-dimensional arrays in Zarr v2 and v3 format.

Examples
--------
>>> import numpy as np
>>> import chunkflow
>>> z = chunkflow.zeros((1000, 1000), chunks=(100, 100), dtype="f4")
>>> z[10:20, :] = 1.5
>>> round(float(np.mean(z)), 6)
0.015
"""

from chunkflow.array import (
    Array,
    array,
    create,
    empty,
    empty_like,
    full,
    full_like,
    ones,
    ones_like,
    open_array,
    open_like,
    zeros,
    zeros_like,
)
from chunkflow.cache import ChunkCache, cache_info, config, get_cache
from chunkflow.storage import (
    FsspecStore,
    LocalStore,
    MappingStore,
    MemoryStore,
    Store,
    ZipStore,
)

from chunkflow.sync import DistributedSynchronizer, ProcessSynchronizer, ThreadSynchronizer

__version__ = "0.1.0"


def open(store=None, mode: str = "a", **kwargs):  # noqa: A001 - zarr-python's name
    """Open an array (or, for now, create one when ``shape`` is given).

    Parameters
    ----------
    store : str, os.PathLike, Store, MutableMapping or None
        Where the array lives.
    mode : {"r", "r+", "a", "w", "w-"}
        As in zarr-python.
    **kwargs
        ``path``, ``storage_options`` and creation arguments (``shape``, ``dtype``...).

    Examples
    --------
    >>> z = open(mode="w", shape=(3,), dtype="i1")
    >>> z[:] = 5
    >>> z[:]
    array([5, 5, 5], dtype=int8)
    """
    return open_array(store, mode=mode, **kwargs)


__all__ = [
    "Array",
    "ChunkCache",
    "DistributedSynchronizer",
    "ProcessSynchronizer",
    "ThreadSynchronizer",
    "cache_info",
    "config",
    "get_cache",
    "FsspecStore",
    "LocalStore",
    "MappingStore",
    "MemoryStore",
    "Store",
    "ZipStore",
    "array",
    "create",
    "empty",
    "empty_like",
    "full",
    "full_like",
    "ones",
    "ones_like",
    "open",
    "open_array",
    "open_like",
    "zeros",
    "zeros_like",
]
