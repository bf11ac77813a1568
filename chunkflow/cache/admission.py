"""Which chunks a read that covers them wholly should cache: those read wholly before.

A chunk a read covers only in part is cached at once: the next read (a neighbouring
window, a halo, a viewer panning) is likely to want the rest of it. A chunk a read
covers wholly is another matter: the caller now holds all of it, and a scan (a whole
array read, chunk after chunk, a copy, a dask computation) reads each chunk once.
Caching those on their first read would fill the cache with chunks nobody reads
again, cost a copy per chunk (the chunk could otherwise be decoded straight into the
caller's output), and raise the process's memory by the whole budget. So they are
cached from their second whole read on: the cache remembers which locations were read
wholly (a bounded set of their hashes, the least recently read forgotten first), like
the "ghost" entries of the 2Q and ARC policies.
"""

from __future__ import annotations

import threading
from collections.abc import Hashable, Sequence

__all__ = ["SEEN_ENTRIES", "WholeReads"]

#: Locations remembered as read wholly once (about 60 bytes each).
SEEN_ENTRIES = 16384


class WholeReads:
    """The locations read wholly once and not cached then.

    Examples
    --------
    >>> seen = WholeReads(limit=2)
    >>> sorted(seen.first_reads(["a", "b"]))  # neither was read before: not cached
    ['a', 'b']
    >>> sorted(seen.first_reads(["a", "c"]))  # "a" again: cached now; "b" forgotten
    ['c']
    >>> sorted(seen.first_reads(["b", "c"]))
    ['b']
    """

    def __init__(self, limit: int = SEEN_ENTRIES) -> None:
        self._limit = limit
        self._seen: dict[int, None] = {}  # insertion order: the oldest first
        self._lock = threading.Lock()

    def first_reads(self, locations: Sequence[Hashable]) -> set[Hashable]:
        """The ``locations`` not read wholly before (remembered now); the others
        are read wholly for the second time and should be cached."""
        first = set()
        with self._lock:
            seen = self._seen
            for loc in locations:
                tag = hash(loc)
                if tag in seen:
                    del seen[tag]  # to the end: the most recently read
                else:
                    first.add(loc)
                seen[tag] = None
            while len(seen) > self._limit:
                del seen[next(iter(seen))]
        return first

    def clear(self) -> None:
        with self._lock:
            self._seen.clear()
