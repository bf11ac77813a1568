"""Object tables from partial results: what one block tells of each label in it, how
two blocks' partial tables merge exactly, and the columns of
``skimage.measure.regionprops_table`` they give.

A partial table holds, per label present in a block: its voxel count, bounding box,
coordinate sums (integers: exact), and with an intensity image the intensity sum,
minimum and maximum, the intensity-weighted coordinate sums, and the intensity's mean
and sum of squared deviations (``M2``), which merge as Chan et al.'s parallel
variance::

    n = n_a + n_b;  delta = mean_b - mean_a
    mean = mean_a + delta * n_b / n;  M2 = M2_a + M2_b + delta**2 * n_a * n_b / n

Only the statistics the asked properties need are kept.

Examples
--------
>>> import numpy as np
>>> labels = np.array([[1, 1, 0], [0, 2, 2]])
>>> part = block_table(labels, None, (10, 0), {"count", "bbox", "coords"})
>>> part["label"].tolist(), part["count"].tolist(), part["bbox_min"].tolist()
([1, 2], [2, 2], [[10, 0], [11, 1]])
>>> columns(merge_tables([part, part]), ["label", "area", "centroid"], 2)["centroid-1"]
array([0.5, 1.5])
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence

import numpy as np

from chunkflow.errors import LabelError
from chunkflow.graph.labels.moments import (
    MOMENT_PROPERTIES,
    block_sums,
    inertia_columns,
    merge_sums,
    moment_names,
)
from chunkflow.graph.labels.perimeter import code_counts, perimeters
from chunkflow.graph.labels.rawmoments import (
    RAW_MOMENT_PROPERTIES,
    block_moments,
    merge_moments,
    moment_columns,
    raw_moment_names,
)

__all__ = ["PARTIAL_PROPERTIES", "block_table", "columns", "compact_labels", "empty_like_columns",
           "label_column", "merge_tables", "needed_stats", "partial_names", "slots_of"]

#: Properties computed from partial results (one pass over the blocks); each with
#: the statistics it needs.
PARTIAL_PROPERTIES: dict[str, set[str]] = {
    "label": set(),
    "area": {"count"},
    "num_pixels": {"count"},
    "bbox": {"bbox"},
    "centroid": {"coords"},
    "centroid_weighted": {"weighted"},
    "intensity_mean": {"sum"},
    "intensity_min": {"min"},
    "intensity_max": {"max"},
    "intensity_std": {"moments"},
    # Second-order moments (chunkflow.graph.labels.moments), in the image dimensions
    # scikit-image computes them in (partial_names).
    **{name: {"inertia"} for name in MOMENT_PROPERTIES},
    # From counts of border codes (chunkflow.graph.labels.perimeter): 2-D, isotropic.
    "perimeter": {"codes"},
    # Raw moments about each box's corner (chunkflow.graph.labels.rawmoments).
    **{name: {"bbox", stat} for name, stat in RAW_MOMENT_PROPERTIES.items()},
}
# Voxels per label above which scipy's find_objects finds the boxes faster than
# ufunc.at over the edges (measured: ~5 us per label against ~0.1 us per voxel).
_FIND_OBJECTS_VOXELS = 50
_INTENSITY = {"weighted", "sum", "min", "max", "moments", "wraw"}
Table = dict[str, np.ndarray]


def partial_names(ndim: int, spacing: np.ndarray | None = None) -> list[str]:
    """The properties computed in the one pass for an image of ``ndim`` dimensions
    and this ``spacing``; scikit-image refuses the others there (its crops raise as it
    does)."""
    skip = set(MOMENT_PROPERTIES) - set(moment_names(ndim))
    skip |= set(RAW_MOMENT_PROPERTIES) - set(raw_moment_names(ndim, spacing))
    if ndim != 2 or (spacing is not None and len(np.unique(spacing)) != 1):
        skip.add("perimeter")
    return [name for name in PARTIAL_PROPERTIES if name not in skip]


def needed_stats(properties: Iterable[str], has_intensity: bool) -> set[str]:
    """The statistics a block must keep for ``properties`` (always the count: merges
    weigh by it)."""
    stats = {"count"}
    for name in properties:
        stats |= PARTIAL_PROPERTIES.get(name, set())
    if "weighted" in stats:
        stats.add("sum")
    if not has_intensity and stats & _INTENSITY:
        wanting = sorted(p for p in properties if PARTIAL_PROPERTIES.get(p, set()) & _INTENSITY)
        raise LabelError(f"measure: {', '.join(wanting)} need an intensity image "
                         "(intensity=)")
    return stats


def _background_negatives(flat: np.ndarray, what: str, negatives: bool) -> np.ndarray:
    """``flat`` with negative labels set to 0 (``negatives``: as skimage, whose
    ``find_objects`` skips labels below 1), or refused."""
    if flat.dtype.kind == "b":
        return flat.view(np.uint8)
    if flat.dtype.kind != "i" or flat.size == 0:
        return flat
    low = int(flat.min())
    if low >= 0:
        return flat
    if not negatives:
        raise LabelError(f"{what}: labels must be non-negative integers, found {low}")
    return np.where(flat < 0, flat.dtype.type(0), flat)


def _offsets_from(flat: np.ndarray, low: int) -> np.ndarray:
    """``flat - low`` as ``intp`` (every value is at least ``low`` and at most ``low``
    plus the voxel count), subtracted in ``flat``'s own type: no value wraps."""
    shifted = flat - flat.dtype.type(low) if low else flat
    return shifted.astype(np.intp, copy=False)


