"""Telling caches about writes: change listeners.

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

Listeners run in the writer's thread, after the store call changed the bytes. A
cache therefore has to reject copies fetched before a change that it hears of only
after they arrive; :class:`~chunkflow.cache.ChunkCache` does so with tickets.

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
import threading
from collections.abc import Callable, Iterator, Sequence

__all__ = [
    "ChangeListener",
    "add_change_listener",
    "changed_prefix",
    "changing",
    "location",
    "remove_change_listener",
]

ChangeListener = Callable[[str, Sequence[str] | None, str | None], None]
"""``listener(identity, keys, prefix)``: ``keys`` changed, or everything below
``prefix`` (``""``: the whole store) when ``keys`` is ``None``."""

_listeners: tuple[ChangeListener, ...] = ()
_listeners_lock = threading.Lock()


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
def changing(identity: str, keys: Sequence[str]) -> Iterator[None]:
    """Run the body (which writes or deletes ``keys``), then tell the listeners, also
    when the body fails: part of the change may have landed."""
    try:
        yield
    finally:
        _notify(identity, list(keys), None)


def changed_prefix(identity: str, prefix: str) -> None:
    """Tell the listeners that everything below ``prefix`` (``""``: all) may have changed."""
    _notify(identity, None, prefix)
