"""Percentiles, quantiles and medians per channel: ``axis=`` as numpy takes it.

``percentile(x, q, axis=(1, 2, 3))`` of a ``czyx`` image is numpy's
``numpy.percentile(x, q, axis=(1, 2, 3))``: one exact radix selection per index of the
axes kept (per channel), each numpy's answer for that channel, stacked as numpy stacks
them (``q``'s shape first, then the kept axes). One job per index: meant for channels
and time points, not for keeping a large axis. Where numpy's own ``axis=`` path differs
from its answer per slice (an all-NaN slice makes ``nanpercentile``'s whole result the
input's float type; ``nanmedian`` overflows near the dtype's largest value), this is
the answer per slice.

Examples
--------
>>> import numpy as np
>>> import chunkflow
>>> from chunkflow.graph.reductions.quantiles import percentile
>>> data = np.random.default_rng(0).random((2, 9, 8))
>>> got = along(percentile, chunkflow.array(data, chunks=(1, 4, 4)), (1, 2), q=[10, 90])
>>> got.shape, np.array_equal(got, np.percentile(data, [10, 90], axis=(1, 2)))
((2, 2), True)
"""

from __future__ import annotations

from typing import Any

import numpy as np

from chunkflow.graph.reductions.histogram_axes import kept_axes
from chunkflow.graph.reductions.plan import reduction_input

__all__ = ["along"]


def along(func: Any, source: Any, axis: Any, *, selection: Any = Ellipsis, blocks: Any = None,
          max_memory: Any = None, scheduler: Any = None, progress: Any = False,
          storage_options: Any = None, numpy_name: str | None = None, **call: Any) -> Any:
    """``func`` (a reduction over all values: percentile, median...) of each index of
    the axes not in ``axis``, stacked as numpy's ``axis=`` result; ``call``: its other
    arguments (``q``, ``method``)."""
    x, _ = reduction_input(source, selection, blocks, max_memory, scheduler, storage_options,
                           getattr(func, "__name__", "reduction"))
    reduced, kept = kept_axes(axis, x.ndim)
    kept_shape = tuple(x.shape[d] for d in kept)
    if 0 in kept_shape:
        # No index to reduce: numpy's own answer on empty data (its shape and dtype).
        oracle = getattr(np, numpy_name or str(getattr(func, "__name__", "")))
        return oracle(np.empty(x.shape, x.dtype), *call.values(), axis=reduced)
    results = []
    for index in np.ndindex(*kept_shape):
        where: list[Any] = [slice(None)] * x.ndim
        for d, i in zip(kept, index):
            where[d] = i
        results.append(np.asarray(func(x[tuple(where)], **call, scheduler=scheduler,
                                       progress=progress)))
    stacked = np.stack(results, axis=-1)
    return stacked.reshape(stacked.shape[:-1] + kept_shape)
