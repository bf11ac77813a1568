"""chunkflow.label against scipy.ndimage.label on the whole array, bit for bit."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from scipy import ndimage

import chunkflow
from chunkflow.errors import ContainsArrayError, LabelError, MemoryPlanError
from chunkflow.graph.labels import label
from tests.helpers.labels import blobs, checkerboard, spiral, spiral_3d


def check(image: np.ndarray, chunks: tuple[int, ...], structure: object = None,
          **kwargs: object) -> chunkflow.Array:
    """``label`` of ``image`` (one chunk per block unless told) equals scipy's."""
    z = chunkflow.array(image, chunks=chunks)
    kwargs.setdefault("blocks", (1,) * image.ndim)
    kwargs.setdefault("scheduler", "sync")
    out, count = label(z, chunkflow.MemoryStore(), structure=structure, **kwargs)
    expected, n = ndimage.label(image, structure)
    assert count == n
    np.testing.assert_array_equal(out[...], expected)
    return out


@st.composite
def cases(draw: st.DrawFn, ndim: int) -> tuple[np.ndarray, tuple[int, ...], np.ndarray]:
    limit = {1: 80, 2: 28, 3: 12, 4: 7}[ndim]
    shape = tuple(draw(st.integers(1, limit)) for _ in range(ndim))
    # Enough blocks to merge in every direction, few enough to stay quick.
    most = {1: 12, 2: 6, 3: 4, 4: 3}[ndim]
    chunks = tuple(draw(st.integers(-(-n // most), n)) for n in shape)
    density = draw(st.floats(0.0, 1.0))
    seed = draw(st.integers(0, 2**31))
    image = np.random.default_rng(seed).random(shape) < density
    half = draw(st.lists(st.booleans(), min_size=3**ndim, max_size=3**ndim))
    structure = np.array(half, bool).reshape((3,) * ndim)
    structure |= structure[(slice(None, None, -1),) * ndim]  # symmetric, as scipy needs
    return image, chunks, structure


@pytest.mark.parametrize("ndim", [1, 2, pytest.param(3, marks=pytest.mark.slow),
                                  pytest.param(4, marks=pytest.mark.slow)])
@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_random_images_grids_and_structures(ndim: int, data: st.DataObject) -> None:
    image, chunks, structure = data.draw(cases(ndim))
    check(image, chunks, structure)


@pytest.mark.parametrize("connectivity", [1, 2])
def test_a_spiral_crossing_every_block_many_times(connectivity: int) -> None:
    image = spiral(61)
    out = check(image, (7, 9), ndimage.generate_binary_structure(2, connectivity))
    assert int(out[...].max()) == 1


def test_stacked_spirals_in_3d() -> None:
    check(spiral_3d(23, 6), (4, 5, 6), np.ones((3, 3, 3), bool))
    check(spiral_3d(23, 6), (4, 5, 6))


@pytest.mark.parametrize("shape, chunks", [((40, 36), (7, 5)), ((9, 10, 11), (2, 3, 4)),
                                           ((5, 6, 4, 7), (2, 2, 3, 2))])
def test_a_checkerboard_under_full_and_face_connectivity(shape: tuple[int, ...],
                                                        chunks: tuple[int, ...]) -> None:
    image = checkerboard(shape)
    full = check(image, chunks, np.ones((3,) * len(shape), bool))
    assert int(full[...].max()) == 1
    faces = check(image, chunks)  # every voxel its own component
    assert int(faces[...].max()) == int(image.sum())


def test_objects_touching_only_at_block_corners() -> None:
    # Diagonal lines meet each block at a corner: only diagonal neighbours join them.
    check(np.eye(20, dtype=bool)[:, ::-1], (5, 5), np.ones((3, 3), bool))
    check(np.eye(20, dtype=bool), (4, 5), np.ones((3, 3), bool))
    cube = np.zeros((12, 12, 12), bool)
    cube[np.arange(12), np.arange(12), np.arange(12)] = True
    check(cube, (4, 4, 4), np.ones((3, 3, 3), bool))
    check(cube[::-1], (4, 4, 4), ndimage.generate_binary_structure(3, 3))


def test_one_object_spanning_everything_and_all_foreground() -> None:
    image = np.ones((30, 31), bool)
    image[::4, 1:-1] = False  # a comb: one component touching every block
    check(image, (4, 4))
    out = check(np.ones((17, 9, 5), "u1"), (3, 4, 2))
    assert int(out[...].min()) == 1


def test_all_background_writes_zeros() -> None:
    out = check(np.zeros((20, 20), "f4"), (6, 6))
    assert out.nchunks_initialized == 0  # zeros are the fill value: nothing stored


def test_any_nonzero_value_is_foreground() -> None:
    image = np.random.default_rng(3).integers(-3, 4, (25, 25)).astype("i2")
    image = image.astype("f4")
    image[3, 3] = np.nan  # nonzero: foreground, as in scipy
    check(image, (6, 7), np.ones((3, 3), bool))


def test_edge_chunks_and_a_single_block() -> None:
    image = blobs((53, 47), 2, 0.5)
    check(image, (10, 10))
    check(image, (10, 10), blocks=None)  # the default plan: one block here
    check(image[:1], (1, 10))


def test_blocks_of_several_chunks_and_default_plans() -> None:
    image = blobs((64, 64, 16), 1.5, 0.5, seed=2)
    check(image, (8, 8, 8), blocks=(2, 3, 1))
    check(image, (8, 8, 8), blocks=None, scheduler="threads")


def test_sharded_output_writes_whole_shards(tmp_path: Path) -> None:
    image = blobs((60, 60), 2, 0.5, seed=4)
    z = chunkflow.array(image, chunks=(10, 10))
    out, count = label(z, str(tmp_path / "labels.zarr"), chunks=(5, 5), shards=(20, 20),
                       blocks=(1, 1), scheduler="threads")
    expected, n = ndimage.label(image)
    assert (count, out.shards, out.chunks) == (n, (20, 20), (5, 5))
    reopened = chunkflow.open_array(str(tmp_path / "labels.zarr"), mode="r")
    np.testing.assert_array_equal(reopened[...], expected)
    zarr = pytest.importorskip("zarr")
    np.testing.assert_array_equal(zarr.open_array(str(tmp_path / "labels.zarr"))[...], expected)


def test_a_lazy_expression_source() -> None:
    field = np.random.default_rng(5).random((50, 40)).astype("f4")
    z = chunkflow.array(field, chunks=(8, 8))
    out, count = label(chunkflow.to_dask(z) > 0.7, chunkflow.MemoryStore(), blocks=(2, 2),
                       scheduler="threads")
    expected, n = ndimage.label(field > 0.7)
    assert count == n
    np.testing.assert_array_equal(out[...], expected)


def test_label_dtype_widens_and_a_dtype_too_small_is_refused_before_anything_is_created(
        tmp_path: Path) -> None:
    image = checkerboard((40, 40))  # 800 labels under face connectivity
    z = chunkflow.array(image, chunks=(10, 10))
    out, count = label(z, chunkflow.MemoryStore(), dtype="u2", blocks=(1, 1))
    assert out.dtype == np.dtype("u2") and count == 800
    where = tmp_path / "small.zarr"
    with pytest.raises(LabelError, match="800 labels do not fit dtype uint8"):
        label(z, str(where), dtype="u1", blocks=(1, 1), scheduler="threads")
    assert not where.exists()
    existing = chunkflow.zeros((40, 40), chunks=(10, 10), dtype="u1")
    with pytest.raises(LabelError, match="do not fit"):
        label(z, existing, blocks=(1, 1))
    assert existing.nchunks_initialized == 0
    with pytest.raises(LabelError, match="integer dtype"):
        label(z, chunkflow.MemoryStore(), dtype="f4")


def test_bad_structures_are_refused() -> None:
    z = chunkflow.array(np.ones((4, 4)), chunks=(2, 2))
    with pytest.raises(LabelError, match="not symmetric"):
        label(z, chunkflow.MemoryStore(), structure=[[0, 1, 0], [0, 1, 1], [0, 0, 0]])
    with pytest.raises(LabelError, match="rank"):
        label(z, chunkflow.MemoryStore(), structure=np.ones((3,), bool))
    with pytest.raises(LabelError, match="must be 3"):
        label(z, chunkflow.MemoryStore(), structure=np.ones((3, 5), bool))


def test_an_existing_output_is_refused_unless_overwrite(tmp_path: Path) -> None:
    image = blobs((30, 30), 2, 0.5)
    z = chunkflow.array(image, chunks=(10, 10))
    where = str(tmp_path / "out.zarr")
    chunkflow.zeros((3,), store=where)
    with pytest.raises(ContainsArrayError, match="overwrite=True"):
        label(z, where)
    out, _ = label(z, where, overwrite=True, blocks=(1, 1))
    np.testing.assert_array_equal(out[...], ndimage.label(image)[0])


def test_the_memory_plan_refusal_creates_nothing(tmp_path: Path) -> None:
    z = chunkflow.array(blobs((64, 64), 2, 0.5), chunks=(32, 32))
    where = tmp_path / "out.zarr"
    with pytest.raises(MemoryPlanError, match=r"blocks=\(1, 1\)"):
        label(z, str(where), blocks=(2, 2), max_memory="30 KiB")
    with pytest.raises(MemoryPlanError, match="not even one chunk"):
        label(z, str(where), max_memory="1 KiB")
    assert not where.exists()


def test_progress_and_compute_false() -> None:
    image = blobs((40, 40), 2, 0.5)
    z = chunkflow.array(image, chunks=(10, 10))
    seen: list[tuple[int, int]] = []
    label(z, chunkflow.MemoryStore(), blocks=(1, 1), scheduler="sync",
          progress=lambda done, total: seen.append((done, total)))
    assert seen[-1] == (32, 32)  # 16 blocks, each read twice (scan and write)
    lazy = label(z, chunkflow.MemoryStore(), blocks=(1, 1), compute=False)
    out, count = lazy.compute(scheduler="sync")
    np.testing.assert_array_equal(out[...], ndimage.label(image)[0])
