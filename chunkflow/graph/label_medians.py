"""The values at given ranks within each label's values, exactly, by radix selection.

Each value is an order-preserving unsigned key (NaN above every number, as sorting
puts it; :func:`chunkflow.graph.reductions.order_keys.to_keys`). A pass over the blocks
counts, for every wanted (group, rank), the next 8 bits of the keys of that group whose
earlier bits match what the passes before chose; the counts say which digit holds the
rank. ``itemsize`` passes find every key: never more than one block and the table of
counts (nonzero ones only) in memory.

Examples
--------
>>> import numpy as np
>>> import chunkflow
>>> from chunkflow.graph.label_statistics import Groups
>>> values = chunkflow.array(np.array([5.0, 1, np.nan, 3, 2, 8]), chunks=2)
>>> labels = chunkflow.array(np.array([1, 1, 1, 2, 2, 2]), chunks=3)
>>> values_at_ranks(values, labels, Groups("labels"), np.array([1, 2]), [[0, 1], [1, 1]]).tolist()
[[1.0, 5.0], [3.0, 3.0]]
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

import dask
import numpy as np

from chunkflow.core.array import Array
from chunkflow.graph.label_statistics import Groups
from chunkflow.graph.read import to_dask
from chunkflow.graph.reductions.order_keys import from_keys, to_keys
from chunkflow.graph.scheduler import compute

if TYPE_CHECKING:
    from chunkflow.graph.scheduler import ProgressArg, SchedulerLike

__all__ = ["sort_keys", "values_at_ranks"]

DIGIT = 8


def sort_keys(values: np.ndarray) -> np.ndarray:
    """Unsigned keys in numpy's sort order: every NaN last, above ``+inf``, its sign
    cleared but its payload kept (scipy's median of a NaN is the data's NaN)."""
    if values.dtype.kind == "f":
        values = np.where(values != values, np.abs(values), values)
    return to_keys(values)


def _group_keys(values: np.ndarray, labels: np.ndarray | None, groups: Groups,
                row_keys: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The block's sort keys (uint64) of the wanted groups' voxels and each one's row:
    the position of its label in ``row_keys`` (``"labels"`` groups), else 0."""
    keys = sort_keys(values.ravel()).astype(np.uint64)
    if groups.kind == "labels":
        assert labels is not None
        flat = labels.ravel()
        order = np.argsort(row_keys, kind="stable")
        ranked = row_keys[order]
        at = np.minimum(np.searchsorted(ranked, flat), len(ranked) - 1)
        hit = ranked[at] == flat
        return keys[hit], order[at[hit]]
    if labels is not None and groups.kind != "all":
        flat = labels.ravel()
        keys = keys[flat > 0 if groups.kind == "positive" else flat == groups.value]
    return keys, np.zeros(keys.size, np.int64)


def _digit_counts(values: np.ndarray, labels: np.ndarray | None, groups: Groups,
                  row_keys: np.ndarray, width: int, prefixes: np.ndarray,
                  level: int) -> np.ndarray:
    """Counts of (target, next digit) for the keys of each target's group matching its
    prefix: pairs ``target * 256 + digit`` and their counts, as two columns. Target
    ``row * width + j`` is rank ``j`` of the group of ``row_keys[row]``; every voxel is
    matched to its targets at once (no loop over the groups)."""
    if len(row_keys) == 0 or width == 0:
        return np.zeros((0, 2), np.int64)
    keys, rows = _group_keys(values, labels, groups, row_keys)
    bits = 8 * values.dtype.itemsize
    digits = ((keys >> np.uint64(bits - level - DIGIT)) & np.uint64(255)).astype(np.int64)
    high = keys >> np.uint64(bits - level) if level else None
    found = []
    for j in range(width):
        targets = rows * width + j
        if high is None:
            found.append(targets * 256 + digits)
        else:
            match = high == prefixes[targets]
            found.append(targets[match] * 256 + digits[match])
    pairs, counts = np.unique(np.concatenate(found), return_counts=True)
    return np.stack([pairs, counts], axis=1).astype(np.int64)


def _merge(*parts: np.ndarray) -> np.ndarray:
    stacked = np.concatenate(parts)
    pairs, where = np.unique(stacked[:, 0], return_inverse=True)
    return np.stack([pairs, np.bincount(where.ravel(), weights=stacked[:, 1]).astype(np.int64)],
                    axis=1)


def values_at_ranks(values: Array, labels: Array | None, groups: Groups, keys: np.ndarray,
                    ranks: Sequence[Sequence[int]], *, scheduler: SchedulerLike = None,
                    progress: ProgressArg = False) -> np.ndarray:
    """For each group (its label value in ``keys``; one group but for ``"labels"``
    groups) the values at its ``ranks`` (0-based, NaN last, each below the group's
    count), shape ``(len(keys), len(ranks[0]))``."""
    width = len(ranks[0]) if len(ranks) else 0
    row_keys = np.asarray(keys)
    target_rows = np.repeat(row_keys, width)
    remaining = np.asarray(ranks, np.int64).ravel()
    prefixes = np.zeros(len(target_rows), np.uint64)
    base = to_dask(values)
    blocks = base.to_delayed().ravel()
    label_blocks = (to_dask(labels).rechunk(base.chunks).to_delayed().ravel()
                    if labels is not None else [None] * len(blocks))
    bits = 8 * values.dtype.itemsize
    for level in range(0, bits, DIGIT):
        parts = [dask.delayed(_digit_counts)(v, lab, groups, row_keys, width, prefixes, level)
                 for v, lab in zip(blocks, label_blocks)]
        while len(parts) > 1:
            parts = [dask.delayed(_merge)(*parts[i:i + 8]) for i in range(0, len(parts), 8)]
        (table,) = compute(parts[0], scheduler=scheduler, progress=progress)
        counts = np.zeros((len(target_rows), 256), np.int64)
        counts.reshape(-1)[table[:, 0]] = table[:, 1]
        cumulative = np.cumsum(counts, axis=1)
        digit = np.argmax(cumulative > remaining[:, None], axis=1)
        before = np.where(digit > 0, cumulative[np.arange(len(digit)), digit - 1], 0)
        remaining = remaining - before
        prefixes = (prefixes << np.uint64(DIGIT)) | digit.astype(np.uint64)
    unsigned = np.dtype(f"u{values.dtype.itemsize}")
    found = from_keys(prefixes.astype(unsigned), values.dtype.newbyteorder("="))
    return found.reshape(len(keys), width)
