"""The synchronizer protocol and the sorted multi-lock shared by every implementation.

A synchronizer maps chunk keys (``"c/0/1"``, ``"0.1"``, ``".zarray"``...) to locks.
Writers that touch several chunks hold all their locks at once through
:meth:`Synchronizer.locks`, which takes them in sorted key order: two writers whose
key sets overlap then always meet at the smallest shared key, so neither can hold a
lock the other waits for (no deadlock).

Examples
--------
>>> from chunkflow.sync import ThreadSynchronizer
>>> sync = ThreadSynchronizer()
>>> with sync.locks(["c/1/0", "c/0/0", "c/1/0"], timeout=1.0):
...     pass  # both chunks are locked here, "c/0/0" first
"""

from __future__ import annotations

import contextlib
import time
from abc import ABC, abstractmethod
from collections.abc import Iterable, Iterator
from contextlib import AbstractContextManager
from typing import Any, Literal, Protocol, TypeAlias, runtime_checkable

from chunkflow.errors import ArgumentTypeError, LockTimeoutError

__all__ = ["KeyLockSynchronizer", "Synchronizer", "SynchronizerLike"]


@runtime_checkable
class Synchronizer(Protocol):
    """Maps chunk keys to locks; what the array layer needs from a synchronizer.

    Locks are not re-entrant: a caller never takes the same key twice (taking it
    again while holding it waits for itself).

    Examples
    --------
    >>> from chunkflow.sync import ThreadSynchronizer
    >>> isinstance(ThreadSynchronizer(), Synchronizer)
    True
    """

    def lock(self, key: str, *, timeout: float | None = None) -> AbstractContextManager[None]:
        """Hold the lock of ``key`` for the duration of a ``with`` block."""
        ...

    def locks(
        self, keys: Iterable[str], *, timeout: float | None = None
    ) -> AbstractContextManager[None]:
        """Hold the locks of all ``keys``, taken in sorted order."""
        ...


#: What every ``synchronizer=`` argument accepts (see :func:`chunkflow.sync.as_synchronizer`):
#: a :class:`Synchronizer`, ``"thread"`` for a new thread synchronizer, or ``None``.
SynchronizerLike: TypeAlias = Synchronizer | Literal["thread"] | None


class KeyLockSynchronizer(ABC):
    """A synchronizer built from one primitive: acquire or release the lock of a key.

    Subclasses implement :meth:`_acquire` (returning a handle, or ``None`` when the
    timeout ran out) and :meth:`_release`; this class supplies :meth:`lock` and
    :meth:`locks` with sorted acquisition, a total timeout budget and release on
    every exit path.
    """

    @abstractmethod
    def _acquire(self, key: str, timeout: float | None) -> Any | None:
        """Take the lock of ``key``; ``None`` if not acquired within ``timeout`` seconds.

        ``timeout=None`` waits forever. An implementation that raises must not leave
        the lock held.
        """

    @abstractmethod
    def _release(self, handle: Any) -> None:
        """Release a lock taken by :meth:`_acquire`, given the handle it returned."""

    def _describe(self) -> str:
        """How error messages name this synchronizer (stable, unlike a stateful repr)."""
        return repr(self)

    def lock(self, key: str, *, timeout: float | None = None) -> AbstractContextManager[None]:
        """Hold the lock of one key.

        Parameters
        ----------
        key : str
            The chunk (or metadata) key to lock.
        timeout : float, optional
            Seconds to wait at most; ``None`` waits forever.

        Raises
        ------
        chunkflow.errors.LockTimeoutError
            The lock was not acquired within ``timeout`` seconds.
        """
        return self.locks([key], timeout=timeout)

    @contextlib.contextmanager
    def locks(self, keys: Iterable[str], *, timeout: float | None = None) -> Iterator[None]:
        """Hold the locks of ``keys``, taken in sorted order and released in reverse.

        Parameters
        ----------
        keys : iterable of str
            The keys to lock; duplicates are taken once.
        timeout : float, optional
            Budget in seconds for acquiring *all* the locks; ``None`` waits forever.

        Raises
        ------
        chunkflow.errors.LockTimeoutError
            One lock could not be taken within the budget; the locks already taken
            are released before the error propagates, and the error names the key.
        """
        if isinstance(keys, str):
            # A bare string would otherwise be locked character by character.
            raise ArgumentTypeError(
                f"{self._describe()}: locks() takes an iterable of keys, got the string {keys!r}"
            )
        deadline = None if timeout is None else time.monotonic() + max(0.0, timeout)
        held: list[Any] = []
        try:
            for key in sorted(set(keys)):
                remaining = None if deadline is None else max(0.0, deadline - time.monotonic())
                handle = self._acquire(key, remaining)
                if handle is None:
                    raise LockTimeoutError(
                        f"{self._describe()}: could not lock key {key!r} within the timeout of "
                        f"{timeout} s (another writer holds it)"
                    )
                held.append(handle)
            yield
        finally:
            for handle in reversed(held):
                self._release(handle)
