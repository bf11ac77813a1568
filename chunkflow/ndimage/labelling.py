"""scipy.ndimage.label and find_objects over chunked arrays.

:func:`label` is :func:`chunkflow.label` with scipy's signature (``output`` a dtype or
a numpy array, int32 labels by default as scipy's); :func:`find_objects` takes the
bounding boxes from a table of the labels merged over blocks.

Examples
--------
>>> import numpy as np
>>> from scipy import ndimage
>>> a = np.array([[1, 0, 1], [1, 0, 0], [0, 0, 1]])
>>> labels, n = label(a)
>>> n, labels[...].tolist(), labels.dtype
(3, [[1, 0, 2], [1, 0, 0], [0, 0, 3]], dtype('int32'))
>>> find_objects(labels) == ndimage.find_objects(labels[...])
True
"""

from __future__ import annotations

from typing import Any

import numpy as np
from scipy import ndimage as scipy_ndimage

from chunkflow.config.resources import physical_memory
from chunkflow.core.array import Array
from chunkflow.errors import ArgumentTypeError, InvalidArgumentError, MemoryPlanError
from chunkflow.graph.filters import open_image
from chunkflow.graph.label_statistics import Groups, label_table
from chunkflow.graph.labels import label as label_job
from chunkflow.ndimage.arguments import job_options
from chunkflow.storage import MemoryStore

#: Bytes of one entry of find_objects' list (a pointer; None or a tuple of slices).
_SLOT_BYTES = 8

__all__ = ["find_objects", "label"]


def label(input: Any, structure: Any = None, output: Any = None, **job: Any) -> Any:
    """scipy.ndimage.label over chunked arrays: ``(labels, num_features)``, or the
    number alone when ``output`` is a numpy array (filled with the labels), as scipy.

    The labels are scipy's bit for bit (see :func:`chunkflow.label`), int32 unless
    ``output`` names a dtype (int64 past 2**31 - 2 voxels, as scipy). With ``out=`` they
    go to that location; by default to an in-memory array. ``compute=False`` returns a
    ``dask.delayed`` object of ``(labels, num_features)``.

    Examples
    --------
    >>> import numpy as np
    >>> filled = np.zeros((2, 3), "u2")
    >>> label(np.array([[1, 1, 0], [0, 0, 1]]), output=filled), filled.tolist()
    (2, [[1, 1, 0], [0, 0, 2]])
    """
    what = "label"
    options = job_options(what, job)
    if options.temp is not None:
        raise ArgumentTypeError("label: unexpected keyword 'temp' (a label job needs none)")
    source = open_image(input, options.storage_options, what)
    if source.dtype.kind == "c":
        raise ArgumentTypeError("label: Complex type not supported (as scipy)")
    if source.ndim:  # scipy's own refusals of the structure and output, first
        scipy_ndimage.label(np.zeros((3,) * source.ndim, source.dtype), structure,
                            None if output is None or isinstance(output, (np.ndarray, Array))
                            else output)
    fill = output if isinstance(output, np.ndarray) else None
    if fill is not None and fill.shape != source.shape:
        raise InvalidArgumentError(f"label: output shape {fill.shape} is not the input's "
                                   f"{source.shape} (scipy: 'output shape not correct')")
    if output is None or fill is not None:
        dtype = np.dtype(np.intp if source.size >= 2 ** 31 - 2 else np.int32)
    else:
        dtype = np.dtype(output)
    result = label_job(source, options.target() if fill is None else MemoryStore(),
                       structure=structure,
                       dtype=dtype, blocks=options.blocks, max_memory=options.max_memory,
                       scheduler=options.scheduler, progress=options.progress,
                       compute=options.compute, resume=options.resume,
                       overwrite=options.overwrite)
    if fill is None:
        return result
    labels, count = result
    fill[...] = labels[...]
    return count


def _refuse_a_huge_answer(max_label: int) -> None:
    """scipy's answer has a slot per label value up to ``max_label``: a label of 10**12
    would ask for terabytes (scipy tries, and the kernel kills the process). Refused
    when the list alone would take a quarter of this machine's memory."""
    if max_label * _SLOT_BYTES > physical_memory() // 4:
        raise MemoryPlanError(
            f"find_objects: the answer has a slot per label value up to {max_label:,}, "
            f"about {max_label * _SLOT_BYTES / 2**30:,.1f} GiB as a list, more than a quarter "
            "of this machine's memory; number the objects 1, 2, ... first "
            "(chunkflow.skimage.segmentation.relabel_sequential), or pass max_label=")


def find_objects(input: Any, max_label: int = 0, **job: Any) -> list[Any]:
    """scipy.ndimage.find_objects over chunked arrays: for labels 1 to ``max_label``
    (default: the largest label) the slices of its bounding box, or ``None``.

    Job keywords: ``scheduler``, ``progress``, ``storage_options``.

    Examples
    --------
    >>> import numpy as np
    >>> find_objects(np.array([[0, 2], [2, 0]]))
    [None, (slice(0, 2, None), slice(0, 2, None))]
    """
    for name in job:
        if name not in ("scheduler", "progress", "storage_options"):
            raise ArgumentTypeError(f"find_objects: unexpected keyword {name!r} (it is not "
                                    "scipy.ndimage.find_objects's, nor one of chunkflow's: "
                                    "progress, scheduler, storage_options)")
    labels = open_image(input, job.get("storage_options"), "find_objects")
    if labels.dtype.kind == "c":
        raise ArgumentTypeError("find_objects: Complex type not supported (as scipy)")
    if labels.dtype.kind not in "biu":
        raise ArgumentTypeError(f"find_objects: labels of dtype {labels.dtype} are not "
                                "integers (scipy refuses them with TypeError)")
    run = {k: v for k, v in job.items() if k != "storage_options"}
    table = label_table(None, labels, Groups("labels"), {"count", "bbox"}, **run)
    keys = table["key"]
    if max_label < 1:
        if not len(keys):
            raise InvalidArgumentError("find_objects: the array is empty (scipy: zero-size "
                                       "array to reduction operation maximum)")
        max_label = int(keys[-1])
    _refuse_a_huge_answer(int(max_label))
    found: list[Any] = [None] * max(int(max_label), 0)
    for key, low, high in zip(keys, table["bbox_min"], table["bbox_max"]):
        if 1 <= key <= max_label:
            found[int(key) - 1] = tuple(slice(int(a), int(b) + 1) for a, b in zip(low, high))
    return found
