"""Write a dask array to a new chunkflow array, as ``dask.array.to_zarr`` does.

Examples
--------
>>> import dask.array as da
>>> import chunkflow
>>> x = da.arange(12, chunks=5).reshape(3, 4)
>>> z = to_chunkflow(x, chunkflow.MemoryStore(), zarr_format=2)
>>> z.chunks, z[:].sum() == x.sum().compute()
((1, 4), np.True_)
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from chunkflow.array import Array, create
from chunkflow.graph.compute import ProgressArg
from chunkflow.graph.store import store

if TYPE_CHECKING:
    import dask.array as da
    from dask.delayed import Delayed

__all__ = ["to_chunkflow"]


def to_chunkflow(
    x: da.Array,
    url_or_store: Any,
    *,
    path: str | None = None,
    chunks: Any = None,
    overwrite: bool = False,
    storage_options: dict[str, Any] | None = None,
    compute: bool = True,
    scheduler: Any = None,
    progress: ProgressArg = False,
    **create_kwargs: Any,
) -> Array | tuple[Array, Delayed]:
    """Create an array shaped like ``x`` and write ``x`` into it with :func:`store`.

    Parameters
    ----------
    x : dask.array.Array
        What to write; its blocks need not match the chunks (writes are regrouped
        onto the chunk grid, so no two tasks share a chunk).
    url_or_store
        A path, URL or store for the new array.
    path : str, optional
        Where in the store (a group member path).
    chunks : optional
        Chunk shape; default: ``x``'s (largest) block shape.
    overwrite : bool
        Replace an existing node at that location.
    storage_options : dict, optional
        fsspec options for URLs.
    compute : bool
        Write now (default), or return ``(array, delayed)`` to write later with
        ``delayed.compute()``.
    scheduler, progress
        See :func:`chunkflow.compute`.
    **create_kwargs
        Passed to :func:`chunkflow.create` (``compressor``, ``zarr_format``, ...).

    Returns
    -------
    Array, or (Array, Delayed) with ``compute=False``.
    """
    if chunks is None:
        chunks = tuple(int(n) for n in x.chunksize) if x.ndim else ()
    target = create(
        shape=x.shape, chunks=chunks, dtype=create_kwargs.pop("dtype", x.dtype),
        store=url_or_store, path=path, overwrite=overwrite,
        storage_options=storage_options, **create_kwargs,
    )
    pending = store(x, target, compute=compute, scheduler=scheduler, progress=progress)
    return target if compute else (target, pending)
