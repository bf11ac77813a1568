"""Every live chunk cache of the process, and the store changes they all hear of.

A :class:`~chunkflow.cache.ChunkCache` registers itself when made; each store write,
delete or prefix delete made in this process (announced by
:mod:`chunkflow.storage.coherence`) then invalidates the locations it changed in every
live cache.
"""

from __future__ import annotations

import weakref
from collections.abc import Sequence
from typing import Protocol

from chunkflow.storage.coherence import add_change_listener, location

__all__ = ["discard_everywhere", "register"]


class _Cache(Protocol):
    def invalidate(self, keys: Sequence[str]) -> None: ...
    def invalidate_prefix(self, prefix: str) -> None: ...
    def discard_prefix(self, prefix: str) -> None: ...


# Every live cache of the process hears of every store change made in it.
_CACHES: weakref.WeakSet[_Cache] = weakref.WeakSet()


def register(cache: _Cache) -> None:
    """Let ``cache`` hear of every store change made in this process while it lives."""
    _CACHES.add(cache)


def discard_everywhere(prefix: str) -> None:
    """Drop every chunk whose location starts with ``prefix`` from every cache here.

    For changes made behind this process's back (another process, a cluster job) that
    this process knows of.
    """
    for cache in list(_CACHES):
        cache.discard_prefix(prefix)


def _invalidate_everywhere(identity: str, keys: Sequence[str] | None, prefix: str | None) -> None:
    caches = list(_CACHES)
    if not caches:
        return
    if keys is not None:
        locations = [location(identity, key) for key in keys]
        for cache in caches:
            cache.invalidate(locations)
    else:
        start = location(identity, prefix) + "/" if prefix else identity + "/"
        for cache in caches:
            cache.invalidate_prefix(start)


add_change_listener(_invalidate_everywhere)
