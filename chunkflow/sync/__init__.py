"""Synchronizers: locks per chunk key for writes that cannot be aligned to chunks.

- :class:`ThreadSynchronizer` protects the threads of one process;
- :class:`ProcessSynchronizer` protects processes sharing a file system (file locks);
- :class:`DistributedSynchronizer` protects the workers of a dask.distributed cluster.

Pass one as ``synchronizer=`` when creating or opening an array. Every synchronizer
pickles, so arrays that carry one can be sent to worker processes.
"""

from __future__ import annotations

from chunkflow.errors import ArgumentTypeError
from chunkflow.sync.base import KeyLockSynchronizer, Synchronizer, SynchronizerLike
from chunkflow.sync.distributed import DistributedSynchronizer
from chunkflow.sync.process import ProcessSynchronizer
from chunkflow.sync.thread import ThreadSynchronizer

__all__ = [
    "DistributedSynchronizer",
    "KeyLockSynchronizer",
    "ProcessSynchronizer",
    "Synchronizer",
    "SynchronizerLike",
    "ThreadSynchronizer",
    "as_synchronizer",
]


def as_synchronizer(value: SynchronizerLike) -> Synchronizer | None:
    """Turn the ``synchronizer=`` argument of an array into a synchronizer.

    Parameters
    ----------
    value : None, "thread" or Synchronizer
        ``None`` (no locking), ``"thread"`` (a new :class:`ThreadSynchronizer`) or
        any object with ``lock()`` and ``locks()`` methods, returned unchanged.

    Raises
    ------
    TypeError
        For anything else.

    Examples
    --------
    >>> as_synchronizer("thread")
    ThreadSynchronizer(0 locks in use)
    >>> as_synchronizer(None) is None
    True
    >>> as_synchronizer(42)  # doctest: +ELLIPSIS, +NORMALIZE_WHITESPACE
    Traceback (most recent call last):
    ...
    chunkflow.errors.ArgumentTypeError: synchronizer must be None, 'thread' or an object with lock() and
    locks() ... got 42
    """
    if value is None:
        return None
    # isinstance first: `value == "thread"` on an array would compare element-wise.
    if isinstance(value, str) and value == "thread":
        return ThreadSynchronizer()
    if isinstance(value, type):
        # The class itself has lock/locks too, but as unbound functions.
        raise ArgumentTypeError(f"synchronizer must be an instance, got the class {value.__name__}; "
                                f"pass {value.__name__}(...)")
    if not isinstance(value, str) and all(
        callable(getattr(value, name, None)) for name in ("lock", "locks")
    ):
        return value
    raise ArgumentTypeError(
        "synchronizer must be None, 'thread' or an object with lock() and locks() methods "
        f"(ThreadSynchronizer, ProcessSynchronizer, DistributedSynchronizer), got {value!r}"
    )
