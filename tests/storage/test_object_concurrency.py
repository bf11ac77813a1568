"""Object stores: how many requests chunkflow makes, how many it keeps in flight, and
what it holds while they are in flight.

Requests are counted where they arrive: at a :class:`~chunkflow.testing.FaultProxy`
in front of a real moto S3 server, or in front of a folder served over HTTP on
127.0.0.1, and so are the requests it holds at once (its ``most_in_flight``); no test
measures time.
"""

from __future__ import annotations

import threading
import time
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import dask.config
import numpy as np
import pytest

import chunkflow
from chunkflow import config
from chunkflow.engine.pool import batch_chunks
from chunkflow.storage import FsspecStore, MemoryStore, Store
from chunkflow.testing import CountingStore
from chunkflow.testing.proxy import FaultProxy

BUCKET = "chunkflow-test"


@pytest.fixture
def s3_proxy(s3_server: dict[str, Any]) -> Iterator[tuple[FaultProxy, dict[str, Any]]]:
    """The test moto server behind a counting proxy; the options that go through it."""
    with FaultProxy(str(s3_server["endpoint_url"])) as proxy:
        yield proxy, {**s3_server, "endpoint_url": proxy.url}


def _s3_array(options: dict[str, Any], chunks: int = 8) -> tuple[chunkflow.Array, np.ndarray]:
    """A new 64x(8*chunks) uint8 array on S3 in chunks of 8x8... with every chunk
    stored: ``chunks**2`` of them."""
    data = np.arange(8 * chunks * 8 * chunks, dtype="u2").reshape(8 * chunks, 8 * chunks) + 1
    url = f"s3://{BUCKET}/{uuid.uuid4().hex}/a.zarr"
    z = chunkflow.create_array(url, shape=data.shape, chunks=(8, 8), dtype="u2",
                               storage_options=options, cache=False)
    z[:] = data
    return z, data


# ------------------------------------------------------------------ which stores wait


def test_object_stores_and_http_are_latency_bound(s3_server: dict[str, Any],
                                                  tmp_path: Path) -> None:
    assert FsspecStore(f"s3://{BUCKET}/x", storage_options=s3_server).latency_bound
    assert FsspecStore("http://127.0.0.1:1/x", read_only=True).latency_bound
    assert not FsspecStore("memory://latency/x").latency_bound
    assert not FsspecStore(f"file://{tmp_path}").latency_bound
    assert not MemoryStore().latency_bound


def test_s3_connection_pool_follows_the_inflight_setting(s3_server: dict[str, Any]) -> None:
    with config.set({"chunkflow.io.inflight-requests": 48}):
        store = FsspecStore(f"s3://{BUCKET}/x", storage_options=s3_server)
    assert store.fs.config_kwargs["max_pool_connections"] == 48
    assert "config_kwargs" not in store.storage_options  # pickles as the caller gave it
    chosen = {**s3_server, "config_kwargs": {"max_pool_connections": 5}}
    chosen_kwargs = FsspecStore(f"s3://{BUCKET}/y", storage_options=chosen).fs.config_kwargs
    assert chosen_kwargs["max_pool_connections"] == 5  # (retries: see test_retries.py)


# ------------------------------------------------------------------ requests made


@pytest.mark.s3
def test_a_full_read_on_s3_makes_one_get_per_chunk_and_nothing_else(
        s3_proxy: tuple[FaultProxy, dict[str, Any]]) -> None:
    proxy, options = s3_proxy
    z, data = _s3_array(options)
    for read in (lambda: z[:], lambda: chunkflow.to_dask(z).compute()):
        proxy.reset()
        np.testing.assert_array_equal(read(), data)
        # No HEAD per chunk (s3fs asks for the size of each object it reads whole, to
        # split large ones, unless told max_concurrency=1), no listing.
        assert dict(proxy.requests) == {"GET": 64}


@pytest.mark.slow
@pytest.mark.s3
def test_a_full_write_on_s3_makes_one_put_per_chunk(
        s3_proxy: tuple[FaultProxy, dict[str, Any]]) -> None:
    proxy, options = s3_proxy
    z, data = _s3_array(options)
    proxy.reset()
    z[:] = data[::-1]
    assert dict(proxy.requests) == {"PUT": 64}
    np.testing.assert_array_equal(z[:], data[::-1])


