"""map_chunks tasks that run groups of blocks: one window read per task, results equal
to scipy on the whole array (and to one task per block) for every grouping, boundary
and scheduler; each source chunk read once per task; the function's writes into its
window never reach a neighbour's halo; the process-wide cache stays out of it."""

from __future__ import annotations

import functools
from pathlib import Path
from typing import Any

import dask
import numpy as np
import pytest
from scipy import ndimage

import chunkflow
from chunkflow.errors import InvalidSelectionError, MemoryPlanError
from chunkflow.storage import MemoryStore
from chunkflow.testing.counting import CountingStore

SCIPY_MODE = {"reflect": "reflect", "nearest": "nearest", "constant": "constant",
              "periodic": "wrap"}


def _image(shape: tuple[int, ...], seed: int = 0) -> np.ndarray:
    return np.random.default_rng(seed).random(shape)


def _tasks(collection: Any) -> int:
    """The map tasks of a graph (before dask fuses them with what follows)."""
    return sum(1 for key in dict(collection.__dask_graph__())
               if str(key[0] if isinstance(key, tuple) else key).startswith("chunkflow-map-"))


@pytest.mark.parametrize("boundary", ["reflect", "nearest", "constant", "periodic"])
@pytest.mark.parametrize("per_task", [(2, 3), (4, 1), (8, 8)], ids=["2x3", "4x1", "all"])
def test_groups_equal_scipy_on_the_whole_array(boundary: str, per_task: tuple[int, int]) -> None:
    image = _image((37, 29))
    z = chunkflow.array(image, chunks=(5, 4))
    func = functools.partial(ndimage.gaussian_filter, sigma=1.5, mode=SCIPY_MODE[boundary])
    out = chunkflow.zeros((37, 29), chunks=(5, 4), dtype="f8")
    chunkflow.map_chunks(func, z, out=out, depth=6, boundary=boundary, blocks=(1, 1),
                         blocks_per_task=per_task, scheduler="threads")
    np.testing.assert_allclose(out[:], func(image), rtol=1e-12)


def test_groups_in_3d_with_boundary_none_and_block_info() -> None:
    image = _image((13, 11, 9))
    z = chunkflow.array(image, chunks=(4, 5, 3))
    seen: dict[str, list[Any]] = {}

    def smooth(window: np.ndarray, block_info: dict[str, Any], name: str) -> np.ndarray:
        seen.setdefault(name, []).append((block_info["block_index"], block_info["halo"],
                                          block_info["array_location"]))
        return ndimage.uniform_filter(window, size=5, mode="reflect")

    for name, per_task in (("one", 1), ("groups", (2, 2, 3))):
        out = chunkflow.zeros((13, 11, 9), chunks=(4, 5, 3), dtype="f8")
        chunkflow.map_chunks(functools.partial(smooth, name=name), z, out=out, depth=2,
                             boundary="none", block_info=True, blocks=(1, 1, 1),
                             blocks_per_task=per_task,
                             scheduler="sync")
        np.testing.assert_allclose(out[:], ndimage.uniform_filter(image, size=5, mode="reflect"))
    # The function sees the same blocks, halos and locations however tasks group them.
    assert sorted(seen["groups"]) == sorted(seen["one"]) and len(seen["one"]) == 4 * 3 * 3


def test_two_sources_on_different_grids_and_depth_beyond_the_chunks() -> None:
    a, b = _image((40, 33), 1), _image((40, 33), 2)
    za, zb = chunkflow.array(a, chunks=(3, 8)), chunkflow.array(b, chunks=(11, 4))
    out = chunkflow.zeros((40, 33), chunks=(6, 5), dtype="f8")

    def combined(x: np.ndarray, y: np.ndarray) -> np.ndarray:
        return ndimage.uniform_filter(x * y, size=(15, 3), mode="wrap")

    chunkflow.map_chunks(combined, za, zb, out=out, depth=(7, 1), boundary="periodic",
                         blocks_per_task=(3, 2))
    np.testing.assert_allclose(out[:], combined(a, b))


