"""chunkflow.segment: per-block labels made global, against chunkflow.label and scipy."""

from __future__ import annotations

import itertools
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from scipy import ndimage

import chunkflow
from chunkflow.errors import LabelError, ShapeMismatchError
from chunkflow.graph.labels.segments import _overlaps
from tests.helpers.labels import blobs, checkerboard, spiral


def threshold_labels(block: np.ndarray, t: float = 0.5, full: bool = False) -> np.ndarray:
    structure = np.ones((3,) * block.ndim, bool) if full else None
    return ndimage.label(block > t, structure)[0]


def check(image: np.ndarray, chunks: tuple[int, ...], depth: int, full: bool = False,
          **kwargs: object) -> chunkflow.Array:
    z = chunkflow.array(image, chunks=chunks)
    kwargs.setdefault("blocks", (1,) * image.ndim)
    kwargs.setdefault("scheduler", "sync")
    out, count = chunkflow.segment(threshold_labels, z, chunkflow.MemoryStore(), depth=depth,
                                   full=full, **kwargs)
    structure = np.ones((3,) * image.ndim, bool) if full else None
    expected, n = ndimage.label(image > 0.5, structure)
    assert count == n
    np.testing.assert_array_equal(out[...], expected)
    # ... which is chunkflow.label's result too, bit for bit.
    same, _ = chunkflow.label(chunkflow.to_dask(z) > 0.5, chunkflow.MemoryStore(),
                              structure=structure, blocks=kwargs["blocks"])
    np.testing.assert_array_equal(out[...], same[...])
    return out


@pytest.mark.parametrize("depth", [1, 2, 5])
def test_a_threshold_labeller_gives_label(depth: int) -> None:
    check(blobs((60, 70), 2, 0.5, seed=1).astype("f4"), (9, 11), depth)
    check(spiral(45).astype("f4"), (7, 6), depth, full=True)


def test_3d_and_full_connectivity_across_corners() -> None:
    check(checkerboard((10, 12, 9)).astype("u1"), (3, 4, 3), 1, full=True)
    check(blobs((20, 18, 22), 1.5, 0.5, seed=2).astype("f4"), (5, 6, 4), 2)


def test_objects_touching_only_at_block_corners() -> None:
    # A diagonal line meets each block at a corner: only the pairs of diagonal
    # neighbours join it.
    check(np.eye(20, dtype="f4")[:, ::-1], (5, 5), 1, full=True)
    check(np.eye(20, dtype="f4"), (4, 5), 2, full=True)
    cube = np.zeros((12, 12, 12), "f4")
    cube[np.arange(12), np.arange(12), np.arange(12)] = 1
    check(cube, (4, 4, 4), 1, full=True)


def reversed_labels(block: np.ndarray) -> np.ndarray:
    """A segmenter numbering its objects backwards (and with gaps)."""
    labels, n = ndimage.label(block > 0.5)
    return np.where(labels > 0, 3 * (n + 1 - labels), 0)


def test_numbering_is_by_first_voxel_whatever_fn_numbers() -> None:
    image = blobs((50, 40), 2, 0.5, seed=8).astype("f4")
    z = chunkflow.array(image, chunks=(10, 10))
    out, count = chunkflow.segment(reversed_labels, z, chunkflow.MemoryStore(), depth=3,
                                   blocks=(1, 1), scheduler="sync")
    expected, n = ndimage.label(image > 0.5)
    assert count == n
    np.testing.assert_array_equal(out[...], expected)


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_random_images(data: st.DataObject) -> None:
    ndim = data.draw(st.integers(1, 3))
    shape = tuple(data.draw(st.integers(1, {1: 60, 2: 24, 3: 10}[ndim])) for _ in range(ndim))
    chunks = tuple(data.draw(st.integers(-(-n // 4), n)) for n in shape)
    seed = data.draw(st.integers(0, 2**31))
    image = np.random.default_rng(seed).random(shape)
    check(image, chunks, data.draw(st.integers(1, 3)), full=data.draw(st.booleans()))


def eroded_labels(block: np.ndarray) -> np.ndarray:
    """A model unsure at its window's edge: labels, with the window's outer voxels
    dropped."""
    labels = ndimage.label(block > 0.5)[0]
    inner = np.zeros(block.shape, bool)
    inner[(slice(1, -1),) * block.ndim] = True
    return np.where(inner, labels, 0)


@pytest.mark.parametrize("min_overlap, expected", [(0.0, 1), (0.4, 1), (0.9, 8)])
def test_min_overlap_decides_where_tiles_disagree(min_overlap: float, expected: int) -> None:
    image = np.zeros((40, 40), "f4")
    image[15:25, 5:35] = 1  # a bar across 3 column and 1 row boundaries of 10^2 blocks
    z = chunkflow.array(image, chunks=(10, 10))
    # Each window drops its outer voxels: in the 4-voxel overlap of two windows, each
    # sees 3 columns of the bar, 2 in common: an intersection over union of 0.5.
    out, count = chunkflow.segment(eroded_labels, z, chunkflow.MemoryStore(), depth=2,
                                   min_overlap=min_overlap, blocks=(1, 1), scheduler="sync")
    assert count == expected
    assert set(np.unique(out[...])) == set(range(expected + 1))


def test_overlaps_by_intersection_over_union() -> None:
    a = np.array([1, 1, 1, 2, 2, 0])
    b = np.array([5, 5, 0, 6, 7, 7])
    assert [x.tolist() for x in _overlaps(a, b, 0.0)] == [[1, 2, 2], [5, 6, 7]]
    assert [x.tolist() for x in _overlaps(a, b, 0.6)] == [[1], [5]]  # 2 of 3; 1 of 2, 1 of 3


def test_fn_is_checked() -> None:
    z = chunkflow.array(np.ones((8, 8)), chunks=(4, 4))
    with pytest.raises(ShapeMismatchError, match="expected integer labels of shape"):
        chunkflow.segment(lambda b: b[1:], z, chunkflow.MemoryStore(), depth=1)
    calls = itertools.count()

    def unstable(block: np.ndarray) -> np.ndarray:
        """One object per window in the first pass (4 blocks), two in the write pass."""
        labels = np.zeros(block.shape, "i4")
        labels[2, 2] = 1
        if next(calls) >= 4:
            labels[3, 3] = 2
        return labels

    with pytest.raises(LabelError, match="same labels"):
        chunkflow.segment(unstable, z, chunkflow.MemoryStore(), depth=1, blocks=(1, 1),
                          scheduler="sync")
    with pytest.raises(LabelError, match="min_overlap"):
        chunkflow.segment(threshold_labels, z, chunkflow.MemoryStore(), depth=1, min_overlap=2)


def test_a_named_job_resumes(tmp_path: Path) -> None:
    image = blobs((30, 30), 2, 0.5, seed=5).astype("f4")
    z = chunkflow.array(image, chunks=(10, 10))
    out, count = chunkflow.segment(lambda b: ndimage.label(b > 0.5)[0], z,
                                   str(tmp_path / "out.zarr"), depth=1, resume=True,
                                   job_name="threshold", blocks=(1, 1))
    np.testing.assert_array_equal(out[...], ndimage.label(image > 0.5)[0])


def negative_labels(window: np.ndarray) -> np.ndarray:
    return np.where(window > 0, -1, 0)


def test_negative_labels_are_refused() -> None:
    with pytest.raises(LabelError, match="negative"):
        chunkflow.segment(negative_labels, np.ones((4, 4)), chunkflow.MemoryStore(), depth=1)
