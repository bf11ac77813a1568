"""Images that break naive label merges, and a logged, slow (or failing) source for the
resume tests, usable in any process (its state lives in files)."""

from __future__ import annotations

import os
import uuid
from pathlib import Path
from typing import Any

import numpy as np
from scipy import ndimage


def spiral(size: int) -> np.ndarray:
    """A square spiral one voxel wide with one voxel between its turns: one component
    that crosses every block boundary many times."""
    image = np.zeros((size, size), bool)
    row = col = 0
    image[0, 0] = True
    moves = [(0, 1), (1, 0), (0, -1), (-1, 0)]
    lengths = [size - 1, size - 1, size - 1]
    length = size - 1
    while length > 0:
        lengths.extend([length - 2, length - 2])
        length -= 2
    for turn, steps in enumerate(lengths):
        if steps <= 0:
            break
        d_row, d_col = moves[turn % 4]
        for _ in range(steps):
            row, col = row + d_row, col + d_col
            image[row, col] = True
    return image


def spiral_3d(size: int, depth: int) -> np.ndarray:
    """Spirals stacked in z, joined at one corner only between neighbouring slices."""
    plane = spiral(size)
    image = np.zeros((depth, size, size), bool)
    for z in range(depth):
        image[z] = plane if z % 2 == 0 else plane[::-1, ::-1]
    return image


def checkerboard(shape: tuple[int, ...]) -> np.ndarray:
    """Alternating voxels: one component under full connectivity, every voxel its own
    under face connectivity."""
    return (np.indices(shape).sum(axis=0) % 2).astype(bool)


def blobs(shape: tuple[int, ...], sigma: float, threshold: float, seed: int = 0) -> np.ndarray:
    """Smooth random blobs (objects of about ``sigma`` voxels)."""
    field = ndimage.gaussian_filter(np.random.default_rng(seed).random(shape), sigma)
    return field > threshold


def logged_block(block: np.ndarray, log: str, block_info: dict[str, Any] | None = None) -> np.ndarray:
    """For ``dask.array.map_blocks``: ``block > 0.5``, logged in ``log/calls``; raises
    where ``log/fail-<block>`` exists and the block was read before (the write pass)."""
    if not block_info:  # dask's meta probe while building the graph
        return block > 0.5
    index = "-".join(map(str, block_info[0]["chunk-location"]))
    folder = Path(log) / "calls"
    folder.mkdir(exist_ok=True)
    seen = any(p.name.startswith(f"{index}.") for p in folder.iterdir())
    if seen and (Path(log) / f"fail-{index}").exists():
        raise RuntimeError(f"injected failure at block {index}")
    pause = Path(log) / "pause"
    if pause.exists():
        import time

        time.sleep(float(pause.read_text()))
    (folder / f"{index}.{uuid.uuid4().hex}").touch()
    return block > 0.5


def logged_calls(log: str | os.PathLike[str]) -> list[str]:
    """The blocks ``logged_block`` computed, one entry per call, sorted."""
    folder = Path(log) / "calls"
    return sorted(p.name.partition(".")[0] for p in folder.iterdir()) if folder.exists() else []


# --------------------------------------------------------------- measure oracles
def compacted(labels: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(the labels present (above 0), ascending; the image renumbered 1, 2, ... in
    their order, negatives as 0): what skimage measures when label values are too
    large for it (its ``find_objects`` allocates a slot per value up to the largest)."""
    native = labels.astype(labels.dtype.newbyteorder("="))
    present = np.unique(native[native > 0])
    ranks = np.searchsorted(present, native) + 1
    return present, np.where(native > 0, ranks, 0)


def label_column(present: np.ndarray) -> np.ndarray:
    """skimage's ``label`` column (int64), uint64 where a label is past int64 (chunkflow's
    documented extension)."""
    if present.dtype == np.uint64 and len(present) and int(present.max()) >= 2**63:
        return present.astype(np.uint64)
    return present.astype(np.int64)


def regionprops_reference(labels: np.ndarray, intensity: np.ndarray | None,
                          properties: list[str], aliases: dict[str, str],
                          spacing: Any = None) -> dict[str, np.ndarray]:
    """The one-pass properties of ``regionprops_table`` (names as given; ``aliases``
    maps deprecated names to current ones) computed with numpy, one object at a time,
    in any number of dimensions: the oracle where skimage measures no such image (1-D,
    4-D). Checked against skimage in 2-D and 3-D by the differential tests."""
    present, ranks = compacted(labels)
    ndim = labels.ndim
    scale = np.ones(ndim) if spacing is None else np.broadcast_to(np.asarray(spacing), (ndim,))
    values = None if intensity is None else intensity.astype(np.float64)
    masks = [ranks == rank for rank in range(1, len(present) + 1)]
    coords = [np.argwhere(mask) for mask in masks]

    def per_object(f: Any, kind: Any = np.float64) -> np.ndarray:
        return np.array([f(mask, c) for mask, c in zip(masks, coords)], kind).reshape(len(masks))

    def weights(mask: np.ndarray) -> np.ndarray:
        assert values is not None
        return values[mask]

    columns: dict[str, Any] = {
        "label": lambda: {"": label_column(present)},
        "area": lambda: {"": per_object(lambda m, c: m.sum() * np.prod(scale))},
        "num_pixels": lambda: {"": per_object(lambda m, c: m.sum(), np.int64)},
        "bbox": lambda: {f"-{a}": per_object(lambda m, c, a=a: c[:, a % ndim].min() if a < ndim
                                              else c[:, a % ndim].max() + 1, np.int64)
                         for a in range(2 * ndim)},
        "centroid": lambda: {f"-{a}": per_object(lambda m, c, a=a: (c[:, a] * scale[a]).mean())
                             for a in range(ndim)},
        "centroid_weighted": lambda: {
            f"-{a}": per_object(lambda m, c, a=a: (weights(m) * c[:, a]).sum()
                                / weights(m).sum() * scale[a]) for a in range(ndim)},
        "intensity_mean": lambda: {"": per_object(lambda m, c: weights(m).mean())},
        "intensity_min": lambda: {"": per_object(lambda m, c: weights(m).min())},
        "intensity_max": lambda: {"": per_object(lambda m, c: weights(m).max())},
        "intensity_std": lambda: {"": per_object(lambda m, c: weights(m).std())},
    }
    found: dict[str, np.ndarray] = {}
    for name in properties:
        for suffix, column in columns[aliases.get(name, name)]().items():
            found.setdefault(name + suffix, column)
    return found
