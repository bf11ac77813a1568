"""``skimage.morphology``'s size filters, by their names and signatures, on arrays of
any size, from global tables of the objects.

- :func:`remove_small_objects`: a boolean image is labelled (:func:`chunkflow.label`,
  with ``connectivity``), an integer image's values are its labels; the objects' areas
  come from :func:`chunkflow.measure`, and one pass keeps the objects larger than
  ``max_size``;
- :func:`remove_small_holes`: the same on the background, filled.

A boolean image's labels go to an intermediate array, at ``work`` (default: a
temporary folder of this machine, removed at the end; on a cluster of several
machines pass a shared location).

Examples
--------
>>> import numpy as np
>>> from chunkflow.skimage import morphology
>>> image = np.array([[1, 1, 0, 0, 1], [1, 0, 0, 0, 0], [0, 0, 1, 1, 1]], dtype=bool)
>>> morphology.remove_small_objects(image, max_size=2)[...].astype(int).tolist()
[[1, 1, 0, 0, 0], [1, 0, 0, 0, 0], [0, 0, 1, 1, 1]]
>>> morphology.remove_small_holes(~image, max_size=2)[...].astype(int).tolist()
[[0, 0, 1, 1, 1], [0, 1, 1, 1, 1], [1, 1, 0, 0, 0]]
"""

from __future__ import annotations

import warnings
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

import numpy as np
from scipy import ndimage

from chunkflow.errors import ArgumentTypeError, InvalidArgumentError
from chunkflow.graph.labels import label, measure
from chunkflow.graph.labels.relabel import label_values, map_values
from chunkflow.graph.read import to_dask
from chunkflow.skimage.arguments import as_source, job_keywords, opened_locations, work_location

if TYPE_CHECKING:
    from chunkflow.core.array import Array
    from chunkflow.graph.scheduler import ProgressArg, SchedulerLike

__all__ = ["remove_small_holes", "remove_small_objects"]

StorageOptions = Mapping[str, Any] | None
_UNSET: Any = object()
_DEPRECATION = ("Parameter `{old}` is deprecated since version 0.26.0 and will be removed in "
                "2.0.0 (or later). To avoid this warning, please use the parameter `max_size` "
                "instead. For more details, see the documentation of `{what}`. Note that the "
                "new threshold removes objects smaller than **or equal to** its value, while "
                "the previous parameter only removed smaller ones.")


def _check_dtype(dtype: np.dtype) -> None:
    if not (dtype.kind == "b" or np.issubdtype(dtype, np.integer)):
        raise ArgumentTypeError(f"Only bool or integer image types are supported. Got {dtype}.")


def _threshold(old: Any, old_name: str, max_size: Any, what: str) -> Any:
    """The size limit, as scikit-image 0.26 reads it: the deprecated parameter's value
    becomes ``max_size`` (objects of at most that size go, despite its old meaning),
    with a warning; both given is an error."""
    if old is not _UNSET:
        warnings.warn(_DEPRECATION.format(old=old_name, what=what), FutureWarning, stacklevel=3)
        if max_size is not _UNSET:
            raise InvalidArgumentError(
                f"Both deprecated parameter `{old_name}` and new parameter `max_size` are used. "
                "Use only the latter to avoid conflicting values.")
        return old
    return 64 if max_size is _UNSET else max_size


def _kept(labels: Any, limit: Any, job: dict[str, Any]) -> np.ndarray:
    """The labels whose area is above ``limit``."""
    keys = ("max_memory", "scheduler", "progress", "storage_options", "blocks")
    table = measure(labels, properties=("label", "area"),
                    **{k: v for k, v in job.items() if k in keys})
    return np.asarray(table["label"][table["area"] > limit])


def _structure(ndim: int, connectivity: int) -> np.ndarray:
    return ndimage.generate_binary_structure(ndim, connectivity)


