"""Synchronizers: every kind runs one conformance suite, then its own specifics.

Real parts only: threads, spawned processes with real file locks, and a real
``distributed.LocalCluster`` (the session's ``cluster_client``, started only if a
distributed case runs).
Counters are plain Python ints or numbers in files, updated read -> pause -> write, so
any lapse in mutual exclusion loses an increment and the exact final count shows it.
"""

from __future__ import annotations

import gc
import multiprocessing
import os
import pickle
import threading
import time
import uuid
import weakref
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from chunkflow.errors import LockTimeoutError
from chunkflow.sync import (
    DistributedSynchronizer,
    KeyLockSynchronizer,
    ProcessSynchronizer,
    Synchronizer,
    ThreadSynchronizer,
    as_synchronizer,
)
from tests.helpers.waiting import wait_until

JOIN_TIMEOUT = 30.0  # generous: a deadlock shows as a thread still alive after this


# --------------------------------------------------------------------------- fixtures


@pytest.fixture(params=["thread", "process",
                        pytest.param("distributed", marks=pytest.mark.slow)])
def sync(request: pytest.FixtureRequest, tmp_path: Path) -> Synchronizer:
    if request.param == "thread":
        return ThreadSynchronizer()
    if request.param == "process":
        return ProcessSynchronizer(tmp_path / "locks")
    client = request.getfixturevalue("cluster_client")
    # A fresh namespace per test: scheduler-side locks outlive a test's objects.
    return DistributedSynchronizer(client, prefix=f"test-{uuid.uuid4().hex[:8]}")


def run_threads(target: Callable[[int], None], count: int) -> None:
    """Run ``target(i)`` in ``count`` threads; fail on a hang or on any thread's error."""
    errors: list[BaseException] = []

    def guarded(i: int) -> None:
        try:
            target(i)
        except BaseException as err:  # handed to the test thread below
            errors.append(err)

    threads = [threading.Thread(target=guarded, args=(i,), daemon=True) for i in range(count)]
    for thread in threads:
        thread.start()
    deadline = time.monotonic() + JOIN_TIMEOUT
    for thread in threads:
        thread.join(timeout=max(0.0, deadline - time.monotonic()))
    assert not any(thread.is_alive() for thread in threads), "threads hung (deadlock?)"
    if errors:
        raise errors[0]


def in_thread(function: Callable[[], Any]) -> Any:
    """``function()`` run by another thread (locks are per thread for ThreadSynchronizer)."""
    result: list[Any] = []
    run_threads(lambda _: result.append(function()), 1)
    return result[0]


def take(sync: Synchronizer, keys: list[str], timeout: float) -> bool:
    """Take and give back ``keys``; True when that worked within ``timeout``."""
    with sync.locks(keys, timeout=timeout):
        return True