@pytest.mark.s3
def test_a_cached_read_on_s3_makes_no_request_per_chunk_beyond_its_get(
        s3_proxy: tuple[FaultProxy, dict[str, Any]]) -> None:
    proxy, options = s3_proxy
    z, data = _s3_array(options)
    cached = chunkflow.open_array(z.store, path=z.path, mode="r",
                                  cache=chunkflow.ChunkCache(2**24))
    proxy.reset()
    np.testing.assert_array_equal(cached[:], data)  # get_many_versioned: batched too
    assert dict(proxy.requests) == {"GET": 64}


# ------------------------------------------------------------------ in flight


@pytest.mark.slow
def test_reads_over_http_keep_many_requests_in_flight(
        http_folder: tuple[FaultProxy, Path]) -> None:
    proxy, folder = http_folder
    data = np.arange(64 * 64, dtype="u2").reshape(64, 64) + 1
    chunkflow.create_array(str(folder / "a.zarr"), shape=data.shape, chunks=(8, 8),
                           dtype="u2")[:] = data
    z = chunkflow.open_array(f"{proxy.url}/a.zarr", mode="r", cache=False)
    proxy.delay = ROUND_TRIP
    for read in (lambda: z[:], lambda: chunkflow.to_dask(z).compute()):
        # One request at a time would keep 1 in flight; one per core (one chunk per
        # dask task, as before) 2.
        assert _most_in_flight(proxy, read, data) >= 16


#: The proxy's delay per request in the in-flight tests: long enough that requests sent
#: together overlap there however loaded the machine is.
ROUND_TRIP = 0.5


def _most_in_flight(proxy: FaultProxy, read: Callable[[], np.ndarray], data: np.ndarray) -> int:
    """The most requests ``read()`` (of the 64 chunks of ``data``) kept in flight at once."""
    proxy.reset()
    np.testing.assert_array_equal(read(), data)
    assert proxy.requests["GET"] == 64
    return proxy.most_in_flight


class _Watched(CountingStore):
    """A latency-bound store in memory that records the batches it is asked for."""

    latency_bound = True  # type: ignore[assignment]

    def __init__(self, inner: Store) -> None:
        super().__init__(inner)
        self.batches: list[int] = []
        self.active = 0
        self.most_active = 0
        self._watch = threading.Lock()

    def _get_many(self, keys: list[str]) -> dict[str, bytes]:
        with self._watch:
            self.batches.append(len(keys))
            self.active += len(keys)
            self.most_active = max(self.most_active, self.active)
        try:
            time.sleep(0.01)  # let the other threads' calls overlap this one
            return super()._get_many(keys)
        finally:
            with self._watch:
                self.active -= len(keys)


def test_fetched_chunks_stay_within_the_inflight_budget() -> None:
    store = _Watched(MemoryStore())
    chunk_bytes = 32 * 32 * 2
    z = chunkflow.create_array(store, shape=(512, 512), chunks=(32, 32), dtype="u2",
                               cache=False)
    z[:] = 7
    budget = 8 * chunk_bytes
    settings = {"chunkflow.io.inflight-bytes": budget, "chunkflow.io.inflight-requests": 64,
                "chunkflow.io.threads": 2}
    with config.set(settings):
        store.batches.clear()
        assert (z[:] == 7).all()
        assert (chunkflow.to_dask(z).compute(scheduler="threads", num_workers=2) == 7).all()
    # 256 chunks, in calls of at most 4 (8 chunks' worth over 2 threads), never more
    # than 8 chunks' worth asked for at once.
    assert sum(store.batches) == 2 * 256 and max(store.batches) == 4
    assert store.most_active * chunk_bytes <= budget


def test_requests_in_flight_follow_the_request_limit() -> None:
    with config.set({"chunkflow.io.inflight-requests": 16,
                     "chunkflow.io.inflight-bytes": "1 GiB"}):
        assert batch_chunks(1024, threads=2) == 8
        assert batch_chunks(2**30, threads=2) == 1  # a chunk above the budget still goes


