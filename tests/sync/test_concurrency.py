"""Concurrent writers never lose data when a synchronizer is set.

Every writer adds 1 to randomly placed, unaligned, overlapping regions of one array
many times; the final array must equal the exact sum of all increments — every run.
Threads, processes (file locks) and the workers of a real ``distributed.LocalCluster``
are each tried. Concurrent appends from several processes must land every row once.
"""

from __future__ import annotations

import multiprocessing
import threading
from pathlib import Path

import dask
import dask.array as da
import numpy as np
import pytest

import chunkflow
from chunkflow.errors import LockTimeoutError
from chunkflow.sync import DistributedSynchronizer, ProcessSynchronizer, ThreadSynchronizer

SHAPE = (60, 70)
CHUNKS = (16, 16)


def random_regions(seed: int, count: int) -> list[tuple[slice, slice]]:
    """Unaligned regions, most of them spanning several chunks."""
    rng = np.random.default_rng(seed)
    regions = []
    for _ in range(count):
        r0, c0 = rng.integers(0, SHAPE[0] - 1), rng.integers(0, SHAPE[1] - 1)
        r1 = rng.integers(r0 + 1, min(SHAPE[0], r0 + 40) + 1)
        c1 = rng.integers(c0 + 1, min(SHAPE[1], c0 + 40) + 1)
        regions.append((slice(int(r0), int(r1)), slice(int(c0), int(c1))))
    return regions


def expected_sum(seeds: list[int], count: int) -> np.ndarray:
    expected = np.zeros(SHAPE, dtype="i4")
    for seed in seeds:
        for region in random_regions(seed, count):
            expected[region] += 1
    return expected


def new_array(path: Path, layout: str, synchronizer: object) -> chunkflow.Array:
    """Zeros in plain chunks, or in shards of 32x32 made of 8x8 inner chunks (partial
    writes then read-modify-write whole shards that several writers share)."""
    if layout == "sharded":
        return chunkflow.create_array(str(path), shape=SHAPE, chunks=(8, 8), shards=(32, 32),
                                      dtype="i4", fill_value=0, synchronizer=synchronizer)
    return chunkflow.zeros(SHAPE, chunks=CHUNKS, dtype="i4", store=str(path),
                           synchronizer=synchronizer)


LAYOUTS = pytest.mark.parametrize("layout", ["chunks", "sharded"])


def add_ones(array: chunkflow.Array, seed: int, count: int) -> int:
    """The writer's job: add 1 to each of its regions (a locked read-modify-write)."""
    for region in random_regions(seed, count):
        array.modify(region, lambda block: block + 1)
    return seed


@LAYOUTS
def test_threads_never_lose_increments(tmp_path: Path, layout: str) -> None:
    z = new_array(tmp_path / "t.zarr", layout, ThreadSynchronizer())
    seeds = list(range(6))
    threads = [threading.Thread(target=add_ones, args=(z, seed, 40)) for seed in seeds]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    np.testing.assert_array_equal(z[:], expected_sum(seeds, 40))
    # the cache (write-through) and the store agree
    np.testing.assert_array_equal(chunkflow.open(str(tmp_path / "t.zarr"), cache=False)[:],
                                  expected_sum(seeds, 40))


def _process_writer(array: chunkflow.Array, seed: int, count: int) -> None:
    add_ones(array, seed, count)


@pytest.mark.slow
@LAYOUTS
def test_processes_never_lose_increments(tmp_path: Path, layout: str) -> None:
    z = new_array(tmp_path / "p.zarr", layout, ProcessSynchronizer(tmp_path / "locks"))
    seeds = list(range(100, 104))
    context = multiprocessing.get_context("spawn")
    processes = [context.Process(target=_process_writer, args=(z, seed, 25)) for seed in seeds]
    for process in processes:
        process.start()
    for process in processes:
        process.join(timeout=120)
        assert process.exitcode == 0
    fresh = chunkflow.open(str(tmp_path / "p.zarr"), mode="r", cache=False)
    np.testing.assert_array_equal(fresh[:], expected_sum(seeds, 25))


def _process_appender(array: chunkflow.Array, worker: int, rows: int) -> None:
    for row in range(rows):
        array.append(np.full((1, 3), worker * 1000 + row, dtype="i4"))


