"""Files written whole or not at all: each value goes to a temporary file beside its
target, which one rename puts in place (``os.replace`` is atomic within one file
system). A reader, or a crash, sees the old file or the new one, never part of it.
Used by :class:`~chunkflow.storage.LocalStore` and by
:class:`~chunkflow.storage.FsspecStore` on fsspec's local file system.
"""

from __future__ import annotations

import contextlib
import itertools
import os
import time

__all__ = ["TMP_MAX_AGE", "TMP_SUFFIX", "open_temporary", "remove_if_stale",
           "remove_stale_below", "write_all", "write_atomically"]

# Temporary files live next to their target (os.replace is only atomic within
# one file system) and carry this suffix so listings can skip them.
TMP_SUFFIX = ".chunkflow-tmp"

#: A temporary file unchanged for this long (seconds) is a killed writer's leftover.
#: A live writer changes its file with every ``os.write`` and renames it right after
#: the last one; one that stalls longer than this finds its file gone and its write
#: fails with ``FileNotFoundError`` (nothing is published half-written). Ages compare
#: the file's mtime with this host's clock: on a network file system, hosts whose clocks
#: differ by more than this could remove each other's live files.
TMP_MAX_AGE = 3600.0

_WRITE_FLAGS = os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_BINARY", 0)

# Temporary names: a random token per process (drawn again in a forked child) and a
# counter, unique across threads (next() on a count is atomic), processes and hosts
# sharing a network file system, without a getrandom call per write. O_EXCL refuses
# to open a name that exists all the same.
_tmp_token = os.urandom(6).hex()
_tmp_counter = itertools.count()


def _new_token() -> None:
    global _tmp_token, _tmp_counter
    _tmp_token = os.urandom(6).hex()
    _tmp_counter = itertools.count()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_new_token)

def open_temporary(path: str) -> tuple[str, int]:
    """A new temporary file beside ``path`` (its parent folders made if missing): its
    name, which listings skip, and a descriptor open for writing."""
    tmp = f"{path}.{_tmp_token}{next(_tmp_counter):x}{TMP_SUFFIX}"
    try:
        return tmp, os.open(tmp, _WRITE_FLAGS, 0o666)
    except FileNotFoundError:
        # Parent folders are created lazily: one failed open is cheaper than a
        # makedirs call on every write.
        os.makedirs(os.path.dirname(path), exist_ok=True)
        return tmp, os.open(tmp, _WRITE_FLAGS, 0o666)


def write_all(fd: int, value: bytes | memoryview) -> int:
    """Write all of ``value`` to ``fd``; return the bytes written."""
    view = memoryview(value).cast("B")
    nbytes = view.nbytes
    while view:
        view = view[os.write(fd, view) :]
    return nbytes


def write_atomically(path: str, value: bytes | memoryview) -> None:
    """Replace the file at ``path`` with ``value`` in one rename: a reader, or a crash,
    leaves the old file or the new one, never part of it.

    Examples
    --------
    >>> import tempfile
    >>> path = os.path.join(tempfile.mkdtemp(), "a", "k")
    >>> write_atomically(path, b"new")
    >>> open(path, "rb").read(), os.listdir(os.path.dirname(path))
    (b'new', ['k'])
    """
    tmp, fd = open_temporary(path)
    try:
        try:
            write_all(fd, value)
        finally:
            os.close(fd)
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise


def remove_if_stale(path: str, cutoff: float) -> bool:
    """Unlink ``path`` if it was last changed before ``cutoff`` (a ``time.time()``)."""
    try:
        if os.stat(path).st_mtime <= cutoff:
            os.unlink(path)
            return True
    except FileNotFoundError:
        pass  # renamed by its (live) writer or removed by another cleaner meanwhile
    return False


def remove_stale_below(folder: str, max_age: float = TMP_MAX_AGE) -> int:
    """Remove the temporary files below ``folder`` unchanged for ``max_age`` seconds
    (left by writers killed between writing and renaming); return how many.

    Examples
    --------
    >>> import tempfile
    >>> folder = tempfile.mkdtemp()
    >>> open(os.path.join(folder, "k.123" + TMP_SUFFIX), "wb").close()
    >>> remove_stale_below(folder, max_age=3600), remove_stale_below(folder, max_age=0)
    (0, 1)
    """
    cutoff = time.time() - max_age
    removed = 0
    for path, _, names in os.walk(folder):
        for name in names:
            if name.endswith(TMP_SUFFIX):
                removed += remove_if_stale(os.path.join(path, name), cutoff)
    return removed
