"""Freeing the files that local writes replace, off the writers' path.

:class:`~chunkflow.storage.local.LocalStore` writes a chunk to a temporary file and
renames it over the old one. The rename drops the old file's last link, and on Linux
the kernel frees it inside that very ``rename`` call, with the folder's lock held: it
drops the file's cached pages and gives its blocks back, and on a file system mounted
with online discard (ext4 ``-o discard``, usual on cloud VMs) waits for the device to
acknowledge a discard request. Writers of one folder (the chunks of one row) then queue
behind each other, and each waits for the device with its core idle. Measured on 2
cores (ext4 with discard, 64 chunks of 1.1 MB replaced by 2 threads): the renames
spent 30 ms on the CPU and 44 ms blocked, and creating the temporary files another
36 ms blocked behind them.

Holding the old file open across the rename (:func:`hold`, an ``O_PATH`` descriptor:
it reads nothing and has no side effect, even on a FIFO or a device) leaves it alive
after its name is gone; :func:`release` hands the descriptor to a few daemon threads
per process, whose ``close`` frees the file while the writers go on encoding. The files
are gone from the folder at once (only their space comes back a little later), and
readers see exactly what they saw before: the old file or the new one.

At most :data:`MAX_PENDING` files (and :data:`MAX_PENDING_BYTES`) wait; past that a
writer frees its own (it pays what it would have paid before). :func:`drain` waits
until every released file is freed. Files are pinned only on the local-disk file
systems that free them inside the rename (:func:`pins_replaced`: ext2/3/4, XFS, Btrfs,
F2FS): on NFS an open file that is replaced turns into a visible ``.nfsXXXX`` file until
closed, and on Windows and macOS (no ``O_PATH``) nothing is pinned.

Examples
--------
>>> import os, tempfile
>>> folder = tempfile.mkdtemp()
>>> path = os.path.join(folder, "k")
>>> with open(path, "wb") as f:
...     _ = f.write(b"old")
>>> old = hold(path) if pins_replaced(folder) else None
>>> with open(path + ".tmp", "wb") as f:
...     _ = f.write(b"new")
>>> os.replace(path + ".tmp", path)
>>> release(old, 3)
>>> drain()
>>> os.listdir(folder), open(path, "rb").read()
(['k'], b'new')
"""

from __future__ import annotations

import collections
import functools
import os
import re
import threading

__all__ = ["MAX_PENDING", "MAX_PENDING_BYTES", "PINNED_TYPES", "RELEASE_THREADS", "drain",
           "hold", "mount_type", "pending", "pins_replaced", "release"]

#: Replaced files at most waiting to be freed (each holds a descriptor, its blocks and
#: its cached pages until then; a process near its limit of open files (often 1024)
#: must not run out because of them); past this a writer frees its own.
MAX_PENDING = 64
#: Bytes at most waiting to be freed (as the writers estimate them: the size of the
#: value that replaced each file).
MAX_PENDING_BYTES = 256 * 1024 * 1024

#: Threads at most freeing files at once. Each mostly waits for the disk (a discard
#: took ~1 ms here), and one thread alone fell behind two writers: rewriting 8192x8192
#: uint16 in 1024x1024 chunks 4 times in a row, freeing included, took 190 ms a write
#: with one thread, 89 ms with four, 161 ms freeing inside the rename.
RELEASE_THREADS = 4

#: File systems on a local disk that free a replaced file inside the rename.
PINNED_TYPES = frozenset({"ext2", "ext3", "ext4", "xfs", "btrfs", "f2fs"})

# O_PATH: a descriptor that only pins the file (no read permission needed, no open
# side effects); O_NOFOLLOW: a link at the target is itself what the rename replaces.
_HOLD_FLAGS = (getattr(os, "O_PATH", 0) | getattr(os, "O_NOFOLLOW", 0)
               | getattr(os, "O_CLOEXEC", 0)) if hasattr(os, "O_PATH") else 0


@functools.lru_cache(maxsize=256)
def pins_replaced(folder: str) -> bool:
    """Whether writes below ``folder`` (an absolute, resolved path) should pin the files
    they replace: the platform has ``O_PATH`` and ``folder`` lies on a file system of
    :data:`PINNED_TYPES` (the one mounted last on the longest mount point above it).

    Examples
    --------
    >>> pins_replaced("/proc"), pins_replaced("/dev/shm")  # procfs, tmpfs (or no O_PATH)
    (False, False)
    """
    if not _HOLD_FLAGS:
        return False
    try:
        with open("/proc/self/mounts", encoding="utf-8", errors="replace") as file:
            lines = file.read().splitlines()
    except OSError:
        return False
    return mount_type(folder, lines) in PINNED_TYPES


