"""Telling caches about writes: change listeners and per-location write stripes.

Every write, delete and prefix delete that goes through a :class:`~chunkflow.storage.Store`
method (chunkflow's own chunk writes, a raw ``store[key] = ...``, ``mode="w"``
replacing an array) announces what it changed to the listeners registered here,
after the change is made. The decoded-chunk cache registers one, so no cache in this
process keeps a copy of bytes that a write in this process replaced, whichever store
object, handle, path alias or cache option the write went through.

Changes are named by *location*: the store's :attr:`~chunkflow.storage.Store.identity`
joined with the key (``"file:///data/x.zarr/c/0/0"``). Identities compose like paths
(the identity of a store rooted at ``root/g/x`` is the identity of ``root`` plus
``"/g/x"``), so one chunk has one location whichever root reached it.

A write holds the *stripe locks* of the locations it changes from before the bytes
are written until the listeners have run (re-entrant, taken in sorted order, so
nested and concurrent holders never deadlock). A writer that also updates a cache
takes the same stripes around "write the store, then put the chunk": two writers of
one chunk in this process then update the store and the cache in the same order, and
the cache ends up holding what the store holds.

Examples
--------
>>> seen = []
>>> listener = lambda identity, keys, prefix: seen.append((identity, keys, prefix))
>>> add_change_listener(listener)
>>> with changing("memory:x", ["a/0", "a/1"]):
...     pass  # write the bytes here
>>> seen
[('memory:x', ['a/0', 'a/1'], None)]
>>> remove_change_listener(listener)
"""

from __future__ import annotations

import contextlib
import os
import threading
from collections.abc import Callable, Iterable, Iterator, Sequence

__all__ = [
    "ChangeListener",
    "add_change_listener",
    "changed_prefix",
    "changing",
    "location",
    "remove_change_listener",
    "stripes",
]

ChangeListener = Callable[[str, Sequence[str] | None, str | None], None]
"""``listener(identity, keys, prefix)``: ``keys`` changed, or everything below
``prefix`` (``""``: the whole store) when ``keys`` is ``None``."""

#: Number of stripe locks. Writers of different chunks rarely share one (two I/O
#: threads writing batches of chunks collide on about 1 in 100 keys).
STRIPES = 512

_listeners: tuple[ChangeListener, ...] = ()
_listeners_lock = threading.Lock()
_stripes = [threading.RLock() for _ in range(STRIPES)]


def _renew_stripes() -> None:
    # A forked child inherits locks held by threads that do not exist there.
    global _stripes
    _stripes = [threading.RLock() for _ in range(STRIPES)]


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_renew_stripes)


def location(identity: str, key: str) -> str:
    """The process-wide name of ``key`` in the store named ``identity``.

    Examples
    --------
    >>> location("file:///data/x.zarr", "c/0/0")
    'file:///data/x.zarr/c/0/0'
    """
    return f"{identity}/{key}"


def add_change_listener(listener: ChangeListener) -> None:
    """Call ``listener(identity, keys, prefix)`` after every store change."""
    global _listeners
    with _listeners_lock:
        _listeners = (*_listeners, listener)


def remove_change_listener(listener: ChangeListener) -> None:
    """Stop calling ``listener`` (no error if it was not registered)."""
    global _listeners
    with _listeners_lock:
        _listeners = tuple(item for item in _listeners if item is not listener)


def _notify(identity: str, keys: Sequence[str] | None, prefix: str | None) -> None:
    for listener in _listeners:  # a tuple: replaced, never mutated, so no lock here
        listener(identity, keys, prefix)


@contextlib.contextmanager
def stripes(identity: str, keys: Iterable[str]) -> Iterator[None]:
    """Hold the stripe locks of ``keys`` (re-entrant; sorted, so no deadlock)."""
    table = _stripes
    indices = sorted({hash(location(identity, key)) % STRIPES for key in keys})
    held: list[threading.RLock] = []
    try:
        for index in indices:
            lock = table[index]
            lock.acquire()
            held.append(lock)
        yield
    finally:
        for lock in reversed(held):
            lock.release()


@contextlib.contextmanager
def changing(identity: str, keys: Sequence[str]) -> Iterator[None]:
    """Hold the stripes of ``keys`` while the body writes or deletes them, then tell
    the listeners (also when the body fails: part of the change may have landed)."""
    with stripes(identity, keys):
        try:
            yield
        finally:
            _notify(identity, list(keys), None)


def changed_prefix(identity: str, prefix: str) -> None:
    """Tell the listeners that everything below ``prefix`` (``""``: all) may have changed."""
    _notify(identity, None, prefix)