def rounds(sync: Synchronizer, many: int) -> int:
    # Scheduler round trips cost milliseconds; fewer rounds still race without a lock.
    return max(4, many // 4) if isinstance(sync, DistributedSynchronizer) else many


# ------------------------------------------------------------- conformance, every kind


def test_is_a_synchronizer(sync: Synchronizer) -> None:
    assert isinstance(sync, Synchronizer)
    assert as_synchronizer(sync) is sync


def test_one_key_excludes_threads(sync: Synchronizer) -> None:
    counter = [0]
    per_thread = rounds(sync, 40)

    def work(_: int) -> None:
        for _ in range(per_thread):
            with sync.lock("c/0/0", timeout=20):
                value = counter[0]
                time.sleep(0.0002)  # invite a switch between read and write
                counter[0] = value + 1

    run_threads(work, 6)
    assert counter[0] == 6 * per_thread


def test_independent_keys_do_not_block(sync: Synchronizer) -> None:
    with sync.lock("c/0/0"):
        # Free keys are taken without waiting at all (timeout=0), whoever holds others.
        assert in_thread(lambda: take(sync, ["c/0/1", "c/1/0"], timeout=0))


def test_overlapping_key_sets_in_opposite_orders_never_deadlock(sync: Synchronizer) -> None:
    key_sets = [["k3", "k2", "k1"], ["k1", "k2", "k3"], ["k4", "k1"], ["k2", "k4"],
                ["k4", "k3", "k2", "k1"], ["k1", "k4"]]
    holders: dict[str, int] = {}
    guard = threading.Lock()
    per_thread = rounds(sync, 15)

    def work(i: int) -> None:
        keys = key_sets[i % len(key_sets)]
        for _ in range(per_thread):
            with sync.locks(keys):
                with guard:  # every key of the set is ours alone while inside
                    assert not set(keys) & set(holders), (keys, holders)
                    holders.update(dict.fromkeys(keys, i))
                time.sleep(0.0002)
                with guard:
                    for key in keys:
                        del holders[key]

    run_threads(work, 8)
    assert holders == {}


def test_timeout_names_the_key_and_leaves_nothing_held(sync: Synchronizer) -> None:
    taken, done = threading.Event(), threading.Event()

    def hold_k2() -> None:
        with sync.lock("k2"):
            taken.set()
            done.wait(JOIN_TIMEOUT)

    holder = threading.Thread(target=hold_k2, daemon=True)
    holder.start()
    try:
        assert taken.wait(JOIN_TIMEOUT)
        with pytest.raises(LockTimeoutError) as info:
            with sync.locks(["k3", "k2", "k1"], timeout=0.3):
                pytest.fail("acquired a lock that another thread holds")
        message = str(info.value)
        assert "'k2'" in message and "0.3 s" in message
        assert type(sync).__name__ in message  # ...and which one: its path or prefix
        assert getattr(sync, "path", getattr(sync, "prefix", "")) in message
        assert isinstance(info.value, TimeoutError)
        # "k1" was taken before "k2" timed out; it must have been given back.
        assert in_thread(lambda: take(sync, ["k1"], timeout=0))  # free at once
    finally:
        done.set()
        holder.join(JOIN_TIMEOUT)
    assert in_thread(lambda: take(sync, ["k1", "k2", "k3"], timeout=5))


def test_a_waiter_waits_until_the_holder_releases(sync: Synchronizer) -> None:
    got = threading.Event()
    with sync.lock("k"):
        waiter = threading.Thread(target=lambda: take(sync, ["k"], JOIN_TIMEOUT) and got.set(),
                                  daemon=True)
        waiter.start()
        # Neither taken while held, nor given up: it is still waiting when we let go.
        assert not got.wait(0.3) and waiter.is_alive()
    assert got.wait(JOIN_TIMEOUT), "the waiter never took the released lock"
    waiter.join(JOIN_TIMEOUT)


def test_locks_released_on_exception(sync: Synchronizer) -> None:
    with pytest.raises(RuntimeError, match="boom"):
        with sync.locks(["a", "b"], timeout=5):
            raise RuntimeError("boom")
    assert in_thread(lambda: take(sync, ["b", "a"], timeout=2))


def test_duplicate_keys_are_taken_once(sync: Synchronizer) -> None:
    with sync.locks(["a", "a", "b", "a"], timeout=2):
        pass


def test_a_bare_string_is_refused(sync: Synchronizer) -> None:
    with pytest.raises(TypeError, match="iterable of keys"):
        with sync.locks("c/0/0"):
            pass


# ------------------------------------------------------------------ the shared base


class RecordingSynchronizer(ThreadSynchronizer):
    """A real ThreadSynchronizer that also records the order of acquire and release."""

    def __init__(self) -> None:
        super().__init__()
        self.events: list[tuple[str, str]] = []

    def _acquire(self, key: str, timeout: float | None) -> Any:
        self.events.append(("acquire", key))
        return super()._acquire(key, timeout)

    def _release(self, handle: Any) -> None:
        self.events.append(("release", handle.key))
        super()._release(handle)


def test_locks_acquire_sorted_and_release_in_reverse() -> None:
    sync = RecordingSynchronizer()
    with sync.locks(["c/1/0", "c/0/1", "c/0/0", "c/0/1"]):
        pass
    order = ["c/0/0", "c/0/1", "c/1/0"]
    assert sync.events == [("acquire", k) for k in order] + [("release", k)
                                                             for k in reversed(order)]


class _SlowClock:
    """A stand-in for the ``time`` module of ``chunkflow.sync.base``: its clock moves
    only when a lock is taken, by ``step`` seconds each time."""

    def __init__(self, step: float) -> None:
        self.now, self.step = 1000.0, step

    def monotonic(self) -> float:
        return self.now


class _SlowSynchronizer(ThreadSynchronizer):
    """A ThreadSynchronizer whose every acquisition costs ``clock.step`` seconds of
    the fake clock, recording the timeout each one was given."""

    def __init__(self, clock: _SlowClock) -> None:
        super().__init__()
        self.clock = clock
        self.timeouts: list[float | None] = []

    def _acquire(self, key: str, timeout: float | None) -> Any:
        self.timeouts.append(timeout)
        self.clock.now += self.clock.step
        return super()._acquire(key, timeout)


def test_timeout_is_a_budget_for_the_whole_call(monkeypatch: pytest.MonkeyPatch) -> None:
    import chunkflow.sync.base

    clock = _SlowClock(step=0.2)
    monkeypatch.setattr(chunkflow.sync.base, "time", clock)
    sync = _SlowSynchronizer(clock)
    with sync.locks(["a", "b", "c"], timeout=0.3):
        pass
    # Each key gets what is left of the 0.3 s, not 0.3 s of its own.
    assert sync.timeouts == pytest.approx([0.3, 0.1, 0.0])
    sync.timeouts.clear()
    with sync.locks(["a", "b"]):  # no timeout: every key waits as long as it takes
        pass
    assert sync.timeouts == [None, None]


def test_timeout_names_the_first_key_it_could_not_take() -> None:
    sync = ThreadSynchronizer()
    taken, done = threading.Event(), threading.Event()

    def hold(keys: list[str]) -> None:
        with sync.locks(keys):
            taken.set()
            done.wait(JOIN_TIMEOUT)

    holder = threading.Thread(target=hold, args=(["b", "c"],), daemon=True)
    holder.start()
    assert taken.wait(JOIN_TIMEOUT)
    try:
        with pytest.raises(LockTimeoutError, match="'b'"):
            with sync.locks(["a", "b", "c"], timeout=0.3):
                pass
        assert in_thread(lambda: take(sync, ["a"], timeout=0))  # "a" was given back
    finally:
        done.set()
        holder.join(JOIN_TIMEOUT)


def test_key_lock_synchronizer_is_abstract() -> None:
    with pytest.raises(TypeError):
        KeyLockSynchronizer()  # type: ignore[abstract]


# ------------------------------------------------------------------ as_synchronizer


def test_as_synchronizer_accepts_none_thread_and_objects() -> None:
    assert as_synchronizer(None) is None
    assert isinstance(as_synchronizer("thread"), ThreadSynchronizer)
    assert as_synchronizer("thread") is not as_synchronizer("thread")
    for bad in ("process", 1, object()):
        with pytest.raises(TypeError, match="synchronizer must be None, 'thread'"):
            as_synchronizer(bad)
    with pytest.raises(TypeError, match="instance.*ThreadSynchronizer"):
        as_synchronizer(ThreadSynchronizer)


# ------------------------------------------------------------------ ThreadSynchronizer


def test_thread_lock_table_holds_only_keys_in_use() -> None:
    sync = ThreadSynchronizer()
    for i in range(500):
        with sync.locks([f"c/{i}/0", f"c/{i}/1"]):
            assert repr(sync) == "ThreadSynchronizer(2 locks in use)"
    assert repr(sync) == "ThreadSynchronizer(0 locks in use)"

    def contend(i: int) -> None:  # waiters and timeouts must give their entries back too
        for j in range(50):
            try:
                with sync.locks([f"k{j % 3}", f"k{(j + i) % 5}"], timeout=0.001 * (i % 2)):
                    time.sleep(0.0001)
            except LockTimeoutError:
                pass

    run_threads(contend, 8)
    assert repr(sync) == "ThreadSynchronizer(0 locks in use)"


def test_thread_pickles_to_a_new_empty_synchronizer() -> None:
    sync = ThreadSynchronizer()
    with sync.lock("c/0/0"):
        copy = pickle.loads(pickle.dumps(sync))
        assert isinstance(copy, ThreadSynchronizer) and copy is not sync
        assert repr(copy) == "ThreadSynchronizer(0 locks in use)"
        with copy.lock("c/0/0", timeout=0):  # shares nothing with the original
            pass


# ----------------------------------------------------------------- ProcessSynchronizer


def test_process_lock_files_are_safe_and_distinct(tmp_path: Path) -> None:
    sync = ProcessSynchronizer(tmp_path / "made" / "here")
    assert os.path.isdir(sync.path)
    keys = ["c/0/0", "c.0.0", "c_0_0", "../../etc/passwd", "/abs", ".zarray", "", "ü/ß",
            "x" * 1000, "a b\nc"]
    files = [sync.lock_file(key) for key in keys]
    assert len(set(files)) == len(keys)
    for key, file in zip(keys, files, strict=True):
        assert os.path.dirname(file) == sync.path, key
        name = os.path.basename(file)
        assert not name.startswith(".") and len(name) < 200 and name.endswith(".lock")
        with sync.lock(key, timeout=1):
            assert os.path.exists(file)
    assert os.path.basename(sync.lock_file("c/0/0")).startswith("c_0_0.")


def test_process_unpickled_copy_excludes_the_original(tmp_path: Path) -> None:
    sync = ProcessSynchronizer(tmp_path / "locks")
    copy = pickle.loads(pickle.dumps(sync))
    assert copy.path == sync.path and copy is not sync
    with sync.lock("c/0/0"):
        with pytest.raises(LockTimeoutError, match="'c/0/0'"):
            with copy.lock("c/0/0", timeout=0.1):
                pass
    with copy.lock("c/0/0", timeout=1):
        pass


def _increment_file(sync: Synchronizer, counter: str, times: int,
                    start: Any = None) -> None:
    """Add 1 to the number in ``counter``, ``times`` times, each under the lock.

    ``start`` (a barrier) lines the writers up first, so they really overlap.
    """
    if start is not None:
        start.wait(timeout=60)
    for _ in range(times):
        with sync.lock("counter", timeout=60):
            with open(counter) as file:
                value = int(file.read())
            time.sleep(0.0005)  # widen the window a missing lock would lose a write in
            with open(counter, "w") as file:
                file.write(str(value + 1))


@pytest.mark.slow
def test_process_locks_exclude_spawned_processes(tmp_path: Path) -> None:
    sync = ProcessSynchronizer(tmp_path / "locks")
    counter = tmp_path / "counter.txt"
    counter.write_text("0")
    context = multiprocessing.get_context("spawn")
    start = context.Barrier(5)
    processes = [context.Process(target=_increment_file, args=(sync, str(counter), 60, start))
                 for _ in range(4)]
    for process in processes:
        process.start()
    _increment_file(sync, str(counter), 60, start)  # this process takes part too
    for process in processes:
        process.join(timeout=60)
        assert process.exitcode == 0
    assert counter.read_text() == str(5 * 60)


# ------------------------------------------------------------- DistributedSynchronizer


def _increment_file_on_worker(sync: DistributedSynchronizer, counter: str,
                              times: int) -> tuple[str, bool]:
    from distributed import get_worker

    _increment_file(sync, counter, times)
    # The copy arrived without a client; it must have found the worker's scheduler.
    return get_worker().address, sync._client is None


@pytest.mark.slow
def test_distributed_locks_exclude_cluster_workers(cluster_client: Any, tmp_path: Path) -> None:
    sync = DistributedSynchronizer(cluster_client, prefix=f"test-{uuid.uuid4().hex[:8]}")
    counter = tmp_path / "counter.txt"
    counter.write_text("0")
    futures = [cluster_client.submit(_increment_file_on_worker, sync, str(counter), 8,
                                     pure=False) for _ in range(8)]
    results = cluster_client.gather(futures)
    assert counter.read_text() == str(8 * 8)
    assert all(without_client for _, without_client in results)
    assert len({address for address, _ in results}) == 2  # both worker processes took part


def _try_lock(sync: DistributedSynchronizer, key: str, timeout: float) -> bool:
    with sync.lock(key, timeout=timeout):
        return True


@pytest.mark.slow
def test_distributed_timeout_on_a_lock_held_by_the_client(cluster_client: Any) -> None:
    sync = DistributedSynchronizer(cluster_client, prefix=f"test-{uuid.uuid4().hex[:8]}")
    with sync.lock("c/0/0"):
        future = cluster_client.submit(_try_lock, sync, "c/0/0", 0.3, pure=False)
        with pytest.raises(LockTimeoutError, match=r"'c/0/0'.*0\.3 s"):
            future.result(timeout=JOIN_TIMEOUT)
    assert cluster_client.submit(_try_lock, sync, "c/0/0", 5, pure=False).result()


@pytest.mark.slow
def test_distributed_pickles_without_its_client(cluster_client: Any) -> None:
    sync = DistributedSynchronizer(cluster_client, prefix=f"test-{uuid.uuid4().hex[:8]}")
    payload = pickle.dumps(sync)
    assert b"Client" not in payload
    copy = pickle.loads(payload)
    assert copy.prefix == sync.prefix and copy._client is None
    # The copy reaches the same scheduler through the current client.
    with cluster_client.as_current():
        with sync.lock("c/0/0"):
            with pytest.raises(LockTimeoutError):
                with copy.lock("c/0/0", timeout=0.2):
                    pass
        with copy.lock("c/0/0", timeout=5):
            pass


@pytest.mark.slow
def test_distributed_released_locks_are_not_kept_alive(cluster_client: Any) -> None:
    sync = DistributedSynchronizer(cluster_client, prefix=f"test-{uuid.uuid4().hex[:8]}")
    handle = sync._acquire("c/0/0", timeout=5)
    assert handle is not None
    sync._release(handle)
    released = weakref.ref(handle)
    del handle
    # The lease-renewal callback is stopped on the client's loop, shortly after.
    wait_until(lambda: gc.collect() is not None and released() is None,
               "the released lock being freed")