def compact_labels(labels: np.ndarray, what: str = "measure",
                   negatives: bool = False) -> tuple[np.ndarray, np.ndarray]:
    """(labels present but 0, ascending, as ``uint64``; each voxel's index among them
    + 1, 0 for 0). Negative labels are background with ``negatives``, else refused.

    Examples
    --------
    >>> present, index = compact_labels(np.array([[0, 9, 9], [4, 0, 9]]))
    >>> present.tolist(), index.tolist()
    ([4, 9], [[0, 2, 2], [1, 0, 2]])
    >>> compact_labels(np.array([2**64 - 1, 0, 2**63], np.uint64))[0].tolist()
    [9223372036854775808, 18446744073709551615]
    """
    flat = _background_negatives(labels.reshape(-1), what, negatives)
    if flat.size == 0:
        return np.zeros(0, np.uint64), np.zeros(labels.shape, np.int64)
    low, high = int(flat.min()), int(flat.max())
    if high - low <= 4 * flat.size:  # a bincount over the range is cheaper than a sort
        offsets = _offsets_from(flat, low)
        present = np.flatnonzero(np.bincount(offsets, minlength=high - low + 1))
        lookup = np.zeros(high - low + 1, np.int64)
        values = present.astype(np.uint64) + np.uint64(low)
        keep = values != 0
        lookup[present[keep]] = np.arange(1, int(keep.sum()) + 1)
        return values[keep], lookup[offsets].reshape(labels.shape)
    present, inverse = np.unique(flat, return_inverse=True)
    offset = 1 if present[0] != 0 else 0
    found = present[1 - offset:] if offset == 0 else present
    return found.astype(np.uint64), (inverse + offset).reshape(labels.shape)


def _axis_values(shape: tuple[int, ...], axis: int, start: int,
                 dtype: type = np.int64) -> np.ndarray:
    """Each voxel's coordinate along ``axis`` (plus ``start``), in C order, flat."""
    view = [1] * len(shape)
    view[axis] = shape[axis]
    return np.broadcast_to(np.arange(start, start + shape[axis], dtype=dtype).reshape(view),
                           shape).reshape(-1)


