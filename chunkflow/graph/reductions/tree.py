"""Trees of per-block results: a reduction's tasks over the blocks of a dask array.

:func:`tree_reduce` sums ``func(block)`` over every block, :func:`gather_tree`
concatenates it, combining ``every`` partial results at a time (see
:func:`~chunkflow.graph.reductions.plan.split_every`).

Examples
--------
>>> import numpy as np
>>> import dask.array as da
>>> x = da.from_array(np.arange(12, dtype="u1").reshape(3, 4), chunks=(2, 2))
>>> per_block = lambda block: np.bincount(block.ravel() % 3, minlength=3)
>>> tree_reduce(x, per_block).compute(scheduler="sync").tolist()
[4, 4, 4]
"""

from __future__ import annotations

from collections.abc import Callable
from functools import partial
from typing import TYPE_CHECKING, Any

import dask.array as da
import numpy as np
from dask.core import flatten

if TYPE_CHECKING:
    from numpy.typing import DTypeLike

__all__ = ["gather_tree", "tree_reduce"]


def _sum_parts(parts: Any, axis: Any = None, keepdims: bool = False) -> np.ndarray:
    """Sum of the per-block arrays in a (nested) list, as one array."""
    arrays = list(flatten(parts)) if isinstance(parts, list) else [parts]
    total = arrays[0].copy()
    for part in arrays[1:]:
        total += part
    return total


def _concat_parts(parts: Any, axis: Any = None, keepdims: bool = False) -> np.ndarray:
    """The per-block arrays in a (nested) list, end to end."""
    arrays = list(flatten(parts)) if isinstance(parts, list) else [parts]
    return np.concatenate(arrays)


def _apply(block: np.ndarray, axis: int | tuple[int, ...] | None, keepdims: bool, *,
           func: Callable[[np.ndarray], Any]) -> Any:
    """dask's per-block step of a reduction, calling ``func`` on the block alone."""
    return func(block)


def tree_reduce(x: da.Array, func: Callable[[np.ndarray], np.ndarray],
                dtype: DTypeLike = np.int64, every: int = 8) -> da.Array:
    """The sum over all blocks of ``func(block)`` (1-D arrays of one length), summed
    ``every`` partial results at a time: a lazy dask array that computes to that sum.

    ``func`` must be picklable (a module-level function or a ``functools.partial`` of
    one) so that worker processes can run it.
    """
    return da.reduction(
        x, partial(_apply, func=func), _sum_parts, combine=_sum_parts, axis=None,
        concatenate=False, dtype=dtype, split_every=every, meta=np.empty(0, dtype),
    )


def gather_tree(x: da.Array, func: Callable[[np.ndarray], np.ndarray], dtype: DTypeLike,
                every: int = 8) -> da.Array:
    """The concatenation of ``func(block)`` (1-D arrays of any length) over all blocks."""
    return da.reduction(
        x, partial(_apply, func=func), _concat_parts, combine=_concat_parts, axis=None,
        concatenate=False, dtype=dtype, split_every=every, meta=np.empty(0, dtype),
    )
