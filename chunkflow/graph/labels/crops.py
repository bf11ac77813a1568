"""Properties that need the whole object (``solidity``, ``area_convex``, ``coords``,
``feret_diameter_max``, a callable...; 3-D perimeters and the like, which scikit-image
refuses, so that the refusal is its own), computed by
``skimage.measure.regionprops_table`` on each object's bounding-box crop.

Once the first pass has found every object's bounding box, each object is assigned to
the block holding its first corner. A block task reads its block once for the objects
wholly inside it (the others' voxels are set to 0) and reads the crop of each object
that reaches past it on its own. A crop must fit the memory plan; the objects whose
crops do not are named in the error, before any crop is read.

In a crop the objects are renumbered 1, 2, ... (skimage's ``find_objects`` would
allocate a slot per label value up to the largest, 2**64 for a ``uint64`` label), and
the positions skimage gives (``coords``, ``coords_scaled``, ``slice``) are moved from
the crop's origin to the image's.

Examples
--------
>>> import numpy as np
>>> labels = np.array([[1, 1, 0, 2], [1, 1, 0, 2]])
>>> table = crop_table(labels, None, [1, 2], ["perimeter", "slice"], [], origin=(10, 0))
>>> table["label"].tolist(), table["perimeter"].round(2).tolist(), table["slice"][1]
([1, 2], [4.0, 0.0], (slice(10, 12, None), slice(3, 4, None)))
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from dask.utils import format_bytes

from chunkflow.errors import MemoryPlanError
from chunkflow.graph.labels.geometry import BlockGrid
from chunkflow.graph.labels.plan import Source
from chunkflow.graph.labels.properties import POSITIONAL

__all__ = ["CropJob", "crop_bytes", "crop_table", "empty_crop_columns", "merge_crop_tables",
           "plan_crops"]

# Bytes per crop voxel skimage's properties hold beside the crop (a float64 image and
# a few masks and temporaries of it).
_WORK_BYTES = 32


def crop_bytes(voxels: Any, label_itemsize: int, intensity_itemsize: int) -> Any:
    """What computing one crop's properties holds."""
    return voxels * (label_itemsize + intensity_itemsize + _WORK_BYTES)


def _object_column(values: Sequence[Any]) -> np.ndarray:
    column = np.empty(len(values), dtype=object)
    for i, value in enumerate(values):
        column[i] = value
    return column


def _move(table: dict[str, np.ndarray], names: Sequence[str], origin: Sequence[int],
          spacing: np.ndarray | None) -> None:
    """Move the positional columns of ``table`` from the crop's origin to the image's,
    computed as skimage computes them on the whole image."""
    shift = np.asarray(origin, np.int64)
    coords = [c + shift for c in table["coords"]] if "coords" in table else []
    if "coords_scaled" in names:
        scale = np.ones(len(shift)) if spacing is None else spacing
        table["coords_scaled"] = _object_column(
            [c * scale + np.zeros(len(shift), int) for c in coords])
    if "coords" in names:
        table["coords"] = _object_column(coords)
    else:
        table.pop("coords", None)
    if "slice" in names:
        table["slice"] = _object_column(
            [tuple(slice(int(s.start) + int(o), int(s.stop) + int(o), s.step)
                   for s, o in zip(box, shift)) for box in table["slice"]])


def crop_table(labels: np.ndarray, intensity: np.ndarray | None,
               chosen: Sequence[int] | np.ndarray, names: Sequence[str],
               functions: Sequence[Callable[..., Any]], origin: Sequence[int] | None = None,
               spacing: np.ndarray | None = None) -> dict[str, np.ndarray]:
    """``regionprops_table`` of the labels ``chosen`` (the other voxels set to 0) of a
    crop whose first voxel is ``origin`` in the image; the ``label`` column as
    ``uint64``, ascending."""
    from skimage.measure import regionprops_table

    wanted = np.unique(np.asarray(chosen).astype(np.uint64))
    # Compared as uint64 (mixed int64 and uint64 would compare as float64); negative
    # labels are background.
    values = (np.where(labels < 0, 0, labels) if labels.dtype.kind == "i" else labels
              ).astype(np.uint64, copy=False)
    place = np.searchsorted(wanted, values)
    hit = place < len(wanted)
    hit[hit] = wanted[place[hit]] == values[hit]
    kept = np.where(hit, place + 1, 0)
    asked = list(names) + (["coords"] if POSITIONAL & set(names) - {"slice"} else [])
    table = regionprops_table(kept, intensity, properties=["label", *dict.fromkeys(asked)],
                              extra_properties=list(functions) or None, spacing=spacing)
    table["label"] = wanted[table["label"] - 1]
    _move(table, names, (0,) * labels.ndim if origin is None else origin, spacing)
    return table


def empty_crop_columns(ndim: int, intensity: np.dtype | None, names: Sequence[str],
                       functions: Sequence[Callable[..., Any]],
                       spacing: np.ndarray | None) -> dict[str, np.ndarray]:
    """The crop columns of an image without objects, as skimage makes them (from its
    one-object stand-in image, with the intensity's dtype)."""
    from skimage.measure import regionprops_table

    image = None if intensity is None else np.zeros((1,) * ndim, intensity)
    return regionprops_table(np.zeros((1,) * ndim, np.int64), image, properties=list(names),
                             extra_properties=list(functions) or None, spacing=spacing)


@dataclass(frozen=True)
class CropJob:
    """Everything the crop tasks need, in the graph once."""

    grid: BlockGrid
    labels: Source
    intensity: Source | None
    names: tuple[str, ...]
    functions: tuple[Callable[..., Any], ...]
    spacing: np.ndarray | None = None

    def read(self, region: tuple[slice, ...]) -> tuple[np.ndarray, np.ndarray | None]:
        image = self.intensity.read(region) if self.intensity is not None else None
        return self.labels.read(region), image

    def table(self, region: tuple[slice, ...], chosen: np.ndarray) -> dict[str, np.ndarray]:
        return crop_table(*self.read(region), chosen, self.names, self.functions,
                          [r.start for r in region], self.spacing)

    def run(self, index: tuple[int, ...], inside: np.ndarray, reaching: np.ndarray,
            boxes: np.ndarray) -> list[dict[str, np.ndarray]]:
        """Block ``index``'s objects: ``inside`` it (from one read of the block) and
        ``reaching`` past it (each from its crop, ``boxes`` rows: min then max)."""
        found = []
        if len(inside):
            found.append(self.table(self.grid.region(index), inside))
        for label, box in zip(reaching, boxes):
            ndim = len(box) // 2
            region = tuple(slice(int(lo), int(hi)) for lo, hi in zip(box[:ndim], box[ndim:]))
            found.append(self.table(region, np.array([label])))
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
    return {index: (labels[ins], labels[out],
                    np.concatenate([low[out], high[out]], axis=1).astype(np.int64))
            for index, (ins, out) in chosen.items()}


def merge_crop_tables(parts: Sequence[dict[str, np.ndarray]]) -> dict[str, np.ndarray]:
    """The crop tables of every task as one, by label."""
    if not parts:
        return {}
    joined = {name: np.concatenate([p[name] for p in parts]) for name in parts[0]}
    order = np.argsort(joined["label"], kind="stable")
    return {name: value[order] for name, value in joined.items()}
