"""Tables of label values and maps over them, for arrays larger than memory.

- :func:`label_values`: the sorted distinct values of an array, from a tree of unions
  (memory: the distinct values, which the maps hold anyway);
- :func:`map_values`: a new array with each value replaced through a table (values
  not in the table become 0, as ``skimage.util.map_array``), one task per block;
- :func:`image_source`: what these take (an array, a path or URL, a numpy array) as a
  chunkflow array.

Examples
--------
>>> import numpy as np
>>> import chunkflow
>>> z = chunkflow.array(np.array([[5, 0], [9, 5]], dtype="u2"), chunks=(1, 1))
>>> label_values(z).tolist()
[0, 5, 9]
>>> out = map_values(z, np.array([5, 9]), np.array([1, 2], dtype="u1"), None)
>>> out[:].tolist(), out.dtype
([[1, 0], [2, 1]], dtype('uint8'))
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from functools import partial
from typing import TYPE_CHECKING, Any

import dask.array as da
import numpy as np

from chunkflow.core.array import Array
from chunkflow.errors import MemoryPlanError
from chunkflow.graph.labels.labelling import in_memory
from chunkflow.graph.map import map_chunks
from chunkflow.graph.memory import task_max_memory
from chunkflow.graph.read import writer_source
from chunkflow.graph.reductions.plan import reduction_input, split_every
from chunkflow.graph.scheduler import compute as run
from chunkflow.storage import MemoryStore, Store

if TYPE_CHECKING:
    from numpy.typing import DTypeLike

    from chunkflow.graph.scheduler import ProgressArg, SchedulerLike

__all__ = ["fortran_ranks", "image_source", "label_values", "map_values", "replace_values"]


def image_source(source: Any, storage_options: Mapping[str, Any] | None, what: str) -> Array:
    """``source`` as a chunkflow array: an open array, a path, URL or store (opened
    read-only), or anything ``numpy.asarray`` takes (copied into memory)."""
    if isinstance(source, (Array, str, os.PathLike, Store, Mapping)):
        return writer_source(source, storage_options,
                             **({} if isinstance(source, Array) else {"cache": False}))
    return in_memory(source, what)


def _unique(block: np.ndarray, axis: Any = None, keepdims: bool = False) -> np.ndarray:
    return np.unique(block)


def _flatten(parts: Any) -> Any:
    for part in parts:
        if isinstance(part, list):
            yield from _flatten(part)
        else:
            yield part


def _union(parts: Any, axis: Any = None, keepdims: bool = False, *, cap: int,
           what: str) -> np.ndarray:
    arrays = [parts] if isinstance(parts, np.ndarray) else list(_flatten(parts))
    union = np.unique(np.concatenate(arrays))
    if union.size > cap:
        raise MemoryPlanError(f"{what}: more than {cap} distinct values, more than a task's "
                              "budget holds; raise max_memory")
    return union


def label_values(source: Any, *, max_memory: int | str | None = None,
                 scheduler: SchedulerLike = None, progress: ProgressArg = False,
                 storage_options: Mapping[str, Any] | None = None,
                 what: str = "label_values") -> np.ndarray:
    """The sorted distinct values of ``source`` (``numpy.unique`` of the whole array)."""
    x, block_bytes = reduction_input(source, Ellipsis, None, max_memory, scheduler,
                                     storage_options, what)
    cap = task_max_memory(max_memory, scheduler) // (4 * max(8, x.dtype.itemsize))
    union = partial(_union, cap=cap, what=what)
    lazy = da.reduction(x, _unique, union, combine=union, axis=None, concatenate=False,
                        dtype=x.dtype, split_every=split_every(x, None, block_bytes),
                        meta=np.empty(0, x.dtype))
    (values,) = run(lazy, scheduler=scheduler, progress=progress)
    return np.asarray(values)


def replace_values(block: np.ndarray, in_values: np.ndarray, out_values: np.ndarray,
                   dtype: Any, default: Any = 0) -> np.ndarray:
    """``block`` with ``in_values`` (sorted) replaced by ``out_values`` and every other
    value by ``default``."""
    result = np.full(block.shape, default, dtype=dtype)
    if in_values.size == 0:
        return result
    at = np.searchsorted(in_values, block)
    at[at == in_values.size] = 0
    found = in_values[at] == block
    result[found] = out_values[at[found]]
    return result


def map_values(source: Array, in_values: np.ndarray, out_values: np.ndarray, out: Any,
               *, dtype: DTypeLike | None = None, default: Any = 0,
               **job: Any) -> Array:
    """A new array at ``out`` (in memory when ``None``): ``source`` with each of the sorted
    ``in_values`` replaced by the matching ``out_values``, other values by ``default``.
    ``job`` goes to :func:`chunkflow.map_chunks` (``overwrite``, ``resume``,
    ``scheduler``, ``progress``, ``max_memory``, ``storage_options``...)."""
    dtype = np.dtype(dtype if dtype is not None else out_values.dtype)
    # The block function's own keyword is dtype too: handed over in a partial.
    func = partial(replace_values, in_values=np.asarray(in_values),
                   out_values=np.asarray(out_values, dtype), dtype=dtype, default=default)
    return map_chunks(func, source, out=MemoryStore() if out is None else out, dtype=dtype,
                      **job)


def _first_f_order(block: np.ndarray, start: tuple[int, ...], shape: tuple[int, ...]
                   ) -> tuple[np.ndarray, np.ndarray]:
    """The labels of ``block`` and the smallest Fortran-order flat index (in the whole
    array) of each."""
    flat = block.ravel(order="F")
    kept = flat != 0
    coords = np.unravel_index(np.flatnonzero(kept), block.shape, order="F")
    index = np.ravel_multi_index(tuple(c + s for c, s in zip(coords, start)), shape, order="F")
    values, first = np.unique(flat[kept], return_index=True)  # (first: in F order)
    return values, index[first]


def fortran_ranks(labels: Any, count: int, *, scheduler: SchedulerLike = None,
                  progress: ProgressArg = False) -> np.ndarray:
    """For labels ``1..count`` numbered by first voxel in C order, their numbers by first
    voxel in Fortran order (entry ``i`` for label ``i + 1``)."""
    from dask import delayed

    x, _ = reduction_input(labels, Ellipsis, None, None, scheduler, None, "label")
    starts = [np.cumsum((0,) + c[:-1]) for c in x.chunks]
    blocks = x.to_delayed()
    parts = [delayed(_first_f_order)(blocks[i], tuple(int(starts[a][k]) for a, k in enumerate(i)),
                                     x.shape) for i in np.ndindex(*x.numblocks)]
    firsts = np.full(count, np.iinfo(np.int64).max, np.int64)
    for values, index in run(*parts, scheduler=scheduler, progress=progress):
        np.minimum.at(firsts, values.astype(np.int64) - 1, index)
    ranks = np.empty(count, np.int64)
    ranks[np.argsort(firsts, kind="stable")] = np.arange(1, count + 1)
    return ranks
