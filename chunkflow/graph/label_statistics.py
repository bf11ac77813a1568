"""Statistics of an image's values per label, from partial tables merged over blocks.

A block gives, for each group of voxels in it (every label value, or one group: all
voxels, the positive labels, or one label value), the statistics asked for:

- ``count`` and ``sum`` (float64 as ``numpy.bincount`` sums weights, or ``sum_dtype``
  for one group, as ``numpy.sum`` sums), ``centered`` (the sum of squared deviations
  from given means: a second pass, as scipy computes variances);
- ``min`` and ``max`` with the flat position of their first voxel (C order) among
  ties: ``min`` passes NaN over unless every value is NaN and ``max`` is NaN if any
  value is (as ``scipy.ndimage``'s sorted selection of many labels gives them), or,
  with ``nan_propagates``, both are NaN if any value is (as ``numpy.min`` of one group);
- ``bbox`` (per axis the first and last coordinate), ``weighted`` (per axis the sum
  of value times coordinate, float64), ``histogram`` (counts over given edges).

Partial tables merge by concatenation and one more selection, so the tree of merges
gives what one table over the whole array gives; sums are rounded in another order
than scipy's (compare floats to a rounding; integers are exact).

Examples
--------
>>> import numpy as np
>>> import chunkflow
>>> labels = chunkflow.array(np.array([[1, 1, 0], [2, 0, 2]]), chunks=(1, 2))
>>> image = chunkflow.array(np.array([[5., 3, 9], [1, 7, 4]]), chunks=(2, 1))
>>> t = label_table(image, labels, Groups("labels"), {"count", "sum", "min"})
>>> t["key"].tolist(), t["count"].tolist(), t["sum"].tolist(), t["min"].tolist()
([0, 1, 2], [2, 2, 2], [16.0, 8.0, 5.0], [7.0, 3.0, 1.0])
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import dask
import numpy as np
from scipy import ndimage

from chunkflow.core.array import Array
from chunkflow.graph.read import to_dask
from chunkflow.graph.scheduler import compute

if TYPE_CHECKING:
    from chunkflow.graph.scheduler import ProgressArg, SchedulerLike

__all__ = ["Groups", "label_table"]

Table = dict[str, np.ndarray]


@dataclass(frozen=True)
class Groups:
    """How voxels form groups: ``"all"`` (one group), ``"positive"`` (one: label > 0),
    ``"equal"`` (one: label == ``value``) or ``"labels"`` (one per label value)."""

    kind: str
    value: Any = None
    edges: np.ndarray | None = field(default=None, compare=False)
    means: np.ndarray | None = field(default=None, compare=False)
    sum_dtype: Any = None  # numpy.sum's dtype, for one group
    nan_propagates: bool = False


def _keys_and_slots(labels: np.ndarray | None, groups: Groups,
                    size: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The group keys present, the voxels taken (a mask) and each one's group slot."""
    if groups.kind == "labels":
        assert labels is not None
        keys, slots = _dense_unique(labels.ravel())
        return keys, np.ones(size, bool), slots
    if groups.kind == "all" or labels is None:
        taken = np.ones(size, bool)
    elif groups.kind == "positive":
        taken = labels.ravel() > 0
    else:
        taken = labels.ravel() == groups.value
    return np.zeros(1, np.int8), taken, np.zeros(int(taken.sum()), np.intp)


