"""``skimage.segmentation``'s label operations, by their names and signatures, on
arrays of any size, from global tables of the labels.

Each takes a chunkflow array, a path or URL (with ``storage_options``) or a numpy
array, and writes its image to ``out`` (a location, or ``None`` for an in-memory
array) with chunkflow's job keywords (``overwrite``, ``resume``, ``scheduler``,
``progress``, ``max_memory``, ``job_name``, ``blocks``) as :func:`chunkflow.map_chunks`.

Examples
--------
>>> import numpy as np
>>> from chunkflow.skimage import segmentation
>>> labels = np.array([[0, 7, 7], [42, 0, 7]], dtype="u2")
>>> relabeled, forward, inverse = segmentation.relabel_sequential(labels)
>>> relabeled[:].tolist(), forward[42], inverse[2]
([[0, 1, 1], [2, 0, 1]], np.uint16(2), np.uint16(42))
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

import numpy as np

from chunkflow.errors import ArgumentTypeError, InvalidArgumentError
from chunkflow.graph.labels.relabel import label_values, map_values
from chunkflow.skimage.arguments import as_source, job_keywords
from chunkflow.skimage.maps import ArrayMap

if TYPE_CHECKING:
    from chunkflow.core.array import Array
    from chunkflow.graph.scheduler import ProgressArg, SchedulerLike

__all__ = ["ArrayMap", "relabel_sequential"]

StorageOptions = Mapping[str, Any] | None


def _output_dtype(input_type: np.dtype, largest: int) -> np.dtype:
    """scikit-image's choice: the input's dtype unless the largest new label does not
    fit below its maximum, then the smallest unsigned dtype that holds it."""
    required = np.min_scalar_type(largest)
    if input_type.itemsize < required.itemsize:
        return required
    return input_type if largest < np.iinfo(input_type).max else required


def relabel_sequential(label_field: Any, offset: int = 1, *, out: Any = None,
                       overwrite: bool = False, resume: bool = False,
                       scheduler: SchedulerLike = None, progress: ProgressArg = False,
                       max_memory: int | str | None = None, job_name: str | None = None,
                       blocks: Any = None,
                       storage_options: StorageOptions = None
                       ) -> tuple[Array, ArrayMap, ArrayMap]:
    """Relabel the values of ``label_field`` to ``offset, offset + 1, ...`` (0 stays 0),
    in the order of the values, as ``skimage.segmentation.relabel_sequential``.

    One pass finds the distinct values (a tree of unions), a second writes the new
    labels block by block. The output's dtype is scikit-image's.

    Returns
    -------
    relabeled : chunkflow.Array
        At ``out`` (in memory when ``None``).
    forward_map, inverse_map : ArrayMap
        From the old values to the new, and back.
    """
    if offset <= 0:
        raise InvalidArgumentError("Offset must be strictly positive.")
    source = as_source(label_field, "relabel_sequential")
    job = job_keywords(overwrite=overwrite, resume=resume, scheduler=scheduler,
                       progress=progress, max_memory=max_memory, job_name=job_name,
                       blocks=blocks, storage_options=storage_options)
    in_values = label_values(source, max_memory=max_memory, scheduler=scheduler,
                             progress=progress, storage_options=storage_options,
                             what="relabel_sequential")
    if in_values.size == 0:
        raise InvalidArgumentError("relabel_sequential: the label field has no values "
                                   "(scikit-image fails on it too)")
    if in_values[0] < 0:
        raise InvalidArgumentError("Cannot relabel array that contains negative values.")
    offset = int(offset)
    if in_values[0] == 0:
        out_values = np.concatenate([[0], np.arange(offset, offset + len(in_values) - 1)])
    else:
        out_values = np.arange(offset, offset + len(in_values))
    if in_values.dtype.kind not in "iu":
        raise ArgumentTypeError("label_field must have an integer dtype")
    dtype = _output_dtype(in_values.dtype, int(out_values[-1]))
    out_values = out_values.astype(dtype)
    relabeled = map_values(source, in_values, out_values, out, dtype=dtype, **job)
    return relabeled, ArrayMap(in_values, out_values), ArrayMap(out_values, in_values)
