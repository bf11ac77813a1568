"""Locks held by a dask.distributed scheduler, for the workers of a cluster.

``distributed`` is imported only when a lock is taken: importing chunkflow must stay
cheap for users who never start a cluster.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from chunkflow.errors import ArgumentTypeError, NotRunningError
from chunkflow.sync.base import KeyLockSynchronizer

if TYPE_CHECKING:
    import distributed

__all__ = ["DistributedSynchronizer"]


class DistributedSynchronizer(KeyLockSynchronizer):
    """Chunk locks kept by the dask.distributed scheduler (``distributed.Lock``).

    Usable from the client process and from any worker. It pickles without its
    client; an unpickled copy reaches the scheduler through the worker it runs on
    (or, outside a worker, through the process's default client), resolved when a
    lock is taken.

    The installed ``distributed.Lock`` is a one-lease ``Semaphore``: the holder
    renews its lease in the background, and a lease not renewed for
    ``distributed.scheduler.locks.lease-timeout`` (30 s by default) is taken back by
    the scheduler. A task that blocks its worker's event loop longer than that (a
    long GIL-holding call) can therefore lose its lock; raise the setting (or set it
    to ``"inf"``) for such work.

    Parameters
    ----------
    client : distributed.Client, optional
        The client whose scheduler holds the locks (default: the worker's scheduler,
        or the process's default client).
    prefix : str
        Namespace of the lock names on the scheduler, ``f"{prefix}:{key}"``.

    Examples
    --------
    >>> import pickle
    >>> sync = DistributedSynchronizer(prefix="my-job")  # no cluster needed until used
    >>> sync.lock_name("c/0/1")
    'my-job:c/0/1'
    >>> pickle.loads(pickle.dumps(sync))
    DistributedSynchronizer(prefix='my-job')
    """

    def __init__(
        self, client: distributed.Client | None = None, prefix: str = "chunkflow"
    ) -> None:
        if not isinstance(prefix, str) or not prefix:
            raise ArgumentTypeError(
                f"DistributedSynchronizer prefix must be a non-empty str, got {prefix!r}"
            )
        self._client = client
        self.prefix = prefix

    def lock_name(self, key: str) -> str:
        """The name of the scheduler-side lock of ``key``."""
        return f"{self.prefix}:{key}"

    def _endpoint(self, key: str) -> tuple[Any, Any]:
        """The scheduler connection and event loop to reach the locks through."""
        from distributed import get_client, get_worker

        if self._client is not None:
            return self._client.scheduler, self._client.loop
        try:
            # Inside a task: the worker's own connection, no extra client needed.
            worker = get_worker()
            return worker.scheduler, worker.loop
        except ValueError:
            pass
        try:
            client = get_client()
        except ValueError:
            raise NotRunningError(
                f"{self!r}: cannot lock key {key!r}: this process is neither a dask worker "
                "nor has a distributed.Client; create a Client first or pass client="
            ) from None
        return client.scheduler, client.loop

    def _acquire(self, key: str, timeout: float | None) -> Any | None:
        from distributed import Lock

        scheduler, loop = self._endpoint(key)
        # A fresh Lock per acquisition: each instance tracks its own leases, so
        # threads sharing this synchronizer never release each other's lease.
        lock = Lock(self.lock_name(key), scheduler_rpc=scheduler, loop=loop)
        acquired = False
        try:
            acquired = bool(lock.acquire(timeout=timeout))
        finally:
            if not acquired:
                _stop_refreshing(lock)
        return lock if acquired else None

    def _release(self, lock: Any) -> None:
        try:
            lock.release()
        finally:
            _stop_refreshing(lock)

    def __reduce__(self) -> tuple[Any, ...]:
        # Never the client: it cannot cross processes, and workers have their own.
        return (DistributedSynchronizer, (None, self.prefix))

    def __repr__(self) -> str:
        return f"DistributedSynchronizer(prefix={self.prefix!r})"


def _stop_refreshing(lock: Any) -> None:
    """Stop the lease renewal of a released lock, on the lock's event loop.

    The renewal (a tornado ``PeriodicCallback``) was started through
    ``loop.add_callback``; stopping it the same way runs after that start (callbacks
    run in order) and on the loop's thread. Left running, it would keep every Lock
    ever created alive. ``close()`` is not an option: it deletes the scheduler-side
    lock that other holders of the name still use.
    """
    callback = getattr(lock, "refresh_callback", None)
    if callback is not None:
        lock.loop.add_callback(callback.stop)