def mount_type(folder: str, mounts: list[str]) -> str:
    """The type of the file system ``folder`` lies on, from the lines of
    ``/proc/self/mounts`` (``""`` if none holds it).

    Examples
    --------
    >>> mounts = ["/dev/vda / ext4 rw 0 0", "tmpfs /dev/shm tmpfs rw 0 0",
    ...           "server:/x /mnt/my\\\\040data nfs4 rw 0 0"]
    >>> mount_type("/home/me", mounts), mount_type("/dev/shm/a", mounts)
    ('ext4', 'tmpfs')
    >>> mount_type("/mnt/my data/z.zarr", mounts), mount_type("/mnt/my", mounts)
    ('nfs4', 'ext4')
    """
    point, kind = "", ""
    for line in mounts:
        fields = line.split()
        if len(fields) < 3:
            continue
        # Spaces, tabs, newlines and backslashes in mount points are octal escapes.
        mounted = re.sub(r"\\([0-7]{3})", lambda m: chr(int(m.group(1), 8)), fields[1])
        inside = folder == mounted or folder.startswith(mounted.rstrip("/") + "/")
        if inside and len(mounted) >= len(point):  # a later mount on the same point wins
            point, kind = mounted, fields[2]
    return kind


def hold(path: str) -> int | None:
    """A descriptor pinning the file at ``path`` (``None``: nothing there, or this
    platform cannot pin files). Pass it to :func:`release` once ``path`` is replaced."""
    if not _HOLD_FLAGS:
        return None
    try:
        return os.open(path, _HOLD_FLAGS)
    except OSError:  # no such file (a new key) or anything else: the rename frees it
        return None


class _Releaser:
    """Daemon threads (up to :data:`RELEASE_THREADS`, started as the backlog needs them)
    closing the descriptors they are handed."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._work = threading.Condition(self._lock)
        self._idle = threading.Condition(self._lock)
        self._fds: collections.deque[tuple[int, int]] = collections.deque()  # (fd, bytes)
        self._bytes = 0
        self._closing: list[int] = []  # taken off the queue, not yet closed
        self._threads = 0
        self._waiting = 0  # threads waiting for work

    def release(self, fd: int, nbytes: int) -> None:
        with self._lock:
            if len(self._fds) < MAX_PENDING and self._bytes + nbytes <= MAX_PENDING_BYTES:
                self._fds.append((fd, nbytes))
                self._bytes += nbytes
                if self._waiting == 0 and self._threads < RELEASE_THREADS:
                    self._threads += 1
                    threading.Thread(target=self._run, daemon=True,
                                     name="chunkflow-release").start()
                self._work.notify()
                return
        _close(fd)  # the backlog is full: this writer frees its own file

    def _run(self) -> None:
        while True:
            with self._lock:
                while not self._fds:
                    self._waiting += 1
                    self._work.wait()
                    self._waiting -= 1
                fd, nbytes = self._fds.popleft()
                self._closing.append(fd)
            _close(fd)
            with self._lock:
                self._closing.remove(fd)  # one entry: a reused number may be in twice
                self._bytes -= nbytes
                if not self._fds and not self._closing:
                    self._idle.notify_all()

    def pending(self) -> int:
        with self._lock:
            return len(self._fds) + len(self._closing)

    def drain(self) -> None:
        with self._lock:
            while self._fds or self._closing:
                self._idle.wait()

    def held(self) -> list[int]:
        """Every descriptor not yet closed (read in a forked child, single-threaded)."""
        return [fd for fd, _ in self._fds] + sorted(self._closing)


def _close(fd: int) -> None:
    try:
        os.close(fd)
    except OSError:  # closing frees the file; an error here (EIO) changes nothing
        pass


_releaser = _Releaser()


def release(fd: int | None, nbytes: int) -> None:
    """Free the file pinned by ``fd`` (from :func:`hold`) in the background; ``nbytes``
    estimates its size (the value that replaced it)."""
    if fd is not None:
        _releaser.release(fd, nbytes)


def pending() -> int:
    """Released files not yet freed.

    Examples
    --------
    >>> drain(); pending()
    0
    """
    return _releaser.pending()


def drain() -> None:
    """Wait until every released file is freed (their space is back)."""
    _releaser.drain()


def _after_fork_in_child() -> None:
    # The child inherits copies of the held descriptors but not the thread that would
    # close them: close them now (the parent's own copies are unaffected).
    global _releaser
    held, _releaser = _releaser.held(), _Releaser()
    for fd in held:
        _close(fd)


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_after_fork_in_child)
