"""Which cache entries were decoded from which stored object.

An inner chunk of a shard is cached on its own (a viewer panning a sharded array
decodes each inner chunk once), but the store announces changes by *shard*: when a
shard's bytes change, every inner chunk cached from it must go. :class:`Families`
remembers, for each stored object (the *parent*, a location), the cache keys of the
entries decoded from it (its *children*).

The index may name entries the cache no longer holds (evicted ones: forgetting a
name that is gone costs nothing), but never misses one it holds; so evictions do not
update it, and :meth:`Families.prune` rebuilds it from the keys still cached once it
has grown well past them.

Examples
--------
>>> families = Families()
>>> families.add("s/a/c/0#1", parent="s/a/c/0")
>>> families.add("s/a/c/0#2", parent="s/a/c/0")
>>> sorted(families.pop_children("s/a/c/0")), len(families)
(['s/a/c/0#1', 's/a/c/0#2'], 0)
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Iterable

__all__ = ["Families", "child_key"]


def child_key(parent: str, part: int | str) -> str:
    """The cache key of ``part`` (an inner chunk number, ``"index"``) of ``parent``.

    ``#`` cannot end a chunk key that chunkflow writes, so no child key is another
    object's location.

    Examples
    --------
    >>> child_key("file:///x.zarr/c/0/0", 5)
    'file:///x.zarr/c/0/0#5'
    """
    return f"{parent}#{part}"


class Families:
    """Parent locations and the cache keys of their children (not thread-safe: the
    cache calls it under its own lock)."""

    def __init__(self) -> None:
        self._parent: dict[Hashable, str] = {}
        self._children: dict[str, set[Hashable]] = {}

    def __len__(self) -> int:
        """Number of children named."""
        return len(self._parent)

    def __contains__(self, parent: object) -> bool:
        """Whether ``parent`` has children named (cheap; safe to ask without the lock)."""
        return parent in self._children

    def add(self, child: Hashable, parent: str) -> None:
        """Name ``child`` as decoded from ``parent`` (before it is inserted)."""
        self._parent[child] = parent
        self._children.setdefault(parent, set()).add(child)

    def pop_children(self, parent: str) -> set[Hashable]:
        """Forget ``parent``'s children and return their keys (empty if none)."""
        children = self._children.pop(parent, set())
        for child in children:
            self._parent.pop(child, None)
        return children

    def forget(self, keys: Iterable[Hashable]) -> None:
        """Forget ``keys`` as children (they left the cache)."""
        for key in keys:
            parent = self._parent.pop(key, None)
            if parent is not None:
                siblings = self._children.get(parent)
                if siblings is not None:
                    siblings.discard(key)
                    if not siblings:
                        del self._children[parent]

    def prune(self, cached: Callable[[Hashable], bool]) -> None:
        """Forget the children that ``cached(key)`` says are no longer in the cache."""
        self.forget([key for key in list(self._parent) if not cached(key)])

    def clear(self) -> None:
        """Forget everything."""
        self._parent.clear()
        self._children.clear()
