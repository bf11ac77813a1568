"""File locks for processes that share a file system (``flock`` on POSIX, ``msvcrt``
byte-range locks on Windows)."""

from __future__ import annotations

import hashlib
import os
import re
import time
from typing import Any

from chunkflow.sync.base import KeyLockSynchronizer

try:  # POSIX
    import fcntl
except ImportError:  # Windows: no fcntl, so `import chunkflow` must not need it
    fcntl = None  # type: ignore[assignment]  # Windows has no fcntl
    import msvcrt


def _try_lock(fd: int) -> bool:
    """Take the exclusive lock of ``fd`` if it is free; never blocks."""
    try:
        if fcntl is not None:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        else:
            msvcrt.locking(fd, msvcrt.LK_NBLCK, 1)  # the first byte stands for the file
    except BlockingIOError:  # flock: held by another descriptor
        return False
    except OSError:
        if fcntl is None:  # msvcrt reports a held lock as EACCES or EDEADLK
            return False
        raise
    return True


def _lock(fd: int) -> None:
    """Take the exclusive lock of ``fd``, waiting as long as it takes."""
    if fcntl is not None:
        fcntl.flock(fd, fcntl.LOCK_EX)  # blocks with the GIL released
    else:
        _poll_lock(fd, float("inf"))


def _unlock(fd: int) -> None:
    if fcntl is not None:
        fcntl.flock(fd, fcntl.LOCK_UN)
    else:
        os.lseek(fd, 0, os.SEEK_SET)
        msvcrt.locking(fd, msvcrt.LK_UNLCK, 1)

__all__ = ["ProcessSynchronizer"]

_UNSAFE = re.compile(r"[^A-Za-z0-9_.-]")
_PREFIX_CHARS = 60  # keeps the whole file name far below the usual 255-byte limit
_FIRST_DELAY = 0.0005
_MAX_DELAY = 0.05


class ProcessSynchronizer(KeyLockSynchronizer):
    """One lock file per chunk key under ``path``, locked with ``flock`` (POSIX) or
    ``msvcrt.locking`` (Windows).

    Every acquisition opens its own file descriptor, and ``flock`` locks belong to
    the open file, so threads of one process exclude each other too. A lock held by
    a process that dies is released by the kernel when its descriptors close.

    Lock files are left in place: deleting one while another process waits on it
    would let two writers hold "the" lock at once (each on a different inode).
    ``flock`` needs a file system that supports it across machines (local disks do;
    NFS only in recent kernels, and some network file systems not at all).

    Parameters
    ----------
    path : str or os.PathLike
        A folder every writer sees (created if missing).

    Examples
    --------
    >>> import pickle, tempfile
    >>> sync = ProcessSynchronizer(tempfile.mkdtemp())
    >>> with sync.lock("data/c/0/0", timeout=1):
    ...     pass
    >>> os.path.basename(sync.lock_file("data/c/0/0"))[:11]
    'data_c_0_0.'
    >>> pickle.loads(pickle.dumps(sync)).path == sync.path
    True
    """

    def __init__(self, path: str | os.PathLike[str]) -> None:
        self.path = os.fspath(path)
        os.makedirs(self.path, exist_ok=True)

    def lock_file(self, key: str) -> str:
        """The lock file of ``key``: a readable prefix plus the key's SHA-1 digest.

        Keys hold ``/``, ``..`` and arbitrary text, so the readable part is only a
        sanitized hint; the digest alone makes the name unique per key.

        Examples
        --------
        >>> import tempfile
        >>> sync = ProcessSynchronizer(tempfile.mkdtemp())
        >>> os.path.basename(sync.lock_file("../x y"))
        'x_y.b37c7286cfc3526c0d470ee8ca0e9c048de5b344.lock'
        """
        digest = hashlib.sha1(key.encode("utf-8", "surrogatepass")).hexdigest()
        # Leading dots would hide the file or spell "." / "..".
        readable = _UNSAFE.sub("_", key).lstrip("._")[-_PREFIX_CHARS:]
        return os.path.join(self.path, f"{readable or 'key'}.{digest}.lock")

    def _acquire(self, key: str, timeout: float | None) -> int | None:
        fd = os.open(self.lock_file(key), os.O_RDWR | os.O_CREAT, 0o666)
        try:
            if timeout is None:
                _lock(fd)
                return fd
            if _poll_lock(fd, time.monotonic() + timeout):
                return fd
        except BaseException:
            os.close(fd)
            raise
        os.close(fd)
        return None

    def _release(self, fd: int) -> None:
        try:
            _unlock(fd)
        finally:
            os.close(fd)

    def __reduce__(self) -> tuple[Any, ...]:
        return (ProcessSynchronizer, (self.path,))

    def __repr__(self) -> str:
        return f"ProcessSynchronizer({self.path!r})"


def _poll_lock(fd: int, deadline: float) -> bool:
    """Try the lock without blocking until ``deadline``, sleeping with exponential backoff.

    ``flock`` has no timeout of its own; polling keeps the wait interruptible and
    bounded, and the growing sleeps keep waiters from spinning on a long-held lock.
    """
    delay = _FIRST_DELAY
    while True:
        if _try_lock(fd):
            return True
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            return False
        time.sleep(min(delay, remaining))
        delay = min(delay * 2, _MAX_DELAY)
