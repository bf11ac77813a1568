"""measure: a table of every object's size, position and intensity, with the columns
and values of ``skimage.measure.regionprops_table``, in one pass over the blocks.

Each block task reads one block of labels (and of intensity) and returns a partial
table per label present (sizes, boxes, sums of coordinates and of their products,
intensity statistics, moments) (:mod:`chunkflow.graph.labels.tables`); partial tables
merge in a tree, so no object is ever assembled whole (and
:mod:`chunkflow.graph.labels.groups` merges them a range of labels at a time, so that
no table is either). Properties that need the
whole object are computed from crops in a second pass (:mod:`chunkflow.graph.labels.crops`).

Examples
--------
>>> import numpy as np
>>> import chunkflow
>>> from skimage.measure import regionprops_table
>>> labels = np.array([[1, 1, 0, 2], [0, 1, 0, 2], [3, 0, 0, 2]])
>>> image = np.arange(12.0).reshape(3, 4)
>>> z = chunkflow.array(labels, chunks=(2, 2))
>>> table = chunkflow.measure(z, image, properties=["label", "area", "intensity_mean"])
>>> table["area"].tolist(), table["intensity_mean"].tolist()
([3.0, 3.0, 1.0], [2.0, 7.0, 8.0])
>>> expected = regionprops_table(labels, image, properties=["label", "area", "intensity_mean"])
>>> all(np.allclose(table[k], expected[k]) for k in expected)
True
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import dask
import dask.array as da
import numpy as np
from dask.base import tokenize
from dask.delayed import Delayed

from chunkflow.api.zarr3 import create_array
from chunkflow.config import byte_count
from chunkflow.errors import InvalidArgumentError
from chunkflow.graph.labels.checks import check_label_dtype, normalize_spacing, open_intensity
from chunkflow.graph.labels.crops import (
    CropJob,
    empty_crop_columns,
    merge_crop_tables,
    plan_crops,
)
from chunkflow.graph.labels.geometry import BlockGrid
from chunkflow.graph.labels.labelling import open_source
from chunkflow.graph.labels.perimeter import HALO, with_halo
from chunkflow.graph.labels.plan import Source, plan_blocks
from chunkflow.graph.labels.properties import (
    PropertyRequest,
    column_group,
    parse_properties,
    rename,
)
from chunkflow.graph.labels.tables import (
    block_table,
    columns,
    empty_like_columns,
    merge_tables,
    needed_stats,
    partial_names,
)
from chunkflow.graph.memory import default_max_memory
from chunkflow.graph.scheduler import compute as run

if TYPE_CHECKING:
    from chunkflow.graph.read import ArraySource, BlockChunks
    from chunkflow.graph.scheduler import ProgressArg, SchedulerLike

__all__ = ["DEFAULT_PROPERTIES", "MeasurePlan", "finish_table", "measure", "partial_table",
           "plan_measure"]

#: What :func:`measure` tables by default.
DEFAULT_PROPERTIES = ("label", "area", "bbox", "centroid")
# Partial tables merged per task.
FAN_IN = 8
# Blocks grow toward this many voxels: a block's table costs about 40 bytes per voxel
# at its peak (the voxels' slots and float64 weights), and nothing is gained from
# larger blocks (no faces to merge).
MEASURE_BLOCK_VOXELS = 1 << 20


def partial_table(grid: BlockGrid, labels: Source, intensity: Source | None, stats: set[str],
                  index: tuple[int, ...]) -> dict[str, np.ndarray]:
    """The partial table of block ``index`` (with the perimeter's halo if needed)."""
    region = grid.region(index)
    image = intensity.read(region) if intensity is not None else None
    if "codes" not in stats:
        return block_table(labels.read(region), image, [s.start for s in region], stats)
    # The perimeter's codes: the block read with its halo (0 beyond the image).
    window, pad = with_halo(region, grid.shape)
    padded = np.pad(labels.read(window), pad)
    inner = tuple(slice(HALO, HALO + r.stop - r.start) for r in region)
    return block_table(padded[inner], image, [s.start for s in region], stats, padded)


def _merge(*tables: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    return merge_tables(tables)


def _crops(job: CropJob, index: tuple[int, ...], inside: np.ndarray, reaching: np.ndarray,
           boxes: np.ndarray) -> list[dict[str, np.ndarray]]:
    return job.run(index, inside, reaching, boxes)


def _gather(*parts: list[dict[str, np.ndarray]]) -> dict[str, np.ndarray]:
    return merge_crop_tables([table for part in parts for table in part])


def _tree(graph: dict[Any, Any], name: str, keys: list[Any], combine: Callable[..., Any]) -> Any:
    depth = 0
    while len(keys) > 1 or depth == 0:
        depth += 1
        keys = [_add(graph, (f"{name}-{depth}", i), combine, *keys[i:i + FAN_IN])
                for i in range(0, len(keys), FAN_IN)]
    return keys[0]


def _add(graph: dict[Any, Any], key: Any, *task: Any) -> Any:
    graph[key] = task
    return key


def _template(source: Source) -> Any:
    """The labels' grid as an in-memory array (no chunks): what blocks are planned on."""
    return create_array(None, shape=source.shape, chunks=tuple(max(1, c) for c in source.chunks),
                        dtype=source.dtype)


def measure(
    labels: ArraySource | da.Array | np.ndarray,
    intensity: ArraySource | da.Array | np.ndarray | None = None,
    *,
    properties: Sequence[str | Callable[..., Any]] = DEFAULT_PROPERTIES,
    spacing: Any = None,
    blocks: BlockChunks = None,
    max_memory: int | str | None = None,
    scheduler: SchedulerLike = None,
    progress: ProgressArg = False,
    storage_options: Mapping[str, Any] | None = None,
    compute: bool = True,
) -> Any:
    """A table of the objects of ``labels``, as ``skimage.measure.regionprops_table``.

    Parameters
    ----------
    labels : chunkflow.Array, path, URL, store, dask or numpy array
        An integer label image: :func:`chunkflow.label`'s output, or any other (a
        segmentation model's), of any integer dtype and values; 0 and negative values
        are background (as skimage has them). Anything ``numpy.asarray`` takes is
        copied into an in-memory array.
    intensity : array, path, URL, store, dask or numpy array, optional
        An image of the same shape, for the ``intensity_*``, ``centroid_weighted`` and
        other weighted properties. Its statistics are computed in ``float64``.
    properties : sequence of str or callable
        ``regionprops_table``'s names, current or deprecated (``Centroid``,
        ``weighted_centroid``...: the column is named as given, as skimage names it).
        ``label``, ``area``, ``num_pixels``, ``bbox``, ``centroid``,
        ``centroid_weighted``, ``intensity_mean``, ``intensity_min``, ``intensity_max``
        and ``intensity_std`` come from one pass over the blocks, merged exactly
        (integer sums; the intensity's variance merged as Chan et al.), and so do
        ``inertia_tensor``, ``inertia_tensor_eigvals``, ``axis_major_length`` and
        ``axis_minor_length`` (2-D and 3-D), ``eccentricity`` and ``orientation`` (2-D),
        and ``perimeter`` (2-D, isotropic spacing; equal to scikit-image's bit for bit,
        from counts of border codes read with a halo of 2),
        from exact integer sums of coordinates and their products (see
        :mod:`chunkflow.graph.labels.moments`: the central moments are rounded once,
        so they may differ from scikit-image's in the last bits), and ``moments``,
        ``moments_central``, ``moments_normalized``, ``moments_hu`` and their
        ``moments_weighted*`` variants (2-D and 3-D; Hu's 2-D with a spacing of 1),
        from raw moments about each object's box merged across blocks (see
        :mod:`chunkflow.graph.labels.rawmoments`: float64 sums of non-negative terms,
        rounded as scikit-image's own sums are, not identically). Any other name
        (``solidity``, ``coords``, ``slice``...) and any callable
        (``f(region_mask)`` or ``f(region_mask, intensity_crop)``, a column named by
        the function, as skimage's ``extra_properties``) are computed from each
        object's bounding-box crop in a second pass, by scikit-image (which measures
        only 2-D and 3-D images); an object whose crop does not fit ``max_memory`` is
        named in a :class:`~chunkflow.MemoryPlanError`.
    spacing : number or sequence of numbers, optional
        The voxel size along each axis, as skimage's ``spacing``.
    blocks : optional
        Blocks as whole chunks of ``labels``, as :func:`chunkflow.label`'s.
    max_memory : int or str, optional
        What one task may use (default: as :func:`chunkflow.map_chunks`).
    scheduler, progress
        See :func:`chunkflow.compute`.
    storage_options : dict, optional
        fsspec options for URLs.
    compute : bool
        Measure now (default), or return a ``dask.delayed`` table. Only for the
        one-pass properties: the others' second pass is planned from the first's
        result, so they are refused with ``compute=False``.

    Returns
    -------
    dict of str to numpy array
        One column per name (``bbox-0``, ... for several values), in the order of
        ``properties``, one row per label, ascending; ``pandas.DataFrame(table)`` takes
        it as is. The ``label`` column is ``int64`` as skimage's, or ``uint64`` when a
        label is 2**63 or more. A ``Delayed`` of it with ``compute=False``.
    """
    plan = plan_measure(labels, intensity, properties, spacing, blocks, max_memory, scheduler,
                        storage_options, compute)
    graph: dict[Any, Any] = {}
    parts = [_add(graph, (f"chunkflow-measure-{plan.token}", *index), partial_table, plan.grid,
                  plan.source, plan.image, plan.stats, index) for index in plan.grid.blocks()]
    root = _tree(graph, f"chunkflow-measuremerge-{plan.token}", parts, _merge)
    if not compute:
        return dask.delayed(_table)(Delayed(root, graph), plan.request, plan.source.ndim,
                                    plan.scale)
    (table,) = run(Delayed(root, graph), scheduler=scheduler, progress=progress)
    return finish_table(plan, table, max_memory, scheduler, progress)


@dataclass(frozen=True)
class MeasurePlan:
    """What :func:`measure` computes and how: the sources, the parsed properties, the
    statistics blocks keep, and the blocks."""

    source: Source
    image: Source | None
    scale: np.ndarray | None
    request: PropertyRequest
    stats: set[str]
    grid: BlockGrid
    token: str


def plan_measure(labels: Any, intensity: Any, properties: Sequence[Any], spacing: Any,
                 blocks: Any, max_memory: int | str | None, scheduler: SchedulerLike,
                 storage_options: Mapping[str, Any] | None, compute: bool = True) -> MeasurePlan:
    """Open and check the sources and properties, and plan the first pass's blocks."""
    source = open_source(labels, storage_options, "measure", check=check_label_dtype)
    image = None if intensity is None else open_intensity(intensity, source, storage_options)
    scale = normalize_spacing(spacing, source.ndim)
    request = parse_properties(list(properties), image is not None,
                               partial_names(source.ndim, scale))
    partial, whole, functions = request.partial, request.whole, request.functions
    if not compute and (whole or functions):
        later = whole + [getattr(f, "__name__", repr(f)) for f in functions]
        raise InvalidArgumentError(
            f"measure: compute=False with properties {later}, which a second pass measures "
            "on crops planned from the first pass's result; pass compute=True, or only "
            f"the one-pass properties ({', '.join(sorted(partial_names(source.ndim, scale)))})")
    stats = needed_stats(partial + (["bbox"] if whole or functions else []), image is not None)
    reads = [(source.dtype.itemsize, source.chunks)]
    if image is not None:
        reads.append((image.dtype.itemsize, image.chunks))
    # The blocks as read, each voxel's index among the block's labels, and two float64
    # temporaries (the weights of one bincount); for the second moments, the voxels'
    # float64 coordinates; for the raw moments, the objects' voxels' rows, coordinates
    # and their powers; for the perimeter, the labels with their halo and a few byte
    # masks (border, codes).
    ndim = source.ndim
    per_voxel = sum(itemsize for itemsize, _ in reads) + 8 + 16
    per_voxel += (8 * ndim if "inertia" in stats else 0) + \
        (8 * (6 * ndim + 4) if stats & {"raw", "wraw"} else 0) + \
        (source.dtype.itemsize + 6 if "codes" in stats else 0)
    block = plan_blocks(_template(source), per_voxel, reads, blocks, max_memory, scheduler,
                        what="measure", voxels=MEASURE_BLOCK_VOXELS)
    grid = BlockGrid(source.shape, tuple(max(1, b) for b in block))
    token = tokenize("measure", _identity(source), _identity(image), sorted(stats), grid)
    return MeasurePlan(source, image, scale, request, stats, grid, token)


def finish_table(plan: MeasurePlan, table: dict[str, np.ndarray],
                 max_memory: int | str | None, scheduler: SchedulerLike,
                 progress: ProgressArg) -> dict[str, np.ndarray]:
    """The ordered columns of the merged first-pass ``table`` (of all the objects or
    of some), with the crop pass's columns measured for its objects."""
    request, source, image = plan.request, plan.source, plan.image
    whole, functions = request.whole, request.functions
    found = _columns(table, request.partial, source.ndim, plan.scale)
    crops: dict[str, np.ndarray] = {}
    if (whole or functions) and not len(table["label"]):
        crops = empty_crop_columns(source.ndim, None if image is None else image.dtype,
                                   whole, functions, plan.scale)
    elif whole or functions:
        limit = (default_max_memory(scheduler)[0] if max_memory is None
                 else byte_count("measure: max_memory", max_memory))
        job = CropJob(plan.grid, source, image, tuple(whole), tuple(functions), plan.scale)
        crops = _crop_pass(job, table, limit, scheduler, progress)
    return _ordered(request, found, crops)


def _columns(table: dict[str, np.ndarray], partial: list[str], ndim: int,
             spacing: np.ndarray | None) -> dict[str, np.ndarray]:
    """The one-pass columns of the merged ``table`` (empty columns for no object)."""
    return (columns(table, partial, ndim, spacing) if len(table["label"])
            else empty_like_columns(partial, ndim))


def _table(table: dict[str, np.ndarray], request: PropertyRequest, ndim: int,
           spacing: np.ndarray | None) -> dict[str, np.ndarray]:
    """The last task of a deferred measure: the ordered one-pass table."""
    return _ordered(request, _columns(table, request.partial, ndim, spacing), {})


def _identity(source: Source | None) -> Any:
    return None if source is None else source.token


def _crop_pass(job: CropJob, table: dict[str, np.ndarray], limit: int,
               scheduler: SchedulerLike, progress: ProgressArg) -> dict[str, np.ndarray]:
    labels, intensity = job.labels, job.intensity
    itemsizes = (labels.dtype.itemsize, intensity.dtype.itemsize if intensity else 0)
    plan = plan_crops(job.grid, table["label"], table["bbox_min"], table["bbox_max"],
                      itemsizes, limit)
    token = tokenize("measure-crops", _identity(labels), _identity(intensity), job.names,
                     [getattr(f, "__name__", repr(f)) for f in job.functions], job.grid,
                     job.spacing, table["label"][:16].tolist(), len(table["label"]))
    graph: dict[Any, Any] = {f"chunkflow-cropjob-{token}": job}
    parts = [_add(graph, (f"chunkflow-measure-crops-{token}", *index), _crops,
                  f"chunkflow-cropjob-{token}", index, *plan[index]) for index in sorted(plan)]
    root = _add(graph, f"chunkflow-measuremerge-crops-{token}", _gather, *parts)
    (found,) = run(Delayed(root, graph), scheduler=scheduler, progress=progress)
    found.pop("label", None)
    return found


def _ordered(request: PropertyRequest, partial: dict[str, np.ndarray],
             crops: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    """The columns in the order of the properties, each named as asked (as
    ``regionprops_table`` gives them)."""
    ordered: dict[str, np.ndarray] = {}
    for name, what in request.entries:
        if callable(what):
            group = column_group(crops, getattr(what, "__name__", repr(what)))
        else:
            group = rename(partial if what in request.partial else crops, what, name)
        for key, column in group.items():
            ordered.setdefault(key, column)
    return ordered
