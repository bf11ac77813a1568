"""A count of a cache's changes, and one result kept for as long as the count stays.

Every change of what a cache holds, and every lookup (a lookup makes its entries the
most recent, which decides what is evicted next), counts once. A result derived from
the entries one lookup found (a window assembled from its chunks) stays exact for as
long as nothing else is counted after that lookup: the same lookup again would find the
same entries and leave the cache as it is. :class:`Changes` keeps one such result.

Examples
--------
>>> changes = Changes()
>>> stamp = changes.after_lookup(changes.count)  # a lookup with nothing else meanwhile
>>> changes.keep("reader", stamp, "its result")
>>> changes.kept("reader")
'its result'
>>> changes.changed()  # any change, or any other lookup
>>> changes.kept("reader") is None
True
"""

from __future__ import annotations

import threading

__all__ = ["Changes"]


class Changes:
    """The count of one cache's changes and lookups, and the result kept at one count.

    The count only grows, under a lock: a change counted after it was made can never
    leave a result kept from before it looking current.
    """

    __slots__ = ("_kept", "_lock", "count")

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.count = 0
        self._kept: tuple[object, int, object] | None = None

    def changed(self) -> None:
        """Count a change, after making it: the kept result no longer holds."""
        with self._lock:
            self.count += 1
            self._kept = None

    def after_lookup(self, before: int) -> int | None:
        """Count a lookup that began when the count was ``before``: the stamp of the
        state it found, or ``None`` if another change was counted meanwhile (what it
        found may then mix states)."""
        with self._lock:
            unchanged = self.count == before
            self.count += 1
            self._kept = None
            return self.count if unchanged else None

    def keep(self, owner: object, stamp: int, result: object) -> None:
        """Keep ``result`` for ``owner`` if the count is still ``stamp`` (replacing any
        other kept result: one per cache)."""
        with self._lock:
            if self.count == stamp:
                self._kept = (owner, stamp, result)

    def kept(self, owner: object) -> object | None:
        """The result ``owner`` kept, if nothing was counted since; else ``None``."""
        kept = self._kept
        if kept is None or kept[0] is not owner or kept[1] != self.count:
            return None
        return kept[2]