def test_a_function_writing_into_its_window_leaves_the_neighbours_halos_alone() -> None:
    image = _image((30, 30))
    z = chunkflow.array(image, chunks=(5, 5))
    out = chunkflow.zeros((30, 30), chunks=(5, 5), dtype="f8")

    def clobbering(window: np.ndarray) -> np.ndarray:
        result = ndimage.uniform_filter(window, size=3, mode="reflect")
        window[...] = -1.0  # allowed: the window is this call's own
        return result

    chunkflow.map_chunks(clobbering, z, out=out, depth=1, blocks_per_task=(6, 6))
    np.testing.assert_allclose(out[:], ndimage.uniform_filter(image, size=3, mode="reflect"))


def test_each_source_chunk_is_read_once_per_task() -> None:
    image = _image((64, 64))
    store = CountingStore(MemoryStore())
    chunkflow.array(image, chunks=(8, 8), store=store, compressor=None)
    source = chunkflow.open(store, mode="r", cache=False)
    per_chunk = 8 * 8 * 8  # bytes of one uncompressed chunk
    func = functools.partial(ndimage.uniform_filter, size=5, mode="reflect")
    read = {}
    for per_task in (1, (8, 8)):
        store.counts.reset()
        out = chunkflow.zeros((64, 64), chunks=(8, 8), dtype="f8")
        chunkflow.map_chunks(func, source, out=out, depth=2, blocks=(1, 1),
                             blocks_per_task=per_task, scheduler="threads")
        np.testing.assert_allclose(out[:], func(image))
        chunk_bytes = {k: n for k, n in store.counts.bytes_by_key.items()
                       if not k.endswith("zarr.json")}
        read[per_task] = max(chunk_bytes.values()) // per_chunk, len(chunk_bytes)
    assert read[(8, 8)] == (1, 64)  # one task: every chunk read once
    assert read[1] == (9, 64)  # a task per block: an interior chunk read by 9 blocks


def test_default_groups_a_write_job_into_fewer_tasks() -> None:
    image = (_image((256, 256)) * 4000).astype("u2")
    z = chunkflow.array(image, chunks=(16, 16))
    func = functools.partial(ndimage.gaussian_filter, sigma=2.0, mode="reflect",
                             output=np.float32)
    out = chunkflow.zeros((256, 256), chunks=(32, 32), dtype="f4")
    with dask.config.set(num_workers=2):
        pending = chunkflow.map_chunks(func, z, out=out, depth=8, blocks=(1, 1),
                                       compute=False)
        lazy = chunkflow.map_chunks(func, z, depth=8, dtype="f4", blocks=(2, 2))
    assert lazy.numblocks == (8, 8) and _tasks(lazy) == 64  # a dask array: one per block
    assert 8 <= _tasks(pending) < 64  # 4 tasks per thread, each several blocks
    dask.compute(pending)
    np.testing.assert_allclose(out[:], func(image), rtol=1e-6)


@pytest.mark.slow
@pytest.mark.parametrize("scheduler", ["processes", "cluster"])
def test_groups_on_processes_and_a_cluster(scheduler: str, tmp_path: Path,
                                           request: pytest.FixtureRequest) -> None:
    chosen = request.getfixturevalue("cluster_client") if scheduler == "cluster" else scheduler
    image = (_image((50, 40)) * 1000).astype("u2")
    chunkflow.array(image, chunks=(8, 16), store=str(tmp_path / "in.zarr"))
    func = functools.partial(ndimage.gaussian_filter, sigma=1.0, mode="reflect",
                             output=np.float32)
    chunkflow.map_chunks(func, str(tmp_path / "in.zarr"), out=str(tmp_path / "out.zarr"),
                         depth=4, dtype="f4", blocks_per_task=(3, 2), scheduler=chosen)
    fresh = chunkflow.open(str(tmp_path / "out.zarr"), mode="r", cache=False)
    np.testing.assert_allclose(fresh[:], func(image), rtol=1e-5)


