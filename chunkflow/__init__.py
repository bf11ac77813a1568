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

from importlib import import_module
from typing import TYPE_CHECKING, Any

# Modules, reached as chunkflow.config, chunkflow.ndimage, chunkflow.skimage and
# chunkflow.reductions but left
# out of __all__: a star import gives functions and classes only.
from chunkflow import config as config
from chunkflow.api import (
    Group,
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
    copy_store,
    create_group,
    load,
    save,
    save_array,
    save_group,
    tree,
)
from chunkflow.cache import ChunkCache, cache_info, get_cache
from chunkflow.core import Array, Tree, VerifyReport
from chunkflow.errors import (
    ArrayNotFoundError,
    CastingError,
    ChunkDecodeError,
    ChunkflowError,
    ContainsArrayError,
    ContainsGroupError,
    ForeignContentError,
    GroupNotFoundError,
    IncompleteJobWarning,
    IncompleteListingError,
    JobMismatchError,
    JobTokenError,
    LockTimeoutError,
    MemoryPlanError,
    NodeNotFoundError,
    OutputIsSourceError,
    ReadOnlyError,
    StoreRequestError,
    TransactionConflictError,
    TransactionError,
    ValuesChangedError,
)
from chunkflow.jobs import job_status
from chunkflow.storage import (
    DirectoryStore,
    FsspecStore,
    LocalStore,
    LRUStoreCache,
    MappingStore,
    MemoryStore,
    N5Store,
    SQLiteStore,
    Store,
    ZipStore,
)
from chunkflow.sync import DistributedSynchronizer, ProcessSynchronizer, ThreadSynchronizer
from chunkflow.version import __version__ as __version__

if TYPE_CHECKING:
    from chunkflow import ndimage as ndimage
    from chunkflow import reductions as reductions
    from chunkflow import skimage as skimage
    from chunkflow.graph import (
        compute,
        copy,
        copy_all,
        histogram,
        label,
        map_chunks,
        measure,
        median,
        nanmedian,
        nanpercentile,
        nanquantile,
        percentile,
        quantile,
        reduce,
        segment,
        store,
        summarize_chunks,
        to_chunkflow,
        to_dask,
        verify,
    )
    from chunkflow.graph.pyramid import pyramid
    from chunkflow.graph.rechunk import rechunk
    from chunkflow.io import convert

# The dask graph builders (and chunkflow.reductions, built on them) load dask.array,
# with pandas, scipy.sparse and xarray when they are installed: about 70 MiB of memory
# and a second of start-up. They load on first use, not on `import chunkflow`:
# reading and writing arrays needs none of it.
_LAZY = {
    "compute": "chunkflow.graph",
    "convert": "chunkflow.io",  # TIFF, HDF5, raw and Zarr to sharded OME-Zarr with its pyramid
    "copy": "chunkflow.graph",  # with scheduler= and progress=: a dask job per array
    "copy_all": "chunkflow.graph",
    "histogram": "chunkflow.graph",
    "label": "chunkflow.graph",
    "map_chunks": "chunkflow.graph",
    "measure": "chunkflow.graph",
    "median": "chunkflow.graph",
    "nanmedian": "chunkflow.graph",
    "nanpercentile": "chunkflow.graph",
    "nanquantile": "chunkflow.graph",
    "percentile": "chunkflow.graph",
    "pyramid": "chunkflow.graph.pyramid",
    "quantile": "chunkflow.graph",
    "rechunk": "chunkflow.graph.rechunk",
    "reduce": "chunkflow.graph",
    "segment": "chunkflow.graph",
    "store": "chunkflow.graph",
    "summarize_chunks": "chunkflow.graph",
    "to_chunkflow": "chunkflow.graph",
    "to_dask": "chunkflow.graph",
    "verify": "chunkflow.graph",  # Array.verify with a scheduler: a dask task per region
    "reductions": "chunkflow.reductions",  # a module: chunkflow.reductions itself
    "ndimage": "chunkflow.ndimage",  # a module: scipy.ndimage's names over chunked arrays
    "skimage": "chunkflow.skimage",  # a module: scikit-image's names over chunked arrays
}
_MODULES = ("ndimage", "reductions", "skimage")


def __getattr__(name: str) -> Any:
    where = _LAZY.get(name)
    if where is None:
        raise AttributeError(f"module 'chunkflow' has no attribute {name!r}")
    module = import_module(where)
    value = module if name in _MODULES else getattr(module, name)
    globals()[name] = value  # found directly from now on
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_LAZY))


__all__ = [
    "Array",
    "ArrayNotFoundError",
    "CastingError",
    "ChunkCache",
    "ChunkDecodeError",
    "ChunkflowError",
    "ContainsArrayError",
    "ContainsGroupError",
    "DirectoryStore",
    "DistributedSynchronizer",
    "ForeignContentError",
    "FsspecStore",
    "Group",
    "GroupNotFoundError",
    "IncompleteJobWarning",
    "IncompleteListingError",
    "JobMismatchError",
    "JobTokenError",
    "LRUStoreCache",
    "LocalStore",
    "LockTimeoutError",
    "MappingStore",
    "MemoryPlanError",
    "MemoryStore",
    "N5Store",
    "NodeNotFoundError",
    "OutputIsSourceError",
    "ProcessSynchronizer",
    "ReadOnlyError",
    "SQLiteStore",
    "Store",
    "StoreRequestError",
    "ThreadSynchronizer",
    "TransactionConflictError",
    "TransactionError",
    "Tree",
    "ValuesChangedError",
    "VerifyReport",
    "ZipStore",
    "array",
    "cache_info",
    "compute",
    "consolidate_metadata",
    "convert",
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
    "job_status",
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
    "save",
    "save_array",
    "save_group",
    "segment",
    "store",
    "summarize_chunks",
    "to_chunkflow",
    "to_dask",
    "tree",
    "verify",
    "zeros",
    "zeros_like",
]