def remove_small_objects(ar: Any, min_size: Any = _UNSET, connectivity: int = 1, *,
                         max_size: Any = _UNSET, out: Any = None, work: Any = None,
                         overwrite: bool = False, scheduler: SchedulerLike = None,
                         progress: ProgressArg = False, max_memory: int | str | None = None,
                         blocks: Any = None, storage_options: StorageOptions = None) -> Array:
    """Remove objects of at most ``max_size`` (default 64) voxels, as
    ``skimage.morphology.remove_small_objects`` (``min_size``, deprecated, is read as
    ``max_size`` with scikit-image's warning).

    A boolean ``ar`` is labelled with ``connectivity``; an integer ``ar`` holds labels
    (negative values are refused, as scikit-image refuses them). The result (``ar``'s
    dtype) goes to ``out`` (in memory when ``None``).
    """
    limit = _threshold(min_size, "min_size", max_size, "remove_small_objects")
    # The caller's locations are opened here, with storage_options: the label job's
    # intermediate array (a folder of this machine) takes none.
    source, out, work = opened_locations(as_source(ar, "remove_small_objects"), out, work,
                                         storage_options, "remove_small_objects")
    array = source
    _check_dtype(array.dtype)
    job = job_keywords(overwrite=overwrite, scheduler=scheduler, progress=progress,
                       max_memory=max_memory, blocks=blocks)
    if array.dtype == bool:
        with work_location(work, out) as place:
            labels, _ = label(source, place, structure=_structure(array.ndim, connectivity),
                              overwrite=True, scheduler=scheduler, progress=progress,
                              max_memory=max_memory)
            keep = _kept(labels, limit, job)
            return map_values(labels, keep, np.ones(keep.size, bool), out, dtype=bool,
                              default=False, **job)
    values = label_values(source, max_memory=max_memory, scheduler=scheduler,
                          progress=progress, what="remove_small_objects")
    if limit == 0:  # scikit-image's shortcut: a copy, before any check
        return map_values(source, values, values, out, dtype=array.dtype, **job)
    if values.size and values[0] < 0:
        raise InvalidArgumentError(
            "Negative value labels are not supported. Try relabeling the input with "
            "`scipy.ndimage.label` or `skimage.morphology.label`.")
    if values.size and values[-1] == 1:
        warnings.warn("Only one label was provided to `remove_small_objects`. Did you mean to "
                      "use a boolean array?", UserWarning, stacklevel=2)
    keep = _kept(source, limit, job)
    return map_values(source, keep, keep.astype(array.dtype), out, dtype=array.dtype, **job)


def remove_small_holes(ar: Any, area_threshold: Any = _UNSET, connectivity: int = 1, *,
                       max_size: Any = _UNSET, out: Any = None, work: Any = None,
                       overwrite: bool = False, scheduler: SchedulerLike = None,
                       progress: ProgressArg = False, max_memory: int | str | None = None,
                       blocks: Any = None, storage_options: StorageOptions = None) -> Array:
    """Fill holes (connected background regions, with ``connectivity``) of at most
    ``max_size`` (default 64) voxels, as ``skimage.morphology.remove_small_holes``
    (``area_threshold``, deprecated, is read as ``max_size``). The result is boolean, as
    scikit-image's (an integer ``ar`` is read as ``ar != 0``, with its warning).
    """
    limit = _threshold(area_threshold, "area_threshold", max_size,
                                  "remove_small_holes")
    array, out, work = opened_locations(as_source(ar, "remove_small_holes"), out, work,
                                        storage_options, "remove_small_holes")
    _check_dtype(array.dtype)
    if array.dtype != bool:
        warnings.warn("Any labeled images will be returned as a boolean array. Did you mean to "
                      "use a boolean array?", UserWarning, stacklevel=2)
    job = job_keywords(overwrite=overwrite, scheduler=scheduler, progress=progress,
                       max_memory=max_memory, blocks=blocks)
    background = to_dask(array) == 0
    with work_location(work, out) as place:
        labels, _ = label(background, place, structure=_structure(array.ndim, connectivity),
                          overwrite=True, job_name="remove_small_holes", scheduler=scheduler,
                          progress=progress, max_memory=max_memory)
        keep = _kept(labels, limit, job) if limit != 0 else \
            label_values(labels, scheduler=scheduler)
        keep = keep[keep != 0]
        return map_values(labels, keep, np.zeros(keep.size, bool), out, dtype=bool,
                          default=True, **job)
