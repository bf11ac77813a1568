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

from typing import TYPE_CHECKING, Any

from chunkflow import config
from chunkflow.api import (
    array,
    consolidate_metadata,
    create,
    create_array,
    empty,
    empty_like,
    from_array,
    full,
    full_like,
    group,
    ones,
    ones_like,
    open_array,
    open_consolidated,
    open_group,
    open_like,
    zeros,
    zeros_like,
)
from chunkflow.api import open_node as open  # noqa: A001 - zarr-python's name
from chunkflow.api.convenience import (
    copy,
    copy_all,
    copy_store,
    create_group,
    load,
    save,
    save_array,
    save_group,
    tree,
)
from chunkflow.cache import ChunkCache, cache_info, get_cache
from chunkflow.core import Array, Group, Tree
from chunkflow.storage import (
    DirectoryStore,
    FsspecStore,
    LocalStore,
    MappingStore,
    MemoryStore,
    Store,
    ZipStore,
)
from chunkflow.sync import DistributedSynchronizer, ProcessSynchronizer, ThreadSynchronizer

if TYPE_CHECKING:
    from chunkflow.graph import (
        compute,
        histogram,
        label,
        map_chunks,
        measure,
        median,
        nanmedian,
        nanpercentile,
        nanquantile,
        percentile,
        pyramid,
        quantile,
        rechunk,
        reduce,
        reductions,
        segment,
        store,
        summarize_chunks,
        to_chunkflow,
        to_dask,
    )

# The dask graph builders load dask.array (with pandas, scipy.sparse and xarray when
# they are installed: about 70 MiB of memory and a second of start-up) on first use,
# not on `import chunkflow`: reading and writing arrays needs none of it.
_GRAPH_NAMES = frozenset({
    "compute",
    "histogram",
    "label",
    "map_chunks",
    "measure",
    "median",
    "nanmedian",
    "nanpercentile",
    "nanquantile",
    "percentile",
    "pyramid",
    "quantile",
    "rechunk",
    "reduce",
    "reductions",
    "segment",
    "store",
    "summarize_chunks",
    "to_chunkflow",
    "to_dask",
})


def __getattr__(name: str) -> Any:
    if name in _GRAPH_NAMES:
        from chunkflow import graph

        value = getattr(graph, name)
        globals()[name] = value  # found directly from now on
        return value
    raise AttributeError(f"module 'chunkflow' has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted(set(globals()) | _GRAPH_NAMES)


__version__ = "0.1.0"


__all__ = [
    "Array",
    "ChunkCache",
    "DirectoryStore",
    "DistributedSynchronizer",
    "FsspecStore",
    "Group",
    "LocalStore",
    "MappingStore",
    "MemoryStore",
    "ProcessSynchronizer",
    "Store",
    "ThreadSynchronizer",
    "Tree",
    "ZipStore",
    "array",
    "cache_info",
    "compute",
    "config",
    "consolidate_metadata",
    "copy",
    "copy_all",
    "copy_store",
    "create",
    "create_array",
    "create_group",
    "empty",
    "empty_like",
    "from_array",
    "full",
    "full_like",
    "get_cache",
    "group",
    "histogram",
    "label",
    "load",
    "map_chunks",
    "measure",
    "median",
    "nanmedian",
    "nanpercentile",
    "nanquantile",
    "ones",
    "ones_like",
    "open",
    "open_array",
    "open_consolidated",
    "open_group",
    "open_like",
    "percentile",
    "pyramid",
    "quantile",
    "rechunk",
    "reduce",
    "reductions",
    "save",
    "save_array",
    "save_group",
    "segment",
    "store",
    "summarize_chunks",
    "to_chunkflow",
    "to_dask",
    "tree",
    "zeros",
    "zeros_like",
]
