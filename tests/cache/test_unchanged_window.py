"""A window read again from a cache that nothing touched since: served from the window
assembled last time, with exactly the values, counters and recency of a lookup.

The oracle of the state machine below is the same sequence of steps on a twin array
whose reads never keep a window (``UNCHANGED_MAX_BYTES`` set below zero around them):
values are compared with numpy, and the two caches' counters and recency orders with
each other after every step.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import numpy as np
import pytest
from hypothesis import settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, initialize, invariant, rule

import chunkflow
from chunkflow.cache import ChunkCache
from chunkflow.engine import freshness
from chunkflow.storage import local as local_module

WINDOW = (slice(12, 28), slice(4, 20))  # across 4 chunks of 16x16


def _kept_window_cache() -> tuple[ChunkCache, object]:
    """A cache holding a kept window of a 64x64 array's ``WINDOW``, and the owner."""
    cache = ChunkCache(1 << 20)
    z = chunkflow.array(np.arange(64 * 64, dtype="u2").reshape(64, 64), chunks=(16, 16),
                        cache=cache)
    for _ in range(3):  # a miss, a hit, a second hit in a row: the window is kept
        z[WINDOW]
    owner = z._plans.kept(WINDOW, z._io.grid)[1]
    assert cache.changes.kept(owner) is not None
    return cache, owner


CHANGES: dict[str, Callable[[ChunkCache], None]] = {
    "put": lambda cache: cache.put("other/c/0", np.zeros(2)),
    "put refused": lambda cache: cache.put("other/c/0", np.zeros(1 << 21)),  # too big
    "invalidate": lambda cache: cache.invalidate(["other/c/9"]),
    "invalidate_prefix": lambda cache: cache.invalidate_prefix("other/"),
    "discard": lambda cache: cache.discard("other/c/9"),
    "discard_many": lambda cache: cache.discard_many([]),
    "discard_prefix": lambda cache: cache.discard_prefix("other/"),
    "discard_array": lambda cache: cache.discard_array("other", "a"),
    "clear": lambda cache: cache.clear(),
    "resize": lambda cache: cache.resize(1 << 20),
    "lookup": lambda cache: cache.lookup(["other/c/9"]),
    "get": lambda cache: cache.get("other/c/9"),
}


@pytest.mark.parametrize("change", CHANGES)
def test_every_change_and_every_lookup_drops_the_kept_window(change: str) -> None:
    cache, owner = _kept_window_cache()
    CHANGES[change](cache)
    assert cache.changes.kept(owner) is None


def test_a_change_landing_during_a_lookup_gives_no_stamp() -> None:
    cache = ChunkCache(1 << 20)
    cache.put("s/c/0", np.zeros(4))
    fast = cache._tiers.fast
    real = fast.get_all_or_nothing

    def racing(keys):  # type: ignore[no-untyped-def]
        found = real(keys)
        cache.discard("s/c/1")  # another thread's change, after the entries were found
        return found

    fast.get_all_or_nothing = racing  # type: ignore[method-assign]
    found, stamp = cache.lookup_stamped(["s/c/0"])
    assert "s/c/0" in found and stamp is None
    fast.get_all_or_nothing = real  # type: ignore[method-assign]
    stamp = cache.lookup_stamped(["s/c/0"])[1]
    cache.changes.keep("reader", stamp - 1, "outdated")  # a stamp the cache has left
    assert cache.changes.kept("reader") is None


def test_a_kept_window_is_a_private_copy_and_reads_return_new_arrays() -> None:
    data = np.arange(64 * 64, dtype="f8").reshape(64, 64)
    z = chunkflow.array(data, chunks=(16, 16), cache=ChunkCache(1 << 20))
    results = [z[WINDOW] for _ in range(4)]
    for result in results:
        np.testing.assert_array_equal(result, data[WINDOW])
        result[...] = -1  # the caller owns what it got
    np.testing.assert_array_equal(z[WINDOW], data[WINDOW])
    assert len({id(r) for r in results}) == 4


