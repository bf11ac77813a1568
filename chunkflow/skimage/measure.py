"""``skimage.measure``'s ``label`` and ``regionprops_table``, by their names and
signatures, on arrays of any size.

- :func:`label`: the connected regions of equal value, numbered in raster order as
  scikit-image numbers them: each block's regions (:mod:`chunkflow.graph.labels.values`)
  made global by :func:`chunkflow.segment`'s merge tree;
- :func:`regionprops_table`: :func:`chunkflow.measure`'s table (one pass for sizes,
  boxes, centroids, intensity statistics, moments and what derives from them,
  perimeters; crops for the rest), or with ``out=`` a Parquet file written a row
  group at a time.

Examples
--------
>>> import numpy as np
>>> from chunkflow.skimage import measure
>>> image = np.array([[1, 1, 2, 0], [0, 2, 2, 1], [3, 0, 0, 1]])
>>> labels, count = measure.label(image, return_num=True)
>>> labels[:].tolist(), count
([[1, 1, 2, 0], [0, 2, 2, 3], [4, 0, 0, 3]], 4)
>>> table = measure.regionprops_table(labels, properties=("label", "area"))
>>> table["area"].tolist()
[2.0, 3.0, 2.0, 1.0]
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from chunkflow.errors import InvalidArgumentError
from chunkflow.graph.labels import measure, segment
from chunkflow.graph.labels.groups import measure_groups
from chunkflow.graph.labels.relabel import fortran_ranks, image_source, map_values
from chunkflow.graph.labels.values import value_components
from chunkflow.skimage.arguments import as_source
from chunkflow.skimage.tables import ROW_GROUP_SIZE, write_parquet_groups
from chunkflow.storage import MemoryStore

if TYPE_CHECKING:
    from chunkflow.graph.scheduler import ProgressArg, SchedulerLike

__all__ = ["label", "regionprops_table"]

StorageOptions = Mapping[str, Any] | None


def _connectivity(connectivity: int | None, ndim: int) -> int:
    if connectivity is None:
        return ndim
    if isinstance(connectivity, bool) or not isinstance(connectivity, (int, np.integer)) \
            or not 1 <= connectivity <= ndim:
        raise InvalidArgumentError(f"Connectivity for {ndim}D image should be in "
                                   f"[1, ..., {ndim}]. Got {connectivity}.")
    return int(connectivity)


def label(label_image: Any, background: Any = None, return_num: bool = False,
          connectivity: int | None = None, *, out: Any = None, dtype: Any = None,
          chunks: tuple[int, ...] | None = None, blocks: Any = None,
          max_memory: int | str | None = None, scheduler: SchedulerLike = None,
          progress: ProgressArg = False, resume: bool = False, job_name: str | None = None,
          overwrite: bool = False, storage_options: StorageOptions = None) -> Any:
    """Label the connected regions of equal value, as ``skimage.measure.label``.

    Voxels equal to ``background`` (default 0) are 0; two voxels are connected when
    they are neighbours within ``connectivity`` steps along axes (default: the number
    of dimensions, every neighbour) and hold the same value. The labels are numbered
    by their first voxel in C order, as scikit-image numbers them, and written to
    ``out`` (in memory when ``None``) in scikit-image's dtype (``int64``; ``int32`` for
    a boolean image) unless ``dtype`` says otherwise.

    Parameters
    ----------
    label_image : chunkflow.Array, path, URL or numpy array
        An integer (or boolean) image.
    background, return_num, connectivity
        As scikit-image's.
    out, dtype, chunks, blocks, max_memory, scheduler, progress, resume, job_name,
    overwrite, storage_options
        As :func:`chunkflow.segment`'s.

    Returns
    -------
    chunkflow.Array, or (chunkflow.Array, int) with ``return_num``
    """
    source = as_source(label_image, "label")
    array = image_source(source, storage_options, "label")
    steps = _connectivity(connectivity, array.ndim)
    if dtype is None:
        dtype = "int32" if array.dtype == bool else "int64"
    labels, count = segment(value_components, source, MemoryStore() if out is None else out,
                            depth=1, dtype=dtype, chunks=chunks, blocks=blocks,
                            max_memory=max_memory, scheduler=scheduler, progress=progress,
                            resume=resume, job_name=job_name, overwrite=overwrite,
                            storage_options=storage_options, connectivity=steps,
                            background=0 if background is None else background)
    if labels.ndim == 3 and labels.shape[-1] == 1 and count > 1 and array.dtype != bool:
        # scikit-image numbers a 3-D image whose last axis has one voxel by first voxel
        # in Fortran order (its labelling drops that axis and scans the transpose). Not
        # a boolean image: scikit-image labels those with scipy.ndimage.label, in C order.
        ranks = fortran_ranks(labels, count, scheduler=scheduler, progress=progress)
        labels = map_values(labels, np.arange(1, count + 1), ranks.astype(labels.dtype),
                            labels, overwrite=True, scheduler=scheduler, progress=progress,
                            max_memory=max_memory)
    return (labels, count) if return_num else labels


def _separated(table: dict[str, np.ndarray], separator: str) -> dict[str, np.ndarray]:
    """Columns of several values named ``name{separator}index`` (chunkflow names them
    with ``-``, scikit-image's default)."""
    if separator == "-":
        return table
    return {name.replace("-", separator) if "-" in name else name: column
            for name, column in table.items()}


def regionprops_table(label_image: Any, intensity_image: Any = None,
                      properties: Sequence[str] = ("label", "bbox"), *, cache: bool = True,
                      separator: str = "-",
                      extra_properties: Sequence[Callable[..., Any]] | None = None,
                      spacing: Any = None, out: Any = None,
                      row_group_size: int = ROW_GROUP_SIZE, blocks: Any = None,
                      max_memory: int | str | None = None, scheduler: SchedulerLike = None,
                      progress: ProgressArg = False,
                      storage_options: StorageOptions = None) -> Any:
    """A table of the objects of ``label_image``, as ``skimage.measure.regionprops_table``
    (see :func:`chunkflow.measure` for what is computed in one pass and what from
    crops).

    ``cache`` is accepted and has no effect (each property is computed once here);
    ``extra_properties`` are functions of the object's mask (and intensity crop), as
    scikit-image's. With ``out`` (a path or URL of a ``.parquet`` file) the table is
    written there with pyarrow and ``out`` is returned. The table is then measured and
    written a row group at a time, in label order: each row group holds the objects
    (``row_group_size`` rows in each, the last one shorter), in label order. This
    function holds the rows of at most ``row_group_size`` objects being measured and
    less than a row group of measured rows waiting to be written, whatever the number
    of objects (see :func:`chunkflow.graph.labels.groups.measure_groups`).

    Examples
    --------
    >>> import numpy as np
    >>> labels = np.array([[1, 1, 0], [0, 2, 2]])
    >>> regionprops_table(labels, separator="_")["bbox_3"].tolist()
    [2, 3]
    """
    functions = list(extra_properties or [])
    for function in functions:
        if not callable(function):
            raise InvalidArgumentError(f"regionprops_table: extra_properties must be functions; "
                                       f"got {function!r}")
    if not isinstance(separator, str):
        raise InvalidArgumentError(f"regionprops_table: separator must be a string; got "
                                   f"{separator!r}")
    del cache  # no effect: chunkflow computes each property once
    source = as_source(label_image, "regionprops_table")
    image = None if intensity_image is None else as_source(intensity_image, "regionprops_table")
    # storage_options open the inputs given as URLs, and ``out``.
    reading = storage_options if any(isinstance(a, (str, os.PathLike))
                                     for a in (source, image)) else None
    if out is not None:
        groups = measure_groups(source, image, properties=[*properties, *functions],
                                spacing=spacing, group_size=row_group_size, blocks=blocks,
                                max_memory=max_memory, scheduler=scheduler, progress=progress,
                                storage_options=reading)
        return write_parquet_groups((_separated(group, separator) for group in groups), out,
                                    row_group_size=row_group_size,
                                    storage_options=storage_options)
    table = measure(source, image, properties=[*properties, *functions], spacing=spacing,
                    blocks=blocks, max_memory=max_memory, scheduler=scheduler,
                    progress=progress, storage_options=reading)
    return _separated(table, separator)
