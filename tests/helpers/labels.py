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
