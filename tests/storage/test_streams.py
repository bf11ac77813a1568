"""Streams of values (``Store.stream_many``): each key handed out once, in arrival
order, never more than the window fetched or in flight, and errors that stop it.

The asynchronous stream runs on a real event loop in its own thread (as fsspec's);
the store-level tests read over HTTP from a folder served on 127.0.0.1 behind a
counting :class:`~chunkflow.testing.FaultProxy`.
"""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import chunkflow
import chunkflow.errors
from chunkflow import config
from chunkflow.errors import StoreRequestError
from chunkflow.storage import FsspecStore, MemoryStore
from chunkflow.storage.streams import AsyncKeyStream, AsyncPutStream, BatchKeyStream
from chunkflow.testing.proxy import FaultProxy
from tests.helpers.waiting import wait_until


@pytest.fixture(scope="module")
def loop() -> Iterator[asyncio.AbstractEventLoop]:
    loop = asyncio.new_event_loop()
    thread = threading.Thread(target=loop.run_forever, daemon=True)
    thread.start()
    yield loop
    loop.call_soon_threadsafe(loop.stop)
    thread.join(5)
    loop.close()


class _Fetches:
    """A fetch coroutine that records how many of its calls run at once."""

    def __init__(self, delay: float = 0.005, slow: dict[str, float] | None = None,
                 missing: tuple[str, ...] = (), failing: tuple[str, ...] = ()) -> None:
        self.delay, self.slow = delay, slow or {}
        self.missing, self.failing = missing, failing
        self.running = self.most = self.calls = 0
        self.lock = threading.Lock()

    async def __call__(self, key: str) -> tuple[bytes | None, Any]:
        with self.lock:
            self.calls += 1
            self.running += 1
            self.most = max(self.most, self.running)
        try:
            await asyncio.sleep(self.slow.get(key, self.delay))
            if key in self.failing:
                raise OSError(f"request for {key} failed")
            return (None if key in self.missing else key.encode()), ("v", key)
        finally:
            with self.lock:
                self.running -= 1


KEYS = [f"c/{i}" for i in range(40)]


def _claimed(stream: AsyncKeyStream) -> int:
    """How many values consumers have claimed from ``stream`` (taken or waited for)."""
    return len(KEYS) - stream._remaining


@pytest.mark.parametrize("consumers", [1, 3])
def test_every_key_goes_to_exactly_one_consumer(loop: asyncio.AbstractEventLoop,
                                                consumers: int) -> None:
    fetch = _Fetches(missing=("c/7",))
    with AsyncKeyStream(loop, fetch, KEYS, window=6) as stream, \
            ThreadPoolExecutor(consumers) as pool:
        parts = list(pool.map(lambda _: list(stream.take()), range(consumers)))
    taken = [item for part in parts for item in part]
    assert sorted(key for key, _, _ in taken) == sorted(KEYS)
    assert all(value == (None if key == "c/7" else key.encode()) for key, value, _ in taken)
    assert all(version == ("v", key) for key, _, version in taken)
    assert fetch.calls == len(KEYS)


def test_requests_in_flight_never_exceed_the_window(loop: asyncio.AbstractEventLoop) -> None:
    fetch = _Fetches()
    held: list[int] = []
    with AsyncKeyStream(loop, fetch, KEYS, window=5) as stream:
        for consumed, _ in enumerate(stream.take()):
            time.sleep(0.002)  # a consumer decoding: arrivals wait for it
            with fetch.lock:
                arrived = fetch.calls - fetch.running
                # In flight, arrived and waiting, and the one being decoded.
                held.append(fetch.running + arrived - consumed)
    assert fetch.most == 5  # the window was used...
    assert max(held) <= 5  # ...and never exceeded, counting values not yet consumed


def test_a_freed_slot_is_filled_when_the_next_value_arrives(
        loop: asyncio.AbstractEventLoop) -> None:
    # The consumer frees a slot while most of the window is in flight: it does not
    # wake the loop (which costs a socket write and a GIL hand-over a value); the loop
    # sends the next request when the next value arrives.
    fetch = _Fetches(delay=0.5, slow={"c/0": 0.0, "c/1": 0.0})
    with AsyncKeyStream(loop, fetch, KEYS, window=8) as stream:
        values = stream.take()
        next(values)
        next(values)  # frees the first value's slot, 6 requests still out
        wait_until(lambda: fetch.calls == 9, "the freed slot filled at the next arrival")
        assert fetch.most <= 8


def test_a_consumer_wakes_the_loop_when_the_window_runs_low(
        loop: asyncio.AbstractEventLoop) -> None:
    # Window 1: once the value has arrived, none is in flight; freeing its slot must
    # send the next request at once (no arrival is coming to do it).
    fetch = _Fetches(delay=0.0)
    # The stream closes first on the way out, waking a consumer that is stuck.
    with ThreadPoolExecutor(1) as pool, AsyncKeyStream(loop, fetch, KEYS, window=1) as stream:
        taken = pool.submit(lambda: [key for key, _, _ in stream.take()])
        wait_until(taken.done, "every value taken")  # not a consumer waiting forever
    assert sorted(taken.result()) == sorted(KEYS) and fetch.most == 1