def slots_of(labels: np.ndarray, what: str = "measure") -> tuple[np.ndarray, np.ndarray,
                                                                np.ndarray]:
    """(labels present but 0, ascending, as ``uint64``; each voxel's slot, flat; each
    present label's slot). Slots are ``label - min`` where the labels span no more
    values than voxels (one pass, no lookup), else from a sort. Negative labels are
    background, as in ``skimage.measure.regionprops``.

    Examples
    --------
    >>> present, slots, chosen = slots_of(np.array([[0, 5, 5], [4, 0, 5]]))
    >>> present.tolist(), slots.tolist(), chosen.tolist()
    ([4, 5], [0, 5, 5, 4, 0, 5], [4, 5])
    >>> present, slots, chosen = slots_of(np.array([[0, 90, 90], [4, -7, 90]]))  # sparse
    >>> present.tolist(), slots.tolist(), chosen.tolist()
    ([4, 90], [0, 2, 2, 1, 0, 2], [1, 2])
    """
    flat = _background_negatives(labels.reshape(-1), what, negatives=True)
    if flat.size == 0:
        return np.zeros(0, np.uint64), np.zeros(0, np.intp), np.zeros(0, np.intp)
    low, high = int(flat.min()), int(flat.max())
    if high - low < flat.size:
        slots = _offsets_from(flat, low)
        chosen = np.flatnonzero(np.bincount(slots, minlength=high - low + 1))
        present = chosen.astype(np.uint64) + np.uint64(low)
        keep = present != 0
        return present[keep], slots, chosen[keep]
    present, index = compact_labels(flat, what, negatives=True)
    return present, index.astype(np.intp, copy=False), \
        np.arange(1, len(present) + 1, dtype=np.intp)


def _edges(slots: np.ndarray, axis: int, last: bool) -> np.ndarray:
    """The flat indices of the voxels whose neighbour before (``last``: after) along
    ``axis`` is in another slot or outside: the only voxels where a slot's least
    (greatest) coordinate along ``axis`` can be."""
    edge = np.ones(slots.shape, bool)
    ahead = [slice(None)] * slots.ndim
    behind = [slice(None)] * slots.ndim
    ahead[axis], behind[axis] = slice(1, None), slice(None, -1)
    inner = tuple(behind if last else ahead)
    edge[inner] = slots[tuple(ahead)] != slots[tuple(behind)]
    return np.flatnonzero(edge)


def _boxes(slots: np.ndarray, chosen: np.ndarray, size: int,
           start: Sequence[int]) -> tuple[np.ndarray, np.ndarray]:
    """Per chosen slot, its least and one past its greatest coordinate along each
    axis (plus ``start``): from scipy's find_objects for few labels (a fast scan, but
    a tuple of slices per label: about 5 us each), else a minimum and a maximum
    (ufunc.at) over the edge voxels only."""
    ndim, flat = slots.ndim, slots.reshape(-1)
    if len(chosen) * _FIND_OBJECTS_VOXELS < flat.size:
        # Imported here, not at the top: scipy.ndimage takes ~35 ms to import, which
        # every user of chunkflow.graph (to_dask, map_chunks) would pay.
        from scipy import ndimage

        boxes = ndimage.find_objects(slots + 1, max_label=size)
        picked = [boxes[i] for i in chosen]
        low = np.array([[s.start for s in box] for box in picked], np.int64)
        high = np.array([[s.stop for s in box] for box in picked], np.int64)
        offset = np.asarray(start, np.int64)
        return (low.reshape(-1, ndim) + offset, high.reshape(-1, ndim) + offset)
    low = np.empty((len(chosen), ndim), np.int64)
    high = np.empty((len(chosen), ndim), np.int64)
    for axis in range(ndim):
        for last, fill, ufunc, out in ((False, slots.shape[axis], np.minimum, low),
                                       (True, -1, np.maximum, high)):
            where = _edges(slots, axis, last)
            along = np.unravel_index(where, slots.shape)[axis] if ndim > 1 else where
            extreme = np.full(size, fill, np.int64)
            ufunc.at(extreme, flat[where], along)
            out[:, axis] = extreme[chosen] + start[axis] + (1 if last else 0)
    return low, high