def _dense_unique(flat: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``numpy.unique(flat, return_inverse=True)``; integers spanning at most 4 times
    as many values as there are voxels by counting (no sort)."""
    if flat.dtype.kind in "iu" and flat.size:
        low, high = int(flat.min()), int(flat.max())
        if high - low < 4 * flat.size + 256:
            shifted = (flat - flat.dtype.type(low)).astype(np.intp) if flat.dtype.kind == "u" \
                else (flat.astype(np.int64) - low).astype(np.intp)
            present = np.bincount(shifted, minlength=high - low + 1) > 0
            slot_of = np.cumsum(present) - 1
            # in the labels' dtype: wrapping arithmetic gives back each value exactly
            native = flat.dtype.newbyteorder("=")
            keys = (np.flatnonzero(present).astype(native) + flat.min().astype(native)
                    ).astype(flat.dtype)
            return keys, slot_of[shifted].astype(np.intp)
    keys, slots = np.unique(flat, return_inverse=True)
    return keys, slots.ravel()


def _first_of_each(slots: np.ndarray, order: np.ndarray) -> np.ndarray:
    """The position in ``order`` of the first element of each slot's run."""
    ranked = slots[order]
    starts = np.flatnonzero(np.r_[True, ranked[1:] != ranked[:-1]]) if ranked.size else ranked
    return order[starts]


def _select(values: np.ndarray, positions: np.ndarray, slots: np.ndarray, rows: int,
            largest: bool, propagate: bool) -> tuple[np.ndarray, np.ndarray]:
    """Per slot the extreme value and the first position holding it (see the module)."""
    nan = values != values  # NaN (and complex NaN)
    ranks = _ranks(np.where(nan, np.zeros((), values.dtype), values))
    nan_first = largest or propagate
    keys = (positions, -ranks if largest else ranks, ~nan if nan_first else nan, slots)
    chosen = _first_of_each(slots, np.lexsort(keys))
    result = np.zeros(rows, values.dtype)
    where = np.full(rows, -1, np.int64)
    result[slots[chosen]] = values[chosen]
    where[slots[chosen]] = positions[chosen]
    return result, where


def _ranks(values: np.ndarray) -> np.ndarray:
    """Dense ranks of ``values`` (equal values, ``-0.0`` and ``0.0`` too, share one)."""
    if values.size == 0:
        return np.zeros(0, np.int64)
    return np.unique(values, return_inverse=True)[1].ravel().astype(np.int64)


def block_table(values: np.ndarray | None, labels: np.ndarray | None, start: Sequence[int],
                shape: Sequence[int], groups: Groups, stats: frozenset[str]) -> Table:
    """The partial table of one block starting at ``start`` of an array of ``shape``."""
    block_shape = (values if values is not None else labels).shape  # type: ignore[union-attr]  # one of the two is given
    size = math.prod(block_shape)
    keys, taken, slots = _keys_and_slots(labels, groups, size)
    rows = len(keys)
    table: Table = {"key": keys, "count": np.bincount(slots, minlength=rows)}
    coords = np.indices(block_shape).reshape(len(block_shape), -1)[:, taken] + np.reshape(
        np.asarray(start, np.int64), (-1, 1)) if {"weighted", "min", "max"} & stats else None
    vals = values.ravel()[taken] if values is not None else None
    if "sum" in stats and vals is not None:
        table["sum"] = (np.bincount(slots, weights=vals, minlength=rows)
                        if groups.kind == "labels"
                        else np.asarray([vals.sum(dtype=groups.sum_dtype or _partial(vals.dtype))]))
    if "centered" in stats and vals is not None and groups.means is not None:
        means = groups.means
        if groups.kind == "labels":
            centered = vals - means[np.searchsorted(groups.value, keys)][slots]
            table["centered"] = np.bincount(slots, weights=(centered * centered.conjugate()).real,
                                            minlength=rows)
        else:
            centered = vals - means[0]
            table["centered"] = np.asarray([(centered * centered.conjugate()).sum()])
    if coords is not None:
        flat = np.ravel_multi_index(tuple(coords), tuple(shape)) if coords.size else \
            np.zeros(0, np.int64)
        for name, largest in (("min", False), ("max", True)):
            if name in stats and vals is not None:
                value, where = _select(vals, flat, slots, rows, largest,
                                       groups.nan_propagates)
                table[name], table[f"{name}_position"] = value, where
        if "weighted" in stats and vals is not None:
            table["weighted"] = np.stack(
                [_weighted_sum(vals * c.astype(float), slots, rows, groups) for c in coords],
                axis=-1).reshape(rows, len(shape))
    if "bbox" in stats:
        table["bbox_min"], table["bbox_max"] = _boxes(block_shape, taken, slots, rows, start)
    if "histogram" in stats and vals is not None and groups.edges is not None:
        table["histogram"] = _histogram(vals, slots, rows, groups.edges)
    return table


def _partial(dtype: np.dtype) -> Any:
    """The dtype a block's part of one group's sum is kept in: float32 for float16, as
    numpy's own pairwise sum accumulates float16 (a running total in float16 overflows
    to inf, and inf - inf is NaN, where numpy's sum is finite); numpy's otherwise."""
    return np.float32 if dtype == np.float16 else None


def _weighted_sum(weights: np.ndarray, slots: np.ndarray, rows: int, groups: Groups) -> np.ndarray:
    if groups.kind == "labels":
        return np.bincount(slots, weights=weights, minlength=rows)
    return np.asarray([weights.sum()])


def _boxes(block_shape: Sequence[int], taken: np.ndarray, slots: np.ndarray, rows: int,
           start: Sequence[int]) -> tuple[np.ndarray, np.ndarray]:
    """Per slot the first and last coordinate on each axis (an absent slot: int64's
    largest and -1), from scipy's find_objects over the block's slots (one C pass,
    where ``numpy.minimum.at`` on every voxel's coordinates was slow)."""
    ndim = len(block_shape)
    low = np.full((rows, ndim), np.iinfo(np.int64).max, np.int64)
    high = np.full((rows, ndim), -1, np.int64)
    if not slots.size:
        return low, high
    local = np.zeros(math.prod(block_shape), np.intp)
    local[taken] = slots + 1
    boxes = ndimage.find_objects(local.reshape(block_shape), max_label=rows)
    present = np.array([box is not None for box in boxes], bool)
    bounds = np.array([(part.start, part.stop) for box in boxes if box is not None
                       for part in box], np.int64).reshape(-1, ndim, 2)
    offset = np.asarray(start, np.int64)
    low[present] = bounds[:, :, 0] + offset
    high[present] = bounds[:, :, 1] - 1 + offset
    return low, high


def _histogram(values: np.ndarray, slots: np.ndarray, rows: int, edges: np.ndarray) -> np.ndarray:
    """Per slot, ``numpy.histogram(values, edges)[0]`` (the last bin closed)."""
    bins = len(edges) - 1
    keep = (values >= edges[0]) & (values <= edges[-1])
    index = np.searchsorted(edges, values[keep], side="right") - 1
    index[index == bins] = bins - 1
    flat = np.bincount(slots[keep] * bins + index, minlength=rows * bins)
    return flat.reshape(rows, bins)


def merge_tables(tables: Sequence[Table], groups: Groups) -> Table:
    """One table from partial ones: counts, sums, boxes and histograms added, extremes
    selected again."""
    keys = np.concatenate([t["key"] for t in tables])
    merged_keys, slots = np.unique(keys, return_inverse=True)
    slots = slots.ravel()
    rows = len(merged_keys)
    out: Table = {"key": merged_keys}
    for name in tables[0]:
        if name in ("key", "min_position", "max_position"):
            continue
        stacked = np.concatenate([t[name] for t in tables])
        if name in ("count", "sum", "centered", "weighted", "histogram"):
            total = np.zeros((rows, *stacked.shape[1:]), stacked.dtype)
            np.add.at(total, slots, stacked)
            out[name] = total
        elif name in ("bbox_min", "bbox_max"):
            ufunc = np.minimum if name == "bbox_min" else np.maximum
            total = np.full((rows, stacked.shape[1]), np.iinfo(np.int64).max
                            if name == "bbox_min" else -1, np.int64)
            ufunc.at(total, slots, stacked)
            out[name] = total
        else:  # min, max: present rows only (a count of 0 holds no value)
            positions = np.concatenate([t[f"{name}_position"] for t in tables])
            held = positions >= 0
            value, where = _select(stacked[held], positions[held], slots[held], rows,
                                   name == "max", groups.nan_propagates)
            out[name], out[f"{name}_position"] = value, where
    return out


def label_table(values: Array | None, labels: Array | None, groups: Groups,
                stats: set[str] | frozenset[str], *, scheduler: SchedulerLike = None,
                progress: ProgressArg = False, split_every: int = 8) -> Table:
    """The merged table of ``values`` (and ``labels``; either may be ``None``) by
    ``groups``: one task per block of the first array's chunks, merged as a tree."""
    first = values if values is not None else labels
    assert first is not None
    shape = first.shape
    base = to_dask(first)
    arrays = [to_dask(a).rechunk(base.chunks) if a is not None else None
              for a in (values, labels)]
    starts = [np.cumsum((0,) + c[:-1]) for c in base.chunks]
    wanted = frozenset(stats)
    delayed_values = arrays[0].to_delayed().ravel() if arrays[0] is not None else None
    delayed_labels = arrays[1].to_delayed().ravel() if arrays[1] is not None else None
    parts = []
    for i, index in enumerate(np.ndindex(*base.numblocks)):
        start = tuple(int(s[k]) for s, k in zip(starts, index))
        parts.append(dask.delayed(block_table)(
            delayed_values[i] if delayed_values is not None else None,
            delayed_labels[i] if delayed_labels is not None else None,
            start, shape, groups, wanted))
    if not parts:
        return block_table(np.zeros(shape, values.dtype) if values is not None else None,
                           np.zeros(shape, labels.dtype) if labels is not None else None,
                           (0,) * len(shape), shape, groups, wanted)
    while len(parts) > 1:
        parts = [dask.delayed(merge_tables)(parts[i:i + split_every], groups)
                 for i in range(0, len(parts), split_every)]
    (table,) = compute(parts[0], scheduler=scheduler, progress=progress)
    return dict(table)
