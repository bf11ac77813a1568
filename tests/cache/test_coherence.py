"""Cache coherence: no handle, alias, cache option or process ever reads or writes from
an outdated cached chunk (each reproduction reported by users is one test).

Subprocesses stand for "another process": they write with chunkflow in a fresh
interpreter while this one keeps its caches.
"""

from __future__ import annotations

import os
import subprocess
import sys
import threading
from pathlib import Path

import numpy as np
import pytest

import chunkflow
from chunkflow.cache import ChunkCache
from chunkflow.storage import LocalStore, MemoryStore
from chunkflow.storage import local as local_module

CACHE_OPTIONS = {"shared": None, "off": False, "private": "private"}


def _cache_option(name: str) -> object:
    option = CACHE_OPTIONS[name]
    return ChunkCache(1 << 22) if option == "private" else option


def _run(code: str) -> None:
    """Run ``code`` in another Python process that imports this checkout's chunkflow."""
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(sys.path))
    subprocess.run([sys.executable, "-c", code], check=True, env=env, timeout=60)


@pytest.fixture(params=["settling", "settled"])
def file_versions(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str:
    """Both ways a local file's version can go: just written (no version yet, so any
    cached copy must be re-read) and settled (versions compared by inode and times)."""
    if request.param == "settled":
        monkeypatch.setattr(local_module, "SETTLE_NS", -1)
    return str(request.param)


# -- aliases -------------------------------------------------------------------------


@pytest.mark.parametrize("zarr_format", [2, 3])
def test_aliased_handles_share_one_cache_entry(tmp_path: Path, zarr_format: int) -> None:
    root = chunkflow.group(str(tmp_path / "r.zarr"), zarr_format=zarr_format)
    through_group = root.create_array("g/x", shape=(100,), chunks=(100,), dtype="i4")
    direct = chunkflow.open(str(tmp_path / "r.zarr" / "g" / "x"), mode="r+")
    assert through_group._io.keys((0,))[1] == direct._io.keys((0,))[1]
    assert through_group._io.keys((0,))[0] != direct._io.keys((0,))[0]  # store keys differ


@pytest.mark.parametrize("zarr_format", [2, 3])
def test_a_partial_write_through_an_alias_never_erases_the_other_handle(
    tmp_path: Path, zarr_format: int, file_versions: str
) -> None:
    root = chunkflow.group(str(tmp_path / "r.zarr"), zarr_format=zarr_format)
    a = root.create_array("g/x", shape=(100,), chunks=(100,), dtype="i4")
    b = chunkflow.open(str(tmp_path / "r.zarr" / "g" / "x"), mode="r+")
    a[0:50] = 1
    assert a[:].sum() == 50  # a's chunk is cached
    b[50:100] = 2
    a[0:10] = 3  # partial: must start from the chunk with b's values
    expected = np.array([3] * 10 + [1] * 40 + [2] * 50, dtype="i4")
    for handle in (a, b, chunkflow.open(str(tmp_path / "r.zarr" / "g" / "x"), cache=False)):
        np.testing.assert_array_equal(handle[:], expected)


@pytest.mark.parametrize("writer_cache", sorted(CACHE_OPTIONS))
@pytest.mark.parametrize("reader_cache", sorted(CACHE_OPTIONS))
@pytest.mark.parametrize("alias", [False, True])
def test_every_read_after_a_write_in_this_process_sees_it(
    tmp_path: Path, writer_cache: str, reader_cache: str, alias: bool
) -> None:
    path = tmp_path / "a.zarr"
    root = chunkflow.group(str(path))
    reader = root.create_array("x", shape=(6, 6), chunks=(4, 4), dtype="i2",
                               cache=_cache_option(reader_cache))
    reader[:] = 1
    reader[:]  # cached as ones, wherever the reader caches
    writer_path = path / "x" if alias else path
    writer = chunkflow.open(str(writer_path), path=None if alias else "x", mode="r+",
                            cache=_cache_option(writer_cache))
    writer[1:5, 2:3] = 7  # partial chunks, four of them
    expected = np.ones((6, 6), dtype="i2")
    expected[1:5, 2:3] = 7
    np.testing.assert_array_equal(reader[:], expected)
    reader[0, 0] = 5  # and the reader's partial write keeps the writer's values
    expected[0, 0] = 5
    np.testing.assert_array_equal(writer[:], expected)


def test_handles_over_one_dict_share_their_identity_and_invalidations() -> None:
    import gc

    from chunkflow.storage import MappingStore

    backing: dict[str, bytes] = {}
    cache = ChunkCache(1 << 20)
    cached = chunkflow.zeros((8, 8), chunks=(4, 4), dtype="i4", store=backing, cache=cache)
    cached[...] = 1
    assert cached[0, 0] == 1  # cached
    writer = chunkflow.open_array(backing, mode="r+", cache=False)  # another wrapper
    assert writer.store.identity == cached.store.identity
    writer[0:4, 0:4] = 2
    assert cached[0, 0] == 2  # never the stale copy
    identity = cached.store.identity
    del cached, writer
    gc.collect()
    # Once no store wraps a dict, its id() may name another dict: a new identity.
    assert MappingStore({}).identity != identity


def test_a_raw_store_write_reaches_cached_handles(tmp_path: Path) -> None:
    z = chunkflow.zeros((8,), chunks=(4,), dtype="u1", store=str(tmp_path / "raw.zarr"))
    z[:] = 1
    z[:]
    donor = chunkflow.full((8,), 9, chunks=(4,), dtype="u1", store=MemoryStore(),
                           write_empty_chunks=True)
    donor[:] = 9
    z.store["c/1"] = donor.store["c/1"]  # bytes written behind the array's back
    np.testing.assert_array_equal(z[:], [1, 1, 1, 1, 9, 9, 9, 9])


def test_mode_w_replacing_an_array_never_serves_its_old_chunks(tmp_path: Path) -> None:
    path = str(tmp_path / "w.zarr")
    old = chunkflow.open(path, mode="w", shape=(6,), chunks=(3,), dtype="i4")
    old[:] = [1, 2, 3, 4, 5, 6]
    old[:]  # the int chunks are cached
    new = chunkflow.open(path, mode="w", shape=(6,), chunks=(3,), dtype="f8", fill_value=0.5)
    again = chunkflow.open(path)
    assert again.dtype == np.dtype("f8")
    np.testing.assert_array_equal(again[:], np.full(6, 0.5))
    new[0:2] = 2.5  # partial: must start from the fill value, not the old ints
    np.testing.assert_array_equal(chunkflow.open(path)[:], [2.5, 2.5, 0.5, 0.5, 0.5, 0.5])


def test_deleting_an_array_through_its_group_drops_its_chunks(tmp_path: Path) -> None:
    root = chunkflow.group(str(tmp_path / "d.zarr"))
    z = root.create_array("x", shape=(4,), chunks=(4,), dtype="i4")
    z[:] = 3
    z[:]
    del root["x"]
    recreated = root.create_array("x", shape=(4,), chunks=(4,), dtype="i4")
    np.testing.assert_array_equal(recreated[:], [0, 0, 0, 0])


# -- other processes -------------------------------------------------------------------


@pytest.mark.slow
def test_writes_of_processes_taking_turns_are_never_erased(
    tmp_path: Path, file_versions: str
) -> None:
    # Process 1 writes z[0:50], process 2 writes z[50:100] and exits, then
    # process 1 writes z[0:10]; process 2's values must survive. Three rounds, so the
    # file's inode numbers are reused along the way.
    path = str(tmp_path / "turns.zarr")
    z = chunkflow.zeros((100,), chunks=(100,), dtype="i4", store=path)
    expected = np.zeros(100, dtype="i4")
    for round_ in range(1, 4):
        z[0:50] = round_
        expected[0:50] = round_
        _run(f"import chunkflow; chunkflow.open({path!r}, mode='r+')[50:100] = {10 * round_}")
        expected[50:100] = 10 * round_
        z[0:10] = 100 + round_
        expected[0:10] = 100 + round_
        np.testing.assert_array_equal(chunkflow.open(path, cache=False)[:], expected)
    np.testing.assert_array_equal(z[:], expected)


def test_a_handle_opened_after_another_process_wrote_sees_the_write(
    tmp_path: Path, file_versions: str
) -> None:
    path = str(tmp_path / "fresh.zarr")
    z = chunkflow.zeros((4, 4), chunks=(2, 2), dtype="f4", store=path)
    z[:] = 1.0
    z[:]
    z[:]  # every chunk read wholly twice: in the process-wide cache (scan resistant)
    stale_ok = chunkflow.open(path, recheck_cached_data=False)  # opened before the write
    always = chunkflow.open(path, recheck_cached_data=True)
    _run(f"import chunkflow; chunkflow.open({path!r}, mode='r+')[:] = 5.0")
    # The documented trade-offs: a handle that never rechecks, and a handle opened
    # before the write under "open", serve what this process cached...
    np.testing.assert_array_equal(stale_ok[:], 1.0)
    np.testing.assert_array_equal(z[:], 1.0)
    stale_before = chunkflow.cache_info().stale
    np.testing.assert_array_equal(chunkflow.open(path)[:], 5.0)  # the default: "open"
    assert chunkflow.cache_info().stale - stale_before == 4
    np.testing.assert_array_equal(always[:], 5.0)
    np.testing.assert_array_equal(chunkflow.open(path, recheck_cached_data=0.0)[:], 5.0)
    # ...until a check found the cached chunks outdated and replaced them.
    np.testing.assert_array_equal(z[:], 5.0)


def test_unchanged_chunks_are_rechecked_once_per_handle_without_rereading(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(local_module, "SETTLE_NS", -1)
    path = str(tmp_path / "same.zarr")
    cache = ChunkCache(1 << 20)
    z = chunkflow.zeros((4, 4), chunks=(2, 2), dtype="u2", store=path, cache=cache)
    z[:] = 3
    z[:]
    handle = chunkflow.open(path, cache=cache)
    before = cache.stats
    np.testing.assert_array_equal(handle[:], 3)
    np.testing.assert_array_equal(handle[:], 3)
    after = cache.stats
    assert after.rechecks - before.rechecks == 4  # once, on the first read
    assert after.stale == before.stale and after.misses == before.misses


# -- races inside one process -------------------------------------------------------------


class _PausingStore(MemoryStore):
    """A store whose next versioned fetch waits, holding the bytes it read, until told."""

    def __init__(self) -> None:
        super().__init__()
        self.fetched = threading.Event()
        self.resume = threading.Event()
        self.armed = False

    def get_many_versioned(self, keys):  # type: ignore[no-untyped-def]
        found = super().get_many_versioned(keys)
        if self.armed:
            self.armed = False
            self.fetched.set()
            self.resume.wait(10)
        return found


def test_a_fetch_overtaken_by_a_write_is_not_cached() -> None:
    store = _PausingStore()
    cache = ChunkCache(1 << 20)
    z = chunkflow.zeros((4,), chunks=(4,), dtype="i4", store=store, cache=cache)
    z[:] = 1
    cache.clear()
    store.armed = True
    result: list[np.ndarray] = []
    reader = threading.Thread(target=lambda: result.append(z[:]))
    reader.start()
    assert store.fetched.wait(10)  # the reader holds the old bytes
    chunkflow.Array(store, cache=False)[:] = 2  # a write lands meanwhile
    store.resume.set()
    reader.join()
    np.testing.assert_array_equal(result[0], 1)  # that read overlapped the write
    assert cache.stats.refused == 1
    np.testing.assert_array_equal(z[:], 2)  # but nothing outdated was kept


def test_a_writer_keeps_its_chunk_only_if_no_other_write_followed() -> None:
    cache = ChunkCache(1 << 10)
    ticket = cache.ticket()
    cache.invalidate(["s/a/0"])  # the writer's own store change
    cache.put("s/a/0", np.zeros(2), written=True, ticket=ticket)
    assert "s/a/0" in cache
    ticket = cache.ticket()
    cache.invalidate(["s/a/0"])
    cache.invalidate(["s/a/0"])  # someone else's change too: which landed last is unknown
    cache.put("s/a/0", np.ones(2), written=True, ticket=ticket)
    assert "s/a/0" not in cache


def test_threads_through_every_kind_of_handle_end_coherent(tmp_path: Path) -> None:
    path = tmp_path / "t.zarr"
    root = chunkflow.group(str(path))
    root.create_array("x", shape=(64,), chunks=(8,), dtype="i4")
    handles = [
        root["x"],
        chunkflow.open(str(path / "x"), mode="r+"),
        chunkflow.open(str(path / "x"), mode="r+", cache=False),
        chunkflow.open(str(path / "x"), mode="r+", cache=ChunkCache(1 << 20)),
    ]
    rng = np.random.default_rng(1)
    plans = [[(int(c), int(v)) for c, v in zip(rng.integers(0, 8, 60), rng.integers(1, 99, 60))]
             for _ in handles]

    def work(handle: chunkflow.Array, plan: list[tuple[int, int]]) -> None:
        for chunk, value in plan:
            handle[chunk * 8:(chunk + 1) * 8] = value  # whole chunks: no lock needed
            handle[:]

    threads = [threading.Thread(target=work, args=pair) for pair in zip(handles, plans)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    truth = LocalStore(path)
    stored = chunkflow.Array(truth, "x", cache=False)[:]
    for handle in handles:
        np.testing.assert_array_equal(handle[:], stored)


def test_recheck_policy_is_validated() -> None:
    with pytest.raises(ValueError, match="recheck_cached_data"):
        chunkflow.zeros(3, recheck_cached_data="sometimes")
    with pytest.raises(ValueError, match="recheck_cached_data"):
        chunkflow.zeros(3, recheck_cached_data=-1)
    assert chunkflow.zeros(3, recheck_cached_data="2.5").options.resolve_recheck() == 2.5


@pytest.mark.slow
def test_store_from_worker_processes_leaves_no_stale_chunks_in_this_process(
    tmp_path: Path,
) -> None:
    import dask.array as da

    path = str(tmp_path / "job.zarr")
    z = chunkflow.zeros((8, 8), chunks=(4, 4), dtype="i4", store=path)
    z[:] = 1
    z[:]  # cached here, before the job
    chunkflow.store(da.full((8, 8), 7, dtype="i4", chunks=4), z, scheduler="processes")
    np.testing.assert_array_equal(z[:], 7)
