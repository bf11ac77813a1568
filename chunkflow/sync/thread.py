"""Locks for the threads of one process."""

from __future__ import annotations

import threading
from typing import Any

from chunkflow.sync.base import KeyLockSynchronizer

__all__ = ["ThreadSynchronizer"]


class _Entry:
    """A key's lock and the number of threads holding or waiting for it."""

    __slots__ = ("key", "lock", "users")

    def __init__(self, key: str) -> None:
        self.key = key
        self.lock = threading.Lock()
        self.users = 0


class ThreadSynchronizer(KeyLockSynchronizer):
    """One ``threading.Lock`` per chunk key, for writers that are threads of one process.

    Lock objects exist only while some thread holds or waits for them (a reference
    count under a guard lock), so the table never grows with the number of chunks
    ever written. A pickled or copied synchronizer is a new, empty one: threads of
    another process share no memory with these locks.

    Examples
    --------
    >>> sync = ThreadSynchronizer()
    >>> with sync.locks(["c/0/1", "c/0/0"]):
    ...     sync
    ThreadSynchronizer(2 locks in use)
    >>> sync
    ThreadSynchronizer(0 locks in use)
    """

    def __init__(self) -> None:
        self._guard = threading.Lock()
        self._entries: dict[str, _Entry] = {}

    def _acquire(self, key: str, timeout: float | None) -> _Entry | None:
        with self._guard:
            entry = self._entries.get(key)
            if entry is None:
                entry = self._entries[key] = _Entry(key)
            entry.users += 1
        acquired = False
        try:
            # threading.Lock spells "wait forever" as -1.
            acquired = entry.lock.acquire(timeout=-1 if timeout is None else timeout)
        finally:
            if not acquired:
                self._forget(entry)
        return entry if acquired else None

    def _release(self, entry: _Entry) -> None:
        entry.lock.release()
        self._forget(entry)

    def _forget(self, entry: _Entry) -> None:
        with self._guard:
            entry.users -= 1
            if entry.users == 0:
                del self._entries[entry.key]

    def _describe(self) -> str:
        return "ThreadSynchronizer"

    def __reduce__(self) -> tuple[Any, ...]:
        return (ThreadSynchronizer, ())

    def __repr__(self) -> str:
        return f"ThreadSynchronizer({len(self._entries)} locks in use)"