def test_values_come_in_arrival_order_not_key_order(loop: asyncio.AbstractEventLoop) -> None:
    fetch = _Fetches(slow={"c/0": 0.3})
    with AsyncKeyStream(loop, fetch, KEYS[:8], window=8) as stream:
        order = [key for key, _, _ in stream.take()]
    assert order[-1] == "c/0"  # the slow first request held up nothing


def test_an_error_reaches_its_consumer_and_stops_the_rest(
        loop: asyncio.AbstractEventLoop) -> None:
    fetch = _Fetches(delay=2.0, failing=("c/3",), slow={"c/3": 0.0})
    seen: list[str] = []
    with pytest.raises(OSError, match="c/3"):
        with AsyncKeyStream(loop, fetch, KEYS, window=4) as stream:
            for key, _, _ in stream.take():
                seen.append(key)
    wait_until(lambda: fetch.running == 0, "the requests in flight being cancelled")
    assert fetch.calls < len(KEYS)  # and no more were sent


def test_closing_wakes_consumers_waiting_for_an_arrival(
        loop: asyncio.AbstractEventLoop) -> None:
    fetch = _Fetches(delay=5.0)
    stream = AsyncKeyStream(loop, fetch, KEYS, window=4)
    with ThreadPoolExecutor(2) as pool:
        waiting = [pool.submit(lambda: list(stream.take())) for _ in range(2)]
        wait_until(lambda: _claimed(stream) == 2, "both consumers waiting for an arrival")
        stream.close()
        assert [w.result(timeout=5) for w in waiting] == [[], []]


def test_closing_wakes_a_consumer_waiting_with_nothing_in_flight(
        loop: asyncio.AbstractEventLoop) -> None:
    # Window 1: while this thread holds the first value, no request is out, and a
    # second consumer waits for an arrival that only this thread's next step would
    # cause. This thread then fails (closes the stream) instead.
    stream = AsyncKeyStream(loop, _Fetches(), KEYS, window=1)
    held = next(stream.take())
    taken: list[list[Any]] = []
    other = threading.Thread(target=lambda: taken.append(list(stream.take())), daemon=True)
    other.start()
    wait_until(lambda: _claimed(stream) == 2, "the other consumer waiting for an arrival")
    stream.close()
    other.join(5)
    assert not other.is_alive() and taken == [[]]
    assert held[0] == "c/0"


def test_batch_streams_fetch_a_share_of_the_window_per_call() -> None:
    calls: list[list[str]] = []

    def fetch(keys: list[str]) -> list[tuple[str, bytes | None, Any]]:
        calls.append(keys)
        return [(k, k.encode(), None) for k in keys]

    with BatchKeyStream(fetch, KEYS, batch=8) as stream:
        assert len(list(stream.take())) == len(KEYS)
    assert [len(c) for c in calls] == [8] * 5
    store = MemoryStore()
    store.set_many({k: k.encode() for k in KEYS})
    with store.stream_many(KEYS + ["missing"], window=8, lanes=2) as stream:
        got = {key: value for key, value, _ in stream.take()}
    assert got == {**{k: k.encode() for k in KEYS}, "missing": None}


# ------------------------------------------------------------------ over HTTP


def test_an_http_store_streams_on_fsspecs_event_loop(
        http_folder: tuple[FaultProxy, Path]) -> None:
    proxy, folder = http_folder
    for name in KEYS[:10]:
        (folder / name).parent.mkdir(exist_ok=True)
        (folder / name).write_bytes(name.encode() * 3)
    store = FsspecStore(proxy.url, read_only=True)
    with store.stream_many(KEYS[:10] + ["c/nothing"], window=4) as stream:
        assert isinstance(stream, AsyncKeyStream)
        got = {key: value for key, value, _ in stream.take()}
    assert got == {**{k: k.encode() * 3 for k in KEYS[:10]}, "c/nothing": None}
    assert proxy.requests["GET"] == 11  # one request per key, nothing else


def test_a_failed_request_names_its_key(http_folder: tuple[FaultProxy, Path]) -> None:
    proxy, folder = http_folder
    data = np.arange(64 * 64, dtype="u2").reshape(64, 64)
    chunkflow.create_array(str(folder / "a.zarr"), shape=data.shape, chunks=(8, 8),
                           dtype="u2")[:] = data
    z = chunkflow.open_array(f"{proxy.url}/a.zarr", mode="r", cache=False)
    proxy.fail_share, proxy.faults = 1.0, ("500",)
    named = r"could not read key 'c/\d+/\d+' of (Fsspec|Obstore)Store\('http://.*/a\.zarr'"
    with pytest.raises(StoreRequestError, match=named), \
            config.set({"chunkflow.io.inflight-requests": 4}):
        z[:]
    proxy.fail_share = 0.0
    np.testing.assert_array_equal(z[:], data)