def block_table(labels: np.ndarray, intensity: np.ndarray | None, start: Sequence[int],
                stats: set[str], padded: np.ndarray | None = None) -> Table:
    """The partial table of one block (``start``: its corner in the array; ``padded``:
    its labels with the perimeter's halo, for ``codes``)."""
    present, flat, chosen = slots_of(labels)
    k = len(present)
    size = int(flat.max()) + 1 if flat.size else 1

    def per_label(weights: np.ndarray | None = None) -> np.ndarray:
        return np.bincount(flat, weights=weights, minlength=size)[chosen]

    table: Table = {"label": present, "count": per_label()}
    if "bbox" in stats:
        table["bbox_min"], table["bbox_max"] = _boxes(flat.reshape(labels.shape), chosen,
                                                      size, start)
    if "coords" in stats:
        # Sums of the coordinates in the block (float64 weights, as bincount takes
        # them: exact, being integers below 2**53), then moved by the block's corner.
        local = np.stack([per_label(_axis_values(labels.shape, a, 0, np.float64))
                          for a in range(labels.ndim)], axis=-1).reshape(k, labels.ndim)
        table["coords"] = local.round().astype(np.int64) + \
            table["count"][:, None] * np.asarray(start, np.int64)
    if "inertia" in stats:
        table.update(block_sums(flat, labels.shape, chosen, size, start))
    if "raw" in stats:
        low = table["bbox_min"] - np.asarray(start, np.int64)
        table["raw"] = block_moments(flat, labels.shape, chosen, size, low)
    if "codes" in stats:
        assert padded is not None, "the perimeter's codes need the block's halo"
        table["codes"] = code_counts(padded, flat, chosen, size)
    if intensity is None:
        return table
    values = intensity.reshape(-1).astype(np.float64, copy=False)
    total = np.bincount(flat, weights=values, minlength=size)
    if "sum" in stats:
        table["sum"] = total[chosen]
    if "weighted" in stats:
        table["weighted"] = np.stack(
            [per_label(values * _axis_values(labels.shape, a, start[a]))
             for a in range(labels.ndim)], axis=-1).reshape(k, labels.ndim)
    for name, ufunc, fill in (("min", np.minimum, np.inf), ("max", np.maximum, -np.inf)):
        if name in stats:
            extreme = np.full(size, fill)
            ufunc.at(extreme, flat, values)
            table[name] = extreme[chosen]
    if "wraw" in stats:
        low = table["bbox_min"] - np.asarray(start, np.int64)
        table["wraw"] = block_moments(flat, labels.shape, chosen, size, low, values)
    if "moments" in stats:
        mean = total / np.maximum(np.bincount(flat, minlength=size), 1)
        table["mean"] = mean[chosen]
        table["m2"] = per_label((values - mean[flat]) ** 2)
    return table


def merge_tables(tables: Sequence[Table]) -> Table:
    """One table from partial tables of the same statistics (labels in several merge)."""
    present = [t for t in tables if len(t["label"])]
    if not present:
        return dict(tables[0])
    joined = {name: np.concatenate([t[name] for t in present]) for name in present[0]}
    order = np.argsort(joined["label"], kind="stable")
    joined = {name: value[order] for name, value in joined.items()}
    labels, starts = np.unique(joined["label"], return_index=True)
    if len(labels) == len(joined["label"]):
        return joined
    merged: Table = {"label": labels}
    for name in ("count", "coords", "sum", "weighted", "codes"):
        if name in joined:
            merged[name] = np.add.reduceat(joined[name], starts, axis=0)
    for name, ufunc in (("bbox_min", np.minimum), ("min", np.minimum),
                        ("bbox_max", np.maximum), ("max", np.maximum)):
        if name in joined:
            merged[name] = ufunc.reduceat(joined[name], starts, axis=0)
    if "s2" in joined:
        merged.update(merge_sums(joined, starts))
    for name in ("raw", "wraw"):
        if name in joined:
            group = np.repeat(np.arange(len(labels)), np.diff(np.append(starts, len(order))))
            merged[name] = merge_moments(joined[name], joined["bbox_min"], merged["bbox_min"],
                                         group, starts)
    if "mean" in joined:
        # Chan et al., for any number of parts: the pooled mean, and each part's M2
        # plus its count times its mean's squared distance from the pooled mean.
        counts = joined["count"].astype(np.float64)
        total = np.add.reduceat(counts, starts)
        pooled = np.add.reduceat(counts * joined["mean"], starts) / total
        group = np.repeat(np.arange(len(labels)), np.diff(np.append(starts, len(counts))))
        spread = joined["m2"] + counts * (joined["mean"] - pooled[group]) ** 2
        merged["mean"] = pooled
        merged["m2"] = np.add.reduceat(spread, starts)
    return merged