def test_open_sources_skip_the_process_wide_cache(tmp_path: Path) -> None:
    chunkflow.array(_image((64, 64)), chunks=(8, 8), store=str(tmp_path / "a.zarr"))
    z = chunkflow.open(str(tmp_path / "a.zarr"), mode="r")  # the process-wide cache
    cache = chunkflow.get_cache()
    cache.clear()
    chunkflow.map_chunks(np.negative, z, out=str(tmp_path / "b.zarr"), depth=2)
    assert len(cache) == 0
    np.testing.assert_array_equal(chunkflow.open(str(tmp_path / "b.zarr"), mode="r")[:], -z[:])


def test_blocks_per_task_is_checked_and_planned(tmp_path: Path) -> None:
    z = chunkflow.zeros((4096, 4096), chunks=(256, 256), dtype="f4")
    out = chunkflow.zeros((4096, 4096), chunks=(256, 256), dtype="f4")
    for bad in (0, (1, 2, 3), (1, True), 1.5):
        with pytest.raises(InvalidSelectionError, match="blocks_per_task"):
            chunkflow.map_chunks(np.negative, z, out=out, blocks_per_task=bad)
    with pytest.raises(InvalidSelectionError, match="out="):
        chunkflow.map_chunks(np.negative, z, blocks_per_task=2)
    with pytest.raises(MemoryPlanError, match=r"blocks_per_task=\(8, 8\).*blocks_per_task=1 needs"):
        chunkflow.map_chunks(np.negative, z, out=str(tmp_path / "new.zarr"), depth=8,
                             blocks_per_task=8, max_memory="32 MiB")
    assert not (tmp_path / "new.zarr").exists()


@pytest.mark.parametrize("boundary", ["reflect", "nearest", "constant"])
@pytest.mark.parametrize("shape,chunks", [((37, 29), (5, 4)), ((13, 3, 9), (4, 2, 3))],
                         ids=["2d", "3d"])
def test_windows_padded_in_place_equal_numpy_pad_of_the_whole_array(
        boundary: str, shape: tuple[int, ...], chunks: tuple[int, ...]) -> None:
    from chunkflow.graph.map.halo import read_window

    image = _image(shape)
    z = chunkflow.array(image, chunks=chunks)
    numpy_mode = {"reflect": "symmetric", "nearest": "edge", "constant": "constant"}[boundary]
    for depth in (1, 4):  # 4: wider than a chunk, and than the 3-long axis (np.pad's path)
        extra = {"constant_values": 7.5} if boundary == "constant" else {}
        padded = np.pad(image, depth, mode=numpy_mode, **extra)
        for region in (tuple(slice(0, c) for c in chunks),
                       tuple(slice(n - c, n) for n, c in zip(shape, chunks)),
                       tuple(slice(0, n) for n in shape)):
            window, _ = read_window(z, region, (depth,) * len(shape), boundary, 7.5)
            expected = padded[tuple(slice(r.start, r.stop + 2 * depth) for r in region)]
            np.testing.assert_array_equal(window, expected)


def test_reading_into_a_view() -> None:
    z = chunkflow.array(np.arange(30).reshape(5, 6), chunks=(2, 4))
    window = np.full((7, 8), -1, dtype=z.dtype)
    z.get_basic_selection((slice(1, 5), slice(0, 6)), out=window[2:6, 1:7])
    np.testing.assert_array_equal(window[2:6, 1:7], np.arange(30).reshape(5, 6)[1:5])
    assert (window[:2] == -1).all() and (window[:, 0] == -1).all()
    with pytest.raises(ValueError, match="needs"):
        z.get_basic_selection((slice(1, 5), slice(0, 6)), out=window[:3])
