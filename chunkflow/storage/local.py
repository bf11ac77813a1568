"""A store over a local folder: one file per key, atomic writes."""

from __future__ import annotations

import errno
import functools
import os
import shutil
import stat
import time
from collections.abc import Callable, Iterator
from typing import TypeVar

from chunkflow.errors import ExternalLinkError, KeyIsDirectoryError, KeyNotFoundError
from chunkflow.storage.atomic_files import (
    TMP_MAX_AGE,
    TMP_SUFFIX,
    open_temporary,
    remove_if_stale,
    remove_stale_below,
    write_all,
)
from chunkflow.storage.base import Store, Version
from chunkflow.storage.keys import normalize_prefix, slice_bounds
from chunkflow.storage.ranges import ByteRangeReader, FileRangeReader
from chunkflow.storage.replaced import hold, pins_replaced, release

__all__ = ["TMP_SUFFIX", "LocalStore"]

# A file that is not there, a folder where a file was expected, or a file where
# a folder was expected: all mean "no such key".
_MISSING = (FileNotFoundError, IsADirectoryError, NotADirectoryError)

_READ_FLAGS = os.O_RDONLY | getattr(os, "O_BINARY", 0)
# Refuses to open a file that is itself a symbolic link (checked before following one).
_NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)

_T = TypeVar("_T")

# Windows cannot rename a file that is still open; POSIX can, and there the version
# is read from the written file's own descriptor after the rename (see _write_file).
_STAT_AFTER_REPLACE_BY_FD = os.name != "nt"


#: A file changed less than this long ago has no version yet (see file_version).
SETTLE_NS = 2 * 10**9


def file_version(st: os.stat_result, now_ns: int | None = None) -> Version | None:
    """The version of a stored file: device, inode, size and times (ns), or ``None``.

    Every write replaces the file with a new one, but file systems hand a freed inode
    number to the next file at once (two numbers alternate when one key is rewritten
    in a loop), so the times must tell the files apart. On kernels and file systems
    whose timestamps advance in ticks of milliseconds (or seconds), two writes within
    one tick can leave identical tokens. As git does for its "racily clean" index
    entries, a file whose last change is younger than :data:`SETTLE_NS` therefore has
    no version yet: ``None`` proves nothing, so a cache re-reads it. Once settled, any
    later write carries a later timestamp.

    Examples
    --------
    >>> import tempfile
    >>> st = os.stat(tempfile.gettempdir())
    >>> len(file_version(st, now_ns=st.st_ctime_ns + SETTLE_NS + 1))
    5
    >>> file_version(st, now_ns=st.st_ctime_ns) is None
    True
    """
    changed = max(st.st_mtime_ns, st.st_ctime_ns)
    if (time.time_ns() if now_ns is None else now_ns) - changed <= SETTLE_NS:
        return None
    return (st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns)


def _missing_to_key_error(method: Callable[..., _T]) -> Callable[..., _T]:
    """The one place where LocalStore turns OS "not found" errors into KeyError."""

    @functools.wraps(method)
    def translated(self: LocalStore, key: str, *args: object) -> _T:
        try:
            return method(self, key, *args)
        except _MISSING:
            raise KeyNotFoundError(key) from None

    return translated


def _read_all(fd: int, size: int) -> bytes:
    data = os.read(fd, size)
    if len(data) == size:
        return data
    # Short reads only happen for huge files (> 2 GiB per read on Linux) or a
    # file truncated by a foreign, non-atomic writer: keep reading to EOF.
    parts = [data]
    while chunk := os.read(fd, max(size - len(data), 1 << 20)):
        parts.append(chunk)
    return b"".join(parts)


def _read_into(fd: int, view: memoryview) -> int:
    """Read from ``fd`` into ``view`` until it is full or the file ends; bytes read."""
    got = 0
    while got < len(view):
        n = os.readv(fd, [view[got:]])
        if not n:
            break
        got += n
    return got


