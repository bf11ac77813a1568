"""A store inside a single zip file (stdlib ``zipfile``).

A zip file written in pieces is only valid once its central directory is written, at
close. So every ZipStore over one file in this process shares one open handle (a
registry keyed by the file's resolved path, counted): a second store over a file being
written reads what the first wrote, and appends to it, instead of failing with
``BadZipFile`` or truncating it. The handle closes (and writes the directory) when the
last store over it closes, or at interpreter exit for stores nobody closed.
"""

from __future__ import annotations

import atexit
import os
import struct
import threading
import time
import warnings
import zipfile
from collections.abc import Iterator
from typing import Literal

from chunkflow.errors import (
    InvalidArgumentError,
    KeyNotFoundError,
    NotSerializableError,
    StoreClosedError,
    UnsupportedOperationError,
)
from chunkflow.storage.base import Store, Version
from chunkflow.storage.keys import slice_bounds
from chunkflow.storage.ranges import ByteRangeReader, BytesRangeReader

__all__ = ["ZipStore"]


#: The modes a zip store opens its file in (``zipfile.ZipFile``'s, without "x").
ZipMode = Literal["r", "w", "a"]

class _SharedZip:
    """One open ``ZipFile`` and the number of stores using it."""

    def __init__(self, path: str, mode: ZipMode, compression: int) -> None:
        self.path = path
        self.mode = mode
        self.users = 0
        self.lock = threading.RLock()
        self.zf = zipfile.ZipFile(path, mode, compression=compression, allowZip64=True)

    def upgrade(self, compression: int) -> None:
        """Reopen a read-only handle for appending (its readers keep working)."""
        self.zf.close()
        self.zf = zipfile.ZipFile(self.path, "a", compression=compression, allowZip64=True)
        self.mode = "a"


_open_files: dict[str, _SharedZip] = {}
_open_files_lock = threading.Lock()


def _acquire(path: str, mode: ZipMode, compression: int) -> _SharedZip:
    real = os.path.realpath(path)
    with _open_files_lock:
        shared = _open_files.get(real)
        if shared is None:
            shared = _open_files[real] = _SharedZip(path, mode, compression)
        elif mode == "w":
            raise InvalidArgumentError(
                f"zip file {path!r} is open in this process ({shared.users} store(s)); "
                "mode='w' would truncate what they hold: close them first, or open it "
                "with mode='a' to add to it"
            )
        elif mode == "a" and shared.mode == "r":
            with shared.lock:
                shared.upgrade(compression)
        shared.users += 1
        return shared


def _release(shared: _SharedZip) -> None:
    with _open_files_lock:
        shared.users -= 1
        if shared.users > 0:
            return
        _open_files.pop(os.path.realpath(shared.path), None)
    with shared.lock:
        shared.zf.close()


@atexit.register
def _close_all() -> None:
    """Write the central directory of every zip file still open for writing."""
    with _open_files_lock:
        files = list(_open_files.values())
        _open_files.clear()
    for shared in files:
        with shared.lock:
            shared.zf.close()


_LOCAL_HEADER = struct.Struct("<4s22xHH")  # signature, ..., name length, extra length
_LOCAL_SIGNATURE = b"PK\x03\x04"


def _member_version(info: zipfile.ZipInfo) -> Version:
    # A member's offset in the file names its bytes: a rewrite appends a new one.
    return (info.header_offset, info.CRC, info.file_size)