def _split(name: str, values: np.ndarray) -> dict[str, np.ndarray]:
    return {f"{name}-{a}": values[:, a] for a in range(values.shape[1])}


def label_column(labels: np.ndarray) -> np.ndarray:
    """The ``label`` column: ``int64`` as skimage gives it, ``uint64`` where a label
    is past ``int64``'s range (a ``uint64`` label image's labels of 2**63 or more).

    Examples
    --------
    >>> label_column(np.array([1, 2], np.uint64)).dtype, label_column(np.array([2**63], np.uint64)).dtype
    (dtype('int64'), dtype('uint64'))
    """
    values = np.asarray(labels)
    if values.dtype == np.uint64 and len(values) and int(values.max()) > np.iinfo(np.int64).max:
        return values
    return values.astype(np.int64)


def columns(table: Mapping[str, np.ndarray], properties: Sequence[str], ndim: int,
            spacing: np.ndarray | None = None) -> Table:
    """The ``regionprops_table`` columns of ``properties`` (partial ones only), with
    the voxel ``spacing`` (default: 1 along every axis)."""
    count = table["count"]
    scale = np.ones(ndim) if spacing is None else np.asarray(spacing, np.float64)
    found: Table = {}
    for name in properties:
        if name == "label":
            found["label"] = label_column(table["label"])
        elif name == "area":
            found["area"] = count.astype(np.float64) * np.prod(scale)
        elif name == "num_pixels":
            found["num_pixels"] = count.astype(np.int64)
        elif name == "bbox":
            both = np.concatenate([table["bbox_min"], table["bbox_max"]], axis=1)
            found.update(_split("bbox", both.reshape(len(count), 2 * ndim)))
        elif name == "centroid":
            found.update(_split("centroid", table["coords"] / count[:, None] * scale))
        elif name == "centroid_weighted":
            found.update(_split("centroid_weighted",
                                table["weighted"] / table["sum"][:, None] * scale))
        elif name == "intensity_mean":
            found["intensity_mean"] = table["sum"] / count
        elif name == "intensity_min":
            found["intensity_min"] = table["min"].astype(np.float64)
        elif name == "intensity_max":
            found["intensity_max"] = table["max"].astype(np.float64)
        elif name == "intensity_std":
            found["intensity_std"] = np.sqrt(table["m2"] / count)
        elif name == "perimeter":
            found["perimeter"] = perimeters(table["codes"], spacing)
        elif name in MOMENT_PROPERTIES:
            found.update(inertia_columns(table, [name], ndim, spacing))
        elif name in RAW_MOMENT_PROPERTIES:
            found.update(moment_columns(table, [name], ndim, spacing))
    return found


def empty_like_columns(properties: Sequence[str], ndim: int) -> Table:
    """An empty table's columns (no labels anywhere)."""
    empty: Table = {"label": np.zeros(0, np.uint64), "count": np.zeros(0, np.int64),
                    "bbox_min": np.zeros((0, ndim), np.int64),
                    "bbox_max": np.zeros((0, ndim), np.int64),
                    "coords": np.zeros((0, ndim), np.int64), "sum": np.zeros(0),
                    "weighted": np.zeros((0, ndim)), "min": np.zeros(0), "max": np.zeros(0),
                    "mean": np.zeros(0), "m2": np.zeros(0), "origin": np.zeros((0, ndim), np.int64),
                    "s1": np.zeros((0, ndim), np.int64),
                    "s2": np.zeros((0, ndim * (ndim + 1) // 2), np.int64),
                    "codes": np.zeros((0, 50), np.int64), "raw": np.zeros((0, 4**ndim)),
                    "wraw": np.zeros((0, 4**ndim))}
    return columns(empty, properties, ndim)
