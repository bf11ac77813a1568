"""Properties that need the whole object (``perimeter``, ``eccentricity``,
``solidity``, a callable...), computed by ``skimage.measure.regionprops_table`` on each
object's bounding-box crop.

Once the first pass has found every object's bounding box, each object is assigned to
the block holding its first corner. A block task reads its block once for the objects
wholly inside it (the others' voxels are set to 0) and reads the crop of each object
that reaches past it on its own. A crop must fit the memory plan; the objects whose
crops do not are named in the error, before any crop is read.

Examples
--------
>>> import numpy as np
>>> labels = np.array([[1, 1, 0, 2], [1, 1, 0, 2]])
>>> table = crop_table(labels, None, [1, 2], ["perimeter"], [])
>>> table["label"].tolist(), table["perimeter"].round(2).tolist()
([1, 2], [4.0, 0.0])
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from dask.utils import format_bytes

from chunkflow.errors import LabelError, MemoryPlanError
from chunkflow.graph.labels.geometry import BlockGrid
from chunkflow.graph.labels.plan import Source

__all__ = ["POSITIONAL", "CropJob", "check_crop_names", "crop_bytes", "crop_table",
           "merge_crop_tables", "plan_crops"]

#: Properties whose values depend on where the crop lies (or are voxel lists): not
#: computed from crops.
POSITIONAL = ("coords", "coords_scaled", "slice")
# Bytes per crop voxel skimage's properties hold beside the crop (a float64 image and
# a few masks and temporaries of it).
_WORK_BYTES = 32


def crop_bytes(voxels: Any, label_itemsize: int, intensity_itemsize: int) -> Any:
    """What computing one crop's properties holds."""
    return voxels * (label_itemsize + intensity_itemsize + _WORK_BYTES)


def crop_table(labels: np.ndarray, intensity: np.ndarray | None,
               chosen: Sequence[int] | np.ndarray,
               names: Sequence[str], functions: Sequence[Callable[..., Any]]) -> dict[str, np.ndarray]:
    """``regionprops_table`` of the labels ``chosen`` (the other voxels set to 0)."""
    from skimage.measure import regionprops_table

    wanted = np.asarray(chosen, dtype=labels.dtype)
    kept = np.where(np.isin(labels, wanted), labels, 0)
    return regionprops_table(kept, intensity, properties=["label", *names],
                             extra_properties=list(functions) or None)


@dataclass(frozen=True)
class CropJob:
    """Everything the crop tasks need, in the graph once."""

    grid: BlockGrid
    labels: Source
    intensity: Source | None
    names: tuple[str, ...]
    functions: tuple[Callable[..., Any], ...]

    def read(self, region: tuple[slice, ...]) -> tuple[np.ndarray, np.ndarray | None]:
        image = self.intensity.read(region) if self.intensity is not None else None
        return self.labels.read(region), image

    def run(self, index: tuple[int, ...], inside: np.ndarray, reaching: np.ndarray,
            boxes: np.ndarray) -> list[dict[str, np.ndarray]]:
        """Block ``index``'s objects: ``inside`` it (from one read of the block) and
        ``reaching`` past it (each from its crop, ``boxes`` rows: min then max)."""
        found = []
        if len(inside):
            found.append(crop_table(*self.read(self.grid.region(index)), inside, self.names,
                                    self.functions))
        for label, box in zip(reaching, boxes):
            ndim = len(box) // 2
            region = tuple(slice(int(lo), int(hi)) for lo, hi in zip(box[:ndim], box[ndim:]))
            found.append(crop_table(*self.read(region), [label], self.names, self.functions))
        return found


def plan_crops(grid: BlockGrid, labels: np.ndarray, low: np.ndarray, high: np.ndarray,
               itemsizes: tuple[int, int], limit: int) -> dict[tuple[int, ...], tuple[
                   np.ndarray, np.ndarray, np.ndarray]]:
    """Per block: (labels inside it, labels reaching past it that start in it, their
    boxes). Raises :class:`MemoryPlanError` naming the objects whose crop does not fit
    ``limit``."""
    voxels = np.prod(high - low, axis=1)
    needs = crop_bytes(voxels, *itemsizes)
    too_big = np.flatnonzero(needs > limit)
    if len(too_big):
        named = ", ".join(f"{int(labels[i])} (bounding box {tuple(int(n) for n in high[i] - low[i])}, "
                          f"{format_bytes(int(needs[i]))})" for i in too_big[:10])
        more = f" and {len(too_big) - 10} more" if len(too_big) > 10 else ""
        raise MemoryPlanError(
            f"measure: the crops of {len(too_big)} objects do not fit max_memory "
            f"{format_bytes(limit)}: {named}{more}; raise max_memory or ask only for "
            "properties computed from partial results")
    first = low // np.asarray(grid.block)
    inside = np.all(first == (high - 1) // np.asarray(grid.block), axis=1)
    chosen: dict[tuple[int, ...], tuple[list[int], list[int]]] = {}
    for i in range(len(labels)):
        ins, out = chosen.setdefault(tuple(int(b) for b in first[i]), ([], []))
        (ins if inside[i] else out).append(i)
    return {index: (labels[ins].astype(np.int64), labels[out].astype(np.int64),
                    np.concatenate([low[out], high[out]], axis=1).astype(np.int64))
            for index, (ins, out) in chosen.items()}


def merge_crop_tables(parts: Sequence[dict[str, np.ndarray]]) -> dict[str, np.ndarray]:
    """The crop tables of every task as one, by label."""
    if not parts:
        return {}
    joined = {name: np.concatenate([p[name] for p in parts]) for name in parts[0]}
    order = np.argsort(joined["label"], kind="stable")
    return {name: value[order] for name, value in joined.items()}


def check_crop_names(names: Sequence[str]) -> None:
    bad = [name for name in names if name in POSITIONAL]
    if bad:
        raise LabelError(f"measure: {', '.join(bad)} list voxels or positions; they are not "
                         "computed (use bbox and centroid, or read the labels)")