class LocalStore(Store):
    """Keys as files below a root folder (``"a/b"`` is ``<root>/a/b``).

    Writes go to a temporary file in the target's folder that then replaces the
    target with ``os.replace``, so a reader sees the old or the new value, never
    a torn one.  Missing parent folders are created on write.  The data is not
    ``fsync``-ed: atomicity towards readers is promised, durability across a
    power loss is not (zarr-python makes the same choice).  Deleting a key
    leaves its (possibly empty) folder in place, as zarr-python does.  Files
    whose names end in ``.chunkflow-tmp`` are in-flight writes and are not
    listed.

    Symbolic links inside the store are followed only while they resolve inside the
    store's root (the root itself may be a link). A link out of the store (a planted
    ``c/0/0 -> /etc/passwd``, a folder linked to ``/home``) makes reads, writes,
    deletes and listings through it fail with :class:`~chunkflow.errors.ExternalLinkError`
    (listings skip it) unless ``allow_external_links=True``. Folders are checked once
    per store object: a link planted later in a folder already used is not noticed.

    Parameters
    ----------
    root : str or os.PathLike
        The folder; created on first write if missing.
    read_only : bool
        Refuse writes.
    allow_external_links : bool
        Follow symbolic links that lead out of the root.

    Examples
    --------
    >>> import tempfile
    >>> store = LocalStore(tempfile.mkdtemp())
    >>> store["c/0/0"] = b"chunk"
    >>> store["c/0/0"], store.list_dir("c")
    (b'chunk', ([], ['0']))
    >>> store.identity.startswith("file://")
    True
    """

    listing_is_cheap = True
    reads_into = True

    def __init__(self, root: str | os.PathLike[str], read_only: bool = False, *,
                 allow_external_links: bool = False) -> None:
        self.root = os.path.abspath(os.fspath(root))
        self.read_only = read_only
        self.allow_external_links = allow_external_links
        self._prefix = os.path.join(self.root, "")  # root + separator, for fast joins
        # realpath: two stores reaching one folder through a symlink share a cache.
        # Resolved once: every write announces its changes under this name.
        self._real_root = os.path.realpath(self.root)
        self._identity = "file://" + self._real_root
        # Folders (as key prefixes) known to resolve inside the root: one set lookup
        # per access instead of a realpath (a stat per path component).
        self._inside_dirs: set[str] = {""}

    @property
    def identity(self) -> str:
        return self._identity

    def __repr__(self) -> str:
        return f"LocalStore({self.root!r}, read_only={self.read_only})"

    def __reduce__(self) -> tuple[object, ...]:
        return (_restore, (self.root, self.read_only, self.allow_external_links))

    # ---------------------------------------------------------- confinement

    def _resolves_inside(self, path: str) -> bool:
        real = os.path.realpath(path)
        return real == self._real_root or real.startswith(self._real_root + os.sep)

    def _refuse_link(self, key: str, path: str) -> ExternalLinkError:
        return ExternalLinkError(
            f"store key {key!r}: {path!r} leads through a symbolic link to "
            f"{os.path.realpath(path)!r}, outside the store root {self._real_root!r}; "
            "refused. To follow links out of the store, open it with "
            "LocalStore(root, allow_external_links=True)"
        )

    def _path(self, key: str) -> str:
        """The file of ``key``, once its folder is known to lie inside the root."""
        folder = key.rpartition("/")[0]
        if folder not in self._inside_dirs and not self.allow_external_links:
            if not self._resolves_inside(self._prefix + folder):
                raise self._refuse_link(key, self._prefix + folder)
            if os.path.isdir(self._prefix + folder):  # a folder made later is checked then
                self._inside_dirs.add(folder)
        return self._prefix + key

    def _open_read(self, key: str) -> int:
        path = self._path(key)
        try:
            return os.open(path, _READ_FLAGS | _NOFOLLOW)
        except OSError as err:
            if err.errno != errno.ELOOP or not _NOFOLLOW:
                raise
        # The file itself is a link (O_NOFOLLOW refused it): follow it if it stays inside.
        if not self.allow_external_links and not self._resolves_inside(path):
            raise self._refuse_link(key, path)
        return os.open(path, _READ_FLAGS)

    def _check_final(self, key: str, path: str) -> None:
        """Refuse ``path`` if it is itself a link out of the store (stat-based calls)."""
        if not self.allow_external_links and os.path.islink(path) and not self._resolves_inside(path):
            raise self._refuse_link(key, path)

    # -------------------------------------------------------------- reading

    @_missing_to_key_error
    def _get(self, key: str) -> bytes:
        return self._read_file(key)[0]

    def _read_file(self, key: str) -> tuple[bytes, os.stat_result]:
        # os.open + fstat + one os.read skips the buffered-file machinery of
        # open(); this is the hot path of every chunk read. The fstat of the open
        # descriptor is the version of exactly these bytes (writes replace files).
        fd = self._open_read(key)
        try:
            st = os.fstat(fd)
            return _read_all(fd, st.st_size), st
        finally:
            os.close(fd)

    @_missing_to_key_error
    def _get_into(self, key: str, buffer_for: Callable[[int], memoryview]) -> memoryview:
        fd = self._open_read(key)
        try:
            view = buffer_for(os.fstat(fd).st_size)
            return view[:_read_into(fd, view)]
        finally:
            os.close(fd)

    def _get_many_versioned(self, keys: list[str]) -> dict[str, tuple[bytes, Version | None]]:
        found: dict[str, tuple[bytes, Version | None]] = {}
        for key in keys:
            try:
                data, st = self._read_file(key)
            except _MISSING:
                continue
            found[key] = (data, file_version(st))
        return found

    def _versions(self, keys: list[str]) -> dict[str, Version | None]:
        found: dict[str, Version | None] = {}
        for key in keys:
            path = self._path(key)
            self._check_final(key, path)
            try:
                st = os.stat(path)
            except (*_MISSING, ValueError):
                continue
            if stat.S_ISREG(st.st_mode):
                found[key] = file_version(st)
        return found

    @_missing_to_key_error
    def _get_range(self, key: str, start: int, length: int | None) -> bytes:
        fd = self._open_read(key)
        try:
            begin, end = slice_bounds(os.fstat(fd).st_size, start, length)
            os.lseek(fd, begin, os.SEEK_SET)
            return _read_all(fd, end - begin)
        finally:
            os.close(fd)

    @_missing_to_key_error
    def _open_ranges(self, key: str) -> ByteRangeReader:
        fd = self._open_read(key)
        try:
            st = os.fstat(fd)
            if not stat.S_ISREG(st.st_mode):  # os.open succeeds on folders on POSIX
                raise KeyIsDirectoryError(key)
            return FileRangeReader(key, fd, st, file_version(st))
        except BaseException:
            os.close(fd)
            raise

    @_missing_to_key_error
    def _getsize(self, key: str) -> int:
        path = self._path(key)
        self._check_final(key, path)
        st = os.stat(path)
        if stat.S_ISDIR(st.st_mode):
            raise KeyIsDirectoryError(key)
        return st.st_size

    def _contains(self, key: str) -> bool:
        path = self._path(key)
        self._check_final(key, path)
        return os.path.isfile(path)

    # -------------------------------------------------------------- writing

    def _set(self, key: str, value: bytes | memoryview) -> None:
        self._write_file(key, value)

    def _set_many_versioned(self, items: dict[str, bytes | memoryview]) -> dict[str, Version | None]:
        return {key: self._write_file(key, value) for key, value in items.items()}

    def _write_file(self, key: str, value: bytes | memoryview) -> Version | None:
        """Write ``value`` atomically; return the version of the file written."""
        path = self._path(key)  # a link at `path` itself is replaced, never followed
        tmp, fd = open_temporary(path)
        path = self._path(key)  # folders made for it may pass through a link
        try:
            try:
                nbytes = write_all(fd, value)
                if _STAT_AFTER_REPLACE_BY_FD:
                    self._replace(tmp, path, nbytes)
                    # The descriptor still names the file we wrote, even if another
                    # writer replaces it right after: its version, never theirs.
                    return file_version(os.fstat(fd))
            finally:
                os.close(fd)
            self._replace(tmp, path, nbytes)
            return None  # Windows: a stat now could see a later writer's file
        except BaseException:
            try:
                os.unlink(tmp)
            except OSError:
                pass
            raise

    def _replace(self, tmp: str, path: str, nbytes: int) -> None:
        """``os.replace(tmp, path)``; on local disks, the old file at ``path`` is freed in
        the background (see :mod:`chunkflow.storage.replaced`: freed inside the rename,
        it blocks this writer and every writer of the folder, on the device)."""
        old = hold(path) if pins_replaced(self._real_root) else None
        try:
            os.replace(tmp, path)
        finally:
            release(old, nbytes)

    @_missing_to_key_error
    def _delete(self, key: str) -> None:
        path = self._path(key)  # unlink removes a link itself, never its target
        if os.path.isdir(path):  # unlink() on a folder is EPERM on macOS
            raise KeyIsDirectoryError(key)
        os.unlink(path)

    def _delete_prefix(self, prefix: str) -> None:
        if prefix:
            path = self._path(prefix)
            if os.path.islink(path):
                os.unlink(path)  # the link goes; what it points to stays
                return
            try:
                shutil.rmtree(path)
            except (FileNotFoundError, NotADirectoryError):
                pass  # nothing below this prefix (or it is a key, not a folder)
            return
        # Empty the root but keep the folder itself.
        for entry in self._scandir(self.root):
            if entry.is_dir(follow_symlinks=False):
                shutil.rmtree(entry.path)
            else:
                os.unlink(entry.path)

    # -------------------------------------------------------------- listing

    @staticmethod
    def _scandir(path: str | None) -> list[os.DirEntry[str]]:
        if path is None:  # a folder behind a link out of the store
            return []
        try:
            with os.scandir(path) as it:
                return list(it)
        except (FileNotFoundError, NotADirectoryError):
            return []

    def _folder(self, prefix: str) -> str | None:
        """The folder of ``prefix`` to list; ``None`` when it lies behind a link out of
        the root (it lists as empty)."""
        path = self._prefix + prefix if prefix else self.root
        if prefix and not self.allow_external_links and prefix not in self._inside_dirs:
            if not self._resolves_inside(path):
                return None
        return path

    def _leads_out(self, entry: os.DirEntry[str]) -> bool:
        return (not self.allow_external_links and entry.is_symlink()
                and not self._resolves_inside(entry.path))

    def _walk(self, path: str | None, prefix: str) -> Iterator[tuple[str, os.DirEntry[str]]]:
        """Yield ``(key, entry)`` for every file below `path` (links out are skipped)."""
        for entry in self._scandir(path):
            if self._leads_out(entry):
                continue
            if entry.is_dir():
                yield from self._walk(entry.path, prefix + entry.name + "/")
            elif entry.is_file() and not self._is_temporary(entry):
                yield prefix + entry.name, entry

    def _list_prefix(self, prefix: str) -> Iterator[str]:
        base = prefix + "/" if prefix else ""
        return (key for key, _ in self._walk(self._folder(prefix), base))

    def _list_dir(self, prefix: str) -> tuple[list[str], list[str]]:
        keys: list[str] = []
        dirs: list[str] = []
        for entry in self._scandir(self._folder(prefix)):
            if self._leads_out(entry):
                continue
            if entry.is_dir():
                dirs.append(entry.name)
            elif entry.is_file() and not self._is_temporary(entry):
                keys.append(entry.name)
        return sorted(keys), sorted(dirs)

    def _getsize_prefix(self, prefix: str) -> int:
        base = prefix + "/" if prefix else ""
        walk = self._walk(self._folder(prefix), base)
        return sum(entry.stat().st_size for _, entry in walk)

    def __len__(self) -> int:
        return sum(1 for _ in self._walk(self.root, ""))

    # -------------------------------------------------------------- leftovers

    def _is_temporary(self, entry: os.DirEntry[str]) -> bool:
        """Whether a listed file is a temporary one; listings remove stale ones."""
        if not entry.name.endswith(TMP_SUFFIX):
            return False
        if not self.read_only:  # cheap: only temporary files pay for a stat
            remove_if_stale(entry.path, time.time() - TMP_MAX_AGE)
        return True

    def remove_stale_temporaries(self, prefix: str = "", max_age: float = TMP_MAX_AGE) -> int:
        """Remove temporary files below ``prefix`` unchanged for ``max_age`` seconds.

        They are left by writers killed between writing and renaming; listings also
        remove the ones they pass. Returns how many were removed.

        Examples
        --------
        >>> import tempfile
        >>> store = LocalStore(tempfile.mkdtemp())
        >>> with open(os.path.join(store.root, "k.123" + TMP_SUFFIX), "wb"):
        ...     pass
        >>> store.remove_stale_temporaries(max_age=3600), store.remove_stale_temporaries(max_age=0)
        (0, 1)
        """
        if self.read_only:
            return 0
        folder = self._prefix + normalize_prefix(prefix) if prefix else self.root
        return remove_stale_below(folder, max_age)


def _restore(root: str, read_only: bool, allow_external_links: bool) -> LocalStore:
    return LocalStore(root, read_only, allow_external_links=allow_external_links)
