"""Tickets: which copies fetched (or written) before a change may still be cached.

A reader takes a ticket before fetching a chunk; every store change records, per
location, the epoch at which it landed. A put with a ticket older than the location's
latest change is refused: the copy may predate that change. A writer's own copy is
refused only when a second change followed its own (its write announces one).

The log remembers :data:`LOG_ENTRIES` locations; past that, it is cleared and every
ticket issued before is refused (safe, and rare). Callers hold the cache's lock.

Examples
--------
>>> log = InvalidationLog()
>>> ticket = log.ticket()
>>> log.record(["s/a/1"])  # a write lands while s/a/1 is being fetched
>>> log.outdated("s/a/1", ticket, written=False), log.outdated("s/a/2", ticket, written=False)
(True, False)
"""

from __future__ import annotations

from collections.abc import Hashable, Sequence

__all__ = ["LOG_ENTRIES", "InvalidationLog"]

#: Locations whose latest invalidations are remembered per cache.
LOG_ENTRIES = 16384


class InvalidationLog:
    """Per location, the epochs of its last two changes; tickets are epochs."""

    __slots__ = ("_epoch", "_floor", "_log")

    def __init__(self) -> None:
        self._epoch = 0
        self._floor = 0  # tickets below this are refused
        self._log: dict[Hashable, tuple[int, int]] = {}

    def ticket(self) -> int:
        """The epoch now: what a reader holds while it fetches."""
        return self._epoch

    def record(self, keys: Sequence[Hashable]) -> None:
        """A change of ``keys`` lands now."""
        self._epoch += 1
        epoch, log = self._epoch, self._log
        if len(log) + len(keys) > LOG_ENTRIES:
            log.clear()
            self._floor = epoch
        for key in keys:
            log[key] = (epoch, log.get(key, (0, 0))[0])

    def record_all(self) -> None:
        """A change of every location lands now: every ticket issued before is refused."""
        self._epoch += 1
        self._floor = self._epoch
        self._log.clear()

    def outdated(self, key: Hashable, ticket: int, written: bool) -> bool:
        """Whether a copy of ``key`` taken with ``ticket`` may predate a change (for a
        ``written`` copy: a change after the writer's own)."""
        latest, before = self._log.get(key, (0, 0))
        return ticket < self._floor or (before if written else latest) > ticket