class _MemberRangeReader(ByteRangeReader):
    """Ranges of one uncompressed zip member, read at their offsets in the zip file.

    Members are never changed in place (an overwrite appends a newer member and the
    older bytes stay where they were), so the member opened is pinned by its offset.
    Reads go through the store's shared handle under its lock, as ``zipfile`` itself
    reads members of a file it is writing; they fail once every store over the file
    is closed.
    """

    def __init__(self, store: ZipStore, info: zipfile.ZipInfo, data_offset: int) -> None:
        self.key = info.filename
        self.size = info.file_size
        self.version = _member_version(info)
        self._store = store
        self._data_offset = data_offset

    def _read(self, ranges: list[tuple[int, int]]) -> list[bytes]:
        with self._store._lock:
            fp = self._store._file().fp
            if fp is None:
                raise StoreClosedError(f"{self._store!r} is closed")
            out = []
            for start, stop in ranges:
                fp.seek(self._data_offset + start)
                out.append(fp.read(stop - start))
        if any(len(data) != stop - start for data, (start, stop) in zip(out, ranges)):
            raise zipfile.BadZipFile(f"zip member {self.key!r} of {self._store.path!r} is truncated")
        return out


class ZipStore(Store):
    """Keys as members of one zip file, like zarr-python's ``ZipStore``.

    A zip file cannot delete or rewrite members in place: writing an existing
    key appends a newer member (a ``UserWarning`` is emitted once per store,
    since the file keeps growing) and reads return the newest member; listings
    are de-duplicated.  Deleting raises ``NotImplementedError``
    (:attr:`supports_deletes` is False).  All access goes through one lock, so
    threads may share a store.  Stores over one file in this process share its open
    handle (see the module documentation): the last :meth:`close` writes the
    central directory, and files left open are closed at interpreter exit; until
    then the file is not a valid zip for other processes.  Members are stored
    uncompressed by default, since chunks are usually compressed already, and
    :meth:`open_ranges` reads ranges of uncompressed members at their offsets in the
    file (compressed members are decompressed whole, once per reader).

    Parameters
    ----------
    path : str or os.PathLike
        The zip file.
    mode : {"r", "w", "a"}
        Read only, create (truncating an existing file), or append (creating
        the file if missing).
    compression : int
        A ``zipfile`` compression constant for new members.

    Examples
    --------
    >>> import os, tempfile
    >>> path = os.path.join(tempfile.mkdtemp(), "data.zip")
    >>> with ZipStore(path, mode="w") as store:
    ...     store["a/0"] = b"chunk"
    >>> with ZipStore(path) as store:
    ...     store["a/0"], store.read_only
    (b'chunk', True)
    """

    supports_deletes = False
    listing_is_cheap = True

    def __init__(
        self,
        path: str | os.PathLike[str],
        mode: ZipMode = "r",
        *,
        compression: int = zipfile.ZIP_STORED,
    ) -> None:
        if mode not in ("r", "w", "a"):
            raise InvalidArgumentError(f"ZipStore mode must be 'r', 'w' or 'a', got {mode!r}")
        self.path = os.path.abspath(os.fspath(path))
        self.mode = mode
        self.read_only = mode == "r"
        self.compression = compression
        self._warned = False
        if mode != "r":
            os.makedirs(os.path.dirname(self.path), exist_ok=True)
        self._shared: _SharedZip | None = _acquire(self.path, mode, compression)
        self._lock = self._shared.lock

    @property
    def identity(self) -> str:
        return "zip:" + os.path.realpath(self.path)

    def __repr__(self) -> str:
        return f"ZipStore({self.path!r}, mode={self.mode!r})"

    def __reduce__(self) -> tuple[object, ...]:
        if self.mode != "r":
            # Two processes appending to one zip file corrupt it; "w" would
            # even truncate it on unpickling.
            raise NotSerializableError(
                f"{self!r} cannot be pickled: only read-only zip stores pickle; "
                "close it and reopen it with mode='r'"
            )
        return (ZipStore, (self.path, "r"))

    def close(self) -> None:
        """Stop using the file; the last store over it writes the central directory
        and closes it (idempotent)."""
        shared, self._shared = self._shared, None
        if shared is not None:
            _release(shared)

    def _versions(self, keys: list[str]) -> dict[str, Version | None]:
        with self._lock:
            infos = self._file().NameToInfo
            return {key: _member_version(infos[key]) for key in keys if key in infos}

    # -------------------------------------------------------------- helpers

    def _file(self) -> zipfile.ZipFile:
        if self._shared is None:
            raise StoreClosedError(f"{self!r} is closed")
        return self._shared.zf

    def _info(self, key: str) -> zipfile.ZipInfo:
        # NameToInfo maps each name to its newest member; this is the one
        # place where a missing key becomes KeyError.
        info = self._file().NameToInfo.get(key)
        if info is None:
            raise KeyNotFoundError(key)
        return info

    def _names(self) -> list[str]:
        with self._lock:
            # Folder entries ("a/") written by other zip tools are not keys.
            return [n for n in self._file().NameToInfo if not n.endswith("/")]

    # ------------------------------------------------------------ hooks

    def _get(self, key: str) -> bytes:
        with self._lock:
            zf = self._file()
            return zf.read(self._info(key))

    def _get_range(self, key: str, start: int, length: int | None) -> bytes:
        with self._lock:
            info = self._info(key)
            begin, end = slice_bounds(info.file_size, start, length)
            with self._file().open(info) as member:
                member.seek(begin)
                return member.read(end - begin)

    def _getsize(self, key: str) -> int:
        with self._lock:
            return self._info(key).file_size

    def _open_ranges(self, key: str) -> ByteRangeReader:
        with self._lock:
            info = self._info(key)
            if info.compress_type != zipfile.ZIP_STORED or info.flag_bits & 0x1:
                # Compressed or encrypted: no byte of the value lies at a known
                # offset, so the member is decompressed once, which pins it too.
                return BytesRangeReader(key, self._file().read(info), _member_version(info))
            fp = self._file().fp
            if fp is None:
                raise StoreClosedError(f"{self!r} is closed")
            fp.seek(info.header_offset)
            header = fp.read(_LOCAL_HEADER.size)
        signature, name_length, extra_length = _LOCAL_HEADER.unpack(header)
        if signature != _LOCAL_SIGNATURE:
            raise zipfile.BadZipFile(
                f"zip member {key!r} of {self.path!r}: no local file header at offset "
                f"{info.header_offset}"
            )
        data_offset = info.header_offset + _LOCAL_HEADER.size + name_length + extra_length
        return _MemberRangeReader(self, info, data_offset)

    def _contains(self, key: str) -> bool:
        with self._lock:
            return key in self._file().NameToInfo

    def _set(self, key: str, value: bytes | memoryview) -> None:
        info = zipfile.ZipInfo(key, date_time=time.localtime(time.time())[:6])
        info.compress_type = self.compression
        info.external_attr = 0o644 << 16  # rw-r--r-- when extracted, as zarr-python
        with self._lock:
            zf = self._file()
            old = zf.NameToInfo.pop(key, None)
            if old is not None and not self._warned:
                self._warned = True
                warnings.warn(
                    f"{self!r}: overwriting key {key!r} appends a newer member; the "
                    "older bytes stay in the file (it only grows). Reads return the "
                    "newest member.",
                    UserWarning,
                    stacklevel=4,
                )
            # Removing the old name first keeps zipfile from warning
            # "Duplicate name" on every overwrite; writestr registers the new one.
            try:
                zf.writestr(info, value)
            except BaseException:
                if old is not None:
                    zf.NameToInfo[key] = old
                raise

    def _delete(self, key: str) -> None:
        self._info(key)  # a missing key is still a KeyError
        raise UnsupportedOperationError(
            f"{self!r} cannot delete key {key!r}: zip files do not support deletion; "
            "write a new zip file without it"
        )

    def _delete_many(self, keys: list[str]) -> None:
        for key in keys:
            if self._contains(key):
                self._delete(key)

    def _list_prefix(self, prefix: str) -> Iterator[str]:
        if not prefix:
            return iter(self._names())
        start = prefix + "/"
        return (n for n in self._names() if n.startswith(start))

    def __len__(self) -> int:
        return len(self._names())