def test_a_kept_window_follows_the_recheck_policy(tmp_path: Path,
                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    """Another process's write, unseen by this process's caches: a handle whose policy
    makes the chunks due again reads the store, kept window or not."""
    monkeypatch.setattr(local_module, "SETTLE_NS", -1)  # files have versions at once
    data = np.arange(64 * 64, dtype="i4").reshape(64, 64)
    path = str(tmp_path / "a.zarr")
    chunkflow.array(data, chunks=(16, 16), store=path)
    changed = chunkflow.array(data + 1, chunks=(16, 16), store={}).store["c/1/0"]
    cache = ChunkCache(1 << 22)
    z = chunkflow.open(path, mode="r", cache=cache, recheck_cached_data=0.2)
    for _ in range(3):
        np.testing.assert_array_equal(z[WINDOW], data[WINDOW])
    assert cache.changes.kept(z._plans.kept(WINDOW, z._io.grid)[1]) is not None
    # Another process rewrites a chunk: new bytes behind the caches' back.
    (tmp_path / "a.zarr" / "c" / "1" / "0").write_bytes(changed)
    time.sleep(0.3)  # the policy's 0.2 s pass: every cached chunk is due again
    expected = data[WINDOW].copy()
    expected[4:, :12] += 1  # rows 16.. of chunk (1, 0)
    np.testing.assert_array_equal(z[WINDOW], expected)
    assert cache.stats.stale == 1


@contextlib.contextmanager
def _never_kept() -> Iterator[None]:
    saved = freshness.UNCHANGED_MAX_BYTES
    freshness.UNCHANGED_MAX_BYTES = -1
    try:
        yield
    finally:
        freshness.UNCHANGED_MAX_BYTES = saved


SHAPE, CHUNKS = (32, 32), (8, 8)
WINDOWS = [(slice(4, 12), slice(4, 12)), (slice(6, 30), slice(2, 9)), (5, slice(3, 20))]


class _Twin:
    """An array, a reader and a writer sharing one small cache, and an uncached writer."""

    def __init__(self, data: np.ndarray, max_bytes: int) -> None:
        self.cache = ChunkCache(max_bytes)
        self.store: dict[str, bytes] = {}
        chunkflow.array(data, chunks=CHUNKS, store=self.store, cache=False)
        self.readers = [chunkflow.open(self.store, mode="r", cache=self.cache)
                        for _ in range(2)]
        self.writer = chunkflow.open(self.store, mode="r+", cache=self.cache)
        self.uncached = chunkflow.open(self.store, mode="r+", cache=False)
        self.identity = self.writer.store.identity

    def state(self) -> tuple[object, ...]:
        stats = self.cache.stats
        order = [key.removeprefix(self.identity) for key in self.cache._tiers.fast.order]
        return stats.hits, stats.misses, stats.evictions, stats.entries, order


class UnchangedWindowMachine(RuleBasedStateMachine):
    """Reads of a few windows through two readers, writes through a cached and an
    uncached handle, discards, clears and resizes: every read equals numpy, and the
    cache that keeps windows stays step for step the cache that never does."""

    @initialize(max_chunks=st.integers(2, 20))
    def start(self, max_chunks: int) -> None:
        self.data = np.arange(np.prod(SHAPE), dtype="u2").reshape(SHAPE)
        budget = max_chunks * int(np.prod(CHUNKS)) * 2
        self.keeping = _Twin(self.data, budget)
        self.never = _Twin(self.data, budget)

    @rule(window=st.sampled_from(WINDOWS), reader=st.integers(0, 1),
          again=st.integers(1, 4))
    def read(self, window: tuple[object, ...], reader: int, again: int) -> None:
        if getattr(self, "last", None) != (window, reader):
            self.before_last = getattr(self, "last", None)
            self.last = (window, reader)
        for _ in range(again):
            got = self.keeping.readers[reader][window]
            with _never_kept():
                expected = self.never.readers[reader][window]
            np.testing.assert_array_equal(got, self.data[window])
            np.testing.assert_array_equal(expected, self.data[window])

    @rule(before_last=st.booleans())
    def read_a_recent_window_again(self, before_last: bool) -> None:
        """The case of a kept window: the last window read (or the one before), read
        again after other steps."""
        recent = getattr(self, "before_last" if before_last else "last", None)
        if recent is not None:
            self.read(*recent, again=1)

    @rule(window=st.sampled_from(WINDOWS), value=st.integers(0, 65535),
          cached=st.booleans())
    def write(self, window: tuple[object, ...], value: int, cached: bool) -> None:
        self.data[window] = value
        for twin in (self.keeping, self.never):
            (twin.writer if cached else twin.uncached)[window] = value

    @rule(chunk=st.tuples(st.integers(0, 3), st.integers(0, 3)), of_the_last=st.booleans())
    def discard(self, chunk: tuple[int, int], of_the_last: bool) -> None:
        if of_the_last and hasattr(self, "last"):  # one the last window read crosses
            reader = self.keeping.readers[self.last[1]]
            crossed = reader._plans.get(self.last[0], reader._io.grid)[1]
            chunk = crossed[sum(chunk) % len(crossed)].chunk_coords  # type: ignore[assignment]
        for twin in (self.keeping, self.never):
            twin.cache.discard(twin.writer._io.keys(chunk)[1])

    @rule(max_chunks=st.integers(0, 20))
    def resize(self, max_chunks: int) -> None:
        for twin in (self.keeping, self.never):
            twin.cache.resize(max_chunks * int(np.prod(CHUNKS)) * 2)

    @rule()
    def forget(self) -> None:
        for twin in (self.keeping, self.never):
            twin.readers[0].forget_cached()

    @invariant()
    def same_cache(self) -> None:
        if hasattr(self, "keeping"):
            assert self.keeping.state() == self.never.state()


TestUnchangedWindowMachine = UnchangedWindowMachine.TestCase
TestUnchangedWindowMachine.settings = settings(max_examples=200, stateful_step_count=30,
                                               deadline=None)


def test_reads_racing_writes_never_see_a_value_older_than_a_finished_write() -> None:
    """A reader re-reading one window (kept between writes) while another thread
    rewrites it with rising values: every value read is at least the last value whose
    write had finished when the read began."""
    import threading

    cache = ChunkCache(1 << 22)
    store: dict[str, bytes] = {}
    chunkflow.zeros((64, 64), chunks=(16, 16), dtype="u4", store=store, cache=False)
    reader = chunkflow.open(store, mode="r", cache=cache)
    writer = chunkflow.open(store, mode="r+", cache=cache)
    finished = 0
    stop = threading.Event()
    failures: list[str] = []

    def read() -> None:
        while not stop.is_set():
            floor = finished
            got = reader[WINDOW]
            if got.min() < floor:
                failures.append(f"read {got.min()} after write {floor} had finished")

    thread = threading.Thread(target=read)
    thread.start()
    try:
        for value in range(1, 400):
            writer[WINDOW] = value
            finished = value
            if value % 50 == 0:
                time.sleep(0.01)  # quiet spells: the window is kept and served
    finally:
        stop.set()
        thread.join()
    assert not failures, failures[:3]
    np.testing.assert_array_equal(reader[WINDOW], 399)