def test_default_blocks_group_chunks_on_latency_bound_stores() -> None:
    local = chunkflow.create_array(MemoryStore(), shape=(4096, 4096), chunks=(512, 512),
                                   dtype="u2", cache=False)
    remote = chunkflow.create_array(_Watched(MemoryStore()), shape=(4096, 4096),
                                    chunks=(512, 512), dtype="u2", cache=False)
    settings = {"chunkflow.io.inflight-bytes": "128 MiB", "chunkflow.io.inflight-requests": 64}
    with config.set(settings), dask.config.set(num_workers=2):
        assert chunkflow.to_dask(local).numblocks == (8, 8)  # one chunk per block
        # 64 chunks: grouped toward dask's array.chunk-size (128 MiB) until only
        # 2 blocks per thread are left: 4 blocks of 16.
        assert chunkflow.to_dask(remote).numblocks == (2, 2)
        # 8 GiB: blocks of 128 MiB (256 chunks), each task streaming one share of the
        # in-flight budget at a time.
        large = chunkflow.create_array(_Watched(MemoryStore()), shape=(2**16, 2**16),
                                       chunks=(512, 512), dtype="u2", cache=False)
        assert chunkflow.to_dask(large).numblocks == (8, 8)


# ------------------------------------------------------------------ sharded windows


def _sharded_on_s3(options: dict[str, Any], values: np.ndarray,
                   store: Store | None = None) -> chunkflow.Array:
    """``values`` in one 64x64 shard of 8x8 inner chunks, on S3."""
    where = store if store is not None else FsspecStore(
        f"s3://{BUCKET}/{uuid.uuid4().hex}", storage_options=options)
    z = chunkflow.create_array(where, shape=values.shape, chunks=(8, 8), shards=(64, 64),
                               dtype=values.dtype, cache=chunkflow.ChunkCache(2**24))
    z[...] = values
    return z


@pytest.mark.s3
def test_a_window_of_a_shard_on_s3_costs_two_round_trips_once_its_index_is_cached(
        s3_proxy: tuple[FaultProxy, dict[str, Any]]) -> None:
    proxy, options = s3_proxy
    values = np.arange(64 * 64, dtype="i4").reshape(64, 64)
    z = _sharded_on_s3(options, values)
    proxy.reset()
    # Two inner chunks side by side (one request), in a shard whose index is unknown:
    # open (HEAD), the index (GET), the chunks (GET), the proof nothing changed (HEAD).
    np.testing.assert_array_equal(z[3:5, 6:10], values[3:5, 6:10])
    assert dict(proxy.requests) == {"HEAD": 2, "GET": 2}
    proxy.reset()
    # Another window of the same shard: the index of its version is cached, so the
    # chunks are read at once (GET), then that version is proven current (HEAD).
    np.testing.assert_array_equal(z[40:42, 20:22], values[40:42, 20:22])
    assert dict(proxy.requests) == {"HEAD": 1, "GET": 1}
    # Replaced behind the cache's back: the expected version fails its proof, and the
    # window is read again from the new shard (open, index, chunks, proof).
    new = values * 7
    other = chunkflow.create_array(MemoryStore(), shape=new.shape, chunks=(8, 8),
                                   shards=(64, 64), dtype="i4")
    other[...] = new
    z.store.fs.pipe_file(z.store._path("c/0/0"), other.store["c/0/0"])
    proxy.reset()
    np.testing.assert_array_equal(z[50:52, 20:22], new[50:52, 20:22])
    assert dict(proxy.requests) == {"HEAD": 3, "GET": 3}


class _ReplacingStore(FsspecStore):
    """An S3 store on which another writer replaces a shard (once, with
    ``replacement``) right after a reader's first, unverified read: between a shard's
    index and its inner chunks."""

    replacement: bytes | None = None

    def _open_ranges(self, key: str) -> Any:
        reader = super()._open_ranges(key)
        first_read = reader._read_unverified

        def then_replace(ranges: list[tuple[int, int]]) -> list[bytes]:
            parts = first_read(ranges)
            if self.replacement is not None:
                data, self.replacement = self.replacement, None
                self.fs.pipe_file(self._path(key), data)  # behind chunkflow's back
            return parts

        reader._read_unverified = then_replace
        return reader


