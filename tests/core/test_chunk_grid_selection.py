"""Block selection (``z.blocks[...]``, ``get/set_block_selection``) against numpy, and
against zarr-python 3 for sharded arrays and for what it refuses."""

from __future__ import annotations

import random
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import chunkflow
from chunkflow.errors import BoundsCheckError, InvalidSelectionError


def _random_item(rng: random.Random, nblocks: int) -> Any:
    """A valid block selection entry: an index or a step-1 slice whose first block exists."""
    first = rng.randrange(nblocks)
    kind = rng.choice(["int", "neg", "slice", "open", "negslice", "all"])
    if kind == "int":
        return first
    if kind == "neg":
        return first - nblocks
    if kind == "slice":
        return slice(first, first + rng.randint(0, nblocks + 1))
    if kind == "open":
        return slice(first, None)
    if kind == "negslice":
        return slice(first - nblocks, rng.choice([None, -1, nblocks]))
    return slice(None)


def _indices(shape: tuple[int, ...], chunks: tuple[int, ...], selection: tuple[Any, ...]) -> list:
    """numpy reference: Python's range indexing picks the blocks, then their elements."""
    out = []
    for item, size, chunk in zip(selection, shape, chunks):
        blocks = range(-(-size // chunk))[item]
        blocks = [blocks] if isinstance(blocks, int) else list(blocks)
        out.append([i for b in blocks for i in range(b * chunk, min((b + 1) * chunk, size))])
    return out


def _expected(data: np.ndarray, chunks: tuple[int, ...], selection: tuple[Any, ...]) -> np.ndarray:
    return data[np.ix_(*_indices(data.shape, chunks, selection))]


CASES = [((10,), (4,)), ((7, 9), (3, 2)), ((6, 5, 8), (2, 5, 3)), ((5, 4), (5, 4))]


@pytest.mark.parametrize(("shape", "chunks"), CASES)
def test_block_reads_and_writes_match_numpy(shape: tuple[int, ...], chunks: tuple[int, ...]) -> None:
    rng = random.Random(1234)
    data = np.arange(int(np.prod(shape)), dtype="i4").reshape(shape)
    z = chunkflow.array(data, chunks=chunks)
    grid = [-(-s // c) for s, c in zip(shape, chunks)]
    for _ in range(60):
        selection = tuple(_random_item(rng, n) for n in grid)
        expected = _expected(data, chunks, selection)
        np.testing.assert_array_equal(z.blocks[selection], expected, err_msg=str(selection))
        np.testing.assert_array_equal(z.get_block_selection(selection), expected)
        # Writes: the same cells change in a numpy copy.
        value = rng.randrange(-100, 0)
        reference = z[...]
        reference[tuple(np.ix_(*_indices(shape, chunks, selection)))] = value
        z.blocks[selection] = value
        np.testing.assert_array_equal(z[...], reference, err_msg=str(selection))
        z[...] = data



def test_fewer_entries_and_ellipsis_select_every_block_of_the_rest() -> None:
    data = np.arange(24).reshape(4, 6)
    z = chunkflow.array(data, chunks=(2, 4))
    np.testing.assert_array_equal(z.blocks[1], data[2:4])
    np.testing.assert_array_equal(z.blocks[..., 1], data[:, 4:])
    np.testing.assert_array_equal(z.blocks[...], data)
    z.set_block_selection((0, 1), np.full((2, 2), -1))
    assert z[0:2, 4:].tolist() == [[-1, -1], [-1, -1]]


def test_blocks_of_a_sharded_array_are_shards_as_in_zarr_python(tmp_path: Path) -> None:
    zarr = pytest.importorskip("zarr")
    path = str(tmp_path / "s.zarr")
    data = np.arange(20 * 12, dtype="u2").reshape(20, 12)
    z = chunkflow.create_array(path, data=data, chunks=(2, 3), shards=(8, 6))
    theirs = zarr.open_array(path, mode="r")
    for selection in [(0, 0), (2, 1), (slice(1, None), 0), (-1, slice(None)), (slice(0, 2),)]:
        np.testing.assert_array_equal(z.blocks[selection], theirs.blocks[selection])
    assert z.blocks[1, 1].shape == (8, 6)  # a shard, not an inner chunk


# Selections zarr-python 3 refuses, and the chunkflow error for each.
REFUSED = [
    (4, BoundsCheckError, "block 4 is out of bounds for dimension 0 of 3 blocks"),
    (-4, BoundsCheckError, "out of bounds"),
    (slice(3, None), BoundsCheckError, "first block 3"),
    (slice(-5, None), BoundsCheckError, "first block -2"),
    (slice(0, 2, 2), InvalidSelectionError, "step 2"),
    ([0, 1], InvalidSelectionError, "not an integer or a slice"),
    ((0, 0), InvalidSelectionError, r"too many indices for an array of shape \(10,\)"),
]


@pytest.mark.parametrize(("selection", "error", "message"), REFUSED,
                         ids=[repr(r[0]) for r in REFUSED])
def test_refused_block_selections(selection: Any, error: type, message: str) -> None:
    zarr = pytest.importorskip("zarr")
    theirs = zarr.create_array({}, shape=(10,), chunks=(4,), dtype="i4")
    with pytest.raises((IndexError, ValueError, TypeError)):
        theirs.blocks[selection]  # zarr-python refuses it too
    z = chunkflow.create_array(None, shape=(10,), chunks=(4,), dtype="i4", name="blk")
    with pytest.raises(error, match=message) as caught:
        z.blocks[selection]
    assert "'blk'" in str(caught.value)
    with pytest.raises(error):
        z.blocks[selection] = 1