@pytest.mark.slow
def test_concurrent_appends_from_processes_land_once(tmp_path: Path) -> None:
    sync = ProcessSynchronizer(tmp_path / "locks")
    z = chunkflow.zeros((0, 3), chunks=(4, 3), dtype="i4", store=str(tmp_path / "a.zarr"),
                        synchronizer=sync)
    context = multiprocessing.get_context("spawn")
    processes = [context.Process(target=_process_appender, args=(z, w, 15)) for w in range(3)]
    for process in processes:
        process.start()
    for process in processes:
        process.join(timeout=120)
        assert process.exitcode == 0
    result = chunkflow.open(str(tmp_path / "a.zarr"), mode="r", cache=False)[:]
    assert result.shape == (45, 3)
    assert (result == result[:, :1]).all()
    assert sorted(result[:, 0]) == sorted(w * 1000 + r for w in range(3) for r in range(15))


@pytest.mark.slow
def test_cluster_workers_never_lose_increments(tmp_path: Path) -> None:
    import distributed
    with distributed.LocalCluster(n_workers=2, threads_per_worker=2, processes=True,
                                  dashboard_address=None) as cluster, \
            distributed.Client(cluster) as client:
        z = chunkflow.zeros(SHAPE, chunks=CHUNKS, dtype="i4", store=str(tmp_path / "d.zarr"),
                            synchronizer=DistributedSynchronizer(client))
        seeds = list(range(200, 208))
        futures = client.map(add_ones, [z] * len(seeds), seeds, [10] * len(seeds), pure=False)
        assert sorted(client.gather(futures)) == seeds
    fresh = chunkflow.open(str(tmp_path / "d.zarr"), mode="r", cache=False)
    np.testing.assert_array_equal(fresh[:], expected_sum(seeds, 10))


def test_dask_store_unaligned_blocks_without_dask_lock(tmp_path: Path) -> None:
    data = np.arange(SHAPE[0] * SHAPE[1], dtype="i4").reshape(SHAPE)
    source = da.from_array(data, chunks=(11, 13))  # blocks never line up with 16x16 chunks
    for attempt in range(3):
        z = chunkflow.zeros(SHAPE, chunks=CHUNKS, dtype="i4", synchronizer="thread",
                            store=str(tmp_path / f"s{attempt}.zarr"))
        with dask.config.set(scheduler="threads", num_workers=8):
            da.store(source, z, lock=False)
        np.testing.assert_array_equal(z[:], data)


def test_lock_timeout_raises_and_writes_nothing(tmp_path: Path) -> None:
    sync = ThreadSynchronizer()
    z = chunkflow.zeros((8, 8), chunks=(4, 4), dtype="i4", store=str(tmp_path / "l.zarr"),
                        synchronizer=sync, lock_timeout=0.2)
    z[:] = 1
    errors: list[BaseException] = []

    def writer() -> None:
        try:
            z[2:6, 2:6] = 9  # touches all four chunks
        except LockTimeoutError as err:
            errors.append(err)

    with sync.lock("c/1/1"):  # held by someone else
        thread = threading.Thread(target=writer)
        thread.start()
        thread.join(timeout=10)
    assert len(errors) == 1 and "c/1/1" in str(errors[0])
    np.testing.assert_array_equal(chunkflow.open(str(tmp_path / "l.zarr"), cache=False)[:], 1)


def test_group_attribute_lock_timeout_raises_and_changes_nothing(tmp_path: Path) -> None:
    sync = ThreadSynchronizer()
    root = chunkflow.group(str(tmp_path / "g.zarr"), synchronizer=sync, lock_timeout=0.2,
                           attributes={"a": 1})
    member = root.zeros("z", shape=(4,), chunks=(2,), dtype="i4")
    assert member.options.lock_timeout == 0.2 and member.options.synchronizer is sync
    errors: list[BaseException] = []

    def update() -> None:
        try:
            root.attrs["a"] = 2
        except LockTimeoutError as err:
            errors.append(err)

    with sync.lock("zarr.json"):  # the group's metadata lock, held by someone else
        thread = threading.Thread(target=update)
        thread.start()
        thread.join(timeout=10)
    assert len(errors) == 1 and "zarr.json" in str(errors[0])
    assert dict(chunkflow.open_group(str(tmp_path / "g.zarr"), mode="r").attrs) == {"a": 1}


def test_attributes_from_threads_all_land(tmp_path: Path) -> None:
    z = chunkflow.zeros(4, store=str(tmp_path / "attrs.zarr"), synchronizer="thread")
    threads = [threading.Thread(target=lambda i=i: z.attrs.update({f"k{i}": i}))
               for i in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert dict(chunkflow.open(str(tmp_path / "attrs.zarr")).attrs) == {f"k{i}": i
                                                                       for i in range(8)}