@pytest.mark.s3
def test_a_shard_replaced_between_its_index_and_its_chunks_is_read_again_never_mixed(
        s3_server: dict[str, Any]) -> None:
    old = np.arange(64 * 64, dtype="i4").reshape(64, 64)
    new = old[::-1, ::-1] * 3
    other = chunkflow.create_array(MemoryStore(), shape=new.shape, chunks=(8, 8),
                                   shards=(64, 64), dtype="i4")
    other[...] = new
    other[0:8, 0:8] = -1  # a different layout: every offset of the index moves
    store = _ReplacingStore(f"s3://{BUCKET}/{uuid.uuid4().hex}", storage_options=s3_server)
    z = _sharded_on_s3(s3_server, old, store)
    z = chunkflow.open_array(store, mode="r", cache=False)
    store.replacement = other.store["c/0/0"]
    np.testing.assert_array_equal(z[10:20, 30:40], new[10:20, 30:40])
    assert store.replacement is None  # it was replaced mid-read


@pytest.mark.s3
@pytest.mark.parametrize(("backend", "requests"), [("fsspec", {"GET": 64}),
                                                   ("obstore", {"HEAD": 64})])
def test_rechecking_chunks_cached_with_or_without_a_version(
        s3_proxy: tuple[FaultProxy, dict[str, Any]], backend: str,
        requests: dict[str, int]) -> None:
    proxy, options = s3_proxy
    with chunkflow.config.set({"chunkflow.io.object-backend": backend}):
        z, data = _s3_array(options)
    cached = chunkflow.open_array(z.store, path=z.path, mode="r", recheck_cached_data=True,
                                  cache=chunkflow.ChunkCache(2**24))
    np.testing.assert_array_equal(cached[:], data)
    proxy.reset()
    np.testing.assert_array_equal(cached[:], data)
    # s3fs reads whole chunks with no version, and None proves nothing: the chunks are
    # read again, and no HEAD asks for versions. obstore's GETs bring their ETags: one
    # HEAD per chunk proves the cached copies current, and nothing is read again.
    assert dict(proxy.requests) == requests


def test_a_zarr_python_store_over_http_is_latency_bound_too(
        http_folder: tuple[FaultProxy, Path]) -> None:
    import zarr

    proxy, folder = http_folder
    data = np.arange(64 * 64, dtype="u2").reshape(64, 64) + 1
    chunkflow.create_array(str(folder / "a.zarr"), shape=data.shape, chunks=(8, 8),
                           dtype="u2")[:] = data
    remote = zarr.storage.FsspecStore.from_url(f"{proxy.url}/a.zarr", read_only=True)
    z = chunkflow.open_array(remote, mode="r", cache=False)
    assert z.store.latency_bound
    assert not chunkflow.open_array(zarr.storage.LocalStore(str(folder / "a.zarr")),
                                    mode="r").store.latency_bound
    proxy.delay = ROUND_TRIP
    assert _most_in_flight(proxy, lambda: z[:], data) >= 16


def test_xarray_reads_an_http_store_in_blocks_of_many_chunks(
        http_folder: tuple[FaultProxy, Path]) -> None:
    xr = pytest.importorskip("xarray")
    proxy, folder = http_folder
    data = np.arange(64 * 64, dtype="u2").reshape(64, 64)
    xr.Dataset({"img": (("y", "x"), data)}).to_zarr(
        folder / "ds.zarr", encoding={"img": {"chunks": (8, 8)}}, zarr_format=2,
        consolidated=True)
    local = xr.open_dataset(folder / "ds.zarr", engine="chunkflow", chunks={})
    assert local["img"].encoding["preferred_chunks"] == {"y": 8, "x": 8}
    assert local["img"].data.numblocks == (8, 8)  # one block per stored chunk
    with dask.config.set(num_workers=2):
        remote = xr.open_dataset(f"{proxy.url}/ds.zarr", engine="chunkflow", chunks={})
        # One chunk per task would keep one request per thread in flight: the default
        # blocks of to_dask instead (64 chunks: 2 blocks per thread).
        assert remote["img"].data.numblocks == (2, 2)
        assert remote["img"].encoding["chunks"] == (8, 8)  # written back as stored
        proxy.reset()
        np.testing.assert_array_equal(remote["img"].values, data)
    assert proxy.requests["GET"] == 64