# ------------------------------------------------------------------ put streams


class _Writes:
    """A write coroutine that records how many of its calls run at once."""

    def __init__(self, delay: float = 0.005, failing: tuple[str, ...] = ()) -> None:
        self.delay, self.failing = delay, failing
        self.stored: dict[str, bytes] = {}
        self.running = self.most = self.calls = 0
        self.lock = threading.Lock()

    async def __call__(self, key: str, value: bytes | memoryview) -> Any:
        with self.lock:
            self.calls += 1
            self.running += 1
            self.most = max(self.most, self.running)
        try:
            await asyncio.sleep(self.delay)
            if key in self.failing:
                raise OSError(f"write of {key} failed")
            self.stored[key] = bytes(value)
            return ("v", key)
        finally:
            with self.lock:
                self.running -= 1


def test_puts_from_several_threads_keep_at_most_the_window_in_flight(
        loop: asyncio.AbstractEventLoop) -> None:
    write, announced = _Writes(), []
    with AsyncPutStream(loop, write, window=4, announce=announced.extend) as sink, \
            ThreadPoolExecutor(2) as pool:
        list(pool.map(lambda key: sink.put(key, key.encode()), KEYS))
    assert write.stored == {key: key.encode() for key in KEYS}
    assert write.most == 4  # the window was used, never exceeded
    assert sorted(announced) == sorted(KEYS)  # told to the caches once, after landing
    assert sink.versions == {key: ("v", key) for key in KEYS}


def test_a_failed_put_is_raised_on_leaving_and_the_keys_are_still_announced(
        loop: asyncio.AbstractEventLoop) -> None:
    write, announced = _Writes(failing=("c/2",)), []
    with pytest.raises(OSError, match="c/2"):
        with AsyncPutStream(loop, write, window=2, announce=announced.extend) as sink:
            for key in KEYS[:3]:
                sink.put(key, b"x")
    assert sorted(announced) == KEYS[:3]  # part of the change may have landed
    write = _Writes(failing=("c/0",))
    with pytest.raises(OSError, match="c/0"):  # once one write failed, puts fail fast
        with AsyncPutStream(loop, write, window=1, announce=announced.extend) as sink:
            for key in KEYS:
                sink.put(key, b"x")
    # Window 1: "c/1" waited for the slot of "c/0", which failed first; nothing more went.
    assert write.calls == 1 and write.stored == {}


def test_a_writer_that_fails_stops_the_puts_not_yet_done(
        loop: asyncio.AbstractEventLoop) -> None:
    write = _Writes(delay=2.0)
    with pytest.raises(ValueError, match="encoder"):
        with AsyncPutStream(loop, write, window=8, announce=lambda keys: None) as sink:
            sink.put("c/0", b"x")
            raise ValueError("the encoder failed")
    wait_until(lambda: write.running == 0, "the put in flight being cancelled")
    assert write.stored == {}


def test_a_put_stream_checks_what_is_put(tmp_path: Path) -> None:
    store = MemoryStore()
    with store.put_stream(window=4) as sink:
        sink.put("a/0", np.arange(3, dtype="u1"))  # any buffer
        with pytest.raises(TypeError):
            sink.put("a/1", 3)
        with pytest.raises(ValueError):
            sink.put("../escape", b"x")
    assert dict(store.items()) == {"a/0": b"\x00\x01\x02"}
    read_only = MemoryStore(read_only=True)
    with pytest.raises(chunkflow.errors.ReadOnlyError), read_only.put_stream(window=4) as sink:
        sink.put("a/0", b"x")
    assert list(read_only) == []


@pytest.mark.s3
def test_a_streamed_write_on_s3_is_seen_by_every_cache(s3_server: dict[str, Any]) -> None:
    url = f"s3://chunkflow-test/{time.monotonic_ns()}/a.zarr"
    data = np.arange(64 * 64, dtype="u2").reshape(64, 64)
    z = chunkflow.create_array(url, shape=data.shape, chunks=(8, 8), dtype="u2",
                               storage_options=s3_server)
    z[:] = data
    reader = chunkflow.open_array(url, mode="r", storage_options=s3_server,
                                  cache=chunkflow.ChunkCache(2**24))
    np.testing.assert_array_equal(reader[:8, :16], data[:8, :16])  # cached now
    writer = chunkflow.open_array(url, mode="r+", storage_options=s3_server)
    assert isinstance(writer.store.put_stream(window=2)._inner, AsyncPutStream)
    writer[:] = data * 2
    writer[3:5, 3:70 - 7] = 7  # partial chunks: read, modified, streamed back
    expected = data * 2
    expected[3:5, 3:63] = 7
    np.testing.assert_array_equal(reader[:], expected)
